//! Recorded OpenAI Responses streams with server-side tool items (`web_search_call`,
//! `code_interpreter_call`, `mcp_list_tools`, `mcp_call`, `file_search_call`): motet does not
//! model these items, so each is kept as an opaque block holding the item's JSON text exactly
//! as `response.output_item.done` delivered it, and sent back in place, byte for byte, in the
//! next request to OpenAI — and never to another provider.
//!
//! Every expectation is read out of the recording itself (tests/fixtures/README.md names the
//! sources): the items, their order among the reasoning items and messages, their bytes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use motet_directives::{AssistantBlock, LlmRequest, LlmResponse, Message, ProviderMeta};
use motet_providers::{Dialect, transcript};
use serde::Deserialize;
use serde_json::value::RawValue;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/openai_responses");

/// The recordings, with the model each request names.
const RECORDINGS: [(&str, &str); 4] = [
    ("web-search-call-gpt-5", "openai-responses:gpt-5"),
    ("code-interpreter-calls-gpt-5", "openai-responses:gpt-5"),
    (
        "mcp-list-tools-mcp-call-o4-mini",
        "openai-responses:o4-mini",
    ),
    ("file-search-call-gpt-4o", "openai-responses:gpt-4o"),
];

fn recording(name: &str) -> Vec<u8> {
    common::fixture(&format!("openai-responses/{name}.sse"))
}

/// One `response.output_item.done` payload, its item kept as the text it was sent as.
#[derive(Deserialize)]
struct ItemDone<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    item: Option<&'a RawValue>,
}

/// What the recording says one output item is.
#[derive(Debug, Clone, PartialEq)]
enum Recorded {
    /// A reasoning item: its id, and whether it can be replayed (it has `encrypted_content`).
    Reasoning { id: String, replayable: bool },
    /// An assistant message: its text.
    Message { text: String },
    /// Any other item: its exact JSON text.
    Item { kind: String, text: String },
}

