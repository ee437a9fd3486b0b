//! `motet chat`: a conversation in the terminal, the agent alive between questions.
//!
//! Lines from standard input are questions; the answer is printed as the model writes it
//! (`AskOptions::stream`, `Request::next_delta`), then a status line. Ctrl-C cancels the
//! running answer (`Request::cancel`) and keeps the chat; at the prompt it only says how to
//! leave.

use std::io::Write;
use std::sync::Arc;

use motet::agents::Waiting;
use motet::directives::{Pause, Response, ToolArgs};
use motet::runtime::agent::{AgentHandle, AskOptions, DeltaKind, Runtime, Ticket, TicketEvent};
use motet::runtime::store::ThreadStore;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use crate::agent::{self, AGENT, agent_thread};
use crate::config::Settings;
use crate::db::Db;
use crate::error::CliError;
use crate::escape::{self, Mode};
use crate::render;

const HELP: &str = "commands: /reset (forget this thread), /threads (list them), /thread ID \
(switch), /summarize (summarize this thread), /quit (or Ctrl-D). Ctrl-C cancels a running answer.";

/// Runs the chat on `thread` until /quit or the end of input, model text printed as `mode`
/// says (thread ids and errors always escaped).
///
/// # Errors
/// [`CliError::ThreadId`]; store and runtime failures, and reading the terminal; a failed
/// answer is shown in the status line and the chat goes on.
pub async fn run(settings: &Settings, db: &Db, thread: &str, mode: Mode) -> Result<(), CliError> {
    let store = db.open_within(settings.timeout).await?;
    let (runtime, agent) = agent::start(settings, store.clone()).await?;
    let mut chat = Chat {
        runtime: runtime.clone(),
        agent,
        store,
        settings: settings.clone(),
        thread: agent_thread(thread)?.to_owned(),
        status: "ready".to_owned(),
        mode,
        db: db.clone(),
    };
    let outcome = chat.lines().await;
    runtime.shutdown().await;
    outcome
}

struct Chat {
    /// The session's runtime, whose activity counts every LLM call this session made.
    runtime: Runtime,
    agent: AgentHandle,
    store: Arc<dyn ThreadStore>,
    settings: Settings,
    thread: String,
    status: String,
    mode: Mode,
    /// The store, whose lock on the thread each question holds.
    db: Db,
}

/// What woke the question loop.
enum Input {
    Line(Option<String>),
    Interrupt,
}

/// Standard input, a line at a time.
type Stdin = tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>;

/// What woke the answer loop.
#[allow(
    clippy::large_enum_variant,
    reason = "one at a time, on the stack of the answer loop"
)]
enum Streamed {
    Event(Option<TicketEvent>),
    Interrupt,
    /// `--timeout` passed while the answer was still coming.
    Deadline,
}

