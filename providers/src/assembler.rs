//! The block assembler (seed 004 §3.4): [`LlmEvent`]s in, one ordered [`LlmResponse`] out.
//!
//! Blocks live in a [`Slab`] and keep the order in which they *started*; open reasoning blocks
//! and tool calls are found by key through [`IndexMap`]s (tool calls in emission order). Text
//! deltas extend the last block while it is text, unless a [`LlmEvent::TextStart`] asked for a
//! new one; reasoning and tool calls reserve their slot at their start and are finalized into
//! it later, in any order.

use indexmap::IndexMap;
use motet_directives::{
    AssistantBlock, AssistantMessage, LlmResponse, ModelUsage, ProviderMeta, StopReason, ToolArgs,
    Usage,
};
use slab::Slab;

use crate::error::ProviderError;
use crate::event::LlmEvent;

/// A stream whose events do not make one well-formed response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamAssemblyError {
    /// A delta or completion for a block that never started (or already completed).
    #[error("{kind} `{key}` was not started or is already complete")]
    UnknownBlock {
        /// `reasoning` or `tool call`.
        kind: &'static str,
        /// The block's key or call id.
        key: String,
    },
    /// A second start for a key that is already in use.
    #[error("{kind} `{key}` started twice")]
    DuplicateStart {
        /// `reasoning` or `tool call`.
        kind: &'static str,
        /// The key.
        key: String,
    },
    /// An event after the response was done.
    #[error("an event arrived after the response was done")]
    AfterDone,
    /// The stream ended before the response was done.
    #[error("the stream ended before the response was done")]
    NotDone,
    /// The response was done while a block was still open.
    #[error("the response ended while {kind} `{key}` was still open")]
    Unfinished {
        /// `reasoning` or `tool call`.
        kind: &'static str,
        /// The key.
        key: String,
    },
    /// The output token limit cut a tool call short.
    #[error("max tokens reached in the middle of tool call `{tool}`")]
    MaxTokensInToolCall {
        /// The tool being called.
        tool: String,
    },
}

impl From<StreamAssemblyError> for ProviderError {
    fn from(e: StreamAssemblyError) -> Self {
        match e {
            StreamAssemblyError::NotDone => ProviderError::StreamTruncated {
                reason: "the stream ended before the response was done".to_owned(),
            },
            StreamAssemblyError::MaxTokensInToolCall { tool } => {
                ProviderError::MaxTokensInToolCall { tool }
            }
            other => ProviderError::Protocol {
                message: other.to_string(),
            },
        }
    }
}

#[derive(Debug)]
enum Slot {
    Text {
        text: String,
        meta: Option<ProviderMeta>,
    },
    Reasoning {
        text: String,
        meta: Option<ProviderMeta>,
    },
    Tool {
        id: String,
        name: String,
        args: String,
        meta: Option<ProviderMeta>,
        complete: bool,
    },
    Opaque {
        provider: String,
        item: String,
    },
}

/// Builds one [`LlmResponse`] from a stream of [`LlmEvent`]s.
///
/// ```
/// use motet_providers::{BlockAssembler, LlmEvent};
/// use motet_directives::StopReason;
///
/// let mut asm = BlockAssembler::new();
/// asm.push(LlmEvent::TextDelta { delta: "Hel".into(), meta: None })?;
/// asm.push(LlmEvent::TextDelta { delta: "lo".into(), meta: None })?;
/// asm.push(LlmEvent::Done { stop_reason: StopReason::EndTurn })?;
/// let response = asm.finish()?;
/// assert_eq!(response.message.text_blocks().collect::<Vec<_>>(), ["Hello"]);
/// # Ok::<(), motet_providers::StreamAssemblyError>(())
/// ```
#[derive(Debug, Default)]
pub struct BlockAssembler {
    blocks: Slab<Slot>,
    /// Slab keys in the order the blocks started.
    order: Vec<usize>,
    /// Open reasoning blocks by stream key.
    reasoning: IndexMap<String, usize>,
    /// Every tool call by id, in emission order.
    tools: IndexMap<String, usize>,
    /// A [`LlmEvent::TextStart`] came: the next text delta opens a block of its own.
    text_started: bool,
    usage: Usage,
    usage_by_model: Vec<ModelUsage>,
    model: Option<String>,
    response_id: Option<String>,
    stop_reason: Option<StopReason>,
}

