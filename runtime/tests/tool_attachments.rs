//! A tool that returns an image besides its text (as an MCP tool's image content does): the
//! image reaches the model's next request as the result's attachment, and the thread keeps it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;

use motet_directives::{AssistantBlock, Attachments, Part, ToolArgs};
use motet_runtime::agent::{AskOptions, ReActAgent};
use motet_runtime::tool::{Tool, ToolContext, ToolError};

use common::{scripted, spawned, tool_results};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Answers with a caption and the picture.
struct Camera;

#[async_trait::async_trait]
impl Tool for Camera {
    fn name(&self) -> &str {
        "camera"
    }
    fn description(&self) -> &str {
        "Takes a picture."
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn call(&self, _args: &ToolArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        Ok("a picture".into())
    }
    async fn call_with_attachments(
        &self,
        _args: &ToolArgs,
        _ctx: &ToolContext,
    ) -> Result<(String, Attachments), ToolError> {
        let picture = Part::image_bytes("image/png", PNG);
        Ok(("a picture".into(), Attachments::from(vec![picture])))
    }
}

#[tokio::test]
async fn a_tools_image_reaches_the_next_request_as_an_attachment() {
    let model = Arc::new(scripted([
        vec![AssistantBlock::tool_use(
            "tc_1",
            "camera",
            ToolArgs::from_text("{}"),
        )],
        vec![AssistantBlock::text("a red square")],
    ]));
    let (runtime, agent) = spawned(
        model.clone(),
        ReActAgent::new("viewer", "openai:gpt-4o").tool(Camera),
    )
    .await;
    agent
        .submit("what is it?", AskOptions::default())
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    let requests = model.requests();
    let results = tool_results(requests.last().unwrap());
    assert_eq!(results[0].content, "a picture");
    assert_eq!(
        results[0].attachments.as_slice(),
        [Part::image_bytes("image/png", PNG)]
    );
    runtime.shutdown().await;
}
