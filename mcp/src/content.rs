//! A tool result as text the model reads: what an MCP `CallToolResult` becomes.
//!
//! Text is kept; binary content is described (its type and size), never pasted as base64: a
//! model cannot see an image through a text result, and a few kilobytes of base64 would crowd
//! out everything else in its context. Images and audio, and embedded images and PDFs, also
//! pass through as [`Part`]s (the result's attachments), which each dialect sends in its own
//! form where it can (docs/providers.md, "Images, documents and audio").

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use motet_directives::Part;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What the model reads when a result has no content at all.
pub const EMPTY_RESULT: &str = "(the tool returned no content)";

/// A rendered result: its text and whether the server flagged it as an error (`isError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The blocks' text, one block per line group.
    pub text: String,
    /// The server's `isError`.
    pub is_error: bool,
    /// The images, sounds and embedded images or PDFs, in order, as parts for the model.
    pub attachments: Vec<Part>,
}

/// `data` (base64) as a part of `kind` for `mime`, or `None` when it is not base64 or the
/// media type is one no provider takes as that kind.
fn attachment(mime: &str, data: &str) -> Option<Part> {
    let bytes = BASE64.decode(data.trim()).ok()?;
    if mime.starts_with("image/") {
        Some(Part::image_bytes(mime, bytes))
    } else if mime.starts_with("audio/") {
        Some(Part::audio_bytes(mime, bytes))
    } else if mime == "application/pdf" {
        Some(Part::document_bytes(mime, bytes))
    } else {
        None
    }
}

/// Renders a result's content blocks, in order, joined by newlines:
/// - text as it is;
/// - an image or audio clip as `[image: image/png, 1234 bytes]`;
/// - an embedded text resource as `[resource <uri>]` and its text; a blob as
///   `[resource <uri>: application/gzip, 120 bytes]`;
/// - a resource link as `[resource link: <name> <uri>]`.
///
/// When no block is text, `structuredContent` (if any) follows as JSON, so a server that
/// answers only with structured data is still read.
///
/// Images, audio and embedded image or PDF blobs are also attached, decoded, in order.
pub fn render(result: &CallToolResult) -> Rendered {
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len() + 1);
    let mut attachments = Vec::new();
    let mut has_text = false;
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                has_text = true;
                parts.push(text.text.clone());
            }
            ContentBlock::Image(image) => {
                attachments.extend(attachment(&image.mime_type, &image.data));
                parts.push(format!(
                    "[image: {}, {}]",
                    mime_or_unknown(&image.mime_type),
                    Bytes(base64_len(&image.data))
                ));
            }
            ContentBlock::Audio(audio) => {
                attachments.extend(attachment(&audio.mime_type, &audio.data));
                parts.push(format!(
                    "[audio: {}, {}]",
                    mime_or_unknown(&audio.mime_type),
                    Bytes(base64_len(&audio.data))
                ));
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => {
                    has_text = true;
                    let mime = mime_type
                        .as_deref()
                        .map(|mime| format!(" ({mime})"))
                        .unwrap_or_default();
                    parts.push(format!("[resource {uri}{mime}]\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let mime = mime_type.as_deref().unwrap_or("");
                    // Embedded images and PDFs; other blobs (archives, audio files a
                    // resource holds) stay a description.
                    if mime.starts_with("image/") || mime == "application/pdf" {
                        attachments.extend(
                            attachment(mime, blob).map(|part| part.with_name(uri.as_str())),
                        );
                    }
                    parts.push(format!(
                        "[resource {uri}: {}, {}]",
                        mime_or_unknown(mime),
                        Bytes(base64_len(blob))
                    ));
                }
                _ => parts.push("[resource of a kind motet does not read]".into()),
            },
            ContentBlock::ResourceLink(link) => {
                let mut line = format!("[resource link: {} {}", link.name, link.uri);
                if let Some(description) = &link.description {
                    line.push_str(&format!(" — {description}"));
                }
                line.push(']');
                parts.push(line);
            }
            _ => parts.push("[content of a kind motet does not read]".into()),
        }
    }
    if !has_text && let Some(structured) = &result.structured_content {
        parts.push(structured.to_string());
    }
    let text = if parts.is_empty() {
        EMPTY_RESULT.to_owned()
    } else {
        parts.join("\n")
    };
    Rendered {
        text,
        is_error: result.is_error.unwrap_or(false),
        attachments,
    }
}

