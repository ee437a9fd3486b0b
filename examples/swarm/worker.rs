//! A worker: ReAct with real tools, wrapped (`Wrapped`) so chaos can crash it on purpose and so the
//! coordinator hears what each tool returned.
//!
//! Every tool's schema is in every prompt, so each worker has only the tool of its [`Skill`]:
//! `multiply` over integers, or `read_file` for the files under the swarm's folder (a path that
//! leads outside it is refused with an error result the model reads). The worker's first LLM
//! call of each task must call that tool (a named `tool_choice`); after it the model may
//! answer. A task marked `crash` panics in the worker's strategy instead: that takes its thread
//! down, and the supervisor restarts it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use motet::agents::{AGENT_REQUEST, EntryBody};
use motet::agents::{ReActState, Wrap};
use motet::directives::{Emit, EmitTarget};
use motet::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::coordinator::{Skill, WorkerInput};

/// The message every planned panic starts with, so the panic hook can keep them quiet.
pub(crate) const CHAOS: &str = "chaos:";

/// Published on the bus for every tool result a worker commits: data [`ToolReport`].
pub(crate) const TOOL_REPORT: &str = "swarm.tool";

/// What a tool returned to the model, for the coordinator to check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolReport {
    /// The task's request.
    pub request_id: String,
    /// The tool.
    pub tool: String,
    /// What the model read.
    pub output: String,
    /// Whether it was an error result.
    pub is_error: bool,
}

/// Around ReAct (`Wrapped::new(react, Worker)`, which keeps every other hook ReAct's): a
/// crash on the tasks chaos picked, and a report of each tool result.
pub(crate) struct Worker;

impl Wrap<ReAct> for Worker {
    #[allow(clippy::panic)] // crashing is what chaos is for
    fn handle(
        &self,
        react: &ReAct,
        state: &mut ReActState,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        if signal.signal_type().as_str() == AGENT_REQUEST
            && signal
                .data_as::<WorkerInput>()
                .is_ok_and(|input| input.crash)
        {
            panic!("{CHAOS} the worker crashed on purpose");
        }
        let before = state.thread.entry_count();
        let mut directives = react.handle(state, signal, env)?;
        // What this signal committed: each tool result, as the model will read it.
        for entry in state.thread.to_list().get(before..).unwrap_or_default() {
            let (EntryBody::ToolResult { name, result }, Some(request_id)) =
                (&entry.body, &entry.refs.request_id)
            else {
                continue;
            };
            let report = ToolReport {
                request_id: request_id.to_string(),
                tool: name.to_string(),
                output: result.content.clone(),
                is_error: result.is_error,
            };
            let signal = Signal::builder(TOOL_REPORT, "worker")
                .with_request_id(request_id.as_str())
                .with_data(report)
                .build()
                .map_err(|e| StrategyError::Emit {
                    signal_type: TOOL_REPORT.to_owned(),
                    message: e.to_string(),
                })?;
            directives.push(Directive::Emit(Emit {
                signal,
                target: EmitTarget::Bus,
            }));
        }
        Ok(directives)
    }
}

