//! The book of one round of asks: which members were asked, which answered or failed, and
//! what the join rule makes of it. Pure and small; every team keeps its asks in one.

use std::time::Duration;

use motet_directives::{CancelSchedule, Directive, Schedule, ScheduleId, Usage};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use super::ask::Asker;
use super::ask::{Ask, emit_error, heard};
use super::{
    Heard, MemberAnswer, TEAM_TIMEOUT, TeamCompleted, TeamFailed, TeamFailure, TeamTimeout,
};
use crate::env::Env;
use crate::error::StrategyError;

/// How many answers a round needs, and what a failure does to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "join", content = "k", rename_all = "snake_case")]
pub enum Join {
    /// Every member must answer: the first failure (or timeout) fails the round and cancels
    /// the rest.
    All,
    /// The round is done once `k` members answered (the rest are cancelled), and fails once
    /// so many failed that `k` answers can no longer come.
    AtLeast(usize),
    /// Every member is waited for (or its timeout); the round is done with the answers that
    /// came, and fails only when none did.
    BestEffort,
}

/// Where a round stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Settle {
    /// Answers are still to come.
    Pending,
    /// Enough answers came: these, in ask order.
    Done(Vec<MemberAnswer>),
    /// The rule cannot be met.
    Failed(TeamFailure),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Status {
    /// Not asked yet: it waits for a place in the team's window.
    Queued,
    Open,
    Answered(MemberAnswer),
    Failed(TeamFailure),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Asked {
    ask: Ask,
    status: Status,
    timer: Option<ScheduleId>,
    /// Attempts made before this one (0 for the first ask of its slot).
    #[serde(default, skip_serializing_if = "is_zero")]
    attempt: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Where one ask of a round stands, as a team composing a round reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskView<'a> {
    /// Its place in the round (the task's index).
    pub slot: usize,
    /// The member asked.
    pub agent: &'a str,
    /// The request it was asked under.
    pub request_id: &'a str,
    /// Attempts made before this one.
    pub attempt: u32,
    /// Whether its answer is still to come (asked, or waiting to be).
    pub open: bool,
    /// Whether it waits to be asked (a team asking a few at a time).
    pub queued: bool,
}

/// One round of asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Gather {
    join: Join,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
    asked: Vec<Asked>,
    /// Every reply's usage, answers and failures alike.
    pub(crate) usage: Usage,
}

impl Gather {
    /// A round under `join`, each member given `timeout` to answer.
    pub(crate) fn new(join: Join, timeout: Option<Duration>) -> Self {
        Self {
            join,
            timeout_ms: timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            asked: Vec::new(),
            usage: Usage::default(),
        }
    }

    /// Asks `agent` with `data` as request `request_id`: the `agent.request`, and the timer of
    /// its timeout when there is one.
    pub(crate) fn ask(
        &mut self,
        agent: &str,
        request_id: String,
        data: &serde_json::Value,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let (asked, out) = self.sent(agent, request_id, data, 0, env)?;
        self.asked.push(asked);
        Ok(out)
    }

    /// Asks slot `slot` again — of `agent`, as request `request_id` — after its ask failed:
    /// the slot's answer is this ask's from now on (a late reply to the one before is not
    /// heard). Nothing for a slot that is not failed.
    pub(crate) fn again(
        &mut self,
        slot: usize,
        agent: &str,
        request_id: String,
        data: &serde_json::Value,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(attempt) = self
            .asked
            .get(slot)
            .filter(|a| matches!(a.status, Status::Failed(_)))
            .map(|a| a.attempt + 1)
        else {
            return Ok(Vec::new());
        };
        let (asked, out) = self.sent(agent, request_id, data, attempt, env)?;
        if let Some(place) = self.asked.get_mut(slot) {
            *place = asked;
        }
        Ok(out)
    }

    /// One ask sent: its `agent.request`, and the timer of its timeout when there is one.
    fn sent(
        &self,
        agent: &str,
        request_id: String,
        data: &serde_json::Value,
        attempt: u32,
        env: &dyn Env,
    ) -> Result<(Asked, Vec<Directive>), StrategyError> {
        let ask = Ask {
            agent: agent.to_owned(),
            request_id,
        };
        let mut out = vec![ask.send(data, env)?];
        let mut timer = None;
        if let Some(ms) = self.timeout_ms {
            let id = ScheduleId::new(format!("{TEAM_TIMEOUT}.{}", ask.request_id));
            let signal = Signal::builder(TEAM_TIMEOUT, "motet.team")
                .with_id(env.fresh_id("sig"))
                .with_time(env.now())
                .with_data(TeamTimeout {
                    request_id: ask.request_id.clone(),
                })
                .build()
                .map_err(|e| emit_error(TEAM_TIMEOUT, e))?;
            out.push(Directive::Schedule(Schedule {
                schedule_id: id.clone(),
                delay: Duration::from_millis(ms),
                signal,
            }));
            timer = Some(id);
        }
        let asked = Asked {
            ask,
            status: Status::Open,
            timer,
            attempt,
        };
        Ok((asked, out))
    }

