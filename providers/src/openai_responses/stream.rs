//! Responses API streaming events into [`LlmEvent`]s.
//!
//! The stream describes output *items* — `reasoning`, `function_call`, `message` — each opened by
//! `response.output_item.added`, filled by deltas that name the item by `item_id`, and closed by
//! `response.output_item.done`. Everything is keyed by item id, never by `output_index` or
//! `sequence_number`, which llama.cpp does not send.
//!
//! Mapping:
//! - reasoning item → `ReasoningStart { key: item id }`, summary deltas (several summary parts
//!   joined by a blank line), then `ReasoningComplete` with `ProviderMeta::OpenAi { id,
//!   encrypted_content }` taken from `output_item.done` — the `encrypted_content` announced by
//!   `output_item.added` is provisional and changes by the end.
//! - function_call item → `ToolCallStart { id: call_id }` (the id a result must echo), argument
//!   deltas, and `ToolCallComplete` with the full `arguments` text on
//!   `function_call_arguments.done`, or on `output_item.done` when the server (llama.cpp) sends no
//!   `arguments.done`.
//! - message item → `TextDelta`s of its `output_text`. Refusal content is text too (the model's
//!   words to the user) and turns the stop reason into [`StopReason::Refusal`]. A message with a
//!   `phase` (`commentary` / `final_answer`, read from `output_item.added`, or from `.done` when
//!   no text came before it) puts `ProviderMeta::OpenAiMessage { phase }` on its first delta,
//!   which starts a text block of its own: two phased messages stay two blocks.
//! - any other item (`web_search_call`, `mcp_call`, `code_interpreter_call`, …) → one
//!   `LlmEvent::Opaque` holding the item's JSON text exactly as `output_item.done` delivered it,
//!   in its place among the other blocks; the request replays it verbatim.
//! - `response.completed` → usage and `Done` (`ToolUse` when a function call was emitted);
//!   `response.incomplete` → `MaxTokens` (`max_output_tokens`), `ContentFilter`
//!   (`content_filter`) or the reason verbatim; `error` and `response.failed` → the typed error.
//! - The stream has no `[DONE]`: ending before `response.completed`/`incomplete` is a truncation.

use std::collections::{HashMap, HashSet};

use motet_directives::{ProviderMeta, StopReason, Usage};

use crate::decoder::StreamDecoder;
use crate::error::ProviderError;
use crate::event::{BLOCK_BYTES, LlmEvent};
use crate::sse::SseEvent;

use super::PROVIDER;
use super::error::classify_api_error;
use super::wire::{
    ApiError, ContentPart, ErrorEvent, ItemDone, OutputItem, ResponseObject, StreamEvent,
};

/// Separates the parts of a multi-part reasoning summary.
const SUMMARY_PART_SEPARATOR: &str = "\n\n";

/// Decodes one Responses API stream.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    started: bool,
    ended: bool,
    /// Items in the order they were announced.
    items: Vec<Item>,
    /// Each item's position in `items`, by item id.
    positions: HashMap<String, usize>,
    /// The call ids handed out in `ToolCallStart`s.
    call_ids: HashSet<String>,
    /// What `items` holds ([`StreamDecoder::held_bytes`]).
    held: usize,
    saw_function_call: bool,
    saw_refusal: bool,
    /// Whether the last block emitted is text and, if one message alone wrote it, that
    /// message's position: a phase named late can only land on a block its message owns.
    last_text: Option<Option<usize>>,
}

#[derive(Debug)]
struct Item {
    /// The item id the deltas refer to.
    id: String,
    kind: ItemKind,
}

#[derive(Debug)]
enum ItemKind {
    Reasoning {
        /// The summary part being streamed.
        part: Option<u64>,
        /// Whether any reasoning text was emitted (a separator is only needed after text).
        has_text: bool,
        completed: bool,
    },
    FunctionCall {
        /// The id announced in `ToolCallStart` (the call id, made unique in the stream).
        call_id: String,
        name: String,
        completed: bool,
    },
    Message {
        /// Whether text of this message was emitted already (by deltas).
        has_text: bool,
        /// The message's `phase`, put on its first text delta.
        phase: Option<String>,
        /// Whether a non-empty delta (the one that carries the phase) went out.
        started: bool,
    },
}

