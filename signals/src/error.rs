//! [`SignalError`]: every way a signal, a type, a pattern or an envelope can be invalid.

/// Why a signal, signal type, pattern or CloudEvents envelope was rejected.
///
/// Errors are plain data (`Clone + PartialEq + Eq`) so callers and tests can match on them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignalError {
    /// A signal type or pattern was the empty string.
    #[error("signal type is empty")]
    EmptyType,
    /// A type or pattern had an empty segment (leading, trailing or double dot).
    #[error("`{input}` has an empty segment at position {index}")]
    EmptySegment {
        /// The rejected type or pattern.
        input: String,
        /// Zero-based index of the empty segment.
        index: usize,
    },
    /// A type or pattern segment contained a character outside the allowed set.
    #[error("`{input}` contains the invalid character {found:?}")]
    InvalidCharacter {
        /// The rejected type or pattern.
        input: String,
        /// The offending character.
        found: char,
    },
    /// A pattern segment mixed a wildcard with other characters (`a*`, `***`).
    #[error("pattern `{pattern}` has the invalid wildcard segment `{segment}`")]
    InvalidWildcard {
        /// The rejected pattern.
        pattern: String,
        /// The offending segment.
        segment: String,
    },
    /// A required CloudEvents attribute was absent (or `null`).
    #[error("missing required attribute `{0}`")]
    MissingAttribute(&'static str),
    /// A required CloudEvents attribute was present but empty.
    #[error("attribute `{0}` must not be empty")]
    EmptyAttribute(&'static str),
    /// An attribute had the wrong JSON type or an unparsable value.
    #[error("attribute `{name}` is invalid: {reason}")]
    InvalidAttribute {
        /// The attribute name.
        name: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The envelope's `specversion` was not `1.0`.
    #[error("unsupported specversion `{0}`, expected `1.0`")]
    UnsupportedSpecVersion(String),
    /// An extension attribute name was not lowercase ASCII alphanumeric.
    #[error("invalid extension attribute name `{0}`: must be non-empty lowercase a-z and 0-9")]
    InvalidExtensionName(String),
    /// An extension name collides with a context attribute or a typed motet extension.
    #[error("extension name `{0}` is reserved; use the typed setter instead")]
    ReservedExtensionName(String),
    /// The envelope carried both `data` and `data_base64`.
    #[error("envelope has both `data` and `data_base64`")]
    ConflictingData,
    /// `data_as` was called on a signal without data.
    #[error("signal has no data")]
    NoData,
    /// `data_as` was called on a signal whose data is binary.
    #[error("signal data is binary, not json")]
    BinaryData,
    /// The signal's data did not deserialize into the requested type.
    #[error("signal data is not a `{expected}`: {reason}")]
    DataMismatch {
        /// The Rust type that was asked for.
        expected: &'static str,
        /// The deserializer's message.
        reason: String,
    },
    /// A value given as data could not be serialized to JSON.
    #[error("data could not be serialized: {0}")]
    DataSerialize(String),
    /// The input was not JSON, or not a JSON object.
    #[error("invalid json envelope: {0}")]
    Json(String),
}
