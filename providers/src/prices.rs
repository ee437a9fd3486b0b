//! What a call costs: a price table per model (USD per million tokens for input, cached input,
//! cache writes, output and reasoning) and the exact, integer cost of a [`Usage`] under it.
//!
//! Rates are kept as micro-dollars per million tokens, which is the same number as pico-dollars
//! per token, so a call's [`Cost`] is an exact integer number of pico-dollars: sums over a
//! thread, an agent or a tenant never drift the way floating-point sums do.
//!
//! # How a usage is priced
//! [`Usage`] counts cache reads and cache writes inside `input_tokens`, and reasoning inside
//! `output_tokens` (every dialect reports it so: OpenAI's `reasoning_tokens` are part of
//! `output_tokens`, Gemini's `thoughtsTokenCount` is added to the candidates' count, Anthropic's
//! thinking is part of `output_tokens`). So each token is priced once:
//! - `input_tokens - cache_read_tokens - cache_write_tokens` at the input rate,
//! - `cache_read_tokens` at the cached-input rate, `cache_write_tokens` at the cache-write rate,
//! - `output_tokens - reasoning_tokens` at the output rate, `reasoning_tokens` at the reasoning
//!   rate (the output rate unless a table says otherwise).
//!
//! A usage whose parts exceed its totals (a provider that reports more cached than prompt
//! tokens) prices the parts it names and nothing below zero.
//!
//! # The shipped prices
//! [`PRICES_AS_OF`] dates them; [`PriceTable::builtin`] holds them. They are the providers'
//! published standard (not batch, not priority) rates, read from the providers' pricing pages:
//! Anthropic's "Model pricing" table (platform.claude.com/docs/en/about-claude/pricing; cache
//! writes at the default 5-minute rate), OpenAI's pricing page
//! (platform.openai.com/docs/pricing, as quoted by several dated summaries that agree), and
//! Google's Gemini API pricing page (ai.google.dev/gemini-api/docs/pricing; the rates for
//! prompts up to 200,000 tokens). Where a cached-input price could not be found, cached input is
//! priced at the full input rate (an upper bound) and the entry says so. Models whose prices
//! could not be found are left out: their calls are unpriced (`None`), never guessed.
//!
//! `openai-compat` models (a local llama.cpp server, Ollama, vLLM) cost nothing unless a price
//! is set for them: a hosted OpenAI-compatible service needs an override.

use std::collections::HashMap;
use std::fmt;
use std::ops::{Add, AddAssign};

use motet_directives::{ModelRef, ModelUsage, Usage};

/// The day the shipped prices were read from the providers' pricing pages.
pub const PRICES_AS_OF: &str = "2026-11-28";

/// An amount of US dollars, exactly, in pico-dollars (10⁻¹² USD). Sums saturate at about
/// 18 million dollars rather than wrap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cost(u64);

impl Cost {
    /// Nothing.
    pub const ZERO: Cost = Cost(0);

    /// `picodollars` pico-dollars.
    pub const fn from_picodollars(picodollars: u64) -> Self {
        Self(picodollars)
    }

    /// A whole number of micro-dollars (10⁻⁶ USD).
    pub const fn from_microdollars(microdollars: u64) -> Self {
        Self(microdollars.saturating_mul(1_000_000))
    }

    /// Dollars, rounded to the nearest pico-dollar; `None` for a negative or non-finite amount.
    pub fn from_usd(usd: f64) -> Option<Self> {
        let pico = (usd * 1e12).round();
        (pico.is_finite() && pico >= 0.0 && pico <= u64::MAX as f64).then_some(Self(pico as u64))
    }

    /// The amount in pico-dollars.
    pub const fn picodollars(self) -> u64 {
        self.0
    }

    /// The amount in dollars, as a float for display and metrics (not for sums).
    pub fn usd(self) -> f64 {
        self.0 as f64 / 1e12
    }

    /// The difference, or zero when `other` is larger.
    pub const fn saturating_sub(self, other: Cost) -> Cost {
        Cost(self.0.saturating_sub(other.0))
    }
}

impl Add for Cost {
    type Output = Cost;

