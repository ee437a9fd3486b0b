//! The coordinator: a pure strategy that fans a batch of tasks out to the workers and gathers
//! their answers, all through signals.
//!
//! - `swarm.run` (an ask) brings the batch. Each task goes to a worker with the task's skill as
//!   a `agent.request` signal (`Emit` to that agent), on a thread of its own named after the task
//!   and attempt, so no task sees another's history.
//! - Workers answer on the bus (`agent.completed` / `agent.failed`, which the coordinator
//!   subscribes to and reads as a `ReactReply`). Every answer moves the count on and is published as `swarm.progress`.
//! - Workers also report every tool result (`swarm.tool`): the coordinator counts the tool
//!   calls of each task and checks each result, and then the answer, against the result the
//!   task expects (the product, the code in the note).
//! - The supervisor publishes `agent.thread.restarted` when a worker's thread crashed: the task
//!   it was running is lost with it, so the coordinator sends it again, to the next worker with
//!   that skill. A
//!   failed request is tried again the same way, up to `max_attempts`.
//! - When every task is answered or out of attempts, `swarm.done` answers the ask with a
//!   [`Report`].

use std::collections::{BTreeSet, HashMap};

use motet::agents::ReactReply;
use motet::directives::{Emit, EmitTarget, Reply};
use motet::prelude::*;
use motet::runtime::agent::ThreadFailure;
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

/// Fans tasks out to `workers` and gathers the answers.
pub(crate) struct Coordinator {
    /// Each worker's agent name and skill.
    workers: Vec<(String, Skill)>,
    max_attempts: u32,
}

impl Coordinator {
    /// A coordinator for these workers (agent name, skill), trying each task up to
    /// `max_attempts`.
    pub(crate) fn new(workers: Vec<(String, Skill)>, max_attempts: u32) -> Self {
        Self {
            workers,
            max_attempts: max_attempts.max(1),
        }
    }
}

/// A task on its way: keyed by the request id its worker answers with.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Open {
    task: Task,
    attempt: u32,
    worker: usize,
    first_sent_ms: u64,
    tool_calls: u32,
    tool_results_correct: u32,
}

/// The coordinator's state for one batch.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Gathering {
    batch: Option<String>,
    total: usize,
    open: HashMap<String, Open>,
    /// Workers the supervisor stopped; nothing more is sent to them.
    stopped: BTreeSet<usize>,
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
        if let Some(reply) = ReactReply::of(signal)? {
            // A late answer to an attempt already replaced changes nothing.
            let Some(out) = self.on_reply(state, reply, env)? else {
                return Ok(Vec::new());
            };
            return progressed(state, out);
        }
        let mut out = Vec::new();
        match signal.signal_type().as_str() {
            RUN => {
                let batch: Batch = read(signal)?;
                state.batch = signal.request_id().map(str::to_owned);
                state.total = batch.tasks.len();
                for (k, task) in batch.tasks.into_iter().enumerate() {
                    let Some(worker) = self.pick(state, task.skill, k) else {
                        return Err(StrategyError::InvalidData {
                            signal_type: RUN.to_owned(),
                            message: format!(
                                "no worker can do task {} ({:?})",
                                task.id, task.skill
                            ),
                        });
                    };
                    let open = Open {
                        task,
                        attempt: 0,
                        worker,
                        first_sent_ms: env.now_ms(),
                        tool_calls: 0,
                        tool_results_correct: 0,
                    };
                    out.push(self.dispatch(state, open)?);
                }
            }
            TOOL_REPORT => {
                let report: ToolReport = read(signal)?;
                if let Some(open) = state.open.get_mut(&report.request_id) {
                    open.tool_calls += 1;
                    if open
                        .task
                        .tool_result_correct(&report.output, report.is_error)
                    {
                        open.tool_results_correct += 1;
                    }
                }
                return Ok(Vec::new());
            }
            motet::runtime::agent::THREAD_RESTARTED => {
                let failure: ThreadFailure = read(signal)?;
                state.report.restarts += 1;
                // A task's thread is named after its request id: that request died with it.
                if let Some(open) = state.open.remove(&failure.thread) {
                    out.extend(self.retry(state, open, failure.error, env)?);
                }
            }
            motet::runtime::agent::AGENT_STOPPED => {
                let failure: ThreadFailure = read(signal)?;
                if let Some(worker) = self.workers.iter().position(|(w, _)| *w == failure.agent) {
                    state.stopped.insert(worker);
                }
                let lost: Vec<String> = state
                    .open
                    .iter()
                    .filter(|(_, open)| self.workers[open.worker].0 == failure.agent)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in lost {
                    if let Some(open) = state.open.remove(&id) {
                        out.extend(self.retry(state, open, failure.error.clone(), env)?);
                    }
                }
            }
            _ => return Ok(Vec::new()),
        }
        progressed(state, out)
    }
}

