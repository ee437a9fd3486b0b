//! Gemini parts motet does not model — `executableCode` and `codeExecutionResult` from the code
//! execution tool, and kinds Google adds later — kept as opaque blocks holding the part's JSON
//! exactly as received, in their place among the blocks, and written back byte for byte by
//! `Dialect::Gemini.encode` when the turn is replayed.
//!
//! The two recordings are real `streamGenerateContent?alt=sse` bodies (see the fixture README):
//! Gemini 3 Flash, whose `executableCode` part carries the turn's `thoughtSignature`, and
//! Gemini 2.5 Pro, whose first code parts are marked `thought: true`. Expectations are read
//! out of the recorded bytes, never from our output. The unknown part kind and the signature
//! cases are written by hand, in the shape of those recordings.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use motet_directives::{
    AssistantBlock, AssistantMessage, LlmRequest, LlmResponse, Message, ProviderMeta, StopReason,
};
use motet_providers::{Dialect, transcript};
use serde_json::Value;
use serde_json::value::RawValue;

const GEMINI_3: &str = "code-execution-thought-signature-gemini-3-flash.sse";
const GEMINI_2_5: &str = "code-execution-thought-parts-gemini-2.5-pro.sse";

fn bytes(name: &str) -> Vec<u8> {
    common::fixture(&format!("gemini/{name}"))
}

/// The candidate parts of every recorded chunk, in order, each as the exact text it had in the
/// recording (found by `RawValue`, which borrows the bytes rather than re-serializing them).
fn recorded_parts(raw: &[u8]) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow, default)]
        candidates: Vec<Candidate<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Candidate<'a> {
        #[serde(borrow)]
        content: Content<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Content<'a> {
        #[serde(borrow, default)]
        parts: Vec<&'a RawValue>,
    }
    let text = std::str::from_utf8(raw).unwrap();
    let mut parts = Vec::new();
    for line in text.split("\r\n") {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let chunk: Chunk<'_> = serde_json::from_str(data).unwrap();
        for candidate in chunk.candidates {
            parts.extend(candidate.content.parts.iter().map(|p| p.get().to_owned()));
        }
    }
    parts
}

/// The recorded parts that are neither text, thought text nor a function call.
fn recorded_code_parts(raw: &[u8]) -> Vec<String> {
    recorded_parts(raw)
        .into_iter()
        .filter(|part| {
            let value: Value = serde_json::from_str(part).unwrap();
            value.get("executableCode").is_some() || value.get("codeExecutionResult").is_some()
        })
        .collect()
}

/// The response, checked identical when the body is cut in two at every byte boundary.
fn assembled(name: &str) -> LlmResponse {
    let raw = bytes(name);
    let whole = transcript::assemble(Dialect::Gemini, &raw);
    for at in 0..=raw.len() {
        let cut = transcript::assemble_chunked(Dialect::Gemini, [&raw[..at], &raw[at..]]);
        assert_eq!(cut, whole, "{name}: differs when cut at byte {at}");
    }
    whole.unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn opaque_items(message: &AssistantMessage) -> Vec<&str> {
    message
        .blocks
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::Opaque { provider, item } => {
                assert_eq!(provider, "gemini");
                Some(item.as_str())
            }
            _ => None,
        })
        .collect()
}

fn text_of(message: &AssistantMessage) -> String {
    message
        .blocks
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The recorded answer text: every non-thought `text` part, in order.
fn recorded_text(raw: &[u8]) -> String {
    recorded_parts(raw)
        .iter()
        .filter_map(|part| {
            let value: Value = serde_json::from_str(part).unwrap();
            if value.get("thought") == Some(&Value::Bool(true)) {
                return None;
            }
            value.get("text")?.as_str().map(str::to_owned)
        })
        .collect()
}

/// The request that follows the turn: the question, the assembled turn, then a user message.
fn next_request(turn: &AssistantMessage) -> LlmRequest {
    LlmRequest::new(
        "gemini:gemini-3-flash-preview".parse().unwrap(),
        vec![
            Message::user("what is 65465-6544 * 65464-6+1.02255"),
            Message::Assistant(turn.clone()),
            Message::user("And divided by 3?"),
        ],
    )
}

/// Asserts that `needles` occur in `haystack`, byte for byte, in this order.
fn assert_in_order(haystack: &str, needles: &[&str]) {
    let mut from = 0;
    for needle in needles {
        let at = haystack[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} is not in the body after byte {from}"));
        from += at + needle.len();
    }
}

fn signature(meta: Option<&ProviderMeta>) -> Option<&str> {
    match meta {
        Some(ProviderMeta::Gemini { thought_signature }) => Some(thought_signature),
        _ => None,
    }
}

#[test]
fn gemini_3_code_parts_are_kept_in_place_with_their_signature() {
    let raw = bytes(GEMINI_3);
    let response = assembled(GEMINI_3);
    let message = &response.message;
    let recorded = recorded_code_parts(&raw);
    assert_eq!(recorded.len(), 2, "executableCode then codeExecutionResult");
    assert_eq!(opaque_items(message), recorded);

    // The code comes first, then its result, then the answer.
    assert!(
        matches!(&message.blocks[0], AssistantBlock::Opaque { item, .. } if *item == recorded[0])
    );
    assert!(
        matches!(&message.blocks[1], AssistantBlock::Opaque { item, .. } if *item == recorded[1])
    );
    assert_eq!(text_of(message), recorded_text(&raw));
    assert!(!text_of(message).is_empty());

    // The first signature rode on the code part: it is inside that item and nowhere else.
    let code: Value = serde_json::from_str(&recorded[0]).unwrap();
    let code_signature = code["thoughtSignature"].as_str().unwrap();
    let metas: Vec<_> = message
        .blocks
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::Text { meta, .. } => signature(meta.as_deref()),
            _ => None,
        })
        .collect();
    assert!(!metas.contains(&code_signature), "lent to a text block");
    // The last signature came alone on an empty text part at the end of the turn.
    let closing: Vec<_> = recorded_parts(&raw)
        .iter()
        .filter_map(|part| {
            let value: Value = serde_json::from_str(part).unwrap();
            (value.get("executableCode").is_none())
                .then(|| value.get("thoughtSignature")?.as_str().map(str::to_owned))
                .flatten()
        })
        .collect();
    assert_eq!(metas, closing);
    assert_eq!(message.stop_reason, StopReason::EndTurn);
}

