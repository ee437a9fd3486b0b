//! What a tool is told about its caller: the agent, the thread and the request it serves.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::{Arc, Mutex};

use motet_agents::ReactCompleted;
use motet_directives::{AssistantBlock, ToolArgs};
use motet_runtime::agent::{AskOptions, ReActAgent};
use motet_runtime::tool::{Tool, ToolContext, ToolError};

use common::*;

/// Answers with nothing, and keeps every context it was called in.
struct Witness(Arc<Mutex<Vec<ToolContext>>>);

#[async_trait::async_trait]
impl Tool for Witness {
    fn name(&self) -> &str {
        "witness"
    }
    fn description(&self) -> &str {
        "Says who called."
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn call(&self, _args: &ToolArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        self.0.lock().unwrap().push(ctx.clone());
        Ok("seen".into())
    }
}

#[tokio::test]
async fn a_tool_is_told_its_agent_thread_and_request() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = scripted([
        vec![AssistantBlock::tool_use(
            "tc_7",
            "witness",
            ToolArgs::from_text("{}"),
        )],
        vec![AssistantBlock::text("done")],
    ]);
    let (runtime, agent) = spawned(
        model,
        ReActAgent::new("clerk", MODEL).tool(Witness(seen.clone())),
    )
    .await;
    let options = AskOptions {
        thread_id: Some("ledger".into()),
        ..AskOptions::default()
    };
    let request = agent.submit("who am I?", options).await.unwrap();
    let id = request.id().to_owned();
    let reply = request.wait().await.unwrap();
    assert_eq!(
        reply.signal.data_as::<ReactCompleted>().unwrap().answer,
        "done"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].tool_call_id(), "tc_7");
    assert_eq!(seen[0].agent_id(), Some("clerk"));
    assert_eq!(seen[0].thread_id(), Some("ledger"));
    assert_eq!(seen[0].request_id(), Some(id.as_str()));
    runtime.shutdown().await;
}