impl Chat {
    async fn lines(&mut self) -> Result<(), CliError> {
        let (interrupts, mut interrupted) = mpsc::unbounded_channel();
        let watcher = tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if interrupts.send(()).is_err() {
                    break;
                }
            }
        });
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        say(&format!(
            "motet chat · agent {AGENT} · model {} · thread {}\n{HELP}",
            self.settings.model,
            self.shown_thread()
        ));
        self.status_line().await;
        let outcome = loop {
            prompt();
            let input = tokio::select! {
                line = stdin.next_line() => match line {
                    Ok(line) => Input::Line(line),
                    Err(source) => break Err(CliError::Io { what: "cannot read standard input".into(), source }),
                },
                Some(()) = interrupted.recv() => Input::Interrupt,
            };
            let line = match input {
                Input::Interrupt => {
                    say("\n(no answer is running: /quit or Ctrl-D leaves)");
                    continue;
                }
                Input::Line(None) => break Ok(()),
                Input::Line(Some(line)) => line,
            };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(command) = line.strip_prefix('/') {
                match self.command(command).await {
                    Ok(true) => continue,
                    Ok(false) => break Ok(()),
                    Err(e) => {
                        say(&escape::message(&format!("error: {e}")));
                        continue;
                    }
                }
            }
            self.ask(line, &mut interrupted, &mut stdin).await;
            self.status_line().await;
        };
        watcher.abort();
        outcome
    }

    /// Runs one slash command; `false` to leave.
    async fn command(&mut self, command: &str) -> Result<bool, CliError> {
        let (name, arg) = command
            .split_once(char::is_whitespace)
            .map_or((command, ""), |(n, a)| (n, a.trim()));
        match name {
            "quit" | "exit" | "q" => return Ok(false),
            "help" => say(HELP),
            "reset" => {
                self.agent
                    .reset_thread(Some(&self.thread))
                    .await
                    .map_err(|e| CliError::Runtime(e.to_string()))?;
                say(&format!("thread {} reset", self.shown_thread()));
                self.status = "reset".to_owned();
                self.status_line().await;
            }
            "threads" => {
                let listing = self.store.list_readable().await?;
                if listing.threads.is_empty() && listing.unreadable.is_empty() {
                    say("no threads stored yet");
                } else {
                    print!("{}", render::thread_table(&listing.threads));
                    for thread in &listing.unreadable {
                        say(&escape::message(&format!(
                            "thread `{}` cannot be read: {}",
                            thread.thread_id, thread.error
                        )));
                    }
                    say(&format!("current: {}", self.shown_thread()));
                }
            }
            "thread" if !arg.is_empty() => {
                self.thread = agent_thread(arg)?.to_owned();
                self.status = "switched".to_owned();
                self.status_line().await;
            }
            "summarize" => self.summarize().await?,
            other => say(&format!("unknown command /{other}; {HELP}")),
        }
        Ok(true)
    }

    async fn summarize(&mut self) -> Result<(), CliError> {
        let thread = self
            .agent
            .get_thread(Some(&self.thread))
            .await
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        let last = thread
            .as_ref()
            .and_then(|t| t.last())
            .map(|e| u64::from(e.seq));
        let Some(last) = last.filter(|seq| *seq > 0) else {
            say("nothing to summarize yet");
            return Ok(());
        };
        say(&format!("summarizing entries #0..#{last}..."));
        match self
            .agent
            .summarize(Some(&self.thread), 0, last, self.settings.timeout)
            .await
        {
            Ok(summary) => {
                say(&format!("summary: {}", self.mode.text(&summary)));
                self.status = "summarized".to_owned();
            }
            Err(e) => {
                self.status = format!("failed: {}", agent::ask_failure(e, &self.settings));
            }
        }
        self.status_line().await;
        Ok(())
    }

    /// Asks `question`, printing the answer as it streams; Ctrl-C cancels it.
    async fn ask(
        &mut self,
        question: &str,
        interrupted: &mut mpsc::UnboundedReceiver<()>,
        stdin: &mut Stdin,
    ) {
        // Held until the answer is in: another motet process asking on this thread meanwhile
        // is refused.
        let _lock = match self.db.lock(&format!("{AGENT}/{}", self.thread)) {
            Ok(lock) => lock,
            Err(e) => {
                self.status = format!("failed: {e}");
                return;
            }
        };
        let options = AskOptions {
            thread_id: Some(self.thread.clone()),
            timeout: self.settings.timeout,
            stream: true,
            ..AskOptions::default()
        };
        let mut request = match self.agent.submit(question, options).await {
            Ok(request) => request,
            Err(e) => {
                self.status = format!("failed: {}", agent::ask_failure(e, &self.settings));
                return;
            }
        };
        let mut cancelled = false;
        let mut timed_out = false;
        let mut wrote = false;
        // The call whose text was printed last.
        let mut printed = None;
        // Calls cut off after they began to write: each was a call to the provider, retried
        // by another (or the request failed).
        let mut cut_off = 0u32;
        // The whole answer, streaming included, has `--timeout` to arrive.
        let mut deadline = tokio::time::Instant::now() + self.settings.timeout;
        loop {
            let event = tokio::select! {
                event = request.next_event() => Streamed::Event(event),
                Some(()) = interrupted.recv() => Streamed::Interrupt,
                () = tokio::time::sleep_until(deadline), if !cancelled => Streamed::Deadline,
            };
            match event {
                Streamed::Event(None) => break,
                Streamed::Event(Some(TicketEvent::Waiting(waiting))) => {
                    if wrote {
                        say("");
                        wrote = false;
                    }
                    // The time a person takes to decide is not the model's.
                    let asked = tokio::time::Instant::now();
                    if let Err(e) = self.decide(&request, &waiting, stdin).await {
                        say(&escape::message(&format!("({e})")));
                    }
                    deadline += asked.elapsed();
                }
                Streamed::Event(Some(TicketEvent::Delta(delta))) => match delta.kind {
                    DeltaKind::Text => {
                        print!("{}", self.mode.text(&delta.delta));
                        wrote = true;
                        printed = Some(delta.call_id);
                        flush();
                    }
                    // The call was cut after it wrote this much; a retry writes again.
                    DeltaKind::Discard => {
                        cut_off += 1;
                        if printed.as_ref() == Some(&delta.call_id) {
                            say("\n[cut off: the text above is discarded]");
                            printed = None;
                        }
                    }
                    DeltaKind::Reasoning => {}
                },
                Streamed::Interrupt if !cancelled => {
                    cancelled = true;
                    if let Err(e) = request.cancel("interrupted (Ctrl-C)").await {
                        say(&format!("\n(could not cancel: {e})"));
                    }
                }
                Streamed::Interrupt => {}
                Streamed::Deadline => {
                    cancelled = true;
                    timed_out = true;
                    let why = format!("no answer within {} s", self.settings.timeout.as_secs());
                    if let Err(e) = request.cancel(why).await {
                        say(&format!("\n(could not cancel: {e})"));
                    }
                }
            }
        }
        if wrote {
            say("");
        }
        self.status = match request.wait().await {
            Ok(reply) => match agent::completed(&reply) {
                Ok(done) => {
                    if !wrote {
                        say(&self.mode.text(&done.answer));
                    }
                    calls(done.iterations, cut_off)
                }
                Err(e) => format!("failed: {e}"),
            },
            Err(_) if timed_out => format!(
                "failed: no answer within {} s (raise it with --timeout)",
                self.settings.timeout.as_secs()
            ),
            Err(_) if cancelled => "cancelled".to_owned(),
            Err(e) => format!("failed: {}", agent::ask_failure(e, &self.settings)),
        };
    }

    /// Asks the person at the terminal about a call that waits for them: `approve? [y/N/edit]`
    /// for an approval, the tool's question for an answer. The end of input rejects. Edited
    /// arguments that are not a JSON object are refused, saying why, and asked for again; what
    /// the person decided is said only once the runtime took it.
    async fn decide(
        &self,
        request: &Ticket,
        waiting: &Waiting,
        stdin: &mut Stdin,
    ) -> Result<(), CliError> {
        // The call's id tells apart two calls with the same tool and arguments.
        let call = format!(
            "`{}` {} [{}]",
            escape::label(&waiting.tool),
            self.mode.text(waiting.args.get()),
            escape::label(&waiting.tool_call_id)
        );
        let response = match &waiting.pause {
            Pause::Approval(approval) => {
                let why = approval
                    .reason
                    .as_deref()
                    .map(|r| format!(" ({})", self.mode.text(r)))
                    .unwrap_or_default();
                print!("{call} needs your approval{why}. approve? [y/N/edit] ");
                flush();
                match read(stdin).await?.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => Response::Approve,
                    "e" | "edit" => edited(stdin).await?,
                    _ => rejected(),
                }
            }
            Pause::Question { text } => {
                say(&format!("{call} asks: {}", self.mode.text(text)));
                print!("answer: ");
                flush();
                Response::Answer {
                    text: read(stdin).await?,
                }
            }
        };
        let verdict = match &response {
            Response::Approve | Response::Edit { .. } => "(approved)",
            Response::Reject { .. } => "(rejected)",
            Response::Answer { .. } => "(answered)",
        };
        request
            .respond(&waiting.tool_call_id, response)
            .await
            .map_err(|e| CliError::Request(e.to_string()))?;
        say(verdict);
        Ok(())
    }

    /// `[cli · thread T · N entries · I in / O out · session I in / O out · STATUS]`: the
    /// thread's entries and stored token totals, as `threads list` counts them, then what this
    /// session spent — every LLM call it made, a cancelled answer's included once its call ends
    /// (the thread keeps no entry for it).
    async fn status_line(&self) {
        let (entries, usage) = match self.agent.get_thread(Some(&self.thread)).await {
            Ok(Some(thread)) => (thread.entry_count(), thread.usage()),
            _ => (0, Default::default()),
        };
        let session = self.runtime.activity();
        say(&format!(
            "[{AGENT} · thread {} · {entries} entries · {} · session {} in / {} out · {}]",
            self.shown_thread(),
            render::tokens(&usage),
            session.input_tokens,
            session.output_tokens,
            escape::message(&self.status)
        ));
    }

    /// The current thread as users type it, escaped.
    fn shown_thread(&self) -> String {
        escape::label(&agent::shown_thread(&self.thread)).into_owned()
    }
}

