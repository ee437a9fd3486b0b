//! Signals as NATS messages: the CloudEvents NATS protocol binding.
//!
//! motet publishes in *structured* mode: the payload is the signal's JSON envelope (the
//! CloudEvents JSON format) and the `Content-Type` header says `application/cloudevents+json`.
//! Structured mode is the one every version of the binding defines (binary mode came with NATS
//! headers, in its later drafts), it keeps every attribute with its JSON type (an integer
//! extension stays an integer; a header would make it a string), and the envelope can be
//! forwarded across hops and protocols unchanged.
//!
//! Both modes are read. A message is binary-mode when it has a `ce-` header and its content type
//! is not a CloudEvents format: each `ce-NAME` header is the attribute `NAME`, `Content-Type` is
//! `datacontenttype`, and the payload is the data. Header names are matched whatever their case
//! (`CE-Type`, `ce-type`): CloudEvents says header names are case-insensitive, and NATS keeps
//! the case a publisher wrote.

use async_nats::HeaderMap;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use motet_signals::Signal;
use serde_json::{Map, Value};

/// The media type of a structured-mode payload.
pub const STRUCTURED_CONTENT_TYPE: &str = "application/cloudevents+json";

/// The size of a message on the wire as NATS counts it against `max_payload`: the header block
/// (`NATS/1.0\r\n`, each `name: value\r\n`, a blank line) and the payload.
pub fn size(headers: &HeaderMap, payload: &[u8]) -> usize {
    let block: usize = headers
        .iter()
        .flat_map(|(name, values)| {
            let name: &str = name.as_ref();
            values
                .iter()
                .map(move |value| name.len() + ": ".len() + value.as_str().len() + "\r\n".len())
        })
        .sum();
    let headers = if headers.is_empty() {
        0
    } else {
        "NATS/1.0\r\n".len() + block + "\r\n".len()
    };
    headers + payload.len()
}

/// The structured-mode payload and headers of `signal` (`Content-Type`, `Nats-Msg-Id`).
///
/// # Errors
/// The serializer's message when the envelope cannot be written (it can for no signal motet
/// builds).
pub fn encode(signal: &Signal, message_id: &str) -> Result<(HeaderMap, Bytes), String> {
    let json = signal.to_json().map_err(|e| e.to_string())?;
    let mut headers = HeaderMap::new();
    headers.insert("Content-Type", STRUCTURED_CONTENT_TYPE);
    headers.insert(async_nats::header::NATS_MESSAGE_ID, message_id);
    Ok((headers, Bytes::from(json)))
}

/// The last value of header `name`, whatever the case of the name it was sent under.
pub fn header<'a>(headers: Option<&'a HeaderMap>, name: &str) -> Option<&'a str> {
    headers?
        .iter()
        .find(|(key, _)| AsRef::<str>::as_ref(*key).eq_ignore_ascii_case(name))
        .and_then(|(_, values)| values.last())
        .map(|value| value.as_str())
}

