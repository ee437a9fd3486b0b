//! The coordinator: a pure strategy that fans a batch of tasks out to the workers and gathers
//! their answers, all through signals, on the [`FanOut`] team strategy.
//!
//! - `swarm.run` (an ask) brings the batch. The team asks each task of a worker with the
//!   task's skill: an `agent.request` (`Emit` to that agent) on a thread of its own named after
//!   the task and attempt (`batch-1.<task>`, then `batch-1.<task>.<attempt>`), so no task sees
//!   another's history.
//! - Each worker's reply comes back to the coordinator alone (`agent.completed` /
//!   `agent.failed`, read as a team reads any member's, `team::heard`): the runtime delivers
//!   the reply of an ask to the thread that asked, or an `agent.failed` when none will come. Every answer moves the count on and is published as `swarm.progress`.
//! - Workers also report every tool result (`swarm.tool`): the coordinator counts the tool
//!   calls of each task and checks each result, and then the answer, against the result the
//!   task expects (the product, the code in the note).
//! - The supervisor publishes `agent.thread.restarted` when a worker's thread crashed: the task
//!   it was running is lost with it, and the team asks it again of the next worker with that
//!   skill (`FanOut::lost`); a failed request is tried again the same way, up to
//!   `max_attempts` (`FanOut::with_attempts`); a worker the supervisor stopped is asked
//!   nothing more (`FanOut::member_gone`).
//! - When every task is answered or out of attempts ([`Join::BestEffort`]), `swarm.done`
//!   answers the ask with a [`Report`].

use std::collections::BTreeSet;
use std::sync::Arc;

use motet::agents::team::{self, FanOut, FanOutState, Join};
use motet::agents::{AGENT_REQUEST, ReactCompleted};
use motet::directives::{Emit, EmitTarget, Reply};
use motet::prelude::*;
use motet::runtime::agent::{AGENT_STOPPED, THREAD_RESTARTED, ThreadFailure};
use motet::signals::SignalError;
use serde::{Deserialize, Serialize};

use crate::worker::{TOOL_REPORT, ToolReport};

/// Starts a batch: data [`Batch`].
pub(crate) const RUN: &str = "swarm.run";
/// Answers `swarm.run` when every task is settled: data [`Report`].
pub(crate) const DONE: &str = "swarm.done";
/// Published on the bus after every change: data [`Progress`].
pub(crate) const PROGRESS: &str = "swarm.progress";

/// What a worker can do: which tool its model is offered. One tool per worker keeps each
/// prompt short (every tool's schema is in every prompt).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Skill {
    /// `multiply`.
    Calculate,
    /// `read_file`.
    Read,
}

impl Skill {
    /// Both skills, in report order.
    pub(crate) const ALL: [Skill; 2] = [Skill::Calculate, Skill::Read];

    /// The skill's tool, which its workers must call first.
    pub(crate) fn tool(self) -> &'static str {
        match self {
            Skill::Calculate => "multiply",
            Skill::Read => "read_file",
        }
    }

    /// Its name in the summary.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Skill::Calculate => "calculate",
            Skill::Read => "read",
        }
    }
}

/// One task for one worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Task {
    /// Its number in the batch.
    pub id: usize,
    /// The skill it needs.
    pub skill: Skill,
    /// What the worker is asked.
    pub query: String,
    /// The result a correct tool call returns and a correct answer states: the product, the
    /// code in the note.
    pub expected: String,
    /// Whether the worker crashes on purpose on the first attempt.
    pub chaos: bool,
}

impl Task {
    /// Whether a tool's output is the expected result (the product itself, or text that
    /// holds the code).
    pub(crate) fn tool_result_correct(&self, output: &str, is_error: bool) -> bool {
        !is_error
            && match self.skill {
                Skill::Calculate => output.trim() == self.expected,
                Skill::Read => states(output, &self.expected),
            }
    }

    /// Whether an answer states the expected result.
    pub(crate) fn answer_correct(&self, answer: &str) -> bool {
        states(answer, &self.expected)
    }
}

