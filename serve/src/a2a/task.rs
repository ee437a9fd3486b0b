//! A run's log read as an A2A task (pure, plain `#[test]`s): [`Follower`] takes the log's
//! events in order and says what each means for the task — status and artifact updates for a
//! stream — and what the task is now ([`Follower::task`]).
//!
//! - the run's first delta or entry: `working`;
//! - the model's answer text (not reasoning, not a called agent's): chunks of the artifact
//!   `answer`, each model call's text set apart from the one before by a blank line; after a
//!   discarded call, the next chunk starts the artifact over;
//! - a call that waits for a person: `input-required`, its status message saying what waits
//!   (text) and how (a data part `{"motet": {"waiting": [...]}}`); once no call waits (its
//!   result is committed, or the client answered it here): `working` again;
//! - the answer: the artifact `answer` whole (replacing what was streamed: a client that adds
//!   the chunks up ends with exactly the answer), then `completed`;
//! - the failure: `failed`, or `canceled` when a cancel stopped the run.

use motet_agents::{Entry, EntryBody, Waiting};
use motet_directives::{AssistantBlock, Pause};
use motet_runtime::agent::{DeltaKind, LlmDelta};
use serde::Deserialize;

use super::wire::{
    Artifact, ArtifactUpdate, Message, Part, Role, StatusUpdate, StreamResponse, Task, TaskState,
    TaskStatus,
};

/// The id and name of the artifact that carries the answer.
pub(crate) const ANSWER_ARTIFACT: &str = "answer";

/// A run's end, as its log's last event says it.
#[derive(Deserialize)]
struct Ended {
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    cancelled: bool,
}

/// One run's log, followed event by event, as an A2A task.
#[derive(Debug, Clone)]
pub(crate) struct Follower {
    task: String,
    context: String,
    state: TaskState,
    /// The calls that wait for a person now, oldest first.
    pending: Vec<Waiting>,
    /// What the last status said.
    status_message: Option<Message>,
    /// The model call whose text was streamed last.
    last_call: Option<String>,
    /// Whether a chunk of the answer artifact was sent (the next one appends).
    answer_started: bool,
    /// The answer, once the run has it.
    answer: Option<String>,
    /// The run's user and agent messages, from its committed entries.
    history: Vec<Message>,
}

impl Follower {
    /// A task `task` on context `context` that has not started.
    pub(crate) fn new(task: impl Into<String>, context: impl Into<String>) -> Self {
        Self {
            task: task.into(),
            context: context.into(),
            state: TaskState::Submitted,
            pending: Vec::new(),
            status_message: None,
            last_call: None,
            answer_started: false,
            answer: None,
            history: Vec::new(),
        }
    }

    /// Where the task is.
    pub(crate) fn state(&self) -> TaskState {
        self.state
    }

    /// The calls that wait for a person now, oldest first.
    pub(crate) fn pending(&self) -> &[Waiting] {
        &self.pending
    }

