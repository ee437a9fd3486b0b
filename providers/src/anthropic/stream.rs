//! Messages stream events into [`LlmEvent`]s.
//!
//! Blocks are keyed by their `index`. Each `text` block opens a text block of its own
//! ([`LlmEvent::TextStart`]), its text streamed as it comes; its citations (a `citations` list
//! in `content_block_start`, then one per `citations_delta`, interleaved with the text) are
//! kept as each citation's JSON text, byte for byte, and put on the block at its
//! `content_block_stop` as [`ProviderMeta::AnthropicCitations`] ([`LlmEvent::TextMeta`]).
//! `thinking` blocks gather their text and the `signature_delta` and complete at
//! `content_block_stop` with the signature as [`ProviderMeta::Anthropic`]; `redacted_thinking`
//! carries its `data` in `content_block_start` and no deltas; `tool_use` arguments come as
//! `input_json_delta` fragments (the first often `""`; nothing at all means `{}`).
//! `message_delta` carries the stop reason and cumulative usage (see [`Decoder::usage`] for how
//! its counts are merged with `message_start`'s); `message_stop` ends a whole stream, and a
//! stream that ends before it is truncated. `pause_turn` (a long server-tool turn paused, to be
//! continued by sending it back) is [`StopReason::PauseTurn`].
//!
//! # Blocks kept opaquely
//! Every other block type — `server_tool_use`, `web_search_tool_result`,
//! `web_fetch_tool_result`, the code execution results, `mcp_tool_use`, `mcp_tool_result`,
//! `container_upload`, `compaction`, and types added after this was written — becomes one
//! [`LlmEvent::Opaque`] (`provider` `anthropic`) when it stops, so it can be sent back as the
//! API returned it. Its `item` is the block as the non-streaming API would return it:
//! - nothing streamed into the block: the `content_block` object of `content_block_start`,
//!   its JSON text byte for byte;
//! - deltas streamed into it: that object with each streamed field set, in the object's key
//!   order, the other fields' values byte for byte (only the spacing between them and the
//!   escapes in keys are rewritten). An `input_json_delta` (`server_tool_use`, `mcp_tool_use`)
//!   sets `input` to the concatenated `partial_json` text, which must be JSON (nothing or only
//!   `""` keeps the start's `input`); a `citations_delta` appends its `citation` to `citations`;
//!   any other delta (`compaction_delta` has `content`) appends each of its string fields to
//!   the block's field of that name (a `null` or absent field starts empty). A delta with a
//!   field that is not a string is a protocol error.
//!
//! Blocks end in `index` order (Anthropic closes each block before it starts the next), so
//! each opaque block takes its place among the others. An opaque block, or a text block with
//! citations, still open at `message_stop` is a protocol error, as an unfinished tool call is:
//! the turn would be sent back without it; so is a text block with citations that stops after
//! another block started (its citations would land on the wrong text).

use std::collections::HashMap;

use indexmap::IndexMap;
use motet_directives::{ModelUsage, ProviderMeta, StopReason, Usage};
use serde_json::Value;
use serde_json::value::RawValue;

use super::PROVIDER;
use super::wire::{WireDelta, WireEvent, WireMessageDelta, WireTextStart, WireUsage};
use crate::decoder::StreamDecoder;
use crate::error::ProviderError;
use crate::event::{BLOCK_BYTES, LlmEvent};
use crate::sse::SseEvent;

#[derive(Debug)]
enum Block {
    Text {
        /// Whether any of its text has been handed out.
        streamed: bool,
        /// Each citation's JSON text, as received: those of `content_block_start`, then the
        /// `citation` of each `citations_delta`.
        citations: Vec<String>,
    },
    Thinking {
        key: String,
        signature: String,
    },
    /// Completed at its start; its stop is a no-op.
    Redacted,
    Tool {
        id: String,
    },
    /// A block kept opaquely (see the module doc).
    Opaque(Opaque),
}

