//! Hard budgets in tokens and dollars, per request, thread, agent and tenant: what a limit is,
//! and the pure decision whether one more call may start.
//!
//! The decision admits a call only when, at every level, what was spent (plus what the calls
//! still running there may spend) plus the call's estimated input stays within the limit. The
//! call's output cannot exceed its `max_tokens`, so a level ends at most one call's
//! `max_tokens` (and, in dollars, that many output tokens' price) past its limit — as long as
//! the input estimate is not below the provider's count.

use std::fmt;

use crate::prices::Cost;

/// Where a budget applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// A hard limit: tokens (input plus output), dollars, or both. Unset means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Input plus output tokens.
    pub tokens: Option<u64>,
    /// Dollars, at the price table's prices (unpriced calls count as free).
    pub cost: Option<Cost>,
}

impl Budget {
    /// No limit.
    pub const UNLIMITED: Budget = Budget {
        tokens: None,
        cost: None,
    };

    /// At most `tokens` tokens.
    pub fn tokens(tokens: u64) -> Self {
        Self {
            tokens: Some(tokens),
            cost: None,
        }
    }

    /// At most `cost`.
    pub fn cost(cost: Cost) -> Self {
        Self {
            tokens: None,
            cost: Some(cost),
        }
    }

    /// Also at most `tokens` tokens.
    pub fn with_tokens(mut self, tokens: u64) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// Also at most `cost`.
    pub fn with_cost(mut self, cost: Cost) -> Self {
        self.cost = Some(cost);
        self
    }

    /// Whether it limits anything.
    pub fn is_limited(&self) -> bool {
        self.tokens.is_some() || self.cost.is_some()
    }
}

/// What was spent at one level: by the calls that finished, and what the calls still running
/// there may spend (their estimated input and their whole `max_tokens`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    /// Input plus output tokens.
    pub tokens: u64,
    /// Dollars.
    pub cost: Cost,
}

impl Spent {
    /// Both added.
    pub fn plus(self, other: Spent) -> Spent {
        Spent {
            tokens: self.tokens.saturating_add(other.tokens),
            cost: self.cost + other.cost,
        }
    }

    /// Both subtracted, never below zero.
    pub fn minus(self, other: Spent) -> Spent {
        Spent {
            tokens: self.tokens.saturating_sub(other.tokens),
            cost: self.cost.saturating_sub(other.cost),
        }
    }
}

/// What one call is expected to spend before it is made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallEstimate {
    /// Its prompt, estimated (messages and tools).
    pub input_tokens: u64,
    /// The most it may write: its `max_tokens`.
    pub max_output_tokens: u64,
    /// The estimated prompt at the input price.
    pub input_cost: Cost,
    /// `max_output_tokens` at the dearer of the output and reasoning prices.
    pub max_output_cost: Cost,
}

impl CallEstimate {
    /// The most the call may spend: its estimated input and all of its output.
    pub fn at_most(&self) -> Spent {
        Spent {
            tokens: self.input_tokens.saturating_add(self.max_output_tokens),
            cost: self.input_cost + self.max_output_cost,
        }
    }
}

/// What a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measure {
    /// Tokens.
    Tokens,
    /// Dollars.
    Cost,
}

/// A call refused by a hard budget: the level, what it counts, the limit and what was spent
/// there (finished calls plus those running).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BudgetExceeded {
    /// The level whose limit refused it.
    pub level: BudgetLevel,
    /// Tokens or dollars.
    pub measure: Measure,
    /// The limit, in tokens or pico-dollars.
    pub limit: u64,
    /// What was spent there, in the same unit.
    pub spent: u64,
    /// The call's estimated input, in the same unit.
    pub estimated_input: u64,
}

impl fmt::Display for BudgetExceeded {
    /// `this request has spent $2.00 of its $2.00 budget` / `... 1200 of its 1000 tokens`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.measure {
            Measure::Tokens => write!(
                f,
                "this {} has spent {} of its {} tokens (the next call needs about {} more)",
                self.level, self.spent, self.limit, self.estimated_input
            ),
            Measure::Cost => write!(
                f,
                "this {} has spent {} of its {} budget (the next call needs about {} more)",
                self.level,
                Cost::from_picodollars(self.spent),
                Cost::from_picodollars(self.limit),
                Cost::from_picodollars(self.estimated_input)
            ),
        }
    }
}

