//! `ToolExec`: one tool call through the agent's [`ToolSet`](crate::tool::ToolSet), answered
//! `tool.result`, or `tool.paused` when it waits for a person (a gated tool not yet approved,
//! or a tool that asked a question).

use motet_directives::results::{TOOL_PAUSED, TOOL_RESULT, ToolPaused, ToolResultSignal};
use motet_directives::{Pause, ToolCallView, ToolExec, ToolResult};
use motet_signals::Signal;
use tracing::Instrument as _;

use crate::agent::delegate::Delegation;
use crate::agent::host::tracked::{Job, Tracked};
use crate::agent::signals::result_signal;
use crate::agent::trace;
use crate::tool::{Ran, ToolContext};

/// Starts the tool call `exec` for `cause`.
pub(super) fn run(job: &Job<'_>, tracked: &mut Tracked, exec: ToolExec) {
    let (here, cause) = (job.here, job.cause);
    let tools = here.tools.cloned();
    let activity = here.core.activity.clone();
    let task_cause = cause.clone();
    let source = here.source();
    let span = trace::tool_span(
        &exec.name,
        &exec.tool_call_id,
        exec.args.get(),
        job.parent.clone(),
    );
    let mut ctx = ToolContext::new(exec.tool_call_id.as_str())
        .with_agent_id(&**here.agent)
        .with_thread_id(&**here.thread);
    if let Some(request) = cause.request_id() {
        ctx = ctx.with_request_id(request);
    }
    let chain = cause
        .request_id()
        .and_then(|request| tracked.span(request))
        .and_then(|span| span.chain.as_deref());
    let payers = match cause.request_id() {
        Some(request) => tracked.payers(Some(request)).with(here.agent, request),
        None => motet_agents::delegate::Payers::default(),
    };
    let delegation = Delegation::new(
        here.core,
        motet_agents::delegate::Chain::of_request(here.agent, chain),
        payers,
    );
    let spent = delegation.spent();
    ctx = ctx.with_delegation(delegation);
    let work = Box::pin(async move {
        let view = ToolCallView {
            id: &exec.tool_call_id,
            name: &exec.name,
            args: &exec.args,
        };
        // Gated: it waits for a person before it runs (unless one approved it).
        let gate = match &tools {
            Some(tools) if !exec.approved => tools.approval(view),
            _ => None,
        };
        if let Some(approval) = gate {
            trace::tool_paused(&span, "approval");
            return paused(&source, &task_cause, exec, Pause::Approval(approval));
        }
        let ran = match &tools {
            Some(tools) => {
                let started = std::time::Instant::now();
                let ran = tools.run(view, &ctx).instrument(span.clone()).await;
                if let Ran::Result(result) = &ran {
                    trace::tool_finished(&span, result);
                    activity.tool_ran(result.is_error);
                    tracing::info!(
                        tool = %exec.name,
                        call = %exec.tool_call_id,
                        is_error = result.is_error,
                        elapsed_ms = started.elapsed().as_millis(),
                        "tool call ran"
                    );
                }
                ran
            }
            None => Ran::Result(ToolResult::error(
                exec.tool_call_id.clone(),
                format!(
                    "no tools are available to this agent (asked for `{}`)",
                    exec.name
                ),
            )),
        };
        match ran {
            Ran::Result(result) => {
                let (usage, handoff) = spent.take();
                let mut data = ToolResultSignal::new(exec.call_id, result);
                data.usage = usage;
                data.handoff = handoff;
                result_signal(TOOL_RESULT, &source, &task_cause, data)
            }
            Ran::Question(text) => {
                trace::tool_paused(&span, "question");
                paused(&source, &task_cause, exec, Pause::Question { text })
            }
        }
    });
    // Cancelling the request aborts the tool too (dropping its future).
    tracked.start(job, work);
}

/// `tool.paused` for `exec`: it waits for a person.
fn paused(source: &str, cause: &Signal, exec: ToolExec, pause: Pause) -> Signal {
    result_signal(
        TOOL_PAUSED,
        source,
        cause,
        ToolPaused {
            call_id: exec.call_id,
            tool_call_id: exec.tool_call_id,
            name: exec.name,
            args: exec.args,
            pause,
        },
    )
}
