//! What the CLI's integration tests share.

/// Variables that would let a test reach a real provider, pick a model by itself, change its
/// limits or export its traces: cleared for every `motet` a test runs.
pub(crate) const CLEARED_VARS: [&str; 23] = [
    "MOTET_DATABASE_URL",
    "XDG_CACHE_HOME",
    "MOTET_MODEL",
    "MOTET_LOCAL_LLM_URL",
    "MOTET_OPENAI_COMPAT_BASE_URL",
    "MOTET_OPENAI_COMPAT_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
    "XDG_DATA_HOME",
    "HOME",
    "MOTET_CONNECT_TIMEOUT",
    "MOTET_FIRST_BYTE_TIMEOUT",
    "MOTET_IDLE_TIMEOUT",
    "MOTET_INITIAL_BACKOFF",
    "MOTET_MAX_BACKOFF",
    "MOTET_MAX_RETRIES",
    "MOTET_MAX_RESPONSE_BYTES",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];
