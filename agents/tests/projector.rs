//! The projector on hand-built threads: segments, windows, atomic tool groups, boundaries,
//! budget errors.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    ContextPolicy, EntryKind, FixedEnv, NewEntry, ProjectionError, ProjectionIds, ProjectionInput,
    ProjectionResult, Refs, SummaryRole, Thread, project,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, Message, StopReason, ToolArgs, ToolDefs, ToolResult, Usage,
};

use common::describe_message;

fn tool_turn(calls: &[&str]) -> NewEntry {
    let blocks = calls
        .iter()
        .map(|id| AssistantBlock::tool_use(*id, "calc", ToolArgs::from_text(r#"{"x":1}"#)))
        .collect();
    NewEntry::assistant(
        AssistantMessage {
            blocks,
            stop_reason: StopReason::ToolUse,
        },
        Usage::default(),
    )
}

fn answer(text: &str) -> NewEntry {
    NewEntry::assistant(AssistantMessage::text(text), Usage::default())
}

fn result(id: &str, content: &str) -> NewEntry {
    NewEntry::tool_result("calc", ToolResult::ok(id, content))
        .with_refs(Refs::default().with_tool_call_id(id))
}

fn thread_of(entries: Vec<NewEntry>) -> Thread {
    let env = FixedEnv::new(0);
    let mut thread = Thread::create(&env);
    for entry in entries {
        thread.append(&env, entry);
    }
    thread
}

fn run(
    thread: &Thread,
    policy: &ContextPolicy,
    pending: &[Message],
) -> Result<ProjectionResult, ProjectionError> {
    let tools = ToolDefs::from(Vec::new());
    let ids = ProjectionIds::default();
    project(&ProjectionInput {
        thread,
        policy,
        pending,
        system: Some("sys"),
        tools: &tools,
        ids: &ids,
    })
}

/// One letter per message role, contents of text messages: a compact picture of a projection.
fn shape(messages: &[Message]) -> Vec<String> {
    messages.iter().map(describe_message).collect()
}

fn unlimited() -> ContextPolicy {
    ContextPolicy::new().with_keep_last_turns(0)
}

#[test]
fn segments_compose_system_history_pending() {
    let thread = thread_of(vec![NewEntry::user("q1"), answer("a1")]);
    let got = run(&thread, &unlimited(), &[Message::user("q2")]).unwrap();
    assert_eq!(shape(&got.messages), ["S:sys", "U:q1", "A:a1", "U:q2"]);
    assert_eq!(got.meta.pending_count, 1);
    assert_eq!(got.meta.entries_included, 2);
    assert_eq!(got.meta.entries_total, 2);
    assert_eq!(got.meta.basis_last_seq, Some(1));
    assert!(!got.meta.truncated);
    let empty = thread_of(vec![]);
    assert_eq!(
        shape(&run(&empty, &unlimited(), &[]).unwrap().messages),
        ["S:sys"]
    );
}

#[test]
fn results_follow_their_call_in_call_order() {
    let thread = thread_of(vec![
        NewEntry::user("q"),
        tool_turn(&["t1", "t2", "t3"]),
        result("t3", "c"),
        result("t1", "a"),
        result("t2", "b"),
        answer("done"),
    ]);
    let got = run(&thread, &unlimited(), &[]).unwrap();
    assert_eq!(
        shape(&got.messages),
        [
            "S:sys",
            "U:q",
            "A:calls[t1,t2,t3]",
            "T:[t1=a,t2=b,t3=c]",
            "A:done"
        ]
    );
}

#[test]
fn incomplete_groups_and_orphan_results_are_never_shown() {
    let thread = thread_of(vec![
        NewEntry::user("q"),
        tool_turn(&["t1", "t2"]),
        result("t1", "only one"),
        NewEntry::user("q2"),
        result("zz", "orphan"),
        answer("a2"),
    ]);
    let got = run(&thread, &unlimited(), &[]).unwrap();
    assert_eq!(shape(&got.messages), ["S:sys", "U:q", "U:q2", "A:a2"]);
}

#[test]
fn duplicated_results_are_shown_once() {
    let thread = thread_of(vec![
        NewEntry::user("q"),
        tool_turn(&["t1"]),
        result("t1", "first"),
        result("t1", "again"),
    ]);
    let got = run(&thread, &unlimited(), &[]).unwrap();
    let Message::ToolResults { results } = &got.messages[3] else {
        panic!("expected results, got {:?}", got.messages);
    };
    assert_eq!(results, &[ToolResult::ok("t1", "first")]);
}

#[test]
fn a_tool_group_that_does_not_fit_is_dropped_whole() {
    let big = "x".repeat(400); // 100 tokens + 10
    let thread = thread_of(vec![
        NewEntry::user("q"),
        tool_turn(&["t1"]),
        result("t1", &big),
        answer("a"),
        NewEntry::user("q2"),
    ]);
    let small = run(&thread, &unlimited(), &[]).unwrap();
    let group_tokens = thread.get_entry(1).unwrap().tokens + thread.get_entry(2).unwrap().tokens;
    // Room for the last two entries and the results, but not for the call beside them.
    let tail = u64::from(thread.get_entry(3).unwrap().tokens + thread.get_entry(4).unwrap().tokens);
    let budget = 10 + tail + u64::from(group_tokens) - 1; // system "sys" = 10 tokens
    let policy = unlimited()
        .with_reserve_output_tokens(0)
        .with_max_input_tokens(u32::try_from(budget).unwrap());
    let got = run(&thread, &policy, &[]).unwrap();
    assert_eq!(shape(&got.messages), ["S:sys", "A:a", "U:q2"]);
    assert!(got.meta.truncated && got.meta.needs_summary);
    assert!(got.meta.estimated_tokens <= budget);
    assert_eq!(small.messages.len(), 6);
}

#[test]
fn the_latest_summary_is_a_boundary() {
    let thread = thread_of(vec![
        NewEntry::user("old"),
        answer("old answer"),
        NewEntry::summary(0, 1, "they talked"),
        NewEntry::user("new"),
    ]);
    let got = run(&thread, &unlimited(), &[]).unwrap();
    assert_eq!(
        shape(&got.messages),
        [
            "S:sys",
            "S:Summary of earlier conversation:\nthey talked",
            "U:new"
        ]
    );
    assert!(got.meta.summary_used);
    assert_eq!(got.meta.window_start_seq, 2);
    let as_user = unlimited().with_summary_role(SummaryRole::User);
    let got = run(&thread, &as_user, &[]).unwrap();
    assert!(matches!(&got.messages[1], Message::User { .. }));
    let ignoring = ContextPolicy::tool_focused().with_keep_last_turns(0);
    let got = run(&thread, &ignoring, &[]).unwrap();
    assert_eq!(
        shape(&got.messages),
        ["S:sys", "U:old", "A:old answer", "U:new"]
    );
}

#[test]
fn a_boundary_entry_starts_the_window() {
    let thread = thread_of(vec![
        NewEntry::user("q1"),
        answer("a1"),
        NewEntry::user("q2"),
        NewEntry::boundary(2),
        answer("a2"),
    ]);
    let got = run(&thread, &unlimited(), &[]).unwrap();
    assert_eq!(shape(&got.messages), ["S:sys", "U:q2", "A:a2"]);
    assert_eq!(got.meta.history_from_seq, Some(2));
}

#[test]
fn turn_and_message_windows_cut_whole_groups() {
    let thread = thread_of(vec![
        NewEntry::user("q1"),
        answer("a1"),
        NewEntry::user("q2"),
        tool_turn(&["t"]),
        result("t", "r"),
        answer("a2"),
    ]);
    let one_turn = ContextPolicy::new().with_keep_last_turns(1);
    let got = run(&thread, &one_turn, &[]).unwrap();
    assert_eq!(
        shape(&got.messages),
        ["S:sys", "U:q2", "A:calls[t]", "T:[t=r]", "A:a2"]
    );
    assert!(got.meta.truncated);
    let two_messages = unlimited().with_max_messages(2);
    let got = run(&thread, &two_messages, &[]).unwrap();
    assert_eq!(shape(&got.messages), ["S:sys", "A:a2"]);
    let three = unlimited().with_max_messages(3);
    let got = run(&thread, &three, &[]).unwrap();
    assert_eq!(
        shape(&got.messages),
        ["S:sys", "A:calls[t]", "T:[t=r]", "A:a2"]
    );
}

#[test]
fn excluding_tool_results_drops_tool_turns_not_half_of_them() {
    let thread = thread_of(vec![
        NewEntry::user("q"),
        tool_turn(&["t"]),
        result("t", "r"),
        answer("a"),
    ]);
    let policy = unlimited().with_include_kinds(vec![EntryKind::User, EntryKind::Assistant]);
    let got = run(&thread, &policy, &[]).unwrap();
    assert_eq!(shape(&got.messages), ["S:sys", "U:q", "A:a"]);
}

#[test]
fn over_budget_is_an_error_not_a_broken_history() {
    let thread = thread_of(vec![
        NewEntry::user("q"),
        tool_turn(&["t"]),
        result("t", &"y".repeat(4_000)),
    ]);
    let policy = unlimited()
        .with_max_input_tokens(500)
        .with_reserve_output_tokens(100);
    let err = run(&thread, &policy, &[]).unwrap_err();
    assert!(matches!(
        err,
        ProjectionError::NewestGroupOverBudget {
            from_seq: 1,
            to_seq: 2,
            available: 390,
            ..
        }
    ));
    let pending = [Message::user("z".repeat(4_000))];
    let err = run(&thread_of(vec![]), &policy, &pending).unwrap_err();
    assert_eq!(
        err,
        ProjectionError::FixedSegmentsOverBudget {
            needed: 1_020,
            budget: 400
        }
    );
}

#[test]
fn suggested_boundary_fits_low_water_and_prefers_a_user_turn() {
    // Ten turns of a user question and an answer, about 35 tokens each entry.
    let mut entries = Vec::new();
    for turn in 0..10 {
        entries.push(NewEntry::user(format!(
            "question {turn} {}",
            "q".repeat(90)
        )));
        entries.push(answer(&format!("answer {turn} {}", "a".repeat(90))));
    }
    let thread = thread_of(entries);
    let per_entry = u64::from(thread.get_entry(0).unwrap().tokens);
    // History budget for about 8 entries: truncated.
    let budget = 10 + per_entry * 8 + 5;
    let policy = unlimited()
        .with_reserve_output_tokens(0)
        .with_max_input_tokens(u32::try_from(budget).unwrap());
    let got = run(&thread, &policy, &[]).unwrap();
    assert!(got.meta.truncated);
    let boundary = got.meta.suggested_boundary.unwrap();
    // Low water is 0.7 of 8 entries = 5.x entries; the nearest user turn start keeps 4.
    assert_eq!(boundary, 16);
    let kept: u64 = thread
        .slice(boundary, u64::MAX)
        .iter()
        .map(|e| u64::from(e.tokens))
        .sum();
    assert!(kept as f64 <= 0.7 * (budget - 10) as f64);
}
