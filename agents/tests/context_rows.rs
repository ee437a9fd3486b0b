//! The context rows of the seeds, one test each: policy layers and the policy recorded with
//! every call, a call's context rebuilt from the thread byte for byte, tools counted in the
//! budget, summary triggers, context warnings, and a projector a user supplies.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    AgentPolicy, AgentRequest, CONTEXT_WARNING, ContextPolicy, ContextWarning,
    ContextWarningReason, EntryBody, FixedEnv, Heuristic, LlmError, LlmErrorKind, LlmFailed,
    LlmResult, NewEntry, PolicyOverride, ProjectionError, ProjectionIds, ProjectionInput,
    ProjectionResult, Projector, Strategy, Summarization, SummaryResult, SummaryTrigger, Thread,
    TokenEstimator, ToolResultSignal, estimate_message, estimate_tools, project, project_with,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, CallId, Directive, LlmResponse, Message, StopReason,
    ToolArgs, ToolDef, ToolDefs, ToolResult, Usage,
};
use serde_json::{Value, json};

use common::*;

/// Asks `query` as request `request`, under the request's own policy `over`.
fn ask(
    h: &mut Harness,
    request: &str,
    query: &str,
    over: Option<PolicyOverride>,
) -> Vec<Directive> {
    let input = AgentRequest {
        context_policy: over,
        ..question(query)
    };
    h.ask_with(request, input)
}

/// Sets (or clears) the agent's layer of the context policy.
fn set_policy(h: &mut Harness, policy: Option<ContextPolicy>) -> Vec<Directive> {
    h.request = "set".into();
    let data = AgentPolicy {
        context_policy: policy,
    };
    h.send("agent.policy", to_value(&data))
}

fn text(call: &CallId, text: &str) -> Value {
    llm_result(
        call.as_str(),
        AssistantMessage::text(text),
        Usage::default(),
    )
}

fn tool_call(call: &CallId, id: &str) -> Value {
    let message = AssistantMessage {
        blocks: vec![AssistantBlock::tool_use(
            id,
            "calculator",
            ToolArgs::from_text(r#"{"expr":"6*7"}"#),
        )],
        stop_reason: StopReason::ToolUse,
    };
    llm_result(call.as_str(), message, Usage::default())
}

/// The policies recorded with the thread's calls, oldest first.
fn recorded(thread: &Thread) -> Vec<ContextPolicy> {
    thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Assistant { basis, .. } => basis.as_ref()?.policy.as_deref().cloned(),
            _ => None,
        })
        .collect()
}

#[test]
fn the_agents_policy_sits_between_the_request_and_the_config_and_is_recorded() {
    let config = ContextPolicy::new().with_keep_last_turns(7);
    let mut h = Harness::on_thread(calculator().with_context_policy(config.clone()));
    assert_eq!(h.react.context_policy(&h.state), Some(config.clone()));

    let call = stream(&ask(&mut h, "r1", "q1", None)).call_id.clone();
    h.send("llm.result", text(&call, "a1"));
    assert_eq!(h.state.thread.policy_in_force(), Some(&config));

    // The agent's layer, set by a signal the runtime can send: it replaces the config's.
    let agent = ContextPolicy::new().with_keep_last_turns(9);
    let reply = set_policy(&mut h, Some(agent.clone()));
    assert!(
        matches!(&reply[..], [Directive::Reply(r)] if r.signal.signal_type().as_str() == "agent.completed"),
        "{reply:?}"
    );
    assert_eq!(h.react.context_policy(&h.state), Some(agent.clone()));
    let call = stream(&ask(&mut h, "r2", "q2", None)).call_id.clone();
    h.send("llm.result", text(&call, "a2"));
    assert_eq!(h.state.thread.policy_in_force(), Some(&agent));

    // The request's override goes on top of the agent's, for that request only.
    let over = PolicyOverride {
        max_input_tokens: Some(5_000),
        ..PolicyOverride::default()
    };
    let call = stream(&ask(&mut h, "r3", "q3", Some(over))).call_id.clone();
    h.send("llm.result", text(&call, "a3"));
    let with_override = agent.clone().with_max_input_tokens(5_000);
    assert_eq!(h.state.thread.policy_in_force(), Some(&with_override));
    let call = stream(&ask(&mut h, "r4", "q4", None)).call_id.clone();
    h.send("llm.result", text(&call, "a4"));
    let call = stream(&ask(&mut h, "r5", "q5", None)).call_id.clone();
    h.send("llm.result", text(&call, "a5"));

    // Cleared, the config's policy is in force again.
    set_policy(&mut h, None);
    assert_eq!(h.react.context_policy(&h.state), Some(config.clone()));
    let call = stream(&ask(&mut h, "r6", "q6", None)).call_id.clone();
    h.send("llm.result", text(&call, "a6"));

    // One copy per change, not one per call: r5 repeated r4's policy.
    assert_eq!(
        recorded(&h.state.thread),
        [config.clone(), agent.clone(), with_override, agent, config]
    );
}

