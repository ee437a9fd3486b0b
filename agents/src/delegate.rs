//! Agents working through each other, as pure decisions: the chain of agents a delegated
//! request passed through and the depth and cycle limits on it ([`Chain`], [`DelegateError`]),
//! which thread of the callee an agent-as-tool call lands on ([`CalleeThread`]) and the request
//! id it is asked under ([`callee_request`]), and for a handoff what history the receiving
//! agent sees ([`HistoryFilter`], [`briefing`]) and who holds a thread after one ([`holder`],
//! [`holder_change`]).
//!
//! The runtime carries these out (motet-runtime's `AgentTool` and `Handoff`); nothing here
//! does IO, so each rule is a plain `#[test]`.

use std::fmt;
use std::sync::Arc;

use crate::summary::transcript;
use crate::thread::{Entry, EntryBody, Thread};

/// How many delegations deep a request may go unless the tool says otherwise: `a → b → c →
/// d → e` is four, one more is refused.
pub const DEFAULT_MAX_DEPTH: usize = 4;

/// The signal extension that carries a delegated request's [`Chain`] (a JSON array of agent
/// names, as text), so the callee's own delegations are checked against it.
pub const CHAIN_EXTENSION: &str = "motetchain";

/// The signal extension that carries the requests a delegated request works for ([`Payers`],
/// as JSON text), so their budgets count what the callee spends.
pub const PAYERS_EXTENSION: &str = "motetpayers";

/// How the note a handoff leaves in the thread begins; the receiving agent's name follows.
pub const HANDED_OFF_NOTE: &str = "conversation handed to ";

/// The agents a request passed through, the first asker first and the agent running it last.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain(Vec<String>);

impl Chain {
    /// The chain of a request nobody delegated: `agent` alone.
    pub fn root(agent: impl Into<String>) -> Self {
        Self(vec![agent.into()])
    }

    /// The chain of a request running on `agent`, from its signal's [`CHAIN_EXTENSION`]
    /// (`None` for a request nobody delegated). An extension that does not read as a chain
    /// ending in `agent` counts as none: a request is never refused for a malformed label, and
    /// the limits still hold from here on.
    pub fn of_request(agent: &str, extension: Option<&str>) -> Self {
        let parsed = extension
            .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
            .filter(|agents| agents.last().is_some_and(|last| last == agent));
        parsed.map_or_else(|| Self::root(agent), Self)
    }

    /// The agents, the first asker first.
    pub fn agents(&self) -> &[String] {
        &self.0
    }

    /// Delegations so far: 0 for a request asked directly.
    pub fn depth(&self) -> usize {
        self.0.len().saturating_sub(1)
    }

    /// The chain of a call from the end of this one to `callee`.
    ///
    /// # Errors
    /// [`DelegateError::Cycle`] when `callee` is on the chain already (`a → b → a`);
    /// [`DelegateError::TooDeep`] when the call would go past `max_depth` delegations.
    pub fn enter(&self, callee: &str, max_depth: usize) -> Result<Self, DelegateError> {
        let mut next = self.0.clone();
        next.push(callee.to_owned());
        let next = Self(next);
        if self.0.iter().any(|agent| agent == callee) {
            return Err(DelegateError::Cycle { chain: next });
        }
        if next.depth() > max_depth {
            return Err(DelegateError::TooDeep {
                depth: next.depth(),
                max: max_depth,
                chain: next,
            });
        }
        Ok(next)
    }

    /// The chain as its [`CHAIN_EXTENSION`] value.
    pub fn to_extension(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(" → "))
    }
}

/// The requests a delegated request works for: each delegating agent's request, the first
/// asker's first, as `(agent, request)`. A caller's request budget counts what its callees
/// spend: the runtime checks and charges each call of a delegated request against these
/// requests' budgets too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Payers(Vec<(String, String)>);

impl Payers {
    /// The payers a request's [`PAYERS_EXTENSION`] names; none for a request nobody delegated,
    /// or an extension that does not read as a list of `[agent, request]` pairs (a request is
    /// never refused for a malformed label).
    pub fn of_extension(extension: Option<&str>) -> Self {
        extension
            .and_then(|text| serde_json::from_str::<Vec<(String, String)>>(text).ok())
            .map_or_else(Self::default, Self)
    }

    /// These payers and request `request` of `agent` after them: what a call made by that
    /// request passes on to its callee.
    pub fn with(&self, agent: &str, request: &str) -> Self {
        let mut next = self.0.clone();
        next.push((agent.to_owned(), request.to_owned()));
        Self(next)
    }

    /// The `(agent, request)` pairs, the first asker first.
    pub fn requests(&self) -> &[(String, String)] {
        &self.0
    }

    /// Whether there are none (a request nobody delegated).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The payers as their [`PAYERS_EXTENSION`] value.
    pub fn to_extension(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }
}

