//! Soft budgets through the runtime: a request whose next call would pass a soft step waits for
//! a person (listed like a tool call's approval, under `motet.budget`); approved, it goes on and
//! is not asked again until the next step; rejected, it ends with a `budget` failure; a hard
//! limit still ends it; and a wait committed to SQLite is listed and approved after a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{BUDGET_WAIT_TOOL, Waiting};
use motet_directives::budget::{BudgetLevel as Level, Measure, SoftLimit};
use motet_directives::{AssistantBlock, LlmResponse, Pause, Response, ToolArgs};
use motet_providers::ProviderError;
use motet_providers::budget::{Budget, BudgetLevel};
use motet_runtime::agent::{AskOptions, RequestStatus, Runtime, RuntimeError, Ticket};
use motet_runtime::store::SqliteStore;
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

/// The next wait of `ticket`, which must come within a few seconds.
async fn next_wait(ticket: &mut Ticket) -> Waiting {
    tokio::time::timeout(Duration::from_secs(5), ticket.next_waiting())
        .await
        .expect("the request never waited")
        .expect("the request ended without waiting")
}

/// The soft limit a budget wait names.
fn limit_of(waiting: &Waiting) -> SoftLimit {
    assert_eq!(waiting.tool, BUDGET_WAIT_TOOL, "{waiting:?}");
    serde_json::from_str(waiting.args.get()).unwrap()
}

fn question_of(waiting: &Waiting) -> String {
    match &waiting.pause {
        Pause::Approval(approval) => approval.reason.clone().unwrap_or_default(),
        other => panic!("a budget wait is an approval: {other:?}"),
    }
}

