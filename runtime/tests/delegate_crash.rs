//! Agents working through each other across a crash: the process is killed (SIGKILL) in the
//! middle of a delegation, in the middle of a handoff, and after a handoff while the receiver
//! works, and started again on the same SQLite file. The delegation and the handoff are carried
//! on, not asked twice; a handed-off thread is still the receiver's (its asks routed there,
//! its resume carried on there) — the holder is read back from the committed thread.
//!
//! The killed process is this test binary run again as a child: its ignored `child_run` entry
//! (with `--ignored --exact` and `MOTET_DELEGATE_CHILD` set) plays it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use motet_runtime::agent::{AgentTool, AskOptions, Handoff, HistoryFilter, ReActAgent, Runtime};
use motet_runtime::store::{SqliteStore, ThreadStore};

use common::by_agent::{ByAgent, Step, call, questions, text};

/// The variable that makes the test binary a child: `<sqlite file>|<mode>`.
const CHILD_VAR: &str = "MOTET_DELEGATE_CHILD";

const LEAD: &str = "You lead.";
const RESEARCHER: &str = "You research.";
const TRIAGE: &str = "You triage.";
const BILLING: &str = "You do billing.";

/// The four agents on `model`, over the SQLite file `db`.
async fn agents(model: ByAgent, db: &std::path::Path) -> Runtime {
    let store: Arc<dyn ThreadStore> = Arc::new(SqliteStore::open(db).await.unwrap());
    let runtime = Runtime::builder().llm(model).store(store).build().unwrap();
    for agent in [
        ReActAgent::new("researcher", common::MODEL).system(RESEARCHER),
        ReActAgent::new("lead", common::MODEL)
            .system(LEAD)
            .tool(AgentTool::new("researcher")),
        ReActAgent::new("billing", common::MODEL).system(BILLING),
        ReActAgent::new("triage", common::MODEL)
            .system(TRIAGE)
            .tool(Handoff::to("billing").history(HistoryFilter::NoToolCalls)),
    ] {
        runtime.spawn(agent).await.unwrap();
    }
    runtime
}

/// A model call that never ends, and the signal that it started.
fn hang() -> (Step, Arc<tokio::sync::Notify>) {
    let started = Arc::new(tokio::sync::Notify::new());
    (
        Step::Hang(Arc::new(AtomicBool::new(false)), started.clone()),
        started,
    )
}

/// The child: starts the work `mode` names, says `started` once the model call it is killed in
/// runs, and waits to be killed.
#[tokio::test]
#[ignore = "a child process of the crash tests, run by them"]
async fn child_run() {
    let spec = std::env::var(CHILD_VAR)
        .unwrap_or_else(|_| panic!("a child of the crash tests, not a test: {CHILD_VAR} is unset"));
    let (db, mode) = spec.rsplit_once('|').unwrap();
    let (hanging, started) = hang();
    let keep = AskOptions {
        keep_running: true,
        ..AskOptions::default()
    };
    let (model, agent, asks): (ByAgent, &str, &[&str]) = match mode {
        "delegation" => (
            ByAgent::default()
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
                .script(RESEARCHER, [hanging]),
            "lead",
            &["q"],
        ),
        "handoff" => (
            ByAgent::default()
                .script(TRIAGE, [call("h1", "transfer_to_billing", "{}", 1, 1)])
                .script(BILLING, [hanging]),
            "triage",
            &["refund please"],
        ),
        // The handoff done, the next ask goes to billing, which is killed while it works.
        "handed" => (
            ByAgent::default()
                .script(TRIAGE, [call("h1", "transfer_to_billing", "{}", 1, 1)])
                .script(BILLING, [text("Refund issued.", 1, 1), hanging]),
            "triage",
            &["refund please", "thanks"],
        ),
        other => panic!("no child mode `{other}`"),
    };
    let runtime = agents(model, std::path::Path::new(db)).await;
    let handle = runtime.agent(agent).unwrap();
    let (last, before) = asks.split_last().unwrap();
    for ask in before {
        handle.ask(*ask).await.unwrap();
    }
    let _ticket = handle.submit(*last, keep).await.unwrap();
    started.notified().await;
    println!("started");
    std::io::Write::flush(&mut std::io::stdout()).unwrap();
    std::future::pending::<()>().await;
}

