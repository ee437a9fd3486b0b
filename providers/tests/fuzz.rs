//! Hostile streams through the whole offline path (SSE framing → dialect decoder → block
//! assembler), in all four dialects: arbitrary bytes cut into arbitrary reads, and well-formed
//! streams whose JSON values were mutated (wrong types, huge numbers, negative and
//! out-of-order indices, fragments for calls never opened, duplicated ids, events dropped,
//! repeated or swapped). Each must end in a typed error or a well-formed response, never a
//! panic, and the framing must hold no more than its event cap.
//!
//! The seeds are fixed: a failure reproduces on every run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::collections::HashSet;

use motet_directives::{AssistantBlock, LlmResponse, ProviderMeta};
use motet_providers::testing::wire;
use motet_providers::{
    BlockAssembler, BodyDecoder, Dialect, Limits, LlmEvent, ProviderError, transcript,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{Value, json};

fn config(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    }
}

/// `body` cut at `cuts` (positions taken modulo its length, so any list fits any body).
fn rechunk<'a>(body: &'a [u8], cuts: &[prop::sample::Index]) -> Vec<&'a [u8]> {
    wire::split_at(body, cuts.iter().map(|i| i.index(body.len() + 1)))
}

/// What a response handed to the runtime must be, however hostile the stream: tool call ids
/// unique, and arguments either an object or text that says why not (the tool set answers
/// such a call with an error result), surviving the trip through a signal's JSON unchanged.
fn check_response(response: &LlmResponse) -> Result<(), TestCaseError> {
    let mut ids = HashSet::new();
    for block in &response.message.blocks {
        if let AssistantBlock::ToolUse { id, args, .. } = block {
            prop_assert!(ids.insert(id.clone()), "tool call id `{id}` repeats");
            prop_assert_eq!(args.is_object(), args.problem().is_none(), "{}", args);
            let carried = serde_json::to_string(args)
                .and_then(|json| serde_json::from_str::<motet_directives::ToolArgs>(&json));
            prop_assert_eq!(
                carried.as_ref().ok(),
                Some(args),
                "the arguments of `{}`",
                id
            );
        }
    }
    Ok(())
}

/// Runs `chunks` through `dialect`: a panic fails the case (proptest catches it); any result
/// that is not a panic is a typed `Result<LlmResponse, ProviderError>` by construction, and a
/// response must be well formed.
fn assemble(dialect: Dialect, chunks: Vec<&[u8]>) -> Result<(), TestCaseError> {
    match transcript::assemble_chunked(dialect, chunks) {
        Ok(response) => check_response(&response),
        Err(error) => {
            // Rendering the error must not panic either (it reaches logs and threads).
            prop_assert!(!error.to_string().is_empty());
            Ok(())
        }
    }
}

// ------------------------------------------------------------------------ arbitrary bytes

/// Pieces that get random bytes past the framing and into the decoders' JSON parsers.
const VOCABULARY: &[&str] = &[
    "data: ",
    "data:",
    "event: ",
    "id: ",
    ": ping",
    "\n",
    "\r\n",
    "\r",
    "\n\n",
    "\u{feff}",
    "[DONE]",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "null",
    "-1",
    "1e400",
    "18446744073709551616",
    "\"type\":",
    "\"index\":",
    "\"id\":",
    "\"choices\":[{\"index\":0,\"delta\":",
    "\"tool_calls\":[{\"index\":",
    "\"function\":{\"name\":\"f\",\"arguments\":\"",
    "\"finish_reason\":\"stop\"",
    "\"content_block_start\"",
    "\"content_block_delta\"",
    "\"content_block_stop\"",
    "\"message_delta\"",
    "\"message_stop\"",
    "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\"}",
    "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"",
    "\"response.output_item.added\"",
    "\"response.function_call_arguments.delta\"",
    "\"response.completed\"",
    "\"item\":{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\"",
    "\"item_id\":\"c\"",
    "\"candidates\":[{\"content\":{\"parts\":[",
    "{\"functionCall\":{\"name\":\"f\",\"args\":",
    "\"finishReason\":\"STOP\"",
    "\"thoughtSignature\":\"s\"",
    "é",
    "世",
];

