//! A scripted model for logic tests: it answers each request with the next response of its
//! script, streamed as the events a provider would send. Behind the `test-utils` feature, never
//! a default on a user path.

pub mod otlp;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use motet_directives::{AssistantBlock, LlmRequest, LlmResponse, StopReason};
use motet_providers::{LlmClient, LlmEvent, LlmEvents, ProviderError};

/// An [`LlmClient`] that plays back a script and records the requests it got.
#[derive(Debug, Clone, Default)]
pub struct ScriptedModel {
    script: Arc<Mutex<VecDeque<Result<LlmResponse, ProviderError>>>>,
    requests: Arc<Mutex<Vec<LlmRequest>>>,
}

impl ScriptedModel {
    /// A model that answers with these, in order.
    pub fn new(script: impl IntoIterator<Item = Result<LlmResponse, ProviderError>>) -> Self {
        Self {
            script: Arc::new(Mutex::new(script.into_iter().collect())),
            requests: Arc::default(),
        }
    }

    /// Appends to the script.
    pub fn push(&self, answer: Result<LlmResponse, ProviderError>) {
        if let Ok(mut script) = self.script.lock() {
            script.push_back(answer);
        }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// The events a provider would stream for `response`.
pub fn events_of(response: LlmResponse) -> Vec<LlmEvent> {
    let mut events = vec![LlmEvent::Started {
        model: response.model,
        response_id: response.response_id,
    }];
    for (n, block) in response.message.blocks.into_iter().enumerate() {
        match block {
            AssistantBlock::Text { text, meta } => events.push(LlmEvent::TextDelta {
                delta: text,
                meta: meta.map(|m| *m),
            }),
            AssistantBlock::Reasoning { text, meta } => {
                let key = format!("r{n}");
                events.push(LlmEvent::ReasoningStart { key: key.clone() });
                events.push(LlmEvent::ReasoningComplete {
                    key,
                    text: Some(text),
                    meta: meta.map(|m| *m),
                });
            }
            AssistantBlock::ToolUse {
                id,
                name,
                args,
                meta,
            } => {
                events.push(LlmEvent::ToolCallStart {
                    id: id.to_string(),
                    name,
                    meta: meta.map(|m| *m),
                });
                events.push(LlmEvent::ToolCallComplete {
                    id: id.to_string(),
                    args: Some(args.get().to_owned()),
                    meta: None,
                });
            }
            AssistantBlock::Opaque { provider, item } => {
                events.push(LlmEvent::Opaque { provider, item });
            }
            // Block kinds added later have no events here yet.
            _ => {}
        }
    }
    events.push(LlmEvent::Usage {
        usage: response.usage,
    });
    if !response.usage_by_model.is_empty() {
        events.push(LlmEvent::UsageByModel {
            usage: response.usage_by_model,
        });
    }
    events.push(LlmEvent::Done {
        stop_reason: response.message.stop_reason,
    });
    events
}

#[async_trait]
impl LlmClient for ScriptedModel {
    async fn stream(&self, req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(req);
        }
        let next = self.script.lock().ok().and_then(|mut s| s.pop_front());
        match next {
            Some(Ok(response)) => Ok(Box::pin(futures::stream::iter(
                events_of(response).into_iter().map(Ok),
            ))),
            Some(Err(error)) => Err(error),
            None => Err(ProviderError::InvalidRequest {
                status: 0,
                message: "the scripted model has no answer left".to_owned(),
            }),
        }
    }
}

/// A stop reason for a scripted turn: `ToolUse` when it calls tools, `EndTurn` otherwise.
pub fn stop_for(blocks: &[AssistantBlock]) -> StopReason {
    if blocks
        .iter()
        .any(|b| matches!(b, AssistantBlock::ToolUse { .. }))
    {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    }
}

/// What a test does when something it needs from outside is missing (a server, a binary),
/// `reason` saying what and how to start it: under `CI=true` the test fails with it, since CI
/// starts everything (scripts/test.sh); elsewhere it prints `skipped: {reason}` and the caller
/// returns.
///
/// # Panics
/// Under `CI=true`, always.
#[allow(clippy::panic, reason = "a test that cannot run under CI fails")]
pub fn missing(reason: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true, and this test needs what is missing: {reason}");
    }
    println!("skipped: {reason}");
}

/// The value of `var` (a server's URL), or `None` after [`missing`] said it is not set and
/// `how` to start the server.
pub fn needs_var(var: &str, how: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => Some(value),
        _ => {
            missing(&format!("{var} is not set ({how})"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use motet_directives::{AssistantMessage, ModelUsage, Usage};
    use motet_providers::BlockAssembler;

    use super::*;

    /// The scripted events assemble back into the response, usage split by model included.
    #[test]
    fn a_scripted_response_streams_back_whole() {
        let usage = |input| Usage {
            input_tokens: input,
            output_tokens: 1,
            ..Usage::default()
        };
        let mut response = LlmResponse::new(AssistantMessage::text("ok"), usage(5));
        response.usage_by_model = vec![
            ModelUsage {
                model: "executor".into(),
                usage: usage(3),
            },
            ModelUsage {
                model: "advisor".into(),
                usage: usage(2),
            },
        ];
        let mut assembler = BlockAssembler::new();
        for event in events_of(response.clone()) {
            assert_eq!(assembler.push(event), Ok(()));
        }
        assert_eq!(assembler.finish(), Ok(response));
    }
}
