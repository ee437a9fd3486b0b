//! Anthropic blocks motet does not model — server tool calls and their results, MCP calls,
//! compaction, block types added after the decoder was written — kept opaquely and sent back
//! byte for byte.
//!
//! Real recordings (pydantic-ai cassettes, see fixtures/README.md) are assembled whole, fed one
//! byte per read (so every byte boundary is a read boundary), and cut in two at every byte
//! boundary (the three over 16 KB at every 7th, 13th and 997th, to keep the debug build's run
//! under a minute: each cut assembles the whole body); each opaque item is compared with the block the recording
//! itself describes (its `content_block_start`, with the streamed deltas applied by the small
//! replay in [`recorded_blocks`]), and the next request is checked to carry each item's text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::collections::HashMap;

use motet_directives::{AssistantBlock, LlmRequest, LlmResponse, Message, StopReason};
use motet_providers::{Dialect, ProviderError, transcript};
use serde_json::Value;
use serde_json::value::RawValue;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/anthropic");

/// The block types the decoder models; every other one is opaque.
const MODELED: [&str; 4] = ["text", "thinking", "redacted_thinking", "tool_use"];

fn bytes(name: &str) -> Vec<u8> {
    common::fixture(&format!("anthropic/{name}"))
}

/// One block as the recording describes it.
#[derive(Debug)]
struct Recorded {
    kind: String,
    /// The block with its deltas applied, as the non-streaming API returns it.
    block: Value,
    /// The `content_block` text of `content_block_start`, when nothing streamed into it.
    unchanged: Option<String>,
}

/// The recording's blocks in start order, replayed independently of the decoder: an
/// `input_json_delta` sets `input` to its concatenated JSON, a `compaction_delta` appends to
/// `content`, text and thinking deltas to `text` and `thinking`.
fn recorded_blocks(raw: &[u8]) -> Vec<Recorded> {
    let mut blocks: Vec<(u64, Recorded, String)> = Vec::new();
    for data in std::str::from_utf8(raw)
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
    {
        let event: HashMap<String, &RawValue> = serde_json::from_str(data).unwrap();
        let kind: String = serde_json::from_str(event["type"].get()).unwrap();
        let index = || serde_json::from_str::<u64>(event["index"].get()).unwrap();
        let at = |blocks: &mut Vec<(u64, Recorded, String)>, index: u64| {
            blocks.iter().rposition(|(i, ..)| *i == index).unwrap()
        };
        match kind.as_str() {
            "content_block_start" => {
                let text = event["content_block"].get();
                let block: Value = serde_json::from_str(text).unwrap();
                blocks.push((
                    index(),
                    Recorded {
                        kind: block["type"].as_str().unwrap().to_owned(),
                        block,
                        unchanged: Some(text.to_owned()),
                    },
                    String::new(),
                ));
            }
            "content_block_delta" => {
                let at = at(&mut blocks, index());
                let delta: Value = serde_json::from_str(event["delta"].get()).unwrap();
                let (_, recorded, input) = &mut blocks[at];
                recorded.unchanged = None;
                let append = |block: &mut Value, field: &str, more: &Value| {
                    let before = block[field].as_str().unwrap_or("").to_owned();
                    block[field] = Value::String(before + more.as_str().unwrap());
                };
                match delta["type"].as_str().unwrap() {
                    "input_json_delta" => input.push_str(delta["partial_json"].as_str().unwrap()),
                    "compaction_delta" => append(&mut recorded.block, "content", &delta["content"]),
                    "text_delta" => append(&mut recorded.block, "text", &delta["text"]),
                    "thinking_delta" => append(&mut recorded.block, "thinking", &delta["thinking"]),
                    "signature_delta" => {
                        append(&mut recorded.block, "signature", &delta["signature"])
                    }
                    // Text blocks' citations: `anthropic_citations.rs`.
                    "citations_delta" => {}
                    other => panic!("a delta this replay does not know: {other}"),
                }
            }
            "content_block_stop" => {
                let at = at(&mut blocks, index());
                let (_, recorded, input) = &mut blocks[at];
                if !input.is_empty() {
                    recorded.block["input"] = serde_json::from_str(input).unwrap();
                }
            }
            _ => {}
        }
    }
    blocks
        .into_iter()
        .map(|(_, recorded, _)| recorded)
        .collect()
}

