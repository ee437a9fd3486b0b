//! Images, documents and audio in a request: what each dialect and known model takes, how
//! large they may be, and the small facts every renderer needs (audio format names, a URL's
//! media type).
//!
//! [`check_dialect`] and [`check_model`] run from [`crate::models::validate`], before anything
//! is sent (and the first from [`Dialect::render`] too): a part a dialect has no form for, or a
//! known model documents it cannot read, is a
//! [`ProviderError::UnsupportedContent`]; one past the dialect's size limits a
//! [`ProviderError::ContentTooLarge`]. A model the table does not know (and every
//! `openai-compat:` model) is not refused for what it might not read: the server decides.
//!
//! | dialect | image | document | audio | per part | per request |
//! |---|---|---|---|---|---|
//! | Chat Completions | URL or bytes | PDF bytes | WAV or MP3 bytes | 20 MB | 50 MB |
//! | Responses | URL or bytes | PDF, URL or bytes | — | 20 MB image, 50 MB file | 50 MB |
//! | Anthropic | URL or bytes | PDF or plain text, URL or bytes | — | 5 MB image, 32 MB document | 32 MB |
//! | Gemini | URL or bytes | URL or bytes | URL or bytes | 20 MB | 20 MB |
//!
//! Sizes count the bytes as sent, base64 (4 bytes for every 3), since that is what the
//! providers' request limits measure.

use motet_directives::{LlmRequest, MediaSource, Message, Part, PartKind};

use crate::dialect::Dialect;
use crate::error::ProviderError;
use crate::models::capabilities;

const MB: usize = 1024 * 1024;

/// The most one part may carry, base64, in `dialect`.
fn part_limit(dialect: Dialect, kind: PartKind) -> usize {
    match (dialect, kind) {
        (Dialect::Anthropic, PartKind::Image) => 5 * MB,
        (Dialect::Anthropic, _) => 32 * MB,
        (Dialect::OpenAiResponses, PartKind::Document) => 50 * MB,
        (Dialect::OpenAiChat | Dialect::OpenAiResponses | Dialect::Gemini, _) => 20 * MB,
    }
}

/// The most all the parts of one request may carry, base64, in `dialect`.
fn request_limit(dialect: Dialect) -> usize {
    match dialect {
        Dialect::OpenAiChat | Dialect::OpenAiResponses => 50 * MB,
        Dialect::Anthropic => 32 * MB,
        Dialect::Gemini => 20 * MB,
    }
}

/// Every media part of the request: the user messages' parts and the tool results'
/// attachments, in order.
fn media_parts(req: &LlmRequest) -> impl Iterator<Item = &Part> {
    req.messages.iter().flat_map(|message| {
        let parts: Box<dyn Iterator<Item = &Part>> = match message {
            Message::User { content } => Box::new(content.media()),
            Message::ToolResults { results } => Box::new(
                results
                    .iter()
                    .flat_map(|r| r.attachments.iter())
                    .filter(|p| p.kind() != PartKind::Text),
            ),
            _ => Box::new(std::iter::empty()),
        };
        parts
    })
}

/// The size a part has in the request body: its bytes as base64, or its URL.
fn sent_len(part: &Part) -> usize {
    match part.source() {
        Some(MediaSource::Bytes { data, .. }) => data.base64_len(),
        Some(MediaSource::Url { url, .. }) => url.len(),
        None => 0,
    }
}

/// Checks that every image, document and sound in the request is one the dialect can carry,
/// within the dialect's size limits. [`crate::Dialect::render`] and `encode` run it too.
///
/// # Errors
/// [`ProviderError::UnsupportedContent`] naming the part's kind and why, or
/// [`ProviderError::ContentTooLarge`] naming the limit.
pub(crate) fn check_dialect(dialect: Dialect, req: &LlmRequest) -> Result<(), ProviderError> {
    let mut total = 0_usize;
    for part in media_parts(req) {
        let kind = part.kind();
        if let Some(reason) = dialect_refuses(dialect, part) {
            return Err(ProviderError::UnsupportedContent {
                dialect,
                model: req.model.to_string(),
                kind: kind.as_str(),
                reason,
            });
        }
        let size = sent_len(part);
        let limit = part_limit(dialect, kind);
        if size > limit {
            return Err(ProviderError::ContentTooLarge {
                what: format!("one {kind} part"),
                size,
                limit,
            });
        }
        total = total.saturating_add(size);
    }
    let limit = request_limit(dialect);
    if total > limit {
        return Err(ProviderError::ContentTooLarge {
            what: "the images, documents and audio of one request".to_owned(),
            size: total,
            limit,
        });
    }
    Ok(())
}

