//! When to try a failed call again, and after how long.
//!
//! The defaults follow the official OpenAI and Anthropic SDKs: 2 retries; backoff
//! `min(0.5 · 2^n, 8)` seconds minus up to 25% jitter; retry on connection errors, timeouts,
//! 408, 409, 429 and every 5xx (Anthropic's 529 included); `retry-after-ms` and `retry-after`
//! (seconds or an HTTP date) honoured up to a cap; `x-should-retry: true|false` from the server
//! overrides all of that. Retries happen only before any content reached the caller.

use std::time::Duration;

use crate::error::ProviderError;

/// The retry policy of a client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt. Default 2.
    pub max_retries: u32,
    /// The first backoff. Default 0.5 s.
    pub initial_backoff: Duration,
    /// The longest backoff. Default 8 s.
    pub max_backoff: Duration,
    /// The fraction of a backoff that jitter may take off. Default 0.25.
    pub jitter: f64,
    /// The longest server-requested wait honoured; longer requests are cut to it. Default 60 s.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            jitter: 0.25,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// What the server said about retrying, from the response headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryHints {
    /// `retry-after-ms` or `retry-after`.
    pub retry_after: Option<Duration>,
    /// `x-should-retry`.
    pub should_retry: Option<bool>,
}

impl RetryHints {
    /// Reads the hints from response headers (`name`, `value` pairs, any case). `now` is the
    /// current Unix time in seconds, for an HTTP-date `retry-after`.
    pub fn from_headers<'a>(
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        now: i64,
    ) -> Self {
        let mut hints = Self::default();
        let mut after_ms = None;
        let mut after = None;
        for (name, value) in headers {
            let value = value.trim();
            if name.eq_ignore_ascii_case("retry-after-ms") {
                after_ms = value
                    .parse::<f64>()
                    .ok()
                    .filter(|ms| ms.is_finite() && *ms >= 0.0)
                    .map(|ms| seconds(ms / 1000.0));
            } else if name.eq_ignore_ascii_case("retry-after") {
                after = parse_retry_after(value, now);
            } else if name.eq_ignore_ascii_case("x-should-retry") {
                hints.should_retry = match value {
                    "true" => Some(true),
                    "false" => Some(false),
                    _ => None,
                };
            }
        }
        hints.retry_after = after_ms.or(after);
        hints
    }
}

/// A finite, non-negative number of seconds as a duration; one too large for `Duration` (a
/// server may say `retry-after: 1e30`) is the longest there is, which the policy then cuts to
/// `max_retry_after`. (`Duration::from_secs_f64` panics on it.)
fn seconds(value: f64) -> Duration {
    Duration::try_from_secs_f64(value).unwrap_or(Duration::MAX)
}

fn parse_retry_after(value: &str, now: i64) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| self::seconds(seconds));
    }
    let at = jiff::fmt::rfc2822::parse(value)
        .ok()?
        .timestamp()
        .as_second();
    Some(Duration::from_secs(u64::try_from(at - now).unwrap_or(0)))
}

/// Why an attempt failed, as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No response: the connection failed or a timeout elapsed.
    Transport,
    /// The server answered with this status.
    Status(u16),
    /// The stream failed before delivering content, with an error that may pass.
    Transient,
    /// Anything else: not worth repeating.
    Permanent,
}