    fn add(self, rhs: Cost) -> Cost {
        Cost(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, rhs: Cost) {
        *self = *self + rhs;
    }
}

impl std::iter::Sum for Cost {
    fn sum<I: Iterator<Item = Cost>>(iter: I) -> Cost {
        iter.fold(Cost::ZERO, Add::add)
    }
}

impl fmt::Display for Cost {
    /// Dollars with cents when the amount is whole cents (`$2.00`), else with six decimals
    /// (`$0.017500`, `$0.000123`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let usd = self.usd();
        if self.0.is_multiple_of(10_000_000_000) {
            write!(f, "${usd:.2}")
        } else {
            write!(f, "${usd:.6}")
        }
    }
}

/// A rate in micro-dollars per million tokens (the same number as pico-dollars per token):
/// `$1.25 / MTok` is `Rate(1_250_000)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u64);

impl Rate {
    /// Free.
    pub const FREE: Rate = Rate(0);

    /// `microdollars` micro-dollars per million tokens.
    pub const fn per_million_micro(microdollars: u64) -> Self {
        Self(microdollars)
    }

    /// `usd` dollars per million tokens, rounded to the micro-dollar; `None` for a negative
    /// or non-finite price.
    pub fn per_million_usd(usd: f64) -> Option<Self> {
        let micro = (usd * 1e6).round();
        (micro.is_finite() && micro >= 0.0 && micro <= u64::MAX as f64)
            .then_some(Self(micro as u64))
    }

    /// Dollars per million tokens.
    pub fn usd_per_million(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// What `tokens` cost at this rate.
    pub const fn of(self, tokens: u64) -> Cost {
        Cost(tokens.saturating_mul(self.0))
    }
}

/// One model's prices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Price {
    /// Prompt tokens neither read from nor written to a cache.
    pub input: Rate,
    /// Prompt tokens read from the provider's cache.
    pub cache_read: Rate,
    /// Prompt tokens written to the provider's cache.
    pub cache_write: Rate,
    /// Output tokens that are not reasoning.
    pub output: Rate,
    /// Output tokens spent on reasoning.
    pub reasoning: Rate,
}

/// USD per million tokens, as the providers publish them, into a [`Price`]; `cached` is the
/// cached-input rate, `write` the cache-write rate, reasoning at the output rate.
const fn usd(input_micro: u64, cached_micro: u64, write_micro: u64, output_micro: u64) -> Price {
    Price {
        input: Rate(input_micro),
        cache_read: Rate(cached_micro),
        cache_write: Rate(write_micro),
        output: Rate(output_micro),
        reasoning: Rate(output_micro),
    }
}

impl Price {
    /// Free: every rate 0 (local models).
    pub const FREE: Price = Price {
        input: Rate::FREE,
        cache_read: Rate::FREE,
        cache_write: Rate::FREE,
        output: Rate::FREE,
        reasoning: Rate::FREE,
    };

    /// What `usage` costs at these prices, each token priced once (see the module docs).
    pub fn cost(&self, usage: &Usage) -> Cost {
        self.breakdown(usage).total()
    }

    /// What `usage` costs at these prices, per kind of token.
    pub fn breakdown(&self, usage: &Usage) -> CostBreakdown {
        let cache_read = usage.cache_read_tokens.min(usage.input_tokens);
        let cache_write = usage
            .cache_write_tokens
            .min(usage.input_tokens.saturating_sub(cache_read));
        let fresh = usage.input_tokens - cache_read - cache_write;
        let reasoning = usage.reasoning_tokens.min(usage.output_tokens);
        let answer = usage.output_tokens - reasoning;
        CostBreakdown {
            input: self.input.of(fresh),
            cache_read: self.cache_read.of(cache_read),
            cache_write: self.cache_write.of(cache_write),
            output: self.output.of(answer),
            reasoning: self.reasoning.of(reasoning),
        }
    }
}

/// A cost split by kind of token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CostBreakdown {
    /// Uncached prompt tokens.
    pub input: Cost,
    /// Cache reads.
    pub cache_read: Cost,
    /// Cache writes.
    pub cache_write: Cost,
    /// Output that is not reasoning.
    pub output: Cost,
    /// Reasoning.
    pub reasoning: Cost,
}

impl CostBreakdown {
    /// The parts summed.
    pub fn total(&self) -> Cost {
        self.input + self.cache_read + self.cache_write + self.output + self.reasoning
    }
}

