//! ContextPolicy: how a thread is projected into an LLM context (seed 000 §3).
//!
//! A policy sets the token budget, the windows (turns, messages), what to do with summaries,
//! which entry kinds to show, and how the window moves ([`WindowMode`]). It is resolved per
//! request: the request's [`PolicyOverride`] over the agent's policy over the strategy's
//! configured one over [`ContextPolicy::new`].

mod trigger;

use motet_directives::ModelRef;
use serde::{Deserialize, Serialize};

use crate::thread::EntryKind;

/// What the projector does with summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Summarization {
    /// Ignore summary entries.
    None,
    /// Show the latest summary and project only what follows it.
    #[default]
    UseExisting,
    /// As `UseExisting`, and ask for a new summary (a `Summarize` directive) when history had to
    /// be dropped.
    RequestNew,
}

/// The role a summary is shown with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryRole {
    /// A system message.
    #[default]
    System,
    /// A user message.
    User,
}

/// How the history window moves when it no longer fits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowMode {
    /// Keep a stable prefix for prompt caching: when the window overflows, the strategy commits a
    /// boundary entry so the kept history fills at most `low_water` of the budget, and every call
    /// until the next boundary starts with the previous call's messages.
    #[default]
    Stable,
    /// The seeds' sliding window: drop the oldest groups on every call until the rest fits.
    Sliding,
}

/// Which token estimator the policy asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimatorKind {
    /// `bytes / 4 + 10` per message.
    #[default]
    Heuristic,
    /// The heuristic calibrated by the provider's count of the thread's latest call (its
    /// usage): the budget is read in heuristic tokens at that call's ratio
    /// ([`ContextPolicy::calibrated`]); the heuristic until a call has been counted.
    Calibrated,
}

impl EstimatorKind {
    /// The estimator this kind names.
    pub fn estimator(self) -> &'static dyn crate::estimate::TokenEstimator {
        match self {
            // A calibrated policy scales its budget, not each estimate: entries keep the
            // heuristic estimate they were appended with.
            Self::Heuristic | Self::Calibrated => &crate::estimate::Heuristic,
        }
    }
}

