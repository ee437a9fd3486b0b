//! Errors of the directive vocabulary.

/// What can go wrong when reading directive data. Comparable, so tests can `assert_eq!` them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DirectiveError {
    /// Tool-call arguments did not parse into what the tool expects.
    #[error("invalid tool arguments: {message}")]
    InvalidArgs {
        /// The parser's description of the problem (line and column included).
        message: String,
    },
    /// A model reference was not of the form `provider:model`.
    #[error("invalid model ref `{input}`: expected `provider:model`")]
    InvalidModelRef {
        /// What was given.
        input: String,
    },
}
