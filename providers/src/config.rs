//! Where each provider is and how to authenticate: from the environment, as the official SDKs
//! read it, with explicit settings taking precedence.
//!
//! | provider ref | key | base URL (default) |
//! |---|---|---|
//! | `openai:`, `openai-responses:` | `OPENAI_API_KEY` | `OPENAI_BASE_URL` (`https://api.openai.com/v1`) |
//! | `anthropic:` | `ANTHROPIC_API_KEY` | `ANTHROPIC_BASE_URL` (`https://api.anthropic.com`) |
//! | `gemini:` | `GEMINI_API_KEY`, else `GOOGLE_API_KEY` | `GEMINI_BASE_URL` (`https://generativelanguage.googleapis.com`) |
//! | `openai-compat:` | `MOTET_OPENAI_COMPAT_API_KEY` (optional) | `MOTET_OPENAI_COMPAT_BASE_URL` (required) |
//!
//! The limits of every call, from the environment too (seconds may have decimals; a value that
//! cannot be used is a [`ProviderError::Config`] naming the variable, never ignored):
//!
//! | limit | variable | default |
//! |---|---|---|
//! | [`Timeouts::connect`] | `MOTET_CONNECT_TIMEOUT` (seconds, more than 0) | 10 |
//! | [`Timeouts::first_byte`] | `MOTET_FIRST_BYTE_TIMEOUT` (seconds, more than 0) | 60 |
//! | [`Timeouts::idle`] | `MOTET_IDLE_TIMEOUT` (seconds, more than 0) | 60 |
//! | [`RetryPolicy::max_retries`] | `MOTET_MAX_RETRIES` (0 for none) | 2 |
//! | [`RetryPolicy::initial_backoff`] | `MOTET_INITIAL_BACKOFF` (seconds) | 0.5 |
//! | [`RetryPolicy::max_backoff`] | `MOTET_MAX_BACKOFF` (seconds) | 8 |
//! | [`Limits::max_response_bytes`] | `MOTET_MAX_RESPONSE_BYTES` (at least 1) | 16 MiB |

use std::fmt;
use std::time::Duration;

use crate::error::ProviderError;
use crate::retry::RetryPolicy;

/// An API key. It prints as `[redacted]` (Debug and Display), is never serialized, and is
/// read only where a request header is built.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the header that carries it and to scrub it out of errors.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The provider families motet configures separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI (`openai:` and `openai-responses:` refs).
    OpenAi,
    /// Anthropic.
    Anthropic,
    /// Gemini.
    Gemini,
    /// Any OpenAI-compatible server (`openai-compat:` refs).
    OpenAiCompat,
}

impl ProviderKind {
    /// The kind a model ref's provider part names.
    ///
    /// # Errors
    /// [`ProviderError::Config`] for an unknown provider.
    pub fn from_provider(provider: &str) -> Result<Self, ProviderError> {
        match provider {
            "openai" | "openai-responses" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            "gemini" => Ok(Self::Gemini),
            "openai-compat" => Ok(Self::OpenAiCompat),
            other => Err(ProviderError::Config {
                message: format!(
                    "unknown provider `{other}` (expected openai, openai-responses, anthropic, gemini or openai-compat)"
                ),
            }),
        }
    }

    fn key_vars(self) -> &'static [&'static str] {
        match self {
            Self::OpenAi => &["OPENAI_API_KEY"],
            Self::Anthropic => &["ANTHROPIC_API_KEY"],
            Self::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            Self::OpenAiCompat => &["MOTET_OPENAI_COMPAT_API_KEY"],
        }
    }

    fn url_var(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_BASE_URL",
            Self::Anthropic => "ANTHROPIC_BASE_URL",
            Self::Gemini => "GEMINI_BASE_URL",
            Self::OpenAiCompat => "MOTET_OPENAI_COMPAT_BASE_URL",
        }
    }

    fn default_url(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("https://api.openai.com/v1"),
            Self::Anthropic => Some("https://api.anthropic.com"),
            Self::Gemini => Some("https://generativelanguage.googleapis.com"),
            Self::OpenAiCompat => None,
        }
    }

    /// Whether requests without a key are sent (local servers usually need none).
    fn key_optional(self) -> bool {
        self == Self::OpenAiCompat
    }

    fn index(self) -> usize {
        match self {
            Self::OpenAi => 0,
            Self::Anthropic => 1,
            Self::Gemini => 2,
            Self::OpenAiCompat => 3,
        }
    }
}