fn noisy_body() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => prop::sample::select(VOCABULARY).prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec(piece, 0..120).prop_map(|pieces| pieces.concat())
}

fn any_dialect() -> impl Strategy<Value = Dialect> {
    prop::sample::select(Dialect::ALL.to_vec())
}

proptest! {
    #![proptest_config(config(2000, 0x00f0_2215))]

    #[test]
    fn random_bytes_in_random_reads_are_a_typed_error_or_a_response(
        dialect in any_dialect(),
        body in prop::collection::vec(any::<u8>(), 0..600),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..16),
    ) {
        assemble(dialect, rechunk(&body, &cuts))?;
    }

    #[test]
    fn sse_shaped_noise_in_random_reads_is_a_typed_error_or_a_response(
        dialect in any_dialect(),
        body in noisy_body(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..16),
    ) {
        assemble(dialect, rechunk(&body, &cuts))?;
    }
}

// ------------------------------------------------------------------ mutated event streams

/// One event of a template stream: its `event:` name (empty for none) and its JSON payload
/// (`None` for a raw `[DONE]`).
type WireEvent = (&'static str, Option<Value>);

/// A well-formed stream of each dialect with text, reasoning and two tool calls, the first
/// one's arguments in fragments.
fn template(dialect: Dialect) -> Vec<WireEvent> {
    let chat =
        |delta: Value| json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta}]});
    let anthropic = |v: Value| ("", Some(v));
    let responses = |v: Value| ("", Some(v));
    match dialect {
        Dialect::OpenAiChat => vec![
            (
                "",
                Some(chat(
                    json!({"role": "assistant", "reasoning_content": "hmm"}),
                )),
            ),
            ("", Some(chat(json!({"content": "Hi"})))),
            (
                "",
                Some(chat(json!({"tool_calls": [
                    {"index": 0, "id": "call_a", "type": "function", "function": {"name": "add", "arguments": "{\"a\":"}}
                ]}))),
            ),
            (
                "",
                Some(chat(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
                )),
            ),
            (
                "",
                Some(chat(json!({"tool_calls": [
                    {"index": 1, "id": "call_b", "function": {"name": "mul", "arguments": "{}"}}
                ]}))),
            ),
            (
                "",
                Some(
                    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
                ),
            ),
            (
                "",
                Some(
                    json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 1}, "completion_tokens_details": {"reasoning_tokens": 2}}}),
                ),
            ),
            ("", None),
        ],
        Dialect::Anthropic => vec![
            anthropic(
                json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude",
                "usage": {"input_tokens": 3, "output_tokens": 1}}}),
            ),
            anthropic(json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": ""}})),
            anthropic(json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hmm"}})),
            anthropic(json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": "c2ln"}})),
            anthropic(json!({"type": "content_block_stop", "index": 0})),
            anthropic(json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "text", "text": ""}})),
            anthropic(json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "citations_delta", "citation": {"type": "web_search_result_location",
                "url": "https://a.example", "cited_text": "Hi", "encrypted_index": "Eo8B"}}})),
            anthropic(json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "text_delta", "text": "Hi"}})),
            anthropic(json!({"type": "content_block_stop", "index": 1})),
            anthropic(json!({"type": "content_block_start", "index": 2,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}})),
            anthropic(json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}})),
            anthropic(json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": "1}"}})),
            anthropic(json!({"type": "content_block_stop", "index": 2})),
            anthropic(json!({"type": "content_block_start", "index": 3,
                "content_block": {"type": "tool_use", "id": "toolu_2", "name": "mul", "input": {}}})),
            anthropic(json!({"type": "content_block_stop", "index": 3})),
            anthropic(json!({"type": "ping"})),
            anthropic(
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9}}),
            ),
            anthropic(json!({"type": "message_stop"})),
        ],
        Dialect::OpenAiResponses => vec![
            responses(
                json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt"}}),
            ),
            responses(
                json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            ),
            responses(
                json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1",
                "summary_index": 0}),
            ),
            responses(
                json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1",
                "summary_index": 0, "delta": "hmm"}),
            ),
            responses(
                json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hmm"}],
                "encrypted_content": "enc"}}),
            ),
            responses(
                json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"type": "message", "id": "msg_1", "content": []}}),
            ),
            responses(
                json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hi"}),
            ),
            responses(
                json!({"type": "response.output_item.done", "output_index": 1,
                "item": {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "Hi"}]}}),
            ),
            responses(
                json!({"type": "response.output_item.added", "output_index": 2,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add", "arguments": ""}}),
            ),
            responses(
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                "delta": "{\"a\":"}),
            ),
            responses(
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                "delta": "1}"}),
            ),
            responses(
                json!({"type": "response.function_call_arguments.done", "item_id": "fc_1",
                "arguments": "{\"a\":1}"}),
            ),
            responses(
                json!({"type": "response.output_item.done", "output_index": 2,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add",
                "arguments": "{\"a\":1}"}}),
            ),
            responses(
                json!({"type": "response.output_item.done", "output_index": 3,
                "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "mul",
                "arguments": "{}"}}),
            ),
            responses(
                json!({"type": "response.completed", "response": {"id": "resp_1",
                "usage": {"input_tokens": 3, "output_tokens": 5,
                "input_tokens_details": {"cached_tokens": 1}, "output_tokens_details": {"reasoning_tokens": 2}}}}),
            ),
        ],
        Dialect::Gemini => vec![
            (
                "",
                Some(
                    json!({"candidates": [{"content": {"role": "model", "parts": [
                {"text": "hmm", "thought": true, "thoughtSignature": "c2ln"}]}, "index": 0}],
                "modelVersion": "gemini", "responseId": "r1"}),
                ),
            ),
            (
                "",
                Some(
                    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}],
                "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}}),
                ),
            ),
            (
                "",
                Some(
                    json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"id": "g1", "name": "add", "args": {"a": 1}}, "thoughtSignature": "c2ln"},
                {"functionCall": {"name": "mul", "args": {}}}]}}]}),
                ),
            ),
            (
                "",
                Some(
                    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
                "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 3,
                "candidatesTokenCount": 4, "thoughtsTokenCount": 2, "totalTokenCount": 9}}),
                ),
            ),
        ],
    }
}

