//! Agents working through each other: an agent offered to another as a tool ([`AgentTool`])
//! and a conversation handed to another agent ([`Handoff`]). Both are tools the runtime runs
//! with the calling request's context ([`Delegation`]): the callee is addressed by name, never
//! by a pointer to its actor, and asked on a thread of its own; what it streams and the calls
//! it waits on a person for reach the caller's ticket; cancelling the caller's request cancels
//! the callee's; the callee's usage counts in the caller's answer; its request's span is a
//! child of the caller's tool span. What is decided — the chain and its limits, the callee's
//! thread and request id, a handoff's history — is pure, in `motet_agents::delegate`.
//!
//! # Layout
//! - `ask.rs` — one ask of another agent on behalf of a tool call: the delegated request,
//!   the relay of its deltas and waits to the caller's ticket, the cancel when the caller
//!   stops waiting.
//! - `callee.rs` — the agent a delegating tool asks and how: what both tools share.
//! - `agent_tool.rs` — [`AgentTool`]: an agent as a tool.
//! - `handoff.rs` — [`Handoff`]: the conversation handed to another agent, and who holds a
//!   thread after it.

use std::sync::{Arc, Mutex, PoisonError};

use motet_agents::delegate::{Chain, Payers};
use motet_directives::Usage;

use crate::agent::host::core::RuntimeCore;

/// The settings an [`AgentTool`] and a [`Handoff`] share, written once: the tool's name and
/// description, the delegation depth and how long the callee is waited for. `$what` names
/// what waits, in the docs.
macro_rules! callee_settings {
    ($what:literal) => {
        /// Named `name` for the model.
        pub fn named(mut self, name: impl Into<String>) -> Self {
            self.callee.name = name.into();
            self
        }

        /// What the model reads about when to call it.
        pub fn describe(mut self, description: impl Into<String>) -> Self {
            self.callee.description = description.into();
            self
        }

        /// Delegations a request may go through before it is refused (default
        /// [`DEFAULT_MAX_DEPTH`](super::DEFAULT_MAX_DEPTH)).
        pub fn max_depth(mut self, max_depth: usize) -> Self {
            self.callee.max_depth = max_depth;
            self
        }

        #[doc = concat!("How long ", $what, " waits for the callee's answer (default 60 s, the tool set's default")]
        /// time limit; a set with a shorter limit cuts it first, and cancels the callee).
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.callee.timeout = timeout;
            self
        }
    };
}

mod agent_tool;
mod ask;
mod callee;
mod handoff;

pub use agent_tool::AgentTool;
pub use handoff::Handoff;
pub(crate) use handoff::route;
pub use motet_agents::delegate::{CalleeThread, DEFAULT_MAX_DEPTH, DelegateError, HistoryFilter};

/// What a tool call run by the runtime knows beyond its [`ToolContext`](crate::tool::ToolContext)'s
/// names: the runtime, to ask another agent, the chain of agents its request came through, and
/// where it reports what the callee spent and whether it handed the conversation over.
#[derive(Clone)]
pub(crate) struct Delegation {
    core: Arc<RuntimeCore>,
    chain: Chain,
    /// The requests the call's request works for, itself last: a callee's calls count in
    /// their budgets.
    payers: Payers,
    spent: Spent,
}

impl Delegation {
    /// The context of a call made by a request that came through `chain`, working for
    /// `payers` (itself last).
    pub(crate) fn new(core: &Arc<RuntimeCore>, chain: Chain, payers: Payers) -> Self {
        Self {
            core: Arc::clone(core),
            chain,
            payers,
            spent: Spent::default(),
        }
    }

    /// Where the call reports what it spent; the executor reads it when the call returns.
    pub(crate) fn spent(&self) -> Spent {
        self.spent.clone()
    }
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("chain", &self.chain)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Delegation {
    fn eq(&self, other: &Self) -> bool {
        self.chain == other.chain
            && self.payers == other.payers
            && Arc::ptr_eq(&self.core, &other.core)
    }
}

impl Eq for Delegation {}

/// What one tool call's delegation spent, and the agent it handed the conversation to.
#[derive(Clone, Default)]
pub(crate) struct Spent(Arc<Mutex<(Usage, Option<String>)>>);

impl Spent {
    fn add(&self, usage: Usage) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).0 += usage;
    }

    fn handed_to(&self, agent: &str) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).1 = Some(agent.to_owned());
    }

    /// What was spent and the handoff, taken out.
    pub(crate) fn take(&self) -> (Usage, Option<String>) {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// A tool name made of `prefix` and an agent's name: the characters providers refuse in a
/// tool name become `_`, and it is cut to their 64.
fn tool_name(prefix: &str, agent: &str) -> String {
    let mut name: String = format!("{prefix}{agent}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(64);
    name
}

/// The text argument `key` of a call's arguments.
fn text_arg(
    args: &motet_directives::ToolArgs,
    key: &str,
    required: bool,
) -> Result<String, crate::tool::ToolError> {
    let value: serde_json::Value = serde_json::from_str(args.get())
        .map_err(|e| crate::tool::ToolError::invalid_args(e.to_string()))?;
    match value.get(key) {
        Some(serde_json::Value::String(text)) => Ok(text.clone()),
        None if !required => Ok(String::new()),
        _ => Err(crate::tool::ToolError::invalid_args(format!(
            "`{key}` must be a string"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_name_keeps_what_providers_take_and_replaces_the_rest() {
        assert_eq!(tool_name("ask_", "researcher"), "ask_researcher");
        assert_eq!(
            tool_name("transfer_to_", "team/billing.eu"),
            "transfer_to_team_billing_eu"
        );
        assert_eq!(tool_name("ask_", &"x".repeat(100)).len(), 64);
    }

    #[test]
    fn spent_adds_up_and_is_taken_once() {
        let spent = Spent::default();
        spent.add(Usage {
            input_tokens: 3,
            output_tokens: 2,
            ..Usage::default()
        });
        spent.add(Usage {
            input_tokens: 1,
            output_tokens: 1,
            ..Usage::default()
        });
        spent.handed_to("billing");
        let (usage, handoff) = spent.take();
        assert_eq!((usage.input_tokens, usage.output_tokens), (4, 3));
        assert_eq!(handoff.as_deref(), Some("billing"));
        assert_eq!(spent.take(), (Usage::default(), None));
    }
}
