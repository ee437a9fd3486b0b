//! The block assembler: order by start, out-of-order completion, and every way a stream can
//! fail to make one response.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet_directives::{AssistantBlock, ProviderMeta, StopReason, ToolArgs, Usage};
use motet_providers::{BlockAssembler, LlmEvent, ProviderError, StreamAssemblyError};

fn run(events: Vec<LlmEvent>) -> Result<motet_directives::LlmResponse, StreamAssemblyError> {
    let mut asm = BlockAssembler::new();
    for e in events {
        asm.push(e)?;
    }
    asm.finish()
}

fn text(s: &str) -> LlmEvent {
    LlmEvent::TextDelta {
        delta: s.into(),
        meta: None,
    }
}

fn done(reason: StopReason) -> LlmEvent {
    LlmEvent::Done {
        stop_reason: reason,
    }
}

fn start(id: &str, name: &str) -> LlmEvent {
    LlmEvent::ToolCallStart {
        id: id.into(),
        name: name.into(),
        meta: None,
    }
}

fn delta(id: &str, args: &str) -> LlmEvent {
    LlmEvent::ToolCallDelta {
        id: id.into(),
        args_delta: args.into(),
    }
}

fn complete(id: &str) -> LlmEvent {
    LlmEvent::ToolCallComplete {
        id: id.into(),
        args: None,
        meta: None,
    }
}

#[test]
fn blocks_keep_the_order_of_their_starts_whatever_the_order_of_completion() {
    let signature = ProviderMeta::Anthropic {
        signature: "sig".into(),
    };
    let r = run(vec![
        LlmEvent::Started {
            model: Some("m".into()),
            response_id: Some("r".into()),
        },
        LlmEvent::ReasoningStart { key: "k".into() },
        text("Hel"),
        start("a", "first"),
        start("b", "second"),
        text("lo"),
        delta("b", "{\"y\":"),
        delta("a", "{\"x\":1}"),
        delta("b", "2}"),
        complete("b"),
        LlmEvent::ReasoningDelta {
            key: "k".into(),
            delta: "thought".into(),
        },
        complete("a"),
        LlmEvent::ReasoningComplete {
            key: "k".into(),
            text: None,
            meta: Some(signature.clone()),
        },
        LlmEvent::Usage {
            usage: Usage {
                input_tokens: 1,
                ..Usage::default()
            },
        },
        done(StopReason::ToolUse),
        LlmEvent::Usage {
            usage: Usage {
                input_tokens: 5,
                output_tokens: 7,
                ..Usage::default()
            },
        },
    ])
    .unwrap();
    assert_eq!(
        r.message.blocks,
        [
            AssistantBlock::reasoning("thought", Some(signature)),
            AssistantBlock::text("Hel"),
            AssistantBlock::tool_use("a", "first", ToolArgs::from_text("{\"x\":1}")),
            AssistantBlock::tool_use("b", "second", ToolArgs::from_text("{\"y\":2}")),
            AssistantBlock::text("lo"),
        ]
    );
    assert_eq!(
        r.usage.input_tokens, 5,
        "usage is cumulative: the last report wins"
    );
    assert_eq!(r.usage.output_tokens, 7);
    assert_eq!(r.model.as_deref(), Some("m"));
    assert_eq!(r.message.stop_reason, StopReason::ToolUse);
}

#[test]
fn whole_values_at_completion_replace_the_deltas_and_empty_args_are_an_object() {
    let r = run(vec![
        LlmEvent::ReasoningStart { key: "k".into() },
        LlmEvent::ReasoningDelta {
            key: "k".into(),
            delta: "partial summary".into(),
        },
        LlmEvent::ReasoningComplete {
            key: "k".into(),
            text: Some("full summary".into()),
            meta: None,
        },
        start("a", "now"),
        complete("a"),
        start("b", "add"),
        delta("b", "{\"a\":"),
        LlmEvent::ToolCallComplete {
            id: "b".into(),
            args: Some("{\"a\": 1}".into()),
            meta: None,
        },
        done(StopReason::ToolUse),
    ])
    .unwrap();
    assert_eq!(
        r.message.blocks[0],
        AssistantBlock::reasoning("full summary", None)
    );
    let calls: Vec<&str> = r.message.tool_calls().map(|c| c.args.get()).collect();
    assert_eq!(calls, ["{}", "{\"a\": 1}"]);
}

#[test]
fn a_text_delta_with_meta_starts_its_own_block() {
    let meta = ProviderMeta::Gemini {
        thought_signature: "s".into(),
    };
    let r = run(vec![
        text("a"),
        LlmEvent::TextDelta {
            delta: "b".into(),
            meta: Some(meta.clone()),
        },
        text("c"),
        done(StopReason::EndTurn),
    ])
    .unwrap();
    assert_eq!(
        r.message.blocks,
        [
            AssistantBlock::text("a"),
            AssistantBlock::Text {
                text: "bc".into(),
                meta: Some(Box::new(meta))
            },
        ]
    );
}

