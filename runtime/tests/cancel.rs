//! A cancelled request stops its running tools, not only its LLM calls; a wait that times out
//! cancels its request unless asked to keep it running.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use motet_directives::{AssistantBlock, AssistantMessage, LlmResponse, ToolArgs, Usage};
use motet_runtime::agent::{AskError, AskOptions, ReActAgent, RequestStatus, Runtime};
use motet_runtime::testing::{ScriptedModel, stop_for};
use motet_runtime::tool::{Tool, ToolContext, ToolError};
use tokio::sync::Notify;

use common::*;

/// Works for a minute; says when it started and whether its work was dropped unfinished.
struct Slow {
    started: Arc<Notify>,
    dropped: Arc<AtomicBool>,
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
        let _flag = DropFlag(self.dropped.clone());
        self.started.notify_one();
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok("finally".into())
    }
}

#[tokio::test]
async fn cancelling_a_request_aborts_its_running_tool() {
    let started = Arc::new(Notify::new());
    let dropped = Arc::new(AtomicBool::new(false));
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
    let (runtime, agent) = spawned(
        model,
        ReActAgent::new("worker", MODEL)
            .tool(Slow {
                started: started.clone(),
                dropped: dropped.clone(),
            })
            .tool_timeout(Duration::from_secs(120)),
    )
    .await;
    let request = agent
        .submit("go slowly", AskOptions::default())
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

async fn silent_agent(model: &HangingModel) -> (Runtime, motet_runtime::agent::AgentHandle) {
    let (runtime, agent) = spawned(model.clone(), ReActAgent::new("mute", MODEL)).await;
    (runtime, agent)
}

/// The request's status once it settles (or after a second).
async fn settled(runtime: &Runtime, id: &str) -> RequestStatus {
    for _ in 0..100 {
        let status = runtime.request(id).unwrap().status;
        if status != RequestStatus::Running {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    runtime.request(id).unwrap().status
}

#[tokio::test]
async fn a_wait_that_times_out_cancels_its_request() {
    let model = HangingModel::default();
    let (runtime, agent) = silent_agent(&model).await;
    let options = AskOptions {
        timeout: Duration::from_millis(200),
        ..AskOptions::default()
    };
    let request = agent.submit("hello?", options).await.unwrap();
    let id = request.id().to_owned();
    assert!(matches!(request.wait().await, Err(AskError::Timeout(_))));
    assert_eq!(settled(&runtime, &id).await, RequestStatus::Failed);
    assert!(model.dropped.load(Ordering::SeqCst), "the call still runs");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_wait_that_times_out_can_leave_its_request_running() {
    let model = HangingModel::default();
    let (runtime, agent) = silent_agent(&model).await;
    let options = AskOptions {
        timeout: Duration::from_millis(200),
        keep_running: true,
        ..AskOptions::default()
    };
    let request = agent.submit("hello?", options).await.unwrap();
    let id = request.id().to_owned();
    assert!(matches!(request.wait().await, Err(AskError::Timeout(_))));
    assert_eq!(settled(&runtime, &id).await, RequestStatus::Running);
    assert!(!model.dropped.load(Ordering::SeqCst));
    runtime.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_queued_request_ends_it_and_leaves_the_running_one_alone() {
    let model = HangingModel::default();
    let (runtime, agent) = silent_agent(&model).await;
    let running = agent.submit("first", AskOptions::default()).await.unwrap();
    let queued = agent.submit("second", AskOptions::default()).await.unwrap();
    let (running_id, queued_id) = (running.id().to_owned(), queued.id().to_owned());
    for _ in 0..100 {
        if runtime.request(&queued_id).map(|r| r.status) == Some(RequestStatus::Queued) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        runtime.request(&queued_id).unwrap().status,
        RequestStatus::Queued
    );

    queued.cancel("not this one").await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), queued.wait())
        .await
        .expect("the cancelled request is answered at once");
    let Err(AskError::Failed { reply }) = answer else {
        panic!("expected a failure reply, got {answer:?}");
    };
    let data: serde_json::Value = reply.data_as().unwrap();
    assert!(data.to_string().contains("not this one"), "{data}");
    assert_eq!(
        runtime.request(&queued_id).unwrap().status,
        RequestStatus::Failed
    );
    // The running request was not the one cancelled: it still waits for its model.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        runtime.request(&running_id).unwrap().status,
        RequestStatus::Running
    );
    assert!(
        !model.dropped.load(Ordering::SeqCst),
        "the running call was aborted"
    );
    runtime.shutdown().await;
}