/// An opaque block being received: its start and what has streamed into it.
#[derive(Debug)]
struct Opaque {
    /// The `content_block` JSON text of `content_block_start`.
    start: String,
    /// The `input_json_delta` text so far.
    input: String,
    /// The `citation`s of `citations_delta`s, as received.
    citations: Vec<Box<RawValue>>,
    /// The string fields other deltas appended to, in the order they first came.
    appended: Vec<(String, String)>,
}

impl Opaque {
    fn new(start: String) -> Self {
        Self {
            start,
            input: String::new(),
            citations: Vec::new(),
            appended: Vec::new(),
        }
    }

    /// Applies a delta; returns the bytes it added.
    fn apply(&mut self, index: u64, delta: &str) -> Result<usize, ProviderError> {
        let delta: IndexMap<String, Box<RawValue>> = serde_json::from_str(delta).map_err(|e| {
            protocol(format!(
                "a delta for content block {index} is malformed: {e}"
            ))
        })?;
        let text = |raw: &RawValue| serde_json::from_str::<String>(raw.get()).ok();
        let kind = delta
            .get("type")
            .and_then(|raw| text(raw))
            .unwrap_or_default();
        match (kind.as_str(), delta.get("citation")) {
            ("input_json_delta", _) => {
                let json = delta
                    .get("partial_json")
                    .and_then(|raw| text(raw))
                    .unwrap_or_default();
                self.input.push_str(&json);
                return Ok(json.len());
            }
            ("citations_delta", Some(citation)) => {
                self.citations.push(citation.clone());
                return Ok(citation.get().len());
            }
            _ => {}
        }
        let mut added = 0;
        for (field, raw) in delta.iter().filter(|(field, _)| *field != "type") {
            let Some(more) = text(raw) else {
                return Err(protocol(format!(
                    "a `{kind}` delta for content block {index} has a `{field}` that is not text"
                )));
            };
            added += more.len();
            match self.appended.iter_mut().find(|(name, _)| name == field) {
                Some((_, text)) => text.push_str(&more),
                None => self.appended.push((field.clone(), more)),
            }
        }
        Ok(added)
    }

    /// The block as the non-streaming API would return it.
    fn into_item(self, index: u64) -> Result<String, ProviderError> {
        let streamed_input = !self.input.trim().is_empty();
        if !streamed_input && self.citations.is_empty() && self.appended.is_empty() {
            return Ok(self.start);
        }
        let unreadable = |e: serde_json::Error| {
            protocol(format!("content block {index} cannot be rebuilt: {e}"))
        };
        let mut block: IndexMap<String, Box<RawValue>> =
            serde_json::from_str(&self.start).map_err(unreadable)?;
        if streamed_input {
            let input = RawValue::from_string(self.input.trim().to_owned()).map_err(|e| {
                protocol(format!(
                    "the streamed input of content block {index} is not JSON: {e}"
                ))
            })?;
            block.insert("input".to_owned(), input);
        }
        if !self.citations.is_empty() {
            let mut citations = match block.get("citations") {
                Some(raw) => serde_json::from_str::<Option<Vec<Box<RawValue>>>>(raw.get())
                    .map_err(unreadable)?
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            citations.extend(self.citations);
            let citations = serde_json::value::to_raw_value(&citations).map_err(unreadable)?;
            block.insert("citations".to_owned(), citations);
        }
        for (field, more) in self.appended {
            let before = match block.get(&field) {
                Some(raw) => serde_json::from_str::<Option<String>>(raw.get())
                    .map_err(unreadable)?
                    .unwrap_or_default(),
                None => String::new(),
            };
            let text = serde_json::value::to_raw_value(&(before + &more)).map_err(unreadable)?;
            block.insert(field, text);
        }
        serde_json::to_string(&block).map_err(unreadable)
    }

    fn held_bytes(&self) -> usize {
        self.start.len()
            + self.input.len()
            + self.citations.iter().map(|c| c.get().len()).sum::<usize>()
            + self
                .appended
                .iter()
                .map(|(field, text)| field.len() + text.len())
                .sum::<usize>()
    }
}

/// Anthropic's token counts, in Anthropic's terms (`input` is the uncached input only).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

impl Counts {
    /// The sum of the per-iteration counts of `usage.iterations`.
    fn of_iterations(iterations: &[WireUsage]) -> Self {
        iterations.iter().fold(Self::default(), |sum, i| Self {
            input: sum.input.saturating_add(i.input_tokens.unwrap_or(0)),
            output: sum.output.saturating_add(i.output_tokens.unwrap_or(0)),
            cache_read: sum
                .cache_read
                .saturating_add(i.cache_read_input_tokens.unwrap_or(0)),
            cache_write: sum
                .cache_write
                .saturating_add(i.cache_creation_input_tokens.unwrap_or(0)),
        })
    }

