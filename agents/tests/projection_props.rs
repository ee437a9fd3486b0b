//! Properties of the projection over random threads and policies: within budget, tool groups
//! whole, order preserved, deterministic, boundaries respected, suggested boundaries that fit.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use motet_agents::{
    ContextPolicy, EntryBody, EntryKind, FixedEnv, Heuristic, NewEntry, ProjectionError,
    ProjectionIds, ProjectionInput, ProjectionResult, Summarization, SummaryRole, Thread,
    WindowMode, estimate_message, project,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, Message, StopReason, ToolArgs, ToolDefs, ToolResult, Usage,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    User(usize),
    Answer(usize),
    /// Result sizes per call; arrival order rotated by `rotate`; the last result dropped when
    /// `incomplete`; the first result sent twice when `duplicate`.
    Tools {
        results: Vec<usize>,
        rotate: usize,
        incomplete: bool,
        duplicate: bool,
    },
    Summary(usize),
    Boundary(usize),
    Note,
    Orphan,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..400).prop_map(Op::User),
        3 => (0usize..400).prop_map(Op::Answer),
        4 => (
            prop::collection::vec(0usize..600, 1..4),
            0usize..3,
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.1)
        )
            .prop_map(|(results, rotate, incomplete, duplicate)| Op::Tools {
                results,
                rotate,
                incomplete,
                duplicate
            }),
        1 => (0usize..1000).prop_map(Op::Summary),
        1 => (0usize..1000).prop_map(Op::Boundary),
        1 => Just(Op::Note),
        1 => Just(Op::Orphan),
    ]
}

fn build(ops: &[Op]) -> Thread {
    let env = FixedEnv::new(0);
    let mut thread = Thread::create(&env);
    for op in ops {
        let seq = thread.entry_count();
        match op {
            Op::User(n) => {
                thread.append(&env, NewEntry::user(format!("u{seq} {}", "x".repeat(*n))));
            }
            Op::Answer(n) => {
                let text = format!("a{seq} {}", "y".repeat(*n));
                thread.append(
                    &env,
                    NewEntry::assistant(AssistantMessage::text(text), Usage::default()),
                );
            }
            Op::Tools {
                results,
                rotate,
                incomplete,
                duplicate,
            } => {
                let ids: Vec<String> = (0..results.len()).map(|j| format!("c{seq}_{j}")).collect();
                let blocks = ids
                    .iter()
                    .map(|id| AssistantBlock::tool_use(id, "t", ToolArgs::from_text("{}")))
                    .collect();
                let turn = AssistantMessage {
                    blocks,
                    stop_reason: StopReason::ToolUse,
                };
                thread.append(&env, NewEntry::assistant(turn, Usage::default()));
                let mut order: Vec<usize> = (0..results.len()).collect();
                order.rotate_left(rotate % results.len());
                if *incomplete {
                    order.pop();
                }
                if *duplicate {
                    order.push(order.first().copied().unwrap_or(0));
                }
                for j in order {
                    let result = ToolResult::ok(&ids[j], "z".repeat(results[j]));
                    thread.append(&env, NewEntry::tool_result("t", result));
                }
            }
            Op::Summary(at) => {
                let to = (*at).min(seq.saturating_sub(1)) as u64;
                thread.append(&env, NewEntry::summary(0, to, format!("summary to {to}")));
            }
            Op::Boundary(at) => {
                thread.append(&env, NewEntry::boundary((*at).min(seq) as u64));
            }
            Op::Note => {
                thread.append(&env, NewEntry::note("n"));
            }
            Op::Orphan => {
                let result = ToolResult::ok("nobody", "orphan");
                thread.append(&env, NewEntry::tool_result("t", result));
            }
        }
    }
    thread
}

fn policy() -> impl Strategy<Value = ContextPolicy> {
    let kinds = prop::sample::subsequence(
        vec![
            EntryKind::User,
            EntryKind::System,
            EntryKind::Assistant,
            EntryKind::ToolResult,
            EntryKind::Summary,
        ],
        0..=5,
    );
    (
        (100u32..4_000, 0u32..300, 0u32..5, 0u32..12),
        prop_oneof![
            Just(Summarization::None),
            Just(Summarization::UseExisting),
            Just(Summarization::RequestNew)
        ],
        prop::bool::ANY,
        prop::bool::ANY,
        kinds,
        0.05f64..1.0,
    )
        .prop_map(
            |((max, reserve, turns, messages), summarization, user_role, sliding, kinds, low)| {
                ContextPolicy::new()
                    .with_max_input_tokens(max)
                    .with_reserve_output_tokens(reserve)
                    .with_keep_last_turns(turns)
                    .with_max_messages(messages)
                    .with_summarization(summarization)
                    .with_summary_role(if user_role {
                        SummaryRole::User
                    } else {
                        SummaryRole::System
                    })
                    .with_window(if sliding {
                        WindowMode::Sliding
                    } else {
                        WindowMode::Stable
                    })
                    .with_include_kinds(kinds)
                    .with_low_water(low)
            },
        )
}

