//! Tools as the model sees them: arguments, call views, results, definitions, choice.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::content::{Attachments, Part};
use crate::{ArcStr, DirectiveError};

/// Tool-call arguments exactly as the model produced them.
///
/// Arguments stay raw until the tool parses them ([`ToolArgs::parse`]): the core never looks
/// inside. Models sometimes produce text that is not a JSON object (a truncated stream, a small
/// model's typo); that text is kept verbatim rather than rejected, so the tool can report the
/// problem to the model as an error result and the model can try again.
///
/// An object nested deeper than [`ToolArgs::MAX_DEPTH`] levels counts as text that is not an
/// object: serde_json's parser stops at 128 levels, and the arguments travel inside signals,
/// stored entries and request bodies that add levels of their own, so such an object could not
/// be carried (it once turned the LLM's result into a signal without data).
///
/// Serialized form: a JSON object is written as-is (byte for byte); anything else is written as a
/// JSON string holding the raw text. Tool arguments are always objects in every provider's API,
/// so the two cases cannot be confused, and both round-trip exactly.
#[derive(Clone)]
pub struct ToolArgs(Repr);

#[derive(Clone)]
enum Repr {
    /// Valid JSON whose top level is an object, nested at most [`ToolArgs::MAX_DEPTH`] deep.
    Object(Box<RawValue>),
    /// Anything else, verbatim.
    Text(Box<str>),
}

impl ToolArgs {
    /// The deepest nesting of objects and arrays an arguments object may have (the object
    /// itself is level 1). Deeper, the arguments are kept as text that is not an object, which
    /// the tool set answers with an error result saying so. It leaves 28 of serde_json's 128
    /// levels to what wraps the arguments on their way (a signal's data, a stored entry, a
    /// request body); real tools' arguments nest a few levels.
    pub const MAX_DEPTH: usize = 100;

    /// Arguments from the model's raw text. Never fails: text that is not a JSON object (or an
    /// object nested deeper than [`Self::MAX_DEPTH`]) is kept verbatim and reported by
    /// [`ToolArgs::is_object`] and [`ToolArgs::problem`].
    pub fn from_text(text: impl Into<String>) -> Self {
        let text: String = text.into();
        if text.trim_start().starts_with('{') && !nests_deeper_than(&text, Self::MAX_DEPTH) {
            // One validating pass that copies the object's bytes; surrounding whitespace is not
            // part of the value and is dropped.
            if let Ok(raw) = serde_json::from_str::<Box<RawValue>>(&text) {
                return Self(Repr::Object(raw));
            }
        }
        Self(Repr::Text(text.into_boxed_str()))
    }

    /// Why the arguments are not an object a tool can read — that they are not valid JSON
    /// (with the JSON parser's message), that they nest deeper than [`Self::MAX_DEPTH`], or
    /// that they are not an object — or `None` when they are one.
    ///
    /// The tool set sends this to the model as an error result, so text that is not JSON or
    /// not an object is quoted after `received:`: the model sees what it wrote beside what is
    /// wrong with it and can correct the call rather than guess. Text nested too deep is not
    /// quoted: it is long, and its problem is its depth, not a place in it.
    pub fn problem(&self) -> Option<String> {
        let Repr::Text(text) = &self.0 else {
            return None;
        };
        Some(match serde_json::from_str::<de::IgnoredAny>(text) {
            Err(e) => format!("not valid JSON: {e}; received: {text}"),
            Ok(_) if nests_deeper_than(text, Self::MAX_DEPTH) => {
                format!("tool arguments nest deeper than {} levels", Self::MAX_DEPTH)
            }
            Ok(_) => format!("expected a JSON object; received: {text}"),
        })
    }

    /// Arguments from a JSON value (for tests and hand-built calls).
    pub fn from_value(value: &serde_json::Value) -> Self {
        Self::from_text(value.to_string())
    }

    /// An empty object, `{}`.
    pub fn empty_object() -> Self {
        Self::from_text("{}")
    }

    /// The raw text, exactly as produced.
    pub fn get(&self) -> &str {
        match &self.0 {
            Repr::Object(raw) => raw.get(),
            Repr::Text(text) => text,
        }
    }

    /// The arguments as a raw JSON value, when they are a valid JSON object.
    pub fn as_raw(&self) -> Option<&RawValue> {
        match &self.0 {
            Repr::Object(raw) => Some(raw),
            Repr::Text(_) => None,
        }
    }

    /// True when the text is a well-formed JSON object, as every provider requires.
    pub fn is_object(&self) -> bool {
        matches!(self.0, Repr::Object(_))
    }

    /// Parses the arguments into the tool's input type.
    ///
    /// # Errors
    /// [`DirectiveError::InvalidArgs`] when the text is not JSON or does not match `T`.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, DirectiveError> {
        serde_json::from_str(self.get()).map_err(|e| DirectiveError::InvalidArgs {
            message: e.to_string(),
        })
    }
}

impl PartialEq for ToolArgs {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for ToolArgs {}

impl fmt::Debug for ToolArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Object(raw) => write!(f, "ToolArgs({})", raw.get()),
            Repr::Text(text) => write!(f, "ToolArgs(invalid: {text:?})"),
        }
    }
}

impl fmt::Display for ToolArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for ToolArgs {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Object(raw) => raw.serialize(serializer),
            Repr::Text(text) => serializer.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for ToolArgs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // serde_json hands a `RawValue` request the exact bytes (the map branch of the visitor).
        // Deserializers that buffer first — an internally tagged enum such as `AssistantBlock`,
        // `#[serde(flatten)]`, other formats — call `visit_newtype_struct` instead; the value is
        // then re-encoded as compact JSON with its key order kept.
        deserializer.deserialize_newtype_struct(RAW_VALUE_TOKEN, ArgsVisitor)
    }
}