/// (provider family, model prefix, price). `openai` covers `openai-responses` too. A prefix
/// matches the model itself and its dated snapshots (`claude-sonnet-4-5-20250929`,
/// `gpt-4o-2024-08-06`), not its siblings (`gpt-4o-mini`, `claude-opus-4-1` for `claude-opus-4`).
const BUILTIN: &[(&str, &str, Price)] = &[
    // Anthropic: base input, 5-minute cache writes, cache hits, output.
    (
        "anthropic",
        "claude-opus-4-6",
        usd(5_000_000, 500_000, 6_250_000, 25_000_000),
    ),
    (
        "anthropic",
        "claude-opus-4-5",
        usd(5_000_000, 500_000, 6_250_000, 25_000_000),
    ),
    (
        "anthropic",
        "claude-opus-4-1",
        usd(15_000_000, 1_500_000, 18_750_000, 75_000_000),
    ),
    (
        "anthropic",
        "claude-opus-4",
        usd(15_000_000, 1_500_000, 18_750_000, 75_000_000),
    ),
    (
        "anthropic",
        "claude-sonnet-4-5",
        usd(3_000_000, 300_000, 3_750_000, 15_000_000),
    ),
    (
        "anthropic",
        "claude-sonnet-4",
        usd(3_000_000, 300_000, 3_750_000, 15_000_000),
    ),
    (
        "anthropic",
        "claude-haiku-4-5",
        usd(1_000_000, 100_000, 1_250_000, 5_000_000),
    ),
    // OpenAI: input, cached input, output (no cache-write charge).
    ("openai", "gpt-5.2", usd(1_750_000, 175_000, 0, 14_000_000)),
    ("openai", "gpt-5.1", usd(1_250_000, 125_000, 0, 10_000_000)),
    ("openai", "gpt-5", usd(1_250_000, 125_000, 0, 10_000_000)),
    ("openai", "gpt-5-mini", usd(250_000, 25_000, 0, 2_000_000)),
    ("openai", "gpt-4.1", usd(2_000_000, 500_000, 0, 8_000_000)),
    (
        "openai",
        "gpt-4.1-mini",
        usd(400_000, 100_000, 0, 1_600_000),
    ),
    ("openai", "gpt-4.1-nano", usd(100_000, 25_000, 0, 400_000)),
    ("openai", "gpt-4o", usd(2_500_000, 1_250_000, 0, 10_000_000)),
    ("openai", "gpt-4o-mini", usd(150_000, 75_000, 0, 600_000)),
    // Gemini, prompts up to 200,000 tokens; output includes thinking.
    (
        "gemini",
        "gemini-3-flash-preview",
        usd(500_000, 50_000, 0, 3_000_000),
    ),
    // No published cached-input price found: cached input at the input rate (an upper bound).
    (
        "gemini",
        "gemini-3-pro-preview",
        usd(2_000_000, 2_000_000, 0, 12_000_000),
    ),
    (
        "gemini",
        "gemini-2.5-pro",
        usd(1_250_000, 1_250_000, 0, 10_000_000),
    ),
    (
        "gemini",
        "gemini-2.5-flash",
        usd(300_000, 300_000, 0, 2_500_000),
    ),
    (
        "gemini",
        "gemini-2.5-flash-lite",
        usd(100_000, 100_000, 0, 400_000),
    ),
];

/// Whether `model` is `prefix` itself or one of its dated snapshots: the rest is empty or a
/// `-` followed by at least four digits (a date).
fn names(prefix: &str, model: &str) -> bool {
    let Some(rest) = model.strip_prefix(prefix) else {
        return false;
    };
    match rest.strip_prefix('-') {
        None => rest.is_empty(),
        Some(tail) => tail.bytes().take_while(u8::is_ascii_digit).count() >= 4,
    }
}

/// Prices by model: the shipped ones, and overrides set in code or in `motet.toml`
/// (`[prices."provider:model"]`), which win.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    /// Overrides by `provider:model` (exact; a dated snapshot is matched too).
    overrides: HashMap<String, Price>,
    /// Whether the shipped prices are consulted after the overrides.
    builtin: bool,
}

impl PriceTable {
    /// The shipped prices (as of [`PRICES_AS_OF`]), no overrides.
    pub fn builtin() -> Self {
        Self {
            overrides: HashMap::new(),
            builtin: true,
        }
    }

