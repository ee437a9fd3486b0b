//! Messages and the ordered assistant transcript (seed 004 §3.1).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ArcStr;
use crate::content::{Part, UserContent};
use crate::tool::{ToolArgs, ToolCallView, ToolResult};
use crate::usage::StopReason;

/// Continuity data a provider needs to see again, exactly, when the conversation resumes.
///
/// Typed rather than free-form JSON: each adapter knows which variant it produces and which it
/// can replay. A history replayed to another provider drops only the meta that provider cannot
/// use, never the text or the tool calls.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "snake_case")]
pub enum ProviderMeta {
    /// Anthropic thinking block signature.
    Anthropic {
        /// Opaque signature; a thinking block is only replayed with it.
        signature: String,
    },
    /// Anthropic `redacted_thinking` block: encrypted thinking, replayed as is.
    AnthropicRedacted {
        /// The opaque `data` of the block.
        data: String,
    },
    /// Gemini thought signature (on `functionCall` and `text` parts, never on responses).
    Gemini {
        /// Opaque signature.
        #[serde(rename = "thoughtSignature")]
        thought_signature: String,
    },
    /// OpenAI Responses reasoning item, replayed statelessly.
    #[serde(rename = "openai")]
    OpenAi {
        /// Reasoning item id (`rs_...`).
        id: String,
        /// Encrypted reasoning state (`include: ["reasoning.encrypted_content"]`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    /// OpenAI Responses assistant `message` item's `phase` (`commentary` or `final_answer`,
    /// kept verbatim), which OpenAI asks to be resent on every assistant message of a
    /// follow-up request. On the text block of that message; each message item is its own block.
    #[serde(rename = "openai_message")]
    OpenAiMessage {
        /// The phase, as the API named it.
        phase: String,
    },
    /// The citations of an Anthropic text block (web search results, documents), on that
    /// block: Anthropic wants them back on the text they support. Each holds one citation's
    /// JSON text exactly as the API sent it, so it goes back byte for byte; text rather than
    /// parsed JSON, because a re-serialized citation could differ from what was received.
    AnthropicCitations {
        /// One JSON object text per citation, in the order they came.
        citations: Vec<String>,
    },
    /// The `reasoning_details` an OpenAI-compatible server (OpenRouter) streamed with a
    /// turn's reasoning: provider signatures (`reasoning.text` with `signature`) and encrypted
    /// state (`reasoning.encrypted` with `data`) the model needs back to continue its reasoning
    /// across a tool call. Sent back, on the assistant message, only to `openai-compat:` and
    /// only when the request names the model that produced them.
    #[serde(rename = "openai_compat_reasoning")]
    OpenAiCompatReasoning {
        /// The model that produced them, as the server named it in the stream.
        model: String,
        /// One JSON object text per detail, in `index` order: the streamed fragments of each
        /// index merged (`text` and `summary` appended, every other field as last sent).
        details: Vec<String>,
    },
}

impl ProviderMeta {
    /// The provider family this meta belongs to: `anthropic`, `gemini`, `openai` or
    /// `openai-compat`.
    pub fn family(&self) -> &'static str {
        match self {
            Self::Anthropic { .. }
            | Self::AnthropicRedacted { .. }
            | Self::AnthropicCitations { .. } => "anthropic",
            Self::Gemini { .. } => "gemini",
            Self::OpenAi { .. } | Self::OpenAiMessage { .. } => "openai",
            Self::OpenAiCompatReasoning { .. } => "openai-compat",
        }
    }
}

