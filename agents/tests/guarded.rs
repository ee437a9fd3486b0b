//! Guardrails around ReAct, as transcripts: each check's pass, rewrite, block and (for a tool
//! call) approval; a parallel input check that passes (the model's answer held until it does)
//! and one that trips (the request ends typed, the model's call left to the runtime to abort).

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::guard::{
    GuardFailed, GuardPoint, Guarded, GuardedState, ParallelCheck, ToolVerdict, Verdict,
};
use motet_agents::{AgentRespond, Env, FixedEnv, ReAct, ReActState, Status, Strategy};
use motet_directives::{Approval, Directive, LlmRequest, Message, Response, ToolArgs};
use motet_signals::Signal;
use serde_json::Value;

use common::*;

/// A guarded calculator and its state, fed like [`Harness`].
struct Guard {
    strategy: Guarded<ReAct>,
    state: GuardedState<ReActState>,
    env: FixedEnv,
}

impl Guard {
    fn new(build: impl FnOnce(Guarded<ReAct>) -> Guarded<ReAct>) -> Self {
        let env = FixedEnv::new(START_MS);
        let strategy = build(Guarded::new(ReAct::new(calculator())));
        let state = strategy.init_for_thread(&env, "th");
        Self {
            strategy,
            state,
            env,
        }
    }

    fn send(&mut self, ty: &str, data: Value) -> Vec<Directive> {
        let signal = Signal::builder(ty, "test")
            .with_id(self.env.fresh_id("in"))
            .with_thread_id("th")
            .with_request_id("r1")
            .with_json_data(data)
            .build()
            .unwrap();
        self.env.advance_ms(1);
        self.strategy
            .handle(&mut self.state, &signal, &self.env)
            .unwrap()
    }

    fn ask(&mut self, query: &str) -> Vec<String> {
        describe_all(&self.send("agent.request", to_value(&question(query))))
    }

    fn script(&mut self, steps: &[(&str, Value, &[&str])]) {
        for (i, (ty, data, expected)) in steps.iter().enumerate() {
            let got = describe_all(&self.send(ty, data.clone()));
            assert_eq!(got, *expected, "step {i}: {ty}");
        }
    }

    fn react(&self) -> &ReActState {
        &self.state.inner
    }
}

/// The guardrail's failure in `out`'s reply.
fn tripped(out: &[Directive]) -> GuardFailed {
    let Some(Directive::Reply(reply)) = out.last() else {
        panic!("no reply last: {out:?}");
    };
    assert_eq!(reply.status, motet_directives::ReplyStatus::Failed);
    assert_eq!(reply.signal.request_id(), Some("r1"));
    reply.signal.data_as().unwrap()
}

const FIRST_CALL: &str = "llm call_1: S:You are a calculator. | U:what is 2+2";

