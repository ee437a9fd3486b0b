//! What the endpoint answers, written as OpenAI's JSON (pure, plain `#[test]`s): a whole
//! completion, or a stream's chunks in order — the role first, the text as the agent's model
//! writes it, the ending (`finish_reason`), the usage when asked for — and the notice a client
//! gets when the agent waits for a person.

use motet_agents::Waiting;
use motet_directives::{CallId, Usage};
use motet_runtime::agent::{DeltaKind, LlmDelta};

use super::error::OpenAiError;
use super::wire::{
    self, AnswerMessage, Choice, Chunk, ChunkChoice, Completion, Delta, Motet, WaitingCall,
};

/// The `finish_reason` of an answer, and of a response that ends on a wait for a person (the
/// request goes on once someone answers through the native API).
const FINISHED: &str = "stop";

/// What every part of one response names: its id, when and which agent, where it runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    /// `chatcmpl-<request id>`.
    pub(crate) id: String,
    /// Unix seconds.
    pub(crate) created: u64,
    /// The agent's name.
    pub(crate) model: String,
    /// The thread and request.
    pub(crate) motet: Motet,
}

impl Reply {
    /// The reply to request `request` of agent `model` on thread `thread`, made at `created`.
    pub(crate) fn new(model: &str, thread: &str, request: &str, created: u64) -> Self {
        Self {
            id: format!("chatcmpl-{request}"),
            created,
            model: model.to_owned(),
            motet: Motet {
                thread: thread.to_owned(),
                request: request.to_owned(),
                waiting: Vec::new(),
            },
        }
    }

    /// The whole completion for an answer `text` that used `usage`, as JSON text (written once,
    /// straight from the typed completion).
    pub(crate) fn completion(&self, text: &str, usage: &Usage) -> String {
        self.completion_with(text, &self.motet, usage)
    }

    /// The completion that tells the client the request waits on `waiting`: its text names
    /// each call, and `motet.waiting` lists them (JSON text).
    pub(crate) fn waiting(&self, waiting: &[Waiting]) -> String {
        let motet = self.waiting_motet(waiting);
        let notice = wait_notice(&motet);
        self.completion_with(&notice, &motet, &Usage::default())
    }

    fn completion_with(&self, text: &str, motet: &Motet, usage: &Usage) -> String {
        let completion = Completion {
            id: &self.id,
            object: "chat.completion",
            created: self.created,
            model: &self.model,
            choices: [Choice {
                index: 0,
                message: AnswerMessage {
                    role: "assistant",
                    content: text,
                    refusal: None,
                },
                logprobs: None,
                finish_reason: FINISHED,
            }],
            usage: usage.into(),
            motet,
        };
        serde_json::to_string(&completion).unwrap_or_default()
    }

    fn waiting_motet(&self, waiting: &[Waiting]) -> Motet {
        Motet {
            waiting: waiting
                .iter()
                .map(|w| WaitingCall {
                    tool_call_id: w.tool_call_id.clone(),
                    tool: w.tool.clone(),
                    kind: if w.pause.is_approval() {
                        "approval"
                    } else {
                        "question"
                    },
                })
                .collect(),
            ..self.motet.clone()
        }
    }
}

/// The text a client reads when the agent stopped to wait for a person.
fn wait_notice(motet: &Motet) -> String {
    let calls: Vec<String> = motet
        .waiting
        .iter()
        .map(|call| {
            let what = match call.kind {
                "approval" => "needs a person's approval",
                _ => "asks a person a question",
            };
            format!("tool call `{}` (`{}`) {what}", call.tool_call_id, call.tool)
        })
        .collect();
    format!(
        "[motet] The agent waits for a person: {}. Answer through motet's native API \
         (request `{}` on thread `{}`); the request goes on once answered, and its answer is \
         kept on that thread.",
        calls.join("; "),
        motet.request,
        motet.thread
    )
}

/// A streamed answer, chunk by chunk: each method returns the `data:` payloads to send, in
/// order; the driver ends the stream with `data: [DONE]` after [`answered`](Self::answered) or
/// [`waiting`](Self::waiting) (not after [`failed`](Self::failed)).
#[derive(Debug)]
pub(crate) struct Chunks {
    reply: Reply,
    include_usage: bool,
    /// The model call whose text was sent last.
    last_call: Option<CallId>,
    /// Whether any text was sent.
    wrote: bool,
}

impl Chunks {
    /// The chunks of `reply`, ending with a usage chunk when `include_usage`.
    pub(crate) fn new(reply: Reply, include_usage: bool) -> Self {
        Self {
            reply,
            include_usage,
            last_call: None,
            wrote: false,
        }
    }

    /// The first chunk: the assistant's role, no text yet.
    pub(crate) fn opening(&self) -> String {
        self.chunk(
            Delta {
                role: Some("assistant"),
                content: Some(""),
            },
            None,
            None,
        )
    }