impl Decoder {
    /// A decoder for a new stream.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.positions.get(id).copied()
    }

    /// The reasoning item `id`, announced now if the server skipped `output_item.added`.
    fn reasoning(&mut self, id: &str, out: &mut Vec<LlmEvent>) -> usize {
        if let Some(at) = self.position(id) {
            return at;
        }
        out.push(LlmEvent::ReasoningStart { key: id.to_owned() });
        self.last_text = None;
        self.push_item(Item {
            id: id.to_owned(),
            kind: ItemKind::Reasoning {
                part: None,
                has_text: false,
                completed: false,
            },
        })
    }

    /// Records a new item; its position.
    fn push_item(&mut self, item: Item) -> usize {
        // The ids are kept twice: in the item and in `positions` or `call_ids`.
        self.held += BLOCK_BYTES
            + 2 * item.id.len()
            + match &item.kind {
                ItemKind::FunctionCall { call_id, name, .. } => 2 * call_id.len() + name.len(),
                ItemKind::Reasoning { .. } | ItemKind::Message { .. } => 0,
            };
        let at = self.items.len();
        self.positions.insert(item.id.clone(), at);
        self.items.push(item);
        at
    }

    /// The message item `id`, registered now if the server skipped `output_item.added`.
    fn message(&mut self, id: &str) -> usize {
        if let Some(at) = self.position(id) {
            return at;
        }
        self.push_item(Item {
            id: id.to_owned(),
            kind: ItemKind::Message {
                has_text: false,
                phase: None,
                started: false,
            },
        })
    }

    /// Records the phase of message `at`. A phase named after the message's text started (on
    /// `output_item.done`) is put on its block by a `TextMeta`, when that block is the last one
    /// and holds this message's text alone.
    fn set_phase(&mut self, at: usize, phase: Option<String>, out: &mut Vec<LlmEvent>) {
        let Some(new) = phase else {
            return;
        };
        let owns_last_block = self.last_text == Some(Some(at));
        if let Some(Item {
            id,
            kind: ItemKind::Message { phase, started, .. },
        }) = self.items.get_mut(at)
        {
            if phase.is_some() {
                return;
            }
            if !*started {
                self.held += new.len();
                *phase = Some(new);
            } else if owns_last_block {
                self.held += new.len();
                *phase = Some(new.clone());
                out.push(LlmEvent::TextMeta {
                    meta: ProviderMeta::OpenAiMessage { phase: new },
                });
            } else {
                tracing::debug!("message {id} named its phase {new} after its text: not kept");
            }
        }
    }

    /// The function call item `item_id`, started now if it was not announced yet.
    fn function_call(
        &mut self,
        item_id: &str,
        call_id: &str,
        name: &str,
        out: &mut Vec<LlmEvent>,
    ) -> usize {
        if let Some(at) = self.position(item_id) {
            return at;
        }
        let call_id = self.unique_call_id(call_id);
        self.last_text = None;
        out.push(LlmEvent::ToolCallStart {
            id: call_id.clone(),
            name: name.to_owned(),
            meta: None,
        });
        self.push_item(Item {
            id: item_id.to_owned(),
            kind: ItemKind::FunctionCall {
                call_id,
                name: name.to_owned(),
                completed: false,
            },
        })
    }

    /// Two calls must never share an id, or their results could not be told apart. A repeated
    /// id gets the suffix `_{n}`, `n` the number of calls so far plus one (so the first repeat
    /// in a stream of one call is `_2`): counting up from `_2` on every repeat made a stream
    /// repeating one id cost the square of its calls.
    fn unique_call_id(&mut self, call_id: &str) -> String {
        let mut candidate = call_id.to_owned();
        let mut n = self.call_ids.len() + 1;
        while self.call_ids.contains(&candidate) {
            candidate = format!("{call_id}_{n}");
            n += 1;
        }
        self.call_ids.insert(candidate.clone());
        candidate
    }

    fn reasoning_text(
        &mut self,
        at: usize,
        part: Option<u64>,
        delta: &str,
        out: &mut Vec<LlmEvent>,
    ) {
        let Some(item) = self.items.get_mut(at) else {
            return;
        };
        let ItemKind::Reasoning {
            part: current,
            has_text,
            completed,
        } = &mut item.kind
        else {
            return;
        };
        if *completed {
            return;
        }
        if let Some(part) = part
            && *current != Some(part)
        {
            if current.is_some() && *has_text {
                out.push(LlmEvent::ReasoningDelta {
                    key: item.id.clone(),
                    delta: SUMMARY_PART_SEPARATOR.to_owned(),
                });
            }
            *current = Some(part);
        }
        if !delta.is_empty() {
            *has_text = true;
            out.push(LlmEvent::ReasoningDelta {
                key: item.id.clone(),
                delta: delta.to_owned(),
            });
        }
    }

    fn complete_reasoning(
        &mut self,
        at: usize,
        text: Option<String>,
        encrypted_content: Option<String>,
        out: &mut Vec<LlmEvent>,
    ) {
        let Some(item) = self.items.get_mut(at) else {
            return;
        };
        if let ItemKind::Reasoning { completed, .. } = &mut item.kind {
            if *completed {
                return;
            }
            *completed = true;
            out.push(LlmEvent::ReasoningComplete {
                key: item.id.clone(),
                text,
                meta: Some(ProviderMeta::OpenAi {
                    id: item.id.clone(),
                    encrypted_content,
                }),
            });
        }
    }

    fn complete_call(&mut self, at: usize, args: Option<String>, out: &mut Vec<LlmEvent>) {
        let Some(item) = self.items.get_mut(at) else {
            return;
        };
        if let ItemKind::FunctionCall {
            call_id, completed, ..
        } = &mut item.kind
        {
            if *completed {
                return;
            }
            *completed = true;
            self.saw_function_call = true;
            out.push(LlmEvent::ToolCallComplete {
                id: call_id.clone(),
                args,
                meta: None,
            });
        }
    }

    fn text(&mut self, item_id: &str, delta: &str, out: &mut Vec<LlmEvent>) {
        let at = self.message(item_id);
        let mut meta = None;
        let mut first = false;
        if let Some(Item {
            kind:
                ItemKind::Message {
                    has_text,
                    phase,
                    started,
                },
            ..
        }) = self.items.get_mut(at)
        {
            *has_text = true;
            if !delta.is_empty() && !*started {
                *started = true;
                first = true;
                meta = phase
                    .clone()
                    .map(|phase| ProviderMeta::OpenAiMessage { phase });
            }
        }
        if !delta.is_empty() {
            if first {
                self.last_text = Some(match (&meta, self.last_text) {
                    // Merged into the text before it.
                    (None, Some(_)) => None,
                    _ => Some(at),
                });
            }
            out.push(LlmEvent::TextDelta {
                delta: delta.to_owned(),
                meta,
            });
        }
    }

    /// Text that only arrives whole (`output_text.done`, `refusal.done`, `output_item.done`) is
    /// emitted when no delta of its message came before.
    fn text_if_not_streamed(&mut self, item_id: &str, text: &str, out: &mut Vec<LlmEvent>) {
        let at = self.message(item_id);
        let streamed = matches!(
            self.items.get(at),
            Some(Item {
                kind: ItemKind::Message { has_text: true, .. },
                ..
            })
        );
        if !streamed && !text.is_empty() {
            self.text(item_id, text, out);
        }
    }

    fn item_added(&mut self, item: OutputItem, out: &mut Vec<LlmEvent>) {
        match item {
            OutputItem::Reasoning { id, .. } => {
                self.reasoning(&id, out);
            }
            OutputItem::FunctionCall {
                id,
                call_id,
                name,
                arguments,
            } => {
                let item_id = id.unwrap_or_else(|| call_id.clone());
                let at = self.function_call(&item_id, &call_id, &name, out);
                if let (
                    Some(arguments),
                    Some(Item {
                        kind: ItemKind::FunctionCall { call_id, .. },
                        ..
                    }),
                ) = (arguments.filter(|a| !a.is_empty()), self.items.get(at))
                {
                    out.push(LlmEvent::ToolCallDelta {
                        id: call_id.clone(),
                        args_delta: arguments,
                    });
                }
            }
            OutputItem::Message { id, phase, .. } => {
                let at = self.message(&id);
                self.set_phase(at, phase, out);
            }
            // Kept whole when it is done.
            OutputItem::Other => {}
        }
    }

    fn item_done(&mut self, item: OutputItem, out: &mut Vec<LlmEvent>) {
        match item {
            OutputItem::Reasoning {
                id,
                summary,
                encrypted_content,
            } => {
                let at = self.reasoning(&id, out);
                let parts: Vec<&str> = summary
                    .iter()
                    .map(|part| part.text.as_str())
                    .filter(|text| !text.is_empty())
                    .collect();
                // The finished item holds the whole summary; it replaces the deltas. Without a
                // summary (raw reasoning text, or none at all) the deltas stand.
                let text = (!parts.is_empty()).then(|| parts.join(SUMMARY_PART_SEPARATOR));
                self.complete_reasoning(at, text, encrypted_content, out);
            }
            OutputItem::FunctionCall {
                id,
                call_id,
                name,
                arguments,
            } => {
                let item_id = id.unwrap_or_else(|| call_id.clone());
                let at = self.function_call(&item_id, &call_id, &name, out);
                self.complete_call(at, arguments, out);
            }
            OutputItem::Message { id, content, phase } => {
                let at = self.message(&id);
                self.set_phase(at, phase, out);
                for part in content {
                    match part {
                        ContentPart::OutputText { text } => {
                            self.text_if_not_streamed(&id, &text, out);
                        }
                        ContentPart::Refusal { refusal } => {
                            self.saw_refusal = true;
                            self.text_if_not_streamed(&id, &refusal, out);
                        }
                        ContentPart::Other => {}
                    }
                }
            }
            // Read again whole by `decode`, which has the event's text.
            OutputItem::Other => {}
        }
    }

    /// An item motet does not model, kept as the exact JSON text of `output_item.done`'s `item`.
    fn opaque(&mut self, data: &str, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        let done: ItemDone<'_> =
            serde_json::from_str(data).map_err(|e| ProviderError::Protocol {
                message: format!("unreadable Responses output item: {e}"),
            })?;
        self.last_text = None;
        out.push(LlmEvent::Opaque {
            provider: PROVIDER.to_owned(),
            item: done.item.get().to_owned(),
        });
        Ok(())
    }

    /// Closes reasoning items the server never finished, so their blocks are not left open.
    fn close_reasoning(&mut self, out: &mut Vec<LlmEvent>) {
        for at in 0..self.items.len() {
            self.complete_reasoning(at, None, None, out);
        }
    }

    /// The first function call that started but never completed, if any.
    fn open_call(&self) -> Option<&str> {
        self.items.iter().find_map(|item| match &item.kind {
            ItemKind::FunctionCall {
                name,
                completed: false,
                ..
            } => Some(name.as_str()),
            _ => None,
        })
    }

    fn usage(response: &ResponseObject, out: &mut Vec<LlmEvent>) {
        if let Some(usage) = &response.usage {
            out.push(LlmEvent::Usage {
                usage: Usage {
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cache_read_tokens: usage
                        .input_tokens_details
                        .as_ref()
                        .map_or(0, |d| d.cached_tokens),
                    cache_write_tokens: 0,
                    reasoning_tokens: usage
                        .output_tokens_details
                        .as_ref()
                        .map_or(0, |d| d.reasoning_tokens),
                },
            });
        }
    }

    fn completed(&mut self, response: &ResponseObject, out: &mut Vec<LlmEvent>) {
        self.close_reasoning(out);
        // A completed response has finished every call; one the server never closed explicitly
        // ends with the arguments its deltas carried.
        for at in 0..self.items.len() {
            self.complete_call(at, None, out);
        }
        Self::usage(response, out);
        let stop_reason = if self.saw_function_call {
            StopReason::ToolUse
        } else if self.saw_refusal {
            StopReason::Refusal
        } else {
            StopReason::EndTurn
        };
        out.push(LlmEvent::Done { stop_reason });
    }

    fn incomplete(
        &mut self,
        response: &ResponseObject,
        out: &mut Vec<LlmEvent>,
    ) -> Result<(), ProviderError> {
        self.close_reasoning(out);
        Self::usage(response, out);
        let reason = response
            .incomplete_details
            .as_ref()
            .and_then(|details| details.reason.clone())
            .unwrap_or_else(|| "incomplete".to_owned());
        let stop_reason = match reason.as_str() {
            "max_output_tokens" => {
                if let Some(tool) = self.open_call() {
                    return Err(ProviderError::MaxTokensInToolCall {
                        tool: tool.to_owned(),
                    });
                }
                StopReason::MaxTokens
            }
            "content_filter" => StopReason::ContentFilter,
            _ => StopReason::Other(reason),
        };
        out.push(LlmEvent::Done { stop_reason });
        Ok(())
    }
}