/// One block of an assistant turn. Blocks keep the order in which the model started them.
///
/// A block's provider meta is boxed: most blocks have none (only reasoning blocks and some
/// providers' calls carry it), and held in place it made every block of every turn twice the
/// size (104 bytes rather than 64), in every thread and every projection.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "block_type", rename_all = "snake_case")]
pub enum AssistantBlock {
    /// Visible text. Gemini may attach a thought signature to a text part, Anthropic the
    /// citations of the text ([`ProviderMeta::AnthropicCitations`]).
    Text {
        /// The text.
        text: String,
        /// Provider continuity data, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        meta: Option<Box<ProviderMeta>>,
    },
    /// Reasoning or thinking notes (may be empty when only encrypted state was returned).
    Reasoning {
        /// Human-readable reasoning or its summary.
        #[serde(default)]
        text: String,
        /// Provider continuity data (signature, redacted data, reasoning id).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        meta: Option<Box<ProviderMeta>>,
    },
    /// A request to run a tool.
    ToolUse {
        /// The provider's call id (shared text: the strategy, the call's result and the refs
        /// of the entries about it hold the same id).
        id: ArcStr,
        /// The tool's name.
        name: String,
        /// Raw arguments; only the tool parses them.
        args: ToolArgs,
        /// Provider continuity data (Gemini signature on the call).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        meta: Option<Box<ProviderMeta>>,
    },
    /// An output item motet does not model (OpenAI Responses `web_search_call`, `mcp_call`,
    /// `code_interpreter_call`, …), kept so the next request can send it back. Only the
    /// provider that produced it replays it; every other provider skips it.
    Opaque {
        /// The provider family that produced it (see [`ProviderMeta::family`]).
        provider: String,
        /// The item's JSON text, byte for byte as the provider sent it.
        item: String,
    },
}

impl AssistantBlock {
    /// A text block without meta.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            meta: None,
        }
    }

    /// A reasoning block.
    pub fn reasoning(text: impl Into<String>, meta: Option<ProviderMeta>) -> Self {
        Self::Reasoning {
            text: text.into(),
            meta: meta.map(Box::new),
        }
    }

    /// A tool-use block without meta.
    pub fn tool_use(id: impl Into<ArcStr>, name: impl Into<String>, args: ToolArgs) -> Self {
        Self::ToolUse {
            id: id.into(),
            name: name.into(),
            args,
            meta: None,
        }
    }

    /// An opaque provider item, kept as its JSON text.
    pub fn opaque(provider: impl Into<String>, item: impl Into<String>) -> Self {
        Self::Opaque {
            provider: provider.into(),
            item: item.into(),
        }
    }

    /// The provider meta of this block, if any.
    pub fn meta(&self) -> Option<&ProviderMeta> {
        match self {
            Self::Text { meta, .. } | Self::Reasoning { meta, .. } | Self::ToolUse { meta, .. } => {
                meta.as_deref()
            }
            Self::Opaque { .. } => None,
        }
    }

    /// This block as a tool call view, if it is one.
    pub fn as_tool_call(&self) -> Option<ToolCallView<'_>> {
        match self {
            Self::ToolUse { id, name, args, .. } => Some(ToolCallView { id, name, args }),
            _ => None,
        }
    }
}

/// One assistant turn: its blocks in order and how it ended. Usage is billing data and lives
/// beside it in [`crate::LlmResponse`], not inside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Ordered blocks.
    pub blocks: Vec<AssistantBlock>,
    /// How the turn ended.
    pub stop_reason: StopReason,
}

impl AssistantMessage {
    /// Gives back the room its blocks and their text grew while the turn was assembled or
    /// decoded (a vector grown by pushes holds room for four blocks): a turn kept in a thread
    /// holds what it says and no more.
    pub fn shrink_to_fit(&mut self) {
        self.blocks.shrink_to_fit();
        for block in &mut self.blocks {
            match block {
                AssistantBlock::Text { text, .. } | AssistantBlock::Reasoning { text, .. } => {
                    text.shrink_to_fit();
                }
                AssistantBlock::ToolUse { name, .. } => name.shrink_to_fit(),
                AssistantBlock::Opaque { provider, item } => {
                    provider.shrink_to_fit();
                    item.shrink_to_fit();
                }
            }
        }
    }

