//! The budget words a strategy and the runtime share: the levels a budget applies at, what it
//! counts, and a soft limit a call reached — which the runtime reports on `llm.failed` and a
//! person's approval of which travels back on the next [`LlmStream`](crate::LlmStream).
//!
//! The limits themselves, prices and the decision live in `motet-providers` (`budget`); only
//! what crosses the strategy boundary is here.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a budget applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetLevel {
    /// One request (a question and every call answering it, summaries included).
    Request,
    /// One thread of one agent (every request on it, summaries included).
    Thread,
    /// Every thread of one agent.
    Agent,
    /// Every agent carrying one tenant label.
    Tenant,
}

impl BudgetLevel {
    /// `request`, `thread`, `agent` or `tenant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Thread => "thread",
            Self::Agent => "agent",
            Self::Tenant => "tenant",
        }
    }
}

impl fmt::Display for BudgetLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Tokens (input plus output).
    Tokens,
    /// Dollars, in pico-dollars.
    Cost,
}

/// A soft limit a call reached: at `level`, in `measure`, what was spent there passed the soft
/// step `limit` (a multiple of the level's soft limit). The call was not sent; a person may
/// approve going on past it ([`LlmStream::budget_approved`](crate::LlmStream::budget_approved))
/// until the next step or the hard limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SoftLimit {
    /// The level whose soft limit was reached.
    pub level: BudgetLevel,
    /// Tokens or dollars.
    pub measure: Measure,
    /// The soft step passed, in tokens or pico-dollars.
    pub limit: u64,
    /// What was spent there (finished calls plus those running), in the same unit.
    pub spent: u64,
}

impl SoftLimit {
    /// Whether `self` approves going past the same level and measure as `other`.
    pub fn same_place(&self, other: &SoftLimit) -> bool {
        self.level == other.level && self.measure == other.measure
    }

    /// Adds `approved` to a request's approvals: it replaces an older one at the same level
    /// and measure (a later step), so each place keeps one.
    pub fn approve(approvals: &mut Vec<SoftLimit>, approved: SoftLimit) {
        approvals.retain(|a| !a.same_place(&approved));
        approvals.push(approved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_replaces_the_older_one_at_its_place_only() {
        let at = |level, measure, limit| SoftLimit {
            level,
            measure,
            limit,
            spent: limit,
        };
        let mut approvals = vec![
            at(BudgetLevel::Request, Measure::Tokens, 100),
            at(BudgetLevel::Agent, Measure::Tokens, 5),
        ];
        SoftLimit::approve(
            &mut approvals,
            at(BudgetLevel::Request, Measure::Tokens, 200),
        );
        SoftLimit::approve(&mut approvals, at(BudgetLevel::Request, Measure::Cost, 7));
        assert_eq!(
            approvals,
            [
                at(BudgetLevel::Agent, Measure::Tokens, 5),
                at(BudgetLevel::Request, Measure::Tokens, 200),
                at(BudgetLevel::Request, Measure::Cost, 7),
            ]
        );
        let json = serde_json::to_string(&approvals[1]).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"level":"request","measure":"tokens","limit":200,"spent":200}"#
        );
    }
}
