//! Structured output in ReAct: a request with a response format (`AgentRequest::response_format`)
//! ends with an answer that matches it, or fails saying why.
//!
//! Which calls carry the format ([`StructuredCalls`]): by default every call of the request.
//! OpenAI (Chat Completions and Responses), Anthropic and Gemini 3 take tools and a response
//! format in one call and constrain only the text answer, so the model may still call tools
//! and its final answer comes constrained, in no more calls than without a format. Where a
//! model cannot do both at once — Gemini before 3 refuses the pair, and llama.cpp's server
//! compiles the schema into a grammar that leaves no room for a tool call — `Final` sends
//! the format only once the model has answered in text and that answer did not match: that
//! retry offers no tool (`tool_choice: none`) and is constrained.
//!
//! Every text answer is checked against the format ([`ResponseFormat::check`]). One that does
//! not match stays in the thread, and the model is asked again with a user entry that says
//! what is wrong, up to `ReActConfig::max_format_retries` times; then the request fails with
//! [`FailureReason::Nonconforming`] carrying the last validation message.
//!
//! A request resumed after a stop keeps its format and the retries it spent ([`Carried`]), and
//! an answer committed before the stop is checked like a fresh one.
//!
//! [`ResponseFormat::check`]: motet_directives::ResponseFormat::check

use motet_directives::{ArcStr, Directive, LlmOptions, ResponseFormat, ToolChoice};
use serde::{Deserialize, Serialize};

use super::state::{ReActState, RequestState};
use super::{FailureReason, ReAct, Step};
use crate::error::StrategyError;
use crate::thread::{NewEntry, Refs};

/// Which calls of a structured request carry its response format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredCalls {
    /// Every call, tools offered or not (OpenAI, Anthropic, Gemini 3).
    #[default]
    Every,
    /// Only the calls after a text answer that did not match, with no tool choice: for
    /// models that cannot take tools and a format together (Gemini before 3, llama.cpp).
    Final,
}

impl ReAct {
    /// The options and tool choice of the request's next call: the configured ones, with the
    /// request's response format when this call carries it.
    pub(super) fn call_options(
        &self,
        request: &RequestState,
        tool_choice: ToolChoice,
    ) -> (LlmOptions, ToolChoice) {
        let mut options = self.config.options.clone();
        let Some(format) = &request.response_format else {
            return (options, tool_choice);
        };
        match self.config.structured_calls {
            StructuredCalls::Every => {
                options.response_format = Some((**format).clone());
                (options, tool_choice)
            }
            StructuredCalls::Final if request.format_retries > 0 => {
                options.response_format = Some((**format).clone());
                (options, ToolChoice::None)
            }
            StructuredCalls::Final => (options, tool_choice),
        }
    }

    /// Ends the request with `answer` (the model's text, already in the thread) when it has
    /// the request's response format, or asks again, or fails.
    pub(super) fn answer(
        &self,
        state: &mut ReActState,
        step: &Step<'_>,
        answer: String,
    ) -> Result<Vec<Directive>, StrategyError> {
        let Some(request) = state.request.as_mut() else {
            return Ok(Vec::new());
        };
        let checked = request.response_format.as_ref().map(|f| f.check(&answer));
        let Some(Err(error)) = checked else {
            return self.complete(state, step, answer);
        };
        if request.format_retries >= self.config.max_format_retries {
            let reason = FailureReason::Nonconforming {
                message: error.to_string(),
                attempts: request.format_retries + 1,
            };
            return self.fail(state, step, reason);
        }
        request.format_retries += 1;
        let refs = Refs::request(request.request_id.clone()).with_iteration(request.iteration);
        let ask = NewEntry::user(format!(
            "Your answer does not have the required format: {error}. Answer again with only \
             the JSON, matching the schema."
        ))
        .with_refs(refs);
        state.thread.append(step.env, ask);
        self.next_iteration(state, step)
    }
}

/// A request's response format and spent retries, kept across `agent.resume`, which rebuilds
/// the request from the thread.
pub(super) struct Carried(Option<(ArcStr, Box<ResponseFormat>, u32)>);

impl From<Option<&RequestState>> for Carried {
    fn from(request: Option<&RequestState>) -> Self {
        Self(request.and_then(|r| {
            let format = r.response_format.clone()?;
            Some((r.request_id.clone(), format, r.format_retries))
        }))
    }
}

impl Carried {
    /// Puts the format back on `request` when it is the request it was taken from.
    pub(super) fn restore(&self, request: &mut RequestState) {
        if let Some((id, format, retries)) = &self.0
            && *id == request.request_id
        {
            request.response_format = Some(format.clone());
            request.format_retries = *retries;
        }
    }
}
