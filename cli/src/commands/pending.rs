//! `motet pending`, `approve`, `reject`, `answer`: the tool calls that wait for a person, read
//! from the store (after a crash too), and the response that lets their request go on.

use motet::agents::Waiting;
use motet::directives::{Pause, Response};
use motet::runtime::agent::{waiting_on, waiting_readable};
use motet::runtime::store::ThreadKey;

use motet::runtime::agent::AskError;

use crate::agent::{self, AGENT, display_id};
use crate::config::Settings;
use crate::db::Db;
use crate::error::CliError;
use crate::escape::{self, Mode};
use crate::follow::{Followed, follow};

/// Prints every waiting call of the store, one per line, oldest first; a thread that cannot
/// be read is named on standard error with what is wrong, and the command then fails.
///
/// # Errors
/// [`CliError::Store`] when the store cannot be read; [`CliError::Unreadable`] after the
/// listing when some threads could not be read.
pub async fn list(db: &Db, mode: Mode) -> Result<(), CliError> {
    let Some(store) = db.read().await? else {
        println!("nothing waits for a person");
        return Ok(());
    };
    let listing = waiting_readable(store.as_ref(), None)
        .await
        .map_err(crate::agent::runtime_failure)?;
    if listing.waiting.is_empty() && listing.unreadable.is_empty() {
        println!("nothing waits for a person");
    }
    for w in &listing.waiting {
        println!("{}", line(w, mode));
    }
    crate::error::unreadable(&listing.unreadable, db)
}

/// One waiting call as `pending` shows it.
pub fn line(w: &Waiting, mode: Mode) -> String {
    let what = match &w.pause {
        Pause::Approval(approval) => match &approval.reason {
            Some(reason) => format!("approval ({})", mode.text(reason)),
            None => "approval".to_owned(),
        },
        Pause::Question { text } => format!("answer to: {}", mode.text(text)),
    };
    // A budget wait's arguments are the limit, which its reason already says.
    let call = if w.tool == motet::agents::BUDGET_WAIT_TOOL {
        "budget".to_owned()
    } else {
        format!("{} {}", escape::label(&w.tool), mode.text(w.args.get()))
    };
    format!(
        "{} · thread {} · request {} · call {} · {call} · waits for {what}",
        escape::label(&w.agent),
        escape::label(display_id(&ThreadKey::store_id_of(&w.agent, &w.thread))),
        escape::label(&w.request_id),
        escape::label(&w.tool_call_id),
    )
}

/// How to go on with `w`, as a command line that names it whatever else waits: the call id
/// with its thread (call ids are the model's, and the same id can wait on several threads).
pub fn how_to_answer(w: &Waiting) -> String {
    let call = escape::label(&w.tool_call_id);
    let stored = ThreadKey::store_id_of(&w.agent, &w.thread);
    let thread = escape::label(display_id(&stored));
    match &w.pause {
        Pause::Approval(_) => format!(
            "`motet approve {call} --thread {thread}` (or `motet reject {call} --thread {thread}`)"
        ),
        Pause::Question { .. } => format!("`motet answer {call} TEXT --thread {thread}`"),
    }
}

/// Prints what waits for a person on one request, and how to go on with each.
pub fn print_waits(waits: &[Waiting], mode: Mode) {
    for (at, w) in waits.iter().enumerate() {
        if waits.len() > 1 {
            println!("{} of {}: {}", at + 1, waits.len(), line(w, mode));
        } else {
            println!("{}", line(w, mode));
        }
    }
    for w in waits {
        println!("the request waits: {} carries it on", how_to_answer(w));
    }
}

/// The shortest leading part of a call id that names it.
pub const MIN_CALL_PREFIX: usize = 4;