    /// Each count added.
    fn plus(self, other: Self) -> Self {
        Self {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            cache_write: self.cache_write.saturating_add(other.cache_write),
        }
    }

    /// In our terms: input counts cache reads and writes too.
    fn usage(self, reasoning_tokens: u64) -> Usage {
        Usage {
            input_tokens: self
                .input
                .saturating_add(self.cache_read)
                .saturating_add(self.cache_write),
            output_tokens: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            reasoning_tokens,
        }
    }

    /// The larger of each count.
    fn max(self, other: Self) -> Self {
        Self {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
            cache_read: self.cache_read.max(other.cache_read),
            cache_write: self.cache_write.max(other.cache_write),
        }
    }
}

impl Block {
    /// What the decoder holds for this open block ([`StreamDecoder::held_bytes`]).
    fn held_bytes(&self) -> usize {
        BLOCK_BYTES
            + match self {
                Block::Thinking { key, signature } => key.len() + signature.len(),
                Block::Tool { id } => id.len(),
                Block::Opaque(opaque) => opaque.held_bytes(),
                Block::Text { citations, .. } => citations.iter().map(String::len).sum(),
                Block::Redacted => 0,
            }
    }
}

/// Decodes one Messages response stream.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    blocks: HashMap<u64, Block>,
    /// The index of the block that started last: a text block's citations land on the text
    /// block the assembler holds last, which is that block's only while no other started.
    last_started: Option<u64>,
    /// What `blocks` holds, kept as they change.
    held: usize,
    /// The top-level counts as merged so far.
    counts: Counts,
    /// The sum over the last `usage.iterations` seen, if any came.
    iterations: Option<Counts>,
    /// The last `usage.iterations` summed by the model named on them, when one names a model
    /// other than the response's (Anthropic's advisor tool): the model and its counts, in the
    /// order the models first appear.
    by_model: Vec<(Option<String>, Counts)>,
    /// `output_tokens_details.thinking_tokens`, the last one reported.
    thinking: u64,
    /// The response's model, from `message_start`.
    model: Option<String>,
    stop_reason: Option<StopReason>,
    stopped: bool,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Folds a usage report in; the event carries the totals so far.
    ///
    /// The counts are cumulative, so a later report replaces an earlier one, with one
    /// exception: `message_delta` repeats the input and cache fields as `0` when it has nothing
    /// new to say about them, so a later zero never erases an earlier non-zero input, cache read
    /// or cache write count (a real stream reads 55,096 cached tokens in `message_start` and
    /// reports `cache_read_input_tokens: 0` at its end). Output only grows, so it always
    /// replaces.
    ///
    /// When Anthropic ran more than one sampling iteration for the request (server-side
    /// compaction, server tool loops) it lists each in `usage.iterations`; the top-level counts
    /// then leave out the compaction iterations, and what was used and billed is the sum of
    /// all iterations. The last list seen is summed; each total is the larger of that sum and
    /// the top-level count, so a list that omits a field costs nothing.
    ///
    /// Anthropic counts uncached input apart from cache reads and writes; our `input_tokens`
    /// includes them.
    fn usage(&mut self, wire: &WireUsage, out: &mut Vec<LlmEvent>) {
        let counts = &mut self.counts;
        for (field, value, zero_keeps) in [
            (&mut counts.input, wire.input_tokens, true),
            (&mut counts.output, wire.output_tokens, false),
            (&mut counts.cache_read, wire.cache_read_input_tokens, true),
            (
                &mut counts.cache_write,
                wire.cache_creation_input_tokens,
                true,
            ),
        ] {
            match value {
                Some(0) if zero_keeps => {}
                Some(value) => *field = value,
                None => {}
            }
        }
        if let Some(thinking) = wire
            .output_tokens_details
            .as_ref()
            .and_then(|d| d.thinking_tokens)
        {
            self.thinking = thinking;
        }
        if let Some(iterations) = &wire.iterations {
            self.iterations = Some(Counts::of_iterations(iterations));
            self.by_model = self.split_by_model(iterations);
        }
        let total = match self.iterations {
            Some(iterations) => iterations.max(self.counts),
            None => self.counts,
        };
        out.push(LlmEvent::Usage {
            usage: total.usage(self.thinking),
        });
        if !self.by_model.is_empty() {
            // The top-level thinking count is the response's model's own.
            let usage = self
                .by_model
                .iter()
                .map(|(model, counts)| ModelUsage {
                    usage: counts.usage(if model.is_none() { self.thinking } else { 0 }),
                    model: model
                        .clone()
                        .or_else(|| self.model.clone())
                        .unwrap_or_default(),
                })
                .collect();
            out.push(LlmEvent::UsageByModel { usage });
        }
    }

