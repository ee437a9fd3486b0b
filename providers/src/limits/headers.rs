//! What providers say of an account's limits in their response headers, read into [`Learned`].
//!
//! - OpenAI (and compatible servers): `x-ratelimit-limit-requests`,
//!   `x-ratelimit-remaining-requests`, `x-ratelimit-reset-requests` and the same for `-tokens`
//!   (input and output together); resets are Go-style durations (`1s`, `6m0s`, `20ms`).
//! - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
//!   remaining,reset}`; resets are RFC 3339 instants.
//! - `retry-after-ms` / `retry-after`, read by [`RetryHints`].
//!
//! Pure: the current time is an argument.

use std::time::Duration;

use super::kind::Kind;
use crate::retry::RetryHints;

/// One limit window as a response described it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    /// The limit per window.
    pub limit: Option<u64>,
    /// What is left of it now.
    pub remaining: Option<u64>,
    /// How long until it is full again.
    pub reset: Option<Duration>,
}

impl Window {
    /// Whether the response said anything of this window.
    pub fn is_empty(&self) -> bool {
        self.limit.is_none() && self.remaining.is_none() && self.reset.is_none()
    }
}

/// Everything a response's headers said of the account's limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Learned {
    /// Requests.
    pub requests: Window,
    /// Input tokens.
    pub input_tokens: Window,
    /// Output tokens.
    pub output_tokens: Window,
    /// Input and output tokens together.
    pub tokens: Window,
    /// `retry-after-ms` or `retry-after`.
    pub retry_after: Option<Duration>,
}

impl Learned {
    /// The window of `kind`.
    pub fn window(&self, kind: Kind) -> Window {
        match kind {
            Kind::Requests => self.requests,
            Kind::InputTokens => self.input_tokens,
            Kind::OutputTokens => self.output_tokens,
            Kind::Tokens => self.tokens,
        }
    }

    fn window_mut(&mut self, kind: Kind) -> &mut Window {
        match kind {
            Kind::Requests => &mut self.requests,
            Kind::InputTokens => &mut self.input_tokens,
            Kind::OutputTokens => &mut self.output_tokens,
            Kind::Tokens => &mut self.tokens,
        }
    }

    /// Whether the headers said anything of the limits.
    pub fn is_empty(&self) -> bool {
        Kind::ALL.iter().all(|k| self.window(*k).is_empty()) && self.retry_after.is_none()
    }

    /// Reads response headers (`name`, `value` pairs, any case). `now_ms` is the current Unix
    /// time in milliseconds, for Anthropic's reset instants and an HTTP-date `retry-after`.
    /// Values that do not parse are ignored.
    pub fn from_headers<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
        now_ms: i64,
    ) -> Self {
        let mut learned = Self {
            retry_after: RetryHints::from_headers(headers.clone(), now_ms.div_euclid(1000))
                .retry_after,
            ..Self::default()
        };
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            let value = value.trim();
            if let Some(rest) = name.strip_prefix("x-ratelimit-") {
                learned.openai(rest, value);
            } else if let Some(rest) = name.strip_prefix("anthropic-ratelimit-") {
                learned.anthropic(rest, value, now_ms);
            }
        }
        learned
    }

    /// `limit-requests`, `remaining-tokens`, `reset-requests`, ...
    fn openai(&mut self, rest: &str, value: &str) {
        let Some((field, what)) = rest.split_once('-') else {
            return;
        };
        let kind = match what {
            "requests" => Kind::Requests,
            "tokens" => Kind::Tokens,
            _ => return,
        };
        let window = self.window_mut(kind);
        match field {
            "limit" => window.limit = count(value),
            "remaining" => window.remaining = count(value),
            "reset" => window.reset = go_duration(value),
            _ => {}
        }
    }

    /// `requests-limit`, `input-tokens-remaining`, `tokens-reset`, ...
    fn anthropic(&mut self, rest: &str, value: &str, now_ms: i64) {
        let Some((what, field)) = rest.rsplit_once('-') else {
            return;
        };
        let kind = match what {
            "requests" => Kind::Requests,
            "tokens" => Kind::Tokens,
            "input-tokens" => Kind::InputTokens,
            "output-tokens" => Kind::OutputTokens,
            _ => return,
        };
        let window = self.window_mut(kind);
        match field {
            "limit" => window.limit = count(value),
            "remaining" => window.remaining = count(value),
            "reset" => window.reset = until_instant(value, now_ms),
            _ => {}
        }
    }
}

/// A count as the headers write it (`600`, some proxies `600.0`).
fn count(value: &str) -> Option<u64> {
    value.parse::<u64>().ok().or_else(|| {
        let f = value.parse::<f64>().ok()?;
        (f.is_finite() && f >= 0.0 && f < u64::MAX as f64).then_some(f as u64)
    })
}

/// A Go-style duration as OpenAI writes its resets: `20ms`, `1s`, `6m0s`, `1h2m3.5s`, `0.5s`;
/// a bare number is seconds. `None` for anything else.
pub fn go_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if let Ok(seconds) = text.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::try_from_secs_f64(seconds).ok())
            .flatten();
    }
    let mut total = 0.0_f64;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// How long from `now_ms` (Unix milliseconds) until the RFC 3339 instant `text`; zero when it
