//! `motet pending`, `approve`, `reject`, `answer`: the tool calls that wait for a person, read
//! from the store (after a crash too), and the response that lets their request go on.

use motet::agents::Waiting;
use motet::directives::{Pause, Response};
use motet::runtime::agent::waiting_in;

use crate::agent::{self, AGENT, display_id};
use crate::config::Settings;
use crate::db::Db;
use crate::error::CliError;
use crate::escape::{self, Mode};

/// Prints every waiting call of the store, one per line, oldest first.
///
/// # Errors
/// [`CliError::Store`] when the store cannot be read; [`CliError::Runtime`] for a stored state
/// the runtime cannot read.
pub async fn list(db: &Db, mode: Mode) -> Result<(), CliError> {
    let Some(store) = db.read().await? else {
        println!("nothing waits for a person");
        return Ok(());
    };
    let waiting = waiting_in(store.as_ref(), None)
        .await
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    if waiting.is_empty() {
        println!("nothing waits for a person");
    }
    for w in &waiting {
        println!("{}", line(w, mode));
    }
    Ok(())
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
    format!(
        "{} · thread {} · request {} · call {} · {} {} · waits for {what}",
        escape::label(&w.agent),
        escape::label(display_id(&format!("{}/{}", w.agent, w.thread))),
        escape::label(&w.request_id),
        escape::label(&w.tool_call_id),
        escape::label(&w.tool),
        mode.text(w.args.get()),
    )
}

/// Answers the CLI agent's waiting call `call` with `response`, then waits for its request's
/// answer and prints it.
///
/// # Errors
/// [`CliError::NotWaiting`] when no call of that id waits or the runtime refuses the
/// response; a failed request as [`agent::ask_failure`] words it; store and runtime failures.
pub async fn respond(
    settings: &Settings,
    db: &Db,
    call: &str,
    response: Response,
    mode: Mode,
) -> Result<(), CliError> {
    let store = db.open().await?;
    let waiting = waiting_in(store.as_ref(), Some(AGENT))
        .await
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    let Some(w) = waiting.iter().find(|w| w.tool_call_id == call).cloned() else {
        let known: Vec<&str> = waiting.iter().map(|w| w.tool_call_id.as_str()).collect();
        return Err(CliError::NotWaiting(format!(
            "no tool call `{call}` waits for a person{}",
            match known.as_slice() {
                [] => " (nothing waits: `motet pending` lists what does)".to_owned(),
                calls => format!(" (waiting: {})", calls.join(", ")),
            }
        )));
    };
    let _lock = db.lock(&format!("{AGENT}/{}", w.thread))?;
    let (runtime, _agent) = agent::start(settings, store).await?;
    let outcome = async {
        // The request stopped with the process that ran it: this one carries it on.
        let tickets = runtime
            .recover(settings.timeout)
            .await
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        runtime
            .respond(&w, response)
            .await
            .map_err(|e| CliError::NotWaiting(e.to_string()))?;
        let Some(ticket) = tickets.into_iter().find(|t| t.id() == w.request_id) else {
            return Ok(None);
        };
        let reply = ticket
            .wait()
            .await
            .map_err(|e| agent::ask_failure(e, settings))?;
        Ok::<_, CliError>(Some(agent::completed(&reply)?))
    }
    .await;
    runtime.shutdown().await;
    match outcome? {
        Some(done) => println!("{}", mode.text(&done.answer)),
        None => println!("answered; the request goes on"),
    }
    Ok(())
}
