//! `Runtime::activity`: the runtime counts every LLM call, tool call and token as it finishes,
//! across agents, so a progress display can show work before the first answer arrives.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;

use motet_directives::{
    AssistantBlock, AssistantMessage, LlmResponse, StopReason, ToolArgs, Usage,
};
use motet_runtime::agent::{ActivitySnapshot, ReActAgent, Runtime};
use motet_runtime::testing::ScriptedModel;
use motet_runtime::tool::{ToolError, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;

use common::spawned;

#[derive(Deserialize, JsonSchema)]
struct Factors {
    a: i64,
    b: i64,
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

fn call(id: &str, args: &str) -> AssistantMessage {
    AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            id,
            "multiply",
            ToolArgs::from_text(args),
        )],
        stop_reason: StopReason::ToolUse,
    }
}

#[tokio::test]
async fn calls_tools_and_tokens_are_counted_as_they_finish() {
    let model = Arc::new(ScriptedModel::new([
        Ok(LlmResponse::new(
            call("c1", r#"{"a":17,"b":23}"#),
            usage(100, 10),
        )),
        // A second call whose tool fails: an error result is counted as one.
        Ok(LlmResponse::new(
            call("c2", r#"{"a":9223372036854775807,"b":2}"#),
            usage(150, 12),
        )),
        Ok(LlmResponse::new(
            AssistantMessage::text("391"),
            usage(200, 5),
        )),
    ]));
    let runtime = Runtime::builder().llm(model).build().unwrap();
    assert_eq!(runtime.activity(), ActivitySnapshot::default());
    let multiply = tool_fn("multiply", "Multiplies a and b.", |f: Factors| async move {
        f.a.checked_mul(f.b)
            .map(|p| p.to_string())
            .ok_or_else(|| ToolError::failed("overflow"))
    });
    let agent = runtime
        .spawn(ReActAgent::new("calc", "openai:gpt-5.2").tool(multiply))
        .await
        .unwrap();
    agent.ask("17 * 23?").await.unwrap();

    let now = runtime.activity();
    assert_eq!(now.llm_calls, 3, "{now:?}");
    assert_eq!(now.llm_failures, 0, "{now:?}");
    assert_eq!((now.tool_calls, now.tool_errors), (2, 1), "{now:?}");
    assert_eq!((now.input_tokens, now.output_tokens), (450, 27), "{now:?}");
    assert_eq!(now.tokens(), 477);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_failed_llm_call_is_counted_as_a_failure() {
    let model = Arc::new(ScriptedModel::new([Err(
        motet_providers::ProviderError::InvalidRequest {
            status: 400,
            message: "bad request".into(),
        },
    )]));
    let (runtime, agent) = spawned(model, ReActAgent::new("calc", "openai:gpt-5.2")).await;
    assert!(agent.ask("hello").await.is_err());
    let now = runtime.activity();
    assert_eq!((now.llm_calls, now.llm_failures), (1, 1), "{now:?}");
    assert_eq!(now.tokens(), 0);
    runtime.shutdown().await;
}