/// How to project a thread into an LLM context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContextPolicy {
    /// Maximum tokens of input context.
    pub max_input_tokens: u32,
    /// Tokens reserved for the response, taken out of `max_input_tokens`.
    pub reserve_output_tokens: u32,
    /// Maximum history messages (0 = unlimited). The newest group is always kept.
    pub max_messages: u32,
    /// Maximum user turns of history (0 = unlimited); a turn is a user message and what follows
    /// it up to the next user message.
    pub keep_last_turns: u32,
    /// What to do with summaries.
    pub summarization: Summarization,
    /// The role summaries are shown with.
    pub summary_role: SummaryRole,
    /// Entry kinds the projection shows.
    pub include_kinds: Vec<EntryKind>,
    /// System prompt, when the projection input does not bring one.
    pub system_prompt: Option<String>,
    /// Token estimator.
    pub token_estimator: EstimatorKind,
    /// How the window moves.
    pub window: WindowMode,
    /// In stable mode, the fraction of the history budget a new boundary leaves filled.
    pub low_water: f64,
    /// With [`Summarization::RequestNew`]: ask for a summary once this many entries follow
    /// the latest summary (0 = never on this ground).
    pub summary_after_entries: u32,
    /// With [`Summarization::RequestNew`]: ask for a summary once the entries no summary
    /// covers are estimated at more than this many tokens (0 = never on this ground).
    pub summary_over_tokens: u32,
    /// The fraction of the input budget a projection may fill before the strategy warns
    /// (`context.warning`, reason `near_budget`); 0 or NaN turns the warning off.
    pub warn_at: f64,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl ContextPolicy {
    /// The seed's defaults: 8,000 input tokens with 2,000 reserved for output, last 3 turns,
    /// existing summaries as system messages, stable window with a 0.7 low-water mark.
    pub fn new() -> Self {
        Self {
            max_input_tokens: 8_000,
            reserve_output_tokens: 2_000,
            max_messages: 0,
            keep_last_turns: 3,
            summarization: Summarization::UseExisting,
            summary_role: SummaryRole::System,
            include_kinds: vec![
                EntryKind::User,
                EntryKind::System,
                EntryKind::Assistant,
                EntryKind::ToolResult,
                EntryKind::Summary,
            ],
            system_prompt: None,
            token_estimator: EstimatorKind::Heuristic,
            window: WindowMode::Stable,
            low_water: 0.7,
            summary_after_entries: 0,
            summary_over_tokens: 0,
            warn_at: 0.9,
        }
    }

    /// For 8K-context models: 6,000 input tokens, last 2 turns.
    pub fn short_context() -> Self {
        Self {
            max_input_tokens: 6_000,
            keep_last_turns: 2,
            ..Self::new()
        }
    }

    /// For 128K+ context models: 100,000 input tokens, last 10 turns.
    pub fn long_context() -> Self {
        Self {
            max_input_tokens: 100_000,
            keep_last_turns: 10,
            max_messages: 0,
            ..Self::new()
        }
    }

    /// For tool-heavy work: last 5 turns, no summaries.
    pub fn tool_focused() -> Self {
        Self {
            keep_last_turns: 5,
            include_kinds: vec![
                EntryKind::User,
                EntryKind::System,
                EntryKind::Assistant,
                EntryKind::ToolResult,
            ],
            summarization: Summarization::None,
            ..Self::new()
        }
    }

    /// For a model with a context window of `tokens`: three quarters of it as input budget,
    /// of which the answer's reserve is 2,000 tokens or a quarter of the window, whichever is
    /// less (a 2,048-token llama.cpp slot keeps 1,024 for the history, 512 for the answer and
    /// 512 for the estimate's error); 2 turns up to 16K, 10 turns from 100K, 5 in between.
    pub fn for_context_window(tokens: u32) -> Self {
        let max_input_tokens = u32::try_from(u64::from(tokens) * 3 / 4).unwrap_or(u32::MAX);
        let keep_last_turns = match tokens {
            0..=16_384 => 2,
            100_000.. => 10,
            _ => 5,
        };
        Self {
            max_input_tokens,
            reserve_output_tokens: (tokens / 4).min(Self::new().reserve_output_tokens),
            keep_last_turns,
            ..Self::new()
        }
    }

    /// For `model`, looking its context window up in `windows` (the providers crate owns the
    /// capability table); the default policy when the model is unknown.
    pub fn for_model(model: &ModelRef, windows: &dyn ContextWindows) -> Self {
        windows
            .context_window(model)
            .map_or_else(Self::new, Self::for_context_window)
    }

    /// Tokens available for the input: `max_input_tokens - reserve_output_tokens`.
    pub fn input_budget(&self) -> u64 {
        u64::from(
            self.max_input_tokens
                .saturating_sub(self.reserve_output_tokens),
        )
    }

    /// True when entries of `kind` are shown.
    pub fn includes(&self, kind: EntryKind) -> bool {
        self.include_kinds.contains(&kind)
    }

    /// The low-water fraction, clamped into `0.0..=1.0` (NaN reads as 0.7).
    pub fn low_water_fraction(&self) -> f64 {
        if self.low_water.is_nan() {
            0.7
        } else {
            self.low_water.clamp(0.0, 1.0)
        }
    }

    /// This policy with `over`'s fields applied on top.
    pub fn apply(&self, over: &PolicyOverride) -> Self {
        let mut policy = self.clone();
        macro_rules! take {
            ($($field:ident),*) => {
                $(if let Some(value) = &over.$field { policy.$field = value.clone(); })*
            };
        }
        take!(
            max_input_tokens,
            reserve_output_tokens,
            max_messages,
            keep_last_turns,
            summarization,
            summary_role,
            include_kinds,
            token_estimator,
            window,
            low_water,
            summary_after_entries,
            summary_over_tokens,
            warn_at
        );
        if over.system_prompt.is_some() {
            policy.system_prompt.clone_from(&over.system_prompt);
        }
        policy
    }

    /// This policy with its token limits read in heuristic tokens at `calibration`'s ratio: a
    /// provider that counts 1.5 times the heuristic's estimate leaves two thirds of the
    /// heuristic budget.
    pub fn calibrated(&self, calibration: crate::estimate::Calibrated) -> Self {
        let scale = |tokens: u32| {
            let scaled = u64::from(tokens) * 1_000 / u64::from(calibration.per_mille().max(1));
            u32::try_from(scaled).unwrap_or(u32::MAX)
        };
        Self {
            max_input_tokens: scale(self.max_input_tokens),
            reserve_output_tokens: scale(self.reserve_output_tokens),
            ..self.clone()
        }
    }

    /// The warning threshold in tokens: `warn_at` of the input budget, `None` when the
    /// warning is off.
    pub fn warn_threshold(&self) -> Option<u64> {
        if self.warn_at.is_nan() || self.warn_at <= 0.0 {
            return None;
        }
        // Truncation toward zero: the warning comes at the fraction or just before it.
        Some((self.input_budget() as f64 * self.warn_at.min(1.0)) as u64)
    }

    /// Resolves the policy of one request: `request` over `agent` over `config` over
    /// [`ContextPolicy::new`] (a set policy replaces a lower one whole; the request's override
    /// changes only the fields it sets).
    pub fn resolve(
        request: Option<&PolicyOverride>,
        agent: Option<&ContextPolicy>,
        config: Option<&ContextPolicy>,
    ) -> Self {
        let base = agent.or(config).cloned().unwrap_or_default();
        match request {
            Some(over) => base.apply(over),
            None => base,
        }
    }

    /// Sets `max_input_tokens`.
    pub fn with_max_input_tokens(mut self, tokens: u32) -> Self {
        self.max_input_tokens = tokens;
        self
    }

    /// Sets `reserve_output_tokens`.
    pub fn with_reserve_output_tokens(mut self, tokens: u32) -> Self {
        self.reserve_output_tokens = tokens;
        self
    }

    /// Sets `max_messages`.
    pub fn with_max_messages(mut self, messages: u32) -> Self {
        self.max_messages = messages;
        self
    }

    /// Sets `keep_last_turns`.
    pub fn with_keep_last_turns(mut self, turns: u32) -> Self {
        self.keep_last_turns = turns;
        self
    }

    /// Sets `summarization`.
    pub fn with_summarization(mut self, summarization: Summarization) -> Self {
        self.summarization = summarization;
        self
    }

    /// Sets `summary_role`.
    pub fn with_summary_role(mut self, role: SummaryRole) -> Self {
        self.summary_role = role;
        self
    }

    /// Sets `include_kinds`.
    pub fn with_include_kinds(mut self, kinds: Vec<EntryKind>) -> Self {
        self.include_kinds = kinds;
        self
    }

    /// Sets `system_prompt`.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets `window`.
    pub fn with_window(mut self, window: WindowMode) -> Self {
        self.window = window;
        self
    }

    /// Sets `low_water`.
    pub fn with_low_water(mut self, fraction: f64) -> Self {
        self.low_water = fraction;
        self
    }

    /// Sets `token_estimator`.
    pub fn with_token_estimator(mut self, estimator: EstimatorKind) -> Self {
        self.token_estimator = estimator;
        self
    }

    /// Sets `summary_after_entries`.
    pub fn with_summary_after_entries(mut self, entries: u32) -> Self {
        self.summary_after_entries = entries;
        self
    }

    /// Sets `summary_over_tokens`.
    pub fn with_summary_over_tokens(mut self, tokens: u32) -> Self {
        self.summary_over_tokens = tokens;
        self
    }

    /// Sets `warn_at`.
    pub fn with_warn_at(mut self, fraction: f64) -> Self {
        self.warn_at = fraction;
        self
    }
}

