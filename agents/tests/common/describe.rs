//! Compact descriptions of what goes out of a strategy (directives, the messages of a call) and
//! of what its thread holds, for transcript tables.

use motet_agents::EntryBody;
use motet_directives::{Directive, Message, ReplyStatus};
use serde_json::Value;

/// One message: `S:`, `U:`, `A:` (text, or `calls[ids]`), `T:[id=content, ...]` (`!` marks an
/// error result).
pub(crate) fn describe_message(m: &Message) -> String {
    match m {
        Message::System { content } => format!("S:{content}"),
        Message::User { content } => format!("U:{content}"),
        Message::Assistant(turn) if turn.has_tool_calls() => {
            let ids: Vec<&str> = turn.tool_calls().map(|c| c.id).collect();
            format!("A:calls[{}]", ids.join(","))
        }
        Message::Assistant(turn) => format!("A:{turn}"),
        Message::ToolResults { results } => {
            let parts: Vec<String> = results
                .iter()
                .map(|r| {
                    let mark = if r.is_error { "!" } else { "" };
                    format!("{}={mark}{}", r.tool_use_id, r.content)
                })
                .collect();
            format!("T:[{}]", parts.join(","))
        }
    }
}

/// One directive, as transcript tables expect it.
pub(crate) fn describe(d: &Directive) -> String {
    match d {
        Directive::LlmStream(s) => {
            let messages: Vec<String> = s.request.messages.iter().map(describe_message).collect();
            format!("llm {}: {}", s.call_id, messages.join(" | "))
        }
        Directive::ToolExec(t) => format!(
            "tool {} {} {} {}{}",
            t.call_id,
            t.tool_call_id,
            t.name,
            t.args,
            if t.approved { " approved" } else { "" }
        ),
        Directive::Emit(e) => format!(
            "emit {} {}",
            e.signal.signal_type(),
            e.signal.request_id().unwrap_or("-")
        ),
        Directive::Schedule(s) => format!(
            "schedule {} {}ms {}",
            s.schedule_id,
            s.delay.as_millis(),
            s.signal.signal_type()
        ),
        Directive::CancelSchedule(c) => format!("cancel_schedule {}", c.schedule_id),
        Directive::Summarize(s) => format!("summarize {} {}..={}", s.call_id, s.from_seq, s.to_seq),
        Directive::Reply(r) => {
            let data: Value = r.signal.data_as().unwrap();
            let detail = match r.signal.signal_type().as_str() {
                "agent.completed" => format!("answer={}", data["answer"].as_str().unwrap()),
                _ => format!("reason={}", data["reason"]["kind"].as_str().unwrap()),
            };
            let failed = r.signal.signal_type().as_str() == "agent.failed";
            assert_eq!(r.status == ReplyStatus::Failed, failed, "{r:?}");
            format!(
                "reply {} {} {detail}",
                r.signal.signal_type(),
                r.signal.request_id().unwrap()
            )
        }
        other => format!("{other:?}"),
    }
}

/// Each of `directives`, described.
pub(crate) fn describe_all(directives: &[Directive]) -> Vec<String> {
    directives.iter().map(describe).collect()
}

/// One thread entry's body, described.
pub(crate) fn describe_body(body: &EntryBody) -> String {
    match body {
        EntryBody::User { content } => format!("user {content}"),
        EntryBody::Assistant { message, .. } => {
            describe_message(&Message::Assistant(message.clone())).replacen("A:", "assistant ", 1)
        }
        EntryBody::ToolResult { result, .. } => format!(
            "tool_result {}={}{}",
            result.tool_use_id,
            if result.is_error { "!" } else { "" },
            result.content
        ),
        EntryBody::Summary {
            from_seq, to_seq, ..
        } => format!("summary {from_seq}..={to_seq}"),
        EntryBody::Boundary { from_seq } => format!("boundary {from_seq}"),
        EntryBody::Note { .. } => "note".into(),
        EntryBody::Error { message } => format!("error {message}"),
        other => format!("{other:?}"),
    }
}
