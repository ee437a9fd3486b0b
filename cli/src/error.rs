//! What can go wrong in a command, and the exit code each failure maps to.

use std::path::PathBuf;

use motet::runtime::store::{OpenStoreError, StoreError, UnreadableThread};

/// A command's failure. The message names what was wrong (the key and file, the model ref, the
/// URL, the thread); [`CliError::exit_code`] tells scripts which kind of failure it was.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A command-line flag holds a value that cannot be used.
    #[error("{flag}: {message}")]
    BadFlag {
        /// The flag, e.g. `--tool-choice`.
        flag: String,
        /// What is wrong with its value.
        message: String,
    },
    /// The configuration file cannot be read or holds a bad value.
    #[error("config file {}: {message}", path.display())]
    ConfigFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A model ref that is not `provider:model`, or names no known provider.
    #[error("unknown model `{input}` (from {source_name}): {reason}")]
    UnknownModel {
        /// The ref as given.
        input: String,
        /// Where it came from (`--model`, `MOTET_MODEL`, the config file).
        source_name: String,
        /// Why it is not usable.
        reason: String,
    },
    /// An environment variable holds a value that cannot be used (`MOTET_IDLE_TIMEOUT=ten`).
    #[error("environment: {message}")]
    Environment {
        /// What is wrong, naming the variable.
        message: String,
    },
    /// The chosen provider lacks its key or base URL.
    #[error("model `{model}`: {message}")]
    ProviderConfig {
        /// The model ref.
        model: String,
        /// What is missing, naming the variable to set.
        message: String,
    },
    /// No model was given and none can be chosen from the environment.
    #[error(
        "no model configured: set an API key (ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY), \
         or start a local server with `bash scripts/local-llm.sh start` and set MOTET_LOCAL_LLM_URL \
         to the URL it prints, or pass --model provider:model"
    )]
    NoModel,
    /// The thread store cannot be opened or read.
    #[error("thread store: {0}")]
    Store(#[from] StoreError),
    /// The thread store a URL names cannot be opened (the message names it, password hidden).
    #[error("{0}")]
    OpenStore(Box<OpenStoreError>),
    /// The thread store failed while a request ran: its thread could not be loaded or
    /// committed (a lock held elsewhere past the time allowed, a damaged row, a server gone).
    #[error("thread store: {0}")]
    ThreadStore(String),
    /// Some threads of the store could not be read; each was named on standard error, and the
    /// others were listed.
    #[error(
        "{count} thread{} could not be read in {store} (named above); the others are listed",
        if *count == 1 { "" } else { "s" }
    )]
    Unreadable {
        /// How many.
        count: usize,
        /// The store: its file, or its URL with the password hidden.
        store: String,
    },
    /// The store's folder cannot be created.
    #[error("cannot create {}: {source}", path.display())]
    DataDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A thread id the command cannot use: empty, or (for the commands that run the agent)
    /// naming another agent's thread.
    #[error("thread id `{id}`: {reason}")]
    ThreadId {
        /// The id as given.
        id: String,
        /// The rule it breaks.
        reason: String,
    },
    /// No thread of that id in the store.
    #[error("no thread `{thread}` in {store}")]
    UnknownThread {
        /// The store id looked up (`<agent>/<thread>`).
        thread: String,
        /// The store: its file, or its URL with the password hidden.
        store: String,
    },
    /// The model's server could not be reached.
    #[error("cannot reach the model server at {url}: {message}")]
    Unreachable {
        /// The base URL the provider was called at.
        url: String,
        /// The provider's error.
        message: String,
    },
    /// The request failed (the agent answered with a failure, or no answer came).
    #[error("request failed: {0}")]
    Request(String),
    /// The runtime could not start the agent.
    #[error("runtime: {0}")]
    Runtime(String),
    /// Reading a file or the terminal failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The OpenTelemetry settings (`OTEL_*`, `RUST_LOG`) cannot be used.
    #[error("telemetry: {0}")]
    Telemetry(#[from] motet::telemetry::TelemetryError),
    /// Another `motet` process is asking on this thread right now.
    #[error(
        "thread `{thread}` is busy: another motet process is answering on it (ask again when it is done)"
    )]
    ThreadBusy {
        /// The thread's store id.
        thread: String,
    },
    /// Standard output was closed by its reader (`motet threads show … | head`): nothing is
    /// wrong, the rest is not wanted.
    #[error("standard output was closed")]
    OutputClosed,
    /// A recorded stream that motet cannot accept (`motet transcript`).
    #[error("{0}")]
    Transcript(String),
    /// A response for a tool call that does not wait (`motet approve`, `reject`, `answer`),
    /// or one the runtime refused (the wrong kind, edited arguments that are not an object).
    #[error("{0}")]
    NotWaiting(String),
    /// A call id that waits on several threads (ids are the model's: the same one can wait on
    /// two threads), with no `--thread` to choose.
    #[error(
        "call `{call}` waits on {} threads ({}): name one with --thread",
        threads.len(),
        threads.join(", ")
    )]
    AmbiguousCall {
        /// The call id as given.
        call: String,
        /// The threads it waits on, as users type them.
        threads: Vec<String>,
    },
    /// A leading part of a call id that several waiting calls' ids start with.
    #[error(
        "`{prefix}` starts {} waiting calls' ids ({}): give more of the id",
        calls.len(),
        calls.join(", ")
    )]
    AmbiguousCallPrefix {
        /// The part given.
        prefix: String,
        /// The ids it starts.
        calls: Vec<String>,
    },
    /// A thread whose request waits for a person: a new question or a resume would not be
    /// taken in before the person answers.
    #[error("thread `{thread}` waits for a person: {}", how.join("; "))]
    WaitsForPerson {
        /// The thread, as users type it.
        thread: String,
        /// What waits and how to go on, one per waiting call.
        how: Vec<String>,
    },
}