    /// What the log's next event (`name`, its JSON `data`) means for the task. An event it
    /// cannot read means nothing.
    pub(crate) fn take(&mut self, name: &str, data: &str) -> Vec<StreamResponse> {
        if self.state.is_terminal() {
            return Vec::new();
        }
        match name {
            "delta" => serde_json::from_str::<LlmDelta>(data)
                .map(|delta| self.delta(delta))
                .unwrap_or_default(),
            "entry" => serde_json::from_str::<Entry>(data)
                .map(|entry| self.entry(&entry))
                .unwrap_or_default(),
            "waiting" => serde_json::from_str::<Waiting>(data)
                .map(|waiting| self.waiting(waiting))
                .unwrap_or_default(),
            "answer" | "failed" => serde_json::from_str::<Ended>(data)
                .map(|ended| self.ended(ended))
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The client answered call `call` here: it no longer waits (its result comes later).
    pub(crate) fn answered(&mut self, call: &str) -> Vec<StreamResponse> {
        let before = self.pending.len();
        self.pending.retain(|w| w.tool_call_id != call);
        if self.pending.len() == before {
            return Vec::new();
        }
        self.after_a_wait_ended()
    }

    /// The task as it stands, with at most `history` messages of its history (all: `None`).
    pub(crate) fn task(&self, history: Option<u32>) -> Task {
        let keep = history.map_or(self.history.len(), |n| n as usize);
        let skip = self.history.len().saturating_sub(keep);
        Task {
            id: self.task.clone(),
            context_id: self.context.clone(),
            status: TaskStatus {
                state: self.state,
                message: self.status_message.clone(),
            },
            artifacts: self
                .answer
                .iter()
                .map(|answer| answer_artifact(answer))
                .collect(),
            history: self.history[skip..].to_vec(),
        }
    }

    fn delta(&mut self, delta: LlmDelta) -> Vec<StreamResponse> {
        let mut out = self.started();
        if delta.agent.is_some() {
            return out;
        }
        match delta.kind {
            DeltaKind::Reasoning => {}
            DeltaKind::Discard => {
                // What that call wrote is void: the next chunk starts the artifact over.
                self.answer_started = false;
                self.last_call = None;
            }
            DeltaKind::Text if delta.delta.is_empty() => {}
            DeltaKind::Text => {
                let call = delta.call_id.to_string();
                let new_call = self.last_call.as_deref() != Some(call.as_str());
                let text = match self.answer_started && new_call {
                    true => format!("\n\n{}", delta.delta),
                    false => delta.delta,
                };
                out.push(StreamResponse::ArtifactUpdate(ArtifactUpdate {
                    task_id: self.task.clone(),
                    context_id: self.context.clone(),
                    artifact: answer_artifact(&text),
                    append: self.answer_started,
                    last_chunk: false,
                }));
                self.answer_started = true;
                self.last_call = Some(call);
            }
        }
        out
    }

    fn entry(&mut self, entry: &Entry) -> Vec<StreamResponse> {
        let mut out = self.started();
        match &entry.body {
            EntryBody::User { content } => {
                if let Some(text) = content.as_text() {
                    self.history.push(message(
                        Role::User,
                        &entry.id.to_string(),
                        vec![Part::text(text)],
                    ));
                }
            }
            EntryBody::Assistant { message: turn, .. } => {
                let text: String = turn
                    .blocks
                    .iter()
                    .filter_map(|block| match block {
                        AssistantBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                if !text.trim().is_empty() {
                    self.history.push(message(
                        Role::Agent,
                        &entry.id.to_string(),
                        vec![Part::text(text)],
                    ));
                }
            }
            EntryBody::ToolResult { result, .. } => {
                let before = self.pending.len();
                self.pending
                    .retain(|w| w.tool_call_id.as_str() != result.tool_use_id.as_str());
                if self.pending.len() != before {
                    out.extend(self.after_a_wait_ended());
                }
            }
            _ => {}
        }
        out
    }

    fn waiting(&mut self, waiting: Waiting) -> Vec<StreamResponse> {
        let mut out = self.started();
        if !self
            .pending
            .iter()
            .any(|w| w.tool_call_id == waiting.tool_call_id)
        {
            self.pending.push(waiting);
        }
        out.push(self.status(TaskState::InputRequired, Some(self.waiting_message())));
        out
    }

    fn ended(&mut self, ended: Ended) -> Vec<StreamResponse> {
        self.pending.clear();
        match (ended.answer, ended.error) {
            (Some(answer), _) => {
                let whole = StreamResponse::ArtifactUpdate(ArtifactUpdate {
                    task_id: self.task.clone(),
                    context_id: self.context.clone(),
                    artifact: answer_artifact(&answer),
                    append: false,
                    last_chunk: true,
                });
                self.answer = Some(answer);
                vec![whole, self.status(TaskState::Completed, None)]
            }
            (None, error) => {
                let state = match ended.cancelled {
                    true => TaskState::Canceled,
                    false => TaskState::Failed,
                };
                let said = error.unwrap_or_else(|| "the run failed".to_owned());
                let note = message(
                    Role::Agent,
                    &format!("{}-end", self.task),
                    vec![Part::text(said)],
                );
                vec![self.status(state, Some(note))]
            }
        }
    }

    /// `working`, when the task had not started: the first sign of the run.
    fn started(&mut self) -> Vec<StreamResponse> {
        match self.state {
            TaskState::Submitted => vec![self.status(TaskState::Working, None)],
            _ => Vec::new(),
        }
    }

    /// A wait ended: `working` again when none is left, else what still waits.
    fn after_a_wait_ended(&mut self) -> Vec<StreamResponse> {
        match (self.state, self.pending.is_empty()) {
            (TaskState::InputRequired, true) => vec![self.status(TaskState::Working, None)],
            (TaskState::InputRequired, false) => {
                vec![self.status(TaskState::InputRequired, Some(self.waiting_message()))]
            }
            _ => Vec::new(),
        }
    }

    /// The task moves to `state`, saying `said`.
    fn status(&mut self, state: TaskState, said: Option<Message>) -> StreamResponse {
        self.state = state;
        self.status_message.clone_from(&said);
        StreamResponse::StatusUpdate(StatusUpdate {
            task_id: self.task.clone(),
            context_id: self.context.clone(),
            status: TaskStatus {
                state,
                message: said,
            },
        })
    }

    /// The agent's message of an `input-required` status: what waits, in words and as data.
    fn waiting_message(&self) -> Message {
        let mut text = String::from("The agent waits for a person.");
        for waiting in &self.pending {
            text.push(' ');
            text.push_str(&waiting_sentence(waiting));
        }
        text.push_str(
            " Reply on this task: `approve`, or `reject: <reason>`, to an approval; \
             the answer itself to a question. The oldest wait is answered first.",
        );
        let data: Vec<serde_json::Value> = self
            .pending
            .iter()
            .map(|w| {
                serde_json::json!({
                    "tool_call_id": w.tool_call_id,
                    "tool": w.tool,
                    "args": serde_json::from_str::<serde_json::Value>(w.args.get())
                        .unwrap_or_else(|_| w.args.get().into()),
                    "pause": w.pause,
                })
            })
            .collect();
        let mut said = message(
            Role::Agent,
            &format!(
                "{}-waiting-{}",
                self.task,
                self.pending
                    .last()
                    .map_or("none", |w| w.tool_call_id.as_str())
            ),
            vec![
                Part::text(text),
                Part::data(serde_json::json!({ "motet": { "waiting": data } })),
            ],
        );
        said.task_id = Some(self.task.clone());
        said.context_id = Some(self.context.clone());
        said
    }
}

/// One waiting call, in words.
fn waiting_sentence(waiting: &Waiting) -> String {
    match &waiting.pause {
        Pause::Approval(approval) => {
            let why = approval
                .reason
                .as_deref()
                .map(|reason| format!(" ({reason})"))
                .unwrap_or_default();
            format!(
                "Tool call `{}` (`{}` with {}) needs approval{why}.",
                waiting.tool_call_id,
                waiting.tool,
                waiting.args.get()
            )
        }
        Pause::Question { text } => format!(
            "Tool call `{}` (`{}`) asks: {text}",
            waiting.tool_call_id, waiting.tool
        ),
    }
}

/// The answer artifact holding `text`.
fn answer_artifact(text: &str) -> Artifact {
    Artifact {
        artifact_id: ANSWER_ARTIFACT.to_owned(),
        name: ANSWER_ARTIFACT.to_owned(),
        parts: vec![Part::text(text)],
    }
}

/// A message of `role` with id `id`.
fn message(role: Role, id: &str, parts: Vec<Part>) -> Message {
    Message {
        message_id: id.to_owned(),
        context_id: None,
        task_id: None,
        role,
        parts,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

    use super::*;
    use serde_json::{Value, json};

    fn delta(call: &str, kind: &str, text: &str) -> String {
        json!({"call_id": call, "kind": kind, "delta": text}).to_string()
    }

    fn waiting(call: &str, pause: Value) -> String {
        json!({"request_id": "r1", "tool_call_id": call, "tool": "rm",
               "args": {"path": "/tmp/a"}, "pause": pause, "since_ms": 1})
        .to_string()
    }

    fn approval() -> Value {
        json!({"kind": "approval"})
    }

    fn tool_result(call: &str) -> String {
        json!({"id": "e9", "seq": 3, "at": 1, "kind": "tool_result",
               "payload": {"name": "rm", "result": {"tool_use_id": call, "content": "removed"}},
               "refs": {"request_id": "r1"}})
        .to_string()
    }

    fn user(text: &str) -> String {
        json!({"id": "e1", "seq": 0, "at": 1, "kind": "user", "payload": {"content": text}})
            .to_string()
    }

    /// Each update as `(kind, state or artifact text, append)`.
    fn shapes(updates: &[StreamResponse]) -> Vec<(String, String, bool)> {
        updates
            .iter()
            .map(|u| match u {
                StreamResponse::Task(t) => ("task".into(), format!("{:?}", t.status.state), false),
                StreamResponse::StatusUpdate(s) => {
                    ("status".into(), format!("{:?}", s.status.state), false)
                }
                StreamResponse::ArtifactUpdate(a) => (
                    "artifact".into(),
                    a.artifact.parts[0].text.clone().unwrap(),
                    a.append,
                ),
            })
            .collect()
    }

    fn s(kind: &str, what: &str, append: bool) -> (String, String, bool) {
        (kind.into(), what.into(), append)
    }

    #[test]
    fn an_answered_run_streams_working_its_text_then_the_whole_answer_and_completed() {
        let mut f = Follower::new("r1", "t1");
        let mut all = Vec::new();
        all.extend(f.take("entry", &user("hi")));
        all.extend(f.take("delta", &delta("c1", "reasoning", "hmm")));
        all.extend(f.take("delta", &delta("c1", "text", "Hel")));
        all.extend(f.take("delta", &delta("c1", "text", "lo")));
        all.extend(f.take("delta", &delta("c2", "text", "More")));
        all.extend(f.take(
            "answer",
            r#"{"status":"completed","answer":"Hello","usage":{}}"#,
        ));
        assert_eq!(
            shapes(&all),
            vec![
                s("status", "Working", false),
                s("artifact", "Hel", false),
                s("artifact", "lo", true),
                s("artifact", "\n\nMore", true),
                s("artifact", "Hello", false),
                s("status", "Completed", false),
            ]
        );
        let task = f.task(None);
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(task.artifacts[0].parts[0].text.as_deref(), Some("Hello"));
        assert_eq!(task.history.len(), 1);
        assert_eq!(task.history[0].role, Role::User);
        assert!(f.task(Some(0)).history.is_empty());
        // Nothing follows the end.
        assert!(f.take("delta", &delta("c3", "text", "late")).is_empty());
    }

    #[test]
    fn a_discarded_call_makes_the_next_chunk_start_over_and_other_agents_text_is_not_sent() {
        let mut f = Follower::new("r1", "t1");
        let mut all = Vec::new();
        all.extend(f.take("delta", &delta("c1", "text", "Wro")));
        all.extend(f.take("delta", &delta("c1", "discard", "")));
        all.extend(
            f.take(
                "delta",
                &json!({"call_id": "s1", "kind": "text", "delta": "sub", "agent": "helper"})
                    .to_string(),
            ),
        );
        all.extend(f.take("delta", &delta("c2", "text", "Right")));
        assert_eq!(
            shapes(&all),
            vec![
                s("status", "Working", false),
                s("artifact", "Wro", false),
                s("artifact", "Right", false),
            ]
        );
    }

    #[test]
    fn a_wait_is_input_required_until_its_result_or_the_clients_answer() {
        let mut f = Follower::new("r1", "t1");
        let first = f.take("waiting", &waiting("call_a", approval()));
        assert_eq!(
            shapes(&first),
            vec![
                s("status", "Working", false),
                s("status", "InputRequired", false)
            ]
        );
        let StreamResponse::StatusUpdate(update) = &first[1] else {
            panic!("{first:?}")
        };
        let said = update.status.message.as_ref().unwrap();
        assert!(
            said.parts[0].text.as_ref().unwrap().contains("`call_a`"),
            "{said:?}"
        );
        assert_eq!(
            said.parts[1].data.as_ref().unwrap()["motet"]["waiting"][0]["tool_call_id"],
            "call_a"
        );
        // A second wait; the first one's result leaves the second waiting.
        f.take(
            "waiting",
            &waiting("call_b", json!({"kind": "question", "text": "which?"})),
        );
        assert_eq!(f.pending().len(), 2);
        let after_a = f.take("entry", &tool_result("call_a"));
        assert_eq!(shapes(&after_a), vec![s("status", "InputRequired", false)]);
        // The client answers the second here: working again, once.
        let after_b = f.answered("call_b");
        assert_eq!(shapes(&after_b), vec![s("status", "Working", false)]);
        assert!(f.take("entry", &tool_result("call_b")).is_empty());
        assert!(f.answered("call_b").is_empty());
        assert_eq!(f.state(), TaskState::Working);
        assert_eq!(f.task(None).status.message, None);
    }

    #[test]
    fn a_failure_is_failed_and_a_cancel_is_canceled() {
        let mut failed = Follower::new("r1", "t1");
        let out = failed.take("failed", r#"{"status":"failed","error":"llm call failed"}"#);
        assert_eq!(shapes(&out), vec![s("status", "Failed", false)]);
        let mut cancelled = Follower::new("r1", "t1");
        let out = cancelled.take(
            "failed",
            r#"{"status":"failed","error":"the request failed: cancelled","cancelled":true}"#,
        );
        assert_eq!(shapes(&out), vec![s("status", "Canceled", false)]);
        assert!(cancelled.state().is_terminal());
    }

    #[test]
    fn an_event_it_cannot_read_means_nothing() {
        let mut f = Follower::new("r1", "t1");
        assert!(f.take("delta", "not json").is_empty());
        assert!(f.take("gap", "{}").is_empty());
        assert_eq!(f.state(), TaskState::Submitted);
    }

    #[test]
    fn the_wire_is_a2a_s_protojson() {
        let mut f = Follower::new("r1", "t1");
        f.take("delta", &delta("c1", "text", "Hi"));
        let update = f.take("answer", r#"{"answer":"Hi"}"#);
        let json = serde_json::to_value(&update[1]).unwrap();
        assert_eq!(
            json,
            json!({"statusUpdate": {"taskId": "r1", "contextId": "t1",
                   "status": {"state": "TASK_STATE_COMPLETED"}}})
        );
        let json = serde_json::to_value(&update[0]).unwrap();
        assert_eq!(json["artifactUpdate"]["lastChunk"], true);
        assert_eq!(json["artifactUpdate"]["artifact"]["artifactId"], "answer");
        let task = serde_json::to_value(StreamResponse::Task(f.task(None))).unwrap();
        assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(task["task"]["contextId"], "t1");
    }
}
