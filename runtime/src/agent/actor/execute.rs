//! Carrying out the directives a strategy returns: one arm per directive kind, each starting
//! the work and sending its result back to the thread's actor as a signal.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;

use futures::FutureExt as _;

use motet_agents::Strategy;
use motet_directives::results::{
    LLM_FAILED, LLM_RESULT, LlmFailed, LlmResult, SUMMARY_FAILED, SUMMARY_RESULT, SummaryFailed,
    SummaryResult, TOOL_PAUSED, TOOL_RESULT, ToolPaused, ToolResultSignal,
};
use motet_directives::{Directive, EmitTarget, Pause, PromptCache, ToolCallView, ToolResult};
use motet_providers::ProviderError;
use motet_signals::Signal;
use ractor::ActorRef;
use serde::Serialize;

use crate::agent::durable::Outgoing;
use crate::agent::errors::RuntimeError;
use crate::agent::registry::{Parent, RuntimeCore};
use crate::agent::spec::DEFAULT_THREAD;
use crate::agent::trace;
use crate::telemetry::context_of;
use crate::tool::output::panic_message;
use crate::tool::{Ran, ToolContext};
use tracing::Instrument as _;

use super::llm::{CallFailure, llm_error, stream_call};
use super::{SCHEDULE_FIRED, ThreadActor, ThreadMsg, ThreadState};
use crate::agent::events::{CHILD_FAILED, CHILD_STARTED, ChildEvent};