/// A delegation refused before it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DelegateError {
    /// The callee is already on the chain: asking it would wait on itself.
    #[error("delegation cycle refused: {chain}")]
    Cycle {
        /// The chain with the refused call at its end.
        chain: Chain,
    },
    /// The call would go deeper than the limit.
    #[error("delegation too deep: {chain} is {depth} delegations, the limit is {max}")]
    TooDeep {
        /// The chain with the refused call at its end.
        chain: Chain,
        /// Its delegations.
        depth: usize,
        /// The limit.
        max: usize,
    },
}

/// Which thread of the callee an agent-as-tool call is asked on: the caller's choice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CalleeThread {
    /// A thread of its own for each call: the callee remembers nothing between calls.
    #[default]
    PerCall,
    /// One thread per caller thread: the callee remembers what this conversation asked it
    /// before, and nothing of other conversations.
    PerCallerThread,
    /// This thread, whoever calls: the callee's memory is shared by every caller.
    Named(String),
}

impl CalleeThread {
    /// The callee's thread id for a call `tool_call_id` made by request `caller_request` of
    /// thread `caller_thread` of agent `caller`. Derived, never fresh: a call run again after
    /// a crash lands on the same thread.
    pub fn resolve(
        &self,
        caller: &str,
        caller_thread: &str,
        caller_request: &str,
        tool_call_id: &str,
    ) -> String {
        match self {
            Self::PerCall => format!("call.{caller_request}.{tool_call_id}"),
            Self::PerCallerThread => {
                format!("from.{}.{}", caller.replace('/', "."), caller_thread)
            }
            Self::Named(name) => name.clone(),
        }
    }
}

/// The request id a call `tool_call_id` of request `caller_request` asks its callee under.
/// Derived, never fresh: the same call sent again after a crash carries the interrupted
/// request on (`agent.resume` of it) instead of asking twice.
pub fn callee_request(caller_request: &str, tool_call_id: &str) -> String {
    format!("{caller_request}.{tool_call_id}")
}

/// What part of the conversation a handoff shows the agent that takes it over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum HistoryFilter {
    /// Everything the user, the model and the tools said.
    #[default]
    All,
    /// The last `n` messages (user, assistant, tool results), after the filter's other rules.
    Last(usize),
    /// What the user and the model said, without tool calls and their results.
    NoToolCalls,
}

impl HistoryFilter {
    /// The entries of `thread` this filter lets through, in order.
    pub fn entries(&self, thread: &Thread) -> Vec<Arc<Entry>> {
        let spoken = thread.to_list().iter().filter(|entry| {
            matches!(
                entry.body,
                EntryBody::User { .. }
                    | EntryBody::Assistant { .. }
                    | EntryBody::ToolResult { .. }
                    | EntryBody::Summary { .. }
            )
        });
        match self {
            Self::All => spoken.cloned().collect(),
            Self::Last(n) => {
                let all: Vec<_> = spoken.cloned().collect();
                let from = all.len().saturating_sub(*n);
                all[from..].to_vec()
            }
            Self::NoToolCalls => spoken
                .filter_map(|entry| match &entry.body {
                    EntryBody::ToolResult { .. } => None,
                    EntryBody::Assistant { message, usage, .. } if message.has_tool_calls() => {
                        let text = message.to_string();
                        if text.trim().is_empty() {
                            return None;
                        }
                        let mut plain = (**entry).clone();
                        plain.body = EntryBody::Assistant {
                            message: motet_directives::AssistantMessage::text(text),
                            usage: usage.clone(),
                            basis: None,
                        };
                        Some(Arc::new(plain))
                    }
                    _ => Some(Arc::clone(entry)),
                })
                .collect(),
        }
    }
}

/// What the agent taking a conversation over from `from` is asked: who handed it over and
/// why, the history `filter` lets through, and to carry on from the user's last message.
pub fn briefing(thread: &Thread, filter: &HistoryFilter, from: &str, reason: &str) -> String {
    let history = transcript(&filter.entries(thread));
    let reason = reason.trim();
    let why = if reason.is_empty() {
        String::new()
    } else {
        format!(" Reason: {reason}.")
    };
    format!(
        "You are taking over this conversation from agent `{from}`.{why}\n\
         The conversation so far:\n{history}\n\
         Carry on from the user's last message and answer the user directly."
    )
}

/// The agent that holds `thread` now: the receiver of its last handoff, or `None` when its own
/// agent holds it — it was never handed off, or a request came into it after its last handoff
/// (the conversation was handed back). Read from the thread alone, so it holds after a crash.
pub fn holder(thread: &Thread) -> Option<&str> {
    holder_change(thread.to_list()).flatten()
}

/// What `entries`, appended to a thread in this order, say about who holds it:
/// `Some(Some(agent))` when the last of them that decides is a handoff's note (`agent` holds
/// it), `Some(None)` when it is a request's message (its own agent holds it again), `None` when
/// none of them decides. Reads from the end, so a thread's last request bounds the walk.
pub fn holder_change(entries: &[Arc<Entry>]) -> Option<Option<&str>> {
    entries.iter().rev().find_map(|entry| match &entry.body {
        EntryBody::Note { text } => text.strip_prefix(HANDED_OFF_NOTE).map(Some),
        EntryBody::User { .. } => Some(None),
        _ => None,
    })
}