/// The recording assembled whole, fed one byte per read (every byte boundary a read
/// boundary, in one linear pass), and cut in two at every `stride`-th byte boundary (every
/// boundary when `stride` is 1): all give the same response.
fn assemble_cut_everywhere(name: &str, stride: usize) -> LlmResponse {
    let raw = bytes(name);
    let whole = transcript::assemble(Dialect::Anthropic, &raw).unwrap();
    let bytewise = transcript::assemble_chunked(Dialect::Anthropic, raw.chunks(1));
    assert_eq!(bytewise.as_ref(), Ok(&whole), "{name}: fed byte by byte");
    for i in (0..=raw.len()).step_by(stride) {
        let cut = transcript::assemble_chunked(Dialect::Anthropic, [&raw[..i], &raw[i..]]);
        assert_eq!(cut.as_ref(), Ok(&whole), "{name}: cut at byte {i}");
    }
    whole
}

fn opaque_items(response: &LlmResponse) -> Vec<&str> {
    response
        .message
        .blocks
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::Opaque { provider, item } => {
                assert_eq!(provider, "anthropic");
                Some(item.as_str())
            }
            _ => None,
        })
        .collect()
}

/// A block's kind, for comparing orders; consecutive text blocks count as one here (each
/// Anthropic text block is a block of its own: `anthropic_citations.rs` checks them one by one).
fn kind_of(block: &AssistantBlock) -> String {
    match block {
        AssistantBlock::Text { .. } => "text".into(),
        AssistantBlock::Reasoning { .. } => "thinking".into(),
        AssistantBlock::ToolUse { .. } => "tool_use".into(),
        AssistantBlock::Opaque { item, .. } => {
            let item: Value = serde_json::from_str(item).unwrap();
            item["type"].as_str().unwrap().to_owned()
        }
        other => panic!("unexpected block {other:?}"),
    }
}

fn collapse(kinds: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for kind in kinds {
        if !(kind == "text" && out.last().is_some_and(|last| last == "text")) {
            out.push(kind);
        }
    }
    out
}

/// The request after `response`: the recorded prompt, the assembled turn, and a follow-up.
fn next_request(response: &LlmResponse) -> LlmRequest {
    LlmRequest::new(
        "anthropic:claude-sonnet-4-5".parse().unwrap(),
        vec![
            Message::user("Go on."),
            Message::Assistant(response.message.clone()),
            Message::user("Thanks."),
        ],
    )
}