/// The one call of the CLI agent's `waiting` whose id is `call` (on `thread`, when given), or,
/// when no id is exactly `call`, whose id starts with it (at least [`MIN_CALL_PREFIX`]
/// characters).
///
/// # Errors
/// [`CliError::NotWaiting`] when none is; [`CliError::AmbiguousCall`] when the id waits on
/// several threads and none was named; [`CliError::AmbiguousCallPrefix`] when several ids
/// start with `call`.
pub fn choose<'a>(
    waiting: &'a [Waiting],
    call: &str,
    thread: Option<&str>,
) -> Result<&'a Waiting, CliError> {
    let on_thread = |w: &Waiting| thread.is_none_or(|t| t == w.thread);
    let exact: Vec<&Waiting> = waiting
        .iter()
        .filter(|w| w.tool_call_id == call && on_thread(w))
        .collect();
    // Ids run to 32 characters and the docs shorten them: a leading part of one, as `git`
    // takes a commit's, names the call when no id is exactly it and no other id starts so.
    let matching = if exact.is_empty() && call.chars().count() >= MIN_CALL_PREFIX {
        let by_prefix: Vec<&Waiting> = waiting
            .iter()
            .filter(|w| w.tool_call_id.starts_with(call) && on_thread(w))
            .collect();
        let mut ids: Vec<&str> = by_prefix.iter().map(|w| w.tool_call_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() > 1 {
            return Err(CliError::AmbiguousCallPrefix {
                prefix: call.to_owned(),
                calls: ids.into_iter().map(str::to_owned).collect(),
            });
        }
        by_prefix
    } else {
        exact
    };
    match matching.as_slice() {
        [one] => Ok(one),
        [] => {
            let known: Vec<String> = waiting
                .iter()
                .filter(|w| on_thread(w))
                .map(|w| {
                    format!(
                        "{} on thread {}",
                        w.tool_call_id,
                        display_id(&ThreadKey::store_id_of(&w.agent, &w.thread))
                    )
                })
                .collect();
            let place = thread.map_or(String::new(), |t| {
                format!(" on thread {}", display_id(&format!("{AGENT}/{t}")))
            });
            Err(CliError::NotWaiting(format!(
                "no tool call `{call}` waits for a person{place}{}",
                if known.is_empty() {
                    " (nothing waits: `motet pending` lists what does)".to_owned()
                } else {
                    format!(" (waiting: {})", known.join(", "))
                }
            )))
        }
        several => Err(CliError::AmbiguousCall {
            call: call.to_owned(),
            threads: several
                .iter()
                .map(|w| display_id(&ThreadKey::store_id_of(&w.agent, &w.thread)).to_owned())
                .collect(),
        }),
    }
}

