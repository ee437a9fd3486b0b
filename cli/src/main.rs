//! `motet`: ask an agent, chat with it, resume it after a crash, and look into its stored
//! threads. The grammar lives here; the work in the `motet_cli` library. See docs/cli.md.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use motet::directives::Response;
use motet_cli::commands;
use motet_cli::config::{Flags, Loaded};
use motet_cli::error::CliError;
use motet_cli::escape::{self, Mode};

/// Ask a motet agent, chat with it, resume it, and inspect its stored threads.
///
/// The agent is a ReAct agent named `cli` with one built-in tool, `calculator`: arithmetic
/// with `+ - * / % ^`, parentheses, sqrt abs ln exp floor ceil round. Its threads are stored
/// (in a SQLite file, or the PostgreSQL database --db names) as `cli/<thread>`; everywhere a thread id is asked for, `default` and
/// `cli/default` mean the same thread, and an id with a `/` is the whole `<agent>/<thread>`.
///
/// Exit codes: 0 success, 1 the request or stream failed, 2 bad command line, 3 configuration
/// (model, key, config file), 4 the store (not a motet database, unknown thread).
#[derive(Debug, Parser)]
#[command(name = "motet", version, about, long_about)]
struct Cli {
    /// The thread store: a SQLite file's path, or a URL (postgres://user@host:port/db,
    /// sqlite://PATH, memory:) [default: MOTET_DATABASE_URL, else motet.toml's `db`, else
    /// motet/motet.db under the user data directory, e.g. ~/.local/share/motet/motet.db].
    #[arg(long, global = true, value_name = "PATH|URL")]
    db: Option<PathBuf>,
    /// The configuration file [default: ./motet.toml when it exists].
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Print model text (answers, stored entries) exactly as it is, terminal control
    /// characters included, even to a terminal [default: shown as escapes like `\u{1b}` on a
    /// terminal, exact into a file or a pipe]. Thread ids and errors are always escaped.
    #[arg(long, global = true)]
    raw: bool,
    #[command(subcommand)]
    command: Command,
}

/// Model selection shared by the commands that run the agent.
#[derive(Debug, clap::Args)]
struct ModelArgs {
    /// The model as provider:model (openai, openai-responses, anthropic, gemini,
    /// openai-compat) [default: MOTET_MODEL, the config file's `model`, else the first
    /// provider with an API key in the environment, else the local server at
    /// MOTET_LOCAL_LLM_URL].
    #[arg(long, value_name = "PROVIDER:MODEL")]
    model: Option<String>,
    /// Seconds one request may take [default: the config file's `timeout_secs`, else 120].
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Whether the model must call a tool before it answers: auto, required, none, or a tool's
    /// name (that tool). Forced only until the model's first tool call, so it can still answer
    /// [default: the config file's `tool_choice`, else auto].
    #[arg(long, value_name = "CHOICE")]
    tool_choice: Option<String>,
    /// A tool whose every call waits for your approval (repeat for more) [default: the config
    /// file's `approve`, else none].
    #[arg(long, value_name = "TOOL")]
    approve: Vec<String>,
}