/// Checks one recording end to end; returns the response and the recorded opaque types.
fn check_recording(name: &str, stride: usize) -> (LlmResponse, Vec<String>) {
    let response = assemble_cut_everywhere(name, stride);
    let recorded = recorded_blocks(&bytes(name));

    // Every block in its place: the recording's start order, text runs taken as one (a text
    // block that streamed nothing leaves no block).
    let expected_order = collapse(
        recorded
            .iter()
            .filter(|r| !(r.kind == "text" && r.block["text"].as_str() == Some("")))
            .map(|r| match r.kind.as_str() {
                "redacted_thinking" => "thinking".to_owned(),
                kind => kind.to_owned(),
            }),
    );
    assert_eq!(
        collapse(response.message.blocks.iter().map(kind_of)),
        expected_order,
        "{name}: block order"
    );

    // Each opaque item is the recorded block; byte for byte when nothing streamed into it.
    let opaque: Vec<&Recorded> = recorded
        .iter()
        .filter(|r| !MODELED.contains(&r.kind.as_str()))
        .collect();
    let items = opaque_items(&response);
    assert_eq!(items.len(), opaque.len(), "{name}: opaque block count");
    for (item, recorded) in items.iter().zip(&opaque) {
        assert_eq!(
            serde_json::from_str::<Value>(item).unwrap(),
            recorded.block,
            "{name}: a `{}` block",
            recorded.kind
        );
        if let Some(text) = &recorded.unchanged {
            assert_eq!(item, text, "{name}: a `{}` block's bytes", recorded.kind);
        }
    }

    // The next request carries each item's text, byte for byte, in order, in the assistant
    // turn; its `Value` form carries them parsed.
    let request = next_request(&response);
    let body = String::from_utf8(Dialect::Anthropic.encode(&request).unwrap()).unwrap();
    let mut from = 0;
    for item in &items {
        let at = body[from..]
            .find(item)
            .unwrap_or_else(|| panic!("{name}: an item is not in the body byte for byte"));
        from += at + item.len();
    }
    let encoded: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(encoded, Dialect::Anthropic.render(&request).unwrap());
    let replayed: Vec<&Value> = encoded["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| !MODELED.contains(&block["type"].as_str().unwrap()))
        .collect();
    let parsed: Vec<Value> = items
        .iter()
        .map(|item| serde_json::from_str(item).unwrap())
        .collect();
    assert_eq!(
        replayed,
        parsed.iter().collect::<Vec<_>>(),
        "{name}: replay"
    );

    let kinds = opaque.iter().map(|r| r.kind.clone()).collect();
    (response, kinds)
}

#[test]
fn web_search_calls_and_results_are_kept_in_order_and_replayed() {
    let (response, kinds) = check_recording("web-search-citations-sonnet-4.sse", 13);
    assert_eq!(
        kinds,
        [
            "server_tool_use",
            "web_search_tool_result",
            "server_tool_use",
            "web_search_tool_result"
        ]
    );
    assert_eq!(response.message.stop_reason, StopReason::EndTurn);
    // The search queries streamed as `input_json_delta`s are in the kept calls.
    let first: Value = serde_json::from_str(opaque_items(&response)[0]).unwrap();
    assert!(
        first["input"]["query"]
            .as_str()
            .is_some_and(|q| !q.is_empty())
    );
}

#[test]
fn web_fetch_is_kept_and_replayed() {
    let (_, kinds) = check_recording("web-fetch-sonnet-4.sse", 7);
    assert_eq!(kinds, ["server_tool_use", "web_fetch_tool_result"]);
}

#[test]
fn bash_code_execution_is_kept_and_replayed() {
    let (_, kinds) = check_recording("code-execution-bash-sonnet-4.6.sse", 1);
    assert_eq!(
        kinds,
        ["server_tool_use", "bash_code_execution_tool_result"]
    );
}

#[test]
fn text_editor_code_execution_is_kept_and_replayed() {
    let (_, kinds) = check_recording("code-execution-text-editor-sonnet-4.6.sse", 1);
    assert_eq!(
        kinds,
        [
            "server_tool_use",
            "server_tool_use",
            "text_editor_code_execution_tool_result",
            "text_editor_code_execution_tool_result",
            "server_tool_use",
            "text_editor_code_execution_tool_result",
        ]
    );
}

#[test]
fn mcp_calls_and_results_are_kept_and_replayed() {
    let (_, kinds) = check_recording("mcp-tool-use-sonnet-4.5.sse", 1);
    assert_eq!(kinds, ["mcp_tool_use", "mcp_tool_result"]);
}

/// `advisor_tool_result` is a block type the decoder has never heard of.
#[test]
fn a_block_type_nobody_told_us_about_is_kept_and_replayed() {
    let (_, kinds) = check_recording("advisor-unknown-block-sonnet-5.sse", 1);
    assert_eq!(kinds, ["server_tool_use", "advisor_tool_result"]);
}

/// The compaction summary streams as one `compaction_delta` into a block that starts with
/// `"content": null`.
#[test]
fn compaction_is_kept_with_its_streamed_summary() {
    let (response, kinds) = check_recording("compaction-iterations-cache-read-sonnet-4.6.sse", 1);
    assert_eq!(kinds, ["compaction"]);
    let item: Value = serde_json::from_str(opaque_items(&response)[0]).unwrap();
    assert!(
        item["content"]
            .as_str()
            .unwrap()
            .starts_with("The user provided")
    );
}

/// A real turn Anthropic paused mid search loop (256 KB, so cut at every 997th byte). It ends
/// with a `server_tool_use` whose result the next turn brings.
#[test]
fn pause_turn_is_its_own_stop_reason_and_the_open_call_is_kept() {
    let (response, kinds) = check_recording("pause-turn-web-search-sonnet-4.5.sse", 997);
    assert_eq!(response.message.stop_reason, StopReason::PauseTurn);
    assert_eq!(kinds.len(), 21);
    assert_eq!(kinds.last().unwrap(), "server_tool_use");
}

/// The body replaying the code execution turn, as sent.
#[test]
fn the_replayed_code_execution_turn_reads_as_the_golden() {
    let response = transcript::assemble(
        Dialect::Anthropic,
        &bytes("code-execution-bash-sonnet-4.6.sse"),
    )
    .unwrap();
    let body = Dialect::Anthropic.encode(&next_request(&response)).unwrap();
    let path = format!("{GOLDEN}/code_execution_replay.json");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &body).unwrap();
    }
    let golden = std::fs::read(&path).unwrap();
    assert_eq!(
        String::from_utf8(body).unwrap(),
        String::from_utf8(golden).unwrap()
    );
}

