//! Who a call is made for: the agent, thread, request and tenant a shared account's limits
//! queue it by, and its budgets and cost accounts charge it to.

use std::sync::Arc;

/// How soon a call should get a share of a limited provider account. A person waiting in a
/// chat is `High`; a batch is `Low`.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Background work: served when nothing more urgent waits.
    Low,
    /// The default.
    #[default]
    Normal,
    /// A person is waiting for it.
    High,
}

impl Priority {
    /// The name used in configuration and telemetry: `low`, `normal`, `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
        }
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Priority {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "low" => Ok(Self::Low),
            "normal" => Ok(Self::Normal),
            "high" => Ok(Self::High),
            other => Err(format!(
                "unknown priority `{other}` (expected low, normal or high)"
            )),
        }
    }
}

/// What kind of call: a turn of the conversation or a summary of part of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// A turn: the strategy's own call.
    #[default]
    Turn,
    /// A summary call the strategy asked for (`Summarize`).
    Summary,
}

impl CallKind {
    /// `turn` or `summary`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Turn => "turn",
            Self::Summary => "summary",
        }
    }
}

/// Who one LLM call is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallScope {
    /// The agent's name.
    pub agent: Arc<str>,
    /// The thread's id within the agent.
    pub thread: Arc<str>,
    /// The request the call serves, when it serves one.
    pub request: Option<Arc<str>>,
    /// The tenant the agent belongs to (a label on agents), when it has one.
    pub tenant: Option<Arc<str>>,
    /// How soon it should be served.
    pub priority: Priority,
    /// A turn or a summary.
    pub kind: CallKind,
    /// The requests of other agents this call's request works for (a delegated request's
    /// callers, the first asker first), as `(agent, request)`: their request budgets count
    /// the call too.
    pub on_behalf_of: Vec<(Arc<str>, Arc<str>)>,
}

impl CallScope {
    /// A turn of `agent`'s thread `thread`, for no request or tenant, at normal priority.
    pub fn new(agent: impl Into<Arc<str>>, thread: impl Into<Arc<str>>) -> Self {
        Self {
            agent: agent.into(),
            thread: thread.into(),
            request: None,
            tenant: None,
            priority: Priority::Normal,
            kind: CallKind::Turn,
            on_behalf_of: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_order_low_below_high_and_read_back_from_their_names() {
        assert!(Priority::Low < Priority::Normal && Priority::Normal < Priority::High);
        for p in [Priority::Low, Priority::Normal, Priority::High] {
            assert_eq!(p.as_str().parse::<Priority>(), Ok(p));
        }
        assert!("urgent".parse::<Priority>().is_err());
    }
}