/// Drives a long tool-using session under a tight budget (boundaries, summaries arriving while
/// a call is out, a context-length retry, a policy change) and returns every answered call's
/// id with the messages and tools it was sent.
fn long_session(h: &mut Harness) -> Vec<(CallId, String)> {
    let mut sent = Vec::new();
    let mut pending_summary: Option<CallId> = None;
    let record = |directives: &[Directive], sent: &mut Vec<(CallId, String)>| {
        let s = stream(directives);
        let json = serde_json::to_string(&(&s.request.messages, &s.request.tools)).unwrap();
        sent.push((s.call_id.clone(), json));
        s.call_id.clone()
    };
    let summaries = |directives: &[Directive], pending: &mut Option<CallId>| {
        for d in directives {
            if let Directive::Summarize(s) = d {
                *pending = Some(s.call_id.clone());
            }
        }
    };
    for turn in 0..30 {
        if turn == 15 {
            let tighter = ContextPolicy::new()
                .with_max_input_tokens(1_200)
                .with_reserve_output_tokens(300)
                .with_keep_last_turns(0)
                .with_summarization(Summarization::RequestNew);
            set_policy(h, Some(tighter));
        }
        let query = format!("turn {turn}: {}", "please compute this ".repeat(4));
        let d = ask(h, &format!("r{turn}"), &query, None);
        summaries(&d, &mut pending_summary);
        let mut call = record(&d, &mut sent);
        if turn % 7 == 3 {
            // The model refuses the context as too long: the request retries with half the
            // budget, and only the retry is answered.
            sent.pop();
            let failed = LlmFailed {
                call_id: call.clone(),
                error: LlmError {
                    kind: LlmErrorKind::ContextLength,
                    message: "too long".into(),
                    retryable: false,
                    soft_limit: None,
                },
            };
            let d = h.send("llm.failed", serde_json::to_value(failed).unwrap());
            summaries(&d, &mut pending_summary);
            call = record(&d, &mut sent);
        }
        // A summary asked for earlier arrives while this call is out.
        if let Some(summary) = pending_summary.take() {
            let result = SummaryResult::new(
                summary,
                format!("Up to turn {turn} the user asked for products; all were 42."),
            );
            h.send("summary.result", serde_json::to_value(result).unwrap());
        }
        let id = format!("t{turn}");
        let d = h.send("llm.result", tool_call(&call, &id));
        let Some(Directive::ToolExec(exec)) = d.first() else {
            panic!("expected a tool run, got {d:?}")
        };
        let result =
            ToolResultSignal::new(exec.call_id.clone(), ToolResult::ok(&id, "42 ".repeat(30)));
        let d = h.send("tool.result", serde_json::to_value(result).unwrap());
        summaries(&d, &mut pending_summary);
        let call = record(&d, &mut sent);
        h.send(
            "llm.result",
            text(&call, &format!("The answer to turn {turn} is 42.")),
        );
    }
    sent
}

#[test]
fn every_calls_context_is_rebuilt_from_the_thread_byte_for_byte() {
    let policy = ContextPolicy::new()
        .with_max_input_tokens(1_500)
        .with_reserve_output_tokens(300)
        .with_keep_last_turns(0)
        .with_summarization(Summarization::RequestNew);
    let mut h = Harness::on_thread(calculator().with_context_policy(policy));
    let sent = long_session(&mut h);
    let thread = &h.state.thread;
    assert!(thread.latest_summary().is_some() && thread.latest_boundary().is_some());
    // As the store gives it back: the thread's JSON read again.
    let stored: Thread = serde_json::from_str(&serde_json::to_string(thread).unwrap()).unwrap();
    assert_eq!(sent.len(), 60);
    for (call, json) in &sent {
        for thread in [thread, &stored] {
            let again = h
                .react
                .projection_of_call(thread, call.as_str())
                .unwrap_or_else(|| panic!("{call} is not recorded"))
                .unwrap();
            let rebuilt = serde_json::to_string(&(&again.messages, &again.tool_spec)).unwrap();
            assert_eq!(&rebuilt, json, "{call}");
            let seen = thread.entries_before_call(call.as_str()).unwrap();
            assert_eq!(
                again.meta.basis_last_seq,
                seen.last().map(|e| u64::from(e.seq))
            );
            assert_eq!(again.meta.call_id.as_deref(), Some(call.as_str()));
        }
    }
    // A call the thread never answered (the refused one) has no recorded context.
    assert!(h.react.projection_of_call(thread, "call_nope").is_none());
    // A copy per change (the configured policy, each halved retry and the request after it,
    // the tighter one), never two alike in a row.
    let copies = recorded(thread);
    assert!(copies.len() < sent.len() / 4, "{}", copies.len());
    assert!(copies.windows(2).all(|w| w[0] != w[1]));
}