/// Why a summary is asked for (seed 001 §8.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "trigger")]
pub enum SummaryTrigger {
    /// The projection had to drop history.
    Truncated,
    /// This many entries follow the latest summary.
    Entries {
        /// Entries since the latest summary.
        entries: u64,
    },
    /// The entries no summary covers are estimated at this many tokens.
    Tokens {
        /// Estimated tokens since the latest summary.
        tokens: u64,
    },
}

/// A per-request change to a policy: every field that is set replaces the policy's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyOverride {
    /// See [`ContextPolicy::max_input_tokens`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u32>,
    /// See [`ContextPolicy::reserve_output_tokens`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserve_output_tokens: Option<u32>,
    /// See [`ContextPolicy::max_messages`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_messages: Option<u32>,
    /// See [`ContextPolicy::keep_last_turns`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_last_turns: Option<u32>,
    /// See [`ContextPolicy::summarization`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarization: Option<Summarization>,
    /// See [`ContextPolicy::summary_role`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_role: Option<SummaryRole>,
    /// See [`ContextPolicy::include_kinds`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_kinds: Option<Vec<EntryKind>>,
    /// See [`ContextPolicy::system_prompt`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// See [`ContextPolicy::token_estimator`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_estimator: Option<EstimatorKind>,
    /// See [`ContextPolicy::window`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowMode>,
    /// See [`ContextPolicy::low_water`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_water: Option<f64>,
    /// See [`ContextPolicy::summary_after_entries`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_after_entries: Option<u32>,
    /// See [`ContextPolicy::summary_over_tokens`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_over_tokens: Option<u32>,
    /// See [`ContextPolicy::warn_at`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warn_at: Option<f64>,
}

