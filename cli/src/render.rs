//! Threads and entries as people read them.

use motet::agents::{Entry, EntryBody};
use motet::directives::{AssistantBlock, Usage};
use motet::runtime::store::ThreadSummary;

use crate::agent::display_id;
use crate::escape;

/// One entry on one or more lines: `#seq kind: text`.
pub fn entry(entry: &Entry) -> String {
    let head = format!("#{:<3}", entry.seq);
    match &entry.body {
        EntryBody::User { content } => format!("{head} user: {content}"),
        EntryBody::System { content } => format!("{head} system: {content}"),
        EntryBody::Assistant { message, usage, .. } => {
            let mut lines: Vec<String> = Vec::new();
            let mut after_text = false;
            for block in &message.blocks {
                // Text blocks in a row read as one text (Anthropic sends an answer with
                // citations as several blocks).
                if let AssistantBlock::Text { text, .. } = block {
                    match lines.last_mut().filter(|_| after_text) {
                        Some(line) => line.push_str(text),
                        None => lines.push(format!("assistant: {text}")),
                    }
                    after_text = true;
                    continue;
                }
                after_text = false;
                lines.push(match block {
                    AssistantBlock::Reasoning { text, .. } => {
                        format!("assistant (thinking): {text}")
                    }
                    AssistantBlock::ToolUse { id, name, args, .. } => {
                        format!("assistant calls {name}({args}) [{id}]")
                    }
                    AssistantBlock::Opaque { provider, item } => {
                        format!("assistant ({provider} item): {item}")
                    }
                    _ => "assistant: (a block this version cannot show)".to_owned(),
                });
            }
            if lines.is_empty() {
                lines.push("assistant: (empty turn)".to_owned());
            }
            let cost = if usage.is_zero() {
                String::new()
            } else {
                format!(" ({})", tokens(&usage.to_usage()))
            };
            let first = format!("{head} {}{cost}", lines.remove(0));
            std::iter::once(first)
                .chain(lines.into_iter().map(|l| format!("     {l}")))
                .collect::<Vec<_>>()
                .join("\n")
        }
        EntryBody::ToolResult { name, result } => {
            let verdict = if result.is_error {
                "failed"
            } else {
                "returned"
            };
            format!(
                "{head} tool {name} [{}] {verdict}: {}",
                result.tool_use_id, result.content
            )
        }
        EntryBody::Summary {
            from_seq,
            to_seq,
            content,
        } => format!("{head} summary of #{from_seq}..#{to_seq}: {content}"),
        EntryBody::Boundary { from_seq } => format!("{head} window starts at #{from_seq}"),
        EntryBody::Note { text } => format!("{head} note: {text}"),
        EntryBody::Error { message } => format!("{head} error: {message}"),
        EntryBody::Checkpoint { data } => format!("{head} checkpoint: {data}"),
        EntryBody::SignalIn { signal } => format!("{head} signal in: {}", signal.signal_type()),
        EntryBody::SignalOut { signal } => format!("{head} signal out: {}", signal.signal_type()),
    }
}

/// `123 in / 45 out`.
pub fn tokens(usage: &Usage) -> String {
    format!("{} in / {} out", usage.input_tokens, usage.output_tokens)
}

/// Unix milliseconds as a UTC time to the second.
pub fn time(unix_ms: u64) -> String {
    let Ok(ms) = i64::try_from(unix_ms) else {
        return unix_ms.to_string();
    };
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|_| unix_ms.to_string())
}

/// The thread table of `motet threads list`; ids are escaped ([`escape::label`]) whatever the
/// output, so the table can be printed as it is.
pub fn thread_table(threads: &[ThreadSummary]) -> String {
    // Ids longer than this are printed whole on a longer row: padding to the longest id would
    // make one 70,000-byte id widen every row (and a width past 65,535 panics the formatter).
    const MAX_WIDTH: usize = 64;
    let ids: Vec<_> = threads
        .iter()
        .map(|t| escape::label(display_id(&t.id)))
        .collect();
    let width = ids
        .iter()
        .map(|id| id.len())
        .max()
        .unwrap_or(0)
        .clamp("THREAD".len(), MAX_WIDTH);
    let mut out = format!(
        "{:<width$}  {:>7}  {:>22}  UPDATED (UTC)\n",
        "THREAD", "ENTRIES", "TOKENS"
    );
    for (t, id) in threads.iter().zip(&ids) {
        out.push_str(&format!(
            "{:<width$}  {:>7}  {:>22}  {}\n",
            id,
            t.entry_count,
            tokens(&t.usage),
            time(t.updated_at)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use motet::agents::{Env, FixedEnv, NewEntry, Thread};
    use motet::directives::{AssistantMessage, StopReason, ToolArgs};

    #[test]
    fn text_blocks_in_a_row_read_as_one_line_and_other_blocks_keep_theirs() {
        let env = FixedEnv::new(0);
        let message = AssistantMessage {
            blocks: vec![
                AssistantBlock::text("The answer is "),
                AssistantBlock::text("42"),
                AssistantBlock::text("."),
                AssistantBlock::tool_use("c1", "check", ToolArgs::from_text("{}")),
                AssistantBlock::text("Checking."),
            ],
            stop_reason: StopReason::ToolUse,
        };
        let mut thread = Thread::new("t", env.now_ms());
        thread.append(&env, NewEntry::assistant(message, Usage::default()));
        let shown = thread
            .to_list()
            .first()
            .map(|e| entry(e))
            .unwrap_or_default();
        assert_eq!(
            shown,
            "#0   assistant: The answer is 42.\n     assistant calls check({}) [c1]\n     assistant: Checking."
        );
    }
}