/// Whether `text` holds `number` as a whole number: not as part of a longer one, with any
/// thousands separators read through (`1,234` states `1234`; `12345` does not state `234`).
fn states(text: &str, number: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let digit_at = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
    let mut digits = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_digit() {
            digits.push(c);
            if digit_at(i + 1) || (chars.get(i + 1) == Some(&',') && digit_at(i + 2)) {
                continue;
            }
        } else if c == ',' && !digits.is_empty() && digit_at(i + 1) {
            continue;
        }
        if digits == number {
            return true;
        }
        digits.clear();
    }
    false
}

/// Data of `swarm.run`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Batch {
    /// The tasks.
    pub tasks: Vec<Task>,
}

/// What a worker receives: `agent.request`'s data. ReAct reads `query`; the worker's chaos
/// wrapper reads `crash`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WorkerInput {
    /// The task's question.
    pub query: String,
    /// Crash the worker's thread instead of answering (chaos, first attempt only).
    #[serde(default)]
    pub crash: bool,
}

/// How one task ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Outcome {
    /// The task.
    pub id: usize,
    /// The answer, or `None` when every attempt failed.
    pub answer: Option<String>,
    /// Why the last attempt failed, when it did.
    pub error: Option<String>,
    /// Attempts made (1 when the first one answered).
    pub attempts: u32,
    /// From the first dispatch to the answer.
    pub latency_ms: u64,
    /// LLM calls of the answering request.
    pub llm_calls: u32,
    /// The task's skill.
    pub skill: Skill,
    /// Tool calls made for the task, over all its attempts.
    pub tool_calls: u32,
    /// Of those, the ones whose result was the expected one.
    pub tool_results_correct: u32,
    /// Whether the answer states the expected result.
    pub answer_correct: bool,
}

/// Data of `swarm.done`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Report {
    /// One per task, in task order.
    pub outcomes: Vec<Outcome>,
    /// Thread restarts the supervisor published.
    pub restarts: u64,
    /// Tasks sent again (after a restart or a failed attempt).
    pub retries: u64,
    /// Prompt tokens over every attempt.
    pub tokens_in: u64,
    /// Completion tokens over every attempt.
    pub tokens_out: u64,
}

/// Data of `swarm.progress`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Progress {
    /// Tasks answered.
    pub answered: usize,
    /// Tasks out of attempts.
    pub failed: usize,
    /// Workers holding an open task.
    pub busy_agents: usize,
    /// Thread restarts seen.
    pub restarts: u64,
    /// Tokens in and out so far.
    pub tokens: u64,
}

/// Fans tasks out to `workers` and gathers the answers: a [`FanOut`] team asks and gathers —
/// every task asked at once, each of the worker the batch picked, a failed one asked again of
/// the next worker with its skill up to `max_attempts`, the round over when every task is
/// answered or out of attempts ([`Join::BestEffort`]) — and around it the swarm's own
/// bookkeeping: tool reports checked, crashes and stopped workers turned into failed asks, the
/// progress published, and the report.
pub(crate) struct Coordinator {
    /// Each worker's agent name and skill.
    workers: Vec<(String, Skill)>,
    fan: FanOut,
}

impl Coordinator {
    /// A coordinator for these workers (agent name, skill), trying each task up to
    /// `max_attempts`.
    pub(crate) fn new(workers: Vec<(String, Skill)>, max_attempts: u32) -> Self {
        let order = Arc::new(workers.clone());
        let fan = FanOut::new(workers.iter().map(|(name, _)| name.clone()))
            .with_join(Join::BestEffort)
            .with_attempts(max_attempts)
            .with_reassign(move |task, up| next_worker(&order, task, up));
        Self { workers, fan }
    }

    /// The same coordinator asking at most `window` tasks at once (`FanOut::with_window`):
    /// virtual workers under a cap of as many are never more active than that.
    pub(crate) fn with_window(mut self, window: usize) -> Self {
        self.fan = self.fan.with_window(window);
        self
    }
}

/// The next attempt of `task`: the same question (no crash planned this time) to the next
/// worker still up with the skill of the worker that failed it, looking on from that one.
fn next_worker(
    workers: &[(String, Skill)],
    task: &team::Task,
    up: &[String],
) -> Option<team::Task> {
    let at = workers.iter().position(|(w, _)| *w == task.agent)?;
    let skill = workers[at].1;
    (1..=workers.len())
        .map(|step| &workers[(at + step) % workers.len()])
        .find(|(w, s)| *s == skill && up.contains(w))
        .map(|(w, _)| team::Task::new(w, &task.query))
}

