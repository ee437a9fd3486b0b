//! One step of a [`Guarded`] strategy: what comes in checked before the inner strategy sees
//! it, what goes out checked before the runtime runs it, parallel checks held against.

use motet_directives::results::{LLM_RESULT, Outcome, TOOL_PAUSED, TOOL_RESULT, ToolPaused};
use motet_directives::{CallId, Directive, LlmStream, Pause, Reply, ReplyStatus, ToolExec};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use super::{GuardFailed, GuardPoint, Guarded, GuardedState, ToolVerdict, Tripped, Verdict};
use crate::env::Env;
use crate::error::StrategyError;
use crate::protocol::{AGENT_CANCEL, AGENT_FAILED, AgentCancel, AgentRequest, Input};
use crate::strategy::Strategy;

/// What the guardrails keep between signals: the open request, the parallel checks still out,
/// and the results held for the inner strategy until they pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Book {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request: Option<Open>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) pending: Vec<CallId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    held: Vec<Signal>,
    /// The request as the parallel checks were asked it, while they are out: asked again after
    /// a restart (their calls are gone with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked: Option<AgentRequest>,
    /// The tool of each call sent to run, by call id: what a result check is told.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tools: Vec<(CallId, String)>,
}

/// The request the guardrails answer for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Open {
    request_id: String,
    thread_id: Option<String>,
}

/// A check tripped: where and why.
struct Trip(GuardPoint, String);

impl Book {
    /// What survives a stop: the open request and the checks still owed (asked again at the
    /// resume); results held for the inner strategy are dropped, as its own state is rebuilt.
    pub(super) fn restored(self) -> Self {
        Self {
            held: Vec::new(),
            pending: if self.asked.is_some() {
                self.pending
            } else {
                Vec::new()
            },
            ..self
        }
    }
}

impl<S: Strategy> Guarded<S> {
    pub(super) fn step(
        &self,
        state: &mut GuardedState<S::State>,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let input = Input::of(signal)?;
        match &input {
            Input::Request(request) => {
                state.book = Book {
                    request: signal.request_id().map(|id| Open {
                        request_id: id.to_owned(),
                        thread_id: signal.thread_id().map(str::to_owned),
                    }),
                    ..Book::default()
                };
                let mut query = request.query.clone();
                for check in &self.input {
                    let mut asked = request.clone();
                    asked.query.clone_from(&query);
                    match check(&asked) {
                        Verdict::Pass => {}
                        Verdict::Rewrite(rewritten) => query = rewritten,
                        // The inner strategy never saw the request: only the reply is owed.
                        Verdict::Block(why) => {
                            let reply = failed(&state.book, GuardPoint::Input, why, env)?;
                            state.book = Book::default();
                            return Ok(reply.into_iter().collect());
                        }
                    }
                }
                let signal = if query == request.query {
                    signal.clone()
                } else {
                    with_field(signal, "query", serde_json::Value::from(query.as_str()))?
                };
                let mut asked = request.clone();
                asked.query = query;
                let mut out = self.inward(state, &signal, env)?;
                if state.book.request.is_some() && !self.parallel.is_empty() {
                    out.extend(self.ask_checks(&mut state.book, asked, env));
                }
                Ok(out)
            }
            // The checks' calls stopped with the process: the inner strategy carries on (its
            // own calls made again), and the checks are asked again beside them.
            Input::Resume(_) if state.book.asked.is_some() => {
                let asked = state.book.asked.take();
                state.book.pending.clear();
                state.book.held.clear();
                let mut out = self.inward(state, signal, env)?;
                if let Some(asked) = asked
                    && state.book.request.is_some()
                {
                    out.extend(self.ask_checks(&mut state.book, asked, env));
                }
                Ok(out)
            }
            Input::Outcome(outcome) if state.book.pending.contains(outcome.call_id()) => {
                let call_id = outcome.call_id().clone();
                state.book.pending.retain(|c| *c != call_id);
                let verdict = match outcome {
                    Outcome::Llm(result) => self
                        .parallel
                        .iter()
                        .map(|check| (check.decide)(&result.response))
                        .find_map(|v| match v {
                            Verdict::Block(why) => Some(why),
                            _ => None,
                        }),
                    Outcome::LlmFailed(failed) => {
                        Some(format!("the check failed: {}", failed.error))
                    }
                    _ => None,
                };
                if let Some(why) = verdict {
                    return self.trip(state, Trip(GuardPoint::ParallelInput, why), env);
                }
                if !state.book.pending.is_empty() {
                    return Ok(Vec::new());
                }
                state.book.asked = None;
                // Every check passed: the inner strategy gets what the model said meanwhile.
                let mut out = Vec::new();
                for held in std::mem::take(&mut state.book.held) {
                    out.extend(self.inward(state, &held, env)?);
                    if state.book.request.is_none() {
                        break;
                    }
                }
                Ok(out)
            }
            Input::Outcome(_) if !state.book.pending.is_empty() => {
                state.book.held.push(signal.clone());
                Ok(Vec::new())
            }
            Input::Cancel(_) => {
                let out = self.inward(state, signal, env)?;
                if signal.request_id() == state.book.request.as_ref().map(|o| o.request_id.as_str())
                {
                    state.book = Book::default();
                }
                Ok(out)
            }
            _ => self.inward(state, signal, env),
        }
    }