/// The error object of an `error` event, whether nested or at the top level.
fn error_of(event: ErrorEvent) -> ApiError {
    let nested = event.error.unwrap_or_default();
    ApiError {
        kind: nested.kind,
        code: nested.code.or(event.code),
        message: nested.message.or(event.message),
    }
}

impl StreamDecoder for Decoder {
    fn decode(&mut self, event: &SseEvent, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if self.ended || data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let parsed: StreamEvent =
            serde_json::from_str(data).map_err(|e| ProviderError::Protocol {
                message: format!("unreadable Responses event `{}`: {e}", event.event),
            })?;
        match parsed {
            StreamEvent::Created { response } => {
                if !self.started {
                    self.started = true;
                    out.push(LlmEvent::Started {
                        model: response.model,
                        response_id: response.id,
                    });
                }
            }
            StreamEvent::OutputItemAdded { item } => self.item_added(item, out),
            StreamEvent::OutputItemDone {
                item: OutputItem::Other,
            } => self.opaque(data, out)?,
            StreamEvent::OutputItemDone { item } => self.item_done(item, out),
            StreamEvent::ReasoningSummaryPartAdded {
                item_id,
                summary_index,
            } => {
                let at = self.reasoning(&item_id, out);
                self.reasoning_text(at, Some(summary_index), "", out);
            }
            StreamEvent::ReasoningSummaryTextDelta {
                item_id,
                summary_index,
                delta,
            } => {
                let at = self.reasoning(&item_id, out);
                self.reasoning_text(at, Some(summary_index), &delta, out);
            }
            StreamEvent::ReasoningTextDelta { item_id, delta } => {
                let at = self.reasoning(&item_id, out);
                self.reasoning_text(at, None, &delta, out);
            }
            StreamEvent::OutputTextDelta { item_id, delta } => self.text(&item_id, &delta, out),
            StreamEvent::OutputTextDone { item_id, text } => {
                self.text_if_not_streamed(&item_id, &text, out);
            }
            StreamEvent::RefusalDelta { item_id, delta } => {
                self.saw_refusal = true;
                self.text(&item_id, &delta, out);
            }
            StreamEvent::RefusalDone { item_id, refusal } => {
                self.saw_refusal = true;
                self.text_if_not_streamed(&item_id, &refusal, out);
            }
            StreamEvent::FunctionCallArgumentsDelta { item_id, delta } => {
                let Some(Item {
                    kind:
                        ItemKind::FunctionCall {
                            call_id, completed, ..
                        },
                    ..
                }) = self.position(&item_id).and_then(|at| self.items.get(at))
                else {
                    return Err(ProviderError::Protocol {
                        message: format!("arguments for unknown function call item `{item_id}`"),
                    });
                };
                if !completed && !delta.is_empty() {
                    out.push(LlmEvent::ToolCallDelta {
                        id: call_id.clone(),
                        args_delta: delta,
                    });
                }
            }
            StreamEvent::FunctionCallArgumentsDone { item_id, arguments } => {
                let Some(at) = self.position(&item_id) else {
                    return Err(ProviderError::Protocol {
                        message: format!("arguments for unknown function call item `{item_id}`"),
                    });
                };
                self.complete_call(at, Some(arguments), out);
            }
            StreamEvent::Completed { response } => {
                self.ended = true;
                self.completed(&response, out);
            }
            StreamEvent::Incomplete { response } => {
                self.ended = true;
                self.incomplete(&response, out)?;
            }
            StreamEvent::Failed { response } => {
                self.ended = true;
                let error = response.error.unwrap_or_else(|| ApiError {
                    message: Some("the response failed without an error object".to_owned()),
                    ..ApiError::default()
                });
                return Err(classify_api_error(0, &error));
            }
            StreamEvent::Error(error) => {
                self.ended = true;
                return Err(classify_api_error(0, &error_of(error)));
            }
            StreamEvent::Other => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        if self.ended {
            return Ok(());
        }
        Err(ProviderError::StreamTruncated {
            reason: "the Responses stream ended before response.completed".to_owned(),
        })
    }

    fn held_bytes(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    /// Blank-line framing only: enough for these whole, LF-separated recordings. The real SSE
    /// decoder and re-chunking are exercised by the conformance tests in `tests/`.
    fn sse_events(text: &str) -> Vec<SseEvent> {
        text.split("\n\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| {
                let mut event = SseEvent::default();
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        event.event = name.trim().to_owned();
                    } else if let Some(payload) = line.strip_prefix("data:") {
                        data.push(payload.strip_prefix(' ').unwrap_or(payload));
                    }
                }
                event.data = data.join("\n");
                event
            })
            .collect()
    }

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
    }

    fn decode_all(text: &str) -> (Vec<LlmEvent>, Result<(), ProviderError>) {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for event in sse_events(text) {
            if let Err(e) = decoder.decode(&event, &mut out) {
                return (out, Err(e));
            }
        }
        let end = decoder.finish(&mut out);
        (out, end)
    }

    /// The payloads of one event type in a recording, for expectations read from the bytes.
    fn payloads(text: &str, kind: &str) -> Vec<Value> {
        sse_events(text)
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
            .filter(|v| v["type"] == kind)
            .collect()
    }

    fn done_reason(events: &[LlmEvent]) -> Option<&StopReason> {
        events.iter().find_map(|e| match e {
            LlmEvent::Done { stop_reason } => Some(stop_reason),
            _ => None,
        })
    }

    fn reasoning_deltas(events: &[LlmEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ReasoningDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect()
    }

    fn text_deltas(events: &[LlmEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn reasoning_then_function_call_keeps_the_final_encrypted_content() {
        let text = fixture("openai-responses/reasoning-summary-encrypted-function-call-gpt-5.sse");
        let (events, end) = decode_all(&text);
        end.unwrap();

        let added = &payloads(&text, "response.output_item.added")[0]["item"];
        let done = &payloads(&text, "response.output_item.done")[0]["item"];
        let rs_id = done["id"].as_str().unwrap();
        let final_enc = done["encrypted_content"].as_str().unwrap();
        assert_ne!(added["encrypted_content"], done["encrypted_content"]);
        let summary = done["summary"][0]["text"].as_str().unwrap();

        assert!(matches!(
            &events[0],
            LlmEvent::Started { model: Some(m), response_id: Some(id) }
                if m == "gpt-5-2025-08-07" && id.starts_with("resp_017e85")
        ));
        assert_eq!(
            events[1],
            LlmEvent::ReasoningStart {
                key: rs_id.to_owned()
            }
        );
        assert_eq!(reasoning_deltas(&events), summary);
        let complete = events
            .iter()
            .find(|e| matches!(e, LlmEvent::ReasoningComplete { .. }))
            .unwrap();
        assert_eq!(
            complete,
            &LlmEvent::ReasoningComplete {
                key: rs_id.to_owned(),
                text: Some(summary.to_owned()),
                meta: Some(ProviderMeta::OpenAi {
                    id: rs_id.to_owned(),
                    encrypted_content: Some(final_enc.to_owned()),
                }),
            }
        );

        let starts: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, LlmEvent::ToolCallStart { .. }))
            .collect();
        assert_eq!(
            starts,
            [&LlmEvent::ToolCallStart {
                id: "call_zgUaIBRPTwxxOusyyKw5NVMH".to_owned(),
                name: "weather".to_owned(),
                meta: None,
            }]
        );
        let args: String = events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ToolCallDelta { args_delta, .. } => Some(args_delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args, r#"{"location":"Florence, Italy"}"#);
        assert!(events.contains(&LlmEvent::ToolCallComplete {
            id: "call_zgUaIBRPTwxxOusyyKw5NVMH".to_owned(),
            args: Some(r#"{"location":"Florence, Italy"}"#.to_owned()),
            meta: None,
        }));
        assert!(events.contains(&LlmEvent::Usage {
            usage: Usage {
                input_tokens: 63,
                output_tokens: 121,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                reasoning_tokens: 64,
            }
        }));
        assert_eq!(
            events.last(),
            Some(&LlmEvent::Done {
                stop_reason: StopReason::ToolUse
            })
        );
    }

    #[test]
    fn empty_reasoning_item_and_two_calls_in_emission_order() {
        let text = fixture("openai-responses/parallel-function-calls-gpt-5.sse");
        let (events, end) = decode_all(&text);
        end.unwrap();
        let rs = "rs_0a7836d50cf181dd016a3c122e5e1881a1b60647835c2c9ab0";
        assert!(events.contains(&LlmEvent::ReasoningComplete {
            key: rs.to_owned(),
            text: None,
            meta: Some(ProviderMeta::OpenAi {
                id: rs.to_owned(),
                encrypted_content: None
            }),
        }));
        let calls: Vec<(&str, &str)> = events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ToolCallStart { id, name, .. } => Some((id.as_str(), name.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            [
                ("call_inViAUr9eV0GDtyOywkCxp59", "add"),
                ("call_Op66UUnzuOoKmgGeFJQJFTUY", "multiply")
            ]
        );
        let completes = events
            .iter()
            .filter(|e| matches!(e, LlmEvent::ToolCallComplete { .. }))
            .count();
        assert_eq!(
            completes, 2,
            "function_call_arguments.done and output_item.done close once"
        );
        assert_eq!(done_reason(&events), Some(&StopReason::ToolUse));
    }

    #[test]
    fn plain_text_ends_the_turn() {
        let text = fixture("openai-responses/text-gpt-4o-mini.sse");
        let (events, end) = decode_all(&text);
        end.unwrap();
        assert_eq!(text_deltas(&events), "Hi in Portuguese is \"Oi!\"");
        assert_eq!(done_reason(&events), Some(&StopReason::EndTurn));
    }

    #[test]
    fn mid_stream_quota_error_is_typed_and_keeps_the_message() {
        let text =
            fixture("openai-responses/error-insufficient-quota-gpt-5-nano.RECONSTRUCTED.sse");
        let (_, end) = decode_all(&text);
        match end {
            Err(ProviderError::Authentication { status: 0, message }) => {
                assert!(
                    message.starts_with("You exceeded your current quota"),
                    "{message}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn llama_cpp_calls_complete_on_output_item_done() {
        let text = fixture("llama-cpp/responses_parallel_stream.sse");
        let (events, end) = decode_all(&text);
        end.unwrap();
        assert!(matches!(
            &events[0],
            LlmEvent::Started {
                model: None,
                response_id: Some(_)
            }
        ));
        let completes: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ToolCallComplete { id, args, .. } => Some((id.clone(), args.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            completes,
            [
                (
                    "call_8KUff2srhaBdVioZm0zcW8dryNiBsk8C".to_owned(),
                    Some("{\n    \"city\": \"Paris\"\n}".to_owned())
                ),
                (
                    "call_uiae3kfijevIKmbKZk8dJsc9ffggaHTy".to_owned(),
                    Some("{\n    \"timezone\": \"UTC\"\n}".to_owned())
                ),
            ]
        );
        assert_eq!(done_reason(&events), Some(&StopReason::ToolUse));
    }

    fn hand(events: &[&str]) -> String {
        events
            .iter()
            .map(|data| {
                let v: Value = serde_json::from_str(data).unwrap();
                format!("event: {}\ndata: {data}\n\n", v["type"].as_str().unwrap())
            })
            .collect()
    }

    #[test]
    fn incomplete_for_max_output_tokens_is_max_tokens() {
        let text = hand(&[
            r#"{"type":"response.created","response":{"id":"resp_1","model":"gpt-5.2","status":"in_progress"}}"#,
            r#"{"type":"response.output_item.added","item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}"#,
            r#"{"type":"response.output_text.delta","item_id":"msg_1","delta":"Once upon"}"#,
            r#"{"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":10,"output_tokens":16,"output_tokens_details":{"reasoning_tokens":12}}}}"#,
        ]);
        let (events, end) = decode_all(&text);
        end.unwrap();
        assert_eq!(text_deltas(&events), "Once upon");
        assert_eq!(done_reason(&events), Some(&StopReason::MaxTokens));
        assert!(events.contains(&LlmEvent::Usage {
            usage: Usage {
                input_tokens: 10,
                output_tokens: 16,
                reasoning_tokens: 12,
                ..Usage::default()
            }
        }));
    }

    #[test]
    fn incomplete_in_the_middle_of_a_call_is_an_error() {
        let text = hand(&[
            r#"{"type":"response.output_item.added","item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"search","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"q\":\"lo"}"#,
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#,
        ]);
        let (_, end) = decode_all(&text);
        assert_eq!(
            end,
            Err(ProviderError::MaxTokensInToolCall {
                tool: "search".to_owned()
            })
        );
    }

    #[test]
    fn incomplete_reasons_map_or_stay_verbatim() {
        for (reason, expected) in [
            ("content_filter", StopReason::ContentFilter),
            (
                "something_new",
                StopReason::Other("something_new".to_owned()),
            ),
        ] {
            let text = hand(&[&format!(
                r#"{{"type":"response.incomplete","response":{{"incomplete_details":{{"reason":"{reason}"}}}}}}"#
            )]);
            let (events, end) = decode_all(&text);
            end.unwrap();
            assert_eq!(done_reason(&events), Some(&expected));
        }
    }

    #[test]
    fn refusal_is_text_and_a_refusal_stop() {
        let text = hand(&[
            r#"{"type":"response.output_item.added","item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}"#,
            r#"{"type":"response.content_part.added","item_id":"msg_1","part":{"type":"refusal","refusal":""}}"#,
            r#"{"type":"response.refusal.delta","item_id":"msg_1","delta":"I can't help "}"#,
            r#"{"type":"response.refusal.delta","item_id":"msg_1","delta":"with that."}"#,
            r#"{"type":"response.refusal.done","item_id":"msg_1","refusal":"I can't help with that."}"#,
            r#"{"type":"response.output_item.done","item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}}"#,
            r#"{"type":"response.completed","response":{"status":"completed"}}"#,
        ]);
        let (events, end) = decode_all(&text);
        end.unwrap();
        assert_eq!(text_deltas(&events), "I can't help with that.");
        assert_eq!(done_reason(&events), Some(&StopReason::Refusal));
    }

    #[test]
    fn summary_parts_are_joined_by_a_blank_line() {
        let text = hand(&[
            r#"{"type":"response.output_item.added","item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
            r#"{"type":"response.reasoning_summary_part.added","item_id":"rs_1","summary_index":0,"part":{"type":"summary_text","text":""}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","summary_index":0,"delta":"**One**"}"#,
            r#"{"type":"response.reasoning_summary_part.added","item_id":"rs_1","summary_index":1,"part":{"type":"summary_text","text":""}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","summary_index":1,"delta":"**Two**"}"#,
            r#"{"type":"response.output_item.done","item":{"id":"rs_1","type":"reasoning","encrypted_content":"enc","summary":[{"type":"summary_text","text":"**One**"},{"type":"summary_text","text":"**Two**"}]}}"#,
            r#"{"type":"response.completed","response":{}}"#,
        ]);
        let (events, end) = decode_all(&text);
        end.unwrap();
        assert_eq!(reasoning_deltas(&events), "**One**\n\n**Two**");
        assert!(events.contains(&LlmEvent::ReasoningComplete {
            key: "rs_1".to_owned(),
            text: Some("**One**\n\n**Two**".to_owned()),
            meta: Some(ProviderMeta::OpenAi {
                id: "rs_1".to_owned(),
                encrypted_content: Some("enc".to_owned())
            }),
        }));
    }

    #[test]
    fn failures_truncation_and_garbage_are_errors_not_panics() {
        let failed = hand(&[
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."}}}"#,
        ]);
        assert!(matches!(
            decode_all(&failed).1,
            Err(ProviderError::Server { status: 0, .. })
        ));

        let top_level_error = hand(&[
            r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#,
        ]);
        assert!(matches!(
            decode_all(&top_level_error).1,
            Err(ProviderError::RateLimited { .. })
        ));

        let truncated =
            hand(&[r#"{"type":"response.output_text.delta","item_id":"msg_1","delta":"Hel"}"#]);
        assert!(matches!(
            decode_all(&truncated).1,
            Err(ProviderError::StreamTruncated { .. })
        ));

        let orphan = hand(&[
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_x","delta":"{"}"#,
        ]);
        assert!(matches!(
            decode_all(&orphan).1,
            Err(ProviderError::Protocol { .. })
        ));

        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        let garbage = SseEvent {
            event: "response.output_text.delta".into(),
            data: "{\"type\":".into(),
            id: None,
        };
        assert!(matches!(
            decoder.decode(&garbage, &mut out),
            Err(ProviderError::Protocol { .. })
        ));
        let unknown = SseEvent {
            data: r#"{"type":"response.web_search_call.searching","item_id":"ws_1"}"#.into(),
            ..SseEvent::default()
        };
        let mut decoder = Decoder::new();
        decoder.decode(&unknown, &mut out).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn cut_or_corrupted_events_never_panic() {
        for name in [
            "openai-responses/reasoning-summary-encrypted-function-call-gpt-5.sse",
            "openai-responses/parallel-function-calls-gpt-5.sse",
            "llama-cpp/responses_parallel_stream.sse",
        ] {
            let events = sse_events(&fixture(name));
            for cut_event in 0..events.len() {
                let data = &events[cut_event].data;
                let cuts = data
                    .char_indices()
                    .map(|(at, _)| at)
                    .step_by(7)
                    .chain([data.len()]);
                for cut in cuts {
                    let mut decoder = Decoder::new();
                    let mut out = Vec::new();
                    for (at, event) in events.iter().enumerate() {
                        let mut event = event.clone();
                        if at == cut_event {
                            event.data.truncate(cut);
                        }
                        // An error is a fine answer to a cut event; a panic is not.
                        if decoder.decode(&event, &mut out).is_err() {
                            break;
                        }
                    }
                    let _ = decoder.finish(&mut out);
                }
            }
        }
    }
}