/// How long to wait, per phase of a call. There is deliberately no total timeout: a long
/// healthy stream must not be cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the connection (TCP and TLS). Default 10 s.
    pub connect: Duration,
    /// From sending the request to the response headers and the first body bytes. Default 60 s
    /// (a long prompt can take a while before the first token). An error body (or a 2xx body
    /// that is not an event stream) must also arrive whole within it, after its headers.
    pub first_byte: Duration,
    /// Between two reads of a streaming body. Default 60 s.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(60),
            idle: Duration::from_secs(60),
        }
    }
}

/// How much one response may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes one response may hold: text, reasoning and tool arguments, and the names, ids
    /// and provider data (signatures, encrypted reasoning) kept with them, plus 128 per block
    /// (see [`BodyDecoder::held_bytes`](crate::BodyDecoder::held_bytes)). Past it the
    /// stream ends with [`ProviderError::ResponseTooLarge`](crate::ProviderError): a provider
    /// that streams without end must not take the process's memory with it. Default 16 MiB,
    /// a hundred times the longest answer a model writes today.
    pub max_response_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_response_bytes: 16 << 20,
        }
    }
}

/// `MOTET_CONNECT_TIMEOUT`: [`Timeouts::connect`], in seconds.
pub const CONNECT_TIMEOUT: &str = "MOTET_CONNECT_TIMEOUT";
/// `MOTET_FIRST_BYTE_TIMEOUT`: [`Timeouts::first_byte`], in seconds.
pub const FIRST_BYTE_TIMEOUT: &str = "MOTET_FIRST_BYTE_TIMEOUT";
/// `MOTET_IDLE_TIMEOUT`: [`Timeouts::idle`], in seconds.
pub const IDLE_TIMEOUT: &str = "MOTET_IDLE_TIMEOUT";
/// `MOTET_MAX_RETRIES`: [`RetryPolicy::max_retries`].
pub const MAX_RETRIES: &str = "MOTET_MAX_RETRIES";
/// `MOTET_INITIAL_BACKOFF`: [`RetryPolicy::initial_backoff`], in seconds.
pub const INITIAL_BACKOFF: &str = "MOTET_INITIAL_BACKOFF";
/// `MOTET_MAX_BACKOFF`: [`RetryPolicy::max_backoff`], in seconds.
pub const MAX_BACKOFF: &str = "MOTET_MAX_BACKOFF";
/// `MOTET_MAX_RESPONSE_BYTES`: [`Limits::max_response_bytes`].
pub const MAX_RESPONSE_BYTES: &str = "MOTET_MAX_RESPONSE_BYTES";

/// A timeout of `seconds` (decimals allowed): finite and more than zero (a zero timeout
/// would fail every call).
///
/// # Errors
/// What is wrong with the value, for a message that names where it came from.
pub fn timeout_secs(seconds: f64) -> Result<Duration, String> {
    match Duration::try_from_secs_f64(seconds) {
        Ok(wait) if !wait.is_zero() => Ok(wait),
        Ok(_) => Err("must be more than 0 seconds".to_owned()),
        Err(_) => Err("must be a number of seconds more than 0, like 30 or 2.5".to_owned()),
    }
}

/// A backoff of `seconds` (decimals allowed): finite, zero or more.
///
/// # Errors
/// What is wrong with the value, for a message that names where it came from.
pub fn backoff_secs(seconds: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| "must be a number of seconds, 0 or more, like 0.5".to_owned())
}

/// A response limit of `bytes`: at least one, and addressable on this machine.
///
/// # Errors
/// What is wrong with the value, for a message that names where it came from.
pub fn response_bytes(bytes: u64) -> Result<usize, String> {
    match usize::try_from(bytes) {
        Ok(0) => Err("must be at least 1 byte".to_owned()),
        Ok(bytes) => Ok(bytes),
        Err(_) => Err("is more bytes than this machine can address".to_owned()),
    }
}

/// A number of seconds as written in a variable.
fn seconds(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .map_err(|_| "not a number of seconds (like 30 or 2.5)".to_owned())
}

/// The value of variable `name` through `parse`, or the error naming the variable and the
/// value (limits are no secret; a long value is cut).
fn parse_var<T>(
    name: &str,
    text: &str,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, ProviderError> {
    parse(text.trim()).map_err(|why| {
        let shown: String = text.trim().chars().take(40).collect();
        ProviderError::Config {
            message: format!("{name}=`{shown}`: {why}"),
        }
    })
}

/// One provider's resolved settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderSettings {
    /// The base URL, without a trailing slash.
    pub base_url: Option<String>,
    /// The key, if any.
    pub api_key: Option<ApiKey>,
}

/// The configuration of every provider, plus timeouts and retries.
#[derive(Debug, Clone, Default)]
pub struct ProvidersConfig {
    settings: [ProviderSettings; 4],
    /// Per-phase timeouts.
    pub timeouts: Timeouts,
    /// The retry policy.
    pub retry: RetryPolicy,
    /// Size limits.
    pub limits: Limits,
}