/// The arguments to run a call with instead, asked for until they are a JSON object (as the
/// runtime requires: it refuses others with `RuntimeError::InvalidEdit`); an empty line or the
/// end of input rejects the call.
async fn edited(stdin: &mut Stdin) -> Result<Response, CliError> {
    loop {
        print!("arguments (a JSON object): ");
        flush();
        let args = read(stdin).await?.trim().to_owned();
        if args.is_empty() {
            return Ok(rejected());
        }
        match ToolArgs::from_text(args.as_str()).problem() {
            None => return Ok(Response::Edit { args }),
            Some(problem) => say(&escape::message(&format!(
                "(not run with these: {problem}; type the arguments again, or an empty line to reject)"
            ))),
        }
    }
}

/// The status of an answered request: its LLM calls, and the calls cut off after they began
/// to write (each a provider call too, whose tokens the provider never reported, so the
/// session's tokens are those of the answered calls, as `threads list` shows them).
fn calls(answered: u32, cut_off: u32) -> String {
    if cut_off == 0 {
        format!("ok · {answered} LLM call(s)")
    } else {
        format!("ok · {answered} LLM call(s) · {cut_off} cut off and retried")
    }
}

/// The person at the terminal said no.
fn rejected() -> Response {
    Response::Reject {
        reason: "the person at the terminal said no".to_owned(),
    }
}

/// One line of standard input (empty at its end).
async fn read(stdin: &mut Stdin) -> Result<String, CliError> {
    stdin
        .next_line()
        .await
        .map(Option::unwrap_or_default)
        .map_err(|source| CliError::Io {
            what: "cannot read standard input".into(),
            source,
        })
}

fn say(text: &str) {
    println!("{text}");
}

fn prompt() {
    print!("> ");
    flush();
}

fn flush() {
    // A terminal that went away cannot be told about it either.
    let _ = std::io::stdout().flush();
}
