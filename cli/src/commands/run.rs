//! `motet run`: one question, one answer.

use motet::runtime::agent::{AskOptions, NEW_THREAD};

use crate::agent::{self, AGENT, agent_thread};
use crate::config::Settings;
use crate::db::Db;
use crate::error::CliError;
use crate::escape::{self, Mode};
use crate::follow::{Followed, follow};

/// What `motet run` asks: the question's text and the files sent with it.
#[derive(Debug, Clone)]
pub struct Question<'a> {
    /// The text.
    pub text: &'a str,
    /// The images, documents and audio of `--image` and `--file`, in that order.
    pub attachments: motet::directives::Attachments,
}

/// Asks `question` on `thread` and prints the answer as `mode` says (or one JSON object with
/// `json`, its control characters written as JSON escapes).
///
/// # Errors
/// [`CliError::ThreadId`]; a failed request as [`agent::ask_failure`] words it; store and
/// runtime failures.
pub async fn run(
    settings: &Settings,
    db: &Db,
    question: Question<'_>,
    thread: &str,
    json: bool,
    mode: Mode,
) -> Result<(), CliError> {
    let thread = agent_thread(thread)?;
    let store = db.open_within(settings.timeout).await?;
    // A fresh thread is nobody else's; any other is held until the answer is in.
    let _lock = (thread != NEW_THREAD)
        .then(|| db.lock(&format!("{AGENT}/{thread}")))
        .transpose()?;
    if thread != NEW_THREAD {
        refuse_if_waiting(store.as_ref(), thread).await?;
    }
    let (runtime, agent) = agent::start(settings, store).await?;
    let options = AskOptions {
        thread_id: Some(thread.to_owned()),
        timeout: settings.timeout,
        attachments: question.attachments,
        ..AskOptions::default()
    };
    let outcome = async {
        let request = agent
            .submit(question.text, options)
            .await
            .map_err(|e| agent::ask_failure(e, settings))?;
        let thread = request.thread().to_owned();
        // A call that waits for a person stops the run once nothing else of the request runs,
        // the request stored as it is: `motet approve`, `reject` or `answer` carries it on.
        match follow(&agent, request, None).await? {
            Ok(Followed::Answered(reply)) => Ok(Ok((thread, agent::completed(&reply)?))),
            Ok(Followed::Waits(waits)) => Ok(Err(waits)),
            Err(e) => Err(agent::ask_failure(e, settings)),
        }
    };
    // On a terminal, a line on standard error shows the calls and tokens so far.
    let outcome = crate::progress::while_running(&runtime, outcome).await;
    runtime.shutdown().await;
    let (thread, done) = match outcome? {
        Ok(done) => done,
        Err(waits) => {
            crate::commands::pending::print_waits(&waits, mode);
            return Ok(());
        }
    };
    if json {
        let object = serde_json::json!({
            "answer": done.answer,
            "thread": agent::shown_thread(&thread),
            "request_id": done.request_id,
            "model": settings.model.to_string(),
            "usage": done.usage,
            "iterations": done.iterations,
        });
        println!("{}", escape::json(&object.to_string()));
    } else {
        println!("{}", mode.text(&done.answer));
    }
    Ok(())
}

/// Fails with [`CliError::WaitsForPerson`] when `thread` of the CLI agent waits for a person:
/// a question asked there now would not be taken in before the person answers.
///
/// # Errors
/// That, or the store's failure.
pub async fn refuse_if_waiting(
    store: &dyn motet::runtime::store::ThreadStore,
    thread: &str,
) -> Result<(), CliError> {
    let waits = motet::runtime::agent::waiting_on(store, AGENT, thread)
        .await
        .map_err(crate::agent::runtime_failure)?;
    if waits.is_empty() {
        return Ok(());
    }
    Err(CliError::WaitsForPerson {
        thread: agent::shown_thread(thread),
        how: waits
            .iter()
            .map(|w| {
                format!(
                    "call {} ({}) waits; {} carries it on",
                    escape::label(&w.tool_call_id),
                    escape::label(&w.tool),
                    crate::commands::pending::how_to_answer(w)
                )
            })
            .collect(),
    })
}