#[test]
fn gemini_2_5_thought_marked_code_parts_are_kept_not_read_as_thoughts() {
    let raw = bytes(GEMINI_2_5);
    let response = assembled(GEMINI_2_5);
    let message = &response.message;
    let recorded = recorded_code_parts(&raw);
    assert_eq!(recorded.len(), 4, "two code/result pairs");
    assert_eq!(opaque_items(message), recorded);
    // The first pair is marked `thought: true` in the recording.
    let first: Value = serde_json::from_str(&recorded[0]).unwrap();
    assert_eq!(first["thought"], Value::Bool(true));
    assert!(
        !message
            .blocks
            .iter()
            .any(|block| matches!(block, AssistantBlock::Reasoning { .. })),
        "code parts are not reasoning"
    );
    // All four code parts come before the answer text.
    let kinds: Vec<_> = message
        .blocks
        .iter()
        .map(|block| match block {
            AssistantBlock::Opaque { .. } => "opaque",
            AssistantBlock::Text { .. } => "text",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["opaque", "opaque", "opaque", "opaque", "text"]);
    assert_eq!(text_of(message), recorded_text(&raw));
    assert_eq!(message.stop_reason, StopReason::EndTurn);
}

#[test]
fn replaying_a_turn_writes_its_code_parts_byte_for_byte_in_order() {
    for name in [GEMINI_3, GEMINI_2_5] {
        let raw = bytes(name);
        let response = assembled(name);
        let request = next_request(&response.message);
        let body = Dialect::Gemini.encode(&request).unwrap();
        let body = String::from_utf8(body).unwrap();
        let recorded = recorded_code_parts(&raw);
        let needles: Vec<&str> = recorded.iter().map(String::as_str).collect();
        assert_in_order(&body, &needles);

        // The `Value` form holds the same parts, parsed, in the model turn in block order.
        let value = Dialect::Gemini.render(&request).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            value,
            "{name}: encode and render disagree"
        );
        let model = &value["contents"][1];
        assert_eq!(model["role"], "model");
        let parts = model["parts"].as_array().unwrap();
        let opaque: Vec<&Value> = parts
            .iter()
            .filter(|part| {
                part.get("executableCode").is_some() || part.get("codeExecutionResult").is_some()
            })
            .collect();
        let expected: Vec<Value> = recorded
            .iter()
            .map(|part| serde_json::from_str(part).unwrap())
            .collect();
        assert_eq!(opaque.into_iter().cloned().collect::<Vec<_>>(), expected);
        assert!(
            parts[0].get("executableCode").is_some(),
            "{name}: the code comes first"
        );
    }
}

/// An invented part kind with odd spacing, escapes, key order and a number serde would
/// rewrite: it must come back exactly as it went in.
const ODD_PART: &str = r#"{ "zebraPart" :{"b":1.50,"a":"\u00e9\"\n\/" , "n": 1e2},  "thoughtSignature":"c2lnLW9kZA==" }"#;

fn stream_of(parts: &[&str]) -> Vec<u8> {
    parts
        .iter()
        .map(|parts| {
            format!(
                "data: {{\"candidates\": [{{\"content\": {{\"parts\": [{parts}],\"role\": \"model\"}},\"index\": 0}}]}}\r\n\r\n"
            )
        })
        .chain([
            "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}]}\r\n\r\n".to_owned(),
        ])
        .collect::<String>()
        .into_bytes()
}

