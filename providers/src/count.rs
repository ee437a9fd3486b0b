//! Token counts as servers write them. OpenAI-compatible servers (and the Responses and
//! Anthropic dialects some of them serve) send `null` for a count they do not keep and `12.0`
//! for twelve; a count must never cost the answer it describes. `null` is no count, a whole
//! number written as a float counts, and anything else (a fraction, a negative number, a
//! string) is dropped with a warning.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// For an `Option<u64>` count: `None` for `null` or a value that is not a count.
pub(crate) fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(count(&Value::deserialize(d)?))
}

/// For a `u64` count: `0` for `null` or a value that is not a count.
pub(crate) fn or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(count(&Value::deserialize(d)?).unwrap_or(0))
}

/// 2^64, the first float past `u64::MAX`.
const PAST_U64: f64 = 18_446_744_073_709_551_616.0;

fn count(value: &Value) -> Option<u64> {
    let whole = match value {
        Value::Null => return None,
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < PAST_U64)
                // Whole, non-negative and in range: the conversion is exact.
                .map(|f| f as u64)
        }),
        _ => None,
    };
    if whole.is_none() {
        tracing::warn!(%value, "a token count that is not a whole number was ignored");
    }
    whole
}
