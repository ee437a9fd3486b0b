//! Carrying on after a stop: the state a thread comes back with (`restore`, `reload`) and
//! `agent.resume`, which rebuilds the stopped request from the thread and does what it owes.

use std::collections::HashSet;
use std::sync::Arc;

use motet_directives::{
    ArcStr, AssistantMessage, CallId, Directive, StopReason, ToolArgs, ToolExec, ToolResult,
};

use super::state::{PendingTool, ReActState, RequestState, Status};
use super::{ReAct, Step, structured};
use crate::error::StrategyError;
use crate::protocol::AgentResume;
use crate::thread::{Entry, EntryBody, NewEntry, Refs};

/// The state a thread comes back with: its Thread, the agent's layer of the context policy,
/// and of the request that was running only what a person did to it that the thread does not
/// hold (messages not taken in yet, calls waiting for them or approved by them), kept for
/// `agent.resume` to carry over. The request itself is rebuilt from the thread by
/// `agent.resume`; until then the thread takes requests.
pub(super) fn restored(saved: ReActState) -> ReActState {
    let mut state = ReActState::new(saved.thread);
    state.context_policy = saved.context_policy;
    state.ignored = saved.ignored;
    state.request = saved
        .request
        .map(|r| {
            let mut kept = RequestState::new(r.request_id, None);
            kept.steers = r.steers;
            kept.budget_wait = r.budget_wait;
            kept.budget_approved = r.budget_approved;
            kept.tools = r
                .tools
                .into_iter()
                .filter(PendingTool::outlives_a_restart)
                .collect();
            Box::new(kept)
        })
        .filter(|r| r.outlives_a_restart());
    state
}

/// The state as another writer left it ([`restored`]), remembering the request it left
/// unfinished: that writer may still be running it, so a new one is refused meanwhile.
pub(super) fn reloaded(saved: ReActState) -> ReActState {
    let elsewhere = unfinished_request(saved.thread.to_list());
    let mut state = restored(saved);
    state.elsewhere = elsewhere.map(String::into_boxed_str);
    state
}

/// A tool call of the stopped turn with no result in the thread.
struct Missing {
    tool_call_id: String,
    name: String,
    args: ToolArgs,
}

impl ReAct {
    /// Carries on after a restart from storage: from the last committed turn, what is owed —
    /// an LLM call (the thread ends with the user's message or a complete set of tool results),
    /// the tool calls whose results are missing (run again when idempotent, otherwise answered
    /// with an error result so nothing runs twice), or, for an answered request, the reply.
    pub(super) fn on_resume(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        resume: AgentResume,
    ) -> Result<Vec<Directive>, StrategyError> {
        // The runtime resumes a request only when it does not run it: one the state shows
        // running stopped with the process, and is rebuilt from the thread.
        let saved = state.request.take();
        let format = structured::Carried::from(saved.as_deref());
        state.status = Status::Idle;
        let entries = state.thread.to_list();
        let Some((turn, request_id)) = last_turn(entries, step) else {
            return Ok(Vec::new());
        };
        // What a person added to this request before the stop still waits for its turn, and
        // its calls that waited for a person (or were approved by one) still do (or were).
        // So do its call held at a soft budget limit, and the limits approved for it.
        let (steers, saved_tools, budget_wait, budget_approved) = saved
            .filter(|r| r.request_id == request_id)
            .map(|r| (r.steers, r.tools, r.budget_wait, r.budget_approved))
            .unwrap_or_default();
        let mut request = RequestState::new(request_id, None);
        request.model = self.chain_index_in(entries, &request.request_id);
        request.steers = steers;
        request.budget_wait = budget_wait;
        request.budget_approved = budget_approved;
        format.restore(&mut request);
        let message = match &entries[turn].body {
            EntryBody::Assistant { message, .. } => message.clone(),
            // The question is the last turn: the model owes its first answer.
            _ => {
                state.request = Some(Box::new(request));
                return self.next_iteration(state, step);
            }
        };
        request.tool_calls = tool_calls_in(&entries[..=turn], &request.request_id);
        request.iteration = entries[turn].refs.iteration.unwrap_or(1);
        request.turn_call = entries[turn].refs.call_id.clone().map(CallId::new);
        if message.has_tool_calls() {
            self.resume_tools(state, step, &resume, request, &message, turn, &saved_tools)
        } else {
            self.resume_answered(state, step, request, &message, turn)
        }
    }

    /// The stopped request's last turn answered without tool calls: a turn the provider
    /// paused is continued, an answer a person steered since is asked again, and any other
    /// answer is said again for whoever resumed.
    fn resume_answered(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        request: RequestState,
        message: &AssistantMessage,
        turn: usize,
    ) -> Result<Vec<Directive>, StrategyError> {
        let paused = message.stop_reason == StopReason::PauseTurn;
        let steered = !request.steers.is_empty();
        let answer = (!paused && !steered).then(|| {
            paused_text(&state.thread.to_list()[..turn], &request.request_id) + &message.to_string()
        });
        state.request = Some(Box::new(request));
        match answer {
            Some(answer) => self.answer(state, step, answer),
            None => self.next_iteration(state, step),
        }
    }

