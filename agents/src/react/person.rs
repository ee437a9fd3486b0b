//! A person in the loop: tool calls that wait for an approval or an answer (`tool.paused`),
//! and the person's response (`agent.respond`) that resumes them.
//!
//! A paused call is recorded on its [`PendingTool`] (and so in every snapshot the runtime
//! stores), noted in the thread, and announced as `agent.waiting`; an approval with a deadline
//! schedules its own `agent.respond`. The turn's other calls run meanwhile. An approval runs
//! the call (with the person's arguments when they edited them); a rejection or an answer is
//! committed as the call's result. Once every call of the turn has its result, the request
//! goes on as after any tool turn.

use motet_directives::results::ToolPaused;
use motet_directives::{
    ArcStr, CallId, CancelSchedule, Directive, Emit, EmitTarget, OnExpiry, Pause, Response,
    Schedule, ScheduleId, ToolArgs, ToolExec, ToolResult,
};

use super::state::{PendingTool, ReActState, RequestState};
use super::{ReAct, Step, TOOL_PAUSED, ignore};
use crate::error::StrategyError;
use crate::protocol::{AGENT_RESPOND, AGENT_WAITING, AgentRespond, Waiting};
use crate::thread::{NewEntry, Refs};

/// Who answered when a deadline did.
pub(super) const BY_DEADLINE: &str = "deadline";

impl ReAct {
    /// A tool call of the turn waits for a person: recorded, noted, announced, and — for an
    /// approval with a deadline — timed.
    pub(super) fn on_tool_paused(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        paused: ToolPaused,
    ) -> Result<Vec<Directive>, StrategyError> {
        let awaiting = state.status.awaits_tools();
        let Some(request) = state.request.as_mut().filter(|_| awaiting) else {
            return Ok(ignore(state, step, TOOL_PAUSED, &paused.call_id));
        };
        let Some(tool) = request
            .tools
            .iter_mut()
            .find(|t| t.call_id == paused.call_id && !t.done && t.waiting.is_none())
        else {
            return Ok(ignore(state, step, TOOL_PAUSED, &paused.call_id));
        };
        let now = step.env.now_ms();
        let deadline_ms = paused
            .pause
            .deadline()
            .map(|d| now.saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)));
        let waiting = Waiting {
            agent: String::new(),
            thread: String::new(),
            request_id: request.request_id.to_string(),
            tool_call_id: tool.tool_call_id.to_string(),
            tool: tool.name.clone(),
            args: paused.args,
            pause: paused.pause,
            since_ms: now,
            deadline_ms,
        };
        tool.waiting = Some(Box::new(waiting.clone()));
        let note = match &waiting.pause {
            Pause::Approval(approval) => match &approval.reason {
                Some(reason) => format!("`{}` waits for approval: {reason}", waiting.tool),
                None => format!("`{}` waits for approval", waiting.tool),
            },
            Pause::Question { text } => format!("`{}` asks a person: {text}", waiting.tool),
        };
        let refs = tool_refs(
            &request.request_id,
            request.iteration,
            request.turn_call.as_ref(),
            tool,
        );
        state
            .thread
            .append(step.env, NewEntry::note(note).with_refs(refs));
        state.settle();
        self.announce(state, step, &waiting)
    }

    /// `agent.waiting` on the bus for `waiting`, and its deadline's timer.
    pub(super) fn announce(
        &self,
        state: &ReActState,
        step: &Step<'_>,
        waiting: &Waiting,
    ) -> Result<Vec<Directive>, StrategyError> {
        let mut directives = vec![Directive::Emit(Emit {
            signal: self.signal(state, step, AGENT_WAITING, &waiting.request_id, waiting)?,
            target: EmitTarget::Bus,
        })];
        if let (Pause::Approval(approval), Some(deadline_ms)) =
            (&waiting.pause, waiting.deadline_ms)
        {
            let response = match approval.on_expiry {
                OnExpiry::Approve => Response::Approve,
                OnExpiry::Reject => Response::Reject {
                    reason: "nobody approved the call in time".to_owned(),
                },
            };
            let respond = AgentRespond {
                tool_call_id: waiting.tool_call_id.clone(),
                response,
                by: Some(BY_DEADLINE.to_owned()),
            };
            let delay = deadline_ms.saturating_sub(step.env.now_ms());
            directives.push(Directive::Schedule(Schedule {
                schedule_id: deadline_id(&waiting.tool_call_id),
                delay: std::time::Duration::from_millis(delay),
                signal: self.signal(state, step, AGENT_RESPOND, &waiting.request_id, &respond)?,
            }));
        }
        Ok(directives)
    }

    /// A person's response to a paused call: an approval runs it, a rejection or an answer is
    /// its result. One for a call that does not wait (answered already, unknown, another
    /// request's) or that does not fit what it waits for is noted and changes nothing.
    pub(super) fn on_respond(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        respond: AgentRespond,
    ) -> Result<Vec<Directive>, StrategyError> {
        if let Some(answered) = self.on_budget_respond(state, step, &respond) {
            return answered;
        }
        let named = step.cause.request_id();
        let awaiting = state.status.awaits_tools();
        let found = state
            .request
            .as_mut()
            .filter(|_| awaiting)
            .filter(|r| named.is_none_or(|id| *id == *r.request_id))
            .and_then(|r| {
                let at = r.tools.iter().position(|t| {
                    t.tool_call_id == respond.tool_call_id
                        && !t.done
                        && t.waiting
                            .as_ref()
                            .is_some_and(|w| respond.response.fits(&w.pause))
                })?;
                Some((r, at))
            });
        let Some((request, at)) = found else {
            return Ok(ignore(
                state,
                step,
                AGENT_RESPOND,
                &CallId::new(respond.tool_call_id),
            ));
        };
        let refs = refs_in(request, &request.tools[at]);
        let tool = &mut request.tools[at];
        let Some(waiting) = tool.waiting.take() else {
            return Ok(Vec::new());
        };
        let by = respond.by.as_deref().unwrap_or("a person");
        let mut directives = Vec::new();
        if waiting.deadline_ms.is_some() && respond.by.as_deref() != Some(BY_DEADLINE) {
            directives.push(Directive::CancelSchedule(CancelSchedule {
                schedule_id: deadline_id(&waiting.tool_call_id),
            }));
        }
        let result = match respond.response {
            Response::Approve | Response::Edit { .. } => {
                let (args, edited) = match respond.response {
                    Response::Edit { args } => (ToolArgs::from_text(args), true),
                    _ => (waiting.args, false),
                };
                let note = if edited {
                    format!(
                        "`{}` approved by {by}, with the arguments {args}",
                        tool.name
                    )
                } else {
                    format!("`{}` approved by {by}", tool.name)
                };
                tool.approved_args = Some(args.clone());
                tool.edited = edited;
                directives.push(Directive::ToolExec(
                    ToolExec::new(
                        tool.call_id.clone(),
                        tool.tool_call_id.as_str(),
                        tool.name.clone(),
                        args,
                    )
                    .approved(),
                ));
                state
                    .thread
                    .append(step.env, NewEntry::note(note).with_refs(refs));
                state.settle();
                return Ok(directives);
            }
            Response::Reject { reason } => ToolResult::error(
                tool.tool_call_id.clone(),
                match respond.by.as_deref() {
                    Some(BY_DEADLINE) => format!("not run: {reason}"),
                    _ => format!("not run: {by} rejected the call: {reason}"),
                },
            ),
            Response::Answer { text } => ToolResult::ok(tool.tool_call_id.clone(), text),
        };
        tool.done = true;
        let entry = NewEntry::tool_result(tool.name.clone(), result).with_refs(refs);
        let all_done = request.tools.iter().all(|t| t.done);
        state.thread.append(step.env, entry);
        if all_done {
            state.status = super::Status::AwaitingTools;
            directives.extend(self.next_iteration(state, step)?);
        } else {
            state.settle();
        }
        Ok(directives)
    }
}

