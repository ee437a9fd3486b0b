//! What the OpenAI-compatible endpoint's tests share: a served runtime on a free loopback port,
//! the calculator agent (a ReAct agent with an `add` tool that counts its runs), scripted turns,
//! a model that echoes what it was shown after a delay, and an SSE body read into its `data:`
//! payloads.

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use motet_directives::{AssistantBlock, AssistantMessage, LlmResponse, Message, ToolArgs, Usage};
use motet_providers::{LlmClient, ProviderError};
use motet_runtime::agent::{AgentHandle, ReActAgent, Runtime};
use motet_runtime::testing::ScriptedModel;
use motet_runtime::tool::{Tool, ToolError, tool_fn};
use motet_serve::{Served, Tokens};

/// The model the agents name; the runtime's one client answers for it.
pub(crate) const MODEL: &str = "openai:gpt-5.2";

/// A served runtime: its base URL (`http://127.0.0.1:PORT`), the runtime and its agents.
pub(crate) struct Server {
    pub base: String,
    pub runtime: Runtime,
    pub agents: Vec<AgentHandle>,
}

/// Serves `agents` (spawned on a runtime whose every call goes to `model`) with `tokens`, on a
/// free loopback port.
pub(crate) async fn serve(
    model: impl LlmClient + 'static,
    agents: Vec<ReActAgent>,
    tokens: Tokens,
) -> Server {
    let runtime = Runtime::builder().llm(model).build().unwrap();
    let mut handles = Vec::new();
    for agent in agents {
        handles.push(runtime.spawn(agent).await.unwrap());
    }
    serve_handles(runtime, handles, tokens).await
}

/// Serves agents already spawned on `runtime`.
pub(crate) async fn serve_handles(
    runtime: Runtime,
    agents: Vec<AgentHandle>,
    tokens: Tokens,
) -> Server {
    let served = Served::new(runtime.clone(), agents.clone(), tokens);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, served.router()).await });
    Server {
        base,
        runtime,
        agents,
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct AddArgs {
    pub a: i64,
    pub b: i64,
}

/// The calculator's `add` tool; `runs` counts its runs.
pub(crate) fn add(runs: Arc<AtomicU32>) -> impl Tool {
    tool_fn("add", "Adds two integers.", move |args: AddArgs| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolError>((args.a + args.b).to_string()) }
    })
}

/// A ReAct calculator named `name` on `model`, its `add` counting into `runs`.
pub(crate) fn calc_agent(name: &str, model: &str, runs: Arc<AtomicU32>) -> ReActAgent {
    ReActAgent::new(name, model)
        .system("You are a calculator. Use the add tool to add numbers.")
        .tool(add(runs))
}

/// A model turn with `blocks`, reporting `input` and `output` tokens.
pub(crate) fn turn(
    blocks: Vec<AssistantBlock>,
    input: u64,
    output: u64,
) -> Result<LlmResponse, ProviderError> {
    let stop_reason = motet_runtime::testing::stop_for(&blocks);
    Ok(LlmResponse::new(
        AssistantMessage {
            blocks,
            stop_reason,
        },
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        },
    ))
}

/// The two turns of one calculator ask: `add(a, b)` (10 in, 4 out), then `answer` (20 in, 6
/// out).
pub(crate) fn add_then_answer(
    a: i64,
    b: i64,
    answer: &str,
) -> [Result<LlmResponse, ProviderError>; 2] {
    [
        turn(
            vec![AssistantBlock::tool_use(
                "call_add",
                "add",
                ToolArgs::from_text(format!(r#"{{"a":{a},"b":{b}}}"#)),
            )],
            10,
            4,
        ),
        turn(vec![AssistantBlock::text(answer)], 20, 6),
    ]
}

/// A scripted model that plays `turns`.
pub(crate) fn scripted(
    turns: impl IntoIterator<Item = Result<LlmResponse, ProviderError>>,
) -> ScriptedModel {
    ScriptedModel::new(turns)
}

/// A model that answers, after `delay`, with the user messages it was shown joined by `|`.
#[derive(Clone, Default)]
pub(crate) struct EchoModel {
    pub delay: Duration,
}

#[async_trait::async_trait]
impl LlmClient for EchoModel {
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
        let response = turn(vec![AssistantBlock::text(seen.join("|"))], 3, 2)?;
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

/// The `data:` payloads of an SSE body, in order.
pub(crate) fn data_of(body: &str) -> Vec<String> {
    body.split("\n\n")
        .flat_map(|event| event.lines())
        .filter_map(|line| {
            line.strip_prefix("data: ")
                .or_else(|| line.strip_prefix("data:"))
        })
        .map(str::to_owned)
        .collect()
}

/// A chat-completions body asking `model` `text`, with `more` fields beside.
pub(crate) fn ask_body(model: &str, text: &str, more: serde_json::Value) -> serde_json::Value {
    let mut body = serde_json::json!({
        "model": model,
        "messages": [{"role": "user", "content": text}],
    });
    if let (Some(body), serde_json::Value::Object(more)) = (body.as_object_mut(), more) {
        body.extend(more);
    }
    body
}
