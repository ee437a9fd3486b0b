//! Agents working through each other: an agent asked as a tool (its answer, its usage in the
//! caller's, its deltas and waits on the caller's ticket, cancellation flowing down, cycles and
//! depth refused) and a conversation handed off (the receiver answers, the thread is recorded
//! and routed), also across a restart on SQLite in the middle of either.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use motet_agents::EntryBody;
use motet_directives::{Approval, Response, ToolArgs};
use motet_runtime::agent::{
    AgentTool, AskOptions, CalleeThread, Handoff, HistoryFilter, ReActAgent, RequestStatus, Runtime,
};
use motet_runtime::store::{SqliteStore, ThreadStore};
use motet_runtime::tool::{Tool, ToolContext, ToolError};

use common::by_agent::{ByAgent, Step, call, questions, text};

const LEAD: &str = "You lead.";
const RESEARCHER: &str = "You research.";

fn lead(tool: impl Tool) -> ReActAgent {
    ReActAgent::new("lead", common::MODEL)
        .system(LEAD)
        .tool(tool)
}

fn researcher() -> ReActAgent {
    ReActAgent::new("researcher", common::MODEL).system(RESEARCHER)
}

async fn two_agents(model: ByAgent, tool: AgentTool) -> Runtime {
    let runtime = common::runtime_on(model);
    runtime.spawn(researcher()).await.unwrap();
    runtime.spawn(lead(tool)).await.unwrap();
    runtime
}