impl ProvidersConfig {
    /// Nothing configured: every provider at its default URL, no keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the process environment (see the module tables).
    ///
    /// # Errors
    /// [`ProviderError::Config`] naming the variable when a limit's value cannot be used.
    pub fn from_env() -> Result<Self, ProviderError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Reads settings through `var` (the environment, or a map in tests) over the defaults.
    /// Empty values count as unset.
    ///
    /// # Errors
    /// [`ProviderError::Config`] naming the variable when a limit's value cannot be used.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, ProviderError> {
        Self::new().with_vars(var)
    }

    /// These settings, with whatever `var` sets over them: keys, base URLs and limits (an
    /// application's own configuration first, the environment over it). Empty values count
    /// as unset.
    ///
    /// # Errors
    /// [`ProviderError::Config`] naming the variable when a limit's value cannot be used.
    pub fn with_vars(
        mut self,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderError> {
        let read = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        for kind in [
            ProviderKind::OpenAi,
            ProviderKind::Anthropic,
            ProviderKind::Gemini,
            ProviderKind::OpenAiCompat,
        ] {
            let settings = &mut self.settings[kind.index()];
            if let Some(key) = kind.key_vars().iter().find_map(|v| read(v)) {
                settings.api_key = Some(ApiKey::new(key));
            }
            if let Some(url) = read(kind.url_var()) {
                settings.base_url = Some(url.trim_end_matches('/').to_owned());
            }
        }
        let timeouts = [
            (CONNECT_TIMEOUT, &mut self.timeouts.connect),
            (FIRST_BYTE_TIMEOUT, &mut self.timeouts.first_byte),
            (IDLE_TIMEOUT, &mut self.timeouts.idle),
        ];
        for (name, field) in timeouts {
            if let Some(text) = read(name) {
                *field = parse_var(name, &text, |t| timeout_secs(seconds(t)?))?;
            }
        }
        let backoffs = [
            (INITIAL_BACKOFF, &mut self.retry.initial_backoff),
            (MAX_BACKOFF, &mut self.retry.max_backoff),
        ];
        for (name, field) in backoffs {
            if let Some(text) = read(name) {
                *field = parse_var(name, &text, |t| backoff_secs(seconds(t)?))?;
            }
        }
        if let Some(text) = read(MAX_RETRIES) {
            self.retry.max_retries = parse_var(MAX_RETRIES, &text, |t| {
                t.parse::<u32>()
                    .map_err(|_| "not a whole number of retries (like 2, or 0 for none)".to_owned())
            })?;
        }
        if let Some(text) = read(MAX_RESPONSE_BYTES) {
            self.limits.max_response_bytes = parse_var(MAX_RESPONSE_BYTES, &text, |t| {
                let bytes = t
                    .parse::<u64>()
                    .map_err(|_| "not a whole number of bytes (like 16777216)".to_owned())?;
                response_bytes(bytes)
            })?;
        }
        Ok(self)
    }

    /// Sets a provider's key, over anything read from the environment.
    pub fn with_api_key(mut self, kind: ProviderKind, key: ApiKey) -> Self {
        self.settings[kind.index()].api_key = Some(key);
        self
    }

    /// Sets a provider's base URL, over anything read from the environment.
    pub fn with_base_url(mut self, kind: ProviderKind, url: impl Into<String>) -> Self {
        self.settings[kind.index()].base_url = Some(url.into().trim_end_matches('/').to_owned());
        self
    }

    /// Sets the timeouts.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the size limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The settings as given (no defaults applied).
    pub fn settings(&self, kind: ProviderKind) -> &ProviderSettings {
        &self.settings[kind.index()]
    }

    /// The base URL and key a call to `kind` uses.
    ///
    /// # Errors
    /// [`ProviderError::Config`] naming the variable to set when the key (or, for
    /// `openai-compat`, the URL) is missing.
    pub fn resolve(&self, kind: ProviderKind) -> Result<(String, Option<ApiKey>), ProviderError> {
        let settings = &self.settings[kind.index()];
        let url = match (&settings.base_url, kind.default_url()) {
            (Some(url), _) => url.clone(),
            (None, Some(default)) => default.to_owned(),
            (None, None) => {
                return Err(ProviderError::Config {
                    message: format!(
                        "no base URL for openai-compat models: set {} or configure it explicitly",
                        kind.url_var()
                    ),
                });
            }
        };
        if settings.api_key.is_none() && !kind.key_optional() {
            return Err(ProviderError::Config {
                message: format!(
                    "no API key: set {} or configure one explicitly",
                    kind.key_vars().join(" or ")
                ),
            });
        }
        Ok((url, settings.api_key.clone()))
    }
}