/// Runs the child in `mode` on `db` and kills it (SIGKILL) once its model call hangs.
async fn crash(db: &std::path::Path, mode: &str) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_run",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_VAR, format!("{}|{mode}", db.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let started = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
        lines.any(|l| l.is_ok_and(|l| l.contains("started")))
    });
    // Generous: a loaded machine starts a process slowly.
    let started = tokio::time::timeout(Duration::from_secs(120), started)
        .await
        .map(Result::unwrap);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(
        started,
        Ok(true),
        "the child ({mode}) never got as far as the kill"
    );
}

/// The answers of every request `recover` resumed.
async fn recovered(runtime: &Runtime) -> Vec<String> {
    let mut answers = Vec::new();
    for ticket in runtime.recover(Duration::from_secs(30)).await.unwrap() {
        if let Ok(answer) = ticket.wait().await {
            answers.push(answer.text);
        }
    }
    answers
}

#[tokio::test]
async fn a_crash_mid_delegation_carries_the_call_on_to_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("delegation.db");
    crash(&db, "delegation").await;

    let model = ByAgent::default()
        .script(LEAD, [text("It is Paris.", 1, 1)])
        .script(RESEARCHER, [text("Paris", 1, 1)]);
    let runtime = agents(model.clone(), &db).await;
    let answers = recovered(&runtime).await;
    assert!(answers.contains(&"It is Paris.".to_owned()), "{answers:?}");
    // Carried on, not asked twice: one question on the callee's thread, one model call.
    let lead = runtime.agent("lead").unwrap();
    let thread = lead.get_thread(None).await.unwrap().unwrap();
    let request = thread.to_list()[0].refs.request_id.clone().unwrap();
    let callee_thread = format!("call.{request}.tc1");
    assert_eq!(
        questions(&runtime, "researcher", &callee_thread).await,
        ["capital?"]
    );
    assert_eq!(model.requests_of(RESEARCHER).len(), 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_handoff_continues_with_the_receiver_which_keeps_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("handoff.db");
    crash(&db, "handoff").await;

    let model = ByAgent::default().script(
        BILLING,
        [text("Refund issued.", 1, 1), text("Anything else?", 1, 1)],
    );
    let runtime = agents(model.clone(), &db).await;
    let answers = recovered(&runtime).await;
    assert!(
        answers.contains(&"Refund issued.".to_owned()),
        "{answers:?}"
    );
    // The receiver's interrupted request was carried on, not asked again.
    assert_eq!(questions(&runtime, "billing", "default").await.len(), 1);
    // The thread is billing's now: the next ask of triage goes there.
    let next = runtime
        .agent("triage")
        .unwrap()
        .ask("thanks")
        .await
        .unwrap();
    assert_eq!(next.text, "Anything else?");
    assert!(model.requests_of(TRIAGE).is_empty());
    runtime.shutdown().await;
}

#[tokio::test]
async fn after_a_crash_a_handed_off_thread_resumes_and_answers_with_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("handed.db");
    crash(&db, "handed").await;

    // No `recover`: the giver's thread owes nothing, so resuming it resumes the holder's.
    let model =
        ByAgent::default().script(BILLING, [text("You're welcome.", 1, 1), text("Bye.", 1, 1)]);
    let runtime = agents(model.clone(), &db).await;
    let triage = runtime.agent("triage").unwrap();
    let resumed = triage
        .resume(None, Duration::from_secs(30))
        .await
        .unwrap()
        .expect("the holder's interrupted request");
    assert_eq!(resumed.wait().await.unwrap().text, "You're welcome.");
    let next = triage.ask("bye").await.unwrap();
    assert_eq!(next.text, "Bye.");
    assert!(
        model.requests_of(TRIAGE).is_empty(),
        "triage is never asked again"
    );
    assert_eq!(
        questions(&runtime, "billing", "default").await[1..],
        ["thanks".to_owned(), "bye".to_owned()]
    );
    runtime.shutdown().await;
}