    /// A turn of plain text that ended normally.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            blocks: vec![AssistantBlock::text(text)],
            stop_reason: StopReason::EndTurn,
        }
    }

    /// The tool calls in emission order, without allocating.
    pub fn tool_calls(&self) -> ToolCallIter<'_> {
        ToolCallIter {
            inner: self.blocks.iter(),
        }
    }

    /// True when the turn asks for at least one tool.
    pub fn has_tool_calls(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, AssistantBlock::ToolUse { .. }))
    }

    /// The tool call with this id.
    pub fn get_tool_use(&self, id: &str) -> Option<ToolCallView<'_>> {
        self.tool_calls().find(|call| call.id == id)
    }

    /// The text blocks, in order.
    pub fn text_blocks(&self) -> impl Iterator<Item = &str> {
        self.blocks.iter().filter_map(|b| match b {
            AssistantBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
    }
}

/// Writes the text blocks, concatenated, without intermediate allocation.
impl fmt::Display for AssistantMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.text_blocks().try_for_each(|text| f.write_str(text))
    }
}

/// One message of an LLM conversation, provider-agnostic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// System instructions.
    System {
        /// The instructions.
        content: String,
    },
    /// What the user said: plain text (a JSON string, as stored before parts existed) or a
    /// list of parts (text, images, documents, audio).
    User {
        /// The text or the parts.
        content: UserContent,
    },
    /// An assistant turn.
    Assistant(AssistantMessage),
    /// Results of the previous turn's tool calls.
    ToolResults {
        /// One result per call, in the calls' order.
        results: Vec<ToolResult>,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// A user message of plain text.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: UserContent::Text(content.into()),
        }
    }

    /// A user message of parts: text, images, documents, audio, in order.
    ///
    /// ```
    /// use motet_directives::{Message, Part};
    ///
    /// let png = vec![0x89, b'P', b'N', b'G'];
    /// let message = Message::user_parts([
    ///     Part::text("What colour is this square?"),
    ///     Part::image_bytes("image/png", png),
    /// ]);
    /// assert_eq!(message.role(), "user");
    /// ```
    pub fn user_parts(parts: impl IntoIterator<Item = Part>) -> Self {
        Self::User {
            content: UserContent::Parts(parts.into_iter().collect()),
        }
    }

    /// The role name: `system`, `user`, `assistant` or `tool_results`.
    pub fn role(&self) -> &'static str {
        match self {
            Self::System { .. } => "system",
            Self::User { .. } => "user",
            Self::Assistant(_) => "assistant",
            Self::ToolResults { .. } => "tool_results",
        }
    }
}

/// Iterator over the tool calls of an assistant turn, in emission order. No allocation.
#[derive(Debug, Clone)]
pub struct ToolCallIter<'a> {
    inner: std::slice::Iter<'a, AssistantBlock>,
}

impl<'a> Iterator for ToolCallIter<'a> {
    type Item = ToolCallView<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.find_map(AssistantBlock::as_tool_call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_stays_small() {
        // Every block of every assistant turn, in every thread and projection, pays this; the
        // rare provider meta is boxed so that it does not.
        assert!(
            size_of::<AssistantBlock>() <= 64,
            "{}",
            size_of::<AssistantBlock>()
        );
    }

    #[test]
    fn a_blocks_boxed_meta_reads_and_writes_as_before() {
        let block = AssistantBlock::reasoning(
            "thinking",
            Some(ProviderMeta::Anthropic {
                signature: "sig".into(),
            }),
        );
        let json = serde_json::to_value(&block).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "block_type": "reasoning",
                "text": "thinking",
                "meta": {"provider": "anthropic", "signature": "sig"},
            })
        );
        let back: AssistantBlock = serde_json::from_value(json).unwrap();
        assert_eq!(back, block);
        assert_eq!(back.meta().map(ProviderMeta::family), Some("anthropic"));
    }
}
