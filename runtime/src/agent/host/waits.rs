//! The tool calls a thread waits on a person for, as the runtime watches them: a span and a
//! gauge while each waits, a duration when it ends, and the request's status
//! (`awaiting_approval`, `awaiting_answer`) in the request records.
//!
//! The strategy says what waits ([`Strategy::waiting`]); after each commit the actor compares
//! that with what it watched before. A wait the strategy no longer lists ended — answered by
//! the step's `agent.respond` (its kind, or `deadline`), or with its request (`ended`).

use motet_agents::{AGENT_RESPOND, AgentRespond, Waiting};
use motet_signals::Signal;
use opentelemetry::KeyValue;

use super::tracked::{Here, OpenWait, Tracked};
use crate::agent::requests::RequestStatus;
use crate::agent::trace;
use crate::telemetry::instruments;

/// Brings the watched waits in line with `waiting` after a step caused by `cause`.
pub(crate) fn watch(here: &Here<'_>, tracked: &mut Tracked, waiting: &[Waiting], cause: &Signal) {
    if waiting.is_empty() && tracked.waits().is_empty() {
        return;
    }
    let same = |open: &OpenWait, w: &Waiting| {
        open.tool_call_id == w.tool_call_id && open.request_id == w.request_id
    };
    let response = (cause.signal_type().as_str() == AGENT_RESPOND)
        .then(|| cause.data_as::<AgentRespond>().ok())
        .flatten();
    let now = motet_agents::Env::now_ms(&crate::agent::env::SystemEnv);
    let mut changed = Vec::new();
    let open = tracked
        .occasional
        .as_mut()
        .map(|o| std::mem::take(&mut o.waits))
        .unwrap_or_default();
    let (mut kept, ended): (Vec<OpenWait>, Vec<OpenWait>) = open
        .into_iter()
        .partition(|open| waiting.iter().any(|w| same(open, w)));
    for open in ended {
        let outcome = match &response {
            Some(r) if r.tool_call_id == open.tool_call_id => match r.by.as_deref() {
                Some("deadline") => "deadline",
                _ => r.response.kind(),
            },
            _ => "ended",
        };
        let waited = now.saturating_sub(open.since_ms) as f64 / 1000.0;
        instruments().wait_duration.record(
            waited,
            &[
                KeyValue::new("motet.wait.kind", open.kind),
                KeyValue::new("motet.wait.outcome", outcome),
            ],
        );
        if !open.span.is_disabled() {
            open.span.record("motet.wait.outcome", outcome);
        }
        changed.push(open.request_id.clone());
    }
    for w in waiting {
        if kept.iter().any(|open| same(open, w)) {
            continue;
        }
        let parent = tracked.span(&w.request_id).and_then(|t| t.span.id());
        let span = trace::wait_span(here.agent, here.thread, w, parent);
        let kind = trace::wait_kind(w);
        instruments()
            .waiting
            .add(1, &[KeyValue::new("motet.wait.kind", kind)]);
        kept.push(OpenWait {
            request_id: w.request_id.clone(),
            tool_call_id: w.tool_call_id.clone(),
            kind,
            since_ms: w.since_ms,
            span,
        });
        changed.push(w.request_id.clone());
    }
    if !kept.is_empty() {
        tracked.occasional().waits = kept;
    }
    changed.sort();
    changed.dedup();
    for request in changed {
        let waits = || waiting.iter().filter(|w| w.request_id == request);
        let status = if waits().any(|w| w.pause.is_approval()) {
            RequestStatus::AwaitingApproval
        } else if waits().next().is_some() {
            RequestStatus::AwaitingAnswer
        } else {
            RequestStatus::Running
        };
        here.core.requests.waits(&request, status);
    }
}