/// Whether a call may start, given each level's budget and spending (in any order; the first
/// level refusing it, in that order, is named). A call is admitted when at every level
/// `spent + estimated input ≤ limit`, for tokens and for dollars.
///
/// # Errors
/// The first limit the call would pass, as [`BudgetExceeded`].
pub fn admit(
    levels: &[(BudgetLevel, Budget, Spent)],
    call: &CallEstimate,
) -> Result<(), BudgetExceeded> {
    for (level, budget, spent) in levels {
        if let Some(limit) = budget.tokens
            && spent.tokens.saturating_add(call.input_tokens) > limit
        {
            return Err(BudgetExceeded {
                level: *level,
                measure: Measure::Tokens,
                limit,
                spent: spent.tokens,
                estimated_input: call.input_tokens,
            });
        }
        if let Some(limit) = budget.cost
            && (spent.cost + call.input_cost) > limit
        {
            return Err(BudgetExceeded {
                level: *level,
                measure: Measure::Cost,
                limit: limit.picodollars(),
                spent: spent.cost.picodollars(),
                estimated_input: call.input_cost.picodollars(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(input: u64, max_output: u64) -> CallEstimate {
        CallEstimate {
            input_tokens: input,
            max_output_tokens: max_output,
            input_cost: Cost::from_microdollars(input),
            max_output_cost: Cost::from_microdollars(max_output.saturating_mul(4)),
        }
    }

    fn spent(tokens: u64) -> Spent {
        Spent {
            tokens,
            cost: Cost::from_microdollars(tokens),
        }
    }

    #[test]
    fn a_call_is_admitted_while_its_input_fits_under_every_limit() {
        let limited = Budget::tokens(1_000);
        let levels = [(BudgetLevel::Request, limited, spent(900))];
        assert_eq!(admit(&levels, &call(100, 500)), Ok(()));
        let refused = admit(&levels, &call(101, 1));
        assert_eq!(
            refused,
            Err(BudgetExceeded {
                level: BudgetLevel::Request,
                measure: Measure::Tokens,
                limit: 1_000,
                spent: 900,
                estimated_input: 101,
            })
        );
        assert_eq!(admit(&[], &call(u64::MAX, u64::MAX)), Ok(()));
    }

    #[test]
    fn each_level_is_checked_and_the_first_refusing_one_is_named() {
        let levels = [
            (BudgetLevel::Request, Budget::UNLIMITED, spent(10_000)),
            (BudgetLevel::Thread, Budget::tokens(20_000), spent(10_000)),
            (BudgetLevel::Agent, Budget::tokens(10_050), spent(10_000)),
            (BudgetLevel::Tenant, Budget::tokens(5), spent(10_000)),
        ];
        let refused = admit(&levels, &call(100, 100)).err();
        assert_eq!(refused.map(|r| r.level), Some(BudgetLevel::Agent));
    }

    #[test]
    fn a_dollar_limit_refuses_in_dollars() {
        let two_dollars = Cost::from_usd(2.0).unwrap_or_default();
        let levels = [(
            BudgetLevel::Tenant,
            Budget::cost(two_dollars),
            Spent {
                tokens: 0,
                cost: two_dollars,
            },
        )];
        let refused = admit(&levels, &call(1, 1)).err();
        assert_eq!(refused.as_ref().map(|r| r.measure), Some(Measure::Cost));
        assert_eq!(
            refused.map(|r| r.to_string()).unwrap_or_default(),
            "this tenant has spent $2.00 of its $2.00 budget (the next call needs about $0.000001 more)"
        );
    }

    #[test]
    fn spending_never_passes_a_limit_by_more_than_one_calls_output() {
        // Calls of random sizes, each spending its input and up to its max_tokens, until one
        // is refused: the total never passes the limit by more than one call's max_tokens.
        let mut rng = fastrand::Rng::with_seed(41);
        for _ in 0..1_000 {
            let limit = rng.u64(1_000..100_000);
            let budget = Budget::tokens(limit);
            let mut total = 0u64;
            let mut largest_max = 0u64;
            loop {
                let estimate = call(rng.u64(1..2_000), rng.u64(1..4_000));
                if admit(&[(BudgetLevel::Request, budget, spent(total))], &estimate).is_err() {
                    break;
                }
                largest_max = largest_max.max(estimate.max_output_tokens);
                total += estimate.input_tokens + rng.u64(0..=estimate.max_output_tokens);
            }
            assert!(total <= limit + largest_max, "{total} past {limit}");
        }
    }
}