/// Answers the CLI agent's waiting call `call` (on `thread`, when given) with `response`,
/// then follows its request: prints the answer, or what still waits for a person. Only that
/// request is carried on, under its thread's lock; a wait that runs out of time leaves the
/// request stored as it is.
///
/// # Errors
/// [`CliError::NotWaiting`] when no call of that id waits or the runtime refuses the
/// response; [`CliError::AmbiguousCall`] when the id waits on several threads; a failed
/// request as [`agent::ask_failure`] words it; store and runtime failures.
pub async fn respond(
    settings: &Settings,
    db: &Db,
    call: &str,
    thread: Option<&str>,
    response: Response,
    mode: Mode,
) -> Result<(), CliError> {
    let thread = thread.map(agent::agent_thread).transpose()?;
    let store = db.open_within(settings.timeout).await?;
    // A named thread is read alone; otherwise every thread, past any that cannot be read
    // (which a refusal then names: the call may wait there).
    let (waiting, unreadable) = match thread {
        Some(thread) => (
            waiting_on(store.as_ref(), AGENT, thread)
                .await
                .map_err(crate::agent::runtime_failure)?,
            Vec::new(),
        ),
        None => {
            let listing = waiting_readable(store.as_ref(), Some(AGENT))
                .await
                .map_err(crate::agent::runtime_failure)?;
            (listing.waiting, listing.unreadable)
        }
    };
    let w = match choose(&waiting, call, thread) {
        Ok(w) => w.clone(),
        Err(CliError::NotWaiting(message)) if !unreadable.is_empty() => {
            let names: Vec<String> = unreadable
                .iter()
                .map(|u| escape::label(&u.thread_id).into_owned())
                .collect();
            return Err(CliError::NotWaiting(format!(
                "{message}; {} thread(s) could not be read and may hold it: {}",
                names.len(),
                names.join(", ")
            )));
        }
        Err(other) => return Err(other),
    };
    let _lock = db.lock(&format!("{AGENT}/{}", w.thread))?;
    // Read again under the lock: another process may have answered it meanwhile.
    let waiting = waiting_on(store.as_ref(), AGENT, &w.thread)
        .await
        .map_err(crate::agent::runtime_failure)?;
    let w = choose(&waiting, call, Some(&w.thread))?.clone();
    let kind = match response {
        Response::Approve => "approved",
        Response::Edit { .. } => "approved with edited arguments",
        Response::Reject { .. } => "rejected",
        Response::Answer { .. } => "answered",
    };
    let (runtime, agent) = agent::start(settings, store).await?;
    let outcome = async {
        // The request stopped with the process that ran it: this one carries it on, and only
        // it.
        let ticket = agent
            .resume_waiting(&w, settings.timeout)
            .await
            .map_err(|e| agent::ask_failure(e, settings))?;
        runtime
            .respond(&w, response)
            .await
            .map_err(|e| CliError::NotWaiting(e.to_string()))?;
        follow(&agent, ticket, Some(&w.tool_call_id)).await
    };
    let outcome = crate::progress::while_running(&runtime, outcome).await;
    runtime.shutdown().await;
    match outcome? {
        Ok(Followed::Answered(reply)) => {
            let done = agent::completed(&reply)?;
            println!("{}", mode.text(&done.answer));
        }
        Ok(Followed::Waits(waits)) => {
            println!(
                "{kind}: call {}; the request still waits for a person",
                escape::label(&w.tool_call_id)
            );
            print_waits(&waits, mode);
        }
        Err(AskError::Timeout(after)) => {
            return Err(CliError::Request(format!(
                "{kind}: call {}, but no answer within {} s; the request is stored as it is and \
                 `motet resume {}` carries it on (raise the wait with --timeout)",
                escape::label(&w.tool_call_id),
                after.as_secs(),
                escape::label(display_id(&ThreadKey::store_id_of(&w.agent, &w.thread)))
            )));
        }
        Err(e) => return Err(agent::ask_failure(e, settings)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)] // a failed expectation is a failed test

    use super::*;
    use motet::directives::{Approval, ToolArgs};

    fn waits(call: &str, thread: &str) -> Waiting {
        Waiting {
            agent: AGENT.to_owned(),
            thread: thread.to_owned(),
            request_id: format!("req-{thread}"),
            tool_call_id: call.to_owned(),
            tool: "delete_file".to_owned(),
            args: ToolArgs::from_text("{}"),
            pause: Pause::Approval(Approval::default()),
            since_ms: 0,
            deadline_ms: None,
        }
    }

    #[test]
    fn a_call_is_named_by_its_id_or_a_leading_part_only_it_has() {
        let all = [
            waits("UzzvcsOxEDRKRHkYKIZjhwpwkn33DmXn", "a"),
            waits("Uzzq81", "b"),
            waits("call_7", "c"),
        ];
        let chosen = |call: &str| choose(&all, call, None).map(|w| w.thread.as_str());
        assert_eq!(chosen("UzzvcsOxEDRKRHkYKIZjhwpwkn33DmXn").unwrap(), "a");
        assert_eq!(chosen("Uzzv").unwrap(), "a");
        assert_eq!(chosen("Uzzq").unwrap(), "b");
        assert_eq!(chosen("call_7").unwrap(), "c");
        // Too short to be a prefix, and not an id.
        assert!(matches!(chosen("Uzv"), Err(CliError::NotWaiting(_))));
        assert!(matches!(chosen("Uzz"), Err(CliError::NotWaiting(_))));
        assert!(matches!(chosen("Uzz_"), Err(CliError::NotWaiting(_))));
        // Two ids start so: both are named, none chosen.
        let two = [waits("UzzvAAAA", "a"), waits("UzzvBBBB", "b")];
        match choose(&two, "Uzzv", None) {
            Err(CliError::AmbiguousCallPrefix { prefix, calls }) => {
                assert_eq!(prefix, "Uzzv");
                assert_eq!(calls, ["UzzvAAAA", "UzzvBBBB"]);
            }
            other => panic!("{other:?}"),
        }
        // A thread named narrows the prefix first.
        assert_eq!(
            choose(&two, "Uzzv", Some("b")).unwrap().tool_call_id,
            "UzzvBBBB"
        );
    }

    #[test]
    fn an_exact_id_wins_over_a_longer_one_it_starts() {
        let all = [waits("call_1", "a"), waits("call_12", "b")];
        assert_eq!(choose(&all, "call_1", None).unwrap().thread, "a");
        assert_eq!(choose(&all, "call_12", None).unwrap().thread, "b");
    }

    #[test]
    fn one_prefix_on_two_threads_asks_for_a_thread() {
        let all = [waits("UzzvAAAA", "a"), waits("UzzvAAAA", "b")];
        assert!(matches!(
            choose(&all, "Uzzv", None),
            Err(CliError::AmbiguousCall { .. })
        ));
        assert_eq!(choose(&all, "Uzzv", Some("a")).unwrap().thread, "a");
    }
}