    /// `iterations` summed by model, when an iteration names a model other than the
    /// response's; empty otherwise. Iterations without a `model` (`message`, `compaction`)
    /// are the response's model's, and are keyed `None`.
    fn split_by_model(&self, iterations: &[WireUsage]) -> Vec<(Option<String>, Counts)> {
        fn named<'a>(i: &'a WireUsage, response: Option<&String>) -> Option<&'a String> {
            i.model.as_ref().filter(|m| Some(*m) != response)
        }
        let other = |i| named(i, self.model.as_ref());
        if !iterations.iter().any(|i| other(i).is_some()) {
            return Vec::new();
        }
        let mut split: Vec<(Option<String>, Counts)> = Vec::new();
        let mut position: HashMap<Option<&String>, usize> = HashMap::new();
        for iteration in iterations {
            let model = other(iteration);
            let counts = Counts::of_iterations(std::slice::from_ref(iteration));
            match position.get(&model).and_then(|&at| split.get_mut(at)) {
                Some((_, sum)) => *sum = sum.plus(counts),
                None => {
                    position.insert(model, split.len());
                    split.push((model.cloned(), counts));
                }
            }
        }
        split
    }

    fn block_start(
        &mut self,
        index: u64,
        raw: &RawValue,
        out: &mut Vec<LlmEvent>,
    ) -> Result<(), ProviderError> {
        if self.blocks.contains_key(&index) {
            return Err(protocol(format!("content block {index} started twice")));
        }
        let block: Value = serde_json::from_str(raw.get())
            .map_err(|e| protocol(format!("content block {index} is unreadable: {e}")))?;
        if !block.is_object() {
            return Err(protocol(format!("content block {index} is not an object")));
        }
        let text_field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let entry = match kind {
            "text" => {
                // Each text block is a block of its own: one with citations must not share
                // them with its neighbours' text.
                out.push(LlmEvent::TextStart);
                let citations = start_citations(index, raw)?;
                let text = text_field("text");
                if !text.is_empty() {
                    out.push(LlmEvent::TextDelta {
                        delta: text.to_owned(),
                        meta: None,
                    });
                }
                Block::Text {
                    streamed: !text.is_empty(),
                    citations,
                }
            }
            "thinking" => {
                let key = format!("thinking_{index}");
                out.push(LlmEvent::ReasoningStart { key: key.clone() });
                let text = text_field("thinking");
                if !text.is_empty() {
                    out.push(LlmEvent::ReasoningDelta {
                        key: key.clone(),
                        delta: text.to_owned(),
                    });
                }
                Block::Thinking {
                    key,
                    signature: text_field("signature").to_owned(),
                }
            }
            "redacted_thinking" => {
                let key = format!("thinking_{index}");
                out.push(LlmEvent::ReasoningStart { key: key.clone() });
                out.push(LlmEvent::ReasoningComplete {
                    key,
                    text: Some(String::new()),
                    meta: Some(ProviderMeta::AnthropicRedacted {
                        data: text_field("data").to_owned(),
                    }),
                });
                Block::Redacted
            }
            "tool_use" => {
                let id = text_field("id");
                let name = text_field("name");
                if id.is_empty() || name.is_empty() {
                    return Err(protocol(format!(
                        "tool_use block {index} has no id or no name"
                    )));
                }
                out.push(LlmEvent::ToolCallStart {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    meta: None,
                });
                Block::Tool { id: id.to_owned() }
            }
            _ => Block::Opaque(Opaque::new(raw.get().to_owned())),
        };
        self.held += entry.held_bytes();
        self.blocks.insert(index, entry);
        self.last_started = Some(index);
        Ok(())
    }

    fn block_delta(
        &mut self,
        index: u64,
        raw: &RawValue,
        out: &mut Vec<LlmEvent>,
    ) -> Result<(), ProviderError> {
        let block = self
            .blocks
            .get_mut(&index)
            .ok_or_else(|| protocol(format!("a delta for content block {index}, never started")))?;
        if let Block::Opaque(opaque) = block {
            self.held += opaque.apply(index, raw.get())?;
            return Ok(());
        }
        let delta = serde_json::from_str::<WireDelta>(raw.get())
            .map_err(|e| protocol(format!("a content_block_delta is malformed: {e}")))?;
        match (block, delta.kind.as_str()) {
            (Block::Text { streamed, .. }, "text_delta") => {
                if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
                    *streamed = true;
                    out.push(LlmEvent::TextDelta {
                        delta: text,
                        meta: None,
                    });
                }
            }
            (Block::Thinking { key, .. }, "thinking_delta") => {
                if let Some(text) = delta.thinking.filter(|t| !t.is_empty()) {
                    out.push(LlmEvent::ReasoningDelta {
                        key: key.clone(),
                        delta: text,
                    });
                }
            }
            (Block::Thinking { signature, .. }, "signature_delta") => {
                let more = delta.signature.as_deref().unwrap_or("");
                signature.push_str(more);
                self.held += more.len();
            }
            (Block::Tool { id }, "input_json_delta") => {
                if let Some(json) = delta.partial_json.filter(|j| !j.is_empty()) {
                    out.push(LlmEvent::ToolCallDelta {
                        id: id.clone(),
                        args_delta: json,
                    });
                }
            }
            // A delta without a citation has nothing to keep.
            (Block::Text { citations, .. }, "citations_delta") => {
                if let Some(citation) = delta.citation {
                    self.held += citation.get().len();
                    citations.push(citation.get().to_owned());
                }
            }
            (_, other) => {
                return Err(protocol(format!(
                    "a `{other}` delta does not fit content block {index}"
                )));
            }
        }
        Ok(())
    }

    fn block_stop(&mut self, index: u64, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        let block = self
            .blocks
            .remove(&index)
            .ok_or_else(|| protocol(format!("content block {index} stopped, never started")))?;
        self.held = self.held.saturating_sub(block.held_bytes());
        match block {
            Block::Thinking { key, signature } => out.push(LlmEvent::ReasoningComplete {
                key,
                text: None,
                meta: (!signature.is_empty()).then_some(ProviderMeta::Anthropic { signature }),
            }),
            Block::Tool { id } => out.push(LlmEvent::ToolCallComplete {
                id,
                args: None,
                meta: None,
            }),
            Block::Opaque(opaque) => out.push(LlmEvent::Opaque {
                provider: PROVIDER.to_owned(),
                item: opaque.into_item(index)?,
            }),
            Block::Text {
                streamed,
                citations,
            } => {
                if citations.is_empty() {
                    return Ok(());
                }
                if let Some(other) = self.last_started.filter(|&last| last != index) {
                    return Err(protocol(format!(
                        "text block {index} has citations but stopped after content block \
                         {other} started, so they have no block to go to"
                    )));
                }
                let meta = ProviderMeta::AnthropicCitations { citations };
                out.push(if streamed {
                    LlmEvent::TextMeta { meta }
                } else {
                    // Citations without text: a block of their own still holds them.
                    LlmEvent::TextDelta {
                        delta: String::new(),
                        meta: Some(meta),
                    }
                });
            }
            Block::Redacted => {}
        }
        Ok(())
    }
}