impl<S> ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// Carries out one directive for the signal `cause`; its result comes back to this actor
    /// as a signal.
    pub(super) fn execute(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        cause: &Signal,
        directive: Directive,
        parent: Option<tracing::Id>,
        run: Run,
    ) {
        match directive {
            Directive::LlmStream(mut call) => {
                // One prompt cache key per thread: its calls share their prefixes.
                let cache = &mut call.request.options.prompt_cache;
                if cache.key.is_none() {
                    let key = PromptCache::key_for(&[&self.agent.name, &self.thread_id]);
                    cache.key = Some(key);
                }
                let iteration = match cause
                    .request_id()
                    .and_then(|r| state.open.as_mut()?.spans.get_mut(r))
                {
                    Some(open) => {
                        open.llm_calls += 1;
                        open.llm_calls
                    }
                    None => 0,
                };
                let span = trace::chat_span(&call.request, parent, iteration);
                let core = self.core.clone();
                let task_cause = cause.clone();
                let source = self.source();
                let scope = self.scope(cause, motet_providers::CallKind::Turn);
                let work = Box::pin(async move {
                    let call_id = call.call_id;
                    let streamed = stream_call(
                        &core,
                        call.request,
                        &scope,
                        &source,
                        &task_cause,
                        &call_id,
                        span,
                    );
                    // A panic in the call (a provider's bug, a client's) must still answer the
                    // strategy, or the request waits for a result that never comes.
                    let outcome = AssertUnwindSafe(streamed)
                        .catch_unwind()
                        .await
                        .unwrap_or_else(|payload| {
                            let message = panic_message(payload.as_ref());
                            tracing::error!(%message, "LLM call panicked");
                            Err(CallFailure {
                                error: ProviderError::Protocol {
                                    message: format!("the LLM call panicked: {message}"),
                                },
                                retried: false,
                            })
                        });
                    match outcome {
                        Ok(response) => result_signal(
                            LLM_RESULT,
                            &source,
                            &task_cause,
                            LlmResult { call_id, response },
                        ),
                        Err(error) => result_signal(
                            LLM_FAILED,
                            &source,
                            &task_cause,
                            LlmFailed {
                                call_id,
                                error: llm_error(&error.error, error.retried),
                            },
                        ),
                    }
                });
                self.start(myself, state, cause, work, run);
            }
            Directive::ToolExec(exec) => {
                let tools = self.agent.tools.clone();
                let activity = self.core.activity.clone();
                let task_cause = cause.clone();
                let source = self.source();
                let span =
                    trace::tool_span(&exec.name, &exec.tool_call_id, exec.args.get(), parent);
                let mut ctx = ToolContext::new(exec.tool_call_id.as_str())
                    .with_agent_id(&*self.agent.name)
                    .with_thread_id(&*self.thread_id);
                if let Some(request) = cause.request_id() {
                    ctx = ctx.with_request_id(request);
                }
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
                        Ran::Result(result) => result_signal(
                            TOOL_RESULT,
                            &source,
                            &task_cause,
                            ToolResultSignal {
                                call_id: exec.call_id,
                                result,
                            },
                        ),
                        Ran::Question(text) => {
                            trace::tool_paused(&span, "question");
                            paused(&source, &task_cause, exec, Pause::Question { text })
                        }
                    }
                });
                // Cancelling the request aborts the tool too (dropping its future).
                self.start(myself, state, cause, work, run);
            }
            Directive::Summarize(summarize) => {
                // The strategy built the call (instructions, transcript, model): it is
                // streamed as it is.
                let core = self.core.clone();
                let me = myself.clone();
                let task_cause = cause.clone();
                let source = self.source();
                let call_id = summarize.call_id;
                let request = summarize.request;
                let span = trace::directive_span("summarize", &self.thread_id, parent);
                let scope = self.scope(cause, motet_providers::CallKind::Summary);
                let task = tokio::spawn(async move {
                    let chat = trace::chat_span(&request, span.id(), 0);
                    let outcome =
                        stream_call(&core, request, &scope, &source, &task_cause, &call_id, chat)
                            .await
                            .map(|response| response.message.to_string())
                            .map_err(|failure| failure.error.to_string());
                    let signal = match outcome {
                        Ok(content) => result_signal(
                            SUMMARY_RESULT,
                            &source,
                            &task_cause,
                            SummaryResult { call_id, content },
                        ),
                        Err(message) => result_signal(
                            SUMMARY_FAILED,
                            &source,
                            &task_cause,
                            SummaryFailed { call_id, message },
                        ),
                    };
                    deliver(&me, signal);
                });
                self.track(state, cause, task.abort_handle());
            }
            Directive::Emit(emit) => {
                let span =
                    trace::directive_span("emit", emit.signal.signal_type().as_str(), parent);
                let _inside = span.enter();
                // A signal emitted while handling another carries the current span, so whoever
                // handles it continues this trace.
                let mut signal = emit.signal;
                if signal.trace().traceparent.is_none() {
                    let context = context_of(&span);
                    if context.traceparent.is_some() {
                        signal = signal.with_trace(context);
                    }
                }
                match emit.target {
                    EmitTarget::Bus => {
                        self.core.bus.publish(&signal);
                        self.core.publish_durable(&signal, Outgoing::Emit);
                    }
                    EmitTarget::Agent(name) => {
                        let core = self.core.clone();
                        let from = self.agent.name.clone();
                        tokio::spawn(async move {
                            let thread = RuntimeCore::thread_id(signal.thread_id());
                            let msg = ThreadMsg::Signal(signal);
                            if let Err(error) = core.send(&name, &thread, msg).await {
                                tracing::warn!(agent = %from, to = %name, %error, "emit to an agent dropped");
                            }
                        });
                    }
                    // A child's parent is the agent thread that spawned it; a top-level agent's
                    // parent is whoever asked (the reply above).
                    EmitTarget::Parent => {
                        if let Some(parent) = self.agent.parent.clone() {
                            let core = self.core.clone();
                            tokio::spawn(async move {
                                let msg = ThreadMsg::Signal(signal);
                                if let Err(error) =
                                    core.send(&parent.agent, &parent.thread, msg).await
                                {
                                    tracing::warn!(parent = %parent.agent, %error, "emit to a parent dropped");
                                }
                            });
                        }
                    }
                    EmitTarget::Group(group) => {
                        let core = self.core.clone();
                        tokio::spawn(async move {
                            for member in core.group_members(&group) {
                                let msg = ThreadMsg::Signal(signal.clone());
                                if let Err(error) = core.send(&member, DEFAULT_THREAD, msg).await {
                                    tracing::warn!(%group, %member, %error, "emit to a group member dropped");
                                }
                            }
                        });
                    }
                }
            }
            Directive::Reply(reply) => {
                let span =
                    trace::directive_span("reply", reply.signal.signal_type().as_str(), parent);
                let _inside = span.enter();
                let mut signal = reply.signal;
                if signal.trace().traceparent.is_none() {
                    let context = context_of(&span);
                    if context.traceparent.is_some() {
                        signal = signal.with_trace(context);
                    }
                }
                match signal.request_id() {
                    Some(request) => self.answer(state, request, reply.status, &signal),
                    None => {
                        tracing::warn!(agent = %self.agent.name, signal = %signal.signal_type().as_str(), "a reply without a request id answers nobody; it is only published");
                    }
                }
                self.core.bus.publish(&signal);
                self.core.publish_durable(&signal, Outgoing::Reply);
            }
            Directive::Schedule(schedule) => {
                let me = myself.clone();
                let id = schedule.schedule_id.as_str().to_owned();
                let span = trace::directive_span("schedule", &id, parent);
                let mut schedule = schedule;
                if schedule.signal.trace().traceparent.is_none() {
                    let context = context_of(&span);
                    if context.traceparent.is_some() {
                        schedule.signal = schedule.signal.with_trace(context);
                    }
                }
                let fired = Signal::builder(SCHEDULE_FIRED, self.source())
                    .with_data(&id)
                    .build();
                let task = tokio::spawn(async move {
                    tokio::time::sleep(schedule.delay).await;
                    deliver(&me, schedule.signal);
                    if let Ok(fired) = fired {
                        deliver(&me, fired);
                    }
                });
                if let Some(old) = state.occasional().schedules.insert(id, task.abort_handle()) {
                    old.abort();
                }
            }
            Directive::CancelSchedule(cancel) => {
                let cancelled = state
                    .occasional
                    .as_mut()
                    .and_then(|o| o.schedules.remove(cancel.schedule_id.as_str()));
                if let Some(task) = cancelled {
                    task.abort();
                }
            }
            Directive::Stop(stop) => {
                let _span = trace::directive_span("stop", &self.agent.name, parent);
                myself.stop(Some(stop.reason));
            }
            Directive::Spawn(spawn) => {
                let name = spawn
                    .spec
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{}/{}", self.agent.name, spawn.tag));
                state
                    .occasional()
                    .children
                    .insert(spawn.tag.clone(), name.clone());
                let span = trace::directive_span("spawn", &name, parent);
                let core = self.core.clone();
                let task_cause = cause.clone();
                let source = self.source();
                let parent = Parent {
                    agent: self.agent.name.to_string(),
                    thread: self.thread_id.to_string(),
                };
                // The result goes through the registry, not to this actor directly: a child
                // may take longer to start than this thread stays running.
                let home = parent.clone();
                tokio::spawn(
                    async move {
                        let started = match core.kinds.get(&spawn.spec.kind) {
                            Some(start) => {
                                start(core.clone(), name.clone(), &spawn.spec.config, Some(parent))
                                    .await
                            }
                            None => Err(RuntimeError::SpawnFailed {
                                name: name.clone(),
                                message: format!(
                                    "no agent kind `{}` is registered",
                                    spawn.spec.kind
                                ),
                            }),
                        };
                        let signal = match started {
                            Ok(()) => result_signal(
                                CHILD_STARTED,
                                &source,
                                &task_cause,
                                ChildEvent {
                                    tag: spawn.tag,
                                    name,
                                    message: None,
                                },
                            ),
                            Err(error) => result_signal(
                                CHILD_FAILED,
                                &source,
                                &task_cause,
                                ChildEvent {
                                    tag: spawn.tag,
                                    name,
                                    message: Some(error.to_string()),
                                },
                            ),
                        };
                        let msg = ThreadMsg::Signal(signal);
                        if let Err(error) = core.send(&home.agent, &home.thread, msg).await {
                            tracing::debug!(%error, "a child's start was reported after its parent stopped");
                        }
                    }
                    .instrument(span),
                );
            }
            Directive::StopChild(stop) => match state
                .occasional
                .as_mut()
                .and_then(|o| o.children.remove(&stop.tag))
            {
                Some(name) => self.core.stop_agent(&name, &stop.reason),
                None => {
                    tracing::warn!(agent = %self.agent.name, tag = %stop.tag, "no child with that tag");
                }
            },
        }
    }

    /// Starts a directive's work. Run [`Run::Inline`], it is polled once here, on the actor's
    /// own task: work that is done at once (a tool that never waits, a model that answers from
    /// memory) hands its result to this actor's next step without a task or a mailbox trip,
    /// which on a multi-threaded runtime would each be a chance for tokio to move the chain to
    /// another worker. Work that must wait goes on as a task of its own, so the actor keeps
    /// reading its mailbox (a cancel, another request) meanwhile; its result comes back as a
    /// message, and cancelling the request aborts it.
    fn start(
        &self,
        myself: &ActorRef<ThreadMsg>,
        state: &mut ThreadState<S>,
        cause: &Signal,
        mut work: Work,
        run: Run,
    ) {
        if run == Run::Inline
            && let Some(signal) = (&mut work).now_or_never()
        {
            state.open().ready.push_back(signal);
            return;
        }
        let me = myself.clone();
        let task = tokio::spawn(async move { deliver(&me, work.await) });
        self.track(state, cause, task.abort_handle());
    }
}