impl From<ContextPolicy> for PolicyOverride {
    /// An override that sets every field: the request's policy replaces the agent's whole.
    fn from(p: ContextPolicy) -> Self {
        Self {
            max_input_tokens: Some(p.max_input_tokens),
            reserve_output_tokens: Some(p.reserve_output_tokens),
            max_messages: Some(p.max_messages),
            keep_last_turns: Some(p.keep_last_turns),
            summarization: Some(p.summarization),
            summary_role: Some(p.summary_role),
            include_kinds: Some(p.include_kinds),
            system_prompt: p.system_prompt,
            token_estimator: Some(p.token_estimator),
            window: Some(p.window),
            low_water: Some(p.low_water),
            summary_after_entries: Some(p.summary_after_entries),
            summary_over_tokens: Some(p.summary_over_tokens),
            warn_at: Some(p.warn_at),
        }
    }
}

/// Knows the context window of models (the providers crate implements it from its capability
/// table). Closures `Fn(&ModelRef) -> Option<u32>` implement it.
pub trait ContextWindows {
    /// The model's context window in tokens, if known.
    fn context_window(&self, model: &ModelRef) -> Option<u32>;
}

impl<F: Fn(&ModelRef) -> Option<u32>> ContextWindows for F {
    fn context_window(&self, model: &ModelRef) -> Option<u32> {
        self(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_window_keeps_room_for_history_and_answer() {
        let slot = ContextPolicy::for_context_window(2_048);
        assert_eq!(slot.max_input_tokens, 1_536);
        assert_eq!(slot.reserve_output_tokens, 512);
        assert_eq!(slot.input_budget(), 1_024);
        // Large windows keep the usual reserve.
        assert_eq!(
            ContextPolicy::for_context_window(200_000).reserve_output_tokens,
            2_000
        );
        assert_eq!(
            ContextPolicy::for_context_window(8_192).input_budget(),
            4_144
        );
        // Every window leaves the history some room.
        for window in [256, 1_024, 2_048, 4_096, 8_000, 16_384, 128_000] {
            assert!(
                ContextPolicy::for_context_window(window).input_budget() > 0,
                "{window}"
            );
        }
    }

    #[test]
    fn presets_follow_the_seed() {
        let p = ContextPolicy::new();
        assert_eq!(
            (p.max_input_tokens, p.reserve_output_tokens),
            (8_000, 2_000)
        );
        assert_eq!((p.max_messages, p.keep_last_turns), (0, 3));
        assert_eq!(p.input_budget(), 6_000);
        assert_eq!(ContextPolicy::short_context().max_input_tokens, 6_000);
        assert_eq!(ContextPolicy::long_context().keep_last_turns, 10);
        let tools = ContextPolicy::tool_focused();
        assert_eq!(tools.summarization, Summarization::None);
        assert!(!tools.includes(EntryKind::Summary));
    }

    #[test]
    fn resolution_order_is_request_agent_config_default() {
        let config = ContextPolicy::new().with_keep_last_turns(7);
        let agent = ContextPolicy::new().with_keep_last_turns(9);
        let over = PolicyOverride {
            max_input_tokens: Some(1_000),
            ..PolicyOverride::default()
        };
        assert_eq!(
            ContextPolicy::resolve(None, None, None),
            ContextPolicy::new()
        );
        assert_eq!(
            ContextPolicy::resolve(None, None, Some(&config)).keep_last_turns,
            7
        );
        assert_eq!(
            ContextPolicy::resolve(None, Some(&agent), Some(&config)).keep_last_turns,
            9
        );
        let resolved = ContextPolicy::resolve(Some(&over), Some(&agent), Some(&config));
        assert_eq!(
            (resolved.max_input_tokens, resolved.keep_last_turns),
            (1_000, 9)
        );
        let whole: PolicyOverride = ContextPolicy::short_context().into();
        assert_eq!(
            ContextPolicy::resolve(Some(&whole), Some(&agent), None),
            ContextPolicy::short_context()
        );
    }

    #[test]
    fn for_model_uses_the_window_table() {
        let table = |m: &ModelRef| (m.model() == "small").then_some(8_192);
        let small: ModelRef = "openai:small".parse().unwrap();
        let big: ModelRef = "openai:big".parse().unwrap();
        let p = ContextPolicy::for_model(&small, &table);
        assert_eq!((p.max_input_tokens, p.keep_last_turns), (6_144, 2));
        assert_eq!(ContextPolicy::for_model(&big, &table), ContextPolicy::new());
        assert_eq!(
            ContextPolicy::for_context_window(200_000).keep_last_turns,
            10
        );
    }
}