    /// The stopped request's last turn called tools and some have no result: each runs again,
    /// waits on for its person, or is answered with an error result ([`ReAct::owed_call`]);
    /// with nothing left to run, the model is asked again.
    #[allow(clippy::too_many_arguments)] // the request's parts, each read once
    fn resume_tools(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        resume: &AgentResume,
        mut request: RequestState,
        message: &AssistantMessage,
        turn: usize,
        saved_tools: &[PendingTool],
    ) -> Result<Vec<Directive>, StrategyError> {
        let entries = state.thread.to_list();
        let after_turn = &entries[turn + 1..];
        let answered: HashSet<&str> = after_turn
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::ToolResult { result, .. } => Some(result.tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        let missing = message
            .tool_calls()
            .filter(|call| !answered.contains(call.id))
            .map(|call| Missing {
                tool_call_id: call.id.to_owned(),
                name: call.name.to_owned(),
                args: call.args.clone(),
            });
        let mut directives = Vec::new();
        let mut owed = Vec::new();
        let mut announced = Vec::new();
        for call in missing {
            let call_id = CallId::new(step.env.fresh_id("tool"));
            let saved_tool = saved_tools
                .iter()
                .find(|t| t.tool_call_id == call.tool_call_id);
            if let Some(waiting) = saved_tool.and_then(|t| t.waiting.clone()) {
                // Nothing ran (an approval), or its question stands: it waits on.
                let mut tool = PendingTool::new(call_id, call.tool_call_id, call.name);
                tool.waiting = Some(waiting.clone());
                request.tools.push(tool);
                announced.push(waiting);
                continue;
            }
            let (entry, exec) =
                self.owed_call(&mut request, resume, after_turn, call_id, call, saved_tool);
            owed.push(entry);
            directives.extend(exec.map(Directive::ToolExec));
        }
        // One revision each, as when the calls were answered one by one.
        for entry in owed {
            state.thread.append(step.env, entry);
        }
        let all_done = request.tools.is_empty();
        state.request = Some(Box::new(request));
        if all_done {
            return self.next_iteration(state, step);
        }
        state.status = Status::AwaitingTools;
        state.settle();
        for waiting in &announced {
            directives.extend(self.announce(state, step, waiting)?);
        }
        Ok(directives)
    }

    /// A call that may or may not have run when the agent stopped. An idempotent tool under
    /// its re-run limit runs again (as a person approved it, if one did), after a note that
    /// counts the attempt; any other call is answered with an error result, so nothing runs
    /// twice.
    fn owed_call(
        &self,
        request: &mut RequestState,
        resume: &AgentResume,
        after_turn: &[Arc<Entry>],
        call_id: CallId,
        call: Missing,
        saved: Option<&PendingTool>,
    ) -> (NewEntry, Option<ToolExec>) {
        let Missing {
            tool_call_id,
            name,
            args,
        } = call;
        // Approved before the stop: whatever runs again runs as the person approved it.
        let approved = saved.and_then(|t| Some((t.approved_args.clone()?, t.edited)));
        let args = approved.as_ref().map_or(args, |(args, _)| args.clone());
        let reruns = reruns_of(after_turn, &tool_call_id);
        let mut refs = Refs::request(request.request_id.clone())
            .with_call_id(call_id.shared())
            .with_tool_call_id(tool_call_id.as_str())
            .with_iteration(request.iteration);
        refs.parent_call_id = request.turn_call.as_ref().map(CallId::shared);
        let idempotent = resume.idempotent_tools.contains(&name);
        if idempotent && reruns < self.config.max_tool_reruns {
            // Committed before the call runs: if the agent stops again while it runs, the
            // next resume counts this attempt.
            let note = format!(
                "{RERUN_NOTE} `{name}` after a stop (re-run {} of at most {})",
                reruns + 1,
                self.config.max_tool_reruns
            );
            let mut tool = PendingTool::new(call_id.clone(), tool_call_id.as_str(), &*name);
            let mut exec = ToolExec::new(call_id, tool_call_id, name, args);
            if let Some((args, edited)) = approved {
                tool.approved_args = Some(args);
                tool.edited = edited;
                exec = exec.approved();
            }
            request.tools.push(tool);
            return (NewEntry::note(note).with_refs(refs), Some(exec));
        }
        let message = if idempotent {
            format!(
                "the agent stopped each of the {} times `{name}` ran with these arguments, so it was not run again",
                reruns + 1
            )
        } else {
            format!(
                "the agent stopped while `{name}` was running: it may or may not have run, and it was not run again"
            )
        };
        let result = ToolResult::error(tool_call_id, message);
        (NewEntry::tool_result(name, result).with_refs(refs), None)
    }

    /// Where in the model chain the request `request_id` was when it stopped: at the model
    /// that answered its last turn (its call basis names a fallback), else at the start.
    fn chain_index_in(&self, entries: &[Arc<Entry>], request_id: &str) -> u32 {
        let answered_by = entries.iter().rev().find_map(|entry| match &entry.body {
            EntryBody::Assistant { basis, .. }
                if entry.refs.request_id.as_deref() == Some(request_id) =>
            {
                Some(basis.as_ref().and_then(|b| b.model.as_ref()))
            }
            _ => None,
        });
        answered_by
            .flatten()
            .and_then(|model| self.config.chain_index(model))
            .and_then(|index| u32::try_from(index).ok())
            .unwrap_or(0)
    }
}

/// Where the thread's last turn is: the index of its latest question or assistant turn, and
/// the request of its latest question, answer or tool result (the resume's own when that
/// names none). `None` for a thread with no turn.
fn last_turn(entries: &[Arc<Entry>], step: &Step<'_>) -> Option<(usize, ArcStr)> {
    let at = entries.iter().rposition(|e| {
        matches!(
            e.body,
            EntryBody::User { .. } | EntryBody::Assistant { .. } | EntryBody::ToolResult { .. }
        )
    })?;
    let request_id = entries[at]
        .refs
        .request_id
        .clone()
        .unwrap_or_else(|| step.request_id().into());
    let turn = entries[..=at]
        .iter()
        .rposition(|e| matches!(e.body, EntryBody::Assistant { .. } | EntryBody::User { .. }))?;
    Some((turn, request_id))
}

/// The request `entries` show begun and not ended: its last turn (a question, tool calls, or
/// their results) awaits the model, and no failure of that request follows it.
fn unfinished_request(entries: &[Arc<Entry>]) -> Option<String> {
    let last = entries.iter().rposition(|e| {
        matches!(
            e.body,
            EntryBody::User { .. } | EntryBody::Assistant { .. } | EntryBody::ToolResult { .. }
        )
    })?;
    let request = entries[last].refs.request_id.as_deref()?;
    if let EntryBody::Assistant { message, .. } = &entries[last].body
        && !message.has_tool_calls()
        && message.stop_reason != StopReason::PauseTurn
    {
        return None;
    }
    // A failed or cancelled request ends with its error, which names no call.
    let failed = entries[last + 1..].iter().any(|e| {
        matches!(e.body, EntryBody::Error { .. })
            && e.refs.request_id.as_deref() == Some(request)
            && e.refs.call_id.is_none()
    });
    (!failed).then(|| request.to_owned())
}

/// The text of the paused turns of `request` that `entries` end with (a turn the provider
/// paused, `StopReason::PauseTurn`, then continued): the beginning of the answer its
/// continuation ends.
pub(super) fn paused_text(entries: &[Arc<Entry>], request: &str) -> String {
    let paused: Vec<&Entry> = entries
        .iter()
        .rev()
        .filter(|e| {
            matches!(
                e.body,
                EntryBody::User { .. } | EntryBody::Assistant { .. } | EntryBody::ToolResult { .. }
            )
        })
        .map(|e| &**e)
        .take_while(|e| {
            e.refs.request_id.as_deref() == Some(request)
                && matches!(&e.body, EntryBody::Assistant { message, .. }
                    if message.stop_reason == StopReason::PauseTurn && !message.has_tool_calls())
        })
        .collect();
    paused
        .iter()
        .rev()
        .filter_map(|e| match &e.body {
            EntryBody::Assistant { message, .. } => Some(message.to_string()),
            _ => None,
        })
        .collect()
}

/// How the note that a resume re-runs a tool call begins.
const RERUN_NOTE: &str = "re-running";

/// How many times a resume has already re-run the tool call `tool_call_id` (the notes it
/// committed before each re-run, among `entries`).
fn reruns_of(entries: &[Arc<Entry>], tool_call_id: &str) -> u32 {
    let reruns = entries
        .iter()
        .filter(|e| e.refs.tool_call_id.as_deref() == Some(tool_call_id))
        .filter(|e| matches!(&e.body, EntryBody::Note { text } if text.starts_with(RERUN_NOTE)))
        .count();
    u32::try_from(reruns).unwrap_or(u32::MAX)
}

/// The tool calls the model made in `request_id`'s turns among `entries`.
fn tool_calls_in(entries: &[Arc<Entry>], request_id: &str) -> u32 {
    let calls = entries
        .iter()
        .filter(|e| e.refs.request_id.as_deref() == Some(request_id))
        .filter_map(|e| match &e.body {
            EntryBody::Assistant { message, .. } => Some(message.tool_calls().count()),
            _ => None,
        })
        .sum::<usize>();
    u32::try_from(calls).unwrap_or(u32::MAX)
}