/// The `citations` a text block starts with, each as its JSON text (`null`, an empty list or
/// none at all: none).
fn start_citations(index: u64, raw: &RawValue) -> Result<Vec<String>, ProviderError> {
    let start: WireTextStart<'_> = serde_json::from_str(raw.get()).map_err(|e| {
        protocol(format!(
            "the citations of text block {index} are not a list: {e}"
        ))
    })?;
    Ok(start
        .citations
        .unwrap_or_default()
        .into_iter()
        .map(|citation| citation.get().to_owned())
        .collect())
}

fn protocol(message: String) -> ProviderError {
    ProviderError::Protocol { message }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        "pause_turn" => StopReason::PauseTurn,
        other => StopReason::Other(other.to_owned()),
    }
}

impl StreamDecoder for Decoder {
    fn decode(&mut self, event: &SseEvent, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let wire: WireEvent<'_> = serde_json::from_str(&event.data)
            .map_err(|e| protocol(format!("an Anthropic event is not valid JSON: {e}")))?;
        if self.stopped && wire.kind != "ping" {
            return Err(protocol(format!(
                "`{}` arrived after message_stop",
                wire.kind
            )));
        }
        match wire.kind.as_str() {
            "message_start" => {
                let message = wire.message.unwrap_or_default();
                if self.model.is_none() {
                    self.model.clone_from(&message.model);
                }
                out.push(LlmEvent::Started {
                    model: message.model,
                    response_id: message.id,
                });
                if let Some(usage) = message.usage {
                    self.usage(&usage, out);
                }
            }
            "content_block_start" => {
                let index = wire
                    .index
                    .ok_or_else(|| protocol("content_block_start without an index".into()))?;
                let block = wire.content_block.ok_or_else(|| {
                    protocol(format!("content_block_start {index} has no content_block"))
                })?;
                self.block_start(index, block, out)?;
            }
            "content_block_delta" => {
                let index = wire
                    .index
                    .ok_or_else(|| protocol("content_block_delta without an index".into()))?;
                let delta = wire
                    .delta
                    .ok_or_else(|| protocol(format!("content_block_delta {index} has no delta")))?;
                self.block_delta(index, delta, out)?;
            }
            "content_block_stop" => {
                let index = wire
                    .index
                    .ok_or_else(|| protocol("content_block_stop without an index".into()))?;
                self.block_stop(index, out)?;
            }
            "message_delta" => {
                if let Some(usage) = &wire.usage {
                    self.usage(usage, out);
                }
                // A delta without a readable stop reason says nothing about the end.
                let delta = wire
                    .delta
                    .and_then(|raw| serde_json::from_str::<WireMessageDelta>(raw.get()).ok())
                    .unwrap_or_default();
                if let Some(reason) = delta.stop_reason.as_deref() {
                    let reason = stop_reason(reason);
                    if self.stop_reason.is_none() {
                        out.push(LlmEvent::Done {
                            stop_reason: reason.clone(),
                        });
                    }
                    self.stop_reason = Some(reason);
                }
            }
            "message_stop" => {
                if self.stop_reason.is_none() {
                    return Err(protocol("message_stop without a stop reason".into()));
                }
                // Its item (or citations) would be lost, and the turn replayed without it.
                let mut open = self.blocks.iter().filter(|(_, b)| match b {
                    Block::Opaque(_) => true,
                    Block::Text { citations, .. } => !citations.is_empty(),
                    _ => false,
                });
                if let Some((index, _)) = open.next() {
                    return Err(protocol(format!(
                        "message_stop while content block {index} is still open"
                    )));
                }
                self.stopped = true;
            }
            "error" => return Err(super::classify_error(0, &event.data)),
            // `ping` and event types added after this was written.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        if self.stopped {
            Ok(())
        } else {
            Err(ProviderError::StreamTruncated {
                reason: "the Anthropic stream ended before message_stop".to_owned(),
            })
        }
    }

    fn held_bytes(&self) -> usize {
        self.held
    }
}