fn run(thread: &Thread, policy: &ContextPolicy) -> Result<ProjectionResult, ProjectionError> {
    let tools = ToolDefs::from(Vec::new());
    let ids = ProjectionIds::default();
    project(&ProjectionInput {
        thread,
        policy,
        pending: &[],
        system: Some("system prompt"),
        tools: &tools,
        ids: &ids,
    })
}

/// The seq a history message came from, read from the markers the generator wrote.
fn marker(message: &Message) -> Option<u64> {
    let text = match message {
        Message::User { content } if !content.text().starts_with("Summary") => content.to_string(),
        Message::Assistant(turn) => turn
            .tool_calls()
            .next()
            .map(|c| c.id.to_owned())
            .unwrap_or_else(|| turn.to_string()),
        _ => return None,
    };
    let digits: String = text[1..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn check_groups(messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        match m {
            Message::Assistant(turn) if turn.has_tool_calls() => {
                let Some(Message::ToolResults { results }) = messages.get(i + 1) else {
                    panic!("call without results at {i}");
                };
                let calls: Vec<&str> = turn.tool_calls().map(|c| c.id).collect();
                let answered: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
                assert_eq!(
                    calls, answered,
                    "results must answer each call once, in order"
                );
            }
            Message::ToolResults { .. } => assert!(
                i > 0 && matches!(&messages[i - 1], Message::Assistant(t) if t.has_tool_calls()),
                "results without their call at {i}"
            ),
            _ => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn projection_invariants(ops in prop::collection::vec(op(), 0..60), policy in policy()) {
        let thread = build(&ops);
        let first = run(&thread, &policy);
        // Deterministic.
        prop_assert_eq!(&first, &run(&thread, &policy));
        let Ok(result) = first else {
            return Ok(());
        };
        let meta = &result.meta;
        // Within budget, and the meta's estimate is the messages' estimate.
        let tokens: u64 = result
            .messages
            .iter()
            .map(|m| u64::from(estimate_message(&Heuristic, m)))
            .sum();
        prop_assert_eq!(tokens, meta.estimated_tokens);
        prop_assert!(tokens <= policy.input_budget());
        check_groups(&result.messages);
        // Order preserved and the window respected.
        let seqs: Vec<u64> = result.messages.iter().filter_map(marker).collect();
        prop_assert!(seqs.windows(2).all(|w| w[0] < w[1]), "order: {:?}", seqs);
        prop_assert!(seqs.iter().all(|&s| s >= meta.window_start_seq));
        if let Some(EntryBody::Boundary { from_seq }) = thread.latest_boundary().map(|e| &e.body) {
            prop_assert!(meta.window_start_seq >= (*from_seq).min(thread.entry_count() as u64));
        }
        if let (true, Some(EntryBody::Summary { to_seq, .. })) =
            (meta.summary_used, thread.latest_summary().map(|e| &e.body))
        {
            prop_assert!(seqs.iter().all(|&s| s > *to_seq));
        }
        // A suggested boundary, once committed, gives a window that fits without truncation.
        if let Some(boundary) = meta.suggested_boundary {
            prop_assert!(meta.truncated);
            prop_assert!(boundary >= meta.window_start_seq);
            let mut bounded = thread.clone();
            bounded.append(&FixedEnv::new(0), NewEntry::boundary(boundary));
            let again = run(&bounded, &policy).unwrap();
            prop_assert!(!again.meta.truncated);
            prop_assert_eq!(again.meta.history_from_seq, Some(boundary));
        }
    }

    #[test]
    fn stable_window_keeps_prefixes_between_boundaries(
        sizes in prop::collection::vec((0usize..300, 0usize..300, 0usize..300), 1..40),
        budget in 400u32..3_000,
    ) {
        // Simulates the strategy: append a turn, project, commit a boundary on truncation.
        let policy = ContextPolicy::new()
            .with_max_input_tokens(budget)
            .with_reserve_output_tokens(0)
            .with_keep_last_turns(0);
        let env = FixedEnv::new(0);
        let mut thread = Thread::create(&env);
        let mut previous: Option<Vec<Message>> = None;
        for (turn, (q, r, a)) in sizes.iter().enumerate() {
            thread.append(&env, NewEntry::user(format!("u{turn} {}", "q".repeat(*q))));
            let call = format!("c{turn}");
            let blocks = vec![AssistantBlock::tool_use(&call, "t", ToolArgs::from_text("{}"))];
            for entry in [
                NewEntry::assistant(AssistantMessage { blocks, stop_reason: StopReason::ToolUse }, Usage::default()),
                NewEntry::tool_result("t", ToolResult::ok(&call, "r".repeat(*r))),
                NewEntry::assistant(AssistantMessage::text(format!("a{turn} {}", "a".repeat(*a))), Usage::default()),
            ] {
                let Ok(mut result) = run(&thread, &policy) else { return Ok(()) };
                let mut moved = false;
                if let Some(boundary) = result.meta.suggested_boundary {
                    thread.append(&env, NewEntry::boundary(boundary));
                    result = run(&thread, &policy).unwrap();
                    moved = true;
                }
                prop_assert!(!result.meta.truncated);
                if let (Some(prev), false) = (&previous, moved) {
                    prop_assert!(result.messages.starts_with(prev), "prefix changed without a boundary");
                }
                previous = Some(result.messages);
                thread.append(&env, entry);
            }
        }
    }
}