/// The items of the recording's `response.output_item.done` events, in stream order.
fn recorded_items(raw: &[u8]) -> Vec<Recorded> {
    let raw = std::str::from_utf8(raw).unwrap();
    let mut items = Vec::new();
    for data in raw.lines().filter_map(|line| line.strip_prefix("data: ")) {
        let event: ItemDone<'_> = serde_json::from_str(data).unwrap();
        let (Some(item), "response.output_item.done") = (event.item, event.kind) else {
            continue;
        };
        let value: serde_json::Value = serde_json::from_str(item.get()).unwrap();
        let kind = value["type"].as_str().unwrap();
        items.push(match kind {
            "reasoning" => Recorded::Reasoning {
                id: value["id"].as_str().unwrap().to_owned(),
                replayable: value["encrypted_content"].is_string(),
            },
            "message" => Recorded::Message {
                text: value["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect(),
            },
            _ => Recorded::Item {
                kind: kind.to_owned(),
                text: item.get().to_owned(),
            },
        });
    }
    items
}

/// The assembled turn, block by block, in the terms of [`Recorded`].
fn blocks_as_recorded(response: &LlmResponse) -> Vec<Recorded> {
    response
        .message
        .blocks
        .iter()
        .map(|block| match (block, block.meta()) {
            (
                AssistantBlock::Reasoning { .. },
                Some(ProviderMeta::OpenAi {
                    id,
                    encrypted_content,
                }),
            ) => Recorded::Reasoning {
                id: id.clone(),
                replayable: encrypted_content.is_some(),
            },
            (AssistantBlock::Text { text, .. }, _) => Recorded::Message { text: text.clone() },
            (AssistantBlock::Opaque { provider, item }, _) => {
                assert_eq!(provider, "openai");
                let value: serde_json::Value = serde_json::from_str(item).unwrap();
                Recorded::Item {
                    kind: value["type"].as_str().unwrap().to_owned(),
                    text: item.clone(),
                }
            }
            (other, _) => panic!("a block the recording has no item for: {other:?}"),
        })
        .collect()
}

/// The recording assembled whole, checked to assemble identically when cut in two at each of
/// `cuts` (an SSE line, a JSON string, a UTF-8 character split across reads).
fn assembled_cut_at(name: &str, cuts: impl IntoIterator<Item = usize>) -> LlmResponse {
    let raw = recording(name);
    let whole = transcript::assemble(Dialect::OpenAiResponses, &raw)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    for i in cuts {
        let cut = transcript::assemble_chunked(Dialect::OpenAiResponses, [&raw[..i], &raw[i..]]);
        assert_eq!(
            cut.as_ref(),
            Ok(&whole),
            "{name}: differs when cut at byte {i}"
        );
    }
    whole
}

/// Where a cut can change what a server-side item becomes: every byte boundary of the
/// `output_item.done` event that delivers each server-side item (the text kept and replayed),
/// and the few boundaries around every other event's start.
/// Every boundary of every recording is a read boundary in
/// [`every_recording_fed_one_byte_per_read_assembles_as_fed_whole`]; cutting all of a 100 KB
/// recording in two at every boundary takes minutes in a debug build, and that sweep is
/// [`every_recording_cut_at_every_byte_boundary`], run with `--ignored`.
fn cuts_around_items(raw: &[u8]) -> Vec<usize> {
    let ids: Vec<String> = recorded_items(raw)
        .into_iter()
        .filter_map(|item| match item {
            Recorded::Item { text, .. } => {
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                Some(value["id"].as_str().unwrap().to_owned())
            }
            _ => None,
        })
        .collect();
    let text = std::str::from_utf8(raw).unwrap();
    let mut cuts = Vec::new();
    let mut start = 0;
    for event in text.split_inclusive("\n\n") {
        let end = start + event.len();
        let delivers = |id: &String| {
            event.contains(r#""type":"response.output_item.done""#)
                && event.contains(&format!(r#""item":{{"id":"{id}""#))
        };
        if ids.iter().any(delivers) {
            cuts.extend(start..=end);
        } else {
            cuts.extend(start.saturating_sub(2)..=(start + 2).min(raw.len()));
        }
        start = end;
    }
    cuts.dedup();
    cuts
}

/// The request after the recorded turn: its prompt, the assembled turn, and a new question.
fn next_request(model: &str, response: &LlmResponse) -> LlmRequest {
    LlmRequest::new(
        model.parse().unwrap(),
        vec![
            Message::user("Please answer the question above."),
            Message::Assistant(response.message.clone()),
            Message::user("Thanks. And tomorrow?"),
        ],
    )
}

/// Where each replayable recorded item must appear in the bytes sent: the item's own text for
/// an opaque item, the reasoning item's id, the message's text as a JSON string.
fn markers(items: &[Recorded]) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| match item {
            Recorded::Reasoning {
                id,
                replayable: true,
            } => Some(format!(r#""id":"{id}""#)),
            Recorded::Reasoning { .. } => None,
            Recorded::Message { text } => Some(serde_json::to_string(text).unwrap()),
            Recorded::Item { text, .. } => Some(text.clone()),
        })
        .collect()
}

#[test]
fn each_recording_keeps_its_server_side_items_in_order_whole_and_cut_anywhere() {
    for (name, _) in RECORDINGS {
        let raw = recording(name);
        let expected = recorded_items(&raw);
        assert!(
            expected
                .iter()
                .any(|item| matches!(item, Recorded::Item { .. })),
            "{name} records no server-side item"
        );
        let response = assembled_cut_at(name, cuts_around_items(&raw));
        assert_eq!(blocks_as_recorded(&response), expected, "{name}");
    }
}

/// The shortest recording, cut in two at every byte boundary.
#[test]
fn the_file_search_recording_assembles_the_same_cut_at_every_byte_boundary() {
    let (name, _) = RECORDINGS[3];
    let len = recording(name).len();
    let response = assembled_cut_at(name, 0..=len);
    assert_eq!(
        blocks_as_recorded(&response),
        recorded_items(&recording(name))
    );
}

/// Every recording fed one byte per read: every byte boundary is then a read boundary (an SSE
/// line, a JSON string, a UTF-8 character split across reads), in one linear pass.
#[test]
fn every_recording_fed_one_byte_per_read_assembles_as_fed_whole() {
    for (name, _) in RECORDINGS {
        let raw = recording(name);
        let whole = transcript::assemble(Dialect::OpenAiResponses, &raw)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let bytewise = transcript::assemble_chunked(Dialect::OpenAiResponses, raw.chunks(1))
            .unwrap_or_else(|e| panic!("{name}, byte by byte: {e}"));
        assert_eq!(bytewise, whole, "{name}: differs fed byte by byte");
        assert_eq!(
            blocks_as_recorded(&bytewise),
            recorded_items(&raw),
            "{name}"
        );
    }
}

/// Every recording cut in two at every byte boundary: the boundaries the byte-by-byte test
/// covers, each with the rest of the body arriving in one large read. Quadratic — about a
/// quarter of an hour in a debug build — so run on demand (`cargo test -p motet-providers
/// --test responses_server_tools -- --ignored`).
#[test]
#[ignore = "minutes of CPU: run with --ignored"]
fn every_recording_cut_at_every_byte_boundary() {
    for (name, _) in RECORDINGS {
        let len = recording(name).len();
        let response = assembled_cut_at(name, 0..=len);
        assert_eq!(
            blocks_as_recorded(&response),
            recorded_items(&recording(name)),
            "{name}"
        );
    }
}

#[test]
fn the_recordings_hold_the_server_side_item_kinds_they_are_named_for() {
    let kinds = |name: &str| -> Vec<String> {
        recorded_items(&recording(name))
            .into_iter()
            .filter_map(|item| match item {
                Recorded::Item { kind, .. } => Some(kind),
                _ => None,
            })
            .collect()
    };
    assert_eq!(kinds("web-search-call-gpt-5"), ["web_search_call"]);
    assert_eq!(
        kinds("code-interpreter-calls-gpt-5"),
        ["code_interpreter_call"; 3]
    );
    assert_eq!(
        kinds("mcp-list-tools-mcp-call-o4-mini"),
        ["mcp_list_tools", "mcp_call"]
    );
    assert_eq!(kinds("file-search-call-gpt-4o"), ["file_search_call"]);
}

#[test]
fn the_next_request_resends_each_item_byte_for_byte_in_recorded_order() {
    for (name, model) in RECORDINGS {
        let expected = recorded_items(&recording(name));
        let response = transcript::assemble(Dialect::OpenAiResponses, &recording(name)).unwrap();
        let req = next_request(model, &response);
        let sent = String::from_utf8(Dialect::OpenAiResponses.encode(&req).unwrap()).unwrap();
        let mut from = sent.find("Please answer the question above.").unwrap();
        for marker in markers(&expected) {
            let at = sent[from..].find(&marker).unwrap_or_else(|| {
                panic!("{name}: {marker} is not sent after byte {from}: {sent}")
            });
            from += at + marker.len();
        }
        assert!(
            sent[from..].contains("Thanks. And tomorrow?"),
            "{name}: the new question comes last"
        );
    }
}

/// The whole body sent after the file search turn, as bytes: the item exactly as received
/// between the user's message and the answer. `MOTET_BLESS=1` rewrites the golden (read the
/// diff before committing it).
#[test]
fn the_next_request_after_a_file_search_matches_its_golden_bytes() {
    let (name, model) = RECORDINGS[3];
    let response = transcript::assemble(Dialect::OpenAiResponses, &recording(name)).unwrap();
    let sent = Dialect::OpenAiResponses
        .encode(&next_request(model, &response))
        .unwrap();
    let path = format!("{GOLDEN}/{name}.next-request.json");
    if std::env::var_os("MOTET_BLESS").is_some() {
        std::fs::write(&path, [sent.as_slice(), b"\n"].concat()).unwrap();
    }
    let golden = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(
        String::from_utf8(sent).unwrap(),
        String::from_utf8(golden).unwrap().trim_end(),
        "{path}"
    );
}

#[test]
fn other_dialects_are_sent_none_of_the_openai_items() {
    for (name, _) in RECORDINGS {
        let raw = recording(name);
        let response = transcript::assemble(Dialect::OpenAiResponses, &raw).unwrap();
        let items: Vec<(String, String)> = recorded_items(&raw)
            .into_iter()
            .filter_map(|item| match item {
                Recorded::Item { kind, text } => Some((kind, text)),
                _ => None,
            })
            .collect();
        for (dialect, model) in [
            (Dialect::OpenAiChat, "openai:gpt-5"),
            (Dialect::Anthropic, "anthropic:claude-sonnet-4-5"),
            (Dialect::Gemini, "gemini:gemini-2.5-pro"),
        ] {
            let sent = String::from_utf8(dialect.encode(&next_request(model, &response)).unwrap())
                .unwrap();
            for (kind, text) in &items {
                assert!(
                    !sent.contains(kind.as_str()),
                    "{name}: {dialect:?} sent {kind}"
                );
                let id = serde_json::from_str::<serde_json::Value>(text).unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                assert!(!sent.contains(&id), "{name}: {dialect:?} sent {id}");
            }
            assert!(
                sent.contains("Thanks. And tomorrow?"),
                "{name}: {dialect:?}"
            );
        }
    }
}

/// `motet-transcript` prints the MCP recording's items as opaque blocks, in recorded order,
/// each holding the item's exact text.
#[test]
fn motet_transcript_prints_the_items_in_order() {
    let (name, _) = RECORDINGS[2];
    let json = common::transcript_json("openai-responses", &format!("openai-responses/{name}.sse"));
    let printed: Vec<Recorded> = json["message"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| match block["block_type"].as_str().unwrap() {
            "reasoning" => Recorded::Reasoning {
                id: block["meta"]["id"].as_str().unwrap().to_owned(),
                replayable: block["meta"]["encrypted_content"].is_string(),
            },
            "text" => Recorded::Message {
                text: block["text"].as_str().unwrap().to_owned(),
            },
            "opaque" => {
                let text = block["item"].as_str().unwrap().to_owned();
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                Recorded::Item {
                    kind: value["type"].as_str().unwrap().to_owned(),
                    text,
                }
            }
            other => panic!("{other}"),
        })
        .collect();
    assert_eq!(printed, recorded_items(&recording(name)));
}