    /// No prices at all: every call is unpriced except those set with
    /// [`with_price`](Self::with_price) (and `openai-compat` ones, which are free).
    pub fn empty() -> Self {
        Self::default()
    }

    /// Sets the price of `model` (`provider:model`), replacing the shipped one.
    pub fn with_price(mut self, model: impl Into<String>, price: Price) -> Self {
        self.overrides.insert(model.into(), price);
        self
    }

    /// Sets the price of `model` (`provider:model`), replacing the shipped one.
    pub fn set_price(&mut self, model: impl Into<String>, price: Price) {
        self.overrides.insert(model.into(), price);
    }

    /// The price of `model`: an override, else a shipped price, else free for
    /// `openai-compat` (local servers); `None` when nothing prices it.
    pub fn price(&self, model: &ModelRef) -> Option<Price> {
        let (provider, name) = (model.provider(), model.model());
        let set = self
            .overrides
            .iter()
            .filter_map(|(key, price)| {
                let (p, m) = key.split_once(':')?;
                (p == provider && names(m, name)).then_some((m.len(), *price))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, price)| price);
        if set.is_some() {
            return set;
        }
        let family = match provider {
            "openai" | "openai-responses" => "openai",
            "openai-compat" => return Some(Price::FREE),
            other => other,
        };
        if !self.builtin {
            return None;
        }
        BUILTIN
            .iter()
            .filter(|(f, prefix, _)| *f == family && names(prefix, name))
            .max_by_key(|(_, prefix, _)| prefix.len())
            .map(|(_, _, price)| *price)
    }

    /// What `usage` of `model` costs, or `None` when the table has no price for it.
    pub fn cost(&self, model: &ModelRef, usage: &Usage) -> Option<Cost> {
        self.price(model).map(|price| price.cost(usage))
    }

    /// What a response's usage costs when it was split by model (`usage_by_model`, e.g.
    /// Anthropic's advisor running a second model in the turn): each part at its own model's
    /// price, under `model`'s provider. With no split, as [`cost`](Self::cost). `None` when any
    /// part is unpriced.
    pub fn cost_split(
        &self,
        model: &ModelRef,
        usage: &Usage,
        split: &[ModelUsage],
    ) -> Option<Cost> {
        if split.is_empty() {
            return self.cost(model, usage);
        }
        let mut total = Cost::ZERO;
        for part in split {
            let part_model = ModelRef::new(model.provider(), &part.model).ok()?;
            total += self.cost(&part_model, &part.usage)?;
        }
        Some(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str) -> ModelRef {
        text.parse().expect("a model ref")
    }

    #[test]
    fn every_usage_field_is_priced_once() {
        let price = Price {
            input: Rate::per_million_micro(1_000_000),
            cache_read: Rate::per_million_micro(100_000),
            cache_write: Rate::per_million_micro(1_250_000),
            output: Rate::per_million_micro(5_000_000),
            reasoning: Rate::per_million_micro(7_000_000),
        };
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 300,
            cache_read_tokens: 600,
            cache_write_tokens: 100,
            reasoning_tokens: 200,
        };
        let parts = price.breakdown(&usage);
        // 300 fresh input tokens at $1/MTok, in pico-dollars.
        assert_eq!(parts.input, Cost::from_picodollars(300 * 1_000_000));
        assert_eq!(parts.cache_read, Cost::from_picodollars(600 * 100_000));
        assert_eq!(parts.cache_write, Cost::from_picodollars(100 * 1_250_000));
        // Reasoning is split out of output, not counted twice.
        assert_eq!(parts.output, Cost::from_picodollars(100 * 5_000_000));
        assert_eq!(parts.reasoning, Cost::from_picodollars(200 * 7_000_000));
        assert_eq!(
            price.cost(&usage).picodollars(),
            300_000_000 + 60_000_000 + 125_000_000 + 500_000_000 + 1_400_000_000
        );
    }