impl Failure {
    /// How the policy should see a typed error that ended an attempt before content.
    pub fn of(error: &ProviderError) -> Self {
        match error {
            ProviderError::Connect { .. } | ProviderError::Timeout { .. } => Self::Transport,
            ProviderError::RateLimited { .. }
            | ProviderError::Overloaded { .. }
            | ProviderError::Server { .. }
            | ProviderError::StreamTruncated { .. } => Self::Transient,
            _ => Self::Permanent,
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// With this many retries.
    pub fn with_max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Whether to retry after the failed attempt number `attempt` (0 for the first), and after
    /// how long. `unit` is a number in `[0, 1)` for the jitter (random in use; fixed in tests).
    pub fn decide(
        &self,
        attempt: u32,
        failure: Failure,
        hints: RetryHints,
        unit: f64,
    ) -> Option<Duration> {
        if attempt >= self.max_retries {
            return None;
        }
        let retry = match hints.should_retry {
            Some(said) => said,
            None => match failure {
                Failure::Transport | Failure::Transient => true,
                Failure::Status(status) => matches!(status, 408 | 409 | 429 | 500..=599),
                Failure::Permanent => false,
            },
        };
        if !retry {
            return None;
        }
        Some(match hints.retry_after {
            Some(wait) => wait.min(self.max_retry_after),
            None => self.backoff(attempt, unit),
        })
    }

    /// The backoff before retry number `attempt + 1`: `min(initial · 2^attempt, max)`, minus up
    /// to `jitter` of it.
    pub fn backoff(&self, attempt: u32, unit: f64) -> Duration {
        let doubled = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(attempt.min(30)));
        let full = doubled.min(self.max_backoff);
        let cut = self.jitter.clamp(0.0, 1.0) * unit.clamp(0.0, 1.0);
        // Not `mul_f64`: a backoff near `Duration::MAX` (settable from the environment) rounds
        // up past it as a float, and `mul_f64` would panic.
        Duration::try_from_secs_f64(full.as_secs_f64() * (1.0 - cut)).unwrap_or(full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: RetryHints = RetryHints {
        retry_after: None,
        should_retry: None,
    };

    #[test]
    fn statuses_that_pass_with_time_are_retried() {
        let policy = RetryPolicy::default();
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(
                policy
                    .decide(0, Failure::Status(status), NONE, 0.0)
                    .is_some(),
                "{status}"
            );
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert_eq!(
                policy.decide(0, Failure::Status(status), NONE, 0.0),
                None,
                "{status}"
            );
        }
        assert!(policy.decide(0, Failure::Transport, NONE, 0.0).is_some());
        assert_eq!(policy.decide(0, Failure::Permanent, NONE, 0.0), None);
    }

    #[test]
    fn two_retries_by_default_then_give_up() {
        let policy = RetryPolicy::default();
        assert!(policy.decide(1, Failure::Transport, NONE, 0.0).is_some());
        assert_eq!(policy.decide(2, Failure::Transport, NONE, 0.0), None);
        assert_eq!(
            RetryPolicy::none().decide(0, Failure::Transport, NONE, 0.0),
            None
        );
    }

    #[test]
    fn backoff_doubles_to_a_cap_and_jitter_takes_at_most_a_quarter() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.backoff(0, 0.0), Duration::from_millis(500));
        assert_eq!(policy.backoff(1, 0.0), Duration::from_secs(1));
        assert_eq!(policy.backoff(4, 0.0), Duration::from_secs(8));
        assert_eq!(policy.backoff(40, 0.0), Duration::from_secs(8));
        let least = policy.backoff(0, 0.999_999);
        assert!(least >= Duration::from_millis(375) && least < Duration::from_millis(500));
    }

    #[test]
    fn the_server_hints_win() {
        let policy = RetryPolicy::default();
        let wait = RetryHints::from_headers([("Retry-After-Ms", "1500")], 0);
        assert_eq!(
            policy.decide(0, Failure::Status(429), wait, 0.5),
            Some(Duration::from_millis(1500))
        );
        let long = RetryHints::from_headers([("retry-after", "3600")], 0);
        assert_eq!(
            policy.decide(0, Failure::Status(429), long, 0.5),
            Some(Duration::from_secs(60))
        );
        let no = RetryHints::from_headers([("x-should-retry", "false")], 0);
        assert_eq!(policy.decide(0, Failure::Status(503), no, 0.0), None);
        let yes = RetryHints::from_headers([("x-should-retry", "true")], 0);
        assert!(policy.decide(0, Failure::Status(400), yes, 0.0).is_some());
    }

    #[test]
    fn a_wait_too_long_for_a_duration_is_cut_not_a_panic() {
        let policy = RetryPolicy::default();
        for (name, value) in [
            ("retry-after", "1e30"),
            ("retry-after-ms", "1e300"),
            ("retry-after", "18446744073709551616"),
            ("retry-after-ms", "1.7976931348623157e308"),
        ] {
            let hints = RetryHints::from_headers([(name, value)], 0);
            assert_eq!(hints.retry_after, Some(Duration::MAX), "{name}: {value}");
            assert_eq!(
                policy.decide(0, Failure::Status(429), hints, 0.0),
                Some(policy.max_retry_after),
                "{name}: {value}"
            );
        }
        for value in ["inf", "NaN", "-1", "1e-400"] {
            let hints = RetryHints::from_headers([("retry-after", value)], 0);
            assert!(
                hints.retry_after.is_none() || hints.retry_after == Some(Duration::ZERO),
                "{value}: {hints:?}"
            );
        }
    }

    #[test]
    fn a_backoff_as_long_as_a_duration_goes_is_not_a_panic() {
        let policy = RetryPolicy {
            initial_backoff: Duration::MAX,
            max_backoff: Duration::MAX,
            ..RetryPolicy::default()
        };
        assert_eq!(policy.backoff(0, 0.0), Duration::MAX);
        assert!(policy.backoff(3, 0.5) <= Duration::MAX);
    }

    #[test]
    fn retry_after_as_an_http_date() {
        // Sun, 06 Nov 1994 08:49:37 GMT is 784111777.
        let hints = RetryHints::from_headers(
            [("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")],
            784_111_770,
        );
        assert_eq!(hints.retry_after, Some(Duration::from_secs(7)));
        let past = RetryHints::from_headers(
            [("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")],
            784_111_999,
        );
        assert_eq!(past.retry_after, Some(Duration::ZERO));
        assert_eq!(
            RetryHints::from_headers([("retry-after", "soon")], 0).retry_after,
            None
        );
    }
}