    /// The chunk for a fragment the agent's model wrote: text only (reasoning stays inside
    /// the agent). The text of a later model call (after tool calls) is set apart from the
    /// earlier one's by a blank line. A discarded call's fragments were sent already and stand.
    pub(crate) fn delta(&mut self, delta: &LlmDelta) -> Option<String> {
        // Another agent's text (one this agent called as a tool) stays inside the agent.
        if delta.kind != DeltaKind::Text || delta.delta.is_empty() || delta.agent.is_some() {
            return None;
        }
        let joined;
        let text = match &self.last_call {
            Some(call) if *call != delta.call_id && self.wrote => {
                joined = format!("\n\n{}", delta.delta);
                joined.as_str()
            }
            _ => delta.delta.as_str(),
        };
        let chunk = self.chunk(
            Delta {
                role: None,
                content: Some(text),
            },
            None,
            None,
        );
        self.last_call = Some(delta.call_id.clone());
        self.wrote = true;
        Some(chunk)
    }

    /// The chunks that end an answer `text` that used `usage`: the text itself when none was
    /// streamed (an agent whose answer is not its model's text), the finish, the usage.
    pub(crate) fn answered(&mut self, text: &str, usage: &Usage) -> Vec<String> {
        let mut chunks = Vec::with_capacity(3);
        if !self.wrote && !text.is_empty() {
            chunks.push(self.chunk(
                Delta {
                    role: None,
                    content: Some(text),
                },
                None,
                None,
            ));
            self.wrote = true;
        }
        chunks.push(self.chunk(Delta::default(), Some(FINISHED), Some(&self.reply.motet)));
        if self.include_usage {
            chunks.push(self.usage_chunk(usage));
        }
        chunks
    }

    /// The chunks that end the response when the agent waits for a person: the notice, and
    /// the finish naming the calls. No usage chunk: the request has not ended.
    pub(crate) fn waiting(&mut self, waiting: &[Waiting]) -> Vec<String> {
        let motet = self.reply.waiting_motet(waiting);
        let notice = match self.wrote {
            true => format!("\n\n{}", wait_notice(&motet)),
            false => wait_notice(&motet),
        };
        vec![
            self.chunk(
                Delta {
                    role: None,
                    content: Some(&notice),
                },
                None,
                None,
            ),
            self.chunk(Delta::default(), Some(FINISHED), Some(&motet)),
        ]
    }

    /// The payload that ends a stream whose request failed: OpenAI's error object, which its
    /// clients raise.
    pub(crate) fn failed(error: &OpenAiError) -> String {
        serde_json::to_string(&error.body()).unwrap_or_default()
    }

