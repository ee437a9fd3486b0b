//! JSON round trips of the whole directive vocabulary: every type and variant survives
//! serialize → parse → serialize unchanged, provider meta byte for byte.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use motet_directives::{
    AssistantBlock, AssistantMessage, CacheTtl, CallId, CancelSchedule, ChildSpec, Directive, Emit,
    EmitTarget, HostedTool, LlmOptions, LlmRequest, LlmResponse, LlmStream, McpServer, Message,
    ModelRef, Part, PromptCache, ProviderMeta, ReasoningEffort, Schedule, ScheduleId, Spawn, Stop,
    StopChild, StopReason, Summarize, ToolArgs, ToolChoice, ToolDef, ToolExec, ToolResult, Usage,
    WebSearch,
};
use motet_signals::Signal;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Serializes, parses back, checks equality and that the text is stable; returns the text.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, value, "value changed through {text}");
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        text,
        "text not stable"
    );
    // Through a `serde_json::Value` too (how signal data is read).
    let value_form: Value = serde_json::from_str(&text).unwrap();
    let via_value = T::deserialize(&value_form).unwrap();
    assert_eq!(
        serde_json::to_value(&via_value).unwrap(),
        value_form,
        "value form changed"
    );
    text
}

fn json_of<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

fn metas() -> Vec<ProviderMeta> {
    vec![
        ProviderMeta::Anthropic {
            signature: "EqQBCkYIARgCKkB+/x=\u{e9}".into(),
        },
        ProviderMeta::AnthropicRedacted {
            data: "RXJyb3I6IGVuY3J5cHRlZA==".into(),
        },
        ProviderMeta::Gemini {
            thought_signature: "CiQB0e2Kb\"quoted\"\\slash".into(),
        },
        ProviderMeta::OpenAi {
            id: "rs_68a1".into(),
            encrypted_content: Some("gAAAAABo...".into()),
        },
        ProviderMeta::OpenAi {
            id: "rs_68a2".into(),
            encrypted_content: None,
        },
        ProviderMeta::OpenAiMessage {
            phase: "commentary".into(),
        },
        ProviderMeta::AnthropicCitations {
            citations: vec![
                r#"{ "type" : "web_search_result_location","cited_text":"caf\u00e9 \"Le Nord\"\n","n":1.50}"#.into(),
                r#"{"type":"char_location","document_index":0}"#.into(),
            ],
        },
    ]
}

#[test]
fn provider_meta_every_variant_with_its_wire_names() {
    let shapes: Vec<Value> = metas().iter().map(json_of).collect();
    assert_eq!(shapes[0]["provider"], "anthropic");
    assert_eq!(shapes[1]["provider"], "anthropic_redacted");
    assert_eq!(shapes[2]["provider"], "gemini");
    assert!(shapes[2].get("thoughtSignature").is_some());
    assert_eq!(shapes[3]["provider"], "openai");
    assert!(shapes[4].get("encrypted_content").is_none());
    assert_eq!(
        shapes[5],
        json!({"provider": "openai_message", "phase": "commentary"})
    );
    assert_eq!(shapes[6]["provider"], "anthropic_citations");
    assert!(shapes[6]["citations"][0].is_string());
    let families: Vec<&str> = metas().iter().map(ProviderMeta::family).collect();
    assert_eq!(
        families,
        [
            "anthropic",
            "anthropic",
            "gemini",
            "openai",
            "openai",
            "openai",
            "anthropic"
        ]
    );
    for meta in metas() {
        round_trip(&meta);
    }
}

#[test]
fn provider_meta_is_replayed_byte_for_byte() {
    // Text as a provider adapter or a store would hold it, with escapes and non-ASCII.
    let stored = r#"{"block_type":"reasoning","text":"step \u00e9 by step","meta":{"provider":"anthropic","signature":"Eq+/=\u00e9\"x"}}"#;
    let block: AssistantBlock = serde_json::from_str(stored).unwrap();
    let Some(ProviderMeta::Anthropic { signature }) = block.meta() else {
        panic!("meta lost: {block:?}");
    };
    assert_eq!(signature, "Eq+/=\u{e9}\"x");
    // Every meta survives a round trip with the same bytes.
    for meta in metas() {
        let block = AssistantBlock::reasoning("r", Some(meta.clone()));
        let text = round_trip(&block);
        let back: AssistantBlock = serde_json::from_str(&text).unwrap();
        assert_eq!(back.meta(), Some(&meta));
    }
}

