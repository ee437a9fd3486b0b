//! A model that answers each agent from its own script, for tests of agents that ask each
//! other (delegate.rs, delegate_crash.rs), and what one of them was asked.

#![allow(dead_code, reason = "each test file uses some of these")]

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use motet_directives::{AssistantBlock, LlmRequest, Message, ToolArgs};
use motet_providers::{LlmClient, LlmEvents, ProviderError};

use super::{HangingModel, turn_using};

/// What the model does for one call of one agent.
#[derive(Clone)]
pub(crate) enum Step {
    /// Answers with these blocks, reporting these input and output tokens.
    Turn(Vec<AssistantBlock>, u32, u32),
    /// Never finishes; `dropped` is set when its stream is dropped (the call aborted).
    Hang(Arc<AtomicBool>, Arc<tokio::sync::Notify>),
}

/// A model that answers each agent from its own script, told apart by the agent's system
/// prompt: agents that ask each other call the model in an order no test should depend on.
#[derive(Clone, Default)]
pub(crate) struct ByAgent {
    scripts: Arc<Mutex<HashMap<String, VecDeque<Step>>>>,
    seen: Arc<Mutex<Vec<(String, LlmRequest)>>>,
}

impl ByAgent {
    pub(crate) fn script(self, system: &str, steps: impl IntoIterator<Item = Step>) -> Self {
        self.scripts
            .lock()
            .unwrap()
            .entry(system.to_owned())
            .or_default()
            .extend(steps);
        self
    }

    /// The requests agent `system` made.
    pub(crate) fn requests_of(&self, system: &str) -> Vec<LlmRequest> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|(s, _)| s == system)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

pub(crate) fn system_of(req: &LlmRequest) -> String {
    req.messages
        .iter()
        .find_map(|m| match m {
            Message::System { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[async_trait]
impl LlmClient for ByAgent {
    async fn stream(&self, req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        let system = system_of(&req);
        self.seen
            .lock()
            .unwrap()
            .push((system.clone(), req.clone()));
        let step = self
            .scripts
            .lock()
            .unwrap()
            .get_mut(&system)
            .and_then(VecDeque::pop_front)
            .unwrap_or_else(|| panic!("no more turns for `{system}`"));
        match step {
            Step::Turn(blocks, input, output) => {
                let events = motet_runtime::testing::events_of(turn_using(blocks, input, output)?);
                Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
            }
            Step::Hang(dropped, started) => HangingModel { dropped, started }.stream(req).await,
        }
    }
}

pub(crate) fn text(t: &str, input: u32, output: u32) -> Step {
    Step::Turn(vec![AssistantBlock::text(t)], input, output)
}

pub(crate) fn call(id: &str, tool: &str, args: &str, input: u32, output: u32) -> Step {
    Step::Turn(
        vec![AssistantBlock::tool_use(
            id,
            tool,
            ToolArgs::from_text(args),
        )],
        input,
        output,
    )
}

/// The user messages of thread `thread` of `agent`.
pub(crate) async fn questions(
    runtime: &motet_runtime::agent::Runtime,
    agent: &str,
    thread: &str,
) -> Vec<String> {
    let handle = runtime.agent(agent).unwrap();
    let Some(thread) = handle.get_thread(Some(thread)).await.unwrap() else {
        return Vec::new();
    };
    thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            motet_agents::EntryBody::User { content } => Some(content.to_string()),
            _ => None,
        })
        .collect()
}
