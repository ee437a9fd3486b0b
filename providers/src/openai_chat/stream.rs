//! `chat.completion.chunk` events into [`LlmEvent`]s.
//!
//! Tool calls arrive as deltas keyed by `index`: the id and name once, the arguments in
//! fragments (some servers send a whole call in one delta). Servers differ in ways that must
//! not merge two calls: a server that omits ids gets one generated (`call_<n>`), ids are made
//! unique within the stream, and a delta at an index whose call already has arguments,
//! carrying a different id — or, without ids, a new name — starts a new call. Calls complete at
//! the `finish_reason`; the usage chunk (`stream_options.include_usage`) follows it.
//!
//! Azure OpenAI opens with a chunk that carries only `prompt_filter_results` (`choices: []`,
//! `id` and `model` empty): the response's id and model are each taken from the first chunk
//! where they are not empty, so an answer never reports the model `""`.
//!
//! Reasoning comes in whichever field the server uses: `delta.reasoning_content` (DeepSeek,
//! llama.cpp, older vLLM), `delta.reasoning` (Groq, OpenRouter, Ollama, newer vLLM), or
//! `thinking` parts of a `delta.content` list (Mistral's Magistral, whose `content` is a list
//! of `text` and `thinking` parts rather than a string). OpenRouter also sends
//! `delta.reasoning_details` (`details`): signatures and encrypted reasoning the model needs
//! back. They are merged over the stream and put, as
//! [`ProviderMeta::OpenAiCompatReasoning`], on the stream's first reasoning block when the
//! finish reason comes (the block stays open until then: details keep arriving after its
//! text, a signature last); their text is the reasoning's text only when the server sent it in
//! no other field (OpenRouter repeats it in `reasoning`).
//!
//! The stream is whole once a `finish_reason` came: `[DONE]` normally follows, but a missing
//! `[DONE]` after the finish reason is tolerated (some compatible servers close without it and
//! nothing is lost); no finish reason at all is [`ProviderError::StreamTruncated`]. After the
//! finish reason, chunks that carry nothing new are accepted: OpenRouter repeats the finish
//! reason, and sends its usage on a chunk whose choice has an empty delta; content after it
//! is a protocol error. Anything after `[DONE]` is ignored (some servers send their usage
//! chunk there), and token counts are read leniently (`crate::count`).
//!
//! An error inside the stream — `{"error": {...}}` on a chunk (OpenAI, Groq, OpenRouter, with
//! or without choices beside it) or a chunk that is itself an error object (`"object":
//! "error"`, older vLLM) — ends it with the typed error: its status from its numeric `code`
//! or its `type`, so a request fault (`tool_use_failed`, `"code": 400`) is not retried.

use std::collections::{HashMap, HashSet};

use motet_directives::{ProviderMeta, StopReason, Usage};
use serde_json::Value;

use super::details::Details;
use super::wire::{Chunk, Delta, WireToolCall};

use crate::decoder::StreamDecoder;
use crate::error::ProviderError;
use crate::event::LlmEvent;
use crate::sse::SseEvent;

/// One open tool call at an `index`.
#[derive(Debug)]
struct OpenCall {
    /// The id we hand out (unique in the stream).
    id: String,
    /// The id the server sent, if any.
    wire_id: Option<String>,
    /// Whether argument text arrived.
    has_args: bool,
    /// The how-manieth call of the stream: open calls complete in the order they started.
    number: usize,
}