/// Checks that a known model reads every image, document and sound of the request (the
/// capability table in [`crate::models`]); a model the table does not know is let through.
///
/// # Errors
/// [`ProviderError::UnsupportedContent`] naming the model and the part's kind.
pub(crate) fn check_model(dialect: Dialect, req: &LlmRequest) -> Result<(), ProviderError> {
    let Some(caps) = capabilities(&req.model) else {
        return Ok(());
    };
    match media_parts(req).find(|part| !caps.inputs.reads(part)) {
        Some(part) => Err(ProviderError::UnsupportedContent {
            dialect,
            model: req.model.to_string(),
            kind: part.kind().as_str(),
            reason: format!("the model does not read {} input", kind_name(part)),
        }),
        None => Ok(()),
    }
}

/// What the kind is called in an error: `image`, `PDF`, `text document`, `audio`.
fn kind_name(part: &Part) -> &'static str {
    match part {
        Part::Document { source, .. } if is_pdf(source) => "PDF",
        Part::Document { .. } => "document",
        other => other.kind().as_str(),
    }
}

fn is_pdf(source: &MediaSource) -> bool {
    source.media_type() == Some("application/pdf")
        || matches!(source, MediaSource::Url { url, media_type: None } if url.to_ascii_lowercase().ends_with(".pdf"))
}

/// Why `dialect` has no form for `part`, if it has none.
fn dialect_refuses(dialect: Dialect, part: &Part) -> Option<String> {
    let source = part.source()?;
    let is_url = matches!(source, MediaSource::Url { .. });
    let media_type = source.media_type().unwrap_or("");
    match (dialect, part.kind()) {
        (_, PartKind::Text) => None,
        (Dialect::Gemini, _) => (is_url && url_media_type(source).is_none()).then(|| {
            "Gemini's fileData needs a media type; give the URL one or a known extension".to_owned()
        }),
        (Dialect::OpenAiChat, PartKind::Audio) => {
            if is_url {
                Some("Chat Completions takes audio as bytes only (input_audio)".to_owned())
            } else if audio_format(media_type).is_none() {
                Some(format!(
                    "Chat Completions takes WAV or MP3 audio, not `{media_type}`"
                ))
            } else {
                None
            }
        }
        (_, PartKind::Audio) => Some(format!("{dialect} has no audio input")),
        (Dialect::OpenAiChat, PartKind::Document) if is_url => {
            Some("Chat Completions takes a document as bytes only (file_data)".to_owned())
        }
        (Dialect::OpenAiChat | Dialect::OpenAiResponses, PartKind::Document)
            if !is_url && media_type != "application/pdf" =>
        {
            Some(format!("OpenAI takes PDF documents, not `{media_type}`"))
        }
        (Dialect::Anthropic, PartKind::Document)
            if !is_url && !matches!(media_type, "application/pdf" | "text/plain") =>
        {
            Some(format!(
                "Anthropic takes PDF or plain-text documents, not `{media_type}`"
            ))
        }
        (Dialect::Anthropic, PartKind::Image)
            if !is_url
                && !matches!(
                    media_type,
                    "image/jpeg" | "image/png" | "image/gif" | "image/webp"
                ) =>
        {
            Some(format!(
                "Anthropic takes JPEG, PNG, GIF or WebP images, not `{media_type}`"
            ))
        }
        _ => None,
    }
}

/// OpenAI's name for an audio media type: `wav` or `mp3`.
pub(crate) fn audio_format(media_type: &str) -> Option<&'static str> {
    match media_type {
        "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    }
}

/// A URL part's media type: the one it was given, or one its extension names.
pub(crate) fn url_media_type(source: &MediaSource) -> Option<&str> {
    let MediaSource::Url { url, media_type } = source else {
        return source.media_type();
    };
    if let Some(given) = media_type {
        return Some(given);
    }
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "flac" => "audio/flac",
        "ogg" => "audio/ogg",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_media_types_come_from_the_extension_when_not_given() {
        let url = |u: &str| MediaSource::Url {
            url: u.into(),
            media_type: None,
        };
        assert_eq!(
            url_media_type(&url("https://x/a.PNG?s=1")),
            Some("image/png")
        );
        assert_eq!(url_media_type(&url("https://x/a")), None);
        assert_eq!(
            url_media_type(&url("gs://b/doc.pdf")),
            Some("application/pdf")
        );
        assert_eq!(audio_format("audio/mpeg"), Some("mp3"));
        assert_eq!(audio_format("audio/ogg"), None);
    }
}