    /// The parallel checks' calls for `asked`, noted as out.
    fn ask_checks(&self, book: &mut Book, asked: AgentRequest, env: &dyn Env) -> Vec<Directive> {
        let calls: Vec<Directive> = self
            .parallel
            .iter()
            .map(|check| {
                let call_id = CallId::new(env.fresh_id("guard"));
                book.pending.push(call_id.clone());
                Directive::LlmStream(LlmStream::new(call_id, (check.call)(&asked)))
            })
            .collect();
        book.asked = Some(asked);
        calls
    }

    /// `signal` checked, handed to the inner strategy, and what it returns checked.
    fn inward(
        &self,
        state: &mut GuardedState<S::State>,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let signal = match self.check_incoming(&state.book, signal)? {
            Ok(signal) => signal,
            Err(trip) => return self.trip(state, trip, env),
        };
        let out = self.inner.handle(&mut state.inner, &signal, env)?;
        self.outward(state, out, env)
    }

    /// A model's response or a tool's result, through their checks.
    fn check_incoming(
        &self,
        book: &Book,
        signal: &Signal,
    ) -> Result<Result<Signal, Trip>, StrategyError> {
        let Some(Ok(outcome)) = Outcome::of(signal) else {
            return Ok(Ok(signal.clone()));
        };
        match outcome {
            Outcome::Llm(mut result) if !self.after_llm.is_empty() => {
                let mut changed = false;
                for check in &self.after_llm {
                    match check(&result.response) {
                        Verdict::Pass => {}
                        Verdict::Rewrite(response) => {
                            result.response = response;
                            changed = true;
                        }
                        Verdict::Block(why) => return Ok(Err(Trip(GuardPoint::LlmResponse, why))),
                    }
                }
                if !changed {
                    return Ok(Ok(signal.clone()));
                }
                let data = to_json(LLM_RESULT, &result)?;
                Ok(Ok(with_data(signal, data)?))
            }
            Outcome::Tool(mut tool) if !self.tool_result.is_empty() => {
                let name = book
                    .tools
                    .iter()
                    .find(|(call, _)| *call == tool.call_id)
                    .map(|(_, name)| name.clone())
                    .unwrap_or_default();
                let mut changed = false;
                for check in &self.tool_result {
                    match check(&name, &tool.result) {
                        Verdict::Pass => {}
                        Verdict::Rewrite(content) => {
                            tool.result.content = content;
                            changed = true;
                        }
                        Verdict::Block(why) => return Ok(Err(Trip(GuardPoint::ToolResult, why))),
                    }
                }
                if !changed {
                    return Ok(Ok(signal.clone()));
                }
                let data = to_json(TOOL_RESULT, &tool)?;
                Ok(Ok(with_data(signal, data)?))
            }
            _ => Ok(Ok(signal.clone())),
        }
    }

