//! The time a request waits for a person, exported over OTLP to a real receiver: a
//! `wait_for_person` span under the request's span, with the kind and the outcome, the paused
//! tool span marked, and the waiting gauge and duration histogram among the metrics.
//!
//! One test per file: the tracing subscriber is global to the process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_directives::{Approval, AssistantBlock, Response, ToolArgs};
use motet_runtime::agent::{AgentSpec, AskOptions, Runtime};
use motet_runtime::telemetry::{Protocol, Telemetry};
use motet_runtime::testing::otlp::OtlpReceiver;

use common::{calculator, react, scripted};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_for_a_person_is_a_span_and_a_measure() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let guard = Telemetry::from_vars(|_| None)
        .unwrap()
        .with_endpoint(receiver.grpc_endpoint())
        .with_protocol(Protocol::Grpc)
        .with_service_name("motet-test")
        .without_log()
        .install()
        .unwrap();
    let tools = calculator();
    let gated = Arc::new(
        motet_runtime::tool::ToolSet::builder()
            .shared_tool(tools.get("add").unwrap().clone())
            .require_approval("add", Approval::required().because("sums are serious"))
            .build()
            .unwrap(),
    );
    let model = scripted([
        vec![AssistantBlock::tool_use(
            "call_add",
            "add",
            ToolArgs::from_text(r#"{"a":2,"b":3}"#),
        )],
        vec![AssistantBlock::text("5")],
    ]);
    let runtime = Runtime::builder().llm(Arc::new(model)).build().unwrap();
    // By hand: the approval is the tool set's (`require_approval`), which `ReActAgent` does not
    // take; the spec offers the set's definitions and runs the set.
    let agent = runtime
        .spawn(AgentSpec::new("careful", react("openai:gpt-5.2", &gated)).with_tools(gated))
        .await
        .unwrap();
    let mut ticket = agent.submit("2 + 3?", AskOptions::default()).await.unwrap();
    let waiting = ticket.next_waiting().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    ticket
        .respond(&waiting.tool_call_id, Response::Approve)
        .await
        .unwrap();
    assert_eq!(ticket.wait().await.unwrap().text, "5");
    guard.flush().unwrap();
    let spans = receiver
        .wait_for(Duration::from_secs(10), |s| {
            s.iter().any(|s| s.name.starts_with("wait_for_person"))
                && s.iter().any(|s| s.name.starts_with("invoke_agent"))
        })
        .await;
    let request = spans
        .iter()
        .find(|s| s.name == "invoke_agent careful")
        .unwrap_or_else(|| panic!("{spans:#?}"));
    let wait = spans
        .iter()
        .find(|s| s.name == "wait_for_person add")
        .unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(wait.parent_span_id, request.span_id);
    assert_eq!(wait.attr("motet.wait.kind"), Some("approval"));
    assert_eq!(wait.attr("motet.wait.outcome"), Some("approve"));
    assert_eq!(wait.attr("gen_ai.tool.call.id"), Some("call_add"));
    let paused: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "execute_tool add")
        .collect();
    assert_eq!(
        paused.len(),
        2,
        "the gated call and its approved run: {spans:#?}"
    );
    assert!(
        paused
            .iter()
            .any(|s| s.attr("motet.tool.paused") == Some("approval"))
    );
    let metrics = receiver.metric_names();
    for name in ["motet.person.waiting", "motet.person.wait.duration"] {
        assert!(
            metrics.iter().any(|m| m == name),
            "{name} not in {metrics:?}"
        );
    }
    runtime.shutdown().await;
}