    /// Every ask of the round, in slot order.
    pub(crate) fn asks(&self) -> impl Iterator<Item = AskView<'_>> {
        self.asked.iter().enumerate().map(|(slot, a)| AskView {
            slot,
            agent: &a.ask.agent,
            request_id: &a.ask.request_id,
            attempt: a.attempt,
            open: matches!(a.status, Status::Open | Status::Queued),
            queued: a.status == Status::Queued,
        })
    }

    /// Keeps a place for an ask of `agent` as request `request_id`, made later
    /// ([`send_queued`](Self::send_queued)): it counts as an answer still to come.
    pub(crate) fn queue(&mut self, agent: &str, request_id: String) {
        self.asked.push(Asked {
            ask: Ask {
                agent: agent.to_owned(),
                request_id,
            },
            status: Status::Queued,
            timer: None,
            attempt: 0,
        });
    }

    /// How many asks are out, waiting for their answers.
    pub(crate) fn in_flight(&self) -> usize {
        self.asked
            .iter()
            .filter(|a| a.status == Status::Open)
            .count()
    }

    /// The first slot still waiting to be asked.
    pub(crate) fn next_queued(&self) -> Option<usize> {
        self.asked.iter().position(|a| a.status == Status::Queued)
    }

    /// Asks queued slot `slot` now, of `agent`, with `data` (under the request id kept for
    /// it); its timeout starts now. Nothing for a slot not queued.
    pub(crate) fn send_queued(
        &mut self,
        slot: usize,
        agent: &str,
        data: &serde_json::Value,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(request_id) = self
            .asked
            .get(slot)
            .filter(|a| a.status == Status::Queued)
            .map(|a| a.ask.request_id.clone())
        else {
            return Ok(Vec::new());
        };
        let (asked, out) = self.sent(agent, request_id, data, 0, env)?;
        if let Some(place) = self.asked.get_mut(slot) {
            *place = asked;
        }
        Ok(out)
    }

    /// Queued slot `slot` is given up with `failure`, never asked.
    pub(crate) fn give_up(&mut self, slot: usize, failure: TeamFailure) {
        if let Some(asked) = self
            .asked
            .get_mut(slot)
            .filter(|a| a.status == Status::Queued)
        {
            asked.status = Status::Failed(failure);
        }
    }

    /// Whether slot `slot`'s ask failed (its member failed or did not answer in time): what
    /// a retry may take up.
    pub(crate) fn failed(&self, slot: usize) -> bool {
        self.asked.get(slot).is_some_and(|a| {
            matches!(
                a.status,
                Status::Failed(TeamFailure::Member { .. } | TeamFailure::TimedOut { .. })
            )
        })
    }

    /// Takes a member's reply in; `None` when it answers none of this round's asks (or one
    /// already settled), with the slot it settled and what to do about its timer otherwise.
    pub(crate) fn hear(&mut self, heard: Heard) -> Option<(usize, Vec<Directive>)> {
        let (slot, asked) =
            self.asked.iter_mut().enumerate().find(|(_, a)| {
                a.ask.request_id == heard.request_id() && a.status == Status::Open
            })?;
        asked.status = match heard {
            Heard::Answer { answer, usage, .. } => {
                self.usage += usage;
                Status::Answered(MemberAnswer {
                    agent: asked.ask.agent.clone(),
                    answer,
                    usage,
                })
            }
            Heard::Failure { message, usage, .. } => {
                self.usage += usage;
                Status::Failed(TeamFailure::Member {
                    agent: asked.ask.agent.clone(),
                    message,
                })
            }
        };
        let timer = asked
            .timer
            .take()
            .map(|schedule_id| Directive::CancelSchedule(CancelSchedule { schedule_id }));
        Some((slot, timer.into_iter().collect()))
    }

    /// A timeout fired: the ask it names fails, and its member is cancelled. `None` for one
    /// that answered already (or is not this round's).
    pub(crate) fn time_out(
        &mut self,
        timeout: &TeamTimeout,
        env: &dyn Env,
    ) -> Result<Option<(usize, Vec<Directive>)>, StrategyError> {
        let timeout_ms = self.timeout_ms.unwrap_or(0);
        let Some((slot, asked)) = self
            .asked
            .iter_mut()
            .enumerate()
            .find(|(_, a)| a.ask.request_id == timeout.request_id && a.status == Status::Open)
        else {
            return Ok(None);
        };
        asked.timer = None;
        asked.status = Status::Failed(TeamFailure::TimedOut {
            agent: asked.ask.agent.clone(),
            timeout_ms,
        });
        Ok(Some((slot, vec![asked.ask.cancel("timed out", env)?])))
    }

    /// Takes `signal` in when it is a member's reply or a timeout of this round; `None` when
    /// it is neither.
    ///
    /// # Errors
    /// [`StrategyError::InvalidData`] for a reply or a timeout whose data does not fit.
    pub(crate) fn take(
        &mut self,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Option<Vec<Directive>>, StrategyError> {
        Ok(self.take_slot(signal, env)?.map(|(_, out)| out))
    }

    /// As [`take`](Self::take), with the slot the signal settled.
    ///
    /// # Errors
    /// As [`take`](Self::take).
    pub(crate) fn take_slot(
        &mut self,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Option<(usize, Vec<Directive>)>, StrategyError> {
        if let Some(heard) = heard(signal)? {
            return Ok(self.hear(heard));
        }
        if signal.signal_type().as_str() == TEAM_TIMEOUT {
            let timeout: TeamTimeout =
                signal.data_as().map_err(|e| StrategyError::InvalidData {
                    signal_type: TEAM_TIMEOUT.to_owned(),
                    message: e.to_string(),
                })?;
            return self.time_out(&timeout, env);
        }
        Ok(None)
    }

    /// Where the round stands under its rule.
    pub(crate) fn settle(&self) -> Settle {
        let asked = self.asked.len();
        let answered = self.answers().len();
        let failures: Vec<&TeamFailure> = self
            .asked
            .iter()
            .filter_map(|a| match &a.status {
                Status::Failed(f) => Some(f),
                _ => None,
            })
            .collect();
        let open = asked - answered - failures.len();
        let too_few = |needed| {
            Settle::Failed(TeamFailure::TooFew {
                needed,
                answered,
                failed: failures.len(),
            })
        };
        match self.join {
            Join::All => match failures.first() {
                Some(first) => Settle::Failed((*first).clone()),
                None if open == 0 => Settle::Done(self.answers()),
                None => Settle::Pending,
            },
            Join::AtLeast(k) if answered >= k => Settle::Done(self.answers()),
            Join::AtLeast(k) if answered + open < k => too_few(k),
            Join::AtLeast(_) => Settle::Pending,
            Join::BestEffort if open > 0 => Settle::Pending,
            Join::BestEffort if answered == 0 => too_few(1),
            Join::BestEffort => Settle::Done(self.answers()),
        }
    }

    /// Cancels every ask still open (and its timer): the round is over.
    pub(crate) fn close(
        &mut self,
        reason: &str,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let mut out = Vec::new();
        for asked in &mut self.asked {
            if let Some(schedule_id) = asked.timer.take() {
                out.push(Directive::CancelSchedule(CancelSchedule { schedule_id }));
            }
            if matches!(asked.status, Status::Open | Status::Queued) {
                // A queued ask was never sent: nothing to cancel at its member.
                if asked.status == Status::Open {
                    out.push(asked.ask.cancel(reason, env)?);
                }
                asked.status = Status::Failed(TeamFailure::Cancelled {
                    reason: Some(reason.to_owned()),
                });
            }
        }
        Ok(out)
    }

    fn answers(&self) -> Vec<MemberAnswer> {
        self.asked
            .iter()
            .filter_map(|a| match &a.status {
                Status::Answered(answer) => Some(answer.clone()),
                _ => None,
            })
            .collect()
    }
}

/// The end of `gather`'s round, when its rule says it is over: the asks still open cancelled,
/// and the team's reply — `answer` made of the answers, `extra` usage (the team's own calls)
/// added to the members'. `None` while answers are still to come.
pub(crate) fn end_round(
    asker: &Asker,
    gather: &mut Gather,
    extra: Usage,
    answer: &dyn Fn(&[MemberAnswer]) -> String,
    env: &dyn Env,
) -> Result<Option<Vec<Directive>>, StrategyError> {
    let usage = gather.usage + extra;
    match gather.settle() {
        Settle::Pending => Ok(None),
        Settle::Done(answers) => {
            let mut out = gather.close("the team has the answers it needs", env)?;
            let done = TeamCompleted {
                answer: answer(&answers),
                usage,
                answers,
            };
            out.push(asker.completed(env, done)?);
            Ok(Some(out))
        }
        Settle::Failed(failure) => {
            let mut out = gather.close(&format!("the team failed: {failure}"), env)?;
            out.push(asker.failed(env, TeamFailed::new(failure, usage))?);
            Ok(Some(out))
        }
    }
}