/// The refs of an entry about `tool`, a call of the turn `turn_call` (iteration `iteration`)
/// of request `request_id`.
pub(super) fn tool_refs(
    request_id: &ArcStr,
    iteration: u32,
    turn_call: Option<&CallId>,
    tool: &PendingTool,
) -> Refs {
    let mut refs = Refs::request(request_id.clone())
        .with_call_id(tool.call_id.shared())
        .with_tool_call_id(tool.tool_call_id.clone())
        .with_iteration(iteration);
    refs.parent_call_id = turn_call.map(CallId::shared);
    refs
}

/// [`tool_refs`] for a call of `request`'s current turn.
fn refs_in(request: &RequestState, tool: &PendingTool) -> Refs {
    tool_refs(
        &request.request_id,
        request.iteration,
        request.turn_call.as_ref(),
        tool,
    )
}

/// The timer of the deadline of call `tool_call_id`.
pub(super) fn deadline_id(tool_call_id: &str) -> ScheduleId {
    ScheduleId::new(format!("deadline:{tool_call_id}"))
}

/// The calls of `state`'s request that wait for a person, as the runtime lists them: its tool
/// calls, and its LLM call held at a soft budget limit.
pub(super) fn waiting_of(state: &ReActState) -> Vec<Waiting> {
    let Some(request) = state.request.as_deref() else {
        return Vec::new();
    };
    request
        .tools
        .iter()
        .filter(|t| !t.done)
        .filter_map(|t| t.waiting.as_deref().cloned())
        .chain(request.budget_wait.iter().map(|w| w.waiting.clone()))
        .collect()
}
