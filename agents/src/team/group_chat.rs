//! [`GroupChat`]: named members speak in turn — round-robin, or as a selector picks — each
//! seeing the conversation so far, until a termination condition holds: a number of turns, a
//! stop phrase in a turn, or a predicate over the turns.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use motet_directives::{Directive, Usage};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use super::ask::Asker;
use super::gather::{Gather, Join, Settle};
use super::step::{Team, handle};
use super::{MemberAnswer, TeamCompleted, TeamFailed, TeamFailure};
use crate::env::Env;
use crate::error::StrategyError;
use crate::protocol::{AgentRequest, Input};
use crate::strategy::Strategy;

/// One turn of the conversation.
pub type Turn = MemberAnswer;

type Select = Arc<dyn Fn(&[Turn], &[String]) -> Option<String> + Send + Sync>;
type Until = Arc<dyn Fn(&[Turn]) -> bool + Send + Sync>;

/// A conversation among members. Each turn asks one member, on a thread of its own, with the
/// task and every turn so far; its answer is the next turn. It ends when `max_turns` turns
/// were taken, a turn contains the stop phrase, the predicate holds, or the selector names no
/// one; the team's answer is the last turn. A member that fails (or times out) fails the chat.
///
/// # Example
/// ```
/// use motet_agents::team::GroupChat;
///
/// let chat = GroupChat::new(["writer", "critic"])
///     .with_max_turns(6)
///     .with_stop_phrase("APPROVED")
///     .with_stop_when(|turns| turns.iter().any(|t| t.answer.is_empty()));
/// assert_eq!(chat.members(), ["writer", "critic"]);
/// ```
#[derive(Clone)]
pub struct GroupChat {
    members: Vec<String>,
    select: Option<Select>,
    max_turns: usize,
    stop_phrase: Option<String>,
    until: Option<Until>,
    timeout: Option<Duration>,
}

impl fmt::Debug for GroupChat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupChat")
            .field("members", &self.members)
            .field("max_turns", &self.max_turns)
            .field("stop_phrase", &self.stop_phrase)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl GroupChat {
    /// A round-robin chat among `members` (agent names), one turn each.
    pub fn new<I: IntoIterator<Item = impl Into<String>>>(members: I) -> Self {
        let members: Vec<String> = members.into_iter().map(Into::into).collect();
        Self {
            max_turns: members.len(),
            members,
            select: None,
            stop_phrase: None,
            until: None,
            timeout: None,
        }
    }

    /// Picks each turn's speaker from the turns so far and the members (`None` ends the chat;
    /// a name not among the members too).
    pub fn with_selector(
        mut self,
        select: impl Fn(&[Turn], &[String]) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.select = Some(Arc::new(select));
        self
    }

    /// Ends the chat after `turns` turns.
    pub fn with_max_turns(mut self, turns: usize) -> Self {
        self.max_turns = turns;
        self
    }

    /// Ends the chat at the first turn containing `phrase`.
    pub fn with_stop_phrase(mut self, phrase: impl Into<String>) -> Self {
        self.stop_phrase = Some(phrase.into());
        self
    }

    /// Ends the chat once `until` holds over the turns.
    pub fn with_stop_when(
        mut self,
        until: impl Fn(&[Turn]) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.until = Some(Arc::new(until));
        self
    }

    /// How long each speaker has for its turn.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The members.
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// The next speaker, or `None` when the chat is over.
    fn next_speaker(&self, turns: &[Turn]) -> Option<String> {
        if turns.len() >= self.max_turns || self.members.is_empty() {
            return None;
        }
        if let Some(last) = turns.last() {
            let stopped = self
                .stop_phrase
                .as_ref()
                .is_some_and(|p| last.answer.contains(p.as_str()));
            if stopped || self.until.as_ref().is_some_and(|until| until(turns)) {
                return None;
            }
        }
        match &self.select {
            Some(select) => select(turns, &self.members).filter(|m| self.members.contains(m)),
            None => self.members.get(turns.len() % self.members.len()).cloned(),
        }
    }

    /// What the speaker is asked: the task, the turns so far, and who it is.
    pub fn prompt(task: &str, turns: &[Turn], speaker: &str) -> String {
        let mut prompt = format!("The task: {task}\n");
        if !turns.is_empty() {
            prompt.push_str("\nThe conversation so far:\n");
            for turn in turns {
                prompt.push_str(&format!("[{}] {}\n", turn.agent, turn.answer.trim()));
            }
        }
        prompt.push_str(&format!(
            "\nYou are {speaker}. Give your part of the conversation."
        ));
        prompt
    }
}

/// A [`GroupChat`]'s state: the open request's conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupChatState {
    open: Option<(Asker, Gather)>,
    task: String,
    turns: Vec<Turn>,
    usage: Usage,
}

impl GroupChatState {
    /// The turns taken so far.
    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }
}

impl Strategy for GroupChat {
    type State = GroupChatState;

    fn init(&self, _env: &dyn Env) -> GroupChatState {
        GroupChatState::default()
    }

    fn handle(
        &self,
        state: &mut GroupChatState,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        handle(self, state, signal, env)
    }
}

impl Team for GroupChat {
    type State = GroupChatState;

    fn round(state: &mut GroupChatState) -> &mut Option<(Asker, Gather)> {
        &mut state.open
    }

    fn request(
        &self,
        state: &mut GroupChatState,
        request: AgentRequest,
        asker: Asker,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        state.task = request.query;
        state.turns.clear();
        state.usage = Usage::default();
        state.open = Some((asker, Gather::new(Join::All, self.timeout)));
        self.next_turn(state, env)
    }

    fn other(
        &self,
        state: &mut GroupChatState,
        _input: Input<'_>,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some((asker, gather)) = state.open.as_mut() else {
            return Ok(Vec::new());
        };
        let Some(mut out) = gather.take(signal, env)? else {
            return Ok(Vec::new());
        };
        match gather.settle() {
            Settle::Pending => {}
            Settle::Done(mut answers) => {
                state.usage += gather.usage;
                state.turns.append(&mut answers);
                out.extend(self.next_turn(state, env)?);
            }
            Settle::Failed(failure) => {
                let usage = state.usage + gather.usage;
                out.push(asker.failed(env, TeamFailed::new(failure, usage))?);
                state.open = None;
            }
        }
        Ok(out)
    }
}

impl GroupChat {
    /// Asks the next speaker, or ends the chat with the last turn as the answer.
    fn next_turn(
        &self,
        state: &mut GroupChatState,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some((asker, _)) = state.open.as_ref() else {
            return Ok(Vec::new());
        };
        let asker = asker.clone();
        let Some(speaker) = self.next_speaker(&state.turns) else {
            state.open = None;
            let Some(last) = state.turns.last() else {
                let failure = TeamFailure::NoRoute {
                    message: "no member took a turn".to_owned(),
                };
                return Ok(vec![
                    asker.failed(env, TeamFailed::new(failure, state.usage))?,
                ]);
            };
            let done = TeamCompleted {
                answer: last.answer.clone(),
                usage: state.usage,
                answers: state.turns.clone(),
            };
            return Ok(vec![asker.completed(env, done)?]);
        };
        let mut gather = Gather::new(Join::All, self.timeout);
        let id = format!("{}.{}", asker.request_id, state.turns.len());
        let data = serde_json::json!({
            "query": Self::prompt(&state.task, &state.turns, &speaker),
        });
        let out = gather.ask(&speaker, id, &data, env)?;
        state.open = Some((asker, gather));
        Ok(out)
    }
}
