//! What a user message or a tool result carries besides text: images, documents and audio.
//!
//! A user message is either plain text ([`UserContent::Text`], stored as a JSON string, exactly
//! as every thread stored before parts existed) or a list of [`Part`]s ([`UserContent::Parts`],
//! a JSON array). A part's bytes are a [`Blob`]: one shared allocation, so a projection that
//! clones the message for every LLM call copies a pointer, not the image. Stored, a blob is
//! standard base64 text.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

/// Bytes held once and shared by every clone (an image, a PDF, a sound). Serialized as standard
/// base64 text with padding; reading it back and writing it out again gives the same text.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Blob(Arc<[u8]>);

impl Blob {
    /// A blob holding `bytes`.
    pub fn new(bytes: impl Into<Arc<[u8]>>) -> Self {
        Self(bytes.into())
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// How many bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The bytes as standard base64 text with padding (what every provider's API takes).
    pub fn to_base64(&self) -> String {
        BASE64.encode(&self.0)
    }

    /// How long [`Self::to_base64`] is, without encoding.
    pub fn base64_len(&self) -> usize {
        self.0.len().div_ceil(3) * 4
    }

    /// True when `other` shares this blob's allocation (a clone, not a copy).
    pub fn shares_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Blob({} bytes)", self.0.len())
    }
}

impl From<Vec<u8>> for Blob {
    fn from(bytes: Vec<u8>) -> Self {
        Self(bytes.into())
    }
}

impl From<&[u8]> for Blob {
    fn from(bytes: &[u8]) -> Self {
        Self(bytes.into())
    }
}

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_base64())
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Base64Visitor;
        impl de::Visitor<'_> for Base64Visitor {
            type Value = Blob;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("standard base64 text")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Blob, E> {
                BASE64
                    .decode(text)
                    .map(Blob::from)
                    .map_err(|e| E::custom(format!("bytes that are not base64: {e}")))
            }
        }
        deserializer.deserialize_str(Base64Visitor)
    }
}

/// Where a part's content is: at a URL the provider fetches, or here, as bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MediaSource {
    /// A URL the provider fetches itself (`https:`; Gemini also takes its own file URIs).
    Url {
        /// The URL.
        url: String,
        /// Its media type, when known (Gemini's `fileData` requires one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
    /// The bytes themselves.
    Bytes {
        /// IANA media type: `image/png`, `application/pdf`, `audio/wav`, ...
        media_type: String,
        /// The content.
        data: Blob,
    },
}

impl MediaSource {
    /// The media type, when known.
    pub fn media_type(&self) -> Option<&str> {
        match self {
            Self::Url { media_type, .. } => media_type.as_deref(),
            Self::Bytes { media_type, .. } => Some(media_type),
        }
    }

    /// How many bytes it carries in the request (0 for a URL).
    pub fn byte_len(&self) -> usize {
        match self {
            Self::Url { .. } => 0,
            Self::Bytes { data, .. } => data.len(),
        }
    }

    /// The `data:` URL of the bytes (`data:image/png;base64,...`), or the URL itself.
    pub fn to_url(&self) -> Cow<'_, str> {
        match self {
            Self::Url { url, .. } => Cow::Borrowed(url),
            Self::Bytes { media_type, data } => {
                Cow::Owned(format!("data:{media_type};base64,{}", data.to_base64()))
            }
        }
    }
}

/// The kind of a [`Part`], for capability checks and their errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PartKind {
    /// Text.
    Text,
    /// An image.
    Image,
    /// A document (PDF, plain text).
    Document,
    /// Audio.
    Audio,
}

impl PartKind {
    /// `text`, `image`, `document` or `audio`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Image => "image",
            Self::Document => "document",
            Self::Audio => "audio",
        }
    }
}

