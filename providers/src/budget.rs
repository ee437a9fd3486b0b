//! Budgets in tokens and dollars, per request, thread, agent and tenant: what a limit is, and
//! the pure decisions whether one more call may start ([`admit`], hard limits) or must first
//! be approved by a person ([`decide`], hard and soft limits).
//!
//! The hard decision admits a call only when, at every level, what was spent (plus what the
//! calls still running there may spend) plus the call's estimated input stays within the limit.
//! The call's output cannot exceed its `max_tokens`, so a level ends at most one call's
//! `max_tokens` (and, in dollars, that many output tokens' price) past its limit — as long as
//! the input estimate is not below the provider's count.
//!
//! A soft limit is a step: a call that would pass `soft`, `2 × soft`, ... at a level is stopped
//! for a person's approval ([`Admission::Ask`]); once approved past a step, the request goes
//! on until the next step or the hard limit.

use std::fmt;

use crate::prices::Cost;

pub use motet_directives::budget::{BudgetLevel, Measure, SoftLimit};

/// A hard limit — tokens (input plus output), dollars, or both — and a soft one beside it.
/// Unset means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Input plus output tokens.
    pub tokens: Option<u64>,
    /// Dollars, at the price table's prices (unpriced calls count as free).
    pub cost: Option<Cost>,
    /// The soft step in tokens: passing each multiple of it (below the hard limit) waits for
    /// a person's approval. Zero sets none.
    pub soft_tokens: Option<u64>,
    /// The soft step in dollars, as `soft_tokens`.
    pub soft_cost: Option<Cost>,
}

impl Budget {
    /// No limit.
    pub const UNLIMITED: Budget = Budget {
        tokens: None,
        cost: None,
        soft_tokens: None,
        soft_cost: None,
    };

    /// At most `tokens` tokens.
    pub fn tokens(tokens: u64) -> Self {
        Self::UNLIMITED.with_tokens(tokens)
    }

    /// At most `cost`.
    pub fn cost(cost: Cost) -> Self {
        Self::UNLIMITED.with_cost(cost)
    }

    /// Asks a person before passing each multiple of `tokens` tokens (`0` asks never).
    pub fn with_soft_tokens(mut self, tokens: u64) -> Self {
        self.soft_tokens = (tokens > 0).then_some(tokens);
        self
    }