/// The name serde_json's `RawValue` asks deserializers for; serde_json answers it with the raw
/// text. Any other deserializer treats it as an ordinary newtype name.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl ToolArgs {
    /// Arguments from their serialized form: a JSON string holds raw text, anything else is the
    /// JSON itself.
    fn from_serialized<E: de::Error>(text: &str) -> Result<Self, E> {
        let trimmed = text.trim();
        if trimmed.starts_with('"') {
            let inner: String = serde_json::from_str(trimmed).map_err(E::custom)?;
            return Ok(Self::from_text(inner));
        }
        if trimmed.starts_with('{') && !nests_deeper_than(trimmed, Self::MAX_DEPTH) {
            let raw = RawValue::from_string(trimmed.to_owned()).map_err(E::custom)?;
            return Ok(Self(Repr::Object(raw)));
        }
        Ok(Self(Repr::Text(trimmed.into())))
    }
}

/// Whether the JSON `text` nests objects and arrays more than `max` levels deep. One pass over
/// the bytes, without recursion (the point is not to need the parser's stack), stopping as
/// soon as it knows.
fn nests_deeper_than(text: &str, max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0_usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

struct ArgsVisitor;

impl<'de> de::Visitor<'de> for ArgsVisitor {
    type Value = ToolArgs;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tool arguments (a JSON object or a string of raw text)")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<ToolArgs, A::Error> {
        // serde_json's raw-value map: one entry whose value is the raw JSON text.
        let Some(de::IgnoredAny) = map.next_key()? else {
            return Err(de::Error::custom("empty raw value"));
        };
        let raw: String = map.next_value()?;
        ToolArgs::from_serialized(&raw)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<ToolArgs, D::Error> {
        let JsonText(text) = JsonText::deserialize(d)?;
        ToolArgs::from_serialized(&text)
    }
}

/// Any self-describing value re-encoded as compact JSON text, keys in their original order.
struct JsonText(String);

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonTextVisitor).map(JsonText)
    }
}

struct JsonTextVisitor;

impl JsonTextVisitor {
    fn encode<T: Serialize + ?Sized, E: de::Error>(value: &T) -> Result<String, E> {
        serde_json::to_string(value).map_err(E::custom)
    }
}

impl<'de> de::Visitor<'de> for JsonTextVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Self::encode(&v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Self::encode(v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok("null".to_owned())
    }

    fn visit_none<E: de::Error>(self) -> Result<String, E> {
        Ok("null".to_owned())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        JsonText::deserialize(d).map(|t| t.0)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        JsonText::deserialize(d).map(|t| t.0)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
        let mut out = String::from("[");
        while let Some(JsonText(item)) = seq.next_element()? {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&item);
        }
        out.push(']');
        Ok(out)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<String, A::Error> {
        let mut out = String::from("{");
        while let Some(key) = map.next_key::<String>()? {
            let JsonText(value) = map.next_value()?;
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&Self::encode(&key)?);
            out.push(':');
            out.push_str(&value);
        }
        out.push('}');
        Ok(out)
    }
}

/// A borrowed view of one tool call in an assistant turn. No allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCallView<'a> {
    /// The provider's id for this call; its result must carry the same id.
    pub id: &'a str,
    /// The tool's name.
    pub name: &'a str,
    /// The raw arguments.
    pub args: &'a ToolArgs,
}

impl ToolCallView<'_> {
    /// Parses the arguments into the tool's input type (the dispatcher does this, not the core).
    ///
    /// # Errors
    /// [`DirectiveError::InvalidArgs`] when the arguments are not JSON or do not match `T`.
    pub fn parse_args<T: serde::de::DeserializeOwned>(&self) -> Result<T, DirectiveError> {
        self.args.parse()
    }
}

/// The outcome of one tool call, as the model will see it.
///
/// There is no provider meta here on purpose: Gemini's signatures belong on the `functionCall`,
/// never on the `functionResponse` (seed 004 §3.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the tool call this answers (shared text: the strategy that made the call
    /// holds the same id, and the refs of the entries about it).
    pub tool_use_id: ArcStr,
    /// What the tool returned (or the error text).
    pub content: String,
    /// True when the tool failed; the model sees the content as an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Images, documents or audio the tool returned besides its text (an MCP tool's image
    /// content), in order; absent from the stored form when there are none.
    #[serde(default, skip_serializing_if = "Attachments::is_empty")]
    pub attachments: Attachments,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(tool_use_id: impl Into<ArcStr>, content: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: false,
            attachments: Attachments::default(),
        }
    }

    /// The same result with `parts` attached after its text (images a tool returned).
    #[must_use]
    pub fn with_attachments(mut self, parts: impl IntoIterator<Item = Part>) -> Self {
        self.attachments = self.attachments.iter().cloned().chain(parts).collect();
        self
    }

    /// An error result the model can read and react to.
    pub fn error(tool_use_id: impl Into<ArcStr>, content: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: true,
            attachments: Attachments::default(),
        }
    }
}

/// A tool as offered to the model: name, description and the JSON schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

impl ToolDef {
    /// A tool definition.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// Shared, immutable list of tool definitions (cheap to clone into every request).
pub type ToolDefs = Arc<[ToolDef]>;

/// Whether and how the model may call tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool must be called.
    Tool {
        /// The tool's name.
        name: String,
    },
}
