//! A thread holding images, a PDF and a tool's screenshot, stored as JSON and loaded again:
//! its projection is the same, its image bytes are shared (not copied) by the projection, and
//! each dialect's request body is byte for byte the same before and after.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet::agents::{
    ContextPolicy, FixedEnv, IMAGE_TOKENS, NewEntry, ProjectionIds, ProjectionInput, Thread,
    project,
};
use motet::directives::{
    AssistantBlock, AssistantMessage, LlmRequest, MediaSource, Message, Part, StopReason, ToolArgs,
    ToolDefs, ToolResult, Usage,
};
use motet::providers::Dialect;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn thread() -> Thread {
    let env = FixedEnv::new(0);
    let mut thread = Thread::create(&env);
    let entries = [
        NewEntry::user_content(vec![
            Part::text("What is on this page?"),
            Part::image_bytes("image/png", PNG),
            Part::document_bytes("application/pdf", &b"%PDF-1.4 /Type /Page"[..])
                .with_name("page.pdf"),
        ]),
        NewEntry::assistant(
            AssistantMessage {
                blocks: vec![AssistantBlock::tool_use(
                    "call_1",
                    "screenshot",
                    ToolArgs::from_text("{}"),
                )],
                stop_reason: StopReason::ToolUse,
            },
            Usage::default(),
        ),
        NewEntry::tool_result(
            "screenshot",
            ToolResult::ok("call_1", "taken")
                .with_attachments([Part::image_bytes("image/png", PNG)]),
        ),
        NewEntry::assistant(AssistantMessage::text("A red square."), Usage::default()),
        NewEntry::user("Thanks."),
    ];
    for entry in entries {
        thread.append(&env, entry);
    }
    thread
}

fn messages(thread: &Thread) -> Vec<Message> {
    let policy = ContextPolicy::new();
    let tools = ToolDefs::from(Vec::new());
    let ids = ProjectionIds::default();
    project(&ProjectionInput {
        thread,
        policy: &policy,
        pending: &[],
        system: Some("Be brief."),
        tools: &tools,
        ids: &ids,
    })
    .unwrap()
    .messages
}

fn model(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::OpenAiChat => "openai:gpt-4o",
        Dialect::OpenAiResponses => "openai-responses:gpt-4.1",
        Dialect::Anthropic => "anthropic:claude-sonnet-4-5",
        _ => "gemini:gemini-2.5-flash",
    }
}

#[test]
fn a_stored_multimodal_thread_reloads_and_each_dialect_sends_the_same_bytes() {
    let thread = thread();
    let stored = serde_json::to_string(&thread).unwrap();
    let reloaded: Thread = serde_json::from_str(&stored).unwrap();
    assert_eq!(reloaded, thread);
    assert_eq!(serde_json::to_string(&reloaded).unwrap(), stored);
    let (before, after) = (messages(&thread), messages(&reloaded));
    assert_eq!(before, after);
    for dialect in Dialect::ALL {
        let body = |messages: &[Message]| {
            let req = LlmRequest::new(model(dialect).parse().unwrap(), messages.to_vec());
            motet::providers::models::validate(&req).unwrap_or_else(|e| panic!("{dialect}: {e}"));
            dialect.encode(&req).unwrap()
        };
        assert_eq!(body(&before), body(&after), "{dialect}");
    }
}

#[test]
fn a_projection_shares_the_threads_bytes_and_counts_each_image() {
    let thread = thread();
    let bytes_of = |message: &Message| match message {
        Message::User { content } => match content.media().next().and_then(Part::source) {
            Some(MediaSource::Bytes { data, .. }) => data.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let (first, second) = (messages(&thread), messages(&thread));
    let user = |m: &[Message]| {
        m.iter()
            .find(|m| matches!(m, Message::User { .. }))
            .cloned()
    };
    let (a, b) = (user(&first).unwrap(), user(&second).unwrap());
    assert!(bytes_of(&a).shares_with(&bytes_of(&b)));
    // The image's figure is in the user entry's estimate (text alone is a few tokens).
    let estimate = thread.to_list()[0].tokens;
    assert!(estimate >= IMAGE_TOKENS, "{estimate}");
}