impl fmt::Display for PartKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One part of a user message or of a tool result's attachments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image (PNG, JPEG, GIF, WebP).
    Image {
        /// Where it is.
        source: MediaSource,
    },
    /// A document: a PDF (or plain text, where the provider takes it).
    Document {
        /// Where it is.
        source: MediaSource,
        /// Its file name, for providers that show the model one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A sound (WAV, MP3).
    Audio {
        /// Where it is.
        source: MediaSource,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image from its bytes and media type (`image/png`).
    pub fn image_bytes(media_type: impl Into<String>, bytes: impl Into<Blob>) -> Self {
        Self::Image {
            source: MediaSource::Bytes {
                media_type: media_type.into(),
                data: bytes.into(),
            },
        }
    }

    /// An image at a URL the provider fetches.
    pub fn image_url(url: impl Into<String>) -> Self {
        Self::Image {
            source: MediaSource::Url {
                url: url.into(),
                media_type: None,
            },
        }
    }

    /// A document (PDF) from its bytes and media type (`application/pdf`).
    pub fn document_bytes(media_type: impl Into<String>, bytes: impl Into<Blob>) -> Self {
        Self::Document {
            source: MediaSource::Bytes {
                media_type: media_type.into(),
                data: bytes.into(),
            },
            name: None,
        }
    }

    /// A document at a URL the provider fetches.
    pub fn document_url(url: impl Into<String>) -> Self {
        Self::Document {
            source: MediaSource::Url {
                url: url.into(),
                media_type: None,
            },
            name: None,
        }
    }

    /// A sound from its bytes and media type (`audio/wav`, `audio/mpeg`).
    pub fn audio_bytes(media_type: impl Into<String>, bytes: impl Into<Blob>) -> Self {
        Self::Audio {
            source: MediaSource::Bytes {
                media_type: media_type.into(),
                data: bytes.into(),
            },
        }
    }

    /// The same part with a file name (documents only; other parts are returned unchanged).
    #[must_use]
    pub fn with_name(mut self, file_name: impl Into<String>) -> Self {
        if let Self::Document { name, .. } = &mut self {
            *name = Some(file_name.into());
        }
        self
    }

    /// What kind of part it is.
    pub fn kind(&self) -> PartKind {
        match self {
            Self::Text { .. } => PartKind::Text,
            Self::Image { .. } => PartKind::Image,
            Self::Document { .. } => PartKind::Document,
            Self::Audio { .. } => PartKind::Audio,
        }
    }

    /// Where its content is (`None` for text).
    pub fn source(&self) -> Option<&MediaSource> {
        match self {
            Self::Text { .. } => None,
            Self::Image { source } | Self::Document { source, .. } | Self::Audio { source } => {
                Some(source)
            }
        }
    }

    /// How many bytes it carries in a request: its text, or its media bytes (0 for a URL).
    pub fn byte_len(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            _ => self.source().map_or(0, MediaSource::byte_len),
        }
    }
}

/// What a tool result carries besides its text (an MCP tool's images), shared by every clone.
///
/// One word when there are none, which is nearly always: every tool result of every thread
/// pays for the field. Serialized as a list of [`Part`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attachments(Option<Arc<Vec<Part>>>);

impl Attachments {
    /// The parts, in order.
    pub fn as_slice(&self) -> &[Part] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }
}

impl std::ops::Deref for Attachments {
    type Target = [Part];

    fn deref(&self) -> &[Part] {
        self.as_slice()
    }
}

impl<'a> IntoIterator for &'a Attachments {
    type Item = &'a Part;
    type IntoIter = std::slice::Iter<'a, Part>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl From<Vec<Part>> for Attachments {
    fn from(parts: Vec<Part>) -> Self {
        Self((!parts.is_empty()).then(|| Arc::new(parts)))
    }
}

impl FromIterator<Part> for Attachments {
    fn from_iter<I: IntoIterator<Item = Part>>(parts: I) -> Self {
        Self::from(parts.into_iter().collect::<Vec<_>>())
    }
}

impl Serialize for Attachments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Attachments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Part>::deserialize(deserializer).map(Self::from)
    }
}

/// What a user message says: plain text, or a list of parts.
///
/// Plain text is stored as a JSON string, parts as a JSON array, so every thread stored before
/// parts existed reads back, and writes out again, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserContent {
    /// Plain text.
    Text(String),
    /// Text, images, documents and audio, in order.
    Parts(Vec<Part>),
}

impl UserContent {
    /// The text, when it is plain text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Parts(_) => None,
        }
    }

    /// Its text: the plain text, or the text parts joined by a blank line. Media parts are
    /// left out.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Self::Text(text) => Cow::Borrowed(text),
            Self::Parts(parts) => {
                let mut texts = parts.iter().filter_map(|part| match part {
                    Part::Text { text } => Some(text.as_str()),
                    _ => None,
                });
                match (texts.next(), texts.next()) {
                    (None, _) => Cow::Borrowed(""),
                    (Some(only), None) => Cow::Borrowed(only),
                    (Some(first), Some(second)) => {
                        let mut all = format!("{first}\n\n{second}");
                        for text in texts {
                            all.push_str("\n\n");
                            all.push_str(text);
                        }
                        Cow::Owned(all)
                    }
                }
            }
        }
    }

    /// Its parts: one text part for plain text.
    pub fn parts(&self) -> Cow<'_, [Part]> {
        match self {
            Self::Text(text) => Cow::Owned(vec![Part::text(text.clone())]),
            Self::Parts(parts) => Cow::Borrowed(parts),
        }
    }

    /// Its parts that are not text (images, documents, audio).
    pub fn media(&self) -> impl Iterator<Item = &Part> {
        let parts: &[Part] = match self {
            Self::Text(_) => &[],
            Self::Parts(parts) => parts,
        };
        parts.iter().filter(|part| part.kind() != PartKind::Text)
    }

    /// Gives back the room its text and parts grew while they were built or decoded.
    pub fn shrink_to_fit(&mut self) {
        match self {
            Self::Text(text) => text.shrink_to_fit(),
            Self::Parts(parts) => parts.shrink_to_fit(),
        }
    }
}