/// The tool results in thread `thread` of `agent`.
async fn tool_results(runtime: &Runtime, agent: &str, thread: &str) -> Vec<String> {
    let handle = runtime.agent(agent).unwrap();
    let thread = handle.get_thread(Some(thread)).await.unwrap().unwrap();
    thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::ToolResult { result, .. } => Some(result.content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_agent_asked_as_a_tool_answers_and_its_usage_counts_in_the_callers() {
    let model = ByAgent::default()
        .script(
            LEAD,
            [
                call(
                    "tc1",
                    "ask_researcher",
                    r#"{"input": "capital of France?"}"#,
                    10,
                    5,
                ),
                text("It is Paris.", 20, 4),
            ],
        )
        .script(RESEARCHER, [text("Paris", 7, 3)]);
    let runtime = two_agents(model.clone(), AgentTool::new("researcher")).await;
    let answer = runtime
        .agent("lead")
        .unwrap()
        .ask("Where is the Louvre?")
        .await
        .unwrap();
    assert_eq!(answer.text, "It is Paris.");
    // The lead's two calls and the researcher's one.
    assert_eq!(
        (answer.usage.input_tokens, answer.usage.output_tokens),
        (37, 12)
    );
    assert_eq!(tool_results(&runtime, "lead", "default").await, ["Paris"]);
    // A thread of its own for the call, named after the caller's request and call.
    let thread = format!("call.{}.tc1", answer.request_id);
    assert_eq!(
        questions(&runtime, "researcher", &thread).await,
        ["capital of France?"]
    );
    // The callee's request is recorded under the id derived from the caller's.
    let callee = runtime
        .request(&format!("{}.tc1", answer.request_id))
        .unwrap();
    assert_eq!(callee.status, RequestStatus::Completed);
    assert_eq!(callee.agent, "researcher");
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_caller_chooses_the_callees_thread() {
    let model = ByAgent::default()
        .script(
            LEAD,
            [
                call("tc1", "ask_researcher", r#"{"input": "one"}"#, 1, 1),
                text("a", 1, 1),
                call("tc2", "ask_researcher", r#"{"input": "two"}"#, 1, 1),
                text("b", 1, 1),
            ],
        )
        .script(RESEARCHER, [text("1", 1, 1), text("2", 1, 1)]);
    let tool = AgentTool::new("researcher").thread(CalleeThread::PerCallerThread);
    let runtime = two_agents(model.clone(), tool).await;
    let lead = runtime.agent("lead").unwrap();
    lead.ask("first").await.unwrap();
    lead.ask("second").await.unwrap();
    // One thread per caller thread: the researcher saw both questions on one thread.
    assert_eq!(
        questions(&runtime, "researcher", "from.lead.default").await,
        ["one", "two"]
    );
    assert_eq!(model.requests_of(RESEARCHER)[1].messages.len(), 4);
    runtime.shutdown().await;

    let model = ByAgent::default()
        .script(
            LEAD,
            [
                call("tc1", "ask_researcher", r#"{"input": "one"}"#, 1, 1),
                text("a", 1, 1),
            ],
        )
        .script(RESEARCHER, [text("1", 1, 1)]);
    let tool = AgentTool::new("researcher").thread(CalleeThread::Named("shared".into()));
    let runtime = two_agents(model, tool).await;
    runtime.agent("lead").unwrap().ask("first").await.unwrap();
    assert_eq!(questions(&runtime, "researcher", "shared").await, ["one"]);
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_callees_deltas_reach_the_callers_ticket_tagged_with_its_name() {
    let model = ByAgent::default()
        .script(
            LEAD,
            [
                call("tc1", "ask_researcher", r#"{"input": "q"}"#, 1, 1),
                text("done", 1, 1),
            ],
        )
        .script(RESEARCHER, [text("from the researcher", 1, 1)]);
    let runtime = two_agents(model, AgentTool::new("researcher")).await;
    let options = AskOptions {
        stream: true,
        ..AskOptions::default()
    };
    let mut ticket = runtime
        .agent("lead")
        .unwrap()
        .submit("q", options)
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(delta) = ticket.next_delta().await {
        seen.push((delta.agent.clone(), delta.delta.clone()));
    }
    assert!(
        seen.contains(&(Some("researcher".into()), "from the researcher".into())),
        "{seen:?}"
    );
    assert!(seen.contains(&(None, "done".into())), "{seen:?}");
    assert_eq!(ticket.wait().await.unwrap().text, "done");
    runtime.shutdown().await;
}

#[tokio::test]
async fn cancelling_the_callers_request_cancels_the_callees() {
    let (dropped, started) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(tokio::sync::Notify::new()),
    );
    let model = ByAgent::default()
        .script(
            LEAD,
            [call("tc1", "ask_researcher", r#"{"input": "q"}"#, 1, 1)],
        )
        .script(RESEARCHER, [Step::Hang(dropped.clone(), started.clone())]);
    let runtime = two_agents(model, AgentTool::new("researcher")).await;
    let ticket = runtime
        .agent("lead")
        .unwrap()
        .submit("q", AskOptions::default())
        .await
        .unwrap();
    started.notified().await;
    let callee = format!("{}.tc1", ticket.id());
    assert!(runtime.request(&callee).unwrap().status.is_running());
    ticket.cancel("changed my mind").await.unwrap();
    assert!(ticket.wait().await.is_err());
    // The researcher's request ends too, and its model call is aborted.
    let mut ended = false;
    for _ in 0..200 {
        if runtime.request(&callee).unwrap().status == RequestStatus::Failed
            && dropped.load(Ordering::SeqCst)
        {
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        ended,
        "the callee's request still runs: {:?}",
        runtime.request(&callee)
    );
    runtime.shutdown().await;
}

/// A tool that needs a person's approval before it runs.
struct Delete;

#[async_trait]
impl Tool for Delete {
    fn name(&self) -> &str {
        "delete"
    }
    fn description(&self) -> &str {
        "Deletes a file."
    }
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object", "properties": {}})
    }
    fn approval(&self, _args: &ToolArgs) -> Option<Approval> {
        Some(Approval::required().because("it deletes"))
    }
    async fn call(&self, _args: &ToolArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        Ok("deleted".into())
    }
}

#[tokio::test]
async fn a_callees_wait_for_a_person_shows_on_the_callers_ticket_and_is_answered_there() {
    let model = ByAgent::default()
        .script(
            LEAD,
            [
                call("tc1", "ask_researcher", r#"{"input": "clean up"}"#, 1, 1),
                text("cleaned", 1, 1),
            ],
        )
        .script(
            RESEARCHER,
            [call("del1", "delete", "{}", 1, 1), text("it is gone", 1, 1)],
        );
    let runtime = common::runtime_on(model);
    runtime.spawn(researcher().tool(Delete)).await.unwrap();
    runtime
        .spawn(lead(AgentTool::new("researcher")))
        .await
        .unwrap();
    let mut ticket = runtime
        .agent("lead")
        .unwrap()
        .submit("clean up", AskOptions::default())
        .await
        .unwrap();
    let waiting = ticket.next_waiting().await.expect("the researcher's wait");
    assert_eq!(
        (
            waiting.agent.as_str(),
            waiting.tool.as_str(),
            waiting.tool_call_id.as_str()
        ),
        ("researcher", "delete", "del1")
    );
    assert_eq!(waiting.request_id, format!("{}.tc1", ticket.id()));
    ticket.respond("del1", Response::Approve).await.unwrap();
    assert_eq!(ticket.wait().await.unwrap().text, "cleaned");
    let thread = format!("call.{}", waiting.request_id);
    assert_eq!(
        tool_results(&runtime, "researcher", &thread).await,
        ["deleted"]
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_cycle_is_refused_with_the_chain_it_would_close() {
    const B: &str = "You are b.";
    let model = ByAgent::default()
        .script(
            LEAD,
            [
                call("tc1", "ask_b", r#"{"input": "q"}"#, 1, 1),
                text("lead done", 1, 1),
            ],
        )
        .script(
            B,
            [
                call("tc2", "ask_lead", r#"{"input": "back"}"#, 1, 1),
                text("b done", 1, 1),
            ],
        );
    let runtime = common::runtime_on(model);
    runtime
        .spawn(
            ReActAgent::new("b", common::MODEL)
                .system(B)
                .tool(AgentTool::new("lead")),
        )
        .await
        .unwrap();
    runtime.spawn(lead(AgentTool::new("b"))).await.unwrap();
    let answer = runtime.agent("lead").unwrap().ask("q").await.unwrap();
    assert_eq!(answer.text, "lead done");
    let thread = format!("call.{}.tc1", answer.request_id);
    assert_eq!(
        tool_results(&runtime, "b", &thread).await,
        ["tool `ask_lead` failed: delegation cycle refused: lead → b → lead"]
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_call_past_the_depth_limit_is_refused() {
    const B: &str = "You are b.";
    let model = ByAgent::default()
        .script(
            LEAD,
            [
                call("tc1", "ask_b", r#"{"input": "q"}"#, 1, 1),
                text("lead done", 1, 1),
            ],
        )
        .script(
            B,
            [
                call("tc2", "ask_researcher", r#"{"input": "deeper"}"#, 1, 1),
                text("b done", 1, 1),
            ],
        );
    let runtime = common::runtime_on(model);
    runtime.spawn(researcher()).await.unwrap();
    runtime
        .spawn(
            ReActAgent::new("b", common::MODEL)
                .system(B)
                .tool(AgentTool::new("researcher").max_depth(1)),
        )
        .await
        .unwrap();
    runtime.spawn(lead(AgentTool::new("b"))).await.unwrap();
    let answer = runtime.agent("lead").unwrap().ask("q").await.unwrap();
    assert_eq!(answer.text, "lead done");
    let thread = format!("call.{}.tc1", answer.request_id);
    assert_eq!(
        tool_results(&runtime, "b", &thread).await,
        [
            "tool `ask_researcher` failed: delegation too deep: lead → b → researcher is 2 delegations, the limit is 1"
        ]
    );
    runtime.shutdown().await;
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// The researcher's tool: a lookup that always finds something.
fn lookup() -> impl Tool {
    motet_runtime::tool::tool_fn("lookup", "Looks a fact up.", |_: NoArgs| async {
        Ok::<_, ToolError>("found".to_owned())
    })
}

#[tokio::test]
async fn the_callees_spending_counts_in_the_callers_hard_budget_and_stops_it_typed() {
    use motet_providers::budget::{Budget, BudgetLevel};
    // The lead may spend 1,000 tokens on a request; it spends 200, the researcher 1,500 on
    // its first call — past the lead's limit, so its second call is refused, and so is the
    // lead's next.
    let model = ByAgent::default()
        .script(
            LEAD,
            [call(
                "tc1",
                "ask_researcher",
                r#"{"input": "dig"}"#,
                100,
                100,
            )],
        )
        .script(RESEARCHER, [call("l1", "lookup", "{}", 1_000, 500)]);
    let runtime = common::runtime_on(model.clone());
    runtime.spawn(researcher().tool(lookup())).await.unwrap();
    let budgeted = lead(AgentTool::new("researcher"))
        .agent(|s| s.with_budget(BudgetLevel::Request, Budget::tokens(1_000)));
    let lead = runtime.spawn(budgeted).await.unwrap();
    let failure = common::failure_data(lead.ask("q").await);
    assert!(failure.contains(r#""kind":"budget""#), "{failure}");
    assert!(
        failure.contains("this request has spent 1700 of its 1000 tokens"),
        "{failure}"
    );
    // Each made one call: the researcher's second and the lead's second were refused.
    assert_eq!(model.requests_of(RESEARCHER).len(), 1);
    assert_eq!(model.requests_of(LEAD).len(), 1);
    let asked = runtime.agent("researcher").unwrap().requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].status, RequestStatus::Failed, "{asked:?}");
    // The lead's tool result says why the researcher stopped.
    let results = tool_results(&runtime, "lead", "default").await;
    assert!(
        results[0].contains("budget") || results[0].contains("1000"),
        "{results:?}"
    );
    runtime.shutdown().await;
}

const TRIAGE: &str = "You triage.";
const BILLING: &str = "You do billing.";

async fn triage_and_billing(model: ByAgent, store: Option<Arc<dyn ThreadStore>>) -> Runtime {
    let mut builder = Runtime::builder().llm(model);
    if let Some(store) = store {
        builder = builder.store(store);
    }
    let runtime = builder.build().unwrap();
    runtime
        .spawn(ReActAgent::new("billing", common::MODEL).system(BILLING))
        .await
        .unwrap();
    runtime
        .spawn(
            ReActAgent::new("triage", common::MODEL)
                .system(TRIAGE)
                .tool(Handoff::to("billing").history(HistoryFilter::NoToolCalls)),
        )
        .await
        .unwrap();
    runtime
}

#[tokio::test]
async fn a_handoff_ends_with_the_receivers_answer_and_later_asks_go_to_it() {
    let model = ByAgent::default()
        .script(
            TRIAGE,
            [call(
                "h1",
                "transfer_to_billing",
                r#"{"reason": "a refund"}"#,
                3,
                2,
            )],
        )
        .script(
            BILLING,
            [text("Refund issued.", 5, 4), text("Anything else?", 1, 1)],
        );
    let runtime = triage_and_billing(model.clone(), None).await;
    let triage = runtime.agent("triage").unwrap();
    let answer = triage.ask("I want my money back").await.unwrap();
    // The receiver's answer, verbatim: the giver makes no call after the handoff.
    assert_eq!(answer.text, "Refund issued.");
    assert_eq!(model.requests_of(TRIAGE).len(), 1);
    assert_eq!(
        (answer.usage.input_tokens, answer.usage.output_tokens),
        (8, 6)
    );
    // Recorded in the giver's thread: the call, its result and who holds it now.
    let thread = triage.get_thread(None).await.unwrap().unwrap();
    assert_eq!(motet_agents::delegate::holder(&thread), Some("billing"));
    // The receiver carries on on the same thread id, briefed with the user's words.
    let briefing = &questions(&runtime, "billing", "default").await[0];
    assert!(briefing.contains("I want my money back"), "{briefing}");
    assert!(briefing.contains("from agent `triage`") && briefing.contains("a refund"));
    // Later asks of the giver on that thread go to the receiver.
    let next = triage.ask("thanks").await.unwrap();
    assert_eq!(next.text, "Anything else?");
    assert_eq!(model.requests_of(TRIAGE).len(), 1);
    assert_eq!(
        questions(&runtime, "billing", "default").await[1..],
        ["thanks".to_owned()]
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_restart_mid_delegation_carries_the_call_on_to_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("delegate.db");
    let (dropped, started) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(tokio::sync::Notify::new()),
    );
    let request = {
        let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
        let model = ByAgent::default()
            .script(
                LEAD,
                [call(
                    "tc1",
                    "ask_researcher",
                    r#"{"input": "capital?"}"#,
                    1,
                    1,
                )],
            )
            .script(RESEARCHER, [Step::Hang(dropped, started.clone())]);
        let runtime = Runtime::builder().llm(model).store(store).build().unwrap();
        runtime.spawn(researcher()).await.unwrap();
        runtime
            .spawn(lead(AgentTool::new("researcher")))
            .await
            .unwrap();
        let options = AskOptions {
            keep_running: true,
            ..AskOptions::default()
        };
        let ticket = runtime
            .agent("lead")
            .unwrap()
            .submit("q", options)
            .await
            .unwrap();
        started.notified().await;
        let id = ticket.id().to_owned();
        drop(ticket);
        // The process stops while the researcher's model call runs.
        runtime.shutdown().await;
        id
    };
    let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
    let model = ByAgent::default()
        .script(LEAD, [text("It is Paris.", 1, 1)])
        .script(RESEARCHER, [text("Paris", 1, 1)]);
    let runtime = Runtime::builder()
        .llm(model.clone())
        .store(store)
        .build()
        .unwrap();
    runtime.spawn(researcher()).await.unwrap();
    runtime
        .spawn(lead(AgentTool::new("researcher")))
        .await
        .unwrap();
    let resumed = runtime.recover(Duration::from_secs(10)).await.unwrap();
    let mut lead_answer = None;
    for ticket in resumed {
        if ticket.id() == request {
            lead_answer = Some(ticket.wait().await.unwrap().text);
        } else {
            let _ = ticket.wait().await;
        }
    }
    assert_eq!(lead_answer.as_deref(), Some("It is Paris."));
    // The call was carried on, not asked twice: one question, one model call.
    let thread = format!("call.{request}.tc1");
    assert_eq!(
        questions(&runtime, "researcher", &thread).await,
        ["capital?"]
    );
    assert_eq!(model.requests_of(RESEARCHER).len(), 1);
    assert_eq!(tool_results(&runtime, "lead", "default").await, ["Paris"]);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_restart_mid_handoff_continues_with_the_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("handoff.db");
    let (dropped, started) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(tokio::sync::Notify::new()),
    );
    let request = {
        let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
        let model = ByAgent::default()
            .script(TRIAGE, [call("h1", "transfer_to_billing", "{}", 1, 1)])
            .script(BILLING, [Step::Hang(dropped, started.clone())]);
        let runtime = triage_and_billing(model, Some(store)).await;
        let options = AskOptions {
            keep_running: true,
            ..AskOptions::default()
        };
        let ticket = runtime
            .agent("triage")
            .unwrap()
            .submit("refund please", options)
            .await
            .unwrap();
        started.notified().await;
        let id = ticket.id().to_owned();
        drop(ticket);
        runtime.shutdown().await;
        id
    };
    let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(&db).await.unwrap());
    let model = ByAgent::default().script(BILLING, [text("Refund issued.", 1, 1)]);
    let runtime = triage_and_billing(model.clone(), Some(store)).await;
    let resumed = runtime.recover(Duration::from_secs(10)).await.unwrap();
    let mut answer = None;
    for ticket in resumed {
        if ticket.id() == request {
            answer = Some(ticket.wait().await.unwrap().text);
        } else {
            let _ = ticket.wait().await;
        }
    }
    assert_eq!(answer.as_deref(), Some("Refund issued."));
    assert!(model.requests_of(TRIAGE).is_empty());
    // Carried on, not asked again.
    assert_eq!(model.requests_of(BILLING).len(), 1);
    assert_eq!(questions(&runtime, "billing", "default").await.len(), 1);
    let thread = runtime
        .agent("triage")
        .unwrap()
        .get_thread(None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(motet_agents::delegate::holder(&thread), Some("billing"));
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_delegation_round_trip_against_the_local_model() {
    let Some(url) = common::local_llm() else {
        return;
    };
    let client = motet_providers::HttpClient::new(
        motet_providers::Dialect::OpenAiChat,
        format!("{url}/v1"),
        None,
    )
    .unwrap();
    let runtime = common::runtime_on(client);
    let model = "openai-compat:smollm2-135m";
    // A small model can write a tool call's string for ever: bounded, it is cut instead.
    let short = |mut c: motet_agents::ReActConfig| {
        c.options.max_tokens = Some(96);
        c
    };
    runtime
        .spawn(
            ReActAgent::new("researcher", model)
                .system("You answer in one sentence.")
                .configure(short),
        )
        .await
        .unwrap();
    runtime
        .spawn(
            ReActAgent::new("lead", model)
                .system("Ask the researcher, then answer.")
                .tool(
                    AgentTool::new("researcher")
                        .describe("Answers a question.")
                        .max_input(60),
                )
                // The first call must delegate; the next may answer.
                .tool_choice(motet_directives::ToolChoice::Required)
                .configure(short),
        )
        .await
        .unwrap();
    let options = AskOptions {
        timeout: Duration::from_secs(120),
        ..AskOptions::default()
    };
    let answer = runtime
        .agent("lead")
        .unwrap()
        .ask_with("What is the capital of France?", options)
        .await
        .unwrap();
    // The researcher was asked (a small model may ask twice), under ids derived from the
    // lead's request, and its tokens count in the lead's answer.
    let asked = runtime.agent("researcher").unwrap().requests();
    assert!(!asked.is_empty());
    for request in &asked {
        assert!(
            request.id.starts_with(&format!("{}.", answer.request_id)),
            "{asked:?}"
        );
        assert_eq!(request.status, RequestStatus::Completed, "{asked:?}");
    }
    let lead_thread = runtime
        .agent("lead")
        .unwrap()
        .get_thread(None)
        .await
        .unwrap()
        .unwrap();
    assert!(answer.usage.output_tokens > lead_thread.usage().output_tokens);
    println!("lead: {}", answer.text);
    runtime.shutdown().await;
}