impl From<OpenStoreError> for CliError {
    fn from(error: OpenStoreError) -> Self {
        Self::OpenStore(Box::new(error))
    }
}

impl CliError {
    /// The process exit code: 1 a request or stream failed, 3 configuration, 4 the store or
    /// a thread in it (2 is a bad command line, as clap reports it).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Request(_)
            | Self::Unreachable { .. }
            | Self::Runtime(_)
            | Self::Io { .. }
            | Self::Transcript(_)
            | Self::NotWaiting(_)
            | Self::WaitsForPerson { .. } => 1,
            Self::ConfigFile { .. }
            | Self::Environment { .. }
            | Self::UnknownModel { .. }
            | Self::ProviderConfig { .. }
            | Self::NoModel
            | Self::Telemetry(_) => 3,
            Self::Store(_)
            | Self::ThreadStore(_)
            | Self::OpenStore(_)
            | Self::DataDir { .. }
            | Self::Unreadable { .. }
            | Self::UnknownThread { .. }
            | Self::ThreadBusy { .. } => 4,
            Self::BadFlag { .. }
            | Self::ThreadId { .. }
            | Self::AmbiguousCall { .. }
            | Self::AmbiguousCallPrefix { .. } => 2,
            Self::OutputClosed => 0,
        }
    }
}

/// Names each thread a listing could not read on standard error (`motet: thread `ID` cannot
/// be read: WHY`, escaped as every error is), then fails with [`CliError::Unreadable`] when
/// there was any: a listing that skipped damaged threads must not look complete to a script.
///
/// # Errors
/// [`CliError::Unreadable`] when `unreadable` is not empty.
pub fn unreadable(
    unreadable: &[UnreadableThread],
    store: &impl std::fmt::Display,
) -> Result<(), CliError> {
    for thread in unreadable {
        eprintln!(
            "motet: {}",
            crate::escape::message(&format!(
                "thread `{}` cannot be read: {}",
                thread.thread_id, thread.error
            ))
        );
    }
    if unreadable.is_empty() {
        return Ok(());
    }
    Err(CliError::Unreadable {
        count: unreadable.len(),
        store: store.to_string(),
    })
}