/// `out`, then the progress so far, and the report when every task has its outcome.
fn progressed(
    state: &mut Gathering,
    mut out: Vec<Directive>,
) -> Result<Vec<Directive>, StrategyError> {
    out.push(progress(state)?);
    if state.report.outcomes.len() == state.total
        && let Some(batch) = state.batch.take()
    {
        let mut report = std::mem::take(&mut state.report);
        report.outcomes.sort_by_key(|o| o.id);
        let done = Signal::builder(DONE, "coordinator")
            .with_request_id(batch)
            .with_data(report)
            .build()
            .map_err(|e| emit_error(DONE, e))?;
        out.push(Directive::Reply(Reply::completed(done)));
    }
    Ok(out)
}

impl Coordinator {
    /// A worker's reply: the task's outcome, or another attempt after a failure. `None` for
    /// a reply to an attempt already replaced.
    fn on_reply(
        &self,
        state: &mut Gathering,
        reply: ReactReply,
        env: &dyn Env,
    ) -> Result<Option<Vec<Directive>>, StrategyError> {
        let Some(open) = state.open.remove(reply.request_id()) else {
            return Ok(None);
        };
        let usage = reply.usage();
        state.report.tokens_in += usage.input_tokens;
        state.report.tokens_out += usage.output_tokens;
        match reply {
            ReactReply::Completed(done) => {
                state.report.outcomes.push(Outcome {
                    id: open.task.id,
                    answer_correct: open.task.answer_correct(&done.answer),
                    answer: Some(done.answer),
                    error: None,
                    attempts: open.attempt + 1,
                    latency_ms: env.now_ms().saturating_sub(open.first_sent_ms),
                    llm_calls: done.iterations,
                    skill: open.task.skill,
                    tool_calls: open.tool_calls,
                    tool_results_correct: open.tool_results_correct,
                });
                Ok(Some(Vec::new()))
            }
            ReactReply::Failed(failed) => {
                let why = failed.reason.to_string();
                let retried = self.retry(state, open, why, env)?;
                Ok(Some(retried.into_iter().collect()))
            }
        }
    }

    /// Sends a task to its worker as `agent.request`, on a thread named after the attempt.
    fn dispatch(&self, state: &mut Gathering, open: Open) -> Result<Directive, StrategyError> {
        let request = format!("task-{}.{}", open.task.id, open.attempt);
        let input = WorkerInput {
            query: open.task.query.clone(),
            crash: open.task.chaos && open.attempt == 0,
        };
        let signal = Signal::builder("agent.request", "coordinator")
            .with_request_id(&request)
            .with_thread_id(&request)
            .with_data(input)
            .build()
            .map_err(|e| emit_error("agent.request", e))?;
        let worker = self.workers[open.worker].0.clone();
        state.open.insert(request, open);
        Ok(Directive::Emit(Emit {
            signal,
            target: EmitTarget::Agent(worker),
        }))
    }

    /// The first running worker with `skill`, looking from worker `from` on.
    fn pick(&self, state: &Gathering, skill: Skill, from: usize) -> Option<usize> {
        (0..self.workers.len())
            .map(|step| (from + step) % self.workers.len())
            .find(|&w| self.workers[w].1 == skill && !state.stopped.contains(&w))
    }

    /// Sends the task again to the next running worker with its skill, or records it as failed
    /// when it is out of attempts (or no such worker is left).
    fn retry(
        &self,
        state: &mut Gathering,
        open: Open,
        error: String,
        env: &dyn Env,
    ) -> Result<Option<Directive>, StrategyError> {
        let next_worker = self.pick(state, open.task.skill, open.worker + 1);
        match next_worker {
            Some(worker) if open.attempt + 1 < self.max_attempts => {
                state.report.retries += 1;
                let again = Open {
                    attempt: open.attempt + 1,
                    worker,
                    ..open
                };
                self.dispatch(state, again).map(Some)
            }
            _ => {
                state.report.outcomes.push(Outcome {
                    id: open.task.id,
                    answer: None,
                    error: Some(error),
                    attempts: open.attempt + 1,
                    latency_ms: env.now_ms().saturating_sub(open.first_sent_ms),
                    llm_calls: 0,
                    skill: open.task.skill,
                    tool_calls: open.tool_calls,
                    tool_results_correct: open.tool_results_correct,
                    answer_correct: false,
                });
                Ok(None)
            }
        }
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
    let busy: BTreeSet<usize> = state.open.values().map(|o| o.worker).collect();
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
