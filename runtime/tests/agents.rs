//! Agents end to end inside the runtime: an ask runs the ReAct loop through the actor — LLM
//! call, tool call, LLM call — with every result coming back as a signal; failures are typed
//! replies; many agents run at once. The scripted model is for these logic tests; the real
//! llama.cpp server runs the same loop when MOTET_LOCAL_LLM_URL is set.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{
    ContextPolicy, REACT_COMPLETED, REACT_FAILED, ReAct, ReActConfig, ReactCompleted,
};
use motet_directives::{AssistantBlock, AssistantMessage, LlmResponse, Message, ToolArgs, Usage};
use motet_providers::{Dialect, HttpClient, ProviderError};
use motet_runtime::agent::{
    AgentSpec, AskError, AskOptions, DeltaKind, RequestPolicy, Runtime, RuntimeError,
};
use motet_runtime::testing::ScriptedModel;
use motet_runtime::tool::{ToolError, ToolSet, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn calculator() -> Arc<ToolSet> {
    Arc::new(
        ToolSet::builder()
            .tool(tool_fn(
                "add",
                "Adds two integers.",
                |args: AddArgs| async move { Ok::<_, ToolError>((args.a + args.b).to_string()) },
            ))
            .build()
            .unwrap(),
    )
}

fn react(model: &str, tools: &ToolSet) -> ReAct {
    ReAct::new(
        ReActConfig::new(model.parse().unwrap())
            .with_system_prompt("You are a calculator.")
            .with_tools(tools.tools())
            // Whole history in every call (no turn cap), so answers show what a thread holds.
            .with_context_policy(ContextPolicy::new().with_keep_last_turns(0)),
    )
}

fn turn(blocks: Vec<AssistantBlock>) -> Result<LlmResponse, ProviderError> {
    let stop_reason = motet_runtime::testing::stop_for(&blocks);
    Ok(LlmResponse::new(
        AssistantMessage {
            blocks,
            stop_reason,
        },
        Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        },
    ))
}