    fn chunk(
        &self,
        delta: Delta<'_>,
        finish: Option<&'static str>,
        motet: Option<&Motet>,
    ) -> String {
        let chunk = Chunk {
            id: &self.reply.id,
            object: "chat.completion.chunk",
            created: self.reply.created,
            model: &self.reply.model,
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                logprobs: None,
                finish_reason: finish,
            }],
            usage: self.include_usage.then_some(None),
            motet,
        };
        serde_json::to_string(&chunk).unwrap_or_default()
    }

    fn usage_chunk(&self, usage: &Usage) -> String {
        let chunk = Chunk {
            id: &self.reply.id,
            object: "chat.completion.chunk",
            created: self.reply.created,
            model: &self.reply.model,
            choices: Vec::new(),
            usage: Some(Some(wire::Usage::from(usage))),
            motet: None,
        };
        serde_json::to_string(&chunk).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use motet_directives::{Approval, Pause, ToolArgs};
    use serde_json::{Value, json};

    use super::*;

    fn reply() -> Reply {
        Reply::new("calc", "thread_1", "req_1", 1_700_000_000)
    }

    fn usage() -> Usage {
        Usage {
            input_tokens: 12,
            output_tokens: 7,
            cache_read_tokens: 2,
            ..Usage::default()
        }
    }

    fn delta(call: &str, kind: DeltaKind, text: &str) -> LlmDelta {
        LlmDelta {
            call_id: CallId::new(call),
            kind,
            delta: text.to_owned(),
            agent: None,
        }
    }

    fn parsed(chunks: &[String]) -> Vec<Value> {
        chunks
            .iter()
            .map(|c| serde_json::from_str(c).unwrap_or_default())
            .collect()
    }

    fn waiting(call: &str, pause: Pause) -> Waiting {
        Waiting {
            agent: "calc".into(),
            thread: "thread_1".into(),
            request_id: "req_1".into(),
            tool_call_id: call.into(),
            tool: "delete".into(),
            args: ToolArgs::from_text("{}"),
            pause,
            since_ms: 0,
            deadline_ms: None,
        }
    }

    #[test]
    fn a_completion_has_openais_shape_and_the_answers_usage() {
        let completion: Value =
            serde_json::from_str(&reply().completion("5", &usage())).unwrap_or_default();
        assert_eq!(
            completion,
            json!({
                "id": "chatcmpl-req_1", "object": "chat.completion", "created": 1_700_000_000,
                "model": "calc",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "5", "refusal": null},
                    "logprobs": null, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19,
                    "prompt_tokens_details": {"cached_tokens": 2},
                    "completion_tokens_details": {"reasoning_tokens": 0}},
                "motet": {"thread": "thread_1", "request": "req_1"},
            })
        );
    }

    #[test]
    fn a_stream_opens_with_the_role_sends_text_then_the_finish_then_the_usage() {
        let mut chunks = Chunks::new(reply(), true);
        let mut sent = vec![chunks.opening()];
        for d in [
            delta("c1", DeltaKind::Reasoning, "hmm"),
            delta("c1", DeltaKind::Text, "Let me add."),
            delta("c2", DeltaKind::Text, "It is "),
            delta("c2", DeltaKind::Text, ""),
            delta("c2", DeltaKind::Text, "5."),
        ] {
            sent.extend(chunks.delta(&d));
        }
        sent.extend(chunks.answered("It is 5.", &usage()));
        let sent = parsed(&sent);
        let contents: Vec<Value> = sent
            .iter()
            .map(|c| c["choices"][0]["delta"]["content"].clone())
            .collect();
        assert_eq!(
            contents,
            [
                json!(""),
                json!("Let me add."),
                json!("\n\nIt is "),
                json!("5."),
                Value::Null,
                Value::Null
            ]
        );
        assert_eq!(sent[0]["choices"][0]["delta"]["role"], "assistant");
        assert!(sent.iter().all(|c| c["id"] == "chatcmpl-req_1"
            && c["object"] == "chat.completion.chunk"
            && c["created"] == 1_700_000_000
            && c["model"] == "calc"));
        let finishes: Vec<&Value> = sent
            .iter()
            .map(|c| &c["choices"][0]["finish_reason"])
            .collect();
        assert_eq!(finishes[..4], [&Value::Null; 4]);
        assert_eq!(finishes[4], "stop");
        assert_eq!(sent[4]["motet"]["thread"], "thread_1");
        // Every chunk carries `usage: null` but the last, which has no choices.
        assert!(
            sent[..5]
                .iter()
                .all(|c| c.get("usage") == Some(&Value::Null))
        );
        assert_eq!(sent[5]["choices"], json!([]));
        assert_eq!(sent[5]["usage"]["prompt_tokens"], 12);
        assert_eq!(sent[5]["usage"]["completion_tokens"], 7);
        assert_eq!(sent[5]["usage"]["total_tokens"], 19);
    }

    #[test]
    fn without_include_usage_no_chunk_names_usage() {
        let mut chunks = Chunks::new(reply(), false);
        let mut sent = vec![chunks.opening()];
        sent.extend(chunks.answered("5", &usage()));
        let sent = parsed(&sent);
        assert_eq!(sent.len(), 3, "role, the unstreamed answer, the finish");
        assert_eq!(sent[1]["choices"][0]["delta"]["content"], "5");
        assert!(sent.iter().all(|c| c.get("usage").is_none()));
    }

    #[test]
    fn a_wait_for_a_person_ends_the_response_naming_each_call() {
        let calls = [
            waiting("call_a", Pause::Approval(Approval::default())),
            waiting(
                "call_b",
                Pause::Question {
                    text: "Which?".into(),
                },
            ),
        ];
        let whole: Value = serde_json::from_str(&reply().waiting(&calls)).unwrap_or_default();
        let text = whole["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.contains("`call_a` (`delete`) needs a person's approval"),
            "{text}"
        );
        assert!(
            text.contains("`call_b` (`delete`) asks a person a question"),
            "{text}"
        );
        assert!(
            text.contains("request `req_1` on thread `thread_1`"),
            "{text}"
        );
        assert_eq!(whole["choices"][0]["finish_reason"], "stop");
        assert_eq!(
            whole["motet"]["waiting"],
            json!([{"tool_call_id": "call_a", "tool": "delete", "kind": "approval"},
                   {"tool_call_id": "call_b", "tool": "delete", "kind": "question"}])
        );

        let mut chunks = Chunks::new(reply(), true);
        let _ = chunks.delta(&delta("c1", DeltaKind::Text, "Deleting."));
        // A callee's text is not the answer's.
        let callee = LlmDelta {
            agent: Some("researcher".to_owned()),
            ..delta("c9", DeltaKind::Text, "inside")
        };
        assert_eq!(chunks.delta(&callee), None);
        let sent = parsed(&chunks.waiting(&calls[..1]));
        assert_eq!(sent.len(), 2, "the notice and the finish; no usage");
        let notice = sent[0]["choices"][0]["delta"]["content"]
            .as_str()
            .unwrap_or_default();
        assert!(
            notice.starts_with("\n\n[motet] The agent waits"),
            "{notice}"
        );
        assert_eq!(sent[1]["choices"][0]["finish_reason"], "stop");
        assert_eq!(sent[1]["motet"]["waiting"][0]["kind"], "approval");
    }

    #[test]
    fn a_failure_is_openais_error_object() {
        let error = OpenAiError::AgentFailed {
            reason: "the request failed: llm".into(),
        };
        let payload: Value = serde_json::from_str(&Chunks::failed(&error)).unwrap_or_default();
        assert_eq!(payload["error"]["message"], "the request failed: llm");
        assert_eq!(payload["error"]["type"], "server_error");
    }
}