#[test]
fn blocks_messages_and_turns() {
    let with_meta = AssistantBlock::Text {
        text: "hi".into(),
        meta: Some(Box::new(ProviderMeta::Gemini {
            thought_signature: "sig".into(),
        })),
    };
    let tool = AssistantBlock::ToolUse {
        id: "call_1".into(),
        name: "add".into(),
        args: ToolArgs::from_text(r#"{"b":2,"a":1}"#),
        meta: Some(Box::new(ProviderMeta::Gemini {
            thought_signature: "fc-sig".into(),
        })),
    };
    let turn = AssistantMessage {
        blocks: vec![
            AssistantBlock::reasoning("", None),
            with_meta.clone(),
            tool.clone(),
            AssistantBlock::text("after"),
        ],
        stop_reason: StopReason::ToolUse,
    };
    for block in &turn.blocks {
        round_trip(block);
    }
    round_trip(&turn);
    assert_eq!(json_of(&tool)["block_type"], "tool_use");
    // A reasoning block with no text reads back with an empty text.
    let bare: AssistantBlock = serde_json::from_str(r#"{"block_type":"reasoning"}"#).unwrap();
    assert_eq!(bare, AssistantBlock::reasoning("", None));
    let messages = [
        Message::system("be brief"),
        Message::user("2+2?"),
        Message::Assistant(turn),
        Message::ToolResults {
            results: vec![
                ToolResult::ok("call_1", "3"),
                ToolResult::error("call_2", "boom"),
            ],
        },
    ];
    for message in &messages {
        let text = round_trip(message);
        assert!(text.contains(&format!(r#""role":"{}""#, message.role())));
    }
}

/// A Responses turn with a commentary message, a server-side item motet does not model, and the
/// final answer: the phases and the item's exact JSON text survive a store round trip.
#[test]
fn openai_message_phase_and_opaque_items_round_trip() {
    let item = r#"{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"caf\u00e9  hours"}}"#;
    let phased = |text: &str, phase: &str| AssistantBlock::Text {
        text: text.into(),
        meta: Some(Box::new(ProviderMeta::OpenAiMessage {
            phase: phase.into(),
        })),
    };
    let turn = AssistantMessage {
        blocks: vec![
            phased("Let me look that up.", "commentary"),
            AssistantBlock::opaque("openai", item),
            phased("It opens at nine.", "final_answer"),
        ],
        stop_reason: StopReason::EndTurn,
    };
    let text = round_trip(&Message::Assistant(turn.clone()));
    let back: Message = serde_json::from_str(&text).unwrap();
    let Message::Assistant(back) = back else {
        panic!("not an assistant turn: {back:?}");
    };
    let AssistantBlock::Opaque {
        provider,
        item: kept,
    } = &back.blocks[1]
    else {
        panic!("opaque block lost: {back:?}");
    };
    assert_eq!((provider.as_str(), kept.as_str()), ("openai", item));
    assert_eq!(back.blocks[1].meta(), None);
    assert_eq!(
        json_of(&back.blocks[1]),
        json!({"block_type": "opaque", "provider": "openai", "item": item})
    );
    assert_eq!(back, turn);
    assert_eq!(back.to_string(), "Let me look that up.It opens at nine.");
}

/// Threads stored before phases and opaque items existed still load, unchanged.
#[test]
fn stored_blocks_without_phase_still_load() {
    let stored = r#"{"role":"assistant","blocks":[{"block_type":"text","text":"hi"},{"block_type":"reasoning","text":"r","meta":{"provider":"openai","id":"rs_1","encrypted_content":"enc"}}],"stop_reason":"end_turn"}"#;
    let message: Message = serde_json::from_str(stored).unwrap();
    let Message::Assistant(turn) = &message else {
        panic!("not an assistant turn: {message:?}");
    };
    assert_eq!(turn.blocks[0], AssistantBlock::text("hi"));
    assert_eq!(
        turn.blocks[1].meta(),
        Some(&ProviderMeta::OpenAi {
            id: "rs_1".into(),
            encrypted_content: Some("enc".into()),
        })
    );
    assert_eq!(serde_json::to_string(&message).unwrap(), stored);
}

#[test]
fn tool_args_object_text_is_kept_exactly_outside_blocks() {
    let raw = r#"{"b": 2,  "a": [1, 2.50, "x"]}"#;
    let args = ToolArgs::from_text(raw);
    assert!(args.is_object());
    let text = serde_json::to_string(&args).unwrap();
    assert_eq!(text, raw);
    let back: ToolArgs = serde_json::from_str(&text).unwrap();
    assert_eq!(back.get(), raw);
    // Inside a plain struct (ToolExec) the bytes survive too.
    let exec = ToolExec::new(CallId::new("c1"), "t1", "add", args);
    let json = serde_json::to_string(&exec).unwrap();
    assert!(!json.contains("approved"), "{json}");
    let back: ToolExec = serde_json::from_str(&json).unwrap();
    assert_eq!(back.args.get(), raw);
}

#[test]
fn tool_args_inside_blocks_keep_key_order_and_meaning() {
    // AssistantBlock is internally tagged, so serde buffers it: arguments come back compact,
    // keys in their original order.
    let block = AssistantBlock::tool_use(
        "c",
        "f",
        ToolArgs::from_text(r#"{"b": 1, "a": {"z": null, "y": true}}"#),
    );
    let text = serde_json::to_string(&block).unwrap();
    let back: AssistantBlock = serde_json::from_str(&text).unwrap();
    let call = back.as_tool_call().unwrap();
    assert_eq!(call.args.get(), r#"{"b":1,"a":{"z":null,"y":true}}"#);
    let original: Value = serde_json::from_str(block.as_tool_call().unwrap().args.get()).unwrap();
    assert_eq!(call.args.parse::<Value>().unwrap(), original);
}

#[test]
fn tool_args_that_are_not_json_round_trip_verbatim() {
    for raw in [
        "{\"a\": 1",
        "",
        "not json",
        "[1,2]",
        "42",
        "\"quoted\"",
        "{} trailing",
        "  {\"a\":1}x",
    ] {
        let args = ToolArgs::from_text(raw);
        assert!(!args.is_object(), "{raw:?} is not an object");
        let text = serde_json::to_string(&args).unwrap();
        let back: ToolArgs = serde_json::from_str(&text).unwrap();
        assert_eq!(back.get(), raw);
        // And inside a turn, where the block is buffered.
        let block = AssistantBlock::tool_use("c", "f", args.clone());
        let back: AssistantBlock =
            serde_json::from_str(&serde_json::to_string(&block).unwrap()).unwrap();
        assert_eq!(back, block);
        assert_eq!(back.as_tool_call().unwrap().args.get(), raw);
    }
}

/// `{"a":[[…1…]]}` with the `1` `depth` levels down (the object is level 1).
fn nested_object(depth: usize) -> String {
    format!(
        r#"{{"a":{}1{}}}"#,
        "[".repeat(depth - 1),
        "]".repeat(depth - 1)
    )
}

#[test]
fn tool_args_nested_past_the_limit_are_text_that_says_why_and_still_travel() {
    let at_limit = ToolArgs::from_text(nested_object(ToolArgs::MAX_DEPTH));
    assert!(at_limit.is_object());
    assert_eq!(at_limit.problem(), None);
    // Brackets and escaped quotes inside strings are not nesting.
    let in_strings = format!(
        r#"{{"s":"{}\"{}","a":{}"#,
        "[".repeat(300),
        "{".repeat(300),
        &nested_object(ToolArgs::MAX_DEPTH - 1)[5..]
    );
    assert!(ToolArgs::from_text(&in_strings).is_object(), "{in_strings}");

    for depth in [ToolArgs::MAX_DEPTH + 1, 128, 200, 100_000] {
        let raw = nested_object(depth);
        let args = ToolArgs::from_text(raw.clone());
        assert!(!args.is_object(), "{depth} deep");
        assert_eq!(
            args.problem().as_deref(),
            Some("tool arguments nest deeper than 100 levels"),
            "{depth} deep"
        );
        assert_eq!(args.get(), raw);
        // Through a JSON value (a signal's data), and stored and read back inside a buffered
        // block: the text stays the model's, byte for byte (as an object it failed the first
        // and could not be read back from the second).
        let block = AssistantBlock::tool_use("c", "f", args);
        let value = serde_json::to_value(&block).unwrap();
        let back: AssistantBlock = serde_json::from_value(value).unwrap();
        assert_eq!(back, block);
        let back: AssistantBlock =
            serde_json::from_str(&serde_json::to_string(&block).unwrap()).unwrap();
        assert_eq!(back.as_tool_call().unwrap().args.get(), raw);
    }
    // Other text that is not an object says why too.
    assert_eq!(
        ToolArgs::from_text("[1]").problem().as_deref(),
        Some("expected a JSON object; received: [1]")
    );
    // The parser's words, and the text as the model wrote it.
    assert_eq!(
        ToolArgs::from_text("{\"a\": ").problem().as_deref(),
        Some("not valid JSON: EOF while parsing a value at line 1 column 6; received: {\"a\": ")
    );
}

/// A user message stored before parts existed reads back as plain text and writes out byte for
/// byte as it was stored; a message of parts and a tool result with an image round trip too.
#[test]
fn user_text_as_stored_before_parts_and_multimodal_messages() {
    let stored = r#"{"role":"user","content":"2+2? \u00e9\n"}"#;
    let read: Message = serde_json::from_str(stored).unwrap();
    assert_eq!(read, Message::user("2+2? é\n"));
    assert_eq!(
        serde_json::to_string(&read).unwrap(),
        r#"{"role":"user","content":"2+2? é\n"}"#
    );
    assert_eq!(
        round_trip(&Message::user("plain")),
        r#"{"role":"user","content":"plain"}"#
    );
    let parts = Message::user_parts([
        Part::text("compare"),
        Part::image_bytes("image/png", vec![0_u8, 1, 2, 250, 251, 252, 253]),
        Part::image_url("https://example.com/cat.jpg"),
        Part::document_bytes("application/pdf", &b"%PDF-1.4"[..]).with_name("a.pdf"),
        Part::audio_bytes("audio/wav", &b"RIFF"[..]),
    ]);
    let text = round_trip(&parts);
    assert!(text.contains(r#""data":"AAEC+vv8/Q==""#), "{text}");
    let result = ToolResult::ok("c1", "a screenshot")
        .with_attachments([Part::image_bytes("image/jpeg", vec![0xff, 0xd8, 0xff])]);
    let text = round_trip(&result);
    assert!(text.contains("attachments"), "{text}");
    assert!(
        !round_trip(&ToolResult::ok("c1", "4")).contains("attachments"),
        "a result without attachments is stored as before"
    );
}

#[test]
fn tool_results_definitions_and_choice() {
    let ok = round_trip(&ToolResult::ok("c1", "4"));
    assert!(!ok.contains("is_error"), "a success omits is_error: {ok}");
    round_trip(&ToolResult::error("c2", "division by zero"));
    round_trip(&ToolDef::new(
        "add",
        "Adds two numbers",
        json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}),
    ));
    for choice in [
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::Tool { name: "add".into() },
    ] {
        round_trip(&choice);
    }
}

#[test]
fn usage_stop_reasons_and_responses() {
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 80,
        cache_write_tokens: 5,
        reasoning_tokens: 7,
    };
    round_trip(&usage);
    let sparse: Usage = serde_json::from_str(r#"{"input_tokens":3}"#).unwrap();
    assert_eq!(sparse.input_tokens + sparse.output_tokens, 3);
    assert_eq!((usage + sparse).input_tokens, 103);
    for reason in [
        StopReason::EndTurn,
        StopReason::ToolUse,
        StopReason::MaxTokens,
        StopReason::StopSequence,
        StopReason::ContentFilter,
        StopReason::Refusal,
        StopReason::Cancelled,
        StopReason::PauseTurn,
        StopReason::Other("SAFETY".into()),
    ] {
        let text = round_trip(&reason);
        assert_eq!(text, format!("\"{}\"", reason.as_str()));
    }
    let other: StopReason = serde_json::from_str(r#""MALFORMED_FUNCTION_CALL""#).unwrap();
    assert_eq!(other, StopReason::Other("MALFORMED_FUNCTION_CALL".into()));
    let mut response = LlmResponse::new(AssistantMessage::text("4"), usage);
    round_trip(&response);
    response.model = Some("gpt-5.2-2026-01-01".into());
    response.response_id = Some("resp_1".into());
    round_trip(&response);
}

fn request() -> LlmRequest {
    let tools: Arc<[ToolDef]> = vec![ToolDef::new("add", "Adds", json!({"type": "object"}))].into();
    LlmRequest::new(
        "openai-compat:qwen3:8b".parse().unwrap(),
        vec![Message::system("s"), Message::user("u")],
    )
    .with_tools(tools)
    .with_tool_choice(ToolChoice::Required)
    .with_options(LlmOptions {
        max_tokens: Some(512),
        temperature: Some(0.25),
        top_p: None,
        stop: vec!["END".into()],
        reasoning_effort: Some(ReasoningEffort::High),
        thinking_budget: Some(1024),
        parallel_tool_calls: Some(true),
        prompt_cache: PromptCache {
            breakpoints: false,
            ttl: CacheTtl::OneHour,
            key: Some(PromptCache::key_for(&["agent", "thread"])),
        },
        hosted_tools: vec![
            HostedTool::WebSearch(WebSearch::default().with_allowed_domains(["example.com"])),
            HostedTool::CodeExecution,
            HostedTool::McpServer(
                McpServer::new("docs", "https://mcp.example.com/mcp").with_allowed_tools(["ask"]),
            ),
        ],
        response_format: Some(motet_directives::ResponseFormat::json_schema(
            "Answer",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        )),
    })
    .with_stable_prefix(2)
}

#[test]
fn requests_and_model_refs() {
    let model: ModelRef = "openai-compat:qwen3:8b".parse().unwrap();
    assert_eq!(
        (model.provider(), model.model()),
        ("openai-compat", "qwen3:8b")
    );
    assert_eq!(round_trip(&model), "\"openai-compat:qwen3:8b\"");
    assert!(serde_json::from_str::<ModelRef>("\"no-colon\"").is_err());
    round_trip(&request());
    let minimal = LlmRequest::new(model, vec![Message::user("hi")]);
    let text = round_trip(&minimal);
    assert!(!text.contains("tools"), "no tools are left out: {text}");
    round_trip(&LlmOptions::default());
}

fn signal() -> Signal {
    Signal::builder("agent.completed", "motet.react")
        .with_id("sig_1")
        .with_time(Some("2026-11-23T01:00:00Z".parse().unwrap()))
        .with_thread_id("th_1")
        .with_request_id("r1")
        .with_data(json!({"answer": "4"}))
        .build()
        .unwrap()
}

#[test]
fn every_directive_round_trips() {
    let directives = vec![
        Directive::LlmStream(LlmStream::new(CallId::new("call_1"), request())),
        Directive::ToolExec(ToolExec::new(
            CallId::new("tool_1"),
            "toolu_1",
            "add",
            ToolArgs::from_text("{\"a\":1 "),
        )),
        Directive::ToolExec(
            ToolExec::new(
                CallId::new("tool_2"),
                "toolu_2",
                "rm",
                ToolArgs::empty_object(),
            )
            .approved(),
        ),
        Directive::Summarize(Summarize {
            call_id: CallId::new("summary_1"),
            thread_id: "th_1".into(),
            from_seq: 0,
            to_seq: 41,
            request: LlmRequest::new(
                "anthropic:claude-haiku-4-5".parse().unwrap(),
                vec![
                    Message::system("keep numbers"),
                    Message::user("User: 17 * 23?\n"),
                ],
            ),
        }),
        Directive::Summarize(Summarize {
            call_id: CallId::new("summary_2"),
            thread_id: "th_1".into(),
            from_seq: 0,
            to_seq: 9,
            request: LlmRequest::new("openai:gpt-5.2".parse().unwrap(), Vec::new()),
        }),
        Directive::Emit(Emit {
            signal: signal(),
            target: EmitTarget::Bus,
        }),
        Directive::Emit(Emit {
            signal: signal(),
            target: EmitTarget::Agent("worker-1".into()),
        }),
        Directive::Emit(Emit {
            signal: signal(),
            target: EmitTarget::Group("workers".into()),
        }),
        Directive::Emit(Emit {
            signal: signal(),
            target: EmitTarget::Parent,
        }),
        Directive::Spawn(Spawn {
            tag: "child".into(),
            spec: ChildSpec {
                kind: "react".into(),
                name: Some("helper".into()),
                config: json!({"model": "openai:gpt-5.2"}),
            },
        }),
        Directive::Spawn(Spawn {
            tag: "bare".into(),
            spec: ChildSpec {
                kind: "react".into(),
                name: None,
                config: Value::Null,
            },
        }),
        Directive::StopChild(StopChild {
            tag: "child".into(),
            reason: "done".into(),
        }),
        Directive::Schedule(Schedule {
            schedule_id: ScheduleId::new("tick"),
            delay: Duration::from_millis(1_500),
            signal: signal(),
        }),
        Directive::CancelSchedule(CancelSchedule {
            schedule_id: ScheduleId::new("tick"),
        }),
        Directive::Stop(Stop {
            reason: "shutdown".into(),
        }),
        Directive::LlmStream(
            LlmStream::new(CallId::new("call_2"), request()).with_budget_approved(vec![
                motet_directives::budget::SoftLimit {
                    level: motet_directives::budget::BudgetLevel::Tenant,
                    measure: motet_directives::budget::Measure::Cost,
                    limit: 2_000_000_000_000,
                    spent: 2_010_000_000_000,
                },
            ]),
        ),
    ];
    for directive in &directives {
        let text = round_trip(directive);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["directive"], directive.kind(), "{text}");
    }
    let schedule = json_of(&directives[12]);
    let approved: Vec<Value> = directives
        .iter()
        .map(|d| json_of(d).to_string())
        .filter(|text| text.contains("toolu_"))
        .map(|text| serde_json::from_str::<Value>(&text).unwrap())
        .collect();
    assert_eq!(approved.len(), 2);
    assert!(
        approved[0].to_string().contains("toolu_1")
            && !approved[0].to_string().contains("approved")
    );
    assert!(
        approved[1].to_string().contains(r#""approved":true"#),
        "{}",
        approved[1]
    );
    assert_eq!(schedule["delay"], 1_500);
    // Only a call a person approved past a soft budget limit carries approvals.
    let carrying: Vec<Value> = directives
        .iter()
        .map(json_of)
        .filter(|json| json.get("budget_approved").is_some())
        .collect();
    assert_eq!(carrying.len(), 1);
    assert_eq!(
        carrying[0]["budget_approved"][0],
        json!({"level": "tenant", "measure": "cost", "limit": 2_000_000_000_000u64, "spent": 2_010_000_000_000u64})
    );
    assert_eq!(json_of(&CallId::new("x")), json!("x"));
}

#[test]
fn a_summarize_carries_the_call_the_strategy_built_and_the_older_shape_is_refused() {
    // Directives are executed, never stored: the shape from before the strategy built the
    // summary call (a model and instructions) names no call to stream, and is not read.
    let older = json!({
        "directive": "summarize",
        "call_id": "summary_1",
        "thread_id": "th_1",
        "from_seq": 0,
        "to_seq": 9,
        "model": "openai:gpt-5.2",
        "instructions": "keep numbers",
    });
    assert!(serde_json::from_value::<Directive>(older).is_err());
}

#[test]
fn a_summary_result_carries_its_usage_and_one_written_before_still_decodes() {
    use motet_directives::results::SummaryResult;
    let counted =
        SummaryResult::new(CallId::new("summary_1"), "They asked twice.").with_usage(Usage {
            input_tokens: 120,
            output_tokens: 30,
            ..Usage::default()
        });
    let text = round_trip(&counted);
    assert!(text.contains(r#""usage":{"#), "{text}");
    // Nothing counted: the JSON is what it was before summaries were counted.
    let uncounted = SummaryResult::new(CallId::new("summary_1"), "They asked twice.");
    assert_eq!(
        round_trip(&uncounted),
        r#"{"call_id":"summary_1","content":"They asked twice."}"#
    );
    let older: SummaryResult =
        serde_json::from_value(json!({"call_id": "summary_1", "content": "They asked twice."}))
            .unwrap();
    assert_eq!(older, uncounted);
}