/// Values put where the template had something else. The strings starting with `RAW:` are
/// written into the JSON text verbatim: numbers no `Value` holds, nesting past the parser's
/// recursion limit.
fn hostile_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(2)),
        Just(json!(u64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(1.5)),
        Just(json!(1e308)),
        Just(json!("RAW:18446744073709551616")),
        Just(json!("RAW:-18446744073709551617")),
        Just(json!("RAW:1e400")),
        Just(json!("RAW:-0")),
        Just(json!("")),
        Just(json!("call_a")),
        Just(json!("toolu_1")),
        Just(json!("fc_1")),
        Just(json!("{\"a\":")),
        Just(json!("tool_use")),
        Just(json!("thinking")),
        Just(json!("function_call")),
        Just(json!("message")),
        Just(json!("STOP")),
        Just(json!("max_tokens")),
        Just(json!("length")),
        Just(json!("MAX_TOKENS")),
        Just(json!("x".repeat(20_000))),
        Just(json!("\u{0}\u{7f}é世\u{10ffff}")),
        Just(json!({})),
        Just(json!([])),
        Just(json!([null, 1, "a"])),
        Just(json!({"type": "tool_use", "id": "toolu_1", "name": "add"})),
        Just(json!(format!("RAW:{}{}", "[".repeat(200), "]".repeat(200)))),
        Just(json!(format!(
            "RAW:{}1{}",
            "{\"a\":".repeat(200),
            "}".repeat(200)
        ))),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the value at one of the event's paths (picked by `at`).
    Replace {
        event: prop::sample::Index,
        at: prop::sample::Index,
        value: Value,
    },
    /// Drop the value at one of the event's paths.
    Remove {
        event: prop::sample::Index,
        at: prop::sample::Index,
    },
    /// Send an event twice.
    Repeat { event: prop::sample::Index },
    /// Leave an event out.
    Drop { event: prop::sample::Index },
    /// Swap two events.
    Swap {
        a: prop::sample::Index,
        b: prop::sample::Index,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let index = any::<prop::sample::Index>;
    prop_oneof![
        6 => (index(), index(), hostile_value())
            .prop_map(|(event, at, value)| Mutation::Replace { event, at, value }),
        1 => (index(), index()).prop_map(|(event, at)| Mutation::Remove { event, at }),
        2 => index().prop_map(|event| Mutation::Repeat { event }),
        1 => index().prop_map(|event| Mutation::Drop { event }),
        2 => (index(), index()).prop_map(|(a, b)| Mutation::Swap { a, b }),
    ]
}

/// Every path to a value inside `value` (the root excluded), depth first.
fn paths(value: &Value) -> Vec<Vec<PathStep>> {
    fn walk(value: &Value, here: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
        let children: Vec<(PathStep, &Value)> = match value {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| (PathStep::Key(k.clone()), v))
                .collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (PathStep::At(i), v))
                .collect(),
            _ => Vec::new(),
        };
        for (step, child) in children {
            here.push(step);
            out.push(here.clone());
            walk(child, here, out);
            here.pop();
        }
    }
    let mut out = Vec::new();
    walk(value, &mut Vec::new(), &mut out);
    out
}

