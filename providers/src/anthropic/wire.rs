//! Anthropic Messages on the wire: the request body we send, the stream events and error
//! bodies we read. Only what motet uses is declared; blocks, deltas and citations are kept as
//! JSON text where their bytes must survive.

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

/// The body: everything but the messages as a `Value` map, the messages typed so that opaque
/// blocks stay JSON text.
pub(super) struct Body<'a> {
    pub(super) fields: Map<String, Value>,
    pub(super) messages: Vec<Turn<'a>>,
}

impl Serialize for Body<'_> {
    /// Keys in the order a `Value` body has them (sorted), `messages` among them.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len() + 1))?;
        let mut messages = Some(&self.messages);
        for (key, value) in &self.fields {
            if key.as_str() > "messages"
                && let Some(messages) = messages.take()
            {
                map.serialize_entry("messages", messages)?;
            }
            map.serialize_entry(key, value)?;
        }
        if let Some(messages) = messages {
            map.serialize_entry("messages", messages)?;
        }
        map.end()
    }
}

/// One message; its keys in sorted order, as a `Value` would have them.
#[derive(Serialize)]
pub(super) struct Turn<'a> {
    pub(super) content: Content<'a>,
    pub(super) role: &'static str,
}

/// A message's content: plain text, or blocks.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Content<'a> {
    Text(&'a str),
    Blocks(Vec<Part<'a>>),
}

/// One content block.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Part<'a> {
    Built(Value),
    /// An opaque block's JSON text, written as it is.
    Kept(&'a RawValue),
    /// A text block with its citations.
    Cited(CitedText<'a>),
}

/// A `text` block with `citations`, each citation's JSON text written as it is; its keys in
/// sorted order, as the built blocks have them.
#[derive(Serialize)]
pub(super) struct CitedText<'a> {
    pub(super) citations: Vec<&'a RawValue>,
    pub(super) text: &'a str,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
}

// ---------------------------------------------------------------------------------------------
// Stream
// ---------------------------------------------------------------------------------------------

/// One stream event; blocks and deltas are kept as JSON text, so an opaque block's bytes
/// survive.
#[derive(Debug, Deserialize)]
pub(super) struct WireEvent<'a> {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) index: Option<u64>,
    #[serde(default)]
    pub(super) message: Option<WireMessage>,
    #[serde(default, borrow)]
    pub(super) content_block: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(super) delta: Option<&'a RawValue>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

/// The `delta` of `message_delta`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireMessageDelta {
    #[serde(default, deserialize_with = "lenient_text")]
    pub(super) stop_reason: Option<String>,
}

/// A string, or nothing when the field holds anything else.
fn lenient_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(text) => Some(text),
        _ => None,
    })
}

/// The `message` of `message_start`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireMessage {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

/// `usage`: of `message_start`'s message, of `message_delta`, of one iteration.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "crate::count::option")]
    pub(super) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::count::option")]
    pub(super) output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::count::option")]
    pub(super) cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::count::option")]
    pub(super) cache_creation_input_tokens: Option<u64>,
    /// One entry per sampling iteration (`type` `compaction`, `message`, `advisor_message`),
    /// when there were several: the same counts as the top level (an iteration lists no
    /// iterations of its own).
    #[serde(default)]
    pub(super) iterations: Option<Vec<WireUsage>>,
    /// The model of an iteration another model ran (the advisor's `advisor_message`).
    #[serde(default, deserialize_with = "lenient_text")]
    pub(super) model: Option<String>,
    /// `thinking_tokens`: output tokens spent thinking.
    #[serde(default)]
    pub(super) output_tokens_details: Option<WireOutputDetails>,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireOutputDetails {
    #[serde(default, deserialize_with = "crate::count::option")]
    pub(super) thinking_tokens: Option<u64>,
}

/// The part of a text block's `content_block_start` read besides its text.
#[derive(Debug, Deserialize)]
pub(super) struct WireTextStart<'a> {
    #[serde(default, borrow)]
    pub(super) citations: Option<Vec<&'a RawValue>>,
}

/// The `delta` of `content_block_delta`.
#[derive(Debug, Deserialize)]
pub(super) struct WireDelta<'a> {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) thinking: Option<String>,
    #[serde(default)]
    pub(super) signature: Option<String>,
    #[serde(default)]
    pub(super) partial_json: Option<String>,
    /// The citation of a `citations_delta`, as received.
    #[serde(default, borrow)]
    pub(super) citation: Option<&'a RawValue>,
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
/// An error response's body, and the `data` of an in-stream `error` event.
pub(super) struct ErrorBody {
    pub(super) error: Option<ApiError>,
}

/// `{"type": …, "message": …}`.
#[derive(Debug, Deserialize)]
pub(super) struct ApiError {
    #[serde(default, rename = "type")]
    pub(super) kind: Option<String>,
    #[serde(default)]
    pub(super) message: Option<String>,
}
