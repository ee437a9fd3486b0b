//! Threads and entries as people read them.

use motet::agents::Entry;
use motet::directives::Usage;
use motet::runtime::store::ThreadSummary;

use crate::agent::display_id;
use crate::escape;

/// One entry on one or more lines: `#seq kind: text` (the entry's own `Display`).
pub fn entry(entry: &Entry) -> String {
    entry.to_string()
}

/// `123 in / 45 out`.
pub fn tokens(usage: &Usage) -> String {
    format!("{} in / {} out", usage.input_tokens, usage.output_tokens)
}

/// Unix milliseconds as an RFC 3339 UTC time to the millisecond (`2026-11-28T00:37:59.229Z`);
/// the number itself when it is no time.
pub fn rfc3339(unix_ms: u64) -> String {
    i64::try_from(unix_ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(
            || unix_ms.to_string(),
            |t| t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        )
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
    use motet::directives::{AssistantBlock, AssistantMessage, StopReason, ToolArgs};

    #[test]
    fn times_are_written_in_utc_and_a_number_that_is_no_time_as_itself() {
        assert_eq!(rfc3339(1_795_826_279_229), "2026-11-28T00:37:59.229Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(u64::MAX), u64::MAX.to_string());
        assert_eq!(time(1_795_826_279_229), "2026-11-28 00:37:59");
    }

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
