//! Citations of Anthropic text blocks (web search results, documents): each text block is a
//! block of its own, its citations kept on it as each citation's JSON text, byte for byte, and
//! sent back on that text to Anthropic; to the other providers the text goes without them.
//!
//! The real recording (a web search answer, pydantic-ai's cassette; see fixtures/README.md) is
//! assembled whole, fed one byte per read, and cut in two around each of its citations; what
//! the response holds is compared with the text blocks and citations read out of the `.sse`
//! file here, independently of the decoder. Hand-built streams cover what the recording does
//! not: citations listed in `content_block_start`, citations after the text, a cited block
//! without text, and the streams that cannot be kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::collections::HashMap;

use motet_directives::{AssistantBlock, LlmRequest, LlmResponse, Message, ProviderMeta};
use motet_providers::{Dialect, ProviderError, transcript};
use serde_json::Value;
use serde_json::value::RawValue;

const RECORDING: &str = "anthropic/web-search-citations-sonnet-4.sse";
const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/golden/anthropic/citations_replay.json"
);

/// One text block as the recording streams it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TextBlock {
    text: String,
    /// Each citation's JSON text, as it stands in the recording.
    citations: Vec<String>,
}

/// The recording's text blocks in order, read from its `data:` lines: the text of
/// `content_block_start` and of each `text_delta`, the `citations` of `content_block_start`
/// and the `citation` of each `citations_delta`. Blocks with neither text nor citations leave
/// nothing behind.
fn recorded_text_blocks(raw: &[u8]) -> Vec<TextBlock> {
    let mut blocks: Vec<(u64, TextBlock)> = Vec::new();
    let mut open: Option<u64> = None;
    for data in std::str::from_utf8(raw)
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
    {
        let event: HashMap<&str, &RawValue> = serde_json::from_str(data).unwrap();
        let kind: &str = serde_json::from_str(event["type"].get()).unwrap();
        let index = || serde_json::from_str::<u64>(event["index"].get()).unwrap();
        match kind {
            "content_block_start" => {
                let block: HashMap<&str, &RawValue> =
                    serde_json::from_str(event["content_block"].get()).unwrap();
                if serde_json::from_str::<&str>(block["type"].get()).unwrap() != "text" {
                    continue;
                }
                let citations = block.get("citations").map_or_else(Vec::new, |list| {
                    serde_json::from_str::<Vec<&RawValue>>(list.get())
                        .unwrap()
                        .iter()
                        .map(|c| c.get().to_owned())
                        .collect()
                });
                open = Some(index());
                blocks.push((
                    index(),
                    TextBlock {
                        text: serde_json::from_str(block["text"].get()).unwrap(),
                        citations,
                    },
                ));
            }
            "content_block_delta" if open == Some(index()) => {
                let delta: HashMap<&str, &RawValue> =
                    serde_json::from_str(event["delta"].get()).unwrap();
                let (_, block) = blocks.last_mut().unwrap();
                match serde_json::from_str::<&str>(delta["type"].get()).unwrap() {
                    "text_delta" => block
                        .text
                        .push_str(&serde_json::from_str::<String>(delta["text"].get()).unwrap()),
                    "citations_delta" => block.citations.push(delta["citation"].get().to_owned()),
                    other => panic!("a text block delta this reader does not know: {other}"),
                }
            }
            "content_block_stop" if open == Some(index()) => open = None,
            _ => {}
        }
    }
    blocks
        .into_iter()
        .map(|(_, block)| block)
        .filter(|block| !block.text.is_empty() || !block.citations.is_empty())
        .collect()
}

/// The response's text blocks, with their citations.
fn text_blocks(response: &LlmResponse) -> Vec<TextBlock> {
    response
        .message
        .blocks
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::Text { text, meta } => Some(TextBlock {
                text: text.clone(),
                citations: match meta.as_deref() {
                    None => Vec::new(),
                    Some(ProviderMeta::AnthropicCitations { citations }) => citations.clone(),
                    Some(other) => panic!("a text block with {other:?}"),
                },
            }),
            _ => None,
        })
        .collect()
}

