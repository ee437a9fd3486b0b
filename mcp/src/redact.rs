//! Configured secrets kept out of what a server's errors say: header values (and the
//! environment variables read into them) and the environment given to a stdio server.
//!
//! A server may echo a request's headers in an HTTP error body, or print its environment in a
//! traceback on stderr; that text becomes an error result the model reads and the thread
//! stores, a connect error, a log line. [`Secrets::redact`] replaces each configured value
//! with `[redacted]` there, as the providers do with their API keys.

use std::sync::{Arc, RwLock};

/// The shortest configured value that is redacted, in bytes. A shorter value (`1`, `true`,
/// `debug`) would match ordinary text everywhere and is no secret worth the name.
pub const MIN_SECRET_LEN: usize = 8;

/// What a secret is replaced with.
const REDACTED: &str = "[redacted]";

/// The secret values of one server's configuration, longest first (so a whole header value
/// goes before a word of it). Shared by the client and its stderr reader; values are added
/// as they are resolved (a header's `${VAR}` is read at each start).
#[derive(Clone, Default)]
pub(crate) struct Secrets(Arc<RwLock<Vec<String>>>);

impl Secrets {
    /// Adds `value`, each of its words (the token of `Bearer <token>`) and its JSON-escaped
    /// form, those at least [`MIN_SECRET_LEN`] long.
    pub(crate) fn add(&self, value: &str) {
        let mut found: Vec<String> = vec![value.to_owned()];
        found.extend(value.split_whitespace().map(str::to_owned));
        if let Ok(quoted) = serde_json::to_string(value) {
            let escaped = quoted.trim_matches('"');
            if escaped != value {
                found.push(escaped.to_owned());
            }
        }
        let Ok(mut secrets) = self.0.write() else {
            return;
        };
        for value in found {
            if value.len() >= MIN_SECRET_LEN && !secrets.contains(&value) {
                secrets.push(value);
            }
        }
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        let secrets = match self.0.read() {
            Ok(secrets) => secrets,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut out = text.to_owned();
        for secret in secrets.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// `error` with every secret replaced in the texts it carries.
    pub(crate) fn redact_error(&self, error: crate::McpError) -> crate::McpError {
        error.map_texts(|text| self.redact(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_values_and_their_words_are_redacted() {
        let secrets = Secrets::default();
        secrets.add("Bearer abc123def456");
        assert_eq!(
            secrets.redact("got `Bearer abc123def456`, token abc123def456 unknown"),
            "got `[redacted]`, token [redacted] unknown"
        );
    }

    #[test]
    fn short_values_are_left_alone() {
        let secrets = Secrets::default();
        for short in ["1", "true", "debug", "1234567"] {
            secrets.add(short);
        }
        let text = "error 1: debug is true (1234567)";
        assert_eq!(secrets.redact(text), text);
        secrets.add("12345678");
        assert_eq!(secrets.redact("id 12345678"), "id [redacted]");
    }

    #[test]
    fn json_escaped_echoes_are_redacted() {
        let secrets = Secrets::default();
        secrets.add(r#"pa"ss\word-42"#);
        assert_eq!(
            secrets.redact(r#"{"key":"pa\"ss\\word-42"}"#),
            r#"{"key":"[redacted]"}"#
        );
    }
}