/// What the coordinator knows of one task beyond the team's round.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Tally {
    tool_calls: u32,
    tool_results_correct: u32,
    /// Attempts made so far.
    attempts: u32,
    /// Why its last attempt failed.
    error: Option<String>,
}

/// The coordinator's state for one batch.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Gathering {
    /// The round of asks.
    fan: FanOutState,
    batch: Option<String>,
    tasks: Vec<Task>,
    tallies: Vec<Tally>,
    first_sent_ms: u64,
    report: Report,
}

impl Strategy for Coordinator {
    type State = Gathering;

    fn init(&self, _env: &dyn Env) -> Gathering {
        Gathering::default()
    }

    fn handle(
        &self,
        state: &mut Gathering,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let out = match signal.signal_type().as_str() {
            RUN => {
                let out = self.start(state, signal, env)?;
                return self.progressed(state, out, false);
            }
            TOOL_REPORT => {
                let report: ToolReport = read(signal)?;
                let Some(slot) = state.fan.ask(&report.request_id).map(|a| a.slot) else {
                    return Ok(Vec::new());
                };
                if let (Some(tally), Some(task)) =
                    (state.tallies.get_mut(slot), state.tasks.get(slot))
                {
                    tally.tool_calls += 1;
                    if task.tool_result_correct(&report.output, report.is_error) {
                        tally.tool_results_correct += 1;
                    }
                }
                return Ok(Vec::new());
            }
            THREAD_RESTARTED => {
                let failure: ThreadFailure = read(signal)?;
                state.report.restarts += 1;
                // A task's thread is named after its request: that request died with it.
                failed(state, &failure.thread, &failure.error);
                self.fan
                    .lost(&mut state.fan, &failure.thread, &failure.error, env)?
            }
            AGENT_STOPPED => {
                let failure: ThreadFailure = read(signal)?;
                let theirs: Vec<String> = state
                    .fan
                    .asks()
                    .iter()
                    .filter(|a| a.open && a.agent == failure.agent)
                    .map(|a| a.request_id.to_owned())
                    .collect();
                for request in theirs {
                    failed(state, &request, &failure.error);
                }
                self.fan
                    .member_gone(&mut state.fan, &failure.agent, &failure.error, env)?
            }
            _ => {
                // A worker's reply, or the runtime's word that none will come (its thread
                // crashed): any `agent.completed` / `agent.failed`, read as a team reads it.
                let Some(reply) = team::heard(signal)? else {
                    return Ok(Vec::new());
                };
                // A late answer to an attempt already replaced changes nothing.
                if !self.heard(state, signal, &reply, env) {
                    return Ok(Vec::new());
                }
                self.fan.handle(&mut state.fan, signal, env)?
            }
        };
        self.progressed(state, out, true)
    }
}

/// The ask `request` failed with `error`: its task's tally says so.
fn failed(state: &mut Gathering, request: &str, error: &str) {
    let Some(ask) = state.fan.ask(request).filter(|a| a.open) else {
        return;
    };
    let (slot, attempt) = (ask.slot, ask.attempt);
    if let Some(tally) = state.tallies.get_mut(slot) {
        tally.attempts = attempt + 1;
        tally.error = Some(error.to_owned());
    }
}

impl Coordinator {
    /// `swarm.run`: every task asked of the worker with its skill the batch order gives it.
    fn start(
        &self,
        state: &mut Gathering,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let batch: Batch = read(signal)?;
        let mut asks = Vec::with_capacity(batch.tasks.len());
        for (k, task) in batch.tasks.iter().enumerate() {
            let Some(worker) = self.pick(task.skill, k) else {
                return Err(StrategyError::InvalidData {
                    signal_type: RUN.to_owned(),
                    message: format!("no worker can do task {} ({:?})", task.id, task.skill),
                });
            };
            let mut ask = team::Task::new(worker, &task.query);
            if task.chaos {
                // The first attempt only: an attempt after it is asked without it.
                ask = ask.with_field("crash", serde_json::Value::Bool(true));
            }
            asks.push(ask);
        }
        let out = self.fan.start(&mut state.fan, signal, asks, env)?;
        state.batch = signal.request_id().map(str::to_owned);
        state.tallies = vec![Tally::default(); batch.tasks.len()];
        state.tasks = batch.tasks;
        state.first_sent_ms = env.now_ms();
        state.report = Report::default();
        Ok(out)
    }