#[derive(Deserialize, JsonSchema)]
struct Factors {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct FileArgs {
    /// The note's path, `notes/<name>.txt`.
    // The pattern is the folder's shape: servers that constrain arguments by the schema
    // (llama.cpp) keep the model to it, and the small model then copies the name from the
    // question instead of inventing `data.txt`. The tool still refuses paths outside the folder
    // for models and servers that do not follow patterns.
    #[schemars(regex(pattern = r"^notes/[a-z]+\.txt$"))]
    path: String,
}

/// The one tool of workers with `skill`.
pub(crate) fn tools(skill: Skill, folder: Arc<PathBuf>) -> Result<ToolSet, String> {
    let builder = ToolSet::builder();
    let builder = match skill {
        Skill::Calculate => builder.tool(tool_fn(
            skill.tool(),
            "Multiplies integers a and b.",
            |f: Factors| async move {
                f.a.checked_mul(f.b)
                    .map(|product| product.to_string())
                    .ok_or_else(|| ToolError::failed("the product does not fit in 64 bits"))
            },
        )),
        Skill::Read => builder.tool(tool_fn(
            skill.tool(),
            "Reads a text file.",
            move |args: FileArgs| {
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

/// Creates the folder the `read_file` tool serves, with one note per entry of [`NOTES`];
/// returns its canonical path.
pub(crate) fn make_folder() -> std::io::Result<PathBuf> {
    let folder = std::env::temp_dir().join(format!("motet-swarm-{}", std::process::id()));
    let notes = folder.join("notes");
    std::fs::create_dir_all(&notes)?;
    for (name, code) in NOTES {
        std::fs::write(notes.join(name), format!("The code is {code}.\n"))?;
    }
    folder.canonicalize()
}

/// The notes under `notes/`, each holding one code: what a reader task must find.
pub(crate) const NOTES: [(&str, &str); 4] = [
    ("alpha.txt", "4471"),
    ("beta.txt", "2093"),
    ("gamma.txt", "7315"),
    ("delta.txt", "5862"),
];

#[cfg(test)]
mod tests {
    //! Arbitrary arguments through `read_file`, as the runtime calls it: any path answers with
    //! one of the notes or a typed error, never with a file outside the folder, never a panic.

    #![allow(clippy::unwrap_used, clippy::panic)] // a failed expectation is a failed test

    use std::path::PathBuf;
    use std::sync::Arc;

    use super::{NOTES, Skill, tools};
    use motet::directives::{ToolArgs, ToolCallView};
    use motet::runtime::tool::{ToolContext, ToolError};
    use serde_json::{Value, json};

    /// A folder holding the notes, beside a secret file that a symlink inside points to.
    struct Fixture {
        root: PathBuf,
        folder: Arc<PathBuf>,
    }

    impl Fixture {
        fn new(name: &str) -> Self {
            let root = std::env::temp_dir().join(format!("motet-{name}-{}", std::process::id()));
            let inside = root.join("inside");
            std::fs::create_dir_all(inside.join("notes")).unwrap();
            for (name, code) in NOTES {
                std::fs::write(
                    inside.join("notes").join(name),
                    format!("The code is {code}.\n"),
                )
                .unwrap();
            }
            std::fs::write(root.join("secret.txt"), "SECRET").unwrap();
            let link = inside.join("notes").join("link.txt");
            if !link.exists() {
                std::os::unix::fs::symlink(root.join("secret.txt"), link).unwrap();
            }
            let folder = Arc::new(inside.canonicalize().unwrap());
            Self { root, folder }
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    /// Picks one of `choices` with probability proportional to its weight.
    fn weighted<T: Copy>(rng: &mut fastrand::Rng, choices: &[(u32, T)]) -> T {
        let total: u32 = choices.iter().map(|(w, _)| w).sum();
        let mut at = rng.u32(0..total);
        for &(weight, choice) in choices {
            if at < weight {
                return choice;
            }
            at -= weight;
        }
        choices[choices.len() - 1].1
    }

    /// Up to `max` characters of any kind: ASCII, controls, multi-byte, separators.
    fn any_text(rng: &mut fastrand::Rng, max: usize) -> String {
        let len = rng.usize(0..=max);
        (0..len)
            .map(|_| match rng.u8(0..4) {
                0 => rng.char('\0'..='\u{7f}'),
                1 => ['/', '.', '\\', '%'][rng.usize(0..4)],
                2 => rng.char('\u{80}'..='\u{10ffff}'),
                _ => rng.alphanumeric(),
            })
            .collect()
    }

    fn segment(rng: &mut fastrand::Rng) -> String {
        let fixed = [
            "notes",
            "alpha.txt",
            "notes/alpha.txt",
            "..",
            ".",
            "link.txt",
            "nope.txt",
            "inside",
            "secret.txt",
            "",
            "\0",
            "%2e%2e",
            "~",
        ];
        let weights = [3, 3, 2, 3, 1, 2, 1, 1, 2, 1, 1, 1, 1];
        let mut choices: Vec<(u32, usize)> = weights.iter().copied().zip(0..).collect();
        choices.push((1, fixed.len())); // 300 characters
        choices.push((1, fixed.len() + 1)); // anything
        match weighted(rng, &choices) {
            i if i < fixed.len() => fixed[i].to_owned(),
            i if i == fixed.len() => "x".repeat(300),
            _ => any_text(rng, 12),
        }
    }

    fn path(rng: &mut fastrand::Rng) -> String {
        match weighted(rng, &[(6, 0), (1, 1), (1, 2)]) {
            0 => {
                let rooted = rng.u8(0..10) == 0;
                let parts: Vec<String> = (0..rng.usize(1..4)).map(|_| segment(rng)).collect();
                format!("{}{}", if rooted { "/" } else { "" }, parts.join("/"))
            }
            1 => any_text(rng, 60),
            _ => "../".repeat(rng.usize(0..5_000)),
        }
    }

    fn args(rng: &mut fastrand::Rng) -> String {
        match weighted(rng, &[(8, 0), (1, 1), (1, 2)]) {
            0 => json!({ "path": path(rng) }).to_string(),
            1 => {
                let odd = [
                    Value::Null,
                    json!(1),
                    json!(["notes/alpha.txt"]),
                    json!({"path": null}),
                    json!({"path": 7}),
                    json!({}),
                ];
                odd[rng.usize(0..odd.len())].to_string()
            }
            _ => {
                let d = rng.usize(100..1_000);
                format!(
                    r#"{{"path":{}"notes/alpha.txt"{}}}"#,
                    "[".repeat(d),
                    "]".repeat(d)
                )
            }
        }
    }

    fn read(fixture: &Fixture, raw: &str) -> Result<String, ToolError> {
        let tools = tools(Skill::Read, fixture.folder.clone()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let args = ToolArgs::from_text(raw);
        let call = ToolCallView {
            id: "call_1",
            name: "read_file",
            args: &args,
        };
        runtime.block_on(tools.execute(call, &ToolContext::new("call_1")))
    }

    #[test]
    fn a_note_is_read_and_a_link_out_of_the_folder_is_not() {
        let fixture = Fixture::new("read-file");
        let note = read(&fixture, r#"{"path":"notes/../notes/alpha.txt"}"#);
        assert_eq!(note, Ok("The code is 4471.\n".to_owned()));
        for path in ["notes/link.txt", "../secret.txt", "notes/../../secret.txt"] {
            let answer = read(&fixture, &json!({ "path": path }).to_string());
            assert!(
                matches!(&answer, Err(ToolError::Failed { message }) if message.contains("outside")),
                "{path}: {answer:?}"
            );
        }
    }

    /// 400 arguments drawn from a fixed seed (the same ones every run), each of which reads a
    /// note or fails typed, and never reads outside the folder.
    #[test]
    fn any_arguments_read_a_note_or_fail_typed_and_never_leave_the_folder() {
        let fixture = Fixture::new("read-file-props");
        let mut rng = fastrand::Rng::with_seed(0x0f11e);
        for _ in 0..400 {
            let raw = args(&mut rng);
            let answer = read(&fixture, &raw);
            let shown: String = raw.chars().take(80).collect();
            match answer {
                Ok(content) => assert!(
                    NOTES
                        .iter()
                        .any(|(_, code)| content == format!("The code is {code}.\n")),
                    "{shown} read {content:?}"
                ),
                Err(ToolError::Failed { .. } | ToolError::InvalidArgs { .. }) => {}
                Err(other) => panic!("{shown}: {other:?}"),
            }
        }
    }
}