#[derive(Debug, Clone)]
enum PathStep {
    Key(String),
    At(usize),
}

/// The parent of the value at `path`, and the last step to it.
fn parent_mut<'a>(
    root: &'a mut Value,
    path: &'a [PathStep],
) -> Option<(&'a mut Value, &'a PathStep)> {
    let (last, init) = path.split_last()?;
    let mut node = root;
    for step in init {
        node = match step {
            PathStep::Key(k) => node.get_mut(k.as_str())?,
            PathStep::At(i) => node.get_mut(*i)?,
        };
    }
    Some((node, last))
}

fn apply(events: &mut Vec<WireEvent>, mutation: &Mutation) {
    if events.is_empty() {
        return;
    }
    let n = events.len();
    match mutation {
        Mutation::Replace { event, at, .. } | Mutation::Remove { event, at } => {
            let Some(payload) = events[event.index(n)].1.as_mut() else {
                return;
            };
            let all = paths(payload);
            if all.is_empty() {
                return;
            }
            let path = &all[at.index(all.len())];
            let Some((parent, last)) = parent_mut(payload, path) else {
                return;
            };
            let replacement = match mutation {
                Mutation::Replace { value, .. } => Some(value.clone()),
                _ => None,
            };
            match (parent, last, replacement) {
                (Value::Object(map), PathStep::Key(k), Some(v)) => {
                    map.insert(k.clone(), v);
                }
                (Value::Object(map), PathStep::Key(k), None) => {
                    map.remove(k);
                }
                (Value::Array(items), PathStep::At(i), Some(v)) => items[*i] = v,
                (Value::Array(items), PathStep::At(i), None) => {
                    items.remove(*i);
                }
                _ => {}
            }
        }
        Mutation::Repeat { event } => {
            let i = event.index(n);
            let copy = events[i].clone();
            events.insert(i, copy);
        }
        Mutation::Drop { event } => {
            events.remove(event.index(n));
        }
        Mutation::Swap { a, b } => events.swap(a.index(n), b.index(n)),
    }
}

/// The SSE body of `events`, with the `RAW:` strings written verbatim.
fn sse_body(dialect: Dialect, events: &[WireEvent]) -> Vec<u8> {
    let line_end = if dialect == Dialect::Gemini {
        "\r\n"
    } else {
        "\n"
    };
    let mut body = String::new();
    for (name, payload) in events {
        let data = match payload {
            Some(value) => raw_strings_verbatim(&value.to_string()),
            None => "[DONE]".to_owned(),
        };
        let name = match (dialect, payload) {
            // Anthropic and Responses name each event after its type.
            (Dialect::Anthropic | Dialect::OpenAiResponses, Some(value)) => value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or(name)
                .to_owned(),
            _ => (*name).to_owned(),
        };
        if !name.is_empty() {
            body.push_str(&format!("event: {name}{line_end}"));
        }
        body.push_str(&format!("data: {data}{line_end}{line_end}"));
    }
    body.into_bytes()
}

fn raw_strings_verbatim(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find("\"RAW:") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 5..];
        let end = after.find('"').unwrap_or(after.len());
        out.push_str(&after[..end]);
        rest = &after[(end + 1).min(after.len())..];
    }
    out.push_str(rest);
    out
}