fn big_tools(count: usize) -> ToolDefs {
    (0..count)
        .map(|i| {
            ToolDef::new(
                format!("tool_{i}"),
                "Looks something up in a remote system and returns what it finds there.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "what to look for"},
                    "limit": {"type": "integer", "description": "how many results at most"}
                }}),
            )
        })
        .collect::<Vec<_>>()
        .into()
}

#[test]
fn the_tools_schemas_count_against_the_budget() {
    let env = FixedEnv::new(0);
    let mut thread = Thread::new("t", 0);
    for i in 0..40 {
        thread.append(
            &env,
            NewEntry::user(format!("question {i} {}", "x".repeat(200))),
        );
        thread.append(
            &env,
            NewEntry::assistant(AssistantMessage::text("y".repeat(200)), Usage::default()),
        );
    }
    let policy = ContextPolicy::new()
        .with_max_input_tokens(3_000)
        .with_reserve_output_tokens(0)
        .with_keep_last_turns(0);
    let ids = ProjectionIds::default();
    let run = |tools: &ToolDefs| {
        project(&ProjectionInput {
            thread: &thread,
            policy: &policy,
            pending: &[],
            system: Some("sys"),
            tools,
            ids: &ids,
        })
    };
    let none = run(&ToolDefs::from(Vec::new())).unwrap();
    let many = big_tools(20);
    let with = run(&many).unwrap();
    let schema_tokens = estimate_tools(&Heuristic, &many);
    assert!(schema_tokens > 600, "{schema_tokens}");
    assert_eq!(none.meta.tool_tokens, 0);
    assert_eq!(with.meta.tool_tokens, schema_tokens);
    // The estimate is the messages' plus the schemas', and stays within the budget.
    let messages: u64 = with
        .messages
        .iter()
        .map(|m| u64::from(estimate_message(&Heuristic, m)))
        .sum();
    assert_eq!(with.meta.estimated_tokens, messages + schema_tokens);
    assert!(with.meta.estimated_tokens <= with.meta.budget);
    // The schemas took history's room.
    assert!(with.meta.entries_included < none.meta.entries_included);
    // Tools that alone fill the window are refused, never sent past it.
    let error = run(&big_tools(200)).unwrap_err();
    assert!(
        matches!(error, ProjectionError::FixedSegmentsOverBudget { needed, budget } if needed > budget),
        "{error:?}"
    );
}

#[test]
fn summary_triggers_follow_the_policy() {
    let env = FixedEnv::new(0);
    let mut thread = Thread::new("t", 0);
    let on = ContextPolicy::new().with_summarization(Summarization::RequestNew);
    let entries = on.clone().with_summary_after_entries(4);
    let tokens = on.clone().with_summary_over_tokens(100);
    for i in 0..3 {
        thread.append(&env, NewEntry::user(format!("q{i} {}", "z".repeat(40))));
    }
    // 3 entries of 10 + 43/4 = 20 tokens.
    assert_eq!(thread.tokens_since_summary(), 60);
    assert_eq!(entries.summary_trigger(&thread, false), None);
    assert_eq!(tokens.summary_trigger(&thread, false), None);
    assert_eq!(
        on.summary_trigger(&thread, true),
        Some(SummaryTrigger::Truncated)
    );
    thread.append(&env, NewEntry::user("z".repeat(200)));
    assert_eq!(
        entries.summary_trigger(&thread, false),
        Some(SummaryTrigger::Entries { entries: 4 })
    );
    assert_eq!(
        tokens.summary_trigger(&thread, false),
        Some(SummaryTrigger::Tokens { tokens: 120 })
    );
    // Without `RequestNew` nothing triggers.
    let off = entries
        .clone()
        .with_summarization(Summarization::UseExisting);
    assert_eq!(off.summary_trigger(&thread, true), None);
    // A summary of 0..=2 leaves entry 3 and the summary itself uncovered.
    thread.append(&env, NewEntry::summary(0, 2, "short"));
    assert_eq!(thread.entries_since_summary(), 2);
    assert_eq!(thread.tokens_since_summary(), 60 + 11);
    assert_eq!(entries.summary_trigger(&thread, false), None);
    assert_eq!(tokens.summary_trigger(&thread, false), None);
    // The counters are rebuilt when the thread is read back.
    let back: Thread = serde_json::from_str(&serde_json::to_string(&thread).unwrap()).unwrap();
    assert_eq!(back.tokens_since_summary(), thread.tokens_since_summary());
}