/// Decodes one Chat Completions response stream.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// Whether `Started` went out: at the first chunk that names a model or an id, or that
    /// carries content.
    started: bool,
    /// Whether the model and the id were reported (in `Started` or after it).
    model_known: bool,
    id_known: bool,
    /// The reasoning block open for text.
    reasoning: Option<String>,
    reasoning_count: usize,
    /// The reasoning block that carries the stream's `reasoning_details`: its completion
    /// waits for the finish reason.
    details_key: Option<String>,
    details: Details,
    /// The model as the stream first named it, for the details' meta.
    model: Option<String>,
    /// Open calls by index. A map without order: replacing the call at one index must not
    /// shift the others (a stream that did so 40,000 times took 37 s).
    calls: HashMap<u64, OpenCall>,
    used_ids: HashSet<String>,
    call_count: usize,
    refused: bool,
    finished: bool,
    done_marker: bool,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Reports the model and id of `chunk` that were not known yet. `Started` waits for a
    /// chunk that names one of them or carries content (Azure's prompt-filter chunk names
    /// neither); a model or id first named after it follows in a second `Started`, up to the
    /// finish reason (the assembler takes nothing but usage after it).
    fn started_with(&mut self, chunk: &Chunk, out: &mut Vec<LlmEvent>) {
        let named = |field: &Option<String>, known: bool| {
            field.as_ref().filter(|v| !known && !v.is_empty()).cloned()
        };
        let model = named(&chunk.model, self.model_known);
        let response_id = named(&chunk.id, self.id_known);
        let content = !chunk.choices.is_empty() || chunk.usage.is_some();
        if self.finished || (self.started && model.is_none() && response_id.is_none()) {
            return;
        }
        if !self.started && !content && model.is_none() && response_id.is_none() {
            return;
        }
        self.started = true;
        if self.model.is_none() {
            self.model.clone_from(&model);
        }
        self.model_known |= model.is_some();
        self.id_known |= response_id.is_some();
        out.push(LlmEvent::Started { model, response_id });
    }

    fn close_reasoning(&mut self, out: &mut Vec<LlmEvent>) {
        if let Some(key) = self.reasoning.take()
            && self.details_key.as_ref() != Some(&key)
        {
            out.push(LlmEvent::ReasoningComplete {
                key,
                text: None,
                meta: None,
            });
        }
    }

    /// The open reasoning block's key, opening one if none is.
    fn reasoning_key(&mut self, out: &mut Vec<LlmEvent>) -> String {
        if let Some(key) = &self.reasoning {
            return key.clone();
        }
        self.reasoning_count += 1;
        let key = format!("reasoning_{}", self.reasoning_count);
        out.push(LlmEvent::ReasoningStart { key: key.clone() });
        self.reasoning = Some(key.clone());
        key
    }

    fn reasoning_text(&mut self, text: String, out: &mut Vec<LlmEvent>) {
        if text.is_empty() {
            return;
        }
        let key = self.reasoning_key(out);
        out.push(LlmEvent::ReasoningDelta { key, delta: text });
    }

    /// Merges a delta's `reasoning_details`, and returns the reasoning text they carry. The
    /// first details of the stream go on the open reasoning block, or on one opened for them.
    fn reasoning_details(&mut self, fragments: Vec<Value>, out: &mut Vec<LlmEvent>) -> String {
        if fragments.is_empty() {
            return String::new();
        }
        if self.details_key.is_none() {
            self.details_key = Some(self.reasoning_key(out));
        }
        self.details.merge(fragments)
    }

    fn fresh_id(&mut self, wire: Option<&str>) -> String {
        self.call_count += 1;
        let mut id = match wire {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => format!("call_{}", self.call_count),
        };
        while self.used_ids.contains(&id) {
            id = format!("{id}_{}", self.call_count);
        }
        self.used_ids.insert(id.clone());
        id
    }

    fn tool_delta(
        &mut self,
        position: usize,
        delta: WireToolCall,
        out: &mut Vec<LlmEvent>,
    ) -> Result<(), ProviderError> {
        let index = delta.index.unwrap_or(position as u64);
        let function = delta.function.unwrap_or_default();
        let name = function.name.filter(|n| !n.is_empty());
        let wire_id = delta.id.filter(|id| !id.is_empty());
        if let Some(open) = self.calls.get(&index) {
            let other_id =
                matches!((&wire_id, &open.wire_id), (Some(new), Some(old)) if new != old);
            let other_name = wire_id.is_none() && name.is_some() && open.has_args;
            if (other_id || other_name)
                && let Some(done) = self.calls.remove(&index)
            {
                out.push(LlmEvent::ToolCallComplete {
                    id: done.id,
                    args: None,
                    meta: None,
                });
            }
        }
        if !self.calls.contains_key(&index) {
            let Some(name) = name else {
                return Err(ProviderError::Protocol {
                    message: format!("a tool call delta at index {index} starts without a name"),
                });
            };
            self.close_reasoning(out);
            let id = self.fresh_id(wire_id.as_deref());
            out.push(LlmEvent::ToolCallStart {
                id: id.clone(),
                name,
                meta: None,
            });
            self.calls.insert(
                index,
                OpenCall {
                    id,
                    wire_id,
                    has_args: false,
                    number: self.call_count,
                },
            );
        }
        if let Some(args) = function.arguments.filter(|a| !a.is_empty())
            && let Some(open) = self.calls.get_mut(&index)
        {
            open.has_args = true;
            out.push(LlmEvent::ToolCallDelta {
                id: open.id.clone(),
                args_delta: args,
            });
        }
        Ok(())
    }

    fn finish_reason(&mut self, reason: &str, out: &mut Vec<LlmEvent>) {
        self.close_reasoning(out);
        if let Some(key) = self.details_key.take() {
            let meta = (!self.details.is_empty()).then(|| ProviderMeta::OpenAiCompatReasoning {
                model: self.model.clone().unwrap_or_default(),
                details: self.details.take(),
            });
            out.push(LlmEvent::ReasoningComplete {
                key,
                text: None,
                meta,
            });
        }
        let mut open: Vec<OpenCall> = self.calls.drain().map(|(_, call)| call).collect();
        open.sort_unstable_by_key(|call| call.number);
        for call in open {
            out.push(LlmEvent::ToolCallComplete {
                id: call.id,
                args: None,
                meta: None,
            });
        }
        let stop_reason = match reason {
            "stop" if self.refused => StopReason::Refusal,
            "stop" => StopReason::EndTurn,
            "length" => StopReason::MaxTokens,
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "content_filter" => StopReason::ContentFilter,
            other => StopReason::Other(other.to_owned()),
        };
        self.finished = true;
        out.push(LlmEvent::Done { stop_reason });
    }
}