#[test]
fn the_templates_are_well_formed_streams() {
    for dialect in Dialect::ALL {
        let body = sse_body(dialect, &template(dialect));
        let response =
            transcript::assemble(dialect, &body).unwrap_or_else(|e| panic!("{dialect}: {e}"));
        let calls: Vec<_> = response
            .message
            .tool_calls()
            .map(|c| c.name.to_owned())
            .collect();
        assert_eq!(calls, ["add", "mul"], "{dialect}");
        assert!(
            response.message.text_blocks().any(|t| t == "Hi"),
            "{dialect}"
        );
    }
}

proptest! {
    #![proptest_config(config(4000, 0x0015_f022))]

    #[test]
    fn mutated_streams_are_a_typed_error_or_a_well_formed_response(
        dialect in any_dialect(),
        mutations in prop::collection::vec(mutation(), 1..5),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut events = template(dialect);
        for m in &mutations {
            apply(&mut events, m);
        }
        let body = sse_body(dialect, &events);
        assemble(dialect, rechunk(&body, &cuts))?;
    }
}

// ------------------------------------------------------------------------ bounded memory

/// The limit the memory tests hold a response to.
const SMALL_LIMIT: usize = 4096;

fn small_limits() -> Limits {
    Limits {
        max_response_bytes: SMALL_LIMIT,
    }
}

/// One SSE event of `dialect` carrying `payload`.
fn frame(dialect: Dialect, payload: &Value) -> String {
    String::from_utf8(sse_body(dialect, &[("", Some(payload.clone()))])).unwrap()
}

/// A way a stream can make a response (or the decoder under it) hold more and more.
struct Growth {
    name: &'static str,
    dialect: Dialect,
    /// The events before the units.
    opening: Vec<Value>,
    /// The `i`-th unit; each keeps at least 100 bytes.
    unit: fn(usize) -> Value,
}

fn growth(
    name: &'static str,
    dialect: Dialect,
    opening: Vec<Value>,
    unit: fn(usize) -> Value,
) -> Growth {
    Growth {
        name,
        dialect,
        opening,
        unit,
    }
}

fn growth_patterns() -> Vec<Growth> {
    vec![
        growth(
            "Anthropic signature deltas",
            Dialect::Anthropic,
            vec![
                json!({"type": "message_start", "message": {}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}}),
            ],
            |_| {
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": "s".repeat(100)}})
            },
        ),
        growth(
            "Anthropic blocks of a type the decoder skips, never stopped",
            Dialect::Anthropic,
            vec![json!({"type": "message_start", "message": {}})],
            |i| {
                json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "web_search_tool_result", "tool_use_id": "s".repeat(100)}})
            },
        ),
        growth(
            "Anthropic citations of a text block never stopped",
            Dialect::Anthropic,
            vec![
                json!({"type": "message_start", "message": {}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ],
            |_| {
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "citations_delta", "citation": {"cited_text": "s".repeat(100)}}})
            },
        ),
        growth(
            "Anthropic text blocks of one character, each stopped",
            Dialect::Anthropic,
            vec![json!({"type": "message_start", "message": {}})],
            // Units in pairs, a start and its stop: each text block is a block of its own, so
            // it costs a block, not one byte.
            |i| {
                if i % 2 == 0 {
                    json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "text", "text": "x"}})
                } else {
                    json!({"type": "content_block_stop", "index": i - 1})
                }
            },
        ),
        growth(
            "Anthropic redacted thinking",
            Dialect::Anthropic,
            vec![json!({"type": "message_start", "message": {}})],
            |i| {
                json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "redacted_thinking", "data": "s".repeat(100)}})
            },
        ),
        growth(
            "Chat Completions tool calls without arguments",
            Dialect::OpenAiChat,
            vec![],
            |i| {
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "id": format!("call_{i}"), "function": {"name": "f".repeat(100)}}]}}]})
            },
        ),
        growth(
            "Responses message items without text",
            Dialect::OpenAiResponses,
            vec![],
            |i| {
                json!({"type": "response.output_item.added",
                "item": {"type": "message", "id": format!("msg_{i}_{}", "s".repeat(100)), "content": []}})
            },
        ),
        growth(
            "Responses reasoning items with encrypted content",
            Dialect::OpenAiResponses,
            vec![],
            |i| {
                json!({"type": "response.output_item.done", "item": {"type": "reasoning",
                "id": format!("rs_{i}"), "summary": [], "encrypted_content": "s".repeat(100)}})
            },
        ),
        growth(
            "Gemini parts holding only a signature",
            Dialect::Gemini,
            vec![],
            |_| {
                json!({"candidates": [{"content": {"parts": [
                {"text": "", "thoughtSignature": "s".repeat(100)}]}}]})
            },
        ),
        growth(
            "Gemini calls named at length",
            Dialect::Gemini,
            vec![],
            |_| {
                json!({"candidates": [{"content": {"parts": [
                {"functionCall": {"name": "f".repeat(100)}}]}}]})
            },
        ),
    ]
}