fn mime_or_unknown(mime: &str) -> &str {
    if mime.is_empty() {
        "unknown type"
    } else {
        mime
    }
}

/// The decoded size of base64 text, without decoding it (whitespace and padding not counted).
fn base64_len(data: &str) -> usize {
    let symbols = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    symbols * 3 / 4
}

/// A byte count as people read it.
struct Bytes(usize);

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            1 => f.write_str("1 byte"),
            n if n < 10 * 1024 => write!(f, "{n} bytes"),
            n if n < 10 * 1024 * 1024 => write!(f, "{} KiB", n / 1024),
            n => write!(f, "{} MiB", n / (1024 * 1024)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        match serde_json::from_value(value) {
            Ok(result) => result,
            Err(error) => unreachable!("test result does not parse: {error}"),
        }
    }

    #[test]
    fn text_blocks_are_joined_in_order() {
        let rendered = render(&result(json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "text", "text": "two"}
        ]})));
        assert_eq!(rendered.text, "one\ntwo");
        assert!(!rendered.is_error);
    }

    #[test]
    fn images_and_audio_are_described_not_dumped() {
        // 8 base64 symbols are 6 bytes; 4 symbols with one `=` are 2 bytes.
        let rendered = render(&result(json!({"content": [
            {"type": "image", "data": "AAAAAAAA", "mimeType": "image/png"},
            {"type": "audio", "data": "AAA=", "mimeType": "audio/wav"}
        ]})));
        assert_eq!(
            rendered.text,
            "[image: image/png, 6 bytes]\n[audio: audio/wav, 2 bytes]"
        );
    }

    #[test]
    fn images_audio_and_embedded_pdfs_pass_through_as_parts_in_order() {
        let rendered = render(&result(json!({"content": [
            {"type": "text", "text": "a chart"},
            {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": "JVBERg=="}},
            {"type": "resource", "resource": {"uri": "file:///a.gz", "mimeType": "application/gzip", "blob": "AAAA"}},
            {"type": "image", "data": "not base64!", "mimeType": "image/png"}
        ]})));
        assert_eq!(
            rendered.attachments,
            [
                Part::image_bytes("image/png", &b"\x89PNG"[..]),
                Part::audio_bytes("audio/wav", &b"RIFF"[..]),
                Part::document_bytes("application/pdf", &b"%PDF"[..]).with_name("file:///r.pdf"),
            ]
        );
        // The text still says where each one was, for a model whose dialect cannot take it.
        assert!(
            rendered
                .text
                .starts_with("a chart\n[image: image/png, 4 bytes]")
        );
    }

    #[test]
    fn resources_inline_text_and_describe_blobs() {
        let rendered = render(&result(json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource", "resource": {"uri": "file:///a.gz", "mimeType": "application/gzip", "blob": "AAAA"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"}
        ]})));
        assert_eq!(
            rendered.text,
            "[resource file:///a.txt (text/plain)]\nhello\n\
             [resource file:///a.gz: application/gzip, 3 bytes]\n\
             [resource link: b file:///b]"
        );
    }

    #[test]
    fn structured_content_is_read_when_there_is_no_text() {
        let only = render(&result(
            json!({"content": [], "structuredContent": {"sum": 3}}),
        ));
        assert_eq!(only.text, r#"{"sum":3}"#);
        let with_text = render(&result(json!({
            "content": [{"type": "text", "text": "3"}],
            "structuredContent": {"sum": 3}
        })));
        assert_eq!(with_text.text, "3");
    }

    #[test]
    fn empty_and_error_results() {
        assert_eq!(render(&result(json!({"content": []}))).text, EMPTY_RESULT);
        let error = render(&result(json!({
            "content": [{"type": "text", "text": "no such file"}],
            "isError": true
        })));
        assert_eq!(error.text, "no such file");
        assert!(error.is_error);
    }

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(Bytes(1).to_string(), "1 byte");
        assert_eq!(Bytes(2048).to_string(), "2048 bytes");
        assert_eq!(Bytes(20 * 1024).to_string(), "20 KiB");
        assert_eq!(Bytes(30 * 1024 * 1024).to_string(), "30 MiB");
    }
}