    /// The inner strategy's directives through their checks: LLM calls, tool calls (an
    /// approval turned into the `tool.paused` the inner strategy knows), and the final answer.
    fn outward(
        &self,
        state: &mut GuardedState<S::State>,
        directives: Vec<Directive>,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let mut out = Vec::with_capacity(directives.len());
        for directive in directives {
            match directive {
                Directive::LlmStream(mut call) => {
                    for check in &self.before_llm {
                        match check(&call.request) {
                            Verdict::Pass => {}
                            Verdict::Rewrite(request) => call.request = request,
                            Verdict::Block(why) => {
                                return self.trip(state, Trip(GuardPoint::LlmCall, why), env);
                            }
                        }
                    }
                    out.push(Directive::LlmStream(call));
                }
                Directive::ToolExec(mut exec) => {
                    let mut approval = None;
                    for check in &self.tool {
                        match check(&exec) {
                            ToolVerdict::Pass => {}
                            ToolVerdict::Rewrite(args) => exec.args = args,
                            ToolVerdict::Block(why) => {
                                return self.trip(state, Trip(GuardPoint::ToolCall, why), env);
                            }
                            ToolVerdict::Approval(asked) if !exec.approved => {
                                approval = Some(asked)
                            }
                            ToolVerdict::Approval(_) => {}
                        }
                    }
                    match approval {
                        None => {
                            if !self.tool_result.is_empty() {
                                state
                                    .book
                                    .tools
                                    .push((exec.call_id.clone(), exec.name.clone()));
                            }
                            out.push(Directive::ToolExec(exec));
                        }
                        Some(asked) => {
                            let paused = paused(&state.book, &exec, asked, env)?;
                            let inner = self.inner.handle(&mut state.inner, &paused, env)?;
                            out.extend(self.outward(state, inner, env)?);
                        }
                    }
                }
                Directive::Reply(reply) if reply.status == ReplyStatus::Completed => {
                    out.push(self.check_answer(state, reply, env)?);
                    state.book = Book::default();
                }
                Directive::Reply(reply) => {
                    out.push(Directive::Reply(reply));
                    state.book = Book::default();
                }
                other => out.push(other),
            }
        }
        Ok(out)
    }

    /// The final answer through the output checks.
    fn check_answer(
        &self,
        state: &GuardedState<S::State>,
        reply: Reply,
        env: &dyn Env,
    ) -> Result<Directive, StrategyError> {
        let Ok(mut data) = reply.signal.data_as::<serde_json::Value>() else {
            return Ok(Directive::Reply(reply));
        };
        let Some(mut answer) = data
            .get("answer")
            .and_then(|a| a.as_str())
            .map(str::to_owned)
        else {
            return Ok(Directive::Reply(reply));
        };
        let mut changed = false;
        for check in &self.output {
            match check(&answer) {
                Verdict::Pass => {}
                Verdict::Rewrite(rewritten) => {
                    answer = rewritten;
                    changed = true;
                }
                Verdict::Block(why) => {
                    // The inner strategy's request ended with its answer; only the reply changes.
                    let mut book = state.book.clone();
                    if book.request.is_none() {
                        book.request = reply.signal.request_id().map(|id| Open {
                            request_id: id.to_owned(),
                            thread_id: reply.signal.thread_id().map(str::to_owned),
                        });
                    }
                    return failed(&book, GuardPoint::Output, why, env)?
                        .ok_or_else(|| no_request(AGENT_FAILED));
                }
            }
        }
        if !changed {
            return Ok(Directive::Reply(reply));
        }
        data["answer"] = serde_json::Value::from(answer);
        Ok(Directive::Reply(Reply {
            status: reply.status,
            signal: with_data(&reply.signal, data)?,
        }))
    }

