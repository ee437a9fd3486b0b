//! Cancelling a request stops its running tools, not only its LLM calls.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use motet_agents::{ReAct, ReActConfig};
use motet_directives::{AssistantBlock, AssistantMessage, LlmResponse, ToolArgs, Usage};
use motet_runtime::agent::{AgentSpec, AskError, AskOptions, Runtime};
use motet_runtime::testing::{ScriptedModel, stop_for};
use motet_runtime::tool::{Tool, ToolContext, ToolError, ToolSet};
use tokio::sync::Notify;

/// Works for a minute; says when it started and whether its work was dropped unfinished.
struct Slow {
    started: Arc<Notify>,
    dropped: Arc<AtomicBool>,
}

/// Sets its flag when dropped.
struct Flag(Arc<AtomicBool>);

impl Drop for Flag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl Tool for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes its time."
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn call(&self, _args: &ToolArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let _flag = Flag(self.dropped.clone());
        self.started.notify_one();
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok("finally".into())
    }
}

#[tokio::test]
async fn cancelling_a_request_aborts_its_running_tool() {
    let started = Arc::new(Notify::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let tools = Arc::new(
        ToolSet::builder()
            .tool(Slow {
                started: started.clone(),
                dropped: dropped.clone(),
            })
            .with_timeout(Duration::from_secs(120))
            .build()
            .unwrap(),
    );
    let blocks = vec![AssistantBlock::tool_use(
        "tc_1",
        "slow",
        ToolArgs::from_text("{}"),
    )];
    let stop_reason = stop_for(&blocks);
    let model = ScriptedModel::new([Ok(LlmResponse::new(
        AssistantMessage {
            blocks,
            stop_reason,
        },
        Usage::default(),
    ))]);
    let runtime = Runtime::builder().llm(Arc::new(model)).build().unwrap();
    let react =
        ReAct::new(ReActConfig::new("openai:gpt-5.2".parse().unwrap()).with_tools(tools.tools()));
    let agent = runtime
        .spawn(AgentSpec::new("worker", react).with_tools(tools))
        .await
        .unwrap();
    let request = agent
        .start("go slowly", AskOptions::default())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), started.notified())
        .await
        .unwrap();
    request.cancel("changed my mind").await.unwrap();
    assert!(matches!(request.wait().await, Err(AskError::Failed { .. })));
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(dropped.load(Ordering::SeqCst), "the tool still runs");
    runtime.shutdown().await;
}