impl Default for UserContent {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl From<String> for UserContent {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for UserContent {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Vec<Part>> for UserContent {
    fn from(parts: Vec<Part>) -> Self {
        Self::Parts(parts)
    }
}

/// Equal when it is plain text equal to `other` (parts never equal a string).
impl PartialEq<str> for UserContent {
    fn eq(&self, other: &str) -> bool {
        self.as_text() == Some(other)
    }
}

impl PartialEq<&str> for UserContent {
    fn eq(&self, other: &&str) -> bool {
        self.as_text() == Some(*other)
    }
}

/// Writes [`UserContent::text`]: the text, without the media.
impl fmt::Display for UserContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl Serialize for UserContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Parts(parts) => parts.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for UserContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> de::Visitor<'de> for ContentVisitor {
            type Value = UserContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of parts")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<UserContent, E> {
                Ok(UserContent::Text(text.to_owned()))
            }
            fn visit_string<E: de::Error>(self, text: String) -> Result<UserContent, E> {
                Ok(UserContent::Text(text))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<UserContent, A::Error> {
                Vec::<Part>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(UserContent::Parts)
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_a_json_string_and_parts_a_json_array() {
        let text = UserContent::from("hi");
        assert_eq!(serde_json::to_string(&text).unwrap(), r#""hi""#);
        let parts = UserContent::Parts(vec![
            Part::text("what is this?"),
            Part::image_bytes("image/png", vec![0x89, b'P', b'N', b'G']),
            Part::document_url("https://example.com/a.pdf").with_name("a.pdf"),
        ]);
        let json = serde_json::to_string(&parts).unwrap();
        assert_eq!(
            json,
            r#"[{"type":"text","text":"what is this?"},{"type":"image","source":{"type":"bytes","media_type":"image/png","data":"iVBORw=="}},{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"},"name":"a.pdf"}]"#
        );
        let back: UserContent = serde_json::from_str(&json).unwrap();
        assert_eq!(back, parts);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }

    #[test]
    fn bytes_that_are_not_base64_and_content_that_is_neither_string_nor_list_are_errors() {
        let bad =
            r#"[{"type":"image","source":{"type":"bytes","media_type":"image/png","data":"!!"}}]"#;
        let error = serde_json::from_str::<UserContent>(bad).unwrap_err();
        assert!(error.to_string().contains("not base64"), "{error}");
        assert!(serde_json::from_str::<UserContent>("7").is_err());
        assert!(serde_json::from_str::<UserContent>(r#"[{"type":"video"}]"#).is_err());
    }

    #[test]
    fn a_clone_shares_the_bytes() {
        let part = Part::image_bytes("image/png", vec![1_u8; 1 << 20]);
        let copy = part.clone();
        let (Some(MediaSource::Bytes { data: a, .. }), Some(MediaSource::Bytes { data: b, .. })) =
            (part.source(), copy.source())
        else {
            panic!("bytes");
        };
        assert!(a.shares_with(b));
        assert_eq!(a.base64_len(), a.to_base64().len());
    }

    #[test]
    fn text_joins_the_text_parts_and_leaves_media_out() {
        let content = UserContent::Parts(vec![
            Part::text("one"),
            Part::image_url("https://example.com/x.png"),
            Part::text("two"),
        ]);
        assert_eq!(content.text(), "one\n\ntwo");
        assert_eq!(content.media().count(), 1);
        assert_eq!(content.to_string(), "one\n\ntwo");
        assert!(content != "one\n\ntwo");
        let plain = UserContent::from("x");
        assert!(plain == "x");
        assert_eq!(
            MediaSource::Bytes {
                media_type: "image/gif".into(),
                data: Blob::from(&b"GIF"[..])
            }
            .to_url(),
            "data:image/gif;base64,R0lG"
        );
    }
}