fn all_citations(blocks: &[TextBlock]) -> Vec<&str> {
    blocks
        .iter()
        .flat_map(|b| b.citations.iter().map(String::as_str))
        .collect()
}

/// `body` assembled whole, fed one byte per read, and cut in two at each boundary `cuts`
/// yields: every way gives the same response.
fn assemble_every_way(body: &[u8], cuts: impl IntoIterator<Item = usize>) -> LlmResponse {
    let whole = transcript::assemble(Dialect::Anthropic, body).unwrap();
    let bytewise = transcript::assemble_chunked(Dialect::Anthropic, body.chunks(1));
    assert_eq!(bytewise.as_ref(), Ok(&whole), "fed one byte per read");
    for i in cuts {
        let cut = transcript::assemble_chunked(Dialect::Anthropic, [&body[..i], &body[i..]]);
        assert_eq!(cut.as_ref(), Ok(&whole), "cut at byte {i}");
    }
    whole
}

/// Every byte boundary within 64 bytes of each `citations_delta` event's start and end, and
/// every 211th elsewhere.
fn cuts_around_citations(raw: &[u8]) -> Vec<usize> {
    let text = std::str::from_utf8(raw).unwrap();
    let mut cuts: Vec<usize> = (0..=raw.len()).step_by(211).collect();
    for (at, _) in text.match_indices("\"citations_delta\"") {
        let start = text[..at].rfind("event:").unwrap();
        let end = at + text[at..].find("\n\n").unwrap() + 2;
        for edge in [start, end] {
            cuts.extend(edge.saturating_sub(64)..=(edge + 64).min(raw.len()));
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

fn recorded_response() -> LlmResponse {
    transcript::assemble(Dialect::Anthropic, &common::fixture(RECORDING)).unwrap()
}

/// The request after `response`: a prompt, the assembled turn, and a follow-up.
fn next_request(model: &str, response: &LlmResponse) -> LlmRequest {
    LlmRequest::new(
        model.parse().unwrap(),
        vec![
            Message::user("What is the weather in San Francisco today?"),
            Message::Assistant(response.message.clone()),
            Message::user("Thanks."),
        ],
    )
}

fn anthropic_body(response: &LlmResponse) -> String {
    let request = next_request("anthropic:claude-sonnet-4-5", response);
    String::from_utf8(Dialect::Anthropic.encode(&request).unwrap()).unwrap()
}

#[test]
fn each_text_block_keeps_the_citations_of_the_recording_in_order() {
    let raw = common::fixture(RECORDING);
    let response = assemble_every_way(&raw, cuts_around_citations(&raw));
    let recorded = recorded_text_blocks(&raw);

    // The reader above found what the recording holds: 7 citations over 5 text blocks, each
    // one's bytes standing in the file as they are.
    let citations = all_citations(&recorded);
    assert_eq!(citations.len(), 7);
    assert_eq!(
        recorded.iter().filter(|b| !b.citations.is_empty()).count(),
        5
    );
    let file = std::str::from_utf8(&raw).unwrap();
    for citation in &citations {
        assert!(file.contains(&format!("\"citation\":{citation}}}")));
    }

    // One block per recorded text block, each with its own text and its own citations.
    assert_eq!(text_blocks(&response), recorded);
    // The answer still reads as one text.
    let answer: String = recorded.iter().map(|b| b.text.as_str()).collect();
    assert_eq!(response.message.to_string(), answer);
}

#[test]
fn the_next_request_sends_each_citation_back_on_its_text_byte_for_byte() {
    let raw = common::fixture(RECORDING);
    let response = recorded_response();
    let recorded = recorded_text_blocks(&raw);
    let body = anthropic_body(&response);

    // Each citation's bytes, in order, in the body as sent.
    let mut from = 0;
    for citation in all_citations(&recorded) {
        let at = body[from..]
            .find(citation)
            .unwrap_or_else(|| panic!("a citation is not in the body byte for byte: {citation}"));
        from += at + citation.len();
    }

    // Each on its own text: the assistant turn's text blocks are the recorded ones, a cited
    // one carrying exactly its citations and a plain one none.
    let sent: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        sent,
        Dialect::Anthropic
            .render(&next_request("anthropic:claude-sonnet-4-5", &response))
            .unwrap()
    );
    let sent_texts: Vec<TextBlock> = sent["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "text")
        .map(|block| TextBlock {
            text: block["text"].as_str().unwrap().to_owned(),
            citations: block.get("citations").map_or_else(Vec::new, |list| {
                list.as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.to_string())
                    .collect()
            }),
        })
        .collect();
    let parsed = |blocks: &[TextBlock]| -> Vec<(String, Vec<Value>)> {
        blocks
            .iter()
            .map(|b| {
                let citations = b
                    .citations
                    .iter()
                    .map(|c| serde_json::from_str(c).unwrap())
                    .collect();
                (b.text.clone(), citations)
            })
            .collect()
    };
    assert_eq!(parsed(&sent_texts), parsed(&recorded));

    // And the whole body reads as the golden.
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(GOLDEN, &body).unwrap();
    }
    let golden = std::fs::read_to_string(GOLDEN).unwrap();
    assert_eq!(body, golden);
    for citation in all_citations(&recorded) {
        assert!(golden.contains(citation));
    }
}

/// A thread stores the turn as JSON; read back, it sends the same bytes.
#[test]
fn citations_survive_the_thread_and_replay_the_same_bytes() {
    let response = recorded_response();
    let stored = serde_json::to_string(&response).unwrap();
    let back: LlmResponse = serde_json::from_str(&stored).unwrap();
    assert_eq!(back, response);
    assert_eq!(anthropic_body(&back), anthropic_body(&response));
    let via_value: LlmResponse =
        serde_json::from_value(serde_json::from_str::<Value>(&stored).unwrap()).unwrap();
    assert_eq!(via_value, response);
}

/// To another provider the text goes and the citations do not; each cited block is counted
/// among the blocks left out, with the server tools' blocks.
#[test]
fn another_provider_gets_the_text_without_the_citations_and_they_are_counted() {
    let raw = common::fixture(RECORDING);
    let response = recorded_response();
    let recorded = recorded_text_blocks(&raw);
    let encrypted: Vec<String> = all_citations(&recorded)
        .iter()
        .map(|c| {
            let citation: Value = serde_json::from_str(c).unwrap();
            citation["encrypted_index"].as_str().unwrap().to_owned()
        })
        .collect();
    let opaque = response
        .message
        .blocks
        .iter()
        .filter(|b| matches!(b, AssistantBlock::Opaque { .. }))
        .count();
    for (dialect, model) in [
        (Dialect::OpenAiChat, "openai:gpt-5.2"),
        (Dialect::OpenAiResponses, "openai-responses:gpt-5.2"),
        (Dialect::Gemini, "gemini:gemini-3-pro-preview"),
    ] {
        let request = next_request(model, &response);
        let body = String::from_utf8(dialect.encode(&request).unwrap()).unwrap();
        let sent: Value = serde_json::from_str(&body).unwrap();
        let sent_text = sent.to_string();
        for block in &recorded {
            let escaped = Value::String(block.text.clone()).to_string();
            assert!(
                sent_text.contains(escaped.trim_matches('"')),
                "{dialect}: the text {:?} is missing",
                block.text
            );
        }
        for index in &encrypted {
            assert!(
                !body.contains(index.as_str()),
                "{dialect}: a citation was sent"
            );
        }
        assert!(!body.contains("web_search_result_location"), "{dialect}");
        assert_eq!(dialect.unreplayed_blocks(&request), opaque + 5, "{dialect}");
    }
    let to_anthropic = next_request("anthropic:claude-sonnet-4-5", &response);
    assert_eq!(Dialect::Anthropic.unreplayed_blocks(&to_anthropic), 0);
}

/// `motet-transcript` prints each text block's citations as received.
#[test]
fn the_transcript_tool_prints_the_citations() {
    let raw = common::fixture(RECORDING);
    let printed = common::transcript_json("anthropic", RECORDING);
    let printed_texts: Vec<TextBlock> = printed["message"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["block_type"] == "text")
        .map(|block| TextBlock {
            text: block["text"].as_str().unwrap().to_owned(),
            citations: match block.get("meta") {
                None => Vec::new(),
                Some(meta) => {
                    assert_eq!(meta["provider"], "anthropic_citations");
                    meta["citations"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|c| c.as_str().unwrap().to_owned())
                        .collect()
                }
            },
        })
        .collect();
    assert_eq!(printed_texts, recorded_text_blocks(&raw));
}

// ---------------------------------------------------------------- hand-built streams

/// A stream of the given blocks (`content_block` JSON text and its deltas), each started and
/// stopped in turn.
fn stream_of(blocks: &[(&str, &[&str])]) -> Vec<u8> {
    let mut out = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\"}}\n\n",
    );
    for (index, (block, deltas)) in blocks.iter().enumerate() {
        out.push_str(&format!(
            "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{block}}}\n\n"
        ));
        for delta in *deltas {
            out.push_str(&format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{delta}}}\n\n"
            ));
        }
        out.push_str(&format!(
            "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{index}}}\n\n"
        ));
    }
    out.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n");
    out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out.into_bytes()
}

