//! Cost accounting and hard budgets: every call priced into the usage ledger; a request, a
//! thread, an agent or a tenant past its hard budget ends with a `budget` failure (the model is
//! not called again); and a budget half spent before a restart is still half spent after it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;

use motet_directives::{AssistantBlock, AssistantMessage, LlmResponse, ToolArgs, Usage};
use motet_providers::budget::{Budget, BudgetLevel};
use motet_providers::{CallKind, Cost, ProviderError};
use motet_runtime::agent::Runtime;
use motet_runtime::store::{MemoryStore, SqliteStore, ThreadStore, UsageFilter};
use motet_runtime::testing::ScriptedModel;

use common::*;

/// A turn that reports 1,000 input and 500 output tokens, with these blocks.
fn spending(blocks: Vec<AssistantBlock>) -> Result<LlmResponse, ProviderError> {
    turn_using(blocks, 1_000, 500)
}

fn add_call(n: u32) -> Result<LlmResponse, ProviderError> {
    spending(vec![AssistantBlock::tool_use(
        format!("call_{n}"),
        "add",
        ToolArgs::from_text(r#"{"a": 2, "b": 3}"#),
    )])
}

fn answer_turn() -> Result<LlmResponse, ProviderError> {
    spending(vec![AssistantBlock::text("5")])
}

/// gpt-5.2's price for one spending turn: 1,000 input tokens at $1.75 / MTok and 500 output
/// tokens at $14 / MTok, in pico-dollars.
const TURN_PICODOLLARS: u64 = 1_000 * 1_750_000 + 500 * 14_000_000;

#[tokio::test]
async fn a_request_past_its_hard_budget_fails_with_a_budget_failure_and_no_further_call() {
    let model = ScriptedModel::new([add_call(1), add_call(2), add_call(3), answer_turn()]);
    let store = Arc::new(MemoryStore::new());
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .store(store.clone())
        .budget(BudgetLevel::Request, Budget::tokens(2_000))
        .build()
        .unwrap();
    let agent = runtime.spawn(calc_agent("calc")).await.unwrap();
    let failure = failure_data(agent.ask("what is 2 + 3?").await);
    assert!(failure.contains(r#""kind":"budget""#), "{failure}");
    assert!(
        failure.contains("this request has spent 3000 of its 2000 tokens"),
        "{failure}"
    );
    // The first call fit, the second began within the budget (1,500 spent), the third never ran.
    assert_eq!(model.requests().len(), 2);
    let ledger = store.usage_records(&UsageFilter::all()).await.unwrap();
    assert_eq!(ledger.len(), 2);
    assert!(ledger.iter().all(|r| r.kind == CallKind::Turn));
    assert_eq!(
        ledger[0].cost,
        Some(Cost::from_picodollars(TURN_PICODOLLARS))
    );
    assert_eq!(ledger[0].agent, "calc");
    assert_eq!(ledger[0].thread, "default");
    assert_eq!(ledger[0].model, "openai:gpt-5.2");
    let request = ledger[0].request.clone().unwrap();
    let totals = runtime.usage(&UsageFilter::request(request)).await.unwrap();
    assert_eq!(totals.usage.total_tokens(), 3_000);
    // The budget gave the calls a max_tokens (gpt-5.2's 128,000), the bound it reserved.
    assert_eq!(model.requests()[0].options.max_tokens, Some(128_000));
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_thread_budget_ends_that_thread_and_leaves_the_others_alone() {
    let model = ScriptedModel::new([answer_turn(), answer_turn(), answer_turn()]);
    let (runtime, agent) = spawned(
        model.clone(),
        calc_agent("calc")
            .agent(move |s| s.with_budget(BudgetLevel::Thread, Budget::tokens(1_200))),
    )
    .await;
    assert_eq!(answer(&agent, "first", "t1").await, "5");
    let failure = failure_data(agent.ask_with("second", on("t1")).await);
    assert!(failure.contains("this thread has spent 1500"), "{failure}");
    assert_eq!(answer(&agent, "elsewhere", "t2").await, "5");
    assert_eq!(model.requests().len(), 2);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_tenant_budget_in_dollars_is_shared_by_its_agents() {
    let model = ScriptedModel::new([answer_turn(), answer_turn(), answer_turn()]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .tenant_budget(
            "acme",
            Budget::cost(Cost::from_picodollars(
                TURN_PICODOLLARS + TURN_PICODOLLARS / 5,
            )),
        )
        .build()
        .unwrap();
    let spawn = |name: &'static str| calc_agent(name).agent(move |s| s.with_tenant("acme"));
    let a = runtime.spawn(spawn("a")).await.unwrap();
    let b = runtime.spawn(spawn("b")).await.unwrap();
    // a spends one turn's price; b starts within the rest and passes the limit; a is refused.
    assert_eq!(answer(&a, "one", "default").await, "5");
    assert_eq!(answer(&b, "two", "default").await, "5");
    let failure = failure_data(a.ask("three").await);
    assert!(
        failure.contains("this tenant has spent $0.017500"),
        "{failure}"
    );
    assert!(failure.contains(r#""kind":"budget""#), "{failure}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_agent_budget_half_spent_before_a_restart_is_half_spent_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("motet.db");
    let start = |model: ScriptedModel, store: SqliteStore| {
        Runtime::builder()
            .llm(Arc::new(model))
            .store(Arc::new(store))
            .budget(BudgetLevel::Agent, Budget::tokens(3_000))
            .build()
            .unwrap()
    };
    let runtime = start(
        ScriptedModel::new([answer_turn()]),
        SqliteStore::open(&path).await.unwrap(),
    );
    let agent = runtime.spawn(calc_agent("calc")).await.unwrap();
    assert_eq!(answer(&agent, "first", "default").await, "5");
    runtime.shutdown().await;

    // Reopened: 1,500 of 3,000 spent. One more call fits; the one after it does not.
    let model = ScriptedModel::new([answer_turn(), answer_turn()]);
    let runtime = start(model.clone(), SqliteStore::open(&path).await.unwrap());
    let agent = runtime.spawn(calc_agent("calc")).await.unwrap();
    assert_eq!(answer(&agent, "second", "default").await, "5");
    let failure = failure_data(agent.ask("third").await);
    assert!(
        failure.contains("this agent has spent 3000 of its 3000"),
        "{failure}"
    );
    assert_eq!(model.requests().len(), 1);
    runtime.shutdown().await;
}

/// A model that answers after a pause, writing all of its `max_tokens`: the worst case for a
/// budget, with every call in flight at once.
#[derive(Clone)]
struct SlowSpender;

#[async_trait::async_trait]
impl motet_providers::LlmClient for SlowSpender {
    async fn stream(
        &self,
        req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, ProviderError> {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let output = u64::from(req.options.max_tokens.unwrap_or(0));
        let response = LlmResponse::new(
            AssistantMessage {
                blocks: vec![AssistantBlock::text("5")],
                stop_reason: motet_directives::StopReason::EndTurn,
            },
            Usage {
                input_tokens: 100,
                output_tokens: output,
                ..Usage::default()
            },
        );
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[tokio::test]
async fn calls_racing_under_one_agent_budget_pass_it_by_at_most_one_calls_max_tokens() {
    let store = Arc::new(MemoryStore::new());
    let runtime = Runtime::builder()
        .llm(SlowSpender)
        .store(store.clone())
        .build()
        .unwrap();
    let limit = 10_000;
    let agent = runtime
        .spawn(
            calc_agent_on("busy", "openai-compat:local")
                .agent(move |s| s.with_budget(BudgetLevel::Agent, Budget::tokens(limit))),
        )
        .await
        .unwrap();
    // Ten threads ask at once; each call may write 4,096 tokens (the budget's max_tokens for a
    // model the capability table does not know).
    let asks = (0..10).map(|n| agent.ask_with("go", on(&format!("t{n}"))));
    let outcomes = futures::future::join_all(asks).await;
    let refused = outcomes
        .iter()
        .filter(|o| matches!(o, Err(motet_runtime::agent::AskError::Failed { .. })))
        .count();
    let spent = store
        .usage_totals(&UsageFilter::agent("busy"))
        .await
        .unwrap();
    let max_tokens = u64::from(motet_runtime::agent::DEFAULT_BUDGETED_MAX_TOKENS);
    assert!(refused > 0, "every racing call was let through");
    assert!(
        spent.usage.total_tokens() <= limit + max_tokens,
        "{} spent under a limit of {limit}",
        spent.usage.total_tokens()
    );
    runtime.shutdown().await;
}