impl StreamDecoder for Decoder {
    fn decode(&mut self, event: &SseEvent, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done_marker = true;
            return Ok(());
        }
        if self.done_marker {
            // Some compatible servers send a usage chunk (or more) after [DONE]; the answer
            // was whole at [DONE], and nothing after it may cost it.
            tracing::debug!("a chunk after [DONE] was ignored");
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| ProviderError::Protocol {
            message: format!("a Chat Completions chunk is not valid JSON: {e}"),
        })?;
        if chunk.error.is_some() {
            return Err(super::classify_error(0, data));
        }
        if chunk.object.as_deref() == Some("error") {
            return Err(super::classify_error(0, &format!("{{\"error\":{data}}}")));
        }
        self.started_with(&chunk, out);
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let delta = choice.delta.unwrap_or_default();
            if self.finished {
                // OpenRouter repeats the finish reason and carries its usage on a choice with
                // an empty delta; only something new would be lost.
                if delta.has_content() {
                    return Err(ProviderError::Protocol {
                        message: "content arrived after the finish reason".to_owned(),
                    });
                }
                continue;
            }
            self.choice_delta(delta, out)?;
            if let Some(reason) = choice.finish_reason {
                self.finish_reason(&reason, out);
            }
        }
        if let Some(wire) = chunk.usage {
            let reported = wire
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens);
            let mut usage = Usage::from(wire);
            // llama.cpp servers older than its `prompt_tokens_details` say the cached prompt
            // tokens only in their own `timings.cache_n`.
            if reported.is_none()
                && let Some(cached) = chunk
                    .timings
                    .as_ref()
                    .and_then(|t| t.get("cache_n"))
                    .and_then(serde_json::Value::as_u64)
            {
                usage.cache_read_tokens = cached.min(usage.input_tokens);
            }
            out.push(LlmEvent::Usage { usage });
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        if self.finished {
            Ok(())
        } else {
            Err(ProviderError::StreamTruncated {
                reason: "the Chat Completions stream ended without a finish_reason".to_owned(),
            })
        }
    }

    fn held_bytes(&self) -> usize {
        self.details.held_bytes()
    }
}

impl Decoder {
    /// One choice's delta before the finish reason: reasoning, text, refusal, tool calls.
    fn choice_delta(&mut self, delta: Delta, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        let (content, thinking) = match delta.content {
            Some(content) => content.split(),
            None => (String::new(), String::new()),
        };
        let named = [delta.reasoning_content, delta.reasoning, Some(thinking)]
            .into_iter()
            .flatten()
            .find(|t| !t.is_empty());
        let detailed = self.reasoning_details(delta.reasoning_details.unwrap_or_default(), out);
        // OpenRouter repeats the details' text in `reasoning`: one of the two is the text.
        self.reasoning_text(named.unwrap_or(detailed), out);
        let refusal = delta.refusal.unwrap_or_default();
        for text in [refusal.as_str(), content.as_str()] {
            if !text.is_empty() {
                self.close_reasoning(out);
                out.push(LlmEvent::TextDelta {
                    delta: text.to_owned(),
                    meta: None,
                });
            }
        }
        if !refusal.is_empty() {
            self.refused = true;
        }
        for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
            self.tool_delta(position, call, out)?;
        }
        Ok(())
    }
}