fn text_delta(text: &str) -> String {
    format!(
        r#"{{"type":"text_delta","text":{}}}"#,
        Value::String(text.into())
    )
}

fn citations_delta(citation: &str) -> String {
    format!(r#"{{"type":"citations_delta","citation":{citation}}}"#)
}

fn strs(deltas: &[String]) -> Vec<&str> {
    deltas.iter().map(String::as_str).collect()
}

fn cited(text: &str, citations: &[&str]) -> AssistantBlock {
    AssistantBlock::Text {
        text: text.into(),
        meta: Some(Box::new(ProviderMeta::AnthropicCitations {
            citations: citations.iter().map(|c| (*c).to_owned()).collect(),
        })),
    }
}

/// Spacing, escapes, key order and numbers a re-serialization would each change.
const DOCUMENT: &str = r#"{ "type" : "char_location","cited_text":"caf\u00e9 \"Le Nord\"\n","document_index":0,"start_char_index":1.0e1,"end_char_index":42}"#;
const PAGE: &str = r#"{"type":"page_location","document_title":null,"start_page_number":3,"end_page_number":4,"cited_text":"é"}"#;
const SEARCH: &str = r#"{"type":"web_search_result_location","url":"https://a.example/?q=1&r=2","title":"A","encrypted_index":"Eo8B+/=","cited_text":"x"}"#;

#[test]
fn cited_blocks_stay_apart_from_their_neighbours_and_keep_every_citation() {
    let start_listed = format!(r#"{{"type":"text","text":"","citations":[{DOCUMENT} , {PAGE}]}}"#);
    let deltas_two = [citations_delta(SEARCH), text_delta("Cited ")];
    let deltas_three = [
        text_delta("text, "),
        text_delta("cited last."),
        citations_delta(DOCUMENT),
    ];
    let plain_text = [text_delta(" And plain.")];
    let body = stream_of(&[
        (r#"{"type":"text","text":"Before. "}"#, &[]),
        (&start_listed, &strs(&deltas_two)),
        (r#"{"type":"text","text":""}"#, &strs(&deltas_three)),
        (r#"{"type":"text","text":""}"#, &strs(&plain_text)),
        // Nothing streamed into it: nothing kept.
        (r#"{"type":"text","text":"","citations":[]}"#, &[]),
    ]);
    let response = assemble_every_way(&body, 0..=body.len());
    assert_eq!(
        response.message.blocks,
        [
            AssistantBlock::text("Before. "),
            cited("Cited ", &[DOCUMENT, PAGE, SEARCH]),
            cited("text, cited last.", &[DOCUMENT]),
            AssistantBlock::text(" And plain."),
        ]
    );

    // Back to Anthropic in the same blocks, each citation as it came.
    let sent = anthropic_body(&response);
    let expected = format!(
        concat!(
            r#"{{"content":[{{"text":"Before. ","type":"text"}},"#,
            r#"{{"citations":[{DOCUMENT},{PAGE},{SEARCH}],"text":"Cited ","type":"text"}},"#,
            r#"{{"citations":[{DOCUMENT}],"text":"text, cited last.","type":"text"}},"#,
            r#"{{"text":" And plain.","type":"text"}}],"role":"assistant"}}"#
        ),
        DOCUMENT = DOCUMENT,
        PAGE = PAGE,
        SEARCH = SEARCH,
    );
    assert!(sent.contains(&expected), "{sent}");
}

/// Anthropic never sends one, but a citation without text is still kept, on an empty block;
/// it cannot be sent back (Anthropic refuses empty text), and that is counted.
#[test]
fn citations_without_text_are_a_block_of_their_own() {
    let deltas = [citations_delta(SEARCH)];
    let body = stream_of(&[
        (r#"{"type":"text","text":"A"}"#, &[]),
        (r#"{"type":"text","text":""}"#, &strs(&deltas)),
    ]);
    let response = assemble_every_way(&body, 0..=body.len());
    assert_eq!(
        response.message.blocks,
        [AssistantBlock::text("A"), cited("", &[SEARCH])]
    );
    // Anthropic takes no empty text block: the request leaves it out, and says so.
    let request = next_request("anthropic:claude-sonnet-4-5", &response);
    assert!(!anthropic_body(&response).contains("a.example"));
    assert_eq!(Dialect::Anthropic.unreplayed_blocks(&request), 1);
}

#[test]
fn citations_that_cannot_be_kept_are_protocol_errors() {
    let text = r#"{"type":"text","text":""}"#;
    let citation = citations_delta(SEARCH);
    let cases: Vec<(&str, String)> = vec![
        // A list of citations that is not a list.
        (
            "listed citations that are not a list",
            String::from_utf8(stream_of(&[(
                r#"{"type":"text","text":"","citations":"none"}"#,
                &[],
            )]))
            .unwrap(),
        ),
        // A citation for a block that is not text.
        (
            "a citation on thinking",
            String::from_utf8(stream_of(&[(
                r#"{"type":"thinking","thinking":""}"#,
                &[citation.as_str()],
            )]))
            .unwrap(),
        ),
        // A cited block never stopped.
        (
            "a cited block never stopped",
            String::from_utf8(stream_of(&[(text, &[citation.as_str()])]))
                .unwrap()
                .replacen(
                    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
                    "",
                    1,
                ),
        ),
        // A cited block stopped after the next one started: its citations would land on the
        // other block's text.
        (
            "a cited block overlapping the next",
            String::from_utf8(stream_of(&[
                (text, &[citation.as_str(), r#"{"type":"text_delta","text":"a"}"#]),
                (r#"{"type":"text","text":"b"}"#, &[]),
            ]))
            .unwrap()
            .replacen(
                "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
                "",
                1,
            )
            .replacen(
                "event: message_delta",
                "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta",
                1,
            ),
        ),
    ];
    for (case, body) in cases {
        let result = transcript::assemble(Dialect::Anthropic, body.as_bytes());
        assert!(
            matches!(result, Err(ProviderError::Protocol { .. })),
            "{case}: {result:?}"
        );
    }
}

/// A citation the store damaged is left out of the request (the API would refuse it), and
/// its text still goes.
#[test]
fn a_damaged_stored_citation_is_left_out() {
    let response = LlmResponse::new(
        motet_directives::AssistantMessage {
            blocks: vec![cited("Cited.", &[SEARCH, "{not json"])],
            stop_reason: motet_directives::StopReason::EndTurn,
        },
        motet_directives::Usage::default(),
    );
    let sent = anthropic_body(&response);
    assert!(
        sent.contains(&format!(
            r#"{{"citations":[{SEARCH}],"text":"Cited.","type":"text"}}"#
        )),
        "{sent}"
    );
    let only_damaged = LlmResponse {
        message: motet_directives::AssistantMessage {
            blocks: vec![cited("Cited.", &["{not json"])],
            stop_reason: motet_directives::StopReason::EndTurn,
        },
        ..response
    };
    assert!(anthropic_body(&only_damaged).contains(r#"{"text":"Cited.","type":"text"}"#));
}