#[tokio::test]
async fn an_ask_runs_the_loop_through_a_tool_and_answers() {
    let model = ScriptedModel::new([
        turn(vec![AssistantBlock::tool_use(
            "call_1",
            "add",
            ToolArgs::from_text(r#"{"a": 2, "b": 3}"#),
        )]),
        turn(vec![AssistantBlock::text("2 + 3 = 5")]),
    ]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("calc", react("openai:gpt-5.2", &tools)).with_tools(tools))
        .await
        .unwrap();

    let reply = agent
        .ask("What is 2 + 3?", AskOptions::default())
        .await
        .unwrap();
    assert_eq!(reply.signal_type().as_str(), REACT_COMPLETED);
    let done: ReactCompleted = reply.data_as().unwrap();
    assert_eq!(done.answer, "2 + 3 = 5");
    assert_eq!(done.iterations, 2);
    assert_eq!(done.usage.input_tokens, 20);

    // The second LLM call saw the tool's real result, paired with its call.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let results = requests[1]
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResults { results } => Some(results.clone()),
            _ => None,
        })
        .expect("tool results in the second request");
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
    let runtime = Runtime::builder().llm(Arc::new(model)).build().unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("calc", react("openai:gpt-5.2", &tools)).with_tools(tools))
        .await
        .unwrap();
    let options = AskOptions {
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    match agent.ask("hi", options).await {
        Err(AskError::Failed { reply }) => assert_eq!(reply.signal_type().as_str(), REACT_FAILED),
        other => panic!("{other:?}"),
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_unknown_tool_becomes_an_error_result_the_model_reads() {
    let model = ScriptedModel::new([
        turn(vec![AssistantBlock::tool_use(
            "call_1",
            "delete_everything",
            ToolArgs::from_text("{}"),
        )]),
        turn(vec![AssistantBlock::text("I cannot do that.")]),
    ]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("calc", react("openai:gpt-5.2", &tools)).with_tools(tools))
        .await
        .unwrap();
    let reply = agent.ask("Clean up.", AskOptions::default()).await.unwrap();
    assert_eq!(reply.signal_type().as_str(), REACT_COMPLETED);
    let results = model.requests()[1]
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResults { results } => Some(results.clone()),
            _ => None,
        })
        .unwrap();
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
    let tools = calculator();
    let strategy = react("openai:gpt-5.2", &tools);
    let mut agents = Vec::with_capacity(AGENTS);
    for n in 0..AGENTS {
        let spec = AgentSpec::new(format!("worker-{n}"), strategy.clone());
        agents.push(runtime.spawn(spec).await.unwrap());
    }
    assert_eq!(runtime.agent_count(), AGENTS);
    assert!(matches!(
        runtime
            .spawn(AgentSpec::new("worker-0", strategy.clone()))
            .await,
        Err(RuntimeError::NameTaken { .. })
    ));
    let asks = agents
        .iter()
        .enumerate()
        .map(|(n, agent)| agent.ask(format!("task {n}"), AskOptions::default()));
    let replies = futures::future::join_all(asks).await;
    for (n, reply) in replies.into_iter().enumerate() {
        let answer = reply.unwrap().data_as::<ReactCompleted>().unwrap().answer;
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
        .llm(Arc::new(ScriptedModel::new([
            turn(vec![AssistantBlock::text("first")]),
            turn(vec![AssistantBlock::text("second")]),
        ])))
        .build()
        .unwrap();
    let tools = calculator();
    let first = runtime
        .spawn(AgentSpec::new("again", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    let reply = first.ask("one", AskOptions::default()).await.unwrap();
    assert_eq!(reply.data_as::<ReactCompleted>().unwrap().answer, "first");
    // Stopped and spawned again without waiting: the old thread, still stopping, is not the
    // new agent's.
    runtime.stop_agent("again");
    let second = runtime
        .spawn(AgentSpec::new("again", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    let reply = second.ask("two", AskOptions::default()).await.unwrap();
    assert_eq!(reply.data_as::<ReactCompleted>().unwrap().answer, "second");
    assert_eq!(runtime.agent_count(), 1);
    assert_eq!(runtime.thread_count(), 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_ask_to_a_stopped_agent_is_an_error() {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("gone", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    runtime.shutdown().await;
    let err = agent
        .ask("hello?", AskOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, AskError::AgentStopped { .. }), "{err:?}");
}

#[tokio::test]
async fn with_the_real_model() {
    let Ok(url) = std::env::var("MOTET_LOCAL_LLM_URL") else {
        println!("skipped: MOTET_LOCAL_LLM_URL is not set (bash scripts/local-llm.sh start)");
        return;
    };
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap();
    let runtime = Runtime::builder().llm(Arc::new(client)).build().unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(
            AgentSpec::new("calc", react("openai-compat:smollm2-135m", &tools)).with_tools(tools),
        )
        .await
        .unwrap();
    let options = AskOptions {
        timeout: Duration::from_secs(120),
        ..AskOptions::default()
    };
    // A 135M model may or may not call the tool; the loop must end with a typed reply either way.
    match agent.ask("What is 2 + 3? Use the add tool.", options).await {
        Ok(reply) => {
            let done: ReactCompleted = reply.data_as().unwrap();
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

/// A model that answers with the user messages it was shown, joined by `|`: what a thread's
/// history holds, visible in every answer.
#[derive(Clone, Default)]
struct EchoModel {
    delay: Duration,
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for EchoModel {
    async fn stream(
        &self,
        req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmStream, ProviderError> {
        tokio::time::sleep(self.delay).await;
        let seen: Vec<&str> = req
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User { content } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        let response = turn(vec![AssistantBlock::text(seen.join("|"))])?;
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[tokio::test]
async fn requests_on_different_threads_never_see_each_other() {
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel {
            delay: Duration::from_millis(5),
        }))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("echo", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    // 100 concurrent asks on 100 threads, then a second round on the same threads.
    for round in 0..2 {
        let asks = (0..100).map(|t| {
            let agent = agent.clone();
            async move {
                let options = AskOptions {
                    thread_id: Some(format!("t{t}")),
                    ..AskOptions::default()
                };
                let reply = agent.ask(format!("q{t}.{round}"), options).await.unwrap();
                (t, reply)
            }
        });
        for (t, reply) in futures::future::join_all(asks).await {
            assert_eq!(reply.thread_id(), Some(format!("t{t}").as_str()));
            let answer = reply.data_as::<ReactCompleted>().unwrap().answer;
            let expected: Vec<String> = (0..=round).map(|r| format!("q{t}.{r}")).collect();
            assert_eq!(
                answer,
                expected.join("|"),
                "thread t{t} saw only its own history"
            );
        }
    }
    assert_eq!(
        runtime.thread_count(),
        101,
        "100 threads and the default one"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn asks_on_one_thread_queue_and_run_in_order() {
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel {
            delay: Duration::from_millis(20),
        }))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("echo", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    // All sent at once (join_all polls them in order, so they arrive m0, m1, ...): each
    // arrives while the one before it runs.
    let asks = (0..5).map(|n| agent.ask(format!("m{n}"), AskOptions::default()));
    let replies = futures::future::join_all(asks).await;
    for (n, reply) in replies.into_iter().enumerate() {
        let answer = reply.unwrap().data_as::<ReactCompleted>().unwrap().answer;
        let expected: Vec<String> = (0..=n).map(|i| format!("m{i}")).collect();
        assert_eq!(
            answer,
            expected.join("|"),
            "request {n} ran after the ones before it"
        );
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_reject_policy_answers_busy() {
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel {
            delay: Duration::from_millis(200),
        }))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(
            AgentSpec::new("echo", react("openai:gpt-5.2", &tools))
                .with_request_policy(RequestPolicy::Reject),
        )
        .await
        .unwrap();
    // join! polls in order: "slow" reaches the agent first and runs while "impatient" arrives.
    let (first, second) = tokio::join!(
        agent.ask("slow", AskOptions::default()),
        agent.ask("impatient", AskOptions::default())
    );
    match second {
        Err(AskError::Failed { reply }) => {
            let data = reply.data_as::<serde_json::Value>().unwrap().to_string();
            assert!(data.contains("busy"), "{data}");
        }
        other => panic!("{other:?}"),
    }
    assert!(first.is_ok());
    runtime.shutdown().await;
}

/// A model that never finishes, and notes when its stream is dropped (the request cancelled).
#[derive(Clone, Default)]
struct HangingModel {
    dropped: Arc<std::sync::atomic::AtomicBool>,
    started: Arc<tokio::sync::Notify>,
}

struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

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
    ) -> Result<motet_providers::LlmStream, ProviderError> {
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

#[tokio::test]
async fn cancelling_a_request_stops_its_llm_stream() {
    let model = HangingModel::default();
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("slow", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    let request = motet_signals::Signal::builder(motet_agents::REACT_INPUT, "test")
        .with_request_id("req-1")
        .with_data(motet_agents::ReactInput {
            query: "think forever".into(),
            context_policy: None,
        })
        .build()
        .unwrap();
    let ask = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.request(request, Duration::from_secs(10)).await })
    };
    tokio::time::timeout(Duration::from_secs(5), model.started.notified())
        .await
        .unwrap();
    let cancel = motet_signals::Signal::builder(motet_agents::REACT_CANCEL, "test")
        .with_request_id("req-1")
        .with_data(motet_agents::ReactCancel {
            reason: Some("user pressed stop".into()),
        })
        .build()
        .unwrap();
    agent.send(cancel).await.unwrap();
    match ask.await.unwrap() {
        Err(AskError::Failed { reply }) => assert_eq!(reply.signal_type().as_str(), REACT_FAILED),
        other => panic!("{other:?}"),
    }
    // The call's task was aborted, which dropped the provider stream (closing its connection).
    for _ in 0..100 {
        if model.dropped.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(model.dropped.load(std::sync::atomic::Ordering::SeqCst));
    runtime.shutdown().await;
}

#[tokio::test]
async fn streamed_text_is_published_as_llm_delta() {
    let model = ScriptedModel::new([turn(vec![AssistantBlock::text("hello world")])]);
    let runtime = Runtime::builder().llm(Arc::new(model)).build().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = runtime.bus().subscribe(
        "llm.delta".parse().unwrap(),
        move |signal: &motet_signals::Signal| {
            sink.lock()
                .unwrap()
                .push(signal.data_as::<motet_runtime::agent::LlmDelta>().unwrap());
            motet_signals::Delivery::Delivered
        },
    );
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("talker", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    agent.ask("hi", AskOptions::default()).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].kind, DeltaKind::Text);
    assert_eq!(seen[0].delta, "hello world");
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
    ) -> Result<motet_providers::LlmStream, ProviderError> {
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
    let tools = calculator();
    let mut agents = Vec::new();
    for n in 0..10 {
        agents.push(
            runtime
                .spawn(AgentSpec::new(
                    format!("a{n}"),
                    react("openai:gpt-5.2", &tools),
                ))
                .await
                .unwrap(),
        );
    }
    let asks = agents.iter().map(|a| a.ask("go", AskOptions::default()));
    for reply in futures::future::join_all(asks).await {
        reply.unwrap();
    }
    assert_eq!(model.max.load(std::sync::atomic::Ordering::SeqCst), 2);
    runtime.shutdown().await;
}

/// ReAct that panics on the query "boom": a bug in a strategy.
struct Fragile(ReAct);

impl motet_agents::Strategy for Fragile {
    type State = motet_agents::ReActState;

    fn init(&self, env: &dyn motet_agents::Env) -> Self::State {
        self.0.init(env)
    }

    fn init_for_thread(&self, env: &dyn motet_agents::Env, thread: &str) -> Self::State {
        self.0.init_for_thread(env, thread)
    }

    fn restore(&self, env: &dyn motet_agents::Env, thread: motet_agents::Thread) -> Self::State {
        self.0.restore(env, thread)
    }

    fn reload(&self, env: &dyn motet_agents::Env, thread: motet_agents::Thread) -> Self::State {
        self.0.reload(env, thread)
    }

    fn thread<'a>(&self, state: &'a Self::State) -> Option<&'a motet_agents::Thread> {
        self.0.thread(state)
    }

    fn handle(
        &self,
        state: &mut Self::State,
        signal: &motet_signals::Signal,
        env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        if let Ok(input) = signal.data_as::<motet_agents::ReactInput>()
            && input.query == "boom"
        {
            panic!("a bug in the strategy");
        }
        self.0.handle(state, signal, env)
    }
}

#[tokio::test]
async fn a_panicking_strategy_restarts_its_thread_and_the_ask_gets_a_typed_error() {
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel::default()))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new(
            "fragile",
            Fragile(react("openai:gpt-5.2", &tools)),
        ))
        .await
        .unwrap();
    let options = || AskOptions {
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    agent.ask("first", options()).await.unwrap();
    let err = agent.ask("boom", options()).await.unwrap_err();
    assert!(matches!(err, AskError::AgentRestarted { .. }), "{err:?}");
    // The thread was restarted from the store: the next ask is answered, with the history
    // committed before the failure.
    let mut answered = None;
    for _ in 0..50 {
        match agent.ask("hello", options()).await {
            Ok(reply) => {
                answered = Some(reply);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let reply = answered.expect("answered after the restart");
    assert_eq!(
        reply.data_as::<ReactCompleted>().unwrap().answer,
        "first|hello"
    );
    assert_eq!(runtime.agent_count(), 1);
    runtime.shutdown().await;
}

/// A `Fragile` agent allowed one restart a minute.
async fn spawn_fragile_once(runtime: &Runtime) -> motet_runtime::agent::AgentHandle {
    let tools = calculator();
    runtime
        .spawn(
            AgentSpec::new("fragile", Fragile(react("openai:gpt-5.2", &tools)))
                .with_restart_intensity(motet_runtime::supervisor::Intensity {
                    max_restarts: 1,
                    within: Duration::from_secs(60),
                }),
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn past_its_restart_intensity_the_agent_is_stopped() {
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel::default()))
        .build()
        .unwrap();
    let agent = spawn_fragile_once(&runtime).await;
    let options = || AskOptions {
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    assert!(agent.ask("boom", options()).await.is_err());
    // Wait for the restart, then fail again: one restart too many.
    for _ in 0..50 {
        if runtime.thread_count() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = agent.ask("boom", options()).await;
    for _ in 0..100 {
        if runtime.agent_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(runtime.agent_count(), 0, "the agent was stopped");
    let err = agent.ask("hello", options()).await.unwrap_err();
    assert!(matches!(err, AskError::AgentStopped { .. }), "{err:?}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn restarts_and_a_stopped_agent_are_published_on_the_bus() {
    use motet_runtime::agent::{AGENT_STOPPED, THREAD_RESTARTED, ThreadFailure};
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel::default()))
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::sync_channel(8);
    let _watch = runtime.bus().subscribe("agent.**".parse().unwrap(), tx);
    let agent = spawn_fragile_once(&runtime).await;
    let options = AskOptions {
        thread_id: Some("t1".into()),
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    let err = agent.ask("boom", options.clone()).await.unwrap_err();
    assert!(matches!(err, AskError::AgentRestarted { .. }), "{err:?}");
    let restarted = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(restarted.signal_type().as_str(), THREAD_RESTARTED);
    let failure: ThreadFailure = restarted.data_as().unwrap();
    assert_eq!(
        (failure.agent.as_str(), failure.thread.as_str()),
        ("fragile", "t1")
    );
    assert!(
        failure.error.contains("a bug in the strategy"),
        "{}",
        failure.error
    );
    // A second failure is past the intensity: the agent stops, and says so.
    let _ = agent.ask("boom", options).await;
    let stopped = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(stopped.signal_type().as_str(), AGENT_STOPPED);
    assert_eq!(stopped.data_as::<ThreadFailure>().unwrap().agent, "fragile");
    assert_eq!(runtime.agent_count(), 0);
    runtime.shutdown().await;
}

/// Remembers the types of the signals it gets; answers `react.input` "report" with them, and
/// "cast:<group>" by emitting `news.flash` to that group.
struct Recorder;

impl motet_agents::Strategy for Recorder {
    type State = Vec<String>;

    fn init(&self, _env: &dyn motet_agents::Env) -> Vec<String> {
        Vec::new()
    }

    fn handle(
        &self,
        seen: &mut Vec<String>,
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{Directive, Emit, EmitTarget};
        let ty = signal.signal_type().as_str().to_owned();
        let Ok(input) = signal.data_as::<motet_agents::ReactInput>() else {
            seen.push(ty);
            return Ok(Vec::new());
        };
        let reply = |data: serde_json::Value| {
            motet_signals::Signal::builder(REACT_COMPLETED, "recorder")
                .caused_by(signal)
                .with_data(data)
                .build()
                .unwrap()
        };
        let mut out = Vec::new();
        if let Some(group) = input.query.strip_prefix("cast:") {
            let news = motet_signals::Signal::builder("news.flash", "recorder")
                .caused_by(signal)
                .build()
                .unwrap();
            out.push(Directive::Emit(Emit {
                signal: news,
                target: EmitTarget::Group(group.to_owned()),
            }));
        }
        out.push(Directive::Emit(Emit {
            signal: reply(serde_json::json!(seen.clone())),
            target: EmitTarget::Bus,
        }));
        Ok(out)
    }
}

async fn report(agent: &motet_runtime::agent::AgentHandle) -> Vec<String> {
    let reply = agent.ask("report", AskOptions::default()).await.unwrap();
    reply.data_as().unwrap()
}

#[tokio::test]
async fn agents_receive_what_they_subscribe_to_and_what_their_group_is_sent() {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
        .unwrap();
    let sports = runtime
        .spawn(
            AgentSpec::new("sports", Recorder)
                .subscribe("news.sports.*".parse().unwrap())
                .join_group("desk"),
        )
        .await
        .unwrap();
    let all = runtime
        .spawn(
            AgentSpec::new("all", Recorder)
                .subscribe("news.**".parse().unwrap())
                .join_group("desk"),
        )
        .await
        .unwrap();
    let caster = runtime
        .spawn(AgentSpec::new("caster", Recorder))
        .await
        .unwrap();

    for ty in ["news.sports.football", "news.weather", "other.thing"] {
        runtime
            .bus()
            .publish(&motet_signals::Signal::builder(ty, "test").build().unwrap());
    }
    // A group emit from another agent reaches both members.
    caster
        .ask("cast:desk", AskOptions::default())
        .await
        .unwrap();
    let mut sports_seen = Vec::new();
    let mut all_seen = Vec::new();
    for _ in 0..100 {
        sports_seen = report(&sports).await;
        all_seen = report(&all).await;
        if sports_seen.len() >= 2 && all_seen.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(sports_seen, ["news.sports.football", "news.flash"]);
    assert_eq!(
        all_seen,
        ["news.sports.football", "news.weather", "news.flash"]
    );
    assert!(report(&caster).await.is_empty());
    runtime.shutdown().await;
}

/// Keeps notes in a thread; "summarize" asks the runtime for a summary of them and answers
/// with it.
struct Notes;

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct NotesState {
    thread: motet_agents::Thread,
    waiting: Option<String>,
}

impl motet_agents::Strategy for Notes {
    type State = NotesState;

    fn init(&self, env: &dyn motet_agents::Env) -> NotesState {
        NotesState {
            thread: motet_agents::Thread::create(env),
            waiting: None,
        }
    }

    fn thread<'a>(&self, state: &'a NotesState) -> Option<&'a motet_agents::Thread> {
        Some(&state.thread)
    }

    fn handle(
        &self,
        state: &mut NotesState,
        signal: &motet_signals::Signal,
        env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{CallId, Directive, Emit, EmitTarget, Summarize};
        let done = |data: serde_json::Value, request: &str| {
            Directive::Emit(Emit {
                signal: motet_signals::Signal::builder(REACT_COMPLETED, "notes")
                    .with_request_id(request)
                    .with_data(data)
                    .build()
                    .unwrap(),
                target: EmitTarget::Bus,
            })
        };
        if let Ok(result) = signal.data_as::<motet_agents::SummaryResult>() {
            let request = state.waiting.take().unwrap();
            return Ok(vec![done(serde_json::json!(result.content), &request)]);
        }
        let input: motet_agents::ReactInput = signal.data_as().unwrap();
        let request = signal.request_id().unwrap().to_owned();
        if input.query == "summarize" {
            state.waiting = Some(request);
            let last = state.thread.entry_count() as u64;
            return Ok(vec![Directive::Summarize(Summarize {
                call_id: CallId::new("sum-1"),
                thread_id: state.thread.id().to_owned(),
                from_seq: 0,
                to_seq: last.saturating_sub(1),
                model: Some("openai:gpt-5.2".parse().unwrap()),
                instructions: Some("Summarize the notes.".into()),
            })]);
        }
        state
            .thread
            .append(env, motet_agents::NewEntry::user(input.query));
        Ok(vec![done(serde_json::json!("noted"), &request)])
    }
}

#[tokio::test]
async fn summarize_calls_the_model_over_the_thread_range() {
    let model = ScriptedModel::new([turn(vec![AssistantBlock::text(
        "Two notes: buy milk, call Rome.",
    )])]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .build()
        .unwrap();
    let agent = runtime.spawn(AgentSpec::new("notes", Notes)).await.unwrap();
    agent.ask("buy milk", AskOptions::default()).await.unwrap();
    agent.ask("call Rome", AskOptions::default()).await.unwrap();
    let reply = agent.ask("summarize", AskOptions::default()).await.unwrap();
    assert_eq!(
        reply.data_as::<String>().unwrap(),
        "Two notes: buy milk, call Rome."
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].messages[0],
        Message::system("Summarize the notes.")
    );
    match &requests[0].messages[1] {
        Message::User { content } => {
            assert_eq!(content, "User: buy milk\nUser: call Rome\n");
        }
        other => panic!("{other:?}"),
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result_and_the_agent_carries_on() {
    #[derive(Deserialize, JsonSchema)]
    struct Nothing {}
    let tools = Arc::new(
        ToolSet::builder()
            .tool(tool_fn("explode", "Panics.", |_: Nothing| async move {
                if true {
                    panic!("the tool blew up");
                }
                Ok::<_, ToolError>(String::new())
            }))
            .build()
            .unwrap(),
    );
    let model = ScriptedModel::new([
        turn(vec![AssistantBlock::tool_use(
            "call_1",
            "explode",
            ToolArgs::from_text("{}"),
        )]),
        turn(vec![AssistantBlock::text("The tool failed.")]),
    ]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .build()
        .unwrap();
    let agent = runtime
        .spawn(AgentSpec::new("brave", react("openai:gpt-5.2", &tools)).with_tools(tools))
        .await
        .unwrap();
    let reply = agent.ask("Try it.", AskOptions::default()).await.unwrap();
    assert_eq!(
        reply.data_as::<ReactCompleted>().unwrap().answer,
        "The tool failed."
    );
    let results = model.requests()[1]
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResults { results } => Some(results.clone()),
            _ => None,
        })
        .unwrap();
    assert!(results[0].is_error);
    assert!(
        results[0].content.contains("the tool blew up"),
        "{}",
        results[0].content
    );
    runtime.shutdown().await;
}

fn echo_runtime(store: Arc<dyn motet_runtime::store::ThreadStore>) -> Runtime {
    Runtime::builder()
        .llm(Arc::new(EchoModel::default()))
        .store(store)
        .build()
        .unwrap()
}

fn on(thread: &str) -> AskOptions {
    AskOptions {
        thread_id: Some(thread.to_owned()),
        ..AskOptions::default()
    }
}

async fn answer(agent: &motet_runtime::agent::AgentHandle, query: &str, thread: &str) -> String {
    let reply = agent.ask(query, on(thread)).await.unwrap();
    reply.data_as::<ReactCompleted>().unwrap().answer
}

#[tokio::test]
async fn an_idle_thread_is_stopped_and_comes_back_from_the_store() {
    let runtime = echo_runtime(Arc::new(motet_runtime::store::MemoryStore::new()));
    let tools = calculator();
    let agent = runtime
        .spawn(
            AgentSpec::new("echo", react("openai:gpt-5.2", &tools))
                .with_idle_timeout(Some(Duration::from_millis(100))),
        )
        .await
        .unwrap();
    assert_eq!(answer(&agent, "first", "t1").await, "first");
    assert_eq!(runtime.thread_count(), 2);
    // Both threads (t1 and the default one) go idle and stop.
    for _ in 0..100 {
        if runtime.thread_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(runtime.thread_count(), 0, "idle threads were stopped");
    // The stored thread still answers questions about it...
    let stored = agent.get_thread(Some("t1")).await.unwrap().unwrap();
    assert_eq!(stored.id(), "echo/t1");
    assert!(stored.entry_count() >= 2, "the user message and the answer");
    // ...and the next ask brings the actor back with its history.
    assert_eq!(answer(&agent, "second", "t1").await, "first|second");
    runtime.shutdown().await;
}

#[tokio::test]
async fn two_agents_threads_of_the_same_name_do_not_share_history() {
    let runtime = echo_runtime(Arc::new(motet_runtime::store::MemoryStore::new()));
    let tools = calculator();
    let a = runtime
        .spawn(AgentSpec::new("a", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    let b = runtime
        .spawn(AgentSpec::new("b", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    assert_eq!(answer(&a, "from a", "shared").await, "from a");
    assert_eq!(answer(&b, "from b", "shared").await, "from b");
    runtime.shutdown().await;
}

#[tokio::test]
async fn threads_survive_the_runtime_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let tools = calculator();
    {
        let store = motet_runtime::store::SqliteStore::open(&path)
            .await
            .unwrap();
        let runtime = echo_runtime(Arc::new(store));
        let agent = runtime
            .spawn(AgentSpec::new("echo", react("openai:gpt-5.2", &tools)))
            .await
            .unwrap();
        assert_eq!(answer(&agent, "one", "chat").await, "one");
        assert_eq!(answer(&agent, "two", "chat").await, "one|two");
        runtime.shutdown().await;
    }
    // A new runtime on the same file: the conversation goes on where it was.
    let store = motet_runtime::store::SqliteStore::open(&path)
        .await
        .unwrap();
    let runtime = echo_runtime(Arc::new(store));
    let agent = runtime
        .spawn(AgentSpec::new("echo", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    assert_eq!(answer(&agent, "three", "chat").await, "one|two|three");
    let thread = agent.get_thread(Some("chat")).await.unwrap().unwrap();
    assert_eq!(thread.id(), "echo/chat");
    // The meta an agent needs to come back is stored with the thread, and so are its totals.
    use motet_runtime::store::ThreadStore as _;
    let store = motet_runtime::store::SqliteStore::open(&path)
        .await
        .unwrap();
    let meta = store.get_meta("echo/chat").await.unwrap().unwrap();
    assert_eq!(meta.strategy_config_id.as_deref(), Some("echo"));
    assert_eq!(meta.extra["thread"], "chat");
    let summary = store.summary("echo/chat").await.unwrap().unwrap();
    assert_eq!(summary.entry_count, thread.entry_count() as u64);
    assert_eq!(summary.usage, thread.usage());
    assert!(
        summary.usage.input_tokens > 0,
        "session usage totals are stored"
    );
    runtime.shutdown().await;
}

/// Hires a worker on "hire", sends it work when it has started, and answers the request with
/// what the worker reported to its parent; "fire" stops it; "boom" crashes the boss.
struct Boss;

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct BossState {
    request: Option<String>,
}

impl motet_agents::Strategy for Boss {
    type State = BossState;

    fn init(&self, _env: &dyn motet_agents::Env) -> BossState {
        BossState::default()
    }

    fn handle(
        &self,
        state: &mut BossState,
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{ChildSpec, Directive, Emit, EmitTarget, Spawn, StopChild};
        use motet_runtime::agent::{CHILD_STARTED, ChildEvent};
        let reply = |request: &str, data: serde_json::Value| {
            Directive::Emit(Emit {
                signal: motet_signals::Signal::builder(REACT_COMPLETED, "boss")
                    .with_request_id(request)
                    .with_data(data)
                    .build()
                    .unwrap(),
                target: EmitTarget::Bus,
            })
        };
        match signal.signal_type().as_str() {
            CHILD_STARTED => {
                let child: ChildEvent = signal.data_as().unwrap();
                let work = motet_signals::Signal::builder("work.do", "boss")
                    .build()
                    .unwrap();
                Ok(vec![Directive::Emit(Emit {
                    signal: work,
                    target: EmitTarget::Agent(child.name),
                })])
            }
            "work.done" => {
                let request = state.request.take().unwrap();
                Ok(vec![reply(&request, serde_json::json!(signal.source()))])
            }
            _ => {
                let input: motet_agents::ReactInput = signal.data_as().unwrap();
                let request = signal.request_id().unwrap().to_owned();
                if input.query == "boom" {
                    panic!("a bug in the boss");
                }
                if input.query == "fire" {
                    return Ok(vec![
                        Directive::StopChild(StopChild {
                            tag: "w1".into(),
                            reason: "done".into(),
                        }),
                        reply(&request, serde_json::json!("fired")),
                    ]);
                }
                state.request = Some(request);
                Ok(vec![Directive::Spawn(Spawn {
                    tag: "w1".into(),
                    spec: ChildSpec {
                        kind: "worker".into(),
                        name: None,
                        config: serde_json::json!({"skill": "sums"}),
                    },
                })])
            }
        }
    }
}

/// A worker: answers any `work.do` by telling its parent `work.done`, signed with its skill.
struct Worker {
    skill: String,
}

impl motet_agents::Strategy for Worker {
    type State = ();

    fn init(&self, _env: &dyn motet_agents::Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{Directive, Emit, EmitTarget};
        if signal.signal_type().as_str() != "work.do" {
            return Ok(Vec::new());
        }
        let done = motet_signals::Signal::builder("work.done", format!("worker.{}", self.skill))
            .build()
            .unwrap();
        Ok(vec![Directive::Emit(Emit {
            signal: done,
            target: EmitTarget::Parent,
        })])
    }
}

#[tokio::test]
async fn a_parent_spawns_a_child_kind_talks_to_it_and_stops_it() {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .kind("worker", |config: &serde_json::Value| {
            let skill = config["skill"].as_str().ok_or("a worker needs a skill")?;
            Ok(AgentSpec::new(
                "ignored",
                Worker {
                    skill: skill.to_owned(),
                },
            ))
        })
        .build()
        .unwrap();
    let boss = runtime.spawn(AgentSpec::new("boss", Boss)).await.unwrap();
    let reply = boss.ask("hire", AskOptions::default()).await.unwrap();
    assert_eq!(reply.data_as::<String>().unwrap(), "worker.sums");
    assert!(
        runtime.agent("boss/w1").is_some(),
        "the child is named <parent>/<tag>"
    );
    assert_eq!(runtime.agent_count(), 2);
    let reply = boss.ask("fire", AskOptions::default()).await.unwrap();
    assert_eq!(reply.data_as::<String>().unwrap(), "fired");
    assert_eq!(runtime.agent_count(), 1);
    // Stopping the parent stops its children too.
    boss.ask("hire", AskOptions::default()).await.unwrap();
    assert_eq!(runtime.agent_count(), 2);
    runtime.stop_agent("boss");
    assert_eq!(runtime.agent_count(), 0);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_parent_stopped_past_its_restart_intensity_takes_its_children_along() {
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .kind("worker", |_: &serde_json::Value| {
            Ok(AgentSpec::new(
                "ignored",
                Worker {
                    skill: "sums".into(),
                },
            ))
        })
        .build()
        .unwrap();
    let boss = runtime
        .spawn(AgentSpec::new("boss", Boss).with_restart_intensity(
            motet_runtime::supervisor::Intensity {
                max_restarts: 0,
                within: Duration::from_secs(60),
            },
        ))
        .await
        .unwrap();
    boss.ask("hire", AskOptions::default()).await.unwrap();
    assert_eq!(runtime.agent_count(), 2);
    let options = AskOptions {
        timeout: Duration::from_secs(5),
        ..AskOptions::default()
    };
    assert!(boss.ask("boom", options).await.is_err());
    for _ in 0..100 {
        if runtime.agent_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(runtime.agent("boss").is_none(), "the boss was stopped");
    assert!(runtime.agent("boss/w1").is_none(), "its worker outlived it");
    runtime.shutdown().await;
}

/// Fans "fan" out as one task per worker on the bus (`task.w<k>.assigned`) and answers with
/// the sum of what the workers send back.
struct Coordinator {
    workers: usize,
}

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct Gathering {
    request: Option<String>,
    results: Vec<u64>,
}

impl motet_agents::Strategy for Coordinator {
    type State = Gathering;

    fn init(&self, _env: &dyn motet_agents::Env) -> Gathering {
        Gathering::default()
    }

    fn handle(
        &self,
        state: &mut Gathering,
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{Directive, Emit, EmitTarget};
        if signal.signal_type().as_str() == "task.done" {
            state.results.push(signal.data_as::<u64>().unwrap());
            if state.results.len() < self.workers {
                return Ok(Vec::new());
            }
            let sum: u64 = state.results.drain(..).sum();
            let request = state.request.take().unwrap();
            let done = motet_signals::Signal::builder(REACT_COMPLETED, "coord")
                .with_request_id(request)
                .with_data(sum)
                .build()
                .unwrap();
            return Ok(vec![Directive::Emit(Emit {
                signal: done,
                target: EmitTarget::Bus,
            })]);
        }
        state.request = signal.request_id().map(str::to_owned);
        Ok((0..self.workers)
            .map(|k| {
                let task = motet_signals::Signal::builder(format!("task.w{k}.assigned"), "coord")
                    .caused_by(signal)
                    .with_data(k as u64)
                    .build()
                    .unwrap();
                Directive::Emit(Emit {
                    signal: task,
                    target: EmitTarget::Bus,
                })
            })
            .collect())
    }
}

/// Squares the task number and sends it to the coordinator.
struct Squarer;

impl motet_agents::Strategy for Squarer {
    type State = ();

    fn init(&self, _env: &dyn motet_agents::Env) {}

    fn handle(
        &self,
        _state: &mut (),
        signal: &motet_signals::Signal,
        _env: &dyn motet_agents::Env,
    ) -> Result<Vec<motet_directives::Directive>, motet_agents::StrategyError> {
        use motet_directives::{Directive, Emit, EmitTarget};
        let k: u64 = signal.data_as().unwrap();
        let done = motet_signals::Signal::builder("task.done", "worker")
            .caused_by(signal)
            .with_data(k * k)
            .build()
            .unwrap();
        Ok(vec![Directive::Emit(Emit {
            signal: done,
            target: EmitTarget::Agent("coord".into()),
        })])
    }
}

#[tokio::test]
async fn a_coordinator_fans_work_out_over_the_bus_and_gathers_the_answers() {
    const WORKERS: usize = 100;
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .build()
        .unwrap();
    for k in 0..WORKERS {
        runtime
            .spawn(
                AgentSpec::new(format!("w{k}"), Squarer)
                    .subscribe(format!("task.w{k}.*").parse().unwrap()),
            )
            .await
            .unwrap();
    }
    let coord = runtime
        .spawn(AgentSpec::new("coord", Coordinator { workers: WORKERS }))
        .await
        .unwrap();
    let reply = coord.ask("fan", AskOptions::default()).await.unwrap();
    let expected: u64 = (0..WORKERS as u64).map(|k| k * k).sum();
    assert_eq!(reply.data_as::<u64>().unwrap(), expected);
    // Every task went over the bus, and so did the reply.
    assert_eq!(runtime.bus().stats().published as usize, WORKERS + 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_request_closes_its_provider_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A provider that starts a stream and then says nothing, and reports when the client
    // hangs up.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    let (open_tx, open_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let _ = socket.read(&mut buf).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        let event = "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"thinking\"},\"finish_reason\":null}]}\n\n";
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        socket.write_all(chunk.as_bytes()).await.unwrap();
        let _ = open_tx.send(());
        // Wait for EOF: the client closed the connection.
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = closed_tx.send(());
    });
    let client = HttpClient::new(Dialect::OpenAiChat, format!("{url}/v1"), None).unwrap();
    let runtime = Runtime::builder().llm(Arc::new(client)).build().unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("slow", react("openai-compat:m", &tools)))
        .await
        .unwrap();
    let request = motet_signals::Signal::builder(motet_agents::REACT_INPUT, "test")
        .with_request_id("req-1")
        .with_data(motet_agents::ReactInput {
            query: "go".into(),
            context_policy: None,
        })
        .build()
        .unwrap();
    let ask = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.request(request, Duration::from_secs(10)).await })
    };
    tokio::time::timeout(Duration::from_secs(5), open_rx)
        .await
        .unwrap()
        .unwrap();
    let cancel = motet_signals::Signal::builder(motet_agents::REACT_CANCEL, "test")
        .with_request_id("req-1")
        .with_data(motet_agents::ReactCancel { reason: None })
        .build()
        .unwrap();
    agent.send(cancel).await.unwrap();
    assert!(matches!(ask.await.unwrap(), Err(AskError::Failed { .. })));
    tokio::time::timeout(Duration::from_secs(5), closed_rx)
        .await
        .expect("the provider saw the connection close")
        .unwrap();
    runtime.shutdown().await;
}

#[tokio::test]
async fn requests_are_tracked_and_threads_can_be_reset() {
    use motet_runtime::agent::RequestStatus;
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel {
            delay: Duration::from_millis(30),
        }))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("echo", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    let (first, second) = tokio::join!(
        agent.ask("one", AskOptions::default()),
        agent.ask("two", AskOptions::default())
    );
    let first = first.unwrap();
    let second = second.unwrap();
    let records = agent.requests();
    assert_eq!(records.len(), 2);
    for record in &records {
        assert_eq!(record.status, RequestStatus::Completed);
        assert_eq!(record.thread, "default");
        let started = record.started_at.unwrap();
        let finished = record.finished_at.unwrap();
        assert!(record.submitted_at <= started && started <= finished);
        assert!(record.result.is_some());
    }
    // The second waited in the queue: it started when the first finished.
    let one = runtime.request(first.request_id().unwrap()).unwrap();
    let two = runtime.request(second.request_id().unwrap()).unwrap();
    assert_eq!(one.status, RequestStatus::Completed);
    assert!(two.started_at.unwrap() >= one.finished_at.unwrap());

    // Reset: the next ask starts from an empty history.
    agent.reset_thread(None).await.unwrap();
    assert!(agent.get_thread(None).await.unwrap().is_none());
    assert_eq!(answer(&agent, "three", "default").await, "three");
    runtime.shutdown().await;
}

/// Streams its answer in three pieces, a little apart.
#[derive(Clone, Default)]
struct TypingModel;

#[async_trait::async_trait]
impl motet_providers::LlmClient for TypingModel {
    async fn stream(
        &self,
        _req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmStream, ProviderError> {
        use motet_providers::LlmEvent;
        let mut events: Vec<LlmEvent> = ["Hel", "lo ", "world"]
            .into_iter()
            .map(|piece| LlmEvent::TextDelta {
                delta: piece.into(),
                meta: None,
            })
            .collect();
        events.push(LlmEvent::Done {
            stop_reason: motet_directives::StopReason::EndTurn,
        });
        Ok(Box::pin(futures::stream::unfold(
            events.into_iter(),
            |mut rest| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                rest.next().map(|e| (Ok(e), rest))
            },
        )))
    }
}

#[tokio::test]
async fn a_request_streams_its_deltas_then_its_reply() {
    let runtime = Runtime::builder()
        .llm(Arc::new(TypingModel))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("typist", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    let mut request = agent
        .start(
            "type",
            AskOptions {
                stream: true,
                ..AskOptions::default()
            },
        )
        .await
        .unwrap();
    let mut pieces = Vec::new();
    while let Some(delta) = request.next_delta().await {
        assert_eq!(delta.kind, DeltaKind::Text);
        pieces.push(delta.delta);
    }
    assert_eq!(pieces, ["Hel", "lo ", "world"]);
    let reply = request.wait().await.unwrap();
    assert_eq!(
        reply.data_as::<ReactCompleted>().unwrap().answer,
        "Hello world"
    );
    runtime.shutdown().await;
}

/// Its first call is cut after "Hel"; its second writes the whole answer.
#[derive(Clone, Default)]
struct CutOnceModel {
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait::async_trait]
impl motet_providers::LlmClient for CutOnceModel {
    async fn stream(
        &self,
        _req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmStream, ProviderError> {
        use motet_providers::LlmEvent;
        let text = |piece: &str| {
            Ok(LlmEvent::TextDelta {
                delta: piece.into(),
                meta: None,
            })
        };
        let events = if self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            vec![
                text("Hel"),
                Err(ProviderError::StreamTruncated {
                    reason: "the connection closed mid-stream".into(),
                }),
            ]
        } else {
            vec![
                text("Hello world"),
                Ok(LlmEvent::Done {
                    stop_reason: motet_directives::StopReason::EndTurn,
                }),
            ]
        };
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

#[tokio::test]
async fn a_call_cut_after_it_streamed_is_discarded_before_its_retry_streams() {
    let runtime = Runtime::builder()
        .llm(Arc::new(CutOnceModel::default()))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("typist", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    let options = AskOptions {
        stream: true,
        ..AskOptions::default()
    };
    let mut request = agent.start("type", options).await.unwrap();
    let mut seen = Vec::new();
    while let Some(delta) = request.next_delta().await {
        seen.push((delta.call_id, delta.kind, delta.delta));
    }
    let kinds: Vec<(DeltaKind, &str)> = seen.iter().map(|(_, k, d)| (*k, d.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (DeltaKind::Text, "Hel"),
            (DeltaKind::Discard, ""),
            (DeltaKind::Text, "Hello world"),
        ]
    );
    // The discard names the cut call; the retry is another call.
    assert_eq!(seen[0].0, seen[1].0);
    assert_ne!(seen[1].0, seen[2].0);
    let reply = request.wait().await.unwrap();
    assert_eq!(
        reply.data_as::<ReactCompleted>().unwrap().answer,
        "Hello world"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_started_request_can_be_cancelled() {
    let model = HangingModel::default();
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("slow", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    let request = agent.start("think", AskOptions::default()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), model.started.notified())
        .await
        .unwrap();
    request.cancel("changed my mind").await.unwrap();
    match request.wait().await {
        Err(AskError::Failed { reply }) => {
            let data = reply.data_as::<serde_json::Value>().unwrap().to_string();
            assert!(data.contains("changed my mind"), "{data}");
        }
        other => panic!("{other:?}"),
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_interrupt_policy_cancels_the_running_request_for_the_new_one() {
    let runtime = Runtime::builder()
        .llm(Arc::new(EchoModel {
            delay: Duration::from_millis(200),
        }))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(
            AgentSpec::new("echo", react("openai:gpt-5.2", &tools))
                .with_request_policy(RequestPolicy::Interrupt),
        )
        .await
        .unwrap();
    let (first, second) = tokio::join!(
        agent.ask("old question", AskOptions::default()),
        agent.ask("new question", AskOptions::default())
    );
    match first {
        Err(AskError::Failed { reply }) => {
            let data = reply.data_as::<serde_json::Value>().unwrap().to_string();
            assert!(data.contains("interrupted"), "{data}");
        }
        other => panic!("{other:?}"),
    }
    let answer = second.unwrap().data_as::<ReactCompleted>().unwrap().answer;
    assert!(answer.ends_with("new question"), "{answer}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_thread_left_mid_request_is_resumed_without_running_a_tool_twice() {
    use motet_agents::{NewEntry, Refs, Thread};
    use motet_runtime::store::{MemoryStore, ThreadHeader, ThreadStore};
    // What a killed process left behind: the question and an assistant turn calling `add`,
    // with no result committed.
    let store = Arc::new(MemoryStore::new());
    let env = motet_agents::FixedEnv::new(1);
    let mut thread = Thread::new("echo/default", 0);
    let refs = Refs::request("req-lost").with_iteration(1);
    thread.append(&env, NewEntry::user("add 2 and 3").with_refs(refs.clone()));
    let turn = AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            "tc_1",
            "add",
            ToolArgs::from_text(r#"{"a": 2, "b": 3}"#),
        )],
        stop_reason: motet_directives::StopReason::ToolUse,
    };
    thread.append(
        &env,
        NewEntry::assistant(turn, Usage::default()).with_refs(refs),
    );
    store.create(&ThreadHeader::of(&thread)).await.unwrap();
    store.commit(&thread, 0).await.unwrap();

    let runtime = echo_runtime(store.clone());
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("echo", react("openai:gpt-5.2", &tools)).with_tools(tools))
        .await
        .unwrap();
    let request = agent
        .resume(None, Duration::from_secs(5))
        .await
        .unwrap()
        .expect("the thread owes a request");
    assert_eq!(request.id(), "req-lost");
    let reply = request.wait().await.unwrap();
    assert_eq!(
        reply.data_as::<ReactCompleted>().unwrap().answer,
        "add 2 and 3"
    );
    // `add` is not declared idempotent: it was answered with an error, not run again.
    let stored = store.load("echo/default").await.unwrap().unwrap();
    let results: Vec<_> = stored
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            motet_agents::EntryBody::ToolResult { result, .. } => Some(result.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "exactly one result for the call");
    assert!(results[0].is_error);
    assert!(results[0].content.contains("may or may not have run"));
    // Seqs are contiguous and nothing is duplicated.
    for (n, entry) in stored.to_list().iter().enumerate() {
        assert_eq!(entry.seq, n as u64);
    }
    // Nothing is owed any more: resuming again replies with the answer.
    let again = agent
        .resume(None, Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        again
            .wait()
            .await
            .unwrap()
            .data_as::<ReactCompleted>()
            .unwrap()
            .answer,
        "add 2 and 3"
    );
    runtime.shutdown().await;
}

/// A store whose thread `echo/broken` cannot be read, as a damaged file would make it.
struct DamagedStore(motet_runtime::store::MemoryStore);

#[async_trait::async_trait]
impl motet_runtime::store::ThreadStore for DamagedStore {
    async fn create(
        &self,
        header: &motet_runtime::store::ThreadHeader,
    ) -> Result<(), motet_runtime::store::StoreError> {
        self.0.create(header).await
    }
    async fn load(
        &self,
        thread_id: &str,
    ) -> Result<Option<motet_agents::Thread>, motet_runtime::store::StoreError> {
        if thread_id == "echo/broken" {
            return Err(motet_runtime::store::StoreError::CorruptEntry {
                thread_id: thread_id.to_owned(),
                seq: 3,
                reason: "expected value at line 1 column 1".into(),
            });
        }
        self.0.load(thread_id).await
    }
    async fn load_after(
        &self,
        thread_id: &str,
        rev: u64,
    ) -> Result<Vec<motet_agents::Entry>, motet_runtime::store::StoreError> {
        self.0.load_after(thread_id, rev).await
    }
    async fn append(
        &self,
        thread_id: &str,
        entries: &[motet_agents::Entry],
        expected_rev: u64,
    ) -> Result<u64, motet_runtime::store::StoreError> {
        self.0.append(thread_id, entries, expected_rev).await
    }
    async fn summary(
        &self,
        thread_id: &str,
    ) -> Result<Option<motet_runtime::store::ThreadSummary>, motet_runtime::store::StoreError> {
        self.0.summary(thread_id).await
    }
    async fn list(
        &self,
    ) -> Result<Vec<motet_runtime::store::ThreadSummary>, motet_runtime::store::StoreError> {
        self.0.list().await
    }
    async fn delete(&self, thread_id: &str) -> Result<bool, motet_runtime::store::StoreError> {
        self.0.delete(thread_id).await
    }
    async fn put_meta(
        &self,
        thread_id: &str,
        meta: &motet_runtime::store::ThreadMeta,
    ) -> Result<(), motet_runtime::store::StoreError> {
        self.0.put_meta(thread_id, meta).await
    }
    async fn get_meta(
        &self,
        thread_id: &str,
    ) -> Result<Option<motet_runtime::store::ThreadMeta>, motet_runtime::store::StoreError> {
        self.0.get_meta(thread_id).await
    }
}

#[tokio::test]
async fn an_unreadable_thread_fails_closed_and_is_never_replaced() {
    let runtime = echo_runtime(Arc::new(DamagedStore(
        motet_runtime::store::MemoryStore::new(),
    )));
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("echo", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    for _ in 0..2 {
        match agent.ask("hello", on("broken")).await {
            Err(AskError::ThreadUnavailable {
                thread, message, ..
            }) => {
                assert_eq!(thread, "broken");
                assert!(message.contains("echo/broken"), "{message}");
                assert!(message.contains("seq 3"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Other threads are fine.
    assert_eq!(answer(&agent, "hello", "fine").await, "hello");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_thread_range_is_summarized_on_request_and_projected_in_its_place() {
    let model = ScriptedModel::new([
        turn(vec![AssistantBlock::text("Rome.")]),
        turn(vec![AssistantBlock::text("Paris.")]),
        turn(vec![AssistantBlock::text("They asked for two capitals.")]),
        turn(vec![AssistantBlock::text("Berlin.")]),
    ]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .build()
        .unwrap();
    let tools = calculator();
    let agent = runtime
        .spawn(AgentSpec::new("geo", react("openai:gpt-5.2", &tools)))
        .await
        .unwrap();
    agent.ask("capital of Italy?", on("trip")).await.unwrap();
    agent.ask("capital of France?", on("trip")).await.unwrap();
    let long = Duration::from_secs(5);

    // A range outside the thread is refused with a typed failure and changes nothing.
    let before = agent.get_thread(Some("trip")).await.unwrap().unwrap();
    let err = agent
        .summarize(Some("trip"), 0, 99, long)
        .await
        .unwrap_err();
    match err {
        AskError::Failed { reply } => {
            let failed: motet_agents::ReactFailed = reply.data_as().unwrap();
            assert!(
                matches!(failed.reason, motet_agents::FailureReason::Summary { .. }),
                "{failed:?}"
            );
        }
        other => panic!("{other}"),
    }
    let unchanged = agent.get_thread(Some("trip")).await.unwrap().unwrap();
    assert_eq!(unchanged.entry_count(), before.entry_count());

    // Entries 0..=3 (both questions and answers) become one summary.
    let summary = agent.summarize(Some("trip"), 0, 3, long).await.unwrap();
    assert_eq!(summary, "They asked for two capitals.");
    let requests = model.requests();
    match &requests[2].messages[1] {
        Message::User { content } => assert_eq!(
            content,
            "User: capital of Italy?\nAssistant: Rome.\nUser: capital of France?\nAssistant: Paris.\n"
        ),
        other => panic!("{other:?}"),
    }
    let thread = agent.get_thread(Some("trip")).await.unwrap().unwrap();
    let last = thread.to_list().last().unwrap().clone();
    assert!(
        matches!(
            &last.body,
            motet_agents::EntryBody::Summary { from_seq: 0, to_seq: 3, content }
                if content == "They asked for two capitals."
        ),
        "{last:?}"
    );

    // The next call sees the summary, not the summarized turns.
    agent.ask("capital of Germany?", on("trip")).await.unwrap();
    let next = &model.requests()[3];
    let shown = format!("{:?}", next.messages);
    assert!(shown.contains("They asked for two capitals."), "{shown}");
    assert!(!shown.contains("capital of Italy?"), "{shown}");
    assert!(shown.contains("capital of Germany?"), "{shown}");
    runtime.shutdown().await;
}
