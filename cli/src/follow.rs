//! Following a request until it has its answer or stops to wait for a person: what `run`,
//! `approve`, `reject` and `answer` do after they send something.
//!
//! A request that waits for a person stays stored as it is when the process exits, so a
//! command may return as soon as nothing else is in flight: every tool call of the request's
//! last turn has its result or waits. Until then a call still runs (an approved call, or an
//! ungated call beside a gated one), and returning would cut it off.

use std::time::Duration;

use motet::agents::{EntryBody, Thread, Waiting};
use motet::directives::AssistantBlock;
use motet::runtime::agent::{AgentHandle, Answer, AskError, Ticket};

use crate::error::CliError;

/// How often the stored waits are looked at while a request runs.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// Where a followed request stopped.
#[derive(Debug)]
pub enum Followed {
    /// It has its answer.
    Answered(Answer),
    /// It waits for a person on these calls, and nothing of it runs.
    Waits(Vec<Waiting>),
}

/// Follows `ticket` of `agent` until it is answered or waits for a person with nothing in
/// flight. `answered` is a call the caller has just responded to: the request is not taken to
/// be waiting again before that call has its result.
///
/// # Errors
/// The ticket's [`AskError`] (its failure reply, or its timeout); a store that cannot be read
/// as [`CliError::Runtime`].
pub async fn follow(
    agent: &AgentHandle,
    ticket: Ticket,
    answered: Option<&str>,
) -> Result<Result<Followed, AskError>, CliError> {
    let thread = ticket.thread().to_owned();
    let request = ticket.id().to_owned();
    let answer = ticket.wait();
    tokio::pin!(answer);
    let mut look = tokio::time::interval(LOOK_EVERY);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            outcome = &mut answer => return Ok(outcome.map(Followed::Answered)),
            _ = look.tick() => {
                let mut waits = agent
                    .waiting(Some(&thread))
                    .await
                    .map_err(crate::agent::runtime_failure)?;
                waits.retain(|w| w.request_id == request);
                if waits.is_empty() {
                    continue;
                }
                let stored = agent
                    .get_thread(Some(&thread))
                    .await
                    .map_err(crate::agent::runtime_failure)?;
                if stored.is_some_and(|t| settled(&t, &request, &waits, answered)) {
                    return Ok(Ok(Followed::Waits(waits)));
                }
            }
        }
    }
}