#[test]
fn the_entries_trigger_asks_for_a_summary_of_what_precedes_the_question() {
    let policy = ContextPolicy::new()
        .with_summarization(Summarization::RequestNew)
        .with_keep_last_turns(0)
        .with_summary_after_entries(5);
    let mut h = Harness::on_thread(calculator().with_context_policy(policy));
    let summarize = |d: &[Directive]| {
        d.iter()
            .filter_map(|d| match d {
                Directive::Summarize(s) => Some((s.call_id.clone(), s.from_seq, s.to_seq)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let d = ask(&mut h, "r1", "q1", None);
    assert!(summarize(&d).is_empty());
    h.send("llm.result", text(&stream(&d).call_id, "a1"));
    let d = ask(&mut h, "r2", "q2", None);
    assert!(summarize(&d).is_empty(), "3 entries");
    h.send("llm.result", text(&stream(&d).call_id, "a2"));
    // Five entries: everything before q3 (seq 4) is summarized; q3 stays raw.
    let d = ask(&mut h, "r3", "q3", None);
    let asked = summarize(&d);
    assert_eq!(
        asked.iter().map(|s| (s.1, s.2)).collect::<Vec<_>>(),
        [(0, 3)]
    );
    // Only one at a time: the next call while it is out asks for none.
    let call = stream(&d).call_id.clone();
    let result = SummaryResult::new(asked[0].0.clone(), "q1, q2 answered");
    h.send("summary.result", serde_json::to_value(result).unwrap());
    h.send("llm.result", text(&call, "a3"));
    // From then on the summary stands in for 0..=3.
    let d = ask(&mut h, "r4", "q4", None);
    let shown: Vec<&Message> = stream(&d).request.messages.iter().collect();
    assert!(
        matches!(shown[1], Message::System { content } if content.ends_with("q1, q2 answered")),
        "{shown:?}"
    );
    assert!(summarize(&d).is_empty());
}

fn warnings(directives: &[Directive]) -> Vec<ContextWarning> {
    directives
        .iter()
        .filter_map(|d| match d {
            Directive::Emit(e) if e.signal.signal_type().as_str() == CONTEXT_WARNING => {
                Some(e.signal.data_as::<ContextWarning>().unwrap())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_context_near_its_budget_or_truncated_is_warned_about() {
    let quiet = ContextPolicy::new();
    let mut h = Harness::on_thread(calculator().with_context_policy(quiet));
    assert!(warnings(&ask(&mut h, "r1", "hello", None)).is_empty());

    // Near: the system prompt, the tool and the question fill over 0.5% of 6,000 tokens.
    let near = ContextPolicy::new().with_warn_at(0.005);
    let mut h = Harness::on_thread(calculator().with_context_policy(near));
    let d = ask(&mut h, "r1", "hello", None);
    let got = warnings(&d);
    assert_eq!(got.len(), 1, "{d:?}");
    assert_eq!(got[0].reason, ContextWarningReason::NearBudget);
    assert_eq!(got[0].budget, 6_000);
    assert!(got[0].tool_tokens > 0 && got[0].estimated_tokens >= 30);
    assert_eq!(got[0].call_id.as_deref(), Some(stream(&d).call_id.as_str()));

    // Truncated: a one-message window drops the earlier turn.
    let cut = ContextPolicy::new().with_max_messages(1).with_warn_at(0.0);
    let mut h = Harness::on_thread(calculator().with_context_policy(cut));
    let d = ask(&mut h, "r1", "q1", None);
    assert!(warnings(&d).is_empty());
    h.send("llm.result", text(&stream(&d).call_id, "a1"));
    let got = warnings(&ask(&mut h, "r2", "q2", None));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].reason, ContextWarningReason::Truncated);
}

/// A projector a user might write: the system prompt and the newest message only.
#[derive(Debug)]
struct NewestOnly;

impl Projector for NewestOnly {
    fn project(
        &self,
        input: &ProjectionInput<'_>,
        estimator: &dyn TokenEstimator,
    ) -> Result<ProjectionResult, ProjectionError> {
        let mut full = project_with(input, estimator)?;
        let keep = full
            .messages
            .split_off(full.messages.len().saturating_sub(1));
        full.messages.truncate(1);
        full.messages.extend(keep);
        Ok(full)
    }
}

#[test]
fn a_projector_the_user_supplies_builds_the_context_and_its_rebuild() {
    let mut h = Harness::on_thread(calculator().with_projector(NewestOnly));
    let d = ask(&mut h, "r1", "q1", None);
    h.send("llm.result", text(&stream(&d).call_id, "a1"));
    let d = ask(&mut h, "r2", "q2", None);
    let s = stream(&d);
    assert_eq!(
        s.request.messages,
        [
            Message::system("You are a calculator."),
            Message::user("q2")
        ]
    );
    let call = s.call_id.clone();
    let messages = s.request.messages.clone();
    h.send("llm.result", text(&call, "a2"));
    let again = h
        .react
        .projection_of_call(&h.state.thread, call.as_str())
        .unwrap()
        .unwrap();
    assert_eq!(again.messages, messages);
}

#[test]
fn the_previous_calls_usage_calibrates_the_estimate() {
    let mut h = Harness::on_thread(calculator());
    assert!(h.state.thread.calibration().is_none());
    let d = ask(&mut h, "r1", "q1", None);
    let call = stream(&d).call_id.clone();
    // The provider counted 1.5 times what the projection estimated.
    let estimated = sent_estimate(&d);
    let counted = estimated * 3 / 2;
    let result = LlmResult {
        call_id: call,
        response: LlmResponse::new(
            AssistantMessage::text("a1"),
            Usage {
                input_tokens: counted,
                ..Usage::default()
            },
        ),
    };
    h.send("llm.result", serde_json::to_value(result).unwrap());
    let calibrated = h.state.thread.calibration().unwrap();
    assert_eq!(calibrated.per_mille(), 1_500);
    assert_eq!(calibrated.estimate_parts(&["x".repeat(400).as_str()]), 165);
}

/// What the projection estimated for the call `directives` ask for: its messages and tools.
fn sent_estimate(directives: &[Directive]) -> u64 {
    let s = stream(directives);
    s.request
        .messages
        .iter()
        .map(|m| u64::from(estimate_message(&Heuristic, m)))
        .sum::<u64>()
        + estimate_tools(&Heuristic, &s.request.tools)
}

#[test]
fn a_calibrated_policy_reads_its_budget_at_the_latest_calls_ratio() {
    let policy = ContextPolicy::new().with_token_estimator(motet_agents::EstimatorKind::Calibrated);
    let mut h = Harness::on_thread(calculator().with_context_policy(policy));
    let answer = |call: &CallId, counted: u64| {
        serde_json::to_value(LlmResult {
            call_id: call.clone(),
            response: LlmResponse::new(
                AssistantMessage::text("a"),
                Usage {
                    input_tokens: counted,
                    ..Usage::default()
                },
            ),
        })
        .unwrap()
    };
    let budget = |h: &Harness, call: &CallId| {
        h.react
            .projection_of_call(&h.state.thread, call.as_str())
            .unwrap()
            .unwrap()
            .meta
            .budget
    };
    // Nothing counted yet: the whole budget.
    let d = ask(&mut h, "r1", "q1", None);
    let first = stream(&d).call_id.clone();
    h.send("llm.result", answer(&first, 0));
    assert_eq!(budget(&h, &first), 6_000);
    // The provider counts twice what the heuristic estimated for the second call...
    let d = ask(&mut h, "r2", "q2", None);
    let second = stream(&d).call_id.clone();
    h.send("llm.result", answer(&second, 2 * sent_estimate(&d)));
    assert_eq!(budget(&h, &second), 6_000);
    // ...so the third reads the budget at that ratio: half, in heuristic tokens.
    let d = ask(&mut h, "r3", "q3", None);
    let third = stream(&d).call_id.clone();
    h.send("llm.result", answer(&third, 0));
    assert_eq!(budget(&h, &third), 3_000);
}
