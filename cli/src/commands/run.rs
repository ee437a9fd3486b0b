//! `motet run`: one question, one answer.

use motet::runtime::agent::{AskOptions, NEW_THREAD};

use crate::agent::{self, AGENT, agent_thread};
use crate::config::Settings;
use crate::db::Db;
use crate::error::CliError;
use crate::escape::{self, Mode};

/// Asks `question` on `thread` and prints the answer as `mode` says (or one JSON object with
/// `json`, its control characters written as JSON escapes).
///
/// # Errors
/// [`CliError::ThreadId`]; a failed request as [`agent::ask_failure`] words it; store and
/// runtime failures.
pub async fn run(
    settings: &Settings,
    db: &Db,
    question: &str,
    thread: &str,
    json: bool,
    mode: Mode,
) -> Result<(), CliError> {
    let thread = agent_thread(thread)?;
    let store = db.open().await?;
    // A fresh thread is nobody else's; any other is held until the answer is in.
    let _lock = (thread != NEW_THREAD)
        .then(|| db.lock(&format!("{AGENT}/{thread}")))
        .transpose()?;
    let (runtime, agent) = agent::start(settings, store).await?;
    let options = AskOptions {
        thread_id: Some(thread.to_owned()),
        timeout: settings.timeout,
        ..AskOptions::default()
    };
    let outcome = async {
        let mut request = agent
            .submit(question, options)
            .await
            .map_err(|e| agent::ask_failure(e, settings))?;
        let thread = request.thread().to_owned();
        // A call that waits for a person stops the run here, the request stored as it is:
        // `motet approve`, `reject` or `answer` carries it on.
        match tokio::time::timeout(settings.timeout, request.next_waiting()).await {
            Ok(Some(waiting)) => return Ok::<_, CliError>(Err(waiting)),
            // The answer is in.
            Ok(None) => {}
            Err(_) => {
                let _ = request.cancel("no answer in time").await;
                return Err(agent::ask_failure(
                    motet::runtime::agent::AskError::Timeout(settings.timeout),
                    settings,
                ));
            }
        }
        let reply = request
            .wait()
            .await
            .map_err(|e| agent::ask_failure(e, settings))?;
        Ok(Ok((thread, agent::completed(&reply)?)))
    }
    .await;
    runtime.shutdown().await;
    let (thread, done) = match outcome? {
        Ok(done) => done,
        Err(waiting) => {
            println!("{}", crate::commands::pending::line(&waiting, mode));
            println!(
                "the request waits: `motet approve {call}` (or `reject {call}`, `answer {call} TEXT`) carries it on",
                call = escape::label(&waiting.tool_call_id)
            );
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
