//! An ask runs the ReAct loop through the agent's actor — LLM call, tool call, LLM call — with
//! every result coming back as a signal; failures are typed replies; many agents run at once,
//! and calls per provider are limited. The scripted model is for these logic tests; the real
//! llama.cpp server runs the same loop when MOTET_LOCAL_LLM_URL is set.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{AGENT_COMPLETED, AGENT_FAILED, ReactCompleted};
use motet_directives::{AssistantBlock, ToolArgs};
use motet_providers::{Dialect, HttpClient, ProviderError};
use motet_runtime::agent::{AskError, AskOptions, Runtime, RuntimeError};
use motet_runtime::testing::ScriptedModel;
use motet_runtime::tool::{ToolError, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;

use common::*;

#[tokio::test]
async fn an_ask_runs_the_loop_through_a_tool_and_answers() {
    let model = scripted([
        vec![AssistantBlock::tool_use(
            "call_1",
            "add",
            ToolArgs::from_text(r#"{"a": 2, "b": 3}"#),
        )],
        vec![AssistantBlock::text("2 + 3 = 5")],
    ]);
    let (runtime, agent) = spawned(model.clone(), calc_agent("calc")).await;

    let reply = agent.ask("What is 2 + 3?").await.unwrap();
    assert_eq!(reply.signal.signal_type().as_str(), AGENT_COMPLETED);
    let done: ReactCompleted = reply.signal.data_as().unwrap();
    assert_eq!(done.answer, "2 + 3 = 5");
    assert_eq!(done.iterations, 2);
    assert_eq!(done.usage.input_tokens, 20);

    // The second LLM call saw the tool's real result, paired with its call.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].tool_use_id, "call_1");
    assert_eq!(results[0].content, "5");
    assert!(!results[0].is_error);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_failed_llm_call_is_a_typed_failed_reply_not_a_hang() {
    let model = ScriptedModel::new([Err(ProviderError::InvalidRequest {
        status: 400,
        message: "bad request".into(),
    })]);
    let (runtime, agent) = spawned(model, calc_agent("calc")).await;
    let options = AskOptions {
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    match agent.ask_with("hi", options).await {
        Err(AskError::Failed { reply }) => assert_eq!(reply.signal_type().as_str(), AGENT_FAILED),
        other => panic!("{other:?}"),
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_unknown_tool_becomes_an_error_result_the_model_reads() {
    let model = scripted([
        vec![AssistantBlock::tool_use(
            "call_1",
            "delete_everything",
            ToolArgs::from_text("{}"),
        )],
        vec![AssistantBlock::text("I cannot do that.")],
    ]);
    let (runtime, agent) = spawned(model.clone(), calc_agent("calc")).await;
    let reply = agent.ask("Clean up.").await.unwrap();
    assert_eq!(reply.signal.signal_type().as_str(), AGENT_COMPLETED);
    let results = tool_results(&model.requests()[1]);
    assert!(results[0].is_error);
    assert!(
        results[0].content.contains("delete_everything"),
        "{}",
        results[0].content
    );
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_agents_each_answer_an_ask() {
    const AGENTS: usize = 10_000;
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel::default()))
        .build()
        .unwrap();
    let mut agents = Vec::with_capacity(AGENTS);
    for n in 0..AGENTS {
        agents.push(
            runtime
                .spawn(calc_agent(format!("worker-{n}")))
                .await
                .unwrap(),
        );
    }
    assert_eq!(runtime.agent_count(), AGENTS);
    assert!(matches!(
        runtime.spawn(calc_agent("worker-0")).await,
        Err(RuntimeError::NameTaken { .. })
    ));
    // Ten thousand asks at once on two cores, beside this file's other tests: each may wait
    // well past the default 30 s for its turn (what is checked is that every one is answered,
    // by its own agent; the time is the benchmark's business).
    let patient = AskOptions {
        timeout: Duration::from_secs(180),
        ..AskOptions::default()
    };
    let asks = agents
        .iter()
        .enumerate()
        .map(|(n, agent)| agent.ask_with(format!("task {n}"), patient.clone()));
    let replies = answers(futures::future::join_all(asks).await);
    for (n, answer) in replies.into_iter().enumerate() {
        assert_eq!(
            answer,
            format!("task {n}"),
            "agent {n} answered its own ask"
        );
    }
    runtime.shutdown().await;
    assert_eq!(runtime.agent_count(), 0);
}

#[tokio::test]
async fn a_name_freed_by_stop_agent_runs_a_new_agent_at_once() {
    let runtime = Runtime::builder()
        .llm(Arc::new(scripted([
            vec![AssistantBlock::text("first")],
            vec![AssistantBlock::text("second")],
        ])))
        .build()
        .unwrap();
    let first = runtime.spawn(calc_agent("again")).await.unwrap();
    assert_eq!(ask_text(&first, "one").await, "first");
    // Stopped and spawned again without waiting: the old thread, still stopping, is not the
    // new agent's.
    runtime.stop_agent("again");
    let second = runtime.spawn(calc_agent("again")).await.unwrap();
    assert_eq!(ask_text(&second, "two").await, "second");
    assert_eq!(runtime.agent_count(), 1);
    assert_eq!(runtime.thread_count(), 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_ask_to_a_stopped_agent_is_an_error() {
    let (runtime, agent) = spawned(ScriptedModel::default(), calc_agent("gone")).await;
    runtime.shutdown().await;
    let err = agent.ask("hello?").await.unwrap_err();
    assert!(matches!(err, AskError::AgentStopped { .. }), "{err:?}");
}

#[tokio::test]
async fn with_the_real_model() {
    let Some(url) = local_llm() else { return };
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap();
    let (runtime, agent) =
        spawned(client, calc_agent_on("calc", "openai-compat:smollm2-135m")).await;
    let options = AskOptions {
        timeout: Duration::from_secs(120),
        ..AskOptions::default()
    };
    // A 135M model may or may not call the tool; the loop must end with a typed reply either way.
    match agent
        .ask_with("What is 2 + 3? Use the add tool.", options)
        .await
    {
        Ok(reply) => {
            let done: ReactCompleted = reply.signal.data_as().unwrap();
            assert!(done.iterations >= 1);
            assert!(done.usage.output_tokens > 0);
            println!(
                "answer after {} LLM calls: {}",
                done.iterations, done.answer
            );
        }
        Err(AskError::Failed { reply }) => println!("typed failure: {:?}", reply.data()),
        Err(other) => panic!("{other:?}"),
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result_and_the_agent_carries_on() {
    #[derive(Deserialize, JsonSchema)]
    struct Nothing {}
    let explode = tool_fn("explode", "Panics.", |_: Nothing| async move {
        if true {
            panic!("the tool blew up");
        }
        Ok::<_, ToolError>(String::new())
    });
    let model = scripted([
        vec![AssistantBlock::tool_use(
            "call_1",
            "explode",
            ToolArgs::from_text("{}"),
        )],
        vec![AssistantBlock::text("The tool failed.")],
    ]);
    let (runtime, agent) = spawned(model.clone(), calc_agent("brave").tool(explode)).await;
    assert_eq!(ask_text(&agent, "Try it.").await, "The tool failed.");
    let results = tool_results(&model.requests()[1]);
    assert!(results[0].is_error);
    assert!(
        results[0].content.contains("the tool blew up"),
        "{}",
        results[0].content
    );
    runtime.shutdown().await;
}

/// A model that records how many calls run at once.
#[derive(Clone, Default)]
struct CountingModel {
    now: Arc<std::sync::atomic::AtomicUsize>,
    max: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for CountingModel {
    async fn stream(
        &self,
        _req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, ProviderError> {
        use std::sync::atomic::Ordering::SeqCst;
        let running = self.now.fetch_add(1, SeqCst) + 1;
        self.max.fetch_max(running, SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.now.fetch_sub(1, SeqCst);
        let events = motet_runtime::testing::events_of(turn(vec![AssistantBlock::text("ok")])?);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[tokio::test]
async fn llm_calls_per_provider_are_limited() {
    let model = CountingModel::default();
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .llm_concurrency("openai", 2)
        .build()
        .unwrap();
    let mut agents = Vec::new();
    for n in 0..10 {
        agents.push(runtime.spawn(calc_agent(format!("a{n}"))).await.unwrap());
    }
    let asks = agents.iter().map(|a| a.ask("go"));
    for reply in futures::future::join_all(asks).await {
        reply.unwrap();
    }
    assert_eq!(model.max.load(std::sync::atomic::Ordering::SeqCst), 2);
    runtime.shutdown().await;
}