    /// A worker's reply, noted in its task's tally (or outcome); `false` for one that answers
    /// no open ask.
    fn heard(
        &self,
        state: &mut Gathering,
        signal: &Signal,
        reply: &team::Heard,
        env: &dyn Env,
    ) -> bool {
        let Some(ask) = state.fan.ask(reply.request_id()).filter(|a| a.open) else {
            return false;
        };
        let (slot, attempt) = (ask.slot, ask.attempt);
        let (Some(tally), Some(task)) = (state.tallies.get_mut(slot), state.tasks.get(slot)) else {
            return true;
        };
        tally.attempts = attempt + 1;
        match reply {
            team::Heard::Answer { answer, usage, .. } => {
                state.report.tokens_in += usage.input_tokens;
                state.report.tokens_out += usage.output_tokens;
                // ReAct says how many LLM calls its answer took.
                let llm_calls = signal
                    .data_as::<ReactCompleted>()
                    .map_or(0, |done| done.iterations);
                state.report.outcomes.push(Outcome {
                    id: task.id,
                    answer_correct: task.answer_correct(answer),
                    answer: Some(answer.clone()),
                    error: None,
                    attempts: tally.attempts,
                    latency_ms: env.now_ms().saturating_sub(state.first_sent_ms),
                    llm_calls,
                    skill: task.skill,
                    tool_calls: tally.tool_calls,
                    tool_results_correct: tally.tool_results_correct,
                });
            }
            team::Heard::Failure { message, usage, .. } => {
                state.report.tokens_in += usage.input_tokens;
                state.report.tokens_out += usage.output_tokens;
                tally.error = Some(message.clone());
            }
        }
        true
    }

    /// `out` as the team returned it (its asks of a task asked before counted as retries when
    /// `retries`; a first ask let go by the window is not one), then the progress so far; the
    /// team's reply (the round is over) becomes the report.
    fn progressed(
        &self,
        state: &mut Gathering,
        out: Vec<Directive>,
        retries: bool,
    ) -> Result<Vec<Directive>, StrategyError> {
        let mut kept = Vec::with_capacity(out.len() + 2);
        let mut over = false;
        for directive in out {
            match directive {
                Directive::Reply(_) => over = true,
                Directive::Emit(emit)
                    if retries && emit.signal.signal_type().as_str() == AGENT_REQUEST =>
                {
                    let again = emit
                        .signal
                        .request_id()
                        .and_then(|id| state.fan.ask(id))
                        .is_some_and(|ask| ask.attempt > 0);
                    if again {
                        state.report.retries += 1;
                    }
                    kept.push(Directive::Emit(emit));
                }
                other => kept.push(other),
            }
        }
        if over {
            self.settle_failures(state);
        }
        kept.push(progress(state)?);
        if over && let Some(batch) = state.batch.take() {
            let mut report = std::mem::take(&mut state.report);
            report.outcomes.sort_by_key(|o| o.id);
            let done = Signal::builder(DONE, "coordinator")
                .with_request_id(batch)
                .with_data(report)
                .build()
                .map_err(|e| emit_error(DONE, e))?;
            kept.push(Directive::Reply(Reply::completed(done)));
        }
        Ok(kept)
    }

    /// The round is over: every task without an answer is out of attempts.
    fn settle_failures(&self, state: &mut Gathering) {
        let answered: BTreeSet<usize> = state.report.outcomes.iter().map(|o| o.id).collect();
        for (task, tally) in state.tasks.iter().zip(&state.tallies) {
            if answered.contains(&task.id) {
                continue;
            }
            state.report.outcomes.push(Outcome {
                id: task.id,
                answer: None,
                error: Some(
                    tally
                        .error
                        .clone()
                        .unwrap_or_else(|| "no answer".to_owned()),
                ),
                attempts: tally.attempts.max(1),
                latency_ms: 0,
                llm_calls: 0,
                skill: task.skill,
                tool_calls: tally.tool_calls,
                tool_results_correct: tally.tool_results_correct,
                answer_correct: false,
            });
        }
    }