/// After a `TextStart` the next delta opens a block, even after text; a `TextStart` without
/// text leaves nothing; the meta that follows lands on the block it opened.
#[test]
fn a_text_start_opens_a_new_block_for_the_next_delta() {
    let citations = ProviderMeta::AnthropicCitations {
        citations: vec![r#"{"type":"char_location"}"#.into()],
    };
    let r = run(vec![
        text("a"),
        LlmEvent::TextStart,
        text("b"),
        text("c"),
        LlmEvent::TextMeta {
            meta: citations.clone(),
        },
        LlmEvent::TextStart,
        LlmEvent::TextStart,
        text("d"),
        LlmEvent::TextStart,
        start("call_1", "f"),
        complete("call_1"),
        text("e"),
        LlmEvent::TextStart,
        done(StopReason::EndTurn),
    ])
    .unwrap();
    assert_eq!(
        r.message.blocks,
        [
            AssistantBlock::text("a"),
            AssistantBlock::Text {
                text: "bc".into(),
                meta: Some(Box::new(citations))
            },
            AssistantBlock::text("d"),
            AssistantBlock::tool_use("call_1", "f", ToolArgs::empty_object()),
            AssistantBlock::text("e"),
        ]
    );
}

#[test]
fn each_malformed_stream_is_its_own_error() {
    assert!(matches!(
        run(vec![delta("nope", "{}")]),
        Err(StreamAssemblyError::UnknownBlock { .. })
    ));
    assert!(matches!(
        run(vec![start("a", "t"), start("a", "t")]),
        Err(StreamAssemblyError::DuplicateStart { .. })
    ));
    assert!(matches!(
        run(vec![start("a", "t"), complete("a"), delta("a", "x")]),
        Err(StreamAssemblyError::UnknownBlock { .. })
    ));
    assert!(matches!(
        run(vec![done(StopReason::EndTurn), text("late")]),
        Err(StreamAssemblyError::AfterDone)
    ));
    assert_eq!(run(vec![text("no end")]), Err(StreamAssemblyError::NotDone));
    assert!(matches!(
        run(vec![start("a", "t"), done(StopReason::ToolUse)]),
        Err(StreamAssemblyError::Unfinished { .. })
    ));
    assert!(matches!(
        run(vec![
            LlmEvent::ReasoningStart { key: "k".into() },
            done(StopReason::EndTurn)
        ]),
        Err(StreamAssemblyError::Unfinished { .. })
    ));
}

#[test]
fn arguments_that_are_not_json_are_kept_for_the_tool_to_answer() {
    // Once a protocol error that failed the whole response (issue 18); the tool set answers
    // the call with an error result instead, which the model can correct.
    let r = run(vec![
        start("a", "t"),
        delta("a", "{oops"),
        complete("a"),
        done(StopReason::ToolUse),
    ])
    .unwrap();
    let call = r.message.tool_calls().next().unwrap();
    assert_eq!(call.args.get(), "{oops");
    assert!(!call.args.is_object());
}

#[test]
fn max_tokens_inside_a_tool_call_withholds_it() {
    for events in [
        vec![
            start("a", "write"),
            delta("a", "{\"x\": \"lo"),
            done(StopReason::MaxTokens),
        ],
        vec![
            start("a", "write"),
            delta("a", "{\"x\": \"lo"),
            complete("a"),
            done(StopReason::MaxTokens),
        ],
    ] {
        let err = run(events).unwrap_err();
        assert_eq!(
            err,
            StreamAssemblyError::MaxTokensInToolCall {
                tool: "write".into()
            }
        );
        assert_eq!(
            ProviderError::from(err),
            ProviderError::MaxTokensInToolCall {
                tool: "write".into()
            }
        );
    }
    // Max tokens after a whole call and some text is an ordinary cut-off answer.
    let r = run(vec![
        start("a", "write"),
        delta("a", "{}"),
        complete("a"),
        text("and then"),
        done(StopReason::MaxTokens),
    ])
    .unwrap();
    assert_eq!(r.message.stop_reason, StopReason::MaxTokens);
}

#[test]
fn errors_become_provider_errors() {
    assert!(matches!(
        ProviderError::from(StreamAssemblyError::NotDone),
        ProviderError::StreamTruncated { .. }
    ));
    assert!(matches!(
        ProviderError::from(StreamAssemblyError::AfterDone),
        ProviderError::Protocol { .. }
    ));
}