impl BlockAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether any content (text, reasoning, a tool call or an opaque item) has arrived.
    pub fn has_content(&self) -> bool {
        !self.order.is_empty()
    }

    /// Takes the next event.
    ///
    /// # Errors
    /// A [`StreamAssemblyError`] when the event does not fit the stream so far.
    pub fn push(&mut self, event: LlmEvent) -> Result<(), StreamAssemblyError> {
        if self.stop_reason.is_some() {
            // Usage may trail the finish reason (OpenAI's usage chunk, Anthropic's message_delta).
            match event {
                LlmEvent::Usage { usage } => {
                    self.usage = usage;
                    return Ok(());
                }
                LlmEvent::UsageByModel { usage } => {
                    self.usage_by_model = usage;
                    return Ok(());
                }
                _ => {}
            }
            return Err(StreamAssemblyError::AfterDone);
        }
        match event {
            LlmEvent::Started { model, response_id } => {
                self.model = model.or(self.model.take());
                self.response_id = response_id.or(self.response_id.take());
            }
            LlmEvent::TextStart => self.text_started = true,
            LlmEvent::TextDelta { delta, meta } => self.text(delta, meta),
            LlmEvent::ReasoningStart { key } => {
                if self.reasoning.contains_key(&key) {
                    return Err(StreamAssemblyError::DuplicateStart {
                        kind: "reasoning",
                        key,
                    });
                }
                let slot = self.start(Slot::Reasoning {
                    text: String::new(),
                    meta: None,
                });
                self.reasoning.insert(key, slot);
            }
            LlmEvent::ReasoningDelta { key, delta } => {
                if let Some(Slot::Reasoning { text, .. }) = self.open_reasoning(&key)? {
                    text.push_str(&delta);
                }
            }
            LlmEvent::ReasoningComplete { key, text, meta } => {
                if let Some(Slot::Reasoning {
                    text: slot_text,
                    meta: slot_meta,
                }) = self.open_reasoning(&key)?
                {
                    if let Some(full) = text {
                        *slot_text = full;
                    }
                    *slot_meta = meta;
                }
                self.reasoning.shift_remove(&key);
            }
            LlmEvent::ToolCallStart { id, name, meta } => {
                if self.tools.contains_key(&id) {
                    return Err(StreamAssemblyError::DuplicateStart {
                        kind: "tool call",
                        key: id,
                    });
                }
                let slot = self.start(Slot::Tool {
                    id: id.clone(),
                    name,
                    args: String::new(),
                    meta,
                    complete: false,
                });
                self.tools.insert(id, slot);
            }
            LlmEvent::ToolCallDelta { id, args_delta } => {
                if let Slot::Tool { args, .. } = self.open_tool(&id)? {
                    args.push_str(&args_delta);
                }
            }
            LlmEvent::ToolCallComplete { id, args, meta } => {
                if let Slot::Tool {
                    args: slot_args,
                    meta: slot_meta,
                    complete,
                    ..
                } = self.open_tool(&id)?
                {
                    if let Some(full) = args {
                        *slot_args = full;
                    }
                    if meta.is_some() {
                        *slot_meta = meta;
                    }
                    *complete = true;
                }
            }
            LlmEvent::TextMeta { meta } => {
                if let Some(Slot::Text {
                    meta: slot @ None, ..
                }) = self.order.last().and_then(|&k| self.blocks.get_mut(k))
                {
                    *slot = Some(meta);
                }
            }
            LlmEvent::Opaque { provider, item } => {
                self.start(Slot::Opaque { provider, item });
            }
            LlmEvent::Usage { usage } => self.usage = usage,
            LlmEvent::UsageByModel { usage } => self.usage_by_model = usage,
            LlmEvent::Done { stop_reason } => self.stop_reason = Some(stop_reason),
        }
        Ok(())
    }

    /// The assembled response.
    ///
    /// # Errors
    /// [`StreamAssemblyError::NotDone`] when no `Done` came;
    /// [`StreamAssemblyError::MaxTokensInToolCall`] when the output limit cut a tool call
    /// (the partial call is not handed out); [`StreamAssemblyError::Unfinished`] for a block
    /// still open at the end. Arguments that are not JSON are not an error: the call keeps them
    /// verbatim (see [`ToolArgs`]), and the tool set answers it with an error result the model
    /// can read and correct.
    pub fn finish(mut self) -> Result<LlmResponse, StreamAssemblyError> {
        let stop_reason = self
            .stop_reason
            .take()
            .ok_or(StreamAssemblyError::NotDone)?;
        let cut_short = stop_reason == StopReason::MaxTokens;
        for (id, &slot) in &self.tools {
            if let Some(Slot::Tool {
                name,
                args,
                complete,
                ..
            }) = self.blocks.get(slot)
            {
                let parses = args.trim().is_empty()
                    || serde_json::from_str::<serde::de::IgnoredAny>(args).is_ok();
                if cut_short && (!complete || !parses) {
                    return Err(StreamAssemblyError::MaxTokensInToolCall { tool: name.clone() });
                }
                if !complete {
                    return Err(StreamAssemblyError::Unfinished {
                        kind: "tool call",
                        key: id.clone(),
                    });
                }
            }
        }
        if let Some(key) = self.reasoning.keys().next() {
            return Err(StreamAssemblyError::Unfinished {
                kind: "reasoning",
                key: key.clone(),
            });
        }
        let mut blocks = Vec::with_capacity(self.order.len());
        for key in self.order {
            let Some(slot) = self.blocks.try_remove(key) else {
                continue;
            };
            blocks.push(match slot {
                Slot::Text { text, meta } => AssistantBlock::Text {
                    text,
                    meta: meta.map(Box::new),
                },
                Slot::Reasoning { text, meta } => AssistantBlock::Reasoning {
                    text,
                    meta: meta.map(Box::new),
                },
                Slot::Tool {
                    id,
                    name,
                    args,
                    meta,
                    ..
                } => AssistantBlock::ToolUse {
                    id: id.into(),
                    name,
                    args: tool_args(args),
                    meta: meta.map(Box::new),
                },
                Slot::Opaque { provider, item } => AssistantBlock::Opaque { provider, item },
            });
        }
        Ok(LlmResponse {
            message: AssistantMessage {
                blocks,
                stop_reason,
            },
            usage: self.usage,
            model: self.model,
            response_id: self.response_id,
            usage_by_model: self.usage_by_model,
        })
    }

    fn start(&mut self, slot: Slot) -> usize {
        // Whatever block comes next is not the text before it.
        self.text_started = false;
        let key = self.blocks.insert(slot);
        self.order.push(key);
        key
    }

    fn text(&mut self, delta: String, meta: Option<ProviderMeta>) {
        if meta.is_none()
            && !self.text_started
            && let Some(Slot::Text { text, .. }) =
                self.order.last().and_then(|&k| self.blocks.get_mut(k))
        {
            text.push_str(&delta);
            return;
        }
        self.start(Slot::Text { text: delta, meta });
    }

    fn open_reasoning(&mut self, key: &str) -> Result<Option<&mut Slot>, StreamAssemblyError> {
        let slot = *self
            .reasoning
            .get(key)
            .ok_or_else(|| StreamAssemblyError::UnknownBlock {
                kind: "reasoning",
                key: key.to_owned(),
            })?;
        Ok(self.blocks.get_mut(slot))
    }

    fn open_tool(&mut self, id: &str) -> Result<&mut Slot, StreamAssemblyError> {
        let unknown = || StreamAssemblyError::UnknownBlock {
            kind: "tool call",
            key: id.to_owned(),
        };
        let slot = *self.tools.get(id).ok_or_else(unknown)?;
        match self.blocks.get_mut(slot) {
            Some(
                slot @ Slot::Tool {
                    complete: false, ..
                },
            ) => Ok(slot),
            _ => Err(unknown()),
        }
    }
}

/// The assembled argument text as [`ToolArgs`]: empty means `{}`; anything else is kept byte
/// for byte, JSON or not. A model's broken arguments (`{"a": 1, "b": ` cut off, `{'a': 1}`)
/// once failed the whole response as a protocol error that no retry could fix; kept, they
/// reach the tool set, which answers the call with an error result quoting them, so the model
/// can see its mistake and call again.
fn tool_args(text: String) -> ToolArgs {
    if text.trim().is_empty() {
        return ToolArgs::empty_object();
    }
    ToolArgs::from_text(text)
}