    /// The first worker with `skill`, looking from worker `from` on.
    fn pick(&self, skill: Skill, from: usize) -> Option<&str> {
        (0..self.workers.len())
            .map(|step| &self.workers[(from + step) % self.workers.len()])
            .find(|(_, s)| *s == skill)
            .map(|(w, _)| w.as_str())
    }
}

/// `swarm.progress` for the bus.
fn progress(state: &Gathering) -> Result<Directive, StrategyError> {
    let failed = state
        .report
        .outcomes
        .iter()
        .filter(|o| o.answer.is_none())
        .count();
    let busy: BTreeSet<&str> = state
        .fan
        .asks()
        .into_iter()
        .filter(|a| a.open)
        .map(|a| a.agent)
        .collect();
    let data = Progress {
        answered: state.report.outcomes.len() - failed,
        failed,
        busy_agents: busy.len(),
        restarts: state.report.restarts,
        tokens: state.report.tokens_in + state.report.tokens_out,
    };
    emit_bus(Signal::builder(PROGRESS, "coordinator").with_data(data))
}

fn emit_bus(builder: motet::signals::SignalBuilder) -> Result<Directive, StrategyError> {
    let signal = builder.build().map_err(|e| emit_error("swarm", e))?;
    Ok(Directive::Emit(Emit {
        signal,
        target: EmitTarget::Bus,
    }))
}

fn read<T: serde::de::DeserializeOwned>(signal: &Signal) -> Result<T, StrategyError> {
    signal.data_as().map_err(|e| StrategyError::InvalidData {
        signal_type: signal.signal_type().as_str().to_owned(),
        message: e.to_string(),
    })
}