    /// Asks a person before passing each multiple of `cost` (zero asks never).
    pub fn with_soft_cost(mut self, cost: Cost) -> Self {
        self.soft_cost = (cost > Cost::ZERO).then_some(cost);
        self
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

    /// Whether it limits anything, hard or soft.
    pub fn is_limited(&self) -> bool {
        self.tokens.is_some()
            || self.cost.is_some()
            || self.soft_tokens.is_some()
            || self.soft_cost.is_some()
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

/// What the budgets say of a call that no hard limit refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// It may start.
    Admit,
    /// It would pass a soft step nobody approved: ask a person first.
    Ask(SoftLimit),
}

/// Whether a call may start ([`admit`], the hard limits, first), and if so whether it must
/// wait for a person: at a level with a soft step, a call whose spending plus estimated input
/// would pass the highest step approved for its request (`approved`: one per level and
/// measure; none approved means the first step) is asked about, naming the highest step it
/// passes. Levels are checked in order, tokens before dollars; the first to ask is named.
///
/// # Errors
/// The first hard limit the call would pass, as [`BudgetExceeded`].
pub fn decide(
    levels: &[(BudgetLevel, Budget, Spent)],
    call: &CallEstimate,
    approved: &[SoftLimit],
) -> Result<Admission, BudgetExceeded> {
    admit(levels, call)?;
    for (level, budget, spent) in levels {
        let places = [
            (
                Measure::Tokens,
                budget.soft_tokens,
                spent.tokens,
                call.input_tokens,
            ),
            (
                Measure::Cost,
                budget.soft_cost.map(Cost::picodollars),
                spent.cost.picodollars(),
                call.input_cost.picodollars(),
            ),
        ];
        for (measure, step, spent, input) in places {
            let Some(step) = step.filter(|s| *s > 0) else {
                continue;
            };
            let ceiling = approved
                .iter()
                .find(|a| a.level == *level && a.measure == measure)
                .map_or(step, |a| a.limit.saturating_add(step));
            let projected = spent.saturating_add(input);
            if projected > ceiling {
                return Ok(Admission::Ask(SoftLimit {
                    level: *level,
                    measure,
                    limit: (projected / step * step).max(ceiling),
                    spent,
                }));
            }
        }
    }
    Ok(Admission::Admit)
}

/// The question a soft limit puts to a person: `this request has spent $2.00 of $2.00:
/// continue?`, or in tokens `... 1600 of 1500 tokens: continue?`.
pub fn describe(soft: &SoftLimit) -> String {
    match soft.measure {
        Measure::Tokens => format!(
            "this {} has spent {} of {} tokens: continue?",
            soft.level, soft.spent, soft.limit
        ),
        Measure::Cost => format!(
            "this {} has spent {} of {}: continue?",
            soft.level,
            Cost::from_picodollars(soft.spent),
            Cost::from_picodollars(soft.limit)
        ),
    }
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

    fn soft(level: BudgetLevel, measure: Measure, limit: u64, spent: u64) -> SoftLimit {
        SoftLimit {
            level,
            measure,
            limit,
            spent,
        }
    }

    #[test]
    fn a_soft_step_asks_at_each_level_in_tokens_and_in_dollars() {
        for level in [
            BudgetLevel::Request,
            BudgetLevel::Thread,
            BudgetLevel::Agent,
            BudgetLevel::Tenant,
        ] {
            let by_tokens = Budget::tokens(10_000).with_soft_tokens(1_000);
            let levels = [(level, by_tokens, spent(900))];
            assert_eq!(decide(&levels, &call(100, 500), &[]), Ok(Admission::Admit));
            assert_eq!(
                decide(&levels, &call(101, 500), &[]),
                Ok(Admission::Ask(soft(level, Measure::Tokens, 1_000, 900)))
            );
            let by_dollars = Budget::UNLIMITED.with_soft_cost(Cost::from_microdollars(1_000));
            let levels = [(level, by_dollars, spent(950))];
            assert_eq!(
                decide(&levels, &call(60, 1), &[]),
                Ok(Admission::Ask(soft(
                    level,
                    Measure::Cost,
                    Cost::from_microdollars(1_000).picodollars(),
                    Cost::from_microdollars(950).picodollars(),
                )))
            );
        }
    }

    #[test]
    fn a_hard_limit_below_the_spending_refuses_before_any_soft_step_asks() {
        let levels = [
            (
                BudgetLevel::Request,
                Budget::UNLIMITED.with_soft_tokens(100),
                spent(5_000),
            ),
            (BudgetLevel::Agent, Budget::tokens(5_050), spent(5_000)),
        ];
        let refused = decide(&levels, &call(100, 1), &[]).err();
        assert_eq!(refused.map(|r| r.level), Some(BudgetLevel::Agent));
        // Within the hard limit, the soft one asks.
        let asked = decide(&levels, &call(10, 1), &[]);
        assert!(matches!(asked, Ok(Admission::Ask(s)) if s.level == BudgetLevel::Request));
    }

    #[test]
    fn an_approval_holds_until_the_next_step_and_names_the_highest_step_passed() {
        let budget = Budget::UNLIMITED.with_soft_tokens(1_000);
        let at = |n: u64| [(BudgetLevel::Request, budget, spent(n))];
        let first = soft(BudgetLevel::Request, Measure::Tokens, 1_000, 1_050);
        assert_eq!(
            decide(&at(1_050), &call(10, 1), &[]),
            Ok(Admission::Ask(first))
        );
        let approved = [first];
        assert_eq!(
            decide(&at(1_050), &call(10, 1), &approved),
            Ok(Admission::Admit)
        );
        assert_eq!(
            decide(&at(1_990), &call(10, 1), &approved),
            Ok(Admission::Admit)
        );
        // Past the next step it asks again; a jump over several names the highest.
        assert_eq!(
            decide(&at(1_995), &call(10, 1), &approved),
            Ok(Admission::Ask(soft(
                BudgetLevel::Request,
                Measure::Tokens,
                2_000,
                1_995
            )))
        );
        assert_eq!(
            decide(&at(3_500), &call(10, 1), &approved),
            Ok(Admission::Ask(soft(
                BudgetLevel::Request,
                Measure::Tokens,
                3_000,
                3_500
            )))
        );
        // An approval at another level or in another measure does not count here.
        let elsewhere = [
            soft(BudgetLevel::Agent, Measure::Tokens, 1_000, 1_050),
            soft(BudgetLevel::Request, Measure::Cost, 1_000, 1_050),
        ];
        assert_eq!(
            decide(&at(1_050), &call(10, 1), &elsewhere),
            Ok(Admission::Ask(first))
        );
    }

    #[test]
    fn soft_below_hard_asks_then_the_hard_limit_refuses_even_when_approved() {
        let budget = Budget::tokens(2_000).with_soft_tokens(1_500);
        let at = |n: u64| [(BudgetLevel::Thread, budget, spent(n))];
        let asked = decide(&at(1_490), &call(20, 1), &[]);
        let Ok(Admission::Ask(first)) = asked else {
            panic!("the soft step asks: {asked:?}");
        };
        assert_eq!(first.limit, 1_500);
        assert_eq!(
            decide(&at(1_490), &call(20, 1), &[first]),
            Ok(Admission::Admit)
        );
        assert_eq!(
            decide(&at(1_990), &call(20, 1), &[first]).map_err(|r| r.measure),
            Err(Measure::Tokens)
        );
        // A zero soft step is none; no budget asks nothing.
        assert_eq!(Budget::UNLIMITED.with_soft_tokens(0), Budget::UNLIMITED);
        assert!(!Budget::UNLIMITED.with_soft_cost(Cost::ZERO).is_limited());
        assert!(Budget::UNLIMITED.with_soft_tokens(1).is_limited());
        assert_eq!(decide(&[], &call(u64::MAX, 1), &[]), Ok(Admission::Admit));
    }

    #[test]
    fn the_question_names_the_level_and_what_was_spent() {
        let two = Cost::from_usd(2.0).unwrap_or_default().picodollars();
        assert_eq!(
            describe(&soft(BudgetLevel::Request, Measure::Cost, two, two)),
            "this request has spent $2.00 of $2.00: continue?"
        );
        assert_eq!(
            describe(&soft(BudgetLevel::Tenant, Measure::Tokens, 1_500, 1_600)),
            "this tenant has spent 1600 of 1500 tokens: continue?"
        );
    }
}
