//! An entry as a person reads it: `#seq kind: text`, on one line or more — what `motet threads
//! show` prints and what a program prints to see what its agent did.

use std::fmt;

use motet_directives::AssistantBlock;

use super::{CallUsage, Entry, EntryBody};

impl fmt::Display for Entry {
    /// `#1   assistant calls multiply({"a":17,"b":23}) [call_1] (290 in / 41 out)`; a turn of
    /// several blocks on several lines, the later ones indented. Text is written as it is: a
    /// program that prints it to a terminal escapes it first if it cannot trust the model.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&shown(self))
    }
}

fn shown(entry: &Entry) -> String {
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
            let first = format!("{head} {}{}", lines.remove(0), cost(usage));
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
            usage,
        } => format!(
            "{head} summary of #{from_seq}..#{to_seq}: {content}{}",
            cost(usage)
        ),
        EntryBody::Boundary { from_seq } => format!("{head} window starts at #{from_seq}"),
        EntryBody::Note { text } => format!("{head} note: {text}"),
        EntryBody::Error { message } => format!("{head} error: {message}"),
        EntryBody::Checkpoint { data } => format!("{head} checkpoint: {data}"),
        EntryBody::SignalIn { signal } => format!("{head} signal in: {}", signal.signal_type()),
        EntryBody::SignalOut { signal } => format!("{head} signal out: {}", signal.signal_type()),
    }
}

/// What a call cost, as a line shows it after the entry: ` (I in / O out)`, nothing when
/// nothing was counted.
fn cost(usage: &CallUsage) -> String {
    if usage.is_zero() {
        return String::new();
    }
    let usage = usage.to_usage();
    format!(" ({} in / {} out)", usage.input_tokens, usage.output_tokens)
}

#[cfg(test)]
mod tests {
    use motet_directives::{AssistantMessage, StopReason, ToolArgs, ToolResult, Usage};

    use crate::{Env, FixedEnv, NewEntry, Thread};

    #[test]
    fn a_tool_turn_reads_as_the_question_the_call_its_result_and_the_answer() {
        let env = FixedEnv::new(0);
        let mut thread = Thread::new("t", env.now_ms());
        thread.append(&env, NewEntry::user("What is 17 * 23?"));
        let call = AssistantMessage {
            blocks: vec![motet_directives::AssistantBlock::tool_use(
                "call_1",
                "multiply",
                ToolArgs::from_text(r#"{"a":17,"b":23}"#),
            )],
            stop_reason: StopReason::ToolUse,
        };
        let usage = Usage {
            input_tokens: 290,
            output_tokens: 41,
            ..Usage::default()
        };
        thread.append(&env, NewEntry::assistant(call, usage));
        thread.append(
            &env,
            NewEntry::tool_result("multiply", ToolResult::ok("call_1", "391")),
        );
        thread.append(
            &env,
            NewEntry::assistant(AssistantMessage::text("17 * 23 = 391"), Usage::default()),
        );
        let summary_usage = Usage {
            input_tokens: 120,
            output_tokens: 30,
            ..Usage::default()
        };
        thread.append(
            &env,
            NewEntry::summary(0, 3, "They multiplied.").with_usage(summary_usage),
        );
        let shown: Vec<String> = thread.to_list().iter().map(|e| e.to_string()).collect();
        assert_eq!(
            shown,
            [
                "#0   user: What is 17 * 23?",
                r#"#1   assistant calls multiply({"a":17,"b":23}) [call_1] (290 in / 41 out)"#,
                "#2   tool multiply [call_1] returned: 391",
                "#3   assistant: 17 * 23 = 391",
                "#4   summary of #0..#3: They multiplied. (120 in / 30 out)",
            ]
        );
    }
}