/// Whether request `request` of `thread` waits for a person (`waits`, its calls that wait)
/// with nothing of it in flight: `answered` has its result, and every tool call of the
/// request's last turn has a result or waits — or its next LLM call is held at a soft budget
/// limit.
pub fn settled(thread: &Thread, request: &str, waits: &[Waiting], answered: Option<&str>) -> bool {
    let all_waits = waits;
    let waits: Vec<&str> = waits
        .iter()
        .filter(|w| w.request_id == request)
        .map(|w| w.tool_call_id.as_str())
        .collect();
    if waits.is_empty() || answered.is_some_and(|call| waits.contains(&call)) {
        return false;
    }
    // Held at a soft budget limit: the request's next call was not sent, so nothing of it runs.
    let budget_wait = |w: &&Waiting| w.tool == motet::agents::BUDGET_WAIT_TOOL;
    if all_waits
        .iter()
        .filter(|w| w.request_id == request)
        .any(|w| budget_wait(&w))
    {
        return true;
    }
    let entries = thread.to_list();
    let of_request = |refs: &motet::agents::Refs| refs.request_id.as_deref() == Some(request);
    let Some(turn) = entries
        .iter()
        .rposition(|e| of_request(&e.refs) && matches!(e.body, EntryBody::Assistant { .. }))
    else {
        return false;
    };
    let EntryBody::Assistant { message, .. } = &entries[turn].body else {
        return false;
    };
    let has_result = |call: &str| {
        entries[turn..].iter().any(|e| {
            matches!(&e.body, EntryBody::ToolResult { result, .. } if result.tool_use_id == call)
        })
    };
    let calls: Vec<&str> = message
        .blocks
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    let answered_done = answered.is_none_or(|call| !calls.contains(&call) || has_result(call));
    answered_done
        && calls
            .iter()
            .all(|call| waits.contains(call) || has_result(call))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use motet::agents::{FixedEnv, NewEntry, Refs};
    use motet::directives::{
        Approval, AssistantMessage, Pause, StopReason, ToolArgs, ToolResult, Usage,
    };

    use super::*;

    fn turn(calls: &[&str]) -> Thread {
        let env = FixedEnv::new(1);
        let refs = Refs::request("r1");
        let mut thread = Thread::new("cli/t", 1);
        thread.append(&env, NewEntry::user("q").with_refs(refs.clone()));
        let blocks = calls
            .iter()
            .map(|id| AssistantBlock::tool_use(*id, "calculator", ToolArgs::from_text("{}")))
            .collect();
        let message = AssistantMessage {
            blocks,
            stop_reason: StopReason::ToolUse,
        };
        thread.append(
            &env,
            NewEntry::assistant(message, Usage::default()).with_refs(refs),
        );
        thread
    }

    fn result(thread: &mut Thread, call: &str) {
        thread.append(
            &FixedEnv::new(2),
            NewEntry::tool_result("calculator", ToolResult::ok(call, "1"))
                .with_refs(Refs::request("r1")),
        );
    }

    fn wait(call: &str) -> Waiting {
        Waiting {
            agent: "cli".into(),
            thread: "t".into(),
            request_id: "r1".into(),
            tool_call_id: call.into(),
            tool: "calculator".into(),
            args: ToolArgs::from_text("{}"),
            pause: Pause::Approval(Approval::required()),
            since_ms: 1,
            deadline_ms: None,
        }
    }

    #[test]
    fn a_turn_whose_calls_all_wait_or_have_results_is_settled() {
        let mut thread = turn(&["a", "b"]);
        assert!(settled(&thread, "r1", &[wait("a"), wait("b")], None));
        // `b` runs (an ungated call beside a gated one): not yet.
        assert!(!settled(&thread, "r1", &[wait("a")], None));
        result(&mut thread, "b");
        assert!(settled(&thread, "r1", &[wait("a")], None));
    }

    #[test]
    fn a_call_just_answered_must_have_its_result_first() {
        let mut thread = turn(&["a", "b"]);
        // The response is not yet taken in: `a` still waits.
        assert!(!settled(&thread, "r1", &[wait("a"), wait("b")], Some("a")));
        // Approved and running.
        assert!(!settled(&thread, "r1", &[wait("b")], Some("a")));
        result(&mut thread, "a");
        assert!(settled(&thread, "r1", &[wait("b")], Some("a")));
    }

    #[test]
    fn a_call_held_at_a_soft_budget_limit_is_settled_once_the_answered_one_is_taken_in() {
        let mut thread = turn(&["a"]);
        result(&mut thread, "a");
        let mut held = wait("budget:call_2");
        held.tool = motet::agents::BUDGET_WAIT_TOOL.into();
        assert!(settled(&thread, "r1", std::slice::from_ref(&held), None));
        // Just approved, not yet taken in: it still waits.
        assert!(!settled(
            &thread,
            "r1",
            std::slice::from_ref(&held),
            Some("budget:call_2")
        ));
        // Before any turn of the request (its first call held).
        let asked = Thread::new("cli/t", 1);
        assert!(settled(&asked, "r1", &[held], None));
    }

    #[test]
    fn nothing_waiting_or_another_requests_waits_is_not_settled() {
        let thread = turn(&["a"]);
        assert!(!settled(&thread, "r1", &[], None));
        let mut other = wait("a");
        other.request_id = "r2".into();
        assert!(!settled(&thread, "r1", &[other], None));
        assert!(!settled(&thread, "r2", &[wait("a")], None));
    }
}