/// is past. `None` when it does not parse.
pub fn until_instant(text: &str, now_ms: i64) -> Option<Duration> {
    let at: jiff::Timestamp = text.trim().parse().ok()?;
    let ms = at.as_millisecond().saturating_sub(now_ms);
    Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_as_openai_writes_them() {
        for (text, ms) in [
            ("1s", 1000),
            ("6m0s", 360_000),
            ("20ms", 20),
            ("1h2m3s", 3_723_000),
            ("0.5s", 500),
            ("12ms", 12),
            ("7.66s", 7660),
            ("2", 2000),
            ("0s", 0),
        ] {
            assert_eq!(go_duration(text), Some(Duration::from_millis(ms)), "{text}");
        }
        for bad in ["", "s", "1x", "-1s", "1s2", "abc", "1e400", "..s"] {
            assert_eq!(go_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn rfc3339_resets_are_read_from_now() {
        let now = jiff::Timestamp::from_second(1_755_780_000)
            .map(|t| t.as_millisecond())
            .unwrap_or(0);
        let later = "2025-08-21T12:40:05Z";
        let at: jiff::Timestamp = later.parse().unwrap_or_default();
        let expected = at.as_millisecond() - now;
        assert_eq!(
            until_instant(later, now),
            Some(Duration::from_millis(expected as u64))
        );
        assert_eq!(
            until_instant("2000-01-01T00:00:00Z", now),
            Some(Duration::ZERO)
        );
        assert_eq!(until_instant("tomorrow", now), None);
    }

    #[test]
    fn openai_headers() {
        let learned = Learned::from_headers(
            [
                ("x-ratelimit-limit-requests", "60"),
                ("X-RateLimit-Remaining-Requests", "59"),
                ("x-ratelimit-reset-requests", "1s"),
                ("x-ratelimit-limit-tokens", "150000"),
                ("x-ratelimit-remaining-tokens", "149984"),
                ("x-ratelimit-reset-tokens", "6m0s"),
                ("x-ratelimit-limit-tokens_usage_based", "1"),
                ("content-type", "text/event-stream"),
            ],
            0,
        );
        assert_eq!(
            learned.requests,
            Window {
                limit: Some(60),
                remaining: Some(59),
                reset: Some(Duration::from_secs(1)),
            }
        );
        assert_eq!(
            learned.tokens,
            Window {
                limit: Some(150_000),
                remaining: Some(149_984),
                reset: Some(Duration::from_secs(360)),
            }
        );
        assert!(learned.input_tokens.is_empty() && learned.output_tokens.is_empty());
        assert_eq!(learned.retry_after, None);
    }

    #[test]
    fn anthropic_headers() {
        let now: jiff::Timestamp = "2025-08-21T12:40:58Z".parse().unwrap_or_default();
        let learned = Learned::from_headers(
            [
                ("anthropic-ratelimit-input-tokens-limit", "80000"),
                ("anthropic-ratelimit-input-tokens-remaining", "79000"),
                (
                    "anthropic-ratelimit-input-tokens-reset",
                    "2025-08-21T12:40:59Z",
                ),
                ("anthropic-ratelimit-output-tokens-limit", "16000"),
                ("anthropic-ratelimit-output-tokens-remaining", "16000"),
                (
                    "anthropic-ratelimit-output-tokens-reset",
                    "2025-08-21T12:41:00Z",
                ),
                ("anthropic-ratelimit-requests-limit", "1000"),
                ("anthropic-ratelimit-requests-remaining", "999"),
                ("anthropic-ratelimit-requests-reset", "2025-08-21T12:40:59Z"),
                ("anthropic-ratelimit-tokens-limit", "96000"),
                ("anthropic-ratelimit-tokens-remaining", "95000"),
                ("anthropic-ratelimit-tokens-reset", "not a time"),
                ("retry-after", "3"),
            ],
            now.as_millisecond(),
        );
        assert_eq!(
            learned.input_tokens,
            Window {
                limit: Some(80_000),
                remaining: Some(79_000),
                reset: Some(Duration::from_secs(1)),
            }
        );
        assert_eq!(learned.output_tokens.reset, Some(Duration::from_secs(2)));
        assert_eq!(learned.requests.limit, Some(1000));
        assert_eq!(learned.requests.remaining, Some(999));
        assert_eq!(learned.tokens.limit, Some(96_000));
        assert_eq!(learned.tokens.reset, None);
        assert_eq!(learned.retry_after, Some(Duration::from_secs(3)));
    }

    #[test]
    fn garbage_is_ignored_not_a_panic() {
        let learned = Learned::from_headers(
            [
                ("x-ratelimit-limit-requests", "lots"),
                ("x-ratelimit-remaining-requests", "-3"),
                ("x-ratelimit-reset-requests", "soon"),
                ("x-ratelimit-", ""),
                ("anthropic-ratelimit-", "1"),
                ("anthropic-ratelimit-requests-limit", "1e999"),
                ("retry-after-ms", "250"),
            ],
            i64::MIN,
        );
        assert!(learned.requests.is_empty());
        assert_eq!(learned.retry_after, Some(Duration::from_millis(250)));
        assert!(Learned::from_headers([("server", "x")], 0).is_empty());
    }
}