#[test]
fn every_way_of_growing_a_response_is_refused_at_the_limit() {
    let mut grew = Vec::new();
    for Growth {
        name,
        dialect,
        opening,
        unit,
    } in growth_patterns()
    {
        let mut body = BodyDecoder::new(dialect, small_limits());
        for payload in &opening {
            body.push(frame(dialect, payload).as_bytes())
                .unwrap_or_else(|e| panic!("{name}: the opening failed: {e}"));
        }
        // 1,000 units of 100 bytes or more: 25 times the limit.
        let refused = (0..1000).find_map(|i| body.push(frame(dialect, &unit(i)).as_bytes()).err());
        match refused {
            Some(ProviderError::ResponseTooLarge { limit: SMALL_LIMIT }) => {}
            other => grew.push(format!(
                "{name}: {other:?}, {} bytes counted",
                body.held_bytes()
            )),
        }
    }
    assert!(grew.is_empty(), "not refused:\n{}", grew.join("\n"));
}

/// The string bytes an event hands to the assembler, counted here independently of the
/// decoder's own measure: text, reasoning, arguments, names, keys, ids and every string in
/// the provider meta. (The ids on deltas only route them; the assembler does not keep them.)
fn carried_bytes(event: &LlmEvent) -> usize {
    fn strings(value: &Value) -> usize {
        match value {
            Value::String(s) => s.len(),
            Value::Array(items) => items.iter().map(strings).sum(),
            Value::Object(map) => map.values().map(strings).sum(),
            _ => 0,
        }
    }
    let meta = |m: &Option<ProviderMeta>| {
        m.as_ref().map_or(0, |m| {
            let value = serde_json::to_value(m).unwrap();
            strings(&value) - value["provider"].as_str().map_or(0, str::len)
        })
    };
    let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
    match event {
        LlmEvent::TextDelta { delta, meta: m } => delta.len() + meta(m),
        LlmEvent::ReasoningStart { key } => key.len(),
        LlmEvent::ReasoningDelta { delta, .. } => delta.len(),
        LlmEvent::ReasoningComplete {
            text: t, meta: m, ..
        } => text(t) + meta(m),
        LlmEvent::ToolCallStart { id, name, meta: m } => id.len() + name.len() + meta(m),
        LlmEvent::ToolCallDelta { args_delta, .. } => args_delta.len(),
        LlmEvent::ToolCallComplete { args, meta: m, .. } => text(args) + meta(m),
        _ => 0,
    }
}

/// A template stream of `dialect` with units of its growth patterns put in at random places.
fn growing_stream(
    dialect: Dialect,
    insertions: &[(prop::sample::Index, prop::sample::Index, usize)],
) -> Vec<WireEvent> {
    let units: Vec<_> = growth_patterns()
        .into_iter()
        .filter(|g| g.dialect == dialect)
        .map(|g| g.unit)
        .collect();
    let mut events = template(dialect);
    for (pattern, at, i) in insertions {
        let unit = units[pattern.index(units.len())];
        events.insert(at.index(events.len() + 1), ("", Some(unit(*i))));
    }
    events
}

