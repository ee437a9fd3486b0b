//! Streaming events: what a dialect decoder produces from SSE, and the assembler consumes.

use motet_directives::{ModelUsage, ProviderMeta, StopReason, Usage};

/// What one block costs a response beyond its strings (the assembler's slot and index entries,
/// a decoder's record of an item), counted against the response limit so that a stream of
/// empty blocks is not free.
pub(crate) const BLOCK_BYTES: usize = 128;

/// One step of a streamed LLM response, provider-agnostic (seed 004 §3.3).
///
/// A dialect decoder turns its provider's SSE events into these; the block assembler turns them
/// into an ordered [`motet_directives::AssistantMessage`]. Blocks are ordered by when they
/// *start*: text deltas extend the last block when it is text (unless a [`LlmEvent::TextStart`]
/// came between), reasoning and tool calls reserve a slot at their start and are finalized into
/// it later, possibly out of order.
///
/// Keys (`key` of reasoning, `id` of tool calls) are unique within one stream; a decoder whose
/// provider omits or reuses ids makes them unique, so two calls are never merged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LlmEvent {
    /// Metadata known once the response starts.
    Started {
        /// The model that answers, as the provider names it.
        model: Option<String>,
        /// The provider's response id.
        response_id: Option<String>,
    },
    /// A text block starts: the next text delta opens a new block even when the last block is
    /// text. For providers whose text blocks carry data of their own (Anthropic's citations),
    /// so that two of their blocks are never joined into one; the deltas of providers that do
    /// not send it join as before.
    TextStart,
    /// Visible text. Starts a new text block when the last block is not text, when `meta` is
    /// set, or after a [`LlmEvent::TextStart`].
    TextDelta {
        /// The text fragment.
        delta: String,
        /// Provider meta carried by this part (Gemini thoughtSignature on a text part).
        meta: Option<ProviderMeta>,
    },
    /// A reasoning block starts.
    ReasoningStart {
        /// Stream-local key of the block.
        key: String,
    },
    /// Reasoning text for an open block.
    ReasoningDelta {
        /// The block's key.
        key: String,
        /// The text fragment.
        delta: String,
    },
    /// A reasoning block is complete.
    ReasoningComplete {
        /// The block's key.
        key: String,
        /// The full text when the provider sends it at the end (replaces the deltas).
        text: Option<String>,
        /// Continuity data (signature, redacted data, reasoning id + encrypted content).
        meta: Option<ProviderMeta>,
    },
    /// A tool call starts.
    ToolCallStart {
        /// The call id (unique in the stream).
        id: String,
        /// The tool's name.
        name: String,
        /// Provider meta known at the start (Gemini thoughtSignature).
        meta: Option<ProviderMeta>,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// The call id.
        id: String,
        /// The fragment.
        args_delta: String,
    },
    /// A tool call is complete.
    ToolCallComplete {
        /// The call id.
        id: String,
        /// The full argument text when the provider sends it whole (replaces the deltas).
        args: Option<String>,
        /// Provider meta known at the end.
        meta: Option<ProviderMeta>,
    },
    /// The provider meta of the text block just streamed, known only once its text is over (an
    /// OpenAI Responses message whose `phase` is named on `output_item.done`, the citations of
    /// an Anthropic text block at its `content_block_stop`): it lands on the last block when
    /// that is text without meta of its own.
    TextMeta {
        /// The meta.
        meta: ProviderMeta,
    },
    /// A whole output item motet does not model (an OpenAI Responses `web_search_call`,
    /// `mcp_call`, …): one [`motet_directives::AssistantBlock::Opaque`] in its place among the
    /// other blocks, replayed only to the provider that produced it.
    Opaque {
        /// The provider family (`openai`).
        provider: String,
        /// The item's JSON text, exactly as received.
        item: String,
    },
    /// Token usage so far: cumulative totals, replacing any earlier update.
    Usage {
        /// The totals.
        usage: Usage,
    },
    /// Token usage split by model, when more than one model worked on the response (as the
    /// provider reported each model's part); replaces any earlier split.
    UsageByModel {
        /// One entry per model.
        usage: Vec<ModelUsage>,
    },
    /// The response is complete.
    Done {
        /// How the turn ended.
        stop_reason: StopReason,
    },
}

impl LlmEvent {
    /// The bytes this event adds to what the response holds, counted against
    /// [`Limits::max_response_bytes`](crate::Limits): text, reasoning and arguments, and the
    /// names, ids, keys and provider meta a block keeps, with [`BLOCK_BYTES`] for each block
    /// it starts. Ids on deltas are not kept (they only route the delta), and `Started`,
    /// `Usage` and `Done` replace what came before rather than add to it.
    pub(crate) fn held_bytes(&self) -> usize {
        let meta = |meta: &Option<ProviderMeta>| meta.as_ref().map_or(0, meta_bytes);
        match self {
            LlmEvent::TextDelta { delta, meta: m } => {
                delta.len() + meta(m) + if m.is_some() { BLOCK_BYTES } else { 0 }
            }
            LlmEvent::ReasoningStart { key } => key.len() + BLOCK_BYTES,
            LlmEvent::ReasoningDelta { delta, .. } => delta.len(),
            LlmEvent::ReasoningComplete { text, meta: m, .. } => {
                text.as_ref().map_or(0, String::len) + meta(m)
            }
            // The id is kept twice: in the block and in the assembler's index of calls.
            LlmEvent::ToolCallStart { id, name, meta: m } => {
                2 * id.len() + name.len() + meta(m) + BLOCK_BYTES
            }
            LlmEvent::ToolCallDelta { args_delta, .. } => args_delta.len(),
            LlmEvent::ToolCallComplete { args, meta: m, .. } => {
                args.as_ref().map_or(0, String::len) + meta(m)
            }
            LlmEvent::TextMeta { meta } => meta_bytes(meta),
            // The block it may open.
            LlmEvent::TextStart => BLOCK_BYTES,
            LlmEvent::Opaque { provider, item } => provider.len() + item.len() + BLOCK_BYTES,
            // Its model names are held; it replaces the split before it, so this overcounts.
            LlmEvent::UsageByModel { usage } => usage.iter().map(|u| u.model.len() + 64).sum(),
            LlmEvent::Started { .. } | LlmEvent::Usage { .. } | LlmEvent::Done { .. } => 0,
        }
    }
}

/// The bytes of a block's provider meta.
fn meta_bytes(meta: &ProviderMeta) -> usize {
    match meta {
        ProviderMeta::Anthropic { signature } => signature.len(),
        ProviderMeta::AnthropicRedacted { data } => data.len(),
        ProviderMeta::Gemini { thought_signature } => thought_signature.len(),
        ProviderMeta::OpenAi {
            id,
            encrypted_content,
        } => id.len() + encrypted_content.as_ref().map_or(0, String::len),
        ProviderMeta::OpenAiMessage { phase } => phase.len(),
        ProviderMeta::AnthropicCitations { citations } => citations.iter().map(String::len).sum(),
        ProviderMeta::OpenAiCompatReasoning { model, details } => {
            model.len() + details.iter().map(String::len).sum::<usize>()
        }
        // A kind added later: its size written out.
        other => serde_json::to_string(other).map_or(0, |text| text.len()),
    }
}