    /// Ends the request: the inner strategy cancelled (its reply dropped, the rest of what it
    /// does kept), the asker told why. The runtime then aborts the request's calls in flight.
    fn trip(
        &self,
        state: &mut GuardedState<S::State>,
        Trip(point, why): Trip,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let book = std::mem::take(&mut state.book);
        let Some(open) = &book.request else {
            return Ok(Vec::new());
        };
        let cancel = request_signal(open, AGENT_CANCEL, env)
            .with_data(AgentCancel {
                reason: Some(format!("blocked by a guardrail: {why}")),
            })
            .build()
            .map_err(|e| emit_error(AGENT_CANCEL, e))?;
        let mut out: Vec<Directive> = self
            .inner
            .handle(&mut state.inner, &cancel, env)?
            .into_iter()
            .filter(|d| !matches!(d, Directive::Reply(_)))
            .collect();
        out.extend(failed(&book, point, why, env)?);
        Ok(out)
    }
}

/// The guardrail's `agent.failed` for the open request (none without one).
fn failed(
    book: &Book,
    point: GuardPoint,
    why: String,
    env: &dyn Env,
) -> Result<Option<Directive>, StrategyError> {
    let Some(open) = &book.request else {
        return Ok(None);
    };
    let reason = Tripped { point, why };
    let data = GuardFailed {
        request_id: open.request_id.clone(),
        message: format!("blocked by a guardrail ({point:?}): {}", reason.why),
        reason,
    };
    let signal = request_signal(open, AGENT_FAILED, env)
        .with_data(data)
        .build()
        .map_err(|e| emit_error(AGENT_FAILED, e))?;
    Ok(Some(Directive::Reply(Reply::failed(signal))))
}

/// The `tool.paused` the runtime would send for a call gated for approval.
fn paused(
    book: &Book,
    exec: &ToolExec,
    approval: motet_directives::Approval,
    env: &dyn Env,
) -> Result<Signal, StrategyError> {
    let data = ToolPaused {
        call_id: exec.call_id.clone(),
        tool_call_id: exec.tool_call_id.clone(),
        name: exec.name.clone(),
        args: exec.args.clone(),
        pause: Pause::Approval(approval),
    };
    let open = book
        .request
        .as_ref()
        .ok_or_else(|| no_request(TOOL_PAUSED))?;
    request_signal(open, TOOL_PAUSED, env)
        .with_data(data)
        .build()
        .map_err(|e| emit_error(TOOL_PAUSED, e))
}

fn request_signal(open: &Open, signal_type: &str, env: &dyn Env) -> motet_signals::SignalBuilder {
    let mut builder = Signal::builder(signal_type, "motet.guard")
        .with_id(env.fresh_id("sig"))
        .with_time(env.now())
        .with_request_id(&open.request_id);
    if let Some(thread) = &open.thread_id {
        builder = builder.with_thread_id(thread);
    }
    builder
}

/// `signal` with `data` in place of its data, everything else kept.
fn with_data(signal: &Signal, data: serde_json::Value) -> Result<Signal, StrategyError> {
    let ty = signal.signal_type().as_str().to_owned();
    let mut json: serde_json::Value =
        serde_json::from_str(&signal.to_json().map_err(|e| emit_error(&ty, e))?)
            .map_err(|e| emit_error(&ty, e))?;
    json["data"] = data;
    if let Some(fields) = json.as_object_mut() {
        fields.remove("data_base64");
    }
    Signal::from_json_value(json).map_err(|e| emit_error(&ty, e))
}

/// `signal` with one field of its data set.
fn with_field(
    signal: &Signal,
    name: &str,
    value: serde_json::Value,
) -> Result<Signal, StrategyError> {
    let mut data: serde_json::Value = signal.data_as().map_err(|e| StrategyError::InvalidData {
        signal_type: signal.signal_type().as_str().to_owned(),
        message: e.to_string(),
    })?;
    data[name] = value;
    with_data(signal, data)
}

fn to_json(signal_type: &str, value: &impl Serialize) -> Result<serde_json::Value, StrategyError> {
    serde_json::to_value(value).map_err(|e| emit_error(signal_type, e))
}

fn no_request(signal_type: &str) -> StrategyError {
    emit_error(signal_type, "no request is open")
}

fn emit_error(signal_type: &str, error: impl ToString) -> StrategyError {
    StrategyError::Emit {
        signal_type: signal_type.to_owned(),
        message: error.to_string(),
    }
}
