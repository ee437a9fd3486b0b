//! Prompt caching on the wire: where the Anthropic dialect puts its `cache_control` marks (at
//! most four: last tool, system, the end of the stable prefix and the end of the call before),
//! the OpenAI `prompt_cache_key`, and the cached tokens every dialect reads back from recorded
//! streams.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::sync::Arc;

use motet_directives::{
    AssistantMessage, CacheTtl, LlmOptions, LlmRequest, Message, PromptCache, ToolArgs, ToolDef,
    ToolResult, Usage,
};
use motet_providers::{Dialect, transcript};
use serde_json::{Value, json};

use common::fixture;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");

fn golden(name: &str) -> Value {
    let path = format!("{GOLDEN}/{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn tools() -> Arc<[ToolDef]> {
    let schema = json!({"type": "object", "properties": {"topic": {"type": "string"}}});
    Arc::from(vec![
        ToolDef::new("lookup", "Look a topic up.", schema.clone()),
        ToolDef::new("save", "Save a note.", schema),
    ])
}

/// A tool call and its result.
fn tool_turn(id: &str, topic: &str) -> [Message; 2] {
    let call = AssistantMessage {
        blocks: vec![motet_directives::AssistantBlock::tool_use(
            id,
            "lookup",
            ToolArgs::from_text(format!(r#"{{"topic":"{topic}"}}"#)),
        )],
        stop_reason: motet_directives::StopReason::ToolUse,
    };
    [
        Message::Assistant(call),
        Message::ToolResults {
            results: vec![ToolResult::ok(id, format!("{topic}: a river city."))],
        },
    ]
}

/// A conversation of `turns` user turns, each a question, a tool call, its result and an
/// answer; the last turn stops after the tool result (the call being made now).
fn conversation(turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You answer in a few words.")];
    for turn in 0..turns {
        messages.push(Message::user(format!("Question {turn}?")));
        messages.extend(tool_turn(&format!("call_{turn}"), &format!("topic {turn}")));
        if turn + 1 < turns {
            messages.push(Message::Assistant(AssistantMessage::text(format!(
                "Answer {turn}."
            ))));
        }
    }
    messages
}

fn request(model: &str, messages: Vec<Message>) -> LlmRequest {
    LlmRequest::new(model.parse().unwrap(), messages)
        .with_tools(tools())
        .with_options(LlmOptions {
            max_tokens: Some(256),
            ..LlmOptions::default()
        })
}

/// Every `cache_control` value in `body`, with the JSON path of the block that holds it.
fn marks(body: &Value) -> Vec<(String, Value)> {
    fn walk(value: &Value, path: String, out: &mut Vec<(String, Value)>) {
        match value {
            Value::Object(map) => {
                if let Some(mark) = map.get("cache_control") {
                    out.push((path.clone(), mark.clone()));
                }
                for (key, child) in map {
                    walk(child, format!("{path}.{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, String::new(), &mut out);
    out
}

fn paths(body: &Value) -> Vec<String> {
    marks(body).into_iter().map(|(path, _)| path).collect()
}

#[test]
fn anthropic_marks_the_last_tool_the_system_and_the_ends_of_this_call_and_the_one_before() {
    let messages = conversation(3);
    let stable = messages.len();
    let req = request("anthropic:claude-sonnet-4-5", messages).with_stable_prefix(stable);
    let body = Dialect::Anthropic.render(&req).unwrap();
    assert_eq!(
        body,
        golden("anthropic/prompt_cache.json"),
        "rendered\n{}",
        serde_json::to_string_pretty(&body).unwrap()
    );
    // Turns: 0 question, 1 call, 2 results, 3 answer, 4 question, ..., 8 question, 9 call,
    // 10 results (this call ends here). The call before this one ended with question 2 (8).
    assert_eq!(
        paths(&body),
        [
            ".messages[8].content[0]",
            ".messages[10].content[0]",
            ".system[0]",
            ".tools[1]",
        ]
    );
    assert!(
        marks(&body)
            .iter()
            .all(|(_, mark)| *mark == json!({"type": "ephemeral"}))
    );
}

#[test]
fn anthropic_never_sends_more_than_four_marks_and_only_on_user_turns_inside_the_stable_prefix() {
    for turns in 1..8 {
        let messages = conversation(turns);
        for stable in 0..=messages.len() {
            let req =
                request("anthropic:claude-sonnet-4-5", messages.clone()).with_stable_prefix(stable);
            let body = Dialect::Anthropic.render(&req).unwrap();
            let found = paths(&body);
            assert!(
                found.len() <= 4,
                "{turns} turns, stable {stable}: {found:?}"
            );
            assert!(found.contains(&".tools[1]".to_owned()));
            assert!(found.contains(&".system[0]".to_owned()));
            let turns_marked: Vec<usize> = found
                .iter()
                .filter_map(|p| p.strip_prefix(".messages["))
                .filter_map(|p| p.split(']').next()?.parse().ok())
                .collect();
            for turn in &turns_marked {
                assert_eq!(body["messages"][turn]["role"], "user", "{found:?}");
            }
            // A turn is the message after it (the system message makes none); only turns
            // from the stable prefix are marked, the last two of them.
            let stable_user_turns = (0..body["messages"].as_array().unwrap().len())
                .filter(|t| t + 1 < stable && body["messages"][t]["role"] == "user")
                .count();
            assert_eq!(turns_marked.len(), stable_user_turns.min(2), "{found:?}");
        }
    }
}

#[test]
fn anthropic_without_a_stable_prefix_marks_only_tools_and_system() {
    let req = request("anthropic:claude-sonnet-4-5", conversation(2));
    let body = Dialect::Anthropic.render(&req).unwrap();
    assert_eq!(paths(&body), [".system[0]", ".tools[1]"]);
    // A sliding window repeats only its system prompt: the same marks.
    let sliding = req.clone().with_stable_prefix(1);
    let body = Dialect::Anthropic.render(&sliding).unwrap();
    assert_eq!(paths(&body), [".system[0]", ".tools[1]"]);
}

#[test]
fn anthropic_with_caching_off_marks_nothing_and_keeps_the_system_a_string() {
    let messages = conversation(2);
    let stable = messages.len();
    let mut req = request("anthropic:claude-sonnet-4-5", messages).with_stable_prefix(stable);
    req.options.prompt_cache = PromptCache::off();
    let body = Dialect::Anthropic.render(&req).unwrap();
    assert!(marks(&body).is_empty(), "{body}");
    assert_eq!(body["system"], "You answer in a few words.");
}

#[test]
fn anthropic_one_hour_ttl_marks_every_breakpoint_with_it() {
    let messages = conversation(2);
    let stable = messages.len();
    let mut req = request("anthropic:claude-sonnet-4-5", messages).with_stable_prefix(stable);
    req.options.prompt_cache.ttl = CacheTtl::OneHour;
    let body = Dialect::Anthropic.render(&req).unwrap();
    let found = marks(&body);
    assert_eq!(found.len(), 4);
    assert!(
        found
            .iter()
            .all(|(_, mark)| *mark == json!({"type": "ephemeral", "ttl": "1h"}))
    );
}

#[test]
fn anthropic_marks_a_plain_user_question_as_one_text_block() {
    let messages = vec![Message::system("Be brief."), Message::user("Hello?")];
    let req = request("anthropic:claude-sonnet-4-5", messages).with_stable_prefix(2);
    let body = Dialect::Anthropic.render(&req).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        json!([{"type": "text", "text": "Hello?", "cache_control": {"type": "ephemeral"}}])
    );
}

#[test]
fn openai_sends_the_prompt_cache_key_and_compatible_servers_do_not_get_it() {
    let key = PromptCache::key_for(&["agent", "thread-1"]);
    let keyed = |model: &str| {
        let mut req = request(model, conversation(1));
        req.options.prompt_cache.key = Some(key.clone());
        req
    };
    let chat = Dialect::OpenAiChat
        .render(&keyed("openai:gpt-5.2"))
        .unwrap();
    assert_eq!(chat["prompt_cache_key"], json!(key));
    let compat = Dialect::OpenAiChat
        .render(&keyed("openai-compat:smollm2-135m"))
        .unwrap();
    assert!(compat.get("prompt_cache_key").is_none(), "{compat}");
    let responses = Dialect::OpenAiResponses
        .render(&keyed("openai-responses:gpt-5.2"))
        .unwrap();
    assert_eq!(responses["prompt_cache_key"], json!(key));
    // No key, no field.
    let plain = Dialect::OpenAiResponses
        .render(&request("openai-responses:gpt-5.2", conversation(1)))
        .unwrap();
    assert!(plain.get("prompt_cache_key").is_none());
    // OpenAI has no cache_control: nothing is marked there.
    assert!(marks(&chat).is_empty() && marks(&responses).is_empty());
}

#[test]
fn the_cache_key_is_stable_per_thread_and_does_not_show_the_ids() {
    let key = PromptCache::key_for(&["support", "thread-42"]);
    assert_eq!(key, PromptCache::key_for(&["support", "thread-42"]));
    assert_ne!(key, PromptCache::key_for(&["support", "thread-43"]));
    assert_ne!(key, PromptCache::key_for(&["support-", "thread-42"]));
    assert_ne!(
        PromptCache::key_for(&["ab", "c"]),
        PromptCache::key_for(&["a", "bc"])
    );
    assert!(!key.contains("thread") && !key.contains("support"));
    assert!(key.starts_with("motet-") && key.len() == "motet-".len() + 32);
}

fn usage_of(dialect: Dialect, path: &str) -> Usage {
    transcript::assemble(dialect, &fixture(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .usage
}

#[test]
fn cached_tokens_are_read_from_recorded_streams_of_every_dialect() {
    // Anthropic: cache reads are not in `input_tokens`; motet's input counts them in.
    let u = usage_of(
        Dialect::Anthropic,
        "anthropic/compaction-iterations-cache-read-sonnet-4.6.sse",
    );
    assert_eq!((u.cache_read_tokens, u.cache_write_tokens), (55_096, 0));
    assert!(u.input_tokens >= u.cache_read_tokens);
    // OpenAI Responses: input_tokens_details.cached_tokens, inside input_tokens.
    let u = usage_of(
        Dialect::OpenAiResponses,
        "openai-responses/web-search-call-gpt-5.sse",
    );
    assert_eq!((u.input_tokens, u.cache_read_tokens), (9_463, 8_320));
    // OpenAI Chat Completions: prompt_tokens_details.cached_tokens (0 in this recording).
    let u = usage_of(Dialect::OpenAiChat, "openai-chat/text-usage-gpt-5.sse");
    assert_eq!(u.cache_read_tokens, 0);
    assert!(u.input_tokens > 0);
}

#[test]
fn cached_tokens_are_read_from_a_llama_cpp_server_in_all_three_dialects() {
    // The second of two requests with the same prompt: all but the last prompt token cached.
    for (dialect, path) in [
        (
            Dialect::OpenAiChat,
            "llama-cpp/chat_cached_prefix_stream.sse",
        ),
        (
            Dialect::OpenAiResponses,
            "llama-cpp/responses_cached_prefix_stream.sse",
        ),
        (
            Dialect::Anthropic,
            "llama-cpp/messages_cached_prefix_stream.sse",
        ),
    ] {
        let u = usage_of(dialect, path);
        assert_eq!((u.input_tokens, u.cache_read_tokens), (44, 43), "{path}");
    }
}

#[test]
fn chat_falls_back_to_llama_cpp_timings_when_the_usage_has_no_details() {
    // The recorded llama.cpp stream with `prompt_tokens_details` taken out, as servers older
    // than that field send it: `timings.cache_n` says the same.
    let raw = String::from_utf8(fixture("llama-cpp/chat_cached_prefix_stream.sse")).unwrap();
    let older = raw.replace(r#","prompt_tokens_details":{"cached_tokens":43}"#, "");
    assert_ne!(older, raw);
    let u = transcript::assemble(Dialect::OpenAiChat, older.as_bytes())
        .unwrap()
        .usage;
    assert_eq!((u.input_tokens, u.cache_read_tokens), (44, 43));
    // No timings either: nothing cached is claimed.
    let bare = older.replace(r#""cache_n":43,"#, "");
    assert_ne!(bare, older);
    let u = transcript::assemble(Dialect::OpenAiChat, bare.as_bytes())
        .unwrap()
        .usage;
    assert_eq!(u.cache_read_tokens, 0);
}

#[test]
fn gemini_reads_implicitly_cached_tokens() {
    // The recorded Gemini stream, its last usageMetadata given a cachedContentTokenCount as
    // Gemini adds it when the implicit cache hit (no recording with a hit is at hand).
    let raw = String::from_utf8(fixture("gemini/text-usage-gemini-2.0-flash.sse")).unwrap();
    let plain = transcript::assemble(Dialect::Gemini, raw.as_bytes())
        .unwrap()
        .usage;
    assert_eq!(plain.cache_read_tokens, 0);
    let at = raw.rfind(r#""promptTokenCount": 13,"#).unwrap();
    let mut hit = raw.clone();
    hit.insert_str(at, r#""cachedContentTokenCount": 8,"#);
    let u = transcript::assemble(Dialect::Gemini, hit.as_bytes())
        .unwrap()
        .usage;
    assert_eq!((u.input_tokens, u.cache_read_tokens), (13, 8));
}
