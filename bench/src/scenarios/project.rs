//! `project`: one projection of a thread of 1,000 and of 100,000 entries under an 8k budget.
//!
//! The threads are the same conversation at two lengths: turns of a user question, an assistant
//! turn with a tool call, its result and a final answer, with seeded sizes (about 60-400 tokens
//! an entry). There is no boundary or summary in either thread, so the projector must find the
//! window itself: its newest-first walk stops at the first group that does not fit, and the
//! ratio of the two figures shows what the thread's length costs.
//!
//! Both offer twenty tools (an MCP server's worth), whose schemas the projection counts against
//! the budget on every call.

use std::hint::black_box;
use std::time::{Duration, Instant};

use motet_agents::{
    ContextPolicy, FixedEnv, NewEntry, ProjectionIds, ProjectionInput, Refs, Thread, WindowMode,
    project,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, StopReason, ToolArgs, ToolDef, ToolDefs, ToolResult, Usage,
};

use crate::report::{Report, round2};

const SEED: u64 = 0x7072_6f6a;
const PROJECTIONS: u64 = 20_000;
const RUNS: usize = 3;

/// A thread of `entries` entries: whole turns of four entries each.
fn conversation(entries: usize, seed: u64) -> Thread {
    let env = FixedEnv::new(0);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut thread = Thread::create(&env);
    let mut turn = 0usize;
    while thread.entry_count() < entries {
        let request = Refs::request(format!("r{turn}"));
        let call = format!("call_{turn}");
        let words =
            |rng: &mut fastrand::Rng, lo: usize, hi: usize| "word ".repeat(rng.usize(lo..hi));
        let question = format!("question {turn}: {}", words(&mut rng, 40, 160));
        let args = format!(r#"{{"query":"{}"}}"#, words(&mut rng, 2, 20).trim());
        let result = words(&mut rng, 60, 300);
        let answer = format!("answer {turn}: {}", words(&mut rng, 40, 200));
        let tool_turn = AssistantMessage {
            blocks: vec![AssistantBlock::tool_use(
                &call,
                "search",
                ToolArgs::from_text(args),
            )],
            stop_reason: StopReason::ToolUse,
        };
        for entry in [
            NewEntry::user(question),
            NewEntry::assistant(tool_turn, Usage::default()),
            NewEntry::tool_result("search", ToolResult::ok(&call, result)),
            NewEntry::assistant(AssistantMessage::text(answer), Usage::default()),
        ] {
            if thread.entry_count() < entries {
                thread.append(&env, entry.with_refs(request.clone()));
            }
        }
        turn += 1;
    }
    thread
}

/// The policy both variants project with: 8,000 input tokens, no turn cap.
fn policy() -> ContextPolicy {
    ContextPolicy::new()
        .with_max_input_tokens(8_000)
        .with_keep_last_turns(0)
        .with_window(WindowMode::Sliding)
}

/// Twenty tools with small schemas, as an MCP server lists them.
fn tools() -> ToolDefs {
    (0..20)
        .map(|i| {
            ToolDef::new(
                format!("lookup_{i}"),
                "Looks a record up in the remote system and returns what it finds.",
                serde_json::json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "what to look for"},
                    "limit": {"type": "integer", "description": "how many results at most"}
                }, "required": ["query"]}),
            )
        })
        .collect::<Vec<_>>()
        .into()
}

fn variant(entries: usize) -> Report {
    let thread = conversation(entries, SEED);
    let policy = policy();
    let tools = tools();
    let ids = ProjectionIds::default();
    let input = ProjectionInput {
        thread: &thread,
        policy: &policy,
        pending: &[],
        system: Some("You are a research assistant."),
        tools: &tools,
        ids: &ids,
    };
    let mut sample = None;
    let mut best = Duration::MAX;
    for run in 0..=RUNS {
        let start = Instant::now();
        for _ in 0..PROJECTIONS {
            let result = project(black_box(&input));
            if sample.is_none() {
                sample = result.ok();
            } else {
                black_box(result.ok());
            }
        }
        // Run 0 warms up.
        if run > 0 {
            best = best.min(start.elapsed());
        }
    }
    let mut report = Report::new("project", format!("entries_{entries}"), PROJECTIONS, best)
        .with("entries", thread.entry_count());
    if let Some(result) = sample {
        report = report
            .with("messages", result.messages.len())
            .with("entries_included", result.meta.entries_included)
            .with("estimated_tokens", result.meta.estimated_tokens)
            .with("tool_tokens", result.meta.tool_tokens)
            .with("truncated", result.meta.truncated);
    }
    report
}

/// ns per projection for 1,000 and 100,000 entries; the second carries the ratio to the first.
pub(crate) fn run() -> Vec<Report> {
    let small = variant(1_000);
    let large = variant(100_000);
    let ratio = if small.ns_per_op() > 0.0 {
        large.ns_per_op() / small.ns_per_op()
    } else {
        0.0
    };
    let large = large.with("vs_entries_1000", round2(ratio));
    vec![small, large]
}