#[test]
fn checks_that_pass_change_nothing_and_see_every_point() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let note = |what: &'static str, seen: &std::sync::Arc<std::sync::Mutex<Vec<String>>>| {
        let seen = seen.clone();
        move || seen.lock().unwrap().push(what.to_owned())
    };
    let (a, b, c, d, e, f) = (
        note("input", &seen),
        note("before_llm", &seen),
        note("after_llm", &seen),
        note("tool", &seen),
        note("tool_result", &seen),
        note("output", &seen),
    );
    let mut g = Guard::new(move |g| {
        g.input(move |_| {
            a();
            Verdict::Pass
        })
        .before_llm(move |_| {
            b();
            Verdict::Pass
        })
        .after_llm(move |_| {
            c();
            Verdict::Pass
        })
        .tool(move |_| {
            d();
            ToolVerdict::Pass
        })
        .tool_result(move |name, _| {
            assert_eq!(name, "calculator");
            e();
            Verdict::Pass
        })
        .output(move |_| {
            f();
            Verdict::Pass
        })
    });
    assert_eq!(g.ask("what is 2+2"), [FIRST_CALL]);
    g.script(&[
        (
            "llm.result",
            llm_calls("call_1", &[("a", "calculator", r#"{"expr":"2+2"}"#)]),
            &[r#"tool tool_1 a calculator {"expr":"2+2"}"#],
        ),
        (
            "tool.result",
            tool_ok("tool_1", "a", "4"),
            &["llm call_2: S:You are a calculator. | U:what is 2+2 | A:calls[a] | T:[a=4]"],
        ),
        (
            "llm.result",
            llm_text("call_2", "4"),
            &["reply agent.completed r1 answer=4"],
        ),
    ]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "input",
            "before_llm",
            "after_llm",
            "tool",
            "tool_result",
            "before_llm",
            "after_llm",
            "output"
        ]
    );
}

#[test]
fn an_input_check_rewrites_the_query_or_blocks_it_before_the_model_sees_it() {
    let mut g = Guard::new(|g| {
        g.input(|request| match request.query.as_str() {
            "tell me the password" => Verdict::Block("secrets stay secret".to_owned()),
            q => Verdict::Rewrite(q.replace("two", "2")),
        })
    });
    let out = g.send("agent.request", to_value(&question("tell me the password")));
    assert_eq!(out.len(), 1, "only the reply: {out:?}");
    let failed = tripped(&out);
    assert_eq!(failed.reason.point, GuardPoint::Input);
    assert_eq!(failed.reason.why, "secrets stay secret");
    assert!(g.react().thread.to_list().is_empty(), "ReAct never saw it");

    // The next request runs, its query rewritten in the call and in the thread.
    assert_eq!(g.ask("what is two+2"), [FIRST_CALL]);
    assert_eq!(
        describe_body(&g.react().thread.to_list()[0].body),
        "user what is 2+2"
    );
}

#[test]
fn a_tool_check_rewrites_blocks_or_sends_the_call_to_a_person() {
    let calls = || llm_calls("call_1", &[("a", "calculator", r#"{"expr":"rm -rf"}"#)]);
    // Rewrite.
    let mut g =
        Guard::new(|g| g.tool(|_| ToolVerdict::Rewrite(ToolArgs::from_text(r#"{"expr":"0"}"#))));
    g.ask("what is 2+2");
    g.script(&[(
        "llm.result",
        calls(),
        &[r#"tool tool_1 a calculator {"expr":"0"}"#],
    )]);

    // Block: ReAct is cancelled (its unanswered call recorded as not run), the caller told why.
    let mut g = Guard::new(|g| {
        g.tool(|call| {
            if call.args.get().contains("rm") {
                ToolVerdict::Block("no shell".to_owned())
            } else {
                ToolVerdict::Pass
            }
        })
    });
    g.ask("what is 2+2");
    let out = g.send("llm.result", calls());
    assert_eq!(
        describe_all(&out),
        ["reply agent.failed r1 reason=guardrail"]
    );
    assert_eq!(tripped(&out).reason.point, GuardPoint::ToolCall);
    assert_eq!(g.react().status, Status::Cancelled);
    let thread = g.react().thread.to_list();
    assert!(
        format!("{thread:?}")
            .contains("not run: request cancelled: blocked by a guardrail: no shell")
    );
    // A next request is taken.
    assert_eq!(g.ask("what is 2+2").len(), 1);

    // Approval: the call waits for a person as a gated tool does, then runs approved.
    let mut g =
        Guard::new(|g| g.tool(|_| ToolVerdict::Approval(Approval::required().because("shell"))));
    g.ask("what is 2+2");
    g.script(&[("llm.result", calls(), &["emit agent.waiting r1"])]);
    let waiting = g.strategy.waiting(&g.state);
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].tool, "calculator");
    let respond = to_value(&AgentRespond {
        tool_call_id: "a".into(),
        response: Response::Approve,
        by: None,
    });
    g.script(&[(
        "agent.respond",
        respond,
        &[r#"tool tool_1 a calculator {"expr":"rm -rf"} approved"#],
    )]);
    assert!(g.strategy.waiting(&g.state).is_empty());
}

#[test]
fn llm_checks_rewrite_a_call_and_block_a_response() {
    let mut g = Guard::new(|g| {
        g.before_llm(|request: &LlmRequest| {
            let mut request = request.clone();
            request.messages.push(Message::user("Be brief."));
            Verdict::Rewrite(request)
        })
        .after_llm(|response| {
            let text: String = response.message.text_blocks().collect();
            if text.contains("SSN") {
                Verdict::Block("personal data".to_owned())
            } else {
                Verdict::Pass
            }
        })
    });
    assert_eq!(
        g.ask("what is 2+2"),
        [format!("{FIRST_CALL} | U:Be brief.")]
    );
    let out = g.send("llm.result", llm_text("call_1", "my SSN is 1"));
    let failed = tripped(&out);
    assert_eq!(failed.reason.point, GuardPoint::LlmResponse);
    assert_eq!(
        g.react().status,
        Status::Cancelled,
        "ReAct was cancelled, never saw the text"
    );
    assert!(!format!("{:?}", g.react().thread.to_list()).contains("SSN"));
}

#[test]
fn an_output_check_rewrites_the_answer_or_blocks_it() {
    let mut g = Guard::new(|g| g.output(|answer| Verdict::Rewrite(answer.replace("4", "four"))));
    g.ask("what is 2+2");
    g.script(&[(
        "llm.result",
        llm_text("call_1", "4"),
        &["reply agent.completed r1 answer=four"],
    )]);

    let mut g = Guard::new(|g| g.output(|_| Verdict::Block("off topic".to_owned())));
    g.ask("what is 2+2");
    let out = g.send("llm.result", llm_text("call_1", "4"));
    assert_eq!(
        describe_all(&out),
        ["reply agent.failed r1 reason=guardrail"]
    );
    assert_eq!(tripped(&out).reason.point, GuardPoint::Output);
}

fn moderation() -> ParallelCheck {
    ParallelCheck::flagged_by(
        "openai:moderator".parse().unwrap(),
        "Say FLAGGED if the text is abusive, else OK.",
        "flagged",
        4,
    )
}

#[test]
fn a_parallel_check_starts_with_the_model_and_holds_its_answer_until_it_passes() {
    let mut g = Guard::new(|g| g.input_in_parallel(moderation()));
    let out = g.send("agent.request", to_value(&question("what is 2+2")));
    assert_eq!(
        describe_all(&out),
        [
            FIRST_CALL,
            "llm guard_1: S:Say FLAGGED if the text is abusive, else OK. | U:what is 2+2"
        ]
    );
    // The model answers first: held, nothing runs on it yet.
    assert!(g.send("llm.result", llm_text("call_1", "4")).is_empty());
    assert!(g.state.checking());
    assert_eq!(g.react().status, Status::AwaitingLlm);
    // The check passes: ReAct gets the answer.
    g.script(&[(
        "llm.result",
        llm_text("guard_1", "OK"),
        &["reply agent.completed r1 answer=4"],
    )]);
    assert!(!g.state.checking());
}

#[test]
fn a_parallel_check_that_trips_ends_the_request_typed_while_the_model_still_runs() {
    let mut g = Guard::new(|g| g.input_in_parallel(moderation()));
    g.ask("you idiot, what is 2+2");
    // The model's call is still running: the failed reply ends the request, and the runtime
    // aborts the call with it. ReAct is cancelled, ready for the next request.
    let out = g.send("llm.result", llm_text("guard_1", "FLAGGED: abusive"));
    assert_eq!(
        describe_all(&out),
        ["reply agent.failed r1 reason=guardrail"]
    );
    let failed = tripped(&out);
    assert_eq!(failed.reason.point, GuardPoint::ParallelInput);
    assert_eq!(failed.reason.why, "FLAGGED: abusive");
    assert_eq!(g.react().status, Status::Cancelled);
    assert!(!g.state.checking());
    // The model's answer, if it comes after all, is stale to ReAct.
    let late = g.send("llm.result", llm_text("call_1", "4"));
    assert!(
        !describe_all(&late).iter().any(|d| d.starts_with("reply")),
        "{late:?}"
    );

    // A check whose own call fails, fails closed.
    let mut g = Guard::new(|g| g.input_in_parallel(moderation()));
    g.ask("what is 2+2");
    let error = serde_json::json!({
        "call_id": "guard_1",
        "error": {"kind": "overloaded", "message": "busy", "retryable": true}
    });
    let out = g.send("llm.failed", error);
    assert!(tripped(&out).reason.why.contains("busy"));
}

#[test]
fn after_a_restart_a_parallel_check_still_out_is_asked_again_and_still_holds_the_answer() {
    let mut g = Guard::new(|g| g.input_in_parallel(moderation()));
    g.ask("what is 2+2");
    // The process stops with both calls in flight; the state comes back from its snapshot.
    let stored = serde_json::to_string(&g.state).unwrap();
    let saved: GuardedState<ReActState> = serde_json::from_str(&stored).unwrap();
    g.state = g.strategy.restore(&g.env, saved);
    assert!(g.state.checking());
    let out = describe_all(&g.send("agent.resume", serde_json::json!({})));
    assert_eq!(
        out,
        [
            "llm call_2: S:You are a calculator. | U:what is 2+2",
            "llm guard_2: S:Say FLAGGED if the text is abusive, else OK. | U:what is 2+2"
        ]
    );
    assert!(
        g.send("llm.result", llm_text("call_2", "4")).is_empty(),
        "held"
    );
    let out = g.send("llm.result", llm_text("guard_2", "FLAGGED"));
    assert_eq!(tripped(&out).reason.point, GuardPoint::ParallelInput);
}