/// Whether `media` (parameters allowed) is JSON: `application/json` or a `+json` type.
fn is_json(media: &str) -> bool {
    let essence = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// Reads a NATS message as a signal, in either content mode.
///
/// # Errors
/// Why it is not a signal (the envelope's error from motet's strict parser, or what the
/// binding itself rejects), for the dead letters.
pub fn decode(headers: Option<&HeaderMap>, payload: &[u8]) -> Result<Signal, String> {
    let content_type = header(headers, "content-type");
    let structured = content_type.is_some_and(|media| {
        media
            .trim()
            .to_ascii_lowercase()
            .starts_with("application/cloudevents")
    });
    let binary = !structured
        && headers.is_some_and(|h| {
            h.iter()
                .any(|(name, _)| ce_attribute(name.as_ref()).is_some())
        });
    if binary {
        return decode_binary(headers, content_type, payload);
    }
    if let Some(media) = content_type.filter(|_| structured) {
        let essence = media
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if essence != STRUCTURED_CONTENT_TYPE {
            return Err(format!(
                "unsupported event format `{media}` (only {STRUCTURED_CONTENT_TYPE})"
            ));
        }
    }
    let text = std::str::from_utf8(payload)
        .map_err(|e| format!("the structured-mode payload is not UTF-8: {e}"))?;
    Signal::from_json(text).map_err(|e| format!("not a CloudEvents envelope: {e}"))
}

/// The attribute a `ce-` header carries (`ce-Type` → `type`), or `None` for another header.
fn ce_attribute(name: &str) -> Option<String> {
    let prefix = name.get(..3)?;
    prefix
        .eq_ignore_ascii_case("ce-")
        .then(|| name[3..].to_ascii_lowercase())
}

fn decode_binary(
    headers: Option<&HeaderMap>,
    content_type: Option<&str>,
    payload: &[u8],
) -> Result<Signal, String> {
    let mut envelope = Map::new();
    for (name, values) in headers.into_iter().flat_map(HeaderMap::iter) {
        let Some(attribute) = ce_attribute(name.as_ref()) else {
            continue;
        };
        if attribute == "data" || attribute == "data_base64" || attribute == "datacontenttype" {
            return Err(format!(
                "`{name}` is not an attribute header in binary mode"
            ));
        }
        if let Some(value) = values.last() {
            envelope.insert(attribute, Value::String(value.as_str().to_owned()));
        }
    }
    if let Some(media) = content_type {
        envelope.insert("datacontenttype".into(), Value::String(media.to_owned()));
    }
    if !payload.is_empty() {
        let json = match content_type {
            Some(media) if is_json(media) => {
                Some(serde_json::from_slice::<Value>(payload).map_err(|e| {
                    format!("the payload is not the JSON its content type says: {e}")
                })?)
            }
            // No content type: JSON if it reads as JSON, otherwise bytes.
            None => serde_json::from_slice::<Value>(payload).ok(),
            Some(_) => None,
        };
        let text = content_type
            .filter(|media| media.trim().to_ascii_lowercase().starts_with("text/"))
            .and_then(|_| std::str::from_utf8(payload).ok());
        match (json, text) {
            (Some(value), _) => envelope.insert("data".into(), value),
            (None, Some(text)) => envelope.insert("data".into(), Value::String(text.to_owned())),
            (None, None) => {
                envelope.insert("data_base64".into(), Value::String(BASE64.encode(payload)))
            }
        };
    }
    Signal::from_json_value(Value::Object(envelope))
        .map_err(|e| format!("not a binary-mode CloudEvent: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use motet_signals::SignalData;

    fn signal() -> Signal {
        Signal::builder("task.done", "/agents/a")
            .with_id("s-1")
            .with_data(serde_json::json!({"n": 1}))
            .with_extension("attempt", 3)
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_structured_message_round_trips_with_its_typed_extensions() {
        let sent = signal();
        let (headers, payload) = encode(&sent, "mid").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            header(Some(&headers), "CONTENT-TYPE"),
            Some(STRUCTURED_CONTENT_TYPE)
        );
        assert_eq!(header(Some(&headers), "nats-msg-id"), Some("mid"));
        let back = decode(Some(&headers), &payload).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, sent);
        assert_eq!(back.extension("attempt"), Some(&serde_json::json!(3)));
        // No headers at all: still a structured envelope.
        assert_eq!(decode(None, &payload), Ok(sent));
    }

    #[test]
    fn binary_mode_headers_are_read_whatever_their_case() {
        let mut headers = HeaderMap::new();
        headers.insert("CE-SpecVersion", "1.0");
        headers.insert("Ce-Id", "b-1");
        headers.insert("ce-SOURCE", "/ext");
        headers.insert("CE-Type", "task.done");
        headers.insert("ce-threadid", "t-9");
        headers.insert("CONTENT-TYPE", "application/json");
        let s = decode(Some(&headers), br#"{"ok":true}"#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.id().as_str(), "b-1");
        assert_eq!(s.source(), "/ext");
        assert_eq!(s.signal_type().as_str(), "task.done");
        assert_eq!(s.thread_id(), Some("t-9"));
        assert_eq!(s.data_content_type(), Some("application/json"));
        assert_eq!(s.data(), &SignalData::Json(serde_json::json!({"ok": true})));
    }

    #[test]
    fn binary_mode_data_is_json_text_or_bytes_by_content_type() {
        let base = || {
            let mut h = HeaderMap::new();
            h.insert("ce-specversion", "1.0");
            h.insert("ce-id", "1");
            h.insert("ce-source", "/x");
            h.insert("ce-type", "a.b");
            h
        };
        let mut text = base();
        text.insert("content-type", "text/plain");
        let s = decode(Some(&text), b"hello").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.data(), &SignalData::Json(serde_json::json!("hello")));
        let mut bytes = base();
        bytes.insert("content-type", "application/octet-stream");
        let s = decode(Some(&bytes), &[0, 159, 1]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.data(), &SignalData::Binary(vec![0, 159, 1]));
        let s = decode(Some(&base()), b"").unwrap_or_else(|e| panic!("{e}"));
        assert!(s.data().is_none());
        let mut bad_json = base();
        bad_json.insert("content-type", "application/json");
        assert!(decode(Some(&bad_json), b"{nope").is_err());
    }

    #[test]
    fn what_is_not_a_signal_says_why() {
        let mut missing = HeaderMap::new();
        missing.insert("ce-specversion", "1.0");
        missing.insert("ce-type", "a.b");
        let err = decode(Some(&missing), b"").unwrap_err();
        assert!(err.contains("id"), "{err}");
        assert!(
            decode(None, b"plain text")
                .unwrap_err()
                .contains("not a CloudEvents envelope")
        );
        assert!(decode(None, &[0xff, 0xfe]).unwrap_err().contains("UTF-8"));
        let mut other_format = HeaderMap::new();
        other_format.insert("content-type", "application/cloudevents+avro");
        assert!(
            decode(Some(&other_format), b"{}")
                .unwrap_err()
                .contains("unsupported")
        );
    }
}
