//! `motet resume`: carry on with a thread whose request was cut short.

use motet::agents::{EntryBody, Thread};
use motet::directives::AssistantBlock;

use crate::agent::{self, AGENT, agent_thread, store_id};
use crate::config::Settings;
use crate::db::Db;
use crate::error::CliError;
use crate::escape::Mode;
use crate::render;

/// Resumes `thread` and prints what it owed, then what was done (the answer and the entries
/// the resumed request appended), model text as `mode` says.
///
/// # Errors
/// [`CliError::ThreadId`], [`CliError::UnknownThread`]; a failed resumed request as
/// [`agent::ask_failure`] words it.
pub async fn run(settings: &Settings, db: &Db, thread: &str, mode: Mode) -> Result<(), CliError> {
    let store = db.open_within(settings.timeout).await?;
    let full = store_id(thread);
    let _lock = db.lock(&full)?;
    let Some(before) = store.load(&full).await? else {
        return Err(CliError::UnknownThread {
            thread: full,
            store: db.to_string(),
        });
    };
    // A thread waiting for a person owes nothing a resume can do: the person's answer is what
    // carries it on.
    let waits = motet::runtime::agent::waiting_on(store.as_ref(), AGENT, agent_thread(thread)?)
        .await
        .map_err(crate::agent::runtime_failure)?;
    if !waits.is_empty() {
        println!("owed: a person's response to {} tool call(s)", waits.len());
        crate::commands::pending::print_waits(&waits, mode);
        return Ok(());
    }
    println!("owed: {}", mode.text(&owed(&before)));
    let (runtime, agent) = agent::start(settings, store.clone()).await?;
    let outcome = async {
        let request = agent
            .resume(Some(agent_thread(thread)?), settings.timeout)
            .await
            .map_err(|e| agent::ask_failure(e, settings))?;
        let Some(request) = request else {
            return Ok(None);
        };
        let id = request.id().to_owned();
        let reply = request
            .wait()
            .await
            .map_err(|e| agent::ask_failure(e, settings))?;
        Ok::<_, CliError>(Some((id, agent::completed(&reply)?)))
    };
    // On a terminal, a line on standard error shows the calls and tokens so far.
    let outcome = crate::progress::while_running(&runtime, outcome).await;
    runtime.shutdown().await;
    let Some((request_id, done)) = outcome? else {
        println!("done: nothing (the thread owes nothing)");
        return Ok(());
    };
    println!(
        "done: request {request_id} answered after {} LLM call(s) ({})",
        done.iterations,
        render::tokens(&done.usage)
    );
    let after = store.load(&full).await?.unwrap_or(before.clone());
    let first_new = before.to_list().len();
    for entry in after.to_list().iter().skip(first_new) {
        println!("{}", mode.text(&render::entry(entry)));
    }
    println!("answer: {}", mode.text(&done.answer));
    Ok(())
}

/// Fails unless `thread` is one of the agent's threads in the store `db`.
///
/// # Errors
/// [`CliError::ThreadId`], [`CliError::UnknownThread`], [`CliError::Store`].
pub async fn check(db: &Db, thread: &str) -> Result<(), CliError> {
    agent_thread(thread)?;
    let full = store_id(thread);
    let summary = match db.read().await? {
        Some(store) => store.summary(&full).await?,
        None => None,
    };
    match summary {
        Some(_) => Ok(()),
        None => Err(CliError::UnknownThread {
            thread: full,
            store: db.to_string(),
        }),
    }
}

/// What the last committed turn of `thread` leaves to do, in words.
pub fn owed(thread: &Thread) -> String {
    let entries = thread.to_list();
    let last = entries.iter().rev().find(|e| {
        matches!(
            e.body,
            EntryBody::User { .. } | EntryBody::Assistant { .. } | EntryBody::ToolResult { .. }
        )
    });
    let Some(last) = last else {
        return "nothing: the thread has no request".to_owned();
    };
    let request = last.refs.request_id.as_deref().unwrap_or("(without an id)");
    let open_calls = open_tool_calls(thread);
    match &last.body {
        EntryBody::User { content } => {
            format!("an answer to \"{content}\" (request {request}): an LLM call")
        }
        _ if !open_calls.is_empty() => format!(
            "the results of {} tool call(s) of request {request}: {} (idempotent tools run \
             again; the others get an error result saying they may or may not have run)",
            open_calls.len(),
            open_calls.join(", ")
        ),
        EntryBody::ToolResult { .. } => {
            format!("an LLM call on the tool results of request {request}")
        }
        _ => format!("nothing new: request {request} was answered (its answer is given again)"),
    }
}

/// `name [id]` of the last assistant turn's tool calls that have no result.
fn open_tool_calls(thread: &Thread) -> Vec<String> {
    let entries = thread.to_list();
    let Some(at) = entries
        .iter()
        .rposition(|e| matches!(e.body, EntryBody::Assistant { .. }))
    else {
        return Vec::new();
    };
    let EntryBody::Assistant { message, .. } = &entries[at].body else {
        return Vec::new();
    };
    let answered: Vec<&str> = entries[at..]
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::ToolResult { result, .. } => Some(result.tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    message
        .blocks
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::ToolUse { id, name, .. } if !answered.contains(&id.as_str()) => {
                Some(format!("{name} [{id}]"))
            }
            _ => None,
        })
        .collect()
}