impl ModelArgs {
    fn flags(self) -> Flags {
        Flags {
            model: self.model,
            timeout: self.timeout,
            tool_choice: self.tool_choice,
            approve: self.approve,
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ask one question and print the answer.
    Run {
        /// The question (`-` reads it from standard input, for questions longer than a
        /// command line takes).
        question: String,
        /// The conversation thread (`default`, `cli/default`, or any name; a name with a `/`
        /// is written whole, `cli/notes/2024`; `new` starts a fresh one).
        #[arg(long, value_name = "ID", default_value = "default")]
        thread: String,
        /// Print one JSON object: answer, thread, request_id, model, usage, iterations.
        #[arg(long)]
        json: bool,
        /// An image to send with the question (PNG, JPEG, GIF, WebP; its type from its first
        /// bytes or its extension); may be given more than once.
        #[arg(long, value_name = "PATH")]
        image: Vec<std::path::PathBuf>,
        /// A file to send with the question: an image, a PDF or plain-text document, WAV or
        /// MP3 audio; may be given more than once. Sent after the images.
        #[arg(long, value_name = "PATH")]
        file: Vec<std::path::PathBuf>,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Chat in the terminal; the answer streams as it is written. Commands: /reset,
    /// /threads, /thread ID, /summarize, /quit. Ctrl-C cancels the running answer.
    Chat {
        /// The thread to start on.
        #[arg(long, value_name = "ID", default_value = "default")]
        thread: String,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Carry on with a thread whose request was cut short (a crash, a kill): prints what the
    /// thread owed and what was done.
    Resume {
        /// The thread (`default` or `cli/default`).
        thread: String,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// The tool calls waiting for a person (an approval, a tool's question), on every stored
    /// thread: thread, request, call id, tool, arguments, what it waits for.
    Pending,
    /// Serve the agent over HTTP until Ctrl-C: the native API (threads, runs streamed as SSE
    /// and resumable, approvals; /openapi.json), docs/serve.md.
    ///
    /// Bearer tokens come from MOTET_SERVE_TOKEN and motet.toml's [[serve.tokens]] (each
    /// scoped to agents); with none, only a loopback address is served.
    Serve {
        /// Where to listen [default: motet.toml's [serve] addr, else 127.0.0.1:8420].
        #[arg(long, value_name = "HOST:PORT")]
        addr: Option<String>,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Approve a waiting tool call (as the model asked, or with --edit), then wait for the
    /// request's answer.
    Approve {
        /// The call id `pending` shows.
        call: String,
        /// The thread the call waits on (needed when the same call id waits on several).
        #[arg(long, value_name = "ID")]
        thread: Option<String>,
        /// Run it with these arguments instead (a JSON object).
        #[arg(long, value_name = "JSON")]
        edit: Option<String>,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Reject a waiting tool call; the model reads the reason.
    Reject {
        /// The call id `pending` shows.
        call: String,
        /// The thread the call waits on (needed when the same call id waits on several).
        #[arg(long, value_name = "ID")]
        thread: Option<String>,
        /// Why, for the model.
        #[arg(long, default_value = "rejected at the command line")]
        reason: String,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Answer a tool's question; the answer is the call's result.
    Answer {
        /// The call id `pending` shows.
        call: String,
        /// The thread the call waits on (needed when the same call id waits on several).
        #[arg(long, value_name = "ID")]
        thread: Option<String>,
        /// The answer.
        text: String,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// LLM calls, tokens, cached share and cost from the store's usage ledger, totalled by
    /// agent, model, UTC day or tenant.
    Usage {
        /// What to total by.
        #[arg(long, value_enum, default_value_t = UsageBy::Agent)]
        by: UsageBy,
        /// Only calls from this UTC day (2026-11-01) or RFC 3339 time on.
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// Print one JSON object: the groups and the total.
        #[arg(long)]
        json: bool,
    },
    /// The agents the store holds threads of (virtual agents by kind and key, and named
    /// ones), listed without activating any.
    Agents {
        #[command(subcommand)]
        command: AgentsCommand,
    },
    /// The stored threads.
    Threads {
        #[command(subcommand)]
        command: ThreadsCommand,
    },
    /// Parse a recorded SSE response body (`-` for standard input) and print the assembled
    /// response as JSON; exits 1 with the typed error when motet cannot accept the stream.
    Transcript {
        /// The provider dialect.
        #[arg(long, value_parser = ["openai-chat", "openai-responses", "anthropic", "gemini"])]
        dialect: String,
        /// The file holding the response body.
        file: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// Every stored agent by name: threads, created, last active.
    List {
        /// Only the virtual agents of this kind (`<kind>:<key>`).
        #[arg(long)]
        kind: Option<String>,
        /// Print only how many there are.
        #[arg(long)]
        count: bool,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ThreadsCommand {
    /// Every thread: entries, tokens, last update.
    List,
    /// A thread's entries, one per line.
    Show {
        /// The thread.
        id: String,
    },
    /// A thread's entries as JSON.
    Export {
        /// The thread.
        id: String,
        /// One entry per line (jsonl) or one array (json).
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
    },
    /// A new thread holding a thread's entries (all, or up to `--at`); prints its id.
    ///
    /// A question asked on the new thread goes on from that point, as if the entries after it
    /// had never been. The thread forked is not changed.
    Fork {
        /// The thread.
        id: String,
        /// The last entry to copy, by its seq (`#3` in `threads show`).
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
    },
    /// Delete a thread and its entries.
    Delete {
        /// The thread.
        id: String,
    },
}

/// What `usage` totals by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum UsageBy {
    /// The agent.
    Agent,
    /// The model (`provider:model`).
    Model,
    /// The UTC day.
    Day,
    /// The agent's tenant.
    Tenant,
}

impl From<UsageBy> for motet::runtime::store::UsageGroup {
    fn from(by: UsageBy) -> Self {
        match by {
            UsageBy::Agent => Self::Agent,
            UsageBy::Model => Self::Model,
            UsageBy::Day => Self::Day,
            UsageBy::Tenant => Self::Tenant,
        }
    }
}

/// How `threads export` writes entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ExportFormat {
    /// One JSON object per line.
    Jsonl,
    /// One JSON array.
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Spans go to OTEL_EXPORTER_OTLP_ENDPOINT when it is set; log lines go to stderr only
    // (RUST_LOG, default warn), so standard output stays the command's own. The guard
    // flushes the exporters when it drops, after the runtime below has finished.
    let _telemetry = match motet::telemetry::init() {
        Ok(guard) => guard,
        Err(error) => {
            let error = CliError::from(error);
            eprintln!("motet: {}", escape::message(&error.to_string()));
            return ExitCode::from(error.exit_code());
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("motet: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(()) | Err(CliError::OutputClosed) => ExitCode::SUCCESS,
        Err(error) => {
            // Errors quote ids, provider bodies and model text: never obeyed by the terminal.
            eprintln!("motet: {}", escape::message(&error.to_string()));
            ExitCode::from(error.exit_code())
        }
    }
}

async fn dispatch(cli: Cli) -> Result<(), CliError> {
    if let Command::Transcript { dialect, file } = &cli.command {
        return commands::transcript::run(dialect, file);
    }
    let loaded = Loaded::read(cli.config.as_deref())?;
    // A local server is looked for only when MOTET_LOCAL_LLM_URL is not set at all (set it
    // empty to look nowhere), and only once.
    let local = std::sync::OnceLock::new();
    let env = |name: &str| match std::env::var(name) {
        Ok(value) if value.is_empty() => None,
        Ok(value) => Some(value),
        Err(_) if name == "MOTET_LOCAL_LLM_URL" => local
            .get_or_init(motet_cli::config::find_local_server)
            .clone(),
        Err(_) => None,
    };
    let db = loaded.db(cli.db.as_deref(), &env)?;
    let mode = Mode::for_stdout(cli.raw);
    match cli.command {
        Command::Run {
            question,
            thread,
            json,
            image,
            file,
            model,
        } => {
            use motet_cli::input::{AttachAs, attachment};
            // Read before anything starts: a file that cannot be sent fails the run at once.
            let attachments = image
                .iter()
                .map(|path| attachment(path, AttachAs::Image))
                .chain(file.iter().map(|path| attachment(path, AttachAs::File)))
                .collect::<Result<Vec<_>, _>>()?;
            let settings = loaded.settings(&model.flags(), &env)?;
            let question = motet_cli::input::question(&question)?;
            let asked = commands::run::Question {
                text: &question,
                attachments: attachments.into(),
            };
            commands::run::run(&settings, &db, asked, &thread, json, mode).await
        }
        Command::Chat { thread, model } => {
            let settings = loaded.settings(&model.flags(), &env)?;
            commands::chat::run(&settings, &db, &thread, mode).await
        }
        Command::Resume { thread, model } => {
            // An unknown thread is the first thing to say, whatever the model settings.
            commands::resume::check(&db, &thread).await?;
            let settings = loaded.settings(&model.flags(), &env)?;
            commands::resume::run(&settings, &db, &thread, mode).await
        }
        Command::Pending => commands::pending::list(&db, mode).await,
        Command::Serve { addr, model } => {
            let settings = loaded.settings(&model.flags(), &env)?;
            let table = &loaded.file.serve;
            commands::serve::run(&settings, &db, table, addr.as_deref(), &env).await
        }
        Command::Approve {
            call,
            thread,
            edit,
            model,
        } => {
            let settings = loaded.settings(&model.flags(), &env)?;
            let response = match edit {
                Some(args) => Response::Edit { args },
                None => Response::Approve,
            };
            commands::pending::respond(&settings, &db, &call, thread.as_deref(), response, mode)
                .await
        }
        Command::Reject {
            call,
            thread,
            reason,
            model,
        } => {
            let settings = loaded.settings(&model.flags(), &env)?;
            let response = Response::Reject { reason };
            commands::pending::respond(&settings, &db, &call, thread.as_deref(), response, mode)
                .await
        }
        Command::Answer {
            call,
            thread,
            text,
            model,
        } => {
            let settings = loaded.settings(&model.flags(), &env)?;
            let response = Response::Answer { text };
            commands::pending::respond(&settings, &db, &call, thread.as_deref(), response, mode)
                .await
        }
        Command::Usage { by, since, json } => {
            let since = since.as_deref().map(commands::usage::since).transpose()?;
            commands::usage::report(&db, by.into(), since, json).await
        }
        Command::Agents { command } => match command {
            AgentsCommand::List { kind, count, json } => {
                commands::agents::list(&db, kind, count, json).await
            }
        },
        Command::Threads { command } => match command {
            ThreadsCommand::List => commands::threads::list(&db).await,
            ThreadsCommand::Show { id } => commands::threads::show(&db, &id, mode).await,
            ThreadsCommand::Export { id, format } => {
                commands::threads::export(&db, &id, format == ExportFormat::Jsonl).await
            }
            ThreadsCommand::Fork { id, at } => commands::threads::fork(&db, &id, at).await,
            ThreadsCommand::Delete { id } => commands::threads::delete(&db, &id).await,
        },
        Command::Transcript { .. } => Ok(()),
    }
}
