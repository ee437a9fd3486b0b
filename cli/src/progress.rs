//! What a command that waits on the model shows meanwhile: one line on standard error, redrawn
//! four times a second — time so far, LLM calls, tool calls, tokens — and wiped before the
//! answer is printed. Only on a terminal: piped or captured, standard error stays as it was.

use std::future::Future;
use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use motet::runtime::agent::{ActivitySnapshot, Runtime};

/// How often the line is redrawn.
const EVERY: Duration = Duration::from_millis(250);

/// Runs `work`, showing the progress of `runtime`'s agents on standard error while it runs
/// when standard error is a terminal; its output either way.
pub async fn while_running<F: Future>(runtime: &Runtime, work: F) -> F::Output {
    if !std::io::stderr().is_terminal() {
        return work.await;
    }
    let started = Instant::now();
    let before = runtime.activity();
    tokio::pin!(work);
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut drawn = 0;
    loop {
        tokio::select! {
            biased;
            out = &mut work => {
                draw(drawn, "");
                return out;
            }
            _ = tick.tick() => {
                drawn = draw(drawn, &line(started.elapsed(), since(before, runtime.activity())));
            }
        }
    }
}

/// What happened between two snapshots.
fn since(before: ActivitySnapshot, now: ActivitySnapshot) -> ActivitySnapshot {
    let mut done = now;
    done.llm_calls = now.llm_calls.saturating_sub(before.llm_calls);
    done.tool_calls = now.tool_calls.saturating_sub(before.tool_calls);
    done.input_tokens = now.input_tokens.saturating_sub(before.input_tokens);
    done.output_tokens = now.output_tokens.saturating_sub(before.output_tokens);
    done
}

/// `… 3.2 s · 1 LLM call · 1 tool call · 412 tokens`: the model is working while the counts
/// have not moved; a call is counted once it ends.
pub fn line(elapsed: Duration, done: ActivitySnapshot) -> String {
    let plural = |n: u64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    format!(
        "… {:.1} s · {} · {} · {}",
        elapsed.as_secs_f64(),
        plural(done.llm_calls, "LLM call"),
        plural(done.tool_calls, "tool call"),
        plural(done.tokens(), "token"),
    )
}

/// Replaces the `drawn` characters of the line under the cursor on standard error with `text`
/// (wipes them for ""), with a carriage return and spaces only — no escape sequence, so a
/// terminal that obeys none shows it as well; the characters now drawn.
fn draw(drawn: usize, text: &str) -> usize {
    let mut err = std::io::stderr().lock();
    let now = text.chars().count();
    let wipe = " ".repeat(drawn.saturating_sub(now));
    // A terminal that went away is no reason to fail the command.
    let _ = if text.is_empty() {
        write!(err, "\r{wipe}\r")
    } else {
        write!(err, "\r{text}{wipe}")
    };
    let _ = err.flush();
    now
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_calls_and_tokens_in_words() {
        let mut done = ActivitySnapshot::default();
        assert_eq!(
            line(Duration::from_millis(250), done),
            "… 0.2 s · 0 LLM calls · 0 tool calls · 0 tokens"
        );
        done.llm_calls = 1;
        done.tool_calls = 1;
        done.input_tokens = 400;
        done.output_tokens = 12;
        assert_eq!(
            line(Duration::from_millis(3_240), done),
            "… 3.2 s · 1 LLM call · 1 tool call · 412 tokens"
        );
    }

    #[test]
    fn only_what_happened_since_is_counted() {
        let mut before = ActivitySnapshot::default();
        before.llm_calls = 2;
        before.input_tokens = 100;
        let mut now = before;
        now.llm_calls = 3;
        now.input_tokens = 150;
        now.output_tokens = 5;
        let done = since(before, now);
        assert_eq!((done.llm_calls, done.tokens()), (1, 55));
    }
}