/// A hand-built stream around one block.
fn stream_with(block: &str, deltas: &[&str]) -> Vec<u8> {
    let mut out = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\"}}\n\n",
    );
    out.push_str(&format!(
        "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{block}}}\n\n"
    ));
    for delta in deltas {
        out.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{delta}}}\n\n"
        ));
    }
    out.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    out.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"Done.\"}}\n\n");
    out.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    );
    out.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n");
    out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out.into_bytes()
}

/// Spacing, escapes, key order and a number a re-serialization would each change.
const FUTURE_BLOCK: &str = r#"{ "type" : "future_block","z":1.50,"id":"fut_1" , "note":"caf\u00e9 \"Le Nord\"\n","nested":{"b":[1e3, null],"a":"é"}}"#;

#[test]
fn an_unknown_block_survives_byte_for_byte() {
    let body = stream_with(FUTURE_BLOCK, &[]);
    let response = transcript::assemble(Dialect::Anthropic, &body).unwrap();
    for i in 0..=body.len() {
        let cut = transcript::assemble_chunked(Dialect::Anthropic, [&body[..i], &body[i..]]);
        assert_eq!(cut.as_ref(), Ok(&response), "cut at byte {i}");
    }
    assert_eq!(
        response.message.blocks,
        [
            AssistantBlock::opaque("anthropic", FUTURE_BLOCK),
            AssistantBlock::text("Done.")
        ]
    );
    let sent =
        String::from_utf8(Dialect::Anthropic.encode(&next_request(&response)).unwrap()).unwrap();
    let expected = format!(
        r#"{{"content":[{FUTURE_BLOCK},{{"text":"Done.","type":"text"}}],"role":"assistant"}}"#
    );
    assert!(sent.contains(&expected), "{sent}");
}

#[test]
fn deltas_into_an_unknown_block_set_its_fields_in_place() {
    let body = stream_with(
        r#"{"type":"future_call","id":"f_1","input":{},"summary":null,"n":7}"#,
        &[
            r#"{"type":"input_json_delta","partial_json":""}"#,
            r#"{"type":"input_json_delta","partial_json":"{\"q\": "}"#,
            r#"{"type":"input_json_delta","partial_json":"\"x\"}"}"#,
            r#"{"type":"summary_delta","summary":"one, "}"#,
            r#"{"type":"summary_delta","summary":"two"}"#,
            r#"{"type":"citations_delta","citation":{"url":"https://a.example", "n":1.0}}"#,
        ],
    );
    let response = transcript::assemble(Dialect::Anthropic, &body).unwrap();
    assert_eq!(
        opaque_items(&response),
        [
            r#"{"type":"future_call","id":"f_1","input":{"q": "x"},"summary":"one, two","n":7,"citations":[{"url":"https://a.example", "n":1.0}]}"#
        ]
    );
}