#[test]
fn an_unknown_part_kind_survives_byte_for_byte() {
    let raw = stream_of(&[ODD_PART, r#"{"text": "After."}"#]);
    let response = transcript::assemble(Dialect::Gemini, &raw).unwrap();
    for at in 0..=raw.len() {
        let cut = transcript::assemble_chunked(Dialect::Gemini, [&raw[..at], &raw[at..]]);
        assert_eq!(cut.as_ref().ok(), Some(&response), "cut at byte {at}");
    }
    assert_eq!(
        response.message.blocks,
        [
            AssistantBlock::Opaque {
                provider: "gemini".into(),
                item: ODD_PART.trim().into(),
            },
            AssistantBlock::text("After."),
        ]
    );
    let body = Dialect::Gemini
        .encode(&next_request(&response.message))
        .unwrap();
    let body = String::from_utf8(body).unwrap();
    assert_in_order(&body, &[ODD_PART.trim(), "After."]);
    // The placeholder signature is for turns Gemini did not write; this one it did.
    assert!(!body.contains("skip_thought_signature_validator"));
}

#[test]
fn a_signature_on_a_code_part_is_not_lent_to_the_text_after_it() {
    let code = r#"{"executableCode": {"language": "PYTHON","code": "print(1)"},"thoughtSignature": "c2lnLWNvZGU="}"#;
    let raw = stream_of(&[code, r#"{"text": "One."}"#]);
    let response = transcript::assemble(Dialect::Gemini, &raw).unwrap();
    assert_eq!(
        response.message.blocks,
        [
            AssistantBlock::Opaque {
                provider: "gemini".into(),
                item: code.into(),
            },
            AssistantBlock::Text {
                text: "One.".into(),
                meta: None,
            },
        ]
    );
}

#[test]
fn a_signature_only_part_still_keeps_its_signature() {
    let raw = stream_of(&[
        r#"{"text": "Two."}"#,
        r#"{"thoughtSignature": "c2lnLWVuZA=="}"#,
    ]);
    let response = transcript::assemble(Dialect::Gemini, &raw).unwrap();
    assert_eq!(
        response.message.blocks,
        [
            AssistantBlock::text("Two."),
            AssistantBlock::Text {
                text: String::new(),
                meta: Some(Box::new(ProviderMeta::Gemini {
                    thought_signature: "c2lnLWVuZA==".into()
                })),
            },
        ]
    );
}

#[test]
fn another_providers_opaque_blocks_are_not_sent_to_gemini() {
    let turn = AssistantMessage {
        blocks: vec![
            AssistantBlock::Opaque {
                provider: "openai".into(),
                item: r#"{"type":"web_search_call","id":"ws_1"}"#.into(),
            },
            AssistantBlock::text("Found it."),
        ],
        stop_reason: StopReason::EndTurn,
    };
    let body = String::from_utf8(Dialect::Gemini.encode(&next_request(&turn)).unwrap()).unwrap();
    assert!(!body.contains("web_search_call"));
    let value = Dialect::Gemini.render(&next_request(&turn)).unwrap();
    assert_eq!(
        value["contents"][1]["parts"],
        serde_json::json!([{"text": "Found it."}])
    );
}

/// The parts of the assistant turn `code_part` and a `weather` call make, as the next request
/// sends them back.
fn replayed_parts(code_part: &str) -> serde_json::Value {
    let raw = stream_of(&[
        code_part,
        r#"{"functionCall": {"name": "weather","args": {"city": "Rome"}}}"#,
    ]);
    let response = transcript::assemble(Dialect::Gemini, &raw).unwrap();
    let value = Dialect::Gemini
        .render(&next_request(&response.message))
        .unwrap();
    value["contents"][1]["parts"].clone()
}

#[test]
fn a_turn_whose_signature_rode_on_a_code_part_gets_no_placeholder() {
    let code = r#"{"executableCode": {"language": "PYTHON","code": "print(2)"},"thoughtSignature": "c2lnLWNhbGw="}"#;
    let parts = replayed_parts(code);
    assert_eq!(parts[0]["thoughtSignature"], "c2lnLWNhbGw=");
    assert_eq!(parts[1]["functionCall"]["name"], "weather");
    assert!(
        parts[1].get("thoughtSignature").is_none(),
        "Gemini signed this turn on its code part; no signature is invented for the call"
    );

    // Without a signature anywhere, the turn's first call gets the placeholder as before.
    let unsigned = r#"{"executableCode": {"language": "PYTHON","code": "print(2)"}}"#;
    let parts = replayed_parts(unsigned);
    assert!(parts[0].get("thoughtSignature").is_none());
    assert_eq!(
        parts[1]["thoughtSignature"],
        "skip_thought_signature_validator"
    );
}

#[test]
fn motet_transcript_prints_the_code_parts_in_order() {
    let printed = common::transcript_json("gemini", &format!("gemini/{GEMINI_3}"));
    let blocks = printed["message"]["blocks"].as_array().unwrap();
    let kinds: Vec<&str> = blocks
        .iter()
        .map(|block| block["block_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["opaque", "opaque", "text", "text"]);
    let items: Vec<&str> = blocks
        .iter()
        .filter_map(|block| block["item"].as_str())
        .collect();
    assert_eq!(items, recorded_code_parts(&bytes(GEMINI_3)));
}
