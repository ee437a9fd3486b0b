//! The LLM call that summarizes a range of a thread: the instructions and the transcript a
//! strategy puts in its `Summarize` directive, which the runtime only streams.
//!
//! Any strategy that keeps a [`Thread`] can use [`summary_request`]; [`ReAct`](crate::ReAct)
//! does, with `ReActConfig::summary_instructions` in place of [`SUMMARY_INSTRUCTIONS`] when set.

use std::sync::Arc;

use motet_directives::{LlmRequest, Message, ModelRef};

use crate::error::SummaryError;
use crate::thread::{Entry, EntryBody, Thread};

/// What a summary call asks of the model when the strategy sets no instructions of its own.
pub const SUMMARY_INSTRUCTIONS: &str = "Summarize the conversation below for the assistant that will continue it: \
keep the user's goals, decisions, facts learned (with numbers and names), tool results that \
still matter, and open questions. Write plain prose, no preamble.";

/// `entries` as a plain transcript, one line per message (`User: …`, `Assistant: …` with the
/// tools it called, `Tool … returned: …`, `Earlier summary: …`); notes, errors and other
/// bookkeeping are left out, the model has nothing to learn from them.
pub fn transcript(entries: &[Arc<Entry>]) -> String {
    let mut out = String::new();
    for entry in entries {
        let line = match &entry.body {
            EntryBody::User { content } => format!("User: {content}"),
            EntryBody::System { content } => format!("System: {content}"),
            EntryBody::Assistant { message, .. } => {
                let mut text = format!("Assistant: {message}");
                for call in message.tool_calls() {
                    text.push_str(&format!(
                        "\n  (called {} with {})",
                        call.name,
                        call.args.get()
                    ));
                }
                text
            }
            EntryBody::ToolResult { name, result } => {
                let status = if result.is_error {
                    "failed"
                } else {
                    "returned"
                };
                format!("Tool {name} {status}: {}", result.content)
            }
            EntryBody::Summary { content, .. } => format!("Earlier summary: {content}"),
            _ => continue,
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The call that summarizes entries `from_seq..=to_seq` of `thread` with `model`: the
/// instructions (`instructions`, else [`SUMMARY_INSTRUCTIONS`]) as the system message, the
/// range's [`transcript`] as the user message.
///
/// # Errors
/// [`SummaryError::OutOfRange`] when the range is empty or not all in the thread,
/// [`SummaryError::Empty`] when it holds nothing a summary could say (only notes, errors,
/// boundaries).
///
/// # Example
/// ```
/// use motet_agents::{FixedEnv, NewEntry, Thread, summary_request};
/// use motet_directives::Message;
///
/// let env = FixedEnv::new(0);
/// let mut thread = Thread::create(&env);
/// thread.append(&env, NewEntry::user("buy milk"));
/// let model = "openai:gpt-5.2".parse()?;
/// let request = summary_request(&thread, 0, 0, model, Some("Summarize the notes."))?;
/// assert_eq!(request.messages[1], Message::user("User: buy milk\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn summary_request(
    thread: &Thread,
    from_seq: u64,
    to_seq: u64,
    model: ModelRef,
    instructions: Option<&str>,
) -> Result<LlmRequest, SummaryError> {
    let count = thread.entry_count() as u64;
    if from_seq > to_seq || to_seq >= count {
        return Err(SummaryError::OutOfRange {
            from_seq,
            to_seq,
            count,
        });
    }
    let transcript = transcript(thread.slice(from_seq, to_seq));
    if transcript.is_empty() {
        return Err(SummaryError::Empty { from_seq, to_seq });
    }
    let instructions = instructions.unwrap_or(SUMMARY_INSTRUCTIONS);
    Ok(LlmRequest::new(
        model,
        vec![Message::system(instructions), Message::user(transcript)],
    ))
}