#[test]
fn deltas_that_cannot_be_applied_are_protocol_errors() {
    for (block, delta) in [
        // A field that is not text.
        (
            r#"{"type":"future_block"}"#,
            r#"{"type":"odd_delta","parts":[1]}"#,
        ),
        // Not an object.
        (r#"{"type":"future_block"}"#, r#""text""#),
        // Streamed input that is not JSON.
        (
            r#"{"type":"server_tool_use","id":"s","name":"web_search","input":{}}"#,
            r#"{"type":"input_json_delta","partial_json":"{\"q\":"}"#,
        ),
    ] {
        let result = transcript::assemble(Dialect::Anthropic, &stream_with(block, &[delta]));
        assert!(
            matches!(result, Err(ProviderError::Protocol { .. })),
            "{delta}: {result:?}"
        );
    }
}

#[test]
fn another_providers_opaque_blocks_are_not_sent() {
    let mut response =
        transcript::assemble(Dialect::Anthropic, &stream_with(FUTURE_BLOCK, &[])).unwrap();
    response.message.blocks.insert(
        0,
        AssistantBlock::opaque("openai", r#"{"type":"web_search_call"}"#),
    );
    let sent =
        String::from_utf8(Dialect::Anthropic.encode(&next_request(&response)).unwrap()).unwrap();
    assert!(!sent.contains("web_search_call"));
    assert!(sent.contains(FUTURE_BLOCK));
}

/// `motet-transcript` prints the opaque blocks in their place.
#[test]
fn the_transcript_tool_prints_opaque_blocks_in_order() {
    let printed = common::transcript_json("anthropic", "anthropic/mcp-tool-use-sonnet-4.5.sse");
    let blocks: Vec<(&str, Option<&str>)> = printed["message"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| {
            (
                block["block_type"].as_str().unwrap(),
                block["item"].as_str(),
            )
        })
        .collect();
    let response =
        transcript::assemble(Dialect::Anthropic, &bytes("mcp-tool-use-sonnet-4.5.sse")).unwrap();
    let items = opaque_items(&response);
    assert_eq!(
        blocks,
        [
            ("reasoning", None),
            ("opaque", Some(items[0])),
            ("opaque", Some(items[1])),
            ("text", None)
        ]
    );
}

#[test]
fn an_opaque_block_never_stopped_is_a_protocol_error() {
    let whole = String::from_utf8(stream_with(FUTURE_BLOCK, &[])).unwrap();
    let unstopped = whole.replacen(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "",
        1,
    );
    assert_ne!(unstopped, whole);
    let result = transcript::assemble(Dialect::Anthropic, unstopped.as_bytes());
    assert!(
        matches!(result, Err(ProviderError::Protocol { .. })),
        "{result:?}"
    );
}

/// After the pause, pydantic-ai sent the turn back (prompt, then the paused assistant turn,
/// nothing after it) and Anthropic continued it: the recorded continuation request. Our
/// replay of the assembled turn carries the same blocks in the same order: the same types,
/// ids, tool inputs and thinking. (Not every field is compared: the cassette stores request
/// bodies normalized, e.g. an en dash in a search result title became a hyphen, and
/// pydantic-ai left out the `caller` fields we send back as received.)
#[test]
fn the_paused_turn_replays_as_the_continuation_anthropic_accepted() {
    let response = transcript::assemble(
        Dialect::Anthropic,
        &bytes("pause-turn-web-search-sonnet-4.5.sse"),
    )
    .unwrap();
    let recorded: Value = serde_json::from_slice(&bytes(
        "pause-turn-web-search-sonnet-4.5.continued.request.json",
    ))
    .unwrap();
    let recorded_messages = recorded["body"]["messages"].as_array().unwrap();
    let request = LlmRequest::new(
        "anthropic:claude-sonnet-4-5".parse().unwrap(),
        vec![
            Message::user(recorded_messages[0]["content"][0]["text"].as_str().unwrap()),
            Message::Assistant(response.message),
        ],
    );
    let sent: Value =
        serde_json::from_slice(&Dialect::Anthropic.encode(&request).unwrap()).unwrap();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 2);
    let summary = |blocks: &Value| -> Vec<[Value; 5]> {
        blocks
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                [
                    b["type"].clone(),
                    b["id"].clone(),
                    b["tool_use_id"].clone(),
                    b["input"].clone(),
                    b["signature"].clone(),
                ]
            })
            .collect()
    };
    let ours = summary(&sent["messages"][1]["content"]);
    assert_eq!(ours.len(), 25);
    assert_eq!(ours, summary(&recorded_messages[1]["content"]));
}