fn emit_error(signal_type: &str, error: SignalError) -> StrategyError {
    StrategyError::Emit {
        signal_type: signal_type.to_owned(),
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_stated_whole() {
        let table = [
            ("17 * 23 = 391.", "391", true),
            ("The answer is 3910.", "391", false),
            ("13910", "391", false),
            ("It is 1,234 in all", "1234", true),
            ("391, then 12", "391", true),
            ("The code is 4471.", "4471", true),
            ("no digits", "4471", false),
            ("4471", "4471", true),
        ];
        for (text, number, expected) in table {
            assert_eq!(states(text, number), expected, "{text:?} states {number}");
        }
    }

    /// The agent and request id of each `agent.request` in `out`, with its `crash` flag.
    fn asks(out: &[Directive]) -> Vec<(String, String, bool)> {
        out.iter()
            .filter_map(|d| match d {
                Directive::Emit(Emit {
                    signal,
                    target: EmitTarget::Agent(agent),
                }) if signal.signal_type().as_str() == AGENT_REQUEST => {
                    let input: WorkerInput = signal.data_as().unwrap();
                    Some((
                        agent.clone(),
                        signal.request_id().unwrap().to_owned(),
                        input.crash,
                    ))
                }
                _ => None,
            })
            .collect()
    }

    fn signal(ty: &str, request: Option<&str>, data: serde_json::Value) -> Signal {
        let mut builder = Signal::builder(ty, "test").with_data(data);
        if let Some(request) = request {
            builder = builder.with_request_id(request);
        }
        builder.build().unwrap()
    }

    /// A batch on the team: a crashed worker's task asked again of the next worker with its
    /// skill (without the crash), a failed one too, tool reports counted, and the report.
    #[test]
    fn a_batch_is_fanned_out_retried_and_reported() {
        let env = motet::agents::FixedEnv::new(0);
        let workers = [
            ("w0", Skill::Calculate),
            ("w1", Skill::Read),
            ("w2", Skill::Calculate),
            ("w3", Skill::Read),
        ]
        .map(|(w, s)| (w.to_owned(), s))
        .to_vec();
        let coordinator = Coordinator::new(workers, 3);
        let mut state = coordinator.init(&env);
        let task = |id, skill, expected: &str, chaos| Task {
            id,
            skill,
            query: format!("task {id}"),
            expected: expected.to_owned(),
            chaos,
        };
        let batch = Batch {
            tasks: vec![
                task(0, Skill::Calculate, "391", true),
                task(1, Skill::Read, "4471", false),
            ],
        };
        let run = Signal::builder(RUN, "swarm")
            .with_request_id("batch-1")
            .with_data(batch)
            .build()
            .unwrap();
        let out = coordinator.handle(&mut state, &run, &env).unwrap();
        assert_eq!(
            asks(&out),
            [
                ("w0".into(), "batch-1.0".into(), true),
                ("w1".into(), "batch-1.1".into(), false)
            ]
        );
        // w0's thread crashed on purpose: its task goes to w2, without the crash.
        let restarted = serde_json::json!({"agent": "w0", "thread": "batch-1.0", "error": "chaos"});
        let out = coordinator
            .handle(&mut state, &signal(THREAD_RESTARTED, None, restarted), &env)
            .unwrap();
        assert_eq!(asks(&out), [("w2".into(), "batch-1.0.1".into(), false)]);
        // The runtime's word that the crashed ask will not be answered changes nothing more.
        let lost = serde_json::json!({"message": "agent `w0`'s thread stopped"});
        let out = coordinator
            .handle(
                &mut state,
                &signal("agent.failed", Some("batch-1.0"), lost),
                &env,
            )
            .unwrap();
        assert!(out.is_empty(), "{out:?}");
        // w1 fails its task: w3 is asked.
        let failed = serde_json::json!({"message": "no file"});
        let out = coordinator
            .handle(
                &mut state,
                &signal("agent.failed", Some("batch-1.1"), failed),
                &env,
            )
            .unwrap();
        assert_eq!(asks(&out), [("w3".into(), "batch-1.1.1".into(), false)]);
        let report = serde_json::json!({
            "request_id": "batch-1.0.1", "tool": "multiply", "output": "391", "is_error": false
        });
        coordinator
            .handle(
                &mut state,
                &signal(TOOL_REPORT, Some("batch-1.0.1"), report),
                &env,
            )
            .unwrap();
        let done = |request: &str, answer: &str| {
            serde_json::json!({
                "request_id": request, "answer": answer, "iterations": 2,
                "usage": {"input_tokens": 10, "output_tokens": 5},
                "thread_usage": {"input_tokens": 10, "output_tokens": 5}
            })
        };
        coordinator
            .handle(
                &mut state,
                &signal(
                    "agent.completed",
                    Some("batch-1.0.1"),
                    done("batch-1.0.1", "It is 391."),
                ),
                &env,
            )
            .unwrap();
        let out = coordinator
            .handle(
                &mut state,
                &signal(
                    "agent.completed",
                    Some("batch-1.1.1"),
                    done("batch-1.1.1", "4471"),
                ),
                &env,
            )
            .unwrap();
        let Some(Directive::Reply(reply)) = out.last() else {
            panic!("no report: {out:?}");
        };
        let report: Report = reply.signal.data_as().unwrap();
        assert_eq!((report.restarts, report.retries), (1, 2));
        assert_eq!((report.tokens_in, report.tokens_out), (20, 10));
        let firsts: Vec<_> = report
            .outcomes
            .iter()
            .map(|o| {
                (
                    o.id,
                    o.attempts,
                    o.llm_calls,
                    o.tool_calls,
                    o.tool_results_correct,
                    o.answer_correct,
                )
            })
            .collect();
        assert_eq!(firsts, [(0, 2, 2, 1, 1, true), (1, 2, 2, 0, 0, true)]);
    }

    #[test]
    fn tool_results_are_checked_by_skill() {
        let task = |skill, expected: &str| Task {
            id: 0,
            skill,
            query: String::new(),
            expected: expected.to_owned(),
            chaos: false,
        };
        let product = task(Skill::Calculate, "391");
        assert!(product.tool_result_correct("391", false));
        assert!(!product.tool_result_correct("391", true));
        assert!(!product.tool_result_correct("3910", false));
        let note = task(Skill::Read, "4471");
        assert!(note.tool_result_correct("The code is 4471.\n", false));
        assert!(!note.tool_result_correct("no file `notes/x.txt`", true));
        assert!(note.answer_correct("The code in alpha.txt is 4471."));
        assert!(!note.answer_correct("The code is 447."));
    }
}