proptest! {
    #![proptest_config(config(500, 0x0b0u64 << 32 | 0x0dde))]

    /// Under small limits, whatever the stream: the bytes the events carry are counted, what
    /// is counted stays within the response limit (the error comes instead of growth), and the
    /// events still make a typed error or a well-formed response.
    #[test]
    fn what_a_stream_makes_the_response_hold_stays_within_the_limit(
        dialect in any_dialect(),
        insertions in prop::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0usize..40), 0..120),
        mutations in prop::collection::vec(mutation(), 0..3),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        max_response_bytes in 256usize..8192,
        max_event_bytes in 128usize..4096,
    ) {
        let mut events = growing_stream(dialect, &insertions);
        for m in &mutations {
            apply(&mut events, m);
        }
        let bytes = sse_body(dialect, &events);
        let limits = Limits { max_response_bytes };
        let mut body = BodyDecoder::new(dialect, limits).with_max_event_bytes(max_event_bytes);
        let mut assembler = BlockAssembler::new();
        let mut carried = 0;
        let mut end = Ok(());
        for chunk in rechunk(&bytes, &cuts).into_iter().map(Some).chain([None]) {
            let pushed = match chunk {
                Some(chunk) => body.push(chunk),
                None => body.finish(),
            };
            let decoded = body.take_events();
            carried += decoded.iter().map(carried_bytes).sum::<usize>();
            if let Err(e) = pushed {
                end = Err(e);
                break;
            }
            prop_assert!(carried <= body.held_bytes(), "{carried} carried, {} counted", body.held_bytes());
            prop_assert!(body.held_bytes() <= max_response_bytes);
            for event in decoded {
                if let Err(e) = assembler.push(event) {
                    end = Err(e.into());
                    break;
                }
            }
            if end.is_err() {
                break;
            }
        }
        if end.is_ok() {
            match assembler.finish() {
                Ok(response) => check_response(&response)?,
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}

// -------------------------------------------------------------------------- bounded time

/// Runs `work` on a thread and fails if it has not finished within `deadline` (the thread is
/// left to run out: a hung decoder would otherwise hang the test).
fn finishes_within(
    deadline: std::time::Duration,
    what: &str,
    work: impl FnOnce() + Send + 'static,
) {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        work();
        let _ = done.send(());
    });
    assert!(
        finished.recv_timeout(deadline).is_ok(),
        "{what}: not finished within {deadline:?}"
    );
}

/// Feeds `count` events made by `event` to a decoder under the default limits, which they
/// stay within; each must be taken in (near) constant time.
fn decode_many(dialect: Dialect, count: usize, event: fn(usize) -> Value) {
    let mut body = BodyDecoder::new(dialect, Limits::default());
    for i in 0..count {
        body.push(frame(dialect, &event(i)).as_bytes()).unwrap();
        body.take_events();
    }
}

// Each repeat of a call id is given a fresh one; finding it once scanned every item for every
// candidate suffix (Responses: 2,000 calls took 8 s, 4,000 took 65 s) or every call (Gemini:
// quadratic). A Chat Completions call replaced at its index was removed from the front of an
// ordered map, shifting every other open call (40,000 took 37 s). Each stream stays within the
// default limits; the deadline is generous for linear work in a debug build.
const LINEAR: std::time::Duration = std::time::Duration::from_secs(10);

#[test]
fn a_responses_stream_repeating_one_call_id_is_decoded_in_linear_time() {
    finishes_within(LINEAR, "Responses", || {
        decode_many(Dialect::OpenAiResponses, 5_000, |i| {
            json!({"type": "response.output_item.added", "item": {"type": "function_call",
                "id": format!("fc_{i}"), "call_id": "call", "name": "f"}})
        });
    });
}

#[test]
fn a_gemini_stream_repeating_one_call_id_is_decoded_in_linear_time() {
    finishes_within(LINEAR, "Gemini", || {
        decode_many(Dialect::Gemini, 60_000, |_| {
            json!({"candidates": [{"content": {"parts": [
                {"functionCall": {"id": "call_1", "name": "f", "args": {}}}]}}]})
        });
    });
}

#[test]
fn a_chat_stream_replacing_every_open_call_is_decoded_in_linear_time() {
    finishes_within(LINEAR, "Chat Completions", || {
        const OPEN: usize = 30_000;
        decode_many(Dialect::OpenAiChat, 2 * OPEN, |i| {
            let (index, id) = (i % OPEN, format!("call_{i}"));
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": index, "id": id, "function": {"name": "f", "arguments": "1"}}]}}]})
        });
    });
}
