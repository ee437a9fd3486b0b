//! Structured answers: ask an agent for a value of a type, get that value back
//! ([`AgentHandle::ask_structured`]).
//!
//! The type's JSON Schema (from its [`schemars::JsonSchema`] derive) goes with the request as
//! its response format ([`AskOptions::response_format`]); a strategy that can give it asks its
//! LLM calls for it (ReAct does, checks each answer and asks again when one does not match).
//! Whatever the strategy, the answer that comes back is checked here against the schema and
//! decoded into the type, so a strategy that ignores the format still cannot hand the caller
//! a value of the wrong shape.

use motet_directives::{AnswerError, ResponseFormat};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::handle::AgentHandle;
use super::spec::AskOptions;
use crate::agent::errors::AskError;

/// Why a structured ask gave no value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredError {
    /// The ask itself failed: a timeout, a stopped agent, or a failure reply (ReAct's
    /// `agent.failed` with reason `nonconforming` when no answer matched the format within
    /// its retries).
    #[error(transparent)]
    Ask(#[from] AskError),
    /// The agent answered, and the answer does not match the type's schema or does not
    /// decode into the type.
    #[error("{error}; the answer was: {answer}")]
    Nonconforming {
        /// What is wrong with it (where it breaks the schema).
        error: AnswerError,
        /// The answer's text.
        answer: String,
    },
}

impl AgentHandle {
    /// Asks `query` on the agent's default thread and returns the answer as a `T`: the request
    /// carries `T`'s JSON Schema as its response format, and the answer is checked against it
    /// and decoded.
    ///
    /// # Errors
    /// [`StructuredError::Nonconforming`] when the answer does not match `T`'s schema or does
    /// not decode into `T`; [`StructuredError::Ask`] as for [`AgentHandle::ask`].
    pub async fn ask_structured<T: JsonSchema + DeserializeOwned>(
        &self,
        query: impl Into<String>,
    ) -> Result<T, StructuredError> {
        self.ask_structured_with(query, AskOptions::default()).await
    }

    /// [`AgentHandle::ask_structured`] with `options` (thread, timeout, context policy); their
    /// `response_format` is replaced by `T`'s.
    ///
    /// # Errors
    /// As [`AgentHandle::ask_structured`].
    pub async fn ask_structured_with<T: JsonSchema + DeserializeOwned>(
        &self,
        query: impl Into<String>,
        options: AskOptions,
    ) -> Result<T, StructuredError> {
        let format = ResponseFormat::for_type::<T>();
        let options = AskOptions {
            response_format: Some(format.clone()),
            ..options
        };
        let answer = self.ask_with(query, options).await?;
        format
            .decode(&answer.text)
            .map_err(|error| StructuredError::Nonconforming {
                error,
                answer: answer.text,
            })
    }
}