    #[test]
    fn parts_larger_than_their_totals_price_nothing_below_zero() {
        let price = usd(1_000_000, 100_000, 2_000_000, 4_000_000);
        let odd = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 8,
            cache_write_tokens: 8,
            reasoning_tokens: 9,
        };
        let parts = price.breakdown(&odd);
        assert_eq!(parts.input, Cost::ZERO);
        assert_eq!(parts.cache_read, Rate(100_000).of(8));
        assert_eq!(parts.cache_write, Rate(2_000_000).of(2));
        assert_eq!(parts.output, Cost::ZERO);
        assert_eq!(parts.reasoning, Rate(4_000_000).of(5));
    }

    #[test]
    fn sums_are_exact_where_floats_drift() {
        // $0.175 / MTok cached input, one token at a time, ten million times.
        let rate = Rate::per_million_usd(0.175).expect("a price");
        let mut sum = Cost::ZERO;
        for _ in 0..10_000_000u32 {
            sum += rate.of(1);
        }
        assert_eq!(sum, Cost::from_usd(1.75).expect("an amount"));
        assert_eq!(sum.to_string(), "$1.75");
    }

    #[test]
    fn shipped_prices_match_models_and_their_snapshots_not_their_siblings() {
        let table = PriceTable::builtin();
        let sonnet = table.price(&model("anthropic:claude-sonnet-4-5-20250929"));
        assert_eq!(sonnet.map(|p| p.input), Some(Rate(3_000_000)));
        assert_eq!(sonnet.map(|p| p.cache_write), Some(Rate(3_750_000)));
        let opus41 = table.price(&model("anthropic:claude-opus-4-1"));
        assert_eq!(opus41.map(|p| p.output), Some(Rate(75_000_000)));
        assert_eq!(
            table.price(&model("openai:gpt-5.2")).map(|p| p.cache_read),
            Some(Rate(175_000))
        );
        assert_eq!(
            table
                .price(&model("openai-responses:gpt-4o-2024-08-06"))
                .map(|p| p.input),
            Some(Rate(2_500_000))
        );
        assert_eq!(
            table.price(&model("openai:gpt-4o-mini")).map(|p| p.input),
            Some(Rate(150_000))
        );
        // Reasoning defaults to the output price.
        let gpt5 = table.price(&model("openai:gpt-5")).unwrap_or_default();
        assert_eq!(gpt5.reasoning, gpt5.output);
        // Unknown models are unpriced, not guessed; local servers are free.
        assert_eq!(table.price(&model("openai:o3")), None);
        assert_eq!(table.price(&model("anthropic:claude-opus-4-7")), None);
        assert_eq!(
            table.price(&model("openai-compat:qwen3-0.6b")),
            Some(Price::FREE)
        );
    }

    #[test]
    fn overrides_win_over_the_shipped_prices() {
        let cheap = usd(1, 1, 1, 1);
        let table = PriceTable::builtin()
            .with_price("openai:gpt-5.2", cheap)
            .with_price("openai-compat:hosted-llama", usd(200_000, 0, 0, 600_000));
        assert_eq!(table.price(&model("openai:gpt-5.2")), Some(cheap));
        assert_eq!(
            table
                .price(&model("openai-compat:hosted-llama"))
                .map(|p| p.output),
            Some(Rate(600_000))
        );
        assert_eq!(PriceTable::empty().price(&model("openai:gpt-5.2")), None);
    }

    #[test]
    fn a_split_response_prices_each_model_at_its_own_rate() {
        let table = PriceTable::builtin();
        let part = |name: &str, input| ModelUsage {
            model: name.to_owned(),
            usage: Usage {
                input_tokens: input,
                ..Usage::default()
            },
        };
        let split = [
            part("claude-haiku-4-5", 1_000),
            part("claude-opus-4-6", 1_000),
        ];
        let total: Usage = split.iter().map(|p| p.usage).sum();
        let cost = table.cost_split(&model("anthropic:claude-haiku-4-5"), &total, &split);
        assert_eq!(
            cost,
            Some(Rate(1_000_000).of(1_000) + Rate(5_000_000).of(1_000))
        );
    }

    #[test]
    fn amounts_read_from_dollars_refuse_negative_and_non_finite_values() {
        assert_eq!(Rate::per_million_usd(1.25), Some(Rate(1_250_000)));
        assert_eq!(Rate::per_million_usd(-1.0), None);
        assert_eq!(Rate::per_million_usd(f64::NAN), None);
        assert_eq!(
            Cost::from_usd(2.0).map(|c| c.to_string()),
            Some("$2.00".to_owned())
        );
        assert_eq!(Cost::from_picodollars(123_000_000).to_string(), "$0.000123");
    }
}
