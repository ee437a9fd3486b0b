//! Steering a running request through its ticket: the message goes in at the next turn
//! boundary, after the tool result the request waits for; bad steers are typed errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::ReactCompleted;
use motet_directives::{AssistantBlock, Message, ToolArgs};

use motet_runtime::agent::{AskOptions, RequestStatus, RuntimeError};
use motet_runtime::tool::{Tool, ToolContext, ToolError};
use tokio::sync::Notify;

use common::*;

/// A tool that says it started, then waits to be let go.
struct Gate {
    started: Arc<Notify>,
    open: Arc<Notify>,
}

#[async_trait::async_trait]
impl Tool for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> &str {
        "Waits for a person."
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn call(&self, _args: &ToolArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        self.started.notify_one();
        self.open.notified().await;
        Ok("opened".into())
    }
}

#[tokio::test]
async fn a_steer_reaches_the_model_after_the_tool_result_it_waited_for() {
    let (started, open) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let model = scripted([
        vec![AssistantBlock::tool_use(
            "tc_1",
            "gate",
            ToolArgs::from_text("{}"),
        )],
        vec![AssistantBlock::text("10, in base 2")],
    ]);
    let (runtime, agent) = spawned(
        model.clone(),
        calc_agent("worker").tool(Gate {
            started: started.clone(),
            open: open.clone(),
        }),
    )
    .await;

    let ticket = agent
        .submit("what is 2?", AskOptions::default())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), started.notified())
        .await
        .unwrap();
    ticket.steer("answer in base 2").await.unwrap();
    ticket.steer("and briefly").await.unwrap();
    // The steers reach the thread's actor before the tool result does.
    tokio::time::sleep(Duration::from_millis(50)).await;
    open.notify_one();
    let answer = ticket.wait().await.unwrap();
    assert_eq!(
        answer.signal.data_as::<ReactCompleted>().unwrap().answer,
        "10, in base 2"
    );

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let roles: Vec<String> = requests[1]
        .messages
        .iter()
        .map(|m| match m {
            Message::User { content } => format!("user:{content}"),
            other => other.role().to_owned(),
        })
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user:what is 2?",
            "assistant",
            "tool_results",
            "user:answer in base 2",
            "user:and briefly"
        ]
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_blank_steer_or_one_for_an_ended_request_is_refused() {
    let model = scripted([vec![AssistantBlock::text("4")]]);
    let (runtime, agent) = spawned(model.clone(), calc_agent("calc")).await;
    let ticket = agent.submit("2 + 2?", AskOptions::default()).await.unwrap();
    assert!(matches!(
        ticket.steer("  ").await,
        Err(RuntimeError::EmptySteer { .. })
    ));
    let id = ticket.id().to_owned();
    for _ in 0..100 {
        if runtime.request(&id).map(|r| r.status) == Some(RequestStatus::Completed) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let refused = ticket.steer("too late").await;
    assert!(
        matches!(
            refused,
            Err(RuntimeError::RequestNotRunning {
                status: RequestStatus::Completed,
                ..
            })
        ),
        "{refused:?}"
    );
    runtime.shutdown().await;
}
