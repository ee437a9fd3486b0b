//! A soft budget limit in the loop: the runtime held the request's LLM call at a soft limit
//! (`llm.failed` of kind `budget_approval`), so the request waits for a person — listed and
//! answered like a tool call's approval, under the pseudo-tool [`BUDGET_WAIT_TOOL`]. An
//! approval sends the call again carrying the limit approved (the runtime then admits it up to
//! the next soft step or the hard limit); a rejection ends the request with a `budget` failure.

use motet_directives::budget::SoftLimit;
use motet_directives::results::{LlmError, LlmErrorKind};
use motet_directives::{Approval, CallId, Directive, Pause, Response, ToolArgs};

use super::state::{BudgetWait, ReActState, Status};
use super::{FailureReason, ReAct, Step, take_in_steers};
use crate::error::StrategyError;
use crate::protocol::{AgentRespond, Waiting};
use crate::thread::{NewEntry, Refs};

/// The `tool` a budget wait is listed under (no tool a provider accepts has a dot in its name,
/// so it never names a real one).
pub const BUDGET_WAIT_TOOL: &str = "motet.budget";

/// The id a budget wait is answered by: one per held call.
fn wait_id(call_id: &CallId) -> String {
    format!("budget:{}", call_id.as_str())
}

impl ReAct {
    /// The request's call `call_id` was held at `soft_limit`: the request waits for a person,
    /// noted in the thread and announced as `agent.waiting`.
    pub(super) fn on_soft_limit(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        call_id: &CallId,
        soft_limit: SoftLimit,
        question: &str,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(request) = state.request.as_mut() else {
            return Ok(Vec::new());
        };
        let waiting = Waiting {
            agent: String::new(),
            thread: String::new(),
            request_id: request.request_id.to_string(),
            tool_call_id: wait_id(call_id),
            tool: BUDGET_WAIT_TOOL.to_owned(),
            args: ToolArgs::from_text(serde_json::to_string(&soft_limit).unwrap_or_default()),
            pause: Pause::Approval(Approval::required().because(question)),
            since_ms: step.env.now_ms(),
            deadline_ms: None,
        };
        request.llm_call = None;
        request.budget_wait = Some(Box::new(BudgetWait {
            soft_limit,
            waiting: waiting.clone(),
        }));
        let refs = Refs::request(request.request_id.clone())
            .with_call_id(call_id.shared())
            .with_iteration(request.iteration);
        let note = format!("budget: {question} (waits for a person's approval)");
        state
            .thread
            .append(step.env, NewEntry::note(note).with_refs(refs));
        state.status = Status::AwaitingApproval;
        self.announce(state, step, &waiting)
    }

    /// A person's response to the request's budget wait: an approval sends the call again,
    /// past the limit; a rejection fails the request. `None` when `respond` does not answer a
    /// budget wait of the running request (or is an edit or an answer, which do not fit one):
    /// it is then handled as a tool call's response.
    pub(super) fn on_budget_respond(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        respond: &AgentRespond,
    ) -> Option<Result<Vec<Directive>, StrategyError>> {
        let named = step.cause.request_id();
        let waiting = state.status == Status::AwaitingApproval;
        let request = state
            .request
            .as_mut()
            .filter(|_| waiting)
            .filter(|r| named.is_none_or(|id| *id == *r.request_id))?;
        let wait = request
            .budget_wait
            .as_ref()
            .filter(|w| w.waiting.tool_call_id == respond.tool_call_id)?;
        if !matches!(
            respond.response,
            Response::Approve | Response::Reject { .. }
        ) {
            return None;
        }
        let question = match &wait.waiting.pause {
            Pause::Approval(approval) => approval.reason.clone(),
            Pause::Question { .. } => None,
        }
        .unwrap_or_else(|| "a soft budget limit was reached".to_owned());
        let soft_limit = wait.soft_limit;
        request.budget_wait = None;
        let by = respond.by.as_deref().unwrap_or("a person");
        let refs = Refs::request(request.request_id.clone()).with_iteration(request.iteration);
        if let Response::Reject { reason } = &respond.response {
            let error = LlmError {
                kind: LlmErrorKind::Budget,
                message: format!("{by} declined to go on past a soft limit ({question}): {reason}"),
                retryable: false,
                soft_limit: Some(soft_limit),
            };
            return Some(self.fail(state, step, FailureReason::Llm { error }));
        }
        SoftLimit::approve(&mut request.budget_approved, soft_limit);
        let note = format!("budget: approved by {by} ({question})");
        state
            .thread
            .append(step.env, NewEntry::note(note).with_refs(refs));
        take_in_steers(state, step);
        Some(self.stream(state, step))
    }
}
