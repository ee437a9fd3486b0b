//! What the runtime's agent tests share: the calculator agent through the front door users type
//! (`ReActAgent`, its `add` tool given once), a runtime on a scripted model with that agent
//! spawned, scripted turns, an ask that expects an answer, and models that echo or hang.

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{ContextPolicy, ReAct, ReActConfig, ReactCompleted};
use motet_directives::{AssistantBlock, AssistantMessage, LlmResponse, Message, Usage};
use motet_providers::{LlmClient, ProviderError};
use motet_runtime::agent::{
    AgentHandle, AgentSpec, Answer, AskError, AskOptions, ReActAgent, Runtime,
};
use motet_runtime::testing::ScriptedModel;

pub(crate) mod by_agent;
use motet_runtime::tool::{Tool, ToolError, ToolSet, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct AddArgs {
    pub a: i64,
    pub b: i64,
}

/// The calculator's one tool.
pub(crate) fn add() -> impl Tool {
    tool_fn("add", "Adds two integers.", |args: AddArgs| async move {
        Ok::<_, ToolError>((args.a + args.b).to_string())
    })
}

/// The calculator's tools as a set, for a spec built by hand.
pub(crate) fn calculator() -> Arc<ToolSet> {
    Arc::new(ToolSet::builder().tool(add()).build().unwrap())
}

/// The model most tests name; the runtime's scripted or echoing model answers for it.
pub(crate) const MODEL: &str = "openai:gpt-5.2";

/// The agent most tests ask, as a user writes it: a ReAct calculator named `name` on
/// [`MODEL`], its `add` tool given once (offered and run). Shape it further with the
/// builder's own methods (`.agent(|s| s.with_priority(..))`, `.configure(..)`).
pub(crate) fn calc_agent(name: impl Into<String>) -> ReActAgent {
    calc_agent_on(name, MODEL)
}

/// [`calc_agent`] on another model (`openai-compat:local`, say).
pub(crate) fn calc_agent_on(name: impl Into<String>, model: &str) -> ReActAgent {
    ReActAgent::new(name, model)
        .system("You are a calculator.")
        .tool(add())
        // Whole history in every call (no turn cap), so answers show what a thread holds.
        .configure(|c| c.with_context_policy(ContextPolicy::new().with_keep_last_turns(0)))
}

/// A runtime whose every LLM call goes to `model`.
pub(crate) fn runtime_on(model: impl LlmClient + 'static) -> Runtime {
    Runtime::builder().llm(model).build().unwrap()
}

/// A model that answers with these turns, in order (each a [`turn`]).
pub(crate) fn scripted(turns: impl IntoIterator<Item = Vec<AssistantBlock>>) -> ScriptedModel {
    ScriptedModel::new(turns.into_iter().map(turn))
}

/// A runtime on `model` with `agent` spawned on it.
pub(crate) async fn spawned(
    model: impl LlmClient + 'static,
    agent: ReActAgent,
) -> (Runtime, AgentHandle) {
    let runtime = runtime_on(model);
    let agent = runtime.spawn(agent).await.unwrap();
    (runtime, agent)
}

/// The answer `query` gets; a failure fails the test.
pub(crate) async fn ask_text(agent: &AgentHandle, query: &str) -> String {
    agent.ask(query).await.unwrap().text
}

/// The ReAct strategy alone, for a test about the spec or a strategy around ReAct: it offers
/// `tools`' definitions, and the spec built around it must be given the tools to run them.
pub(crate) fn react(model: &str, tools: &ToolSet) -> ReAct {
    ReAct::new(
        ReActConfig::new(model.parse().unwrap())
            .with_system_prompt("You are a calculator.")
            .with_tools(tools.definitions())
            // Whole history in every call (no turn cap), so answers show what a thread holds.
            .with_context_policy(ContextPolicy::new().with_keep_last_turns(0)),
    )
}

pub(crate) fn turn(blocks: Vec<AssistantBlock>) -> Result<LlmResponse, ProviderError> {
    turn_using(blocks, 10, 5)
}

/// A turn with these blocks that reports `input` and `output` tokens.
pub(crate) fn turn_using(
    blocks: Vec<AssistantBlock>,
    input: u32,
    output: u32,
) -> Result<LlmResponse, ProviderError> {
    let stop_reason = motet_runtime::testing::stop_for(&blocks);
    Ok(LlmResponse::new(
        AssistantMessage {
            blocks,
            stop_reason,
        },
        Usage {
            input_tokens: input.into(),
            output_tokens: output.into(),
            ..Usage::default()
        },
    ))
}

/// A model that answers with the user messages it was shown, joined by `|`: what a thread's
/// history holds, visible in every answer.
#[derive(Clone, Default)]
pub(crate) struct EchoModel {
    pub delay: Duration,
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for EchoModel {
    async fn stream(
        &self,
        req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, ProviderError> {
        tokio::time::sleep(self.delay).await;
        let seen: Vec<&str> = req
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User { content } => content.as_text(),
                _ => None,
            })
            .collect();
        let response = turn(vec![AssistantBlock::text(seen.join("|"))])?;
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

/// A model that never finishes, and notes when its stream is dropped (the request cancelled).
#[derive(Clone, Default)]
pub(crate) struct HangingModel {
    pub dropped: Arc<std::sync::atomic::AtomicBool>,
    pub started: Arc<tokio::sync::Notify>,
}

pub(crate) struct DropFlag(pub Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for HangingModel {
    async fn stream(
        &self,
        _req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, ProviderError> {
        let flag = DropFlag(self.dropped.clone());
        self.started.notify_one();
        Ok(Box::pin(futures::stream::unfold(flag, |flag| async move {
            futures::future::pending::<()>().await;
            Some((
                Ok(motet_providers::LlmEvent::Done {
                    stop_reason: motet_directives::StopReason::EndTurn,
                }),
                flag,
            ))
        })))
    }
}

pub(crate) fn echo_runtime(store: Arc<dyn motet_runtime::store::ThreadStore>) -> Runtime {
    Runtime::builder()
        .llm(Arc::new(EchoModel::default()))
        .store(store)
        .build()
        .unwrap()
}

/// A runtime whose model echoes after `delay`, and a ReAct calculator agent `echo` on it, its
/// spec shaped by `spec` (a request policy, say).
pub(crate) async fn echo_agent(
    delay: Duration,
    spec: impl FnOnce(AgentSpec<ReAct>) -> AgentSpec<ReAct> + Send + 'static,
) -> (Runtime, AgentHandle) {
    spawned(EchoModel { delay }, calc_agent("echo").agent(spec)).await
}

/// The local llama.cpp server's URL (`MOTET_LOCAL_LLM_URL`, no trailing slash), or `None`
/// once [`motet_runtime::testing::missing`] said so (under `CI=true` the test fails instead).
pub(crate) fn local_llm() -> Option<String> {
    motet_runtime::testing::needs_var("MOTET_LOCAL_LLM_URL", "bash scripts/local-llm.sh start")
        .map(|url| url.trim_end_matches('/').to_owned())
}

/// The data of a failed reply, as JSON text; anything but a failed reply fails the test.
pub(crate) fn failure_data(result: Result<Answer, AskError>) -> String {
    match result {
        Err(AskError::Failed { reply }) => {
            reply.data_as::<serde_json::Value>().unwrap().to_string()
        }
        other => panic!("{other:?}"),
    }
}

/// The tool results `request` shows the model (those of its first tool-results message).
pub(crate) fn tool_results(
    request: &motet_directives::LlmRequest,
) -> Vec<motet_directives::ToolResult> {
    request
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResults { results } => Some(results.clone()),
            _ => None,
        })
        .expect("tool results in the request")
}

/// The first tool result `request` shows the model.
pub(crate) fn first_tool_result(
    request: &motet_directives::LlmRequest,
) -> motet_directives::ToolResult {
    tool_results(request).remove(0)
}

/// The arguments of the first tool call in `thread`, as stored.
pub(crate) fn first_call_args(thread: &motet_agents::Thread) -> String {
    thread
        .to_list()
        .iter()
        .find_map(|entry| match &entry.body {
            motet_agents::EntryBody::Assistant { message, .. } => {
                message.tool_calls().next().map(|c| c.args.get().to_owned())
            }
            _ => None,
        })
        .expect("the call is in the thread")
}

/// Asks each of `questions` on `thread` in turn; each must be answered.
pub(crate) async fn ask_each(
    agent: &motet_runtime::agent::AgentHandle,
    thread: &str,
    questions: &[&str],
) {
    for question in questions {
        agent.ask_with(*question, on(thread)).await.unwrap();
    }
}

pub(crate) fn on(thread: &str) -> AskOptions {
    AskOptions {
        thread_id: Some(thread.to_owned()),
        ..AskOptions::default()
    }
}

pub(crate) async fn answer(
    agent: &motet_runtime::agent::AgentHandle,
    query: &str,
    thread: &str,
) -> String {
    let reply = agent.ask_with(query, on(thread)).await.unwrap();
    reply.signal.data_as::<ReactCompleted>().unwrap().answer
}

/// The ReAct answers of `replies`, in order; a failed ask fails the test.
pub(crate) fn answers(
    replies: Vec<Result<motet_runtime::agent::Answer, motet_runtime::agent::AskError>>,
) -> Vec<String> {
    replies
        .into_iter()
        .map(|reply| {
            reply
                .unwrap()
                .signal
                .data_as::<motet_agents::ReactCompleted>()
                .unwrap()
                .answer
        })
        .collect()
}
