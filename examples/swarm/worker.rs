//! A worker: ReAct with real tools, wrapped so chaos can crash it on purpose.
//!
//! Every tool's schema is in every prompt, so each worker has only the tools of its [`Skill`]:
//! the calculators `add` over integers and `unstable`, the readers `read_file` for the files
//! under the swarm's folder (a path that leads outside it is refused with an error result the
//! model reads). `unstable` panics; the tool set turns that panic into an error result and the
//! agent carries on. A task marked `crash` panics in the worker's strategy instead: that takes
//! its thread down, and the supervisor restarts it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use motet::agents::REACT_INPUT;
use motet::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::coordinator::{Skill, WorkerInput};

/// The message every planned panic starts with, so the panic hook can keep them quiet.
pub(crate) const CHAOS: &str = "chaos:";

/// ReAct, plus a crash on the tasks chaos picked.
pub(crate) struct Worker(pub ReAct);

impl Strategy for Worker {
    type State = ReActState;

    fn init(&self, env: &dyn Env) -> ReActState {
        self.0.init(env)
    }

    fn init_for_thread(&self, env: &dyn Env, thread: &str) -> ReActState {
        self.0.init_for_thread(env, thread)
    }

    fn restore(&self, env: &dyn Env, thread: Thread) -> ReActState {
        self.0.restore(env, thread)
    }

    fn thread<'a>(&self, state: &'a ReActState) -> Option<&'a Thread> {
        self.0.thread(state)
    }

    #[allow(clippy::panic)] // crashing is what chaos is for
    fn handle(
        &self,
        state: &mut ReActState,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        if signal.signal_type().as_str() == REACT_INPUT
            && signal
                .data_as::<WorkerInput>()
                .is_ok_and(|input| input.crash)
        {
            panic!("{CHAOS} the worker crashed on purpose");
        }
        self.0.handle(state, signal, env)
    }
}

#[derive(Deserialize, JsonSchema)]
struct Operands {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct FileArgs {
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// The tools of workers with `skill`; `calls` counts every call that reached a tool.
pub(crate) fn tools(
    skill: Skill,
    folder: Arc<PathBuf>,
    calls: Arc<AtomicU64>,
) -> Result<ToolSet, String> {
    let counted = move || {
        calls.fetch_add(1, Ordering::Relaxed);
    };
    let builder = match skill {
        Skill::Calculate => {
            let also = counted.clone();
            ToolSet::builder()
                .tool(tool_fn(
                    "add",
                    "Adds integers a and b.",
                    move |args: Operands| {
                        counted();
                        async move { arithmetic(args.a.checked_add(args.b), "sum") }
                    },
                ))
                .tool(tool_fn("unstable", "Flaky.", move |args: NoArgs| {
                    also();
                    unstable(args)
                }))
        }
        Skill::Read => ToolSet::builder().tool(tool_fn(
            "read_file",
            "Reads a file, e.g. notes/alpha.txt.",
            move |args: FileArgs| {
                counted();
                let folder = folder.clone();
                async move {
                    tokio::task::spawn_blocking(move || read_inside(&folder, &args.path))
                        .await
                        .map_err(|e| ToolError::failed(format!("the read did not finish: {e}")))?
                }
            },
        )),
    };
    builder.build().map_err(|e| e.to_string())
}

#[allow(clippy::panic)] // the tool set turns this panic into an error result
async fn unstable(_: NoArgs) -> Result<String, ToolError> {
    panic!("{CHAOS} the unstable tool panicked");
}

fn arithmetic(value: Option<i64>, what: &str) -> Result<String, ToolError> {
    value
        .map(|v| v.to_string())
        .ok_or_else(|| ToolError::failed(format!("the {what} does not fit in a 64-bit integer")))
}

/// Reads `path` under `folder`, refusing anything that resolves outside it (`..`, absolute
/// paths, symlinks pointing out).
fn read_inside(folder: &Path, path: &str) -> Result<String, ToolError> {
    let outside = || {
        ToolError::failed(format!(
            "`{path}` is outside the swarm's folder; give a path inside it, like notes/alpha.txt"
        ))
    };
    if Path::new(path).is_absolute() {
        return Err(outside());
    }
    let resolved = folder.join(path).canonicalize().map_err(|_| {
        ToolError::failed(format!(
            "no file `{path}` in the swarm's folder; try notes/alpha.txt"
        ))
    })?;
    if !resolved.starts_with(folder) {
        return Err(outside());
    }
    std::fs::read_to_string(&resolved)
        .map_err(|e| ToolError::failed(format!("`{path}` could not be read: {e}")))
}

/// Creates the folder the `read_file` tool serves, with a few small notes; returns its
/// canonical path.
pub(crate) fn make_folder() -> std::io::Result<PathBuf> {
    let folder = std::env::temp_dir().join(format!("motet-swarm-{}", std::process::id()));
    let notes = folder.join("notes");
    std::fs::create_dir_all(&notes)?;
    for (name, text) in NOTES {
        std::fs::write(notes.join(name), text)?;
    }
    folder.canonicalize()
}

/// The files of the swarm's folder, under `notes/`.
pub(crate) const NOTES: [(&str, &str); 3] = [
    ("alpha.txt", "The launch code is 4471.\n"),
    ("beta.txt", "Meeting moved to Thursday at 10.\n"),
    ("gamma.txt", "Remember to water the ferns.\n"),
];
