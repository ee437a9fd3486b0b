//! Token usage and stop reasons.

use std::fmt;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Tokens consumed by one call, or summed over many (`a + b`).
///
/// In JSON every count may be missing (read as 0); the cache and reasoning counts, which most
/// calls do not have, are left out when 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, including cached ones.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens, including reasoning.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "no_tokens")]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "no_tokens")]
    pub cache_write_tokens: u64,
    /// Output tokens spent on reasoning.
    #[serde(default, skip_serializing_if = "no_tokens")]
    pub reasoning_tokens: u64,
}

fn no_tokens(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// True when nothing was counted.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(rhs.input_tokens),
            output_tokens: self.output_tokens.saturating_add(rhs.output_tokens),
            cache_read_tokens: self.cache_read_tokens.saturating_add(rhs.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(rhs.cache_write_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_add(rhs.reasoning_tokens),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), Add::add)
    }
}

/// What one model consumed within a response that more than one model worked on (Anthropic's
/// advisor tool runs a second model inside the turn, priced as that model): the part of the
/// response's [`Usage`] to price at that model's rates.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelUsage {
    /// The model, as the provider named it.
    pub model: String,
    /// Its tokens.
    #[serde(default)]
    pub usage: Usage,
}

/// Why a turn ended. Values a provider adds later are kept verbatim in [`StopReason::Other`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum StopReason {
    /// The model finished its answer.
    #[default]
    EndTurn,
    /// The model asked for tools.
    ToolUse,
    /// The output token limit was reached.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The provider filtered the content (safety, recitation, policy).
    ContentFilter,
    /// The model refused.
    Refusal,
    /// The request was cancelled before the turn finished.
    Cancelled,
    /// The provider paused a long turn (Anthropic's `pause_turn`, while its server tools run):
    /// the turn is sent back as it is to let the model continue it.
    PauseTurn,
    /// Anything else, verbatim.
    Other(String),
}

impl StopReason {
    /// The canonical string form (`end_turn`, `tool_use`, ...; `Other` verbatim).
    pub fn as_str(&self) -> &str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::MaxTokens => "max_tokens",
            Self::StopSequence => "stop_sequence",
            Self::ContentFilter => "content_filter",
            Self::Refusal => "refusal",
            Self::Cancelled => "cancelled",
            Self::PauseTurn => "pause_turn",
            Self::Other(other) => other,
        }
    }
}

impl From<String> for StopReason {
    fn from(value: String) -> Self {
        match value.as_str() {
            "end_turn" => Self::EndTurn,
            "tool_use" => Self::ToolUse,
            "max_tokens" => Self::MaxTokens,
            "stop_sequence" => Self::StopSequence,
            "content_filter" => Self::ContentFilter,
            "refusal" => Self::Refusal,
            "cancelled" => Self::Cancelled,
            "pause_turn" => Self::PauseTurn,
            _ => Self::Other(value),
        }
    }
}

impl From<StopReason> for String {
    fn from(value: StopReason) -> Self {
        match value {
            StopReason::Other(other) => other,
            known => known.as_str().to_owned(),
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_call_does_not_have_are_left_out_and_read_back_as_zero() {
        let plain = Usage {
            input_tokens: 12,
            output_tokens: 3,
            ..Usage::default()
        };
        let json = serde_json::to_value(plain).expect("a usage serializes");
        assert_eq!(
            json,
            serde_json::json!({"input_tokens": 12, "output_tokens": 3})
        );
        assert_eq!(serde_json::from_value::<Usage>(json).ok(), Some(plain));

        let cached = Usage {
            cache_read_tokens: 7,
            reasoning_tokens: 2,
            ..plain
        };
        let json = serde_json::to_value(cached).expect("a usage serializes");
        assert_eq!(json["cache_read_tokens"], 7);
        assert_eq!(json["reasoning_tokens"], 2);
        assert!(json.get("cache_write_tokens").is_none());
        assert_eq!(serde_json::from_value::<Usage>(json).ok(), Some(cached));
        assert_eq!(
            serde_json::from_str::<Usage>("{}").ok(),
            Some(Usage::default())
        );
    }
}