/// A directive's work: the result signal it ends with.
type Work = Pin<Box<dyn Future<Output = Signal> + Send>>;

/// Where a directive's work starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run {
    /// Polled once on the actor's task; a task of its own only if it must wait. For a step's
    /// only piece of work: nothing else could run meanwhile.
    Inline,
    /// A task of its own from the start. For each of several pieces of work one step starts
    /// (parallel tool calls), so they run side by side, on both workers if need be.
    Task,
}

impl Run {
    /// How the work of a step returning `directives` starts.
    pub(super) fn for_step(directives: &[Directive]) -> Self {
        let work = directives
            .iter()
            .filter(|d| {
                matches!(
                    d,
                    Directive::LlmStream(_) | Directive::ToolExec(_) | Directive::Summarize(_)
                )
            })
            .count();
        if work == 1 { Self::Inline } else { Self::Task }
    }
}

/// What a failure reply says, for its span's status: the `reason` of its data when it has
/// one, else its type.
pub(super) fn failure_text(reply: &Signal) -> String {
    reply
        .data_as::<serde_json::Value>()
        .ok()
        .and_then(|data| {
            let why = data.get("reason").or_else(|| data.get("message"))?;
            Some(why.as_str().map_or_else(|| why.to_string(), str::to_owned))
        })
        .unwrap_or_else(|| reply.signal_type().as_str().to_owned())
}

/// `tool.paused` for `exec`: it waits for a person.
fn paused(source: &str, cause: &Signal, exec: motet_directives::ToolExec, pause: Pause) -> Signal {
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

pub(super) fn deliver(to: &ActorRef<ThreadMsg>, signal: Signal) {
    if let Err(error) = to.cast(ThreadMsg::Signal(signal)) {
        tracing::debug!(%error, "a result arrived after its agent stopped");
    }
}

/// A result signal, caused by the signal whose directive produced it (same thread, request,
/// correlation and trace).
pub(super) fn result_signal<T: Serialize>(
    ty: &str,
    source: &str,
    cause: &Signal,
    data: T,
) -> Signal {
    let built = Signal::builder(ty, source)
        .caused_by(cause)
        .with_data(data)
        .build();
    match built {
        Ok(signal) => signal,
        // The type is a constant and the source is built from a checked name: this cannot fail,
        // and if it ever did, an empty result of the right type is better than no answer.
        Err(error) => {
            tracing::error!(%error, ty, "could not build a result signal");
            Signal::builder(ty, "motet.runtime")
                .caused_by(cause)
                .build()
                .unwrap_or_else(|_| cause.clone())
        }
    }
}