#[tokio::test]
async fn a_soft_step_waits_for_approval_and_the_request_goes_on_until_the_next_step() {
    let model = ScriptedModel::new([add_call(1), add_call(2), answer_turn()]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .budget(
            BudgetLevel::Request,
            Budget::UNLIMITED.with_soft_tokens(1_000),
        )
        .build()
        .unwrap();
    let agent = runtime.spawn(calc_agent("calc")).await.unwrap();
    let mut ticket = agent
        .submit("what is 2 + 3?", AskOptions::default())
        .await
        .unwrap();

    // The first call fit under 1,000; the second would start at 1,500: held, not sent.
    let first = next_wait(&mut ticket).await;
    assert_eq!(model.requests().len(), 1);
    assert_eq!(
        limit_of(&first),
        SoftLimit {
            level: Level::Request,
            measure: Measure::Tokens,
            limit: 1_000,
            spent: 1_500,
        }
    );
    assert_eq!(
        question_of(&first),
        "this request has spent 1500 of 1000 tokens: continue?"
    );
    assert_eq!(first.request_id, ticket.id());
    // Listed like any approval, from the store, and the request says it waits for one.
    let listed = runtime.waiting().await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].tool_call_id, first.tool_call_id);
    assert_eq!(
        runtime.request(ticket.id()).unwrap().status,
        RequestStatus::AwaitingApproval
    );
    // There is nothing to edit.
    let err = ticket
        .respond(&first.tool_call_id, Response::Edit { args: "{}".into() })
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::InvalidEdit { .. }), "{err}");

    // Approved past 1,000: the held call goes out (up to the next step, 2,000), and the next
    // would start at 3,000: held again, naming the highest step it passes.
    ticket
        .respond(&first.tool_call_id, Response::Approve)
        .await
        .unwrap();
    let second = next_wait(&mut ticket).await;
    assert_eq!(model.requests().len(), 2);
    assert_ne!(second.tool_call_id, first.tool_call_id);
    assert_eq!(limit_of(&second).limit, 3_000);
    assert_eq!(limit_of(&second).spent, 3_000);
    ticket
        .respond(&second.tool_call_id, Response::Approve)
        .await
        .unwrap();
    let answer = ticket.wait().await.unwrap();
    assert_eq!(answer.text, "5");
    assert_eq!(model.requests().len(), 3);
    assert!(runtime.waiting().await.unwrap().is_empty());
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_approval_holds_until_the_next_step_only() {
    // Steps of 2,000: the second call starts at 1,500 (no question), the third at 3,000
    // (asked at the step of 2,000), the fourth at 4,500 (asked again, at 4,000).
    let model = ScriptedModel::new([add_call(1), add_call(2), add_call(3), answer_turn()]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .budget(
            BudgetLevel::Request,
            Budget::UNLIMITED.with_soft_tokens(2_000),
        )
        .build()
        .unwrap();
    let agent = runtime.spawn(calc_agent("calc")).await.unwrap();
    let mut ticket = agent.submit("add", AskOptions::default()).await.unwrap();
    let first = next_wait(&mut ticket).await;
    assert_eq!(
        model.requests().len(),
        2,
        "the second call was not asked about"
    );
    assert_eq!(limit_of(&first).limit, 2_000);
    ticket
        .respond(&first.tool_call_id, Response::Approve)
        .await
        .unwrap();
    // Approved past 2,000: up to 4,000 without a question; the fourth call would start at
    // 4,500 and is asked about at the step of 4,000.
    let second = next_wait(&mut ticket).await;
    assert_eq!(model.requests().len(), 3);
    assert_eq!(limit_of(&second).limit, 4_000);
    ticket
        .respond(&second.tool_call_id, Response::Approve)
        .await
        .unwrap();
    assert_eq!(ticket.wait().await.unwrap().text, "5");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_rejected_soft_step_ends_the_request_with_a_budget_failure() {
    let model = ScriptedModel::new([add_call(1), answer_turn()]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .build()
        .unwrap();
    let agent = runtime
        .spawn(calc_agent("calc").agent(|s| {
            s.with_budget(
                BudgetLevel::Agent,
                Budget::UNLIMITED.with_soft_tokens(1_000),
            )
        }))
        .await
        .unwrap();
    let mut ticket = agent
        .submit("what is 2 + 3?", AskOptions::default())
        .await
        .unwrap();
    let waiting = next_wait(&mut ticket).await;
    assert_eq!(limit_of(&waiting).level, Level::Agent);
    assert_eq!(
        question_of(&waiting),
        "this agent has spent 1500 of 1000 tokens: continue?"
    );
    ticket
        .respond(
            &waiting.tool_call_id,
            Response::Reject {
                reason: "too dear".into(),
            },
        )
        .await
        .unwrap();
    let failure = failure_data(ticket.wait().await);
    assert!(failure.contains(r#""kind":"budget""#), "{failure}");
    assert!(
        failure.contains("declined to go on past a soft limit"),
        "{failure}"
    );
    assert!(failure.contains("too dear"), "{failure}");
    assert_eq!(model.requests().len(), 1, "the held call was sent");
    assert!(runtime.waiting().await.unwrap().is_empty());
    runtime.shutdown().await;
}

#[tokio::test]
async fn past_an_approved_soft_step_the_hard_limit_still_ends_the_request() {
    let model = ScriptedModel::new([add_call(1), add_call(2), answer_turn()]);
    let runtime = Runtime::builder()
        .llm(Arc::new(model.clone()))
        .budget(
            BudgetLevel::Request,
            Budget::tokens(2_000).with_soft_tokens(1_000),
        )
        .build()
        .unwrap();
    let agent = runtime.spawn(calc_agent("calc")).await.unwrap();
    let mut ticket = agent
        .submit("what is 2 + 3?", AskOptions::default())
        .await
        .unwrap();
    let waiting = next_wait(&mut ticket).await;
    ticket
        .respond(&waiting.tool_call_id, Response::Approve)
        .await
        .unwrap();
    // The approved call runs (1,500 + its input within 2,000) and spends to 3,000; the next
    // is refused by the hard limit, never asked about.
    let failure = failure_data(ticket.wait().await);
    assert!(failure.contains(r#""kind":"budget""#), "{failure}");
    assert!(
        failure.contains("this request has spent 3000 of its 2000 tokens"),
        "{failure}"
    );
    assert_eq!(model.requests().len(), 2);
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_wait_survives_a_restart_and_is_approved_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("motet.db");
    let start = |model: ScriptedModel, store: SqliteStore| {
        Runtime::builder()
            .llm(Arc::new(model))
            .store(Arc::new(store))
            .budget(
                BudgetLevel::Request,
                Budget::tokens(5_000).with_soft_tokens(1_000),
            )
            .build()
            .unwrap()
    };
    let runtime = start(
        ScriptedModel::new([add_call(1)]),
        SqliteStore::open(&path).await.unwrap(),
    );
    let agent = runtime.spawn(calc_agent("calc")).await.unwrap();
    let mut ticket = agent
        .submit("what is 2 + 3?", AskOptions::default())
        .await
        .unwrap();
    let before = next_wait(&mut ticket).await;
    runtime.shutdown().await;
    drop(ticket);

    // Reopened: the wait is listed from the store before anything runs, and answered.
    let model = ScriptedModel::new([answer_turn()]);
    let runtime = start(model.clone(), SqliteStore::open(&path).await.unwrap());
    runtime.spawn(calc_agent("calc")).await.unwrap();
    let waiting = runtime.waiting().await.unwrap();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0].tool_call_id, before.tool_call_id);
    assert_eq!(waiting[0].agent, "calc");
    assert_eq!(
        question_of(&waiting[0]),
        "this request has spent 1500 of 1000 tokens: continue?"
    );
    let tickets = runtime.recover(Duration::from_secs(10)).await.unwrap();
    assert_eq!(tickets.len(), 1);
    runtime
        .respond(&waiting[0], Response::Approve)
        .await
        .unwrap();
    let answer = tickets.into_iter().next().unwrap().wait().await.unwrap();
    assert_eq!(answer.text, "5");
    // The held call went out once, after the approval, carrying it.
    assert_eq!(model.requests().len(), 1);
    assert!(runtime.waiting().await.unwrap().is_empty());
    runtime.shutdown().await;
}
