//! What can go wrong when a tool is called, and when a tool set is built.

use std::fmt;
use std::time::Duration;

/// Why a tool call produced no output.
///
/// Every variant reads as a lowercase sentence the model can act on: the dispatcher turns it
/// into an error [`ToolResult`](motet_directives::ToolResult) that reaches the strategy in
/// `tool.result`. It is `Clone + PartialEq` because failures travel as data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool has this name.
    #[error("unknown tool `{name}`; {}", Available(available))]
    UnknownTool {
        /// The name the model called.
        name: String,
        /// The tools it may call instead.
        available: Vec<String>,
    },
    /// The tool exists but this agent's allowlist does not offer it.
    #[error(
        "tool `{name}` is not available to this agent; {}",
        Available(available)
    )]
    NotAllowed {
        /// The name the model called.
        name: String,
        /// The tools it may call instead.
        available: Vec<String>,
    },
    /// The arguments are not JSON, not an object, or do not have the shape the tool expects.
    #[error("invalid arguments: {message}")]
    InvalidArgs {
        /// The parser's message (with line and column when it has them).
        message: String,
    },
    /// The tool did not finish in time; its work was cancelled.
    #[error("timed out after {after:?}")]
    Timeout {
        /// The time limit that ran out.
        after: Duration,
    },
    /// The tool panicked; the panic was contained.
    #[error("the tool panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },
    /// The tool ran and reported a failure of its own.
    #[error("{message}")]
    Failed {
        /// What went wrong, in the tool's words.
        message: String,
    },
    /// The tool asks a person instead of answering: in an agent, the request pauses until
    /// someone answers, and the answer is the call's result (docs/runtime.md, "A person in the
    /// loop"). Where nobody can be asked ([`ToolSet::dispatch`](super::ToolSet::dispatch)),
    /// it is an error result.
    #[error("the tool asked a question nobody here can answer: {text}")]
    Question {
        /// The question, for the person.
        text: String,
    },
}

impl ToolError {
    /// A failure reported by the tool itself.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
        }
    }

    /// A question for a person, instead of a result.
    pub fn question(text: impl Into<String>) -> Self {
        Self::Question { text: text.into() }
    }

    /// Arguments that do not fit the tool.
    pub fn invalid_args(message: impl Into<String>) -> Self {
        Self::InvalidArgs {
            message: message.into(),
        }
    }
}

/// Renders the list of tools the model may call instead.
struct Available<'a>(&'a [String]);

impl fmt::Display for Available<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("no tools are available");
        }
        f.write_str("available tools: ")?;
        for (position, name) in self.0.iter().enumerate() {
            if position > 0 {
                f.write_str(", ")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

/// A tool set that cannot be built or restricted as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolSetError {
    /// Two tools with the same name: the model could not tell them apart.
    #[error("two tools are named `{name}`")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A name the providers reject (they accept 1 to 64 of `a-z A-Z 0-9 _ -`).
    #[error("tool name `{name}` is not 1 to 64 characters of a-z, A-Z, 0-9, `_` or `-`")]
    InvalidName {
        /// The name.
        name: String,
    },
    /// An allowlist names a tool the set does not offer (a typo would silently hide a tool).
    #[error("the allowlist names `{name}`, which this tool set does not offer")]
    NotInSet {
        /// The name.
        name: String,
    },
    /// An approval rule names a tool the set does not hold (a typo would leave a tool ungated).
    #[error("an approval rule names `{name}`, which this tool set does not hold")]
    UngatedName {
        /// The name.
        name: String,
    },
}
