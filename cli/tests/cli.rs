//! The `motet` binary driven as a user drives it: real processes, real standard input and
//! output, a temporary store. Tests that need a model run against the local llama.cpp server
//! (`MOTET_LOCAL_LLM_URL`) and print "skipped: ..." without it; the bad-input cases need none.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use common::{CLEARED_VARS, run, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use motet::agents::{EntryBody, FixedEnv, NewEntry, Refs, Thread};
use motet::directives::{
    AssistantBlock, AssistantMessage, StopReason, ToolArgs, ToolResult, Usage,
};
use motet::runtime::store::{SqliteStore, ThreadHeader, ThreadStore};
use tempfile::TempDir;

/// A temporary folder holding the store; commands run in it (so no stray motet.toml is read)
/// with no provider settings from the environment.
struct Sandbox {
    dir: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("motet.db")
    }

    fn motet(&self, args: &[&str]) -> Command {
        let mut command = common::motet_in(self.dir.path());
        command.arg("--db").arg(self.db()).args(args);
        command
    }

    /// Writes `motet.toml` in the folder commands run in.
    fn config(&self, text: &str) {
        std::fs::write(self.dir.path().join("motet.toml"), text).unwrap();
    }

    /// Runs `motet args` with the local server as its model.
    fn with_local(&self, url: &str, args: &[&str]) -> Command {
        let mut command = self.motet(args);
        command.env("MOTET_LOCAL_LLM_URL", url);
        command
    }
}

/// Asserts a failure with `code` whose message contains every one of `needles`.
fn assert_fails(output: &Output, code: i32, needles: &[&str]) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

fn local_llm(test: &str) -> Option<String> {
    let url = std::env::var("MOTET_LOCAL_LLM_URL").ok();
    if url.is_none() {
        common::missing(&format!(
            "{test} needs MOTET_LOCAL_LLM_URL (bash scripts/local-llm.sh start)"
        ));
    }
    url
}

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Writes thread `cli/work` as an agent would have: a question, a calculator call, its
/// result, the answer.
fn store_work_thread(db: &Path) -> Thread {
    tokio().block_on(async {
        let store = SqliteStore::open(db).await.unwrap();
        let env = FixedEnv::new(1_700_000_000_000);
        let refs = Refs::request("req_1");
        let mut thread = Thread::new("cli/work", 1_700_000_000_000);
        thread.append(
            &env,
            NewEntry::user("What is 6 * 7?").with_refs(refs.clone()),
        );
        let call = AssistantMessage {
            blocks: vec![AssistantBlock::tool_use(
                "call_1",
                "calculator",
                ToolArgs::from_text(r#"{"expression": "6 * 7"}"#),
            )],
            stop_reason: StopReason::ToolUse,
        };
        let usage = Usage {
            input_tokens: 12,
            output_tokens: 5,
            ..Usage::default()
        };
        thread.append(
            &env,
            NewEntry::assistant(call, usage).with_refs(refs.clone()),
        );
        thread.append(
            &env,
            NewEntry::tool_result("calculator", ToolResult::ok("call_1", "42"))
                .with_refs(refs.clone()),
        );
        let answer = AssistantMessage {
            blocks: vec![AssistantBlock::text("6 * 7 is 42.")],
            stop_reason: StopReason::EndTurn,
        };
        thread.append(
            &env,
            NewEntry::assistant(answer, Usage::default()).with_refs(refs),
        );
        store
            .create_with(&ThreadHeader::of(&thread), None, thread.to_list())
            .await
            .unwrap();
        thread
    })
}

#[test]
fn threads_list_show_export_delete() {
    let sandbox = Sandbox::new();
    let thread = store_work_thread(&sandbox.db());

    let list = run(sandbox.motet(&["threads", "list"]));
    assert!(list.status.success(), "{}", stderr(&list));
    let table = stdout(&list);
    let row = table
        .lines()
        .find(|l| l.starts_with("work "))
        .unwrap_or_else(|| panic!("no row for work in {table}"));
    assert!(
        row.contains(" 4 ") && row.contains("12 in / 5 out"),
        "{row}"
    );

    // `work` and `cli/work` are the same thread.
    for id in ["work", "cli/work"] {
        let show = run(sandbox.motet(&["threads", "show", id]));
        assert!(show.status.success(), "{}", stderr(&show));
        let text = stdout(&show);
        for needle in [
            "thread cli/work · 4 entries",
            "#0   user: What is 6 * 7?",
            // Valid arguments come back compact (docs/persistence.md, "Byte fidelity").
            r#"#1   assistant calls calculator({"expression":"6 * 7"}) [call_1] (12 in / 5 out)"#,
            "#2   tool calculator [call_1] returned: 42",
            "#3   assistant: 6 * 7 is 42.",
        ] {
            assert!(text.contains(needle), "{needle:?} not in {text}");
        }
    }

    // Each entry as stored, with its time also written as UTC (`at` stays the milliseconds).
    let expected: Vec<serde_json::Value> = thread
        .to_list()
        .iter()
        .map(|e| {
            let mut value = serde_json::to_value(e).unwrap();
            let utc = jiff::Timestamp::from_millisecond(i64::try_from(e.at).unwrap()).unwrap();
            value["at_utc"] = utc.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string().into();
            value
        })
        .collect();
    let jsonl = run(sandbox.motet(&["threads", "export", "work"]));
    assert!(jsonl.status.success(), "{}", stderr(&jsonl));
    let lines: Vec<serde_json::Value> = stdout(&jsonl)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, expected);
    let json = run(sandbox.motet(&["threads", "export", "cli/work", "--format", "json"]));
    assert!(json.status.success(), "{}", stderr(&json));
    let array: Vec<serde_json::Value> = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(array, expected);

    let delete = run(sandbox.motet(&["threads", "delete", "work"]));
    assert!(delete.status.success(), "{}", stderr(&delete));
    assert!(stdout(&delete).contains("deleted thread cli/work"));
    let list = run(sandbox.motet(&["threads", "list"]));
    assert!(stdout(&list).contains("no threads in"), "{}", stdout(&list));
    assert_fails(
        &run(sandbox.motet(&["threads", "delete", "work"])),
        4,
        &["no thread `cli/work`"],
    );
}

/// The thread `id` as stored in `db`.
fn stored(db: &Path, id: &str) -> Thread {
    tokio().block_on(async {
        let store = SqliteStore::open_read_only(db).await.unwrap();
        store.load(id).await.unwrap().unwrap()
    })
}

#[test]
fn threads_fork_copies_a_prefix_into_a_new_thread_that_goes_on_from_it() {
    let sandbox = Sandbox::new();
    store_work_thread(&sandbox.db());
    let source = stored(&sandbox.db(), "cli/work");

    // The first entry only: the id printed alone, a thread of the same agent.
    let fork = run(sandbox.motet(&["threads", "fork", "work", "--at", "0"]));
    assert!(fork.status.success(), "{}", stderr(&fork));
    let id = stdout(&fork).trim().to_owned();
    assert!(id.starts_with("thread_") && !id.contains('/'), "{id}");
    let forked = stored(&sandbox.db(), &format!("cli/{id}"));
    assert_eq!(forked.to_list(), &source.to_list()[..1]);
    let parent = forked.parent().unwrap();
    assert_eq!((parent.thread_id.as_str(), parent.at_seq), ("cli/work", 0));
    let show = run(sandbox.motet(&["threads", "show", &id]));
    assert!(
        stdout(&show).contains(&format!("thread cli/{id} · 1 entries")),
        "{}",
        stdout(&show)
    );

    // Without --at, the whole thread; the store id works as the short one does.
    let whole = run(sandbox.motet(&["threads", "fork", "cli/work"]));
    assert!(whole.status.success(), "{}", stderr(&whole));
    let whole = stdout(&whole).trim().to_owned();
    assert_ne!(whole, id);
    assert_eq!(
        stored(&sandbox.db(), &format!("cli/{whole}")).to_list(),
        source.to_list()
    );

    // An ask on the fork goes on from its prefix; the source is as it was.
    let url = answering_server("6 * 8 is 48.");
    let asked = run(against(
        &sandbox,
        &url,
        &["run", "--thread", &whole, "And 6 * 8?"],
    ));
    assert!(asked.status.success(), "{}", stderr(&asked));
    assert_eq!(
        questions_in(&sandbox.db(), &format!("cli/{whole}")),
        ["What is 6 * 7?", "And 6 * 8?"]
    );
    assert_eq!(
        stored(&sandbox.db(), "cli/work").to_list(),
        source.to_list()
    );

    // A seq past the end is a bad flag; a thread that is not there is named.
    assert_fails(
        &run(sandbox.motet(&["threads", "fork", "work", "--at", "4"])),
        2,
        &["--at: no entry with seq 4 (the thread has 4 entries)"],
    );
    assert_fails(
        &run(sandbox.motet(&["threads", "fork", "nowhere"])),
        4,
        &["no thread `cli/nowhere`"],
    );
}

#[test]
fn a_huge_id_and_a_closed_pipe_do_not_panic() {
    let sandbox = Sandbox::new();
    tokio().block_on(async {
        let store = SqliteStore::open(&sandbox.db()).await.unwrap();
        let env = FixedEnv::new(1_700_000_000_000);
        let huge = format!("cli/{}", "x".repeat(70_000));
        for (id, entries) in [(huge.as_str(), 1), ("cli/big", 20_000)] {
            let mut thread = Thread::new(id, 1_700_000_000_000);
            for k in 0..entries {
                thread.append(&env, NewEntry::user(format!("question {k}")));
            }
            store
                .create_with(&ThreadHeader::of(&thread), None, thread.to_list())
                .await
                .unwrap();
        }
    });
    // An id past 65,535 bytes panicked the table's formatter, for the whole store.
    let list = run(sandbox.motet(&["threads", "list"]));
    assert!(list.status.success(), "{}", stderr(&list));
    let table = stdout(&list);
    assert!(table.lines().any(|l| l.starts_with("big ")), "{table}");
    assert!(table.contains(&"x".repeat(70_000)));

    // `motet threads show big | head -1`: the reader goes away; motet stops quietly.
    let mut show = sandbox.motet(&["threads", "show", "big"]);
    show.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = show.spawn().unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{:?}: {}",
        output.status,
        stderr(&output)
    );
    assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
}

#[test]
fn endless_or_odd_inputs_are_refused_plainly() {
    let sandbox = Sandbox::new();
    // A flag's bad value is the flag's, not a motet.toml that does not exist.
    let mut command = sandbox.motet(&["run", "hi", "--timeout", "0"]);
    command.env("MOTET_LOCAL_LLM_URL", "http://127.0.0.1:9");
    let output = run(command);
    assert_fails(&output, 2, &["--timeout", "must be at least 1"]);
    assert!(
        !stderr(&output).contains("motet.toml"),
        "{}",
        stderr(&output)
    );

    // Files without end are read up to a limit, then refused.
    let started = Instant::now();
    let output = run(sandbox.motet(&["--config", "/dev/zero", "threads", "list"]));
    assert_fails(&output, 3, &["/dev/zero", "more than 1048576 bytes"]);
    let output = run(sandbox.motet(&["transcript", "--dialect", "openai-chat", "/dev/zero"]));
    assert_fails(&output, 1, &["/dev/zero", "more than 268435456 bytes"]);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_question_longer_than_a_command_line_comes_from_standard_input() {
    use std::io::Write;
    let sandbox = Sandbox::new();
    // Past the 128 KiB a single argument may hold on Linux.
    let question = format!("Summarize: {}", "lorem ipsum ".repeat(20_000));
    let mut command = sandbox.motet(&["run", "-", "--model", "openai-compat:m"]);
    // Nothing listens there, and the question is longer than an unknown model's default
    // window: it is committed, then the request fails. What matters is that it arrived whole.
    command
        .env("MOTET_OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:9/v1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(question.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let thread = load(&sandbox.db(), "cli/default").unwrap();
    let Some(EntryBody::User { content }) = thread.to_list().first().map(|e| &e.body) else {
        panic!("the question was not stored");
    };
    assert_eq!(content.text().len(), question.len());
}

#[test]
fn an_unknown_thread_is_named() {
    let sandbox = Sandbox::new();
    store_work_thread(&sandbox.db());
    let db = sandbox.db().display().to_string();
    for args in [
        &["threads", "show", "nope"][..],
        &["threads", "export", "cli/nope"],
        &["threads", "delete", "nope"],
        &["resume", "nope"],
    ] {
        assert_fails(&run(sandbox.motet(args)), 4, &["no thread `cli/nope`", &db]);
    }
}

#[test]
fn a_file_that_is_not_a_motet_store_is_refused() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.db(),
        "these are my notes, not a database\n".repeat(100),
    )
    .unwrap();
    let db = sandbox.db().display().to_string();
    for args in [
        &["threads", "list"][..],
        &["threads", "show", "default"],
        &["run", "hi", "--model", "openai-compat:m"],
    ] {
        let mut command = sandbox.motet(args);
        command.env("MOTET_OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:9/v1");
        assert_fails(&run(command), 4, &[&db, "is not a motet thread store"]);
    }
    // The file is left as it was.
    assert!(
        std::fs::read_to_string(sandbox.db())
            .unwrap()
            .starts_with("these are my notes")
    );
}

#[test]
fn model_choice_errors_say_what_to_do() {
    let sandbox = Sandbox::new();
    assert_fails(
        &run(sandbox.motet(&["run", "hi", "--model", "nocolon"])),
        3,
        &["unknown model `nocolon`", "--model", "provider:model"],
    );
    assert_fails(
        &run(sandbox.motet(&["run", "hi", "--model", "acme:large"])),
        3,
        &["unknown model `acme:large`", "unknown provider `acme`"],
    );
    let mut from_env = sandbox.motet(&["run", "hi"]);
    from_env.env("MOTET_MODEL", "acme:large");
    assert_fails(&run(from_env), 3, &["`acme:large` (from MOTET_MODEL)"]);
    assert_fails(
        &run(sandbox.motet(&["run", "hi", "--model", "anthropic:claude-sonnet-4-5"])),
        3,
        &["anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"],
    );
    assert_fails(
        &run(sandbox.motet(&["run", "hi"])),
        3,
        &[
            "no model configured",
            "bash scripts/local-llm.sh start",
            "MOTET_LOCAL_LLM_URL",
        ],
    );
    // Nothing ran, so nothing was stored.
    let list = run(sandbox.motet(&["threads", "list"]));
    assert!(stdout(&list).contains("no threads"), "{}", stdout(&list));
}

#[test]
fn an_empty_question_is_refused_and_not_stored() {
    let sandbox = Sandbox::new();
    for question in ["", "   \n"] {
        let mut command = sandbox.motet(&["run", question, "--model", "openai-compat:m"]);
        // Nothing listens there: the question must be refused before any call.
        command.env("MOTET_OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:9/v1");
        assert_fails(&run(command), 1, &["the question is empty"]);
    }
    assert!(load(&sandbox.db(), "cli/default").is_none_or(|t| t.entry_count() == 0));
}

#[test]
fn an_unreachable_server_is_named() {
    let sandbox = Sandbox::new();
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let mut command = sandbox.motet(&["run", "hi", "--model", "openai-compat:m"]);
    command.env("MOTET_OPENAI_COMPAT_BASE_URL", &url);
    let started = Instant::now();
    let output = run(command);
    assert_fails(&output, 1, &["cannot reach the model server at", &url]);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(stdout(&output).is_empty());
}

#[test]
fn config_file_errors_name_the_key_and_the_file() {
    let sandbox = Sandbox::new();
    let file = sandbox.dir.path().join("motet.toml");
    let cases = [
        (
            "context = \"huge\"\n",
            "key `context`: unknown preset `huge`",
        ),
        ("tools = [\"shell\"]\n", "key `tools`: unknown tool `shell`"),
        ("model = \"nocolon\"\n", "key `model` of"),
        ("timeout_secs = \"soon\"\n", "timeout_secs"),
        ("max_tokens = 0\n", "key `max_tokens`: must be at least 1"),
        ("modle = \"openai:gpt-5.2\"\n", "unknown field `modle`"),
        (
            "timeout_secs = 0\n",
            "key `timeout_secs`: must be at least 1",
        ),
        (
            "[base_urls]\nopenai-compat = \"127.0.0.1:8089/v1\"\n",
            "key `base_urls.openai-compat`: `127.0.0.1:8089/v1` is not an http:// or https:// URL",
        ),
    ];
    for (text, needle) in cases {
        std::fs::write(&file, text).unwrap();
        // Read from the current folder...
        let mut command = sandbox.motet(&["run", "hi"]);
        command.env("MOTET_LOCAL_LLM_URL", "http://127.0.0.1:9");
        assert_fails(&run(command), 3, &[needle, "motet.toml"]);
    }
    // ... or named with --config, which must exist.
    let missing = sandbox.dir.path().join("elsewhere.toml");
    assert_fails(
        &run(sandbox.motet(&["--config", missing.to_str().unwrap(), "threads", "list"])),
        3,
        &["elsewhere.toml", "cannot read it"],
    );
}

#[test]
fn transcript_prints_the_assembled_response() {
    let sandbox = Sandbox::new();
    let stream = sandbox.dir.path().join("stream.sse");
    std::fs::write(
        &stream,
        concat!(
            "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n",
            "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n"
        ),
    )
    .unwrap();
    let output = run(sandbox.motet(&[
        "transcript",
        "--dialect",
        "openai-chat",
        stream.to_str().unwrap(),
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    let response: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        response["message"]["blocks"][0]["text"], "Hello",
        "{response}"
    );

    std::fs::write(&stream, "data: {not json\n\n").unwrap();
    assert_fails(
        &run(sandbox.motet(&[
            "transcript",
            "--dialect",
            "openai-chat",
            stream.to_str().unwrap(),
        ])),
        1,
        &["the stream was rejected"],
    );
    assert_fails(
        &run(sandbox.motet(&["transcript", "--dialect", "cobol", stream.to_str().unwrap()])),
        2,
        &["cobol"],
    );
}

#[test]
fn run_answers_with_the_local_model() {
    let Some(url) = local_llm("run_answers_with_the_local_model") else {
        return;
    };
    let sandbox = Sandbox::new();
    // The tiny model rambles: short answers keep the test short.
    sandbox.config("max_tokens = 48\n");
    let output = run(sandbox.with_local(&url, &["run", "What is 2 + 3?", "--json"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let reply: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert!(
        !reply["answer"].as_str().unwrap().trim().is_empty(),
        "{reply}"
    );
    assert_eq!(reply["thread"], "default");
    assert_eq!(reply["model"], "openai-compat:local");
    assert!(reply["request_id"].as_str().unwrap().starts_with("req"));
    assert!(reply["iterations"].as_u64().unwrap() >= 1);
    assert!(
        reply["usage"]["input_tokens"].as_u64().unwrap() > 0,
        "{reply}"
    );
    // The file's max_tokens reached the model: at most 48 tokens per LLM call.
    let calls = reply["iterations"].as_u64().unwrap();
    assert!(
        reply["usage"]["output_tokens"].as_u64().unwrap() <= 48 * calls,
        "{reply}"
    );

    // Plain output is the answer alone; `cli/default` continues the same thread.
    let output = run(sandbox.with_local(&url, &["run", "And 4 + 4?", "--thread", "cli/default"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let answer = stdout(&output);
    assert!(!answer.trim().is_empty());
    let show = stdout(&run(sandbox.motet(&["threads", "show", "default"])));
    assert!(show.contains("user: What is 2 + 3?"), "{show}");
    assert!(show.contains("user: And 4 + 4?"), "{show}");
    assert!(show.contains(answer.trim()), "{answer:?} not in {show}");
}

/// The stored thread's entries.
fn load(db: &Path, id: &str) -> Option<Thread> {
    tokio().block_on(async { SqliteStore::open(db).await.unwrap().load(id).await.unwrap() })
}

/// The tool results a stored thread holds: (tool, content).
fn tool_results(db: &Path, id: &str) -> Vec<(String, String)> {
    let thread = load(db, id).unwrap();
    thread
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::ToolResult { name, result } => {
                Some((name.to_string(), result.content.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_forced_tool_choice_makes_the_model_use_the_calculator() {
    let Some(url) = local_llm("a_forced_tool_choice_makes_the_model_use_the_calculator") else {
        return;
    };
    let question = "What is 17 times 23? Use the calculator.";
    // Left to itself the small model answers from memory (and wrongly).
    let sandbox = Sandbox::new();
    sandbox.config("max_tokens = 48\n");
    let output = run(sandbox.with_local(&url, &["run", question, "--json"]));
    assert!(output.status.success(), "{}", stderr(&output));
    println!("auto: {}", stdout(&output).trim());

    // --tool-choice required: the calculator runs, and the model answers after it.
    let output = run(sandbox.with_local(
        &url,
        &[
            "run",
            question,
            "--thread",
            "forced",
            "--tool-choice",
            "required",
            "--json",
        ],
    ));
    assert!(output.status.success(), "{}", stderr(&output));
    let reply: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    println!("required: {reply}");
    assert!(reply["iterations"].as_u64().unwrap() >= 2, "{reply}");
    let results = tool_results(&sandbox.db(), "cli/forced");
    assert!(!results.is_empty(), "no tool result stored");
    assert!(
        results.iter().all(|(name, _)| name == "calculator"),
        "{results:?}"
    );

    // The same from motet.toml, naming the tool.
    sandbox.config("max_tokens = 48\ntool_choice = \"calculator\"\n");
    let output = run(sandbox.with_local(&url, &["run", question, "--thread", "named"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&sandbox.db(), "cli/named");
    assert!(!results.is_empty(), "no tool result stored");

    // A choice that names no enabled tool is refused before any request.
    let output = run(sandbox.with_local(&url, &["run", question, "--tool-choice", "shell"]));
    assert_fails(&output, 2, &["--tool-choice", "`shell`", "calculator"]);
}

#[test]
fn resume_after_a_kill_in_flight() {
    let Some(url) = local_llm("resume_after_a_kill_in_flight") else {
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.config("max_tokens = 64\n");
    let rt = tokio();
    let store = rt.block_on(SqliteStore::open(sandbox.db())).unwrap();
    // A kill lands in flight when it comes after the question is committed and before the
    // answer is; the model takes long enough that the first attempt nearly always does.
    for attempt in 0..5 {
        let thread = format!("t{attempt}");
        let id = format!("cli/{thread}");
        let mut child = sandbox
            .with_local(
                &url,
                &[
                    "run",
                    "Write three sentences about the sea.",
                    "--thread",
                    &thread,
                ],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while rt.block_on(store.summary(&id)).unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let before = load(&sandbox.db(), &id).expect("the question was committed");
        if !matches!(before.last().map(|e| &e.body), Some(EntryBody::User { .. })) {
            continue; // the answer was in before the kill: try again
        }

        let output = run(sandbox.with_local(&url, &["resume", &thread]));
        assert!(output.status.success(), "{}", stderr(&output));
        let text = stdout(&output);
        assert!(
            text.contains("owed: an answer to \"Write three sentences about the sea.\""),
            "{text}"
        );
        assert!(text.contains("done: request req"), "{text}");
        let after = load(&sandbox.db(), &id).unwrap();
        let entries = after.to_list();
        assert_eq!(entries[..before.to_list().len()], *before.to_list());
        let Some(EntryBody::Assistant { message, .. }) = after.last().map(|e| &e.body) else {
            panic!("no answer after resume: {entries:?}");
        };
        let answer: String = message
            .blocks
            .iter()
            .filter_map(|b| match b {
                AssistantBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(text.contains(answer.trim()), "{answer:?} not in {text}");
        // One request, the interrupted one, from question to answer.
        let request = entries[0].refs.request_id.clone();
        assert!(request.is_some());
        assert!(
            entries.iter().all(|e| e.refs.request_id == request),
            "{entries:?}"
        );
        // Nothing more is owed.
        let again = run(sandbox.with_local(&url, &["resume", &thread]));
        assert!(
            stdout(&again).contains("owed: nothing new"),
            "{}",
            stdout(&again)
        );
        return;
    }
    panic!("no kill landed in flight in 5 attempts");
}

/// A pseudo-terminal session. rexpect reads the terminal byte by byte as Latin-1 characters,
/// so what is expected goes in as those characters and what was read comes back as UTF-8.
struct Pty(rexpect::session::PtySession);

impl Pty {
    fn spawn(command: Command) -> Self {
        Self(rexpect::session::spawn_command(command, Some(120_000)).unwrap())
    }

    /// Waits for `needle` and returns what came before it.
    fn expect(&mut self, needle: &str) -> String {
        let latin1: String = needle.bytes().map(char::from).collect();
        let before = self
            .0
            .exp_string(&latin1)
            .unwrap_or_else(|e| panic!("waiting for {needle:?}: {e}"));
        let bytes: Vec<u8> = before.chars().map(|c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[test]
fn chat_streams_answers_and_keeps_the_agent() {
    let Some(url) = local_llm("chat_streams_answers_and_keeps_the_agent") else {
        return;
    };
    let sandbox = Sandbox::new();
    // Long enough for Ctrl-C to land while the story is written, short enough to be quick;
    // the model may answer without its tool (a local model's first call must call one by
    // default).
    sandbox.config("max_tokens = 300\ntool_choice = \"auto\"\n");
    let mut command = sandbox.with_local(&url, &["chat"]);
    command.stdin(Stdio::inherit());
    let mut chat = Pty::spawn(command);
    chat.expect("[cli · thread default · 0 entries · 0 in / 0 out · session 0 in / 0 out · ready]");

    let started = Instant::now();
    chat.0.send_line("Name one colour, in one word.").unwrap();
    let streamed = chat.expect("[cli · thread default · 2 entries · ");
    let status = chat.expect("]");
    assert!(status.contains(" out · ok"), "{status}");
    let first = started.elapsed();

    chat.0.send_line("/threads").unwrap();
    chat.expect("current: default");
    chat.expect("> ");

    // Ctrl-C while an answer is written cancels it and keeps the chat. (rexpect's terminal
    // does not echo, so the first streamed letter says the answer is being written.)
    chat.0
        .send_line("Write a long story about a dragon and a knight, with many chapters.")
        .unwrap();
    chat.0.exp_regex("[A-Za-z]").unwrap();
    let started = Instant::now();
    chat.0.send_control('c').unwrap();
    let cancelled = chat.expect("[cli · thread default · ");
    let status = chat.expect("]");
    let cancel = started.elapsed();
    chat.0.send_line("/quit").unwrap();
    chat.0.exp_eof().unwrap();

    // What streamed is the answer the thread stored.
    let thread = load(&sandbox.db(), "cli/default").unwrap();
    let Some(EntryBody::Assistant { message, .. }) = thread.to_list().get(1).map(|e| &e.body)
    else {
        panic!("no answer stored: {:?}", thread.to_list());
    };
    let AssistantBlock::Text { text, .. } = &message.blocks[0] else {
        panic!("not a text answer: {message:?}");
    };
    let seen = streamed.replace("\r\n", "\n");
    assert!(seen.contains(text.trim()), "{text:?} not in {seen:?}");
    // The interrupted answer ended cancelled, unless the model finished first.
    // The interrupted answer ended cancelled (the story runs for seconds).
    assert!(status.contains("cancelled"), "{cancelled}{status}");
    println!("chat: first answer streamed in {first:?}, ctrl-c answered in {cancel:?}");
}

#[test]
fn telemetry_settings_are_checked_and_logs_stay_off_stdout() {
    let sandbox = Sandbox::new();
    store_work_thread(&sandbox.db());
    let mut bad = sandbox.motet(&["threads", "list"]);
    bad.env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    assert_fails(&run(bad), 3, &["telemetry", "OTEL_EXPORTER_OTLP_PROTOCOL"]);

    // Log lines go to stderr, and only as RUST_LOG asks: stdout stays empty on a failure.
    let mut verbose = sandbox.motet(&["run", "hi", "--model", "openai-compat:m"]);
    verbose
        .env("MOTET_OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:9/v1")
        .env("RUST_LOG", "debug");
    let output = run(verbose);
    assert_fails(&output, 1, &["DEBUG", "cannot reach the model server at"]);
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    let mut quiet = sandbox.motet(&["run", "hi", "--model", "openai-compat:m"]);
    quiet.env("MOTET_OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:9/v1");
    let output = run(quiet);
    assert!(!stderr(&output).contains("DEBUG"), "{}", stderr(&output));
}

/// A server that starts an answer and then says nothing more, holding the connection.
fn stalling_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut buf = [0u8; 65536];
                let _ = stream.read(&mut buf);
                let chunk = r#"{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
                let _ = write!(stream, "{head}data: {chunk}\n\n");
                let _ = stream.flush();
                std::thread::sleep(Duration::from_secs(60));
            });
        }
    });
    url
}

#[test]
fn chat_timeout_holds_while_an_answer_streams() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.motet(&["chat", "--timeout", "2", "--model", "openai-compat:m"]);
    command.env("MOTET_OPENAI_COMPAT_BASE_URL", stalling_server());
    command.stdin(Stdio::inherit());
    let mut chat = Pty::spawn(command);
    chat.expect("[cli · thread default · 0 entries");
    chat.expect("> ");
    let started = Instant::now();
    chat.0.send_line("hello?").unwrap();
    // The first words came; the rest never does. The provider's idle timeout is 60 s: the
    // chat's own 2 s must end it.
    chat.expect("Hel");
    let status = chat.expect("]");
    let waited = started.elapsed();
    assert!(
        status.contains("no answer within 2 s (raise it with --timeout)"),
        "{status}"
    );
    assert!(waited < Duration::from_secs(20), "{waited:?}");
    chat.0.send_line("/quit").unwrap();
    chat.0.exp_eof().unwrap();
}

/// Whether this process runs as root, for whom file permissions do not bind: the folder a
/// test creates is owned by the user that runs it.
fn running_as_root(sandbox: &Sandbox) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(sandbox.dir.path()).unwrap().uid() == 0
}

/// `motet args` as a user the store's permission bits bind: root ignores them, so as root
/// the command runs as `nobody` (uid 65534); anyone else runs it as themselves.
fn as_reader(sandbox: &Sandbox, args: &[&str]) -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = sandbox.motet(args);
    command.env("MOTET_OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:9/v1");
    if running_as_root(sandbox) {
        command.uid(65534).gid(65534);
    }
    command
}

#[test]
fn a_store_the_user_may_only_read_can_be_read_and_not_written() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    store_work_thread(&sandbox.db());
    let mode = |path: &Path, bits: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits)).unwrap();
    };
    mode(&sandbox.db(), 0o444);
    // First neither the file nor its folder may be written (SQLite cannot even make the
    // index a WAL-mode file is read through), then the folder may but the file may not.
    for (folder_mode, why) in [
        (0o555, "may not write its folder"),
        (0o777, "may not write the file"),
    ] {
        mode(sandbox.dir.path(), folder_mode);
        let list = run(as_reader(&sandbox, &["threads", "list"]));
        assert!(list.status.success(), "{}", stderr(&list));
        assert!(stdout(&list).lines().any(|l| l.starts_with("work ")));
        let show = run(as_reader(&sandbox, &["threads", "show", "work"]));
        assert!(show.status.success(), "{}", stderr(&show));
        assert!(stdout(&show).contains("#3   assistant: 6 * 7 is 42."));
        let export = run(as_reader(&sandbox, &["threads", "export", "work"]));
        assert!(export.status.success(), "{}", stderr(&export));

        // Writing is refused before any model is asked, saying why.
        for args in [
            &["run", "hi", "--model", "openai-compat:m"][..],
            &["threads", "delete", "work"],
        ] {
            assert_fails(&run(as_reader(&sandbox, args)), 4, &["is read-only", why]);
        }
    }
    mode(sandbox.dir.path(), 0o755);
    assert_eq!(load(&sandbox.db(), "cli/work").unwrap().entry_count(), 4);
}

#[test]
fn a_missing_store_is_not_created_by_reading_it() {
    let sandbox = Sandbox::new();
    let list = run(sandbox.motet(&["threads", "list"]));
    assert!(list.status.success(), "{}", stderr(&list));
    assert!(stdout(&list).contains("no threads in"), "{}", stdout(&list));
    for args in [
        &["threads", "show", "work"][..],
        &["threads", "export", "work"],
        &["threads", "delete", "work"],
        &["resume", "work"],
    ] {
        assert_fails(&run(sandbox.motet(args)), 4, &["no thread `cli/work`"]);
    }
    assert!(!sandbox.db().exists(), "reading created the store");
}

#[test]
fn a_folder_or_another_programs_database_is_refused_by_name() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.db()).unwrap();
    for args in [
        &["threads", "list"][..],
        &["threads", "show", "work"],
        &["run", "hi", "--model", "openai-compat:m"],
    ] {
        let mut command = sandbox.motet(args);
        command.env("MOTET_OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:9/v1");
        assert_fails(
            &run(command),
            4,
            &["is not a motet thread store: a directory"],
        );
    }
    std::fs::remove_dir(sandbox.db()).unwrap();

    let other = rusqlite::Connection::open(sandbox.db()).unwrap();
    other
        .execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        .unwrap();
    drop(other);
    let before = std::fs::read(sandbox.db()).unwrap();
    for args in [&["threads", "list"][..], &["threads", "delete", "work"]] {
        assert_fails(
            &run(sandbox.motet(args)),
            4,
            &["is not a motet thread store"],
        );
    }
    assert!(std::fs::read(sandbox.db()).unwrap() == before);
}

/// An OpenAI-compatible server on loopback that answers every request with `answer`, streamed
/// in two pieces; its base URL.
fn answering_server(answer: &str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let mut middle = answer.len() / 2;
    while !answer.is_char_boundary(middle) {
        middle -= 1;
    }
    let (first, second) = answer.split_at(middle);
    let chunk = |content: &str, finish: Option<&str>| {
        let delta = serde_json::json!({
            "id": "c", "model": "m",
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
        });
        format!("data: {delta}\n\n")
    };
    let body = format!(
        "{}{}data: [DONE]\n\n",
        chunk(first, None),
        chunk(second, Some("stop"))
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let body = body.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end().to_ascii_lowercase();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(value) = line.strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut request = vec![0; length];
                let _ = reader.read_exact(&mut request);
                let mut stream = reader.into_inner();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    url
}

/// `motet args` with `url` as its model's server.
fn against(sandbox: &Sandbox, url: &str, args: &[&str]) -> Command {
    let mut command = sandbox.motet(args);
    command
        .env("MOTET_MODEL", "openai-compat:m")
        .env("MOTET_OPENAI_COMPAT_BASE_URL", url);
    command
}

#[test]
fn every_id_threads_list_shows_addresses_its_thread() {
    let sandbox = Sandbox::new();
    // The CLI's threads `notes/2024` and `helper/t`, and agent `helper`'s thread `t`: a `/`
    // inside a thread's own id made the first two show as ids that named other threads.
    tokio().block_on(async {
        let store = SqliteStore::open(&sandbox.db()).await.unwrap();
        let env = FixedEnv::new(1_700_000_000_000);
        for id in ["cli/work", "cli/notes/2024", "cli/helper/t", "helper/t"] {
            let mut thread = Thread::new(id, 1_700_000_000_000);
            thread.append(&env, NewEntry::user(format!("question of {id}")));
            store
                .create_with(&ThreadHeader::of(&thread), None, thread.to_list())
                .await
                .unwrap();
        }
    });
    let list = stdout(&run(sandbox.motet(&["threads", "list"])));
    let shown: Vec<&str> = list
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(shown.len(), 4, "{list}");
    let stored = |id: &str| load(&sandbox.db(), id).map_or(0, |t| t.entry_count());

    let server = answering_server("Noted.");
    for id in shown {
        let show = run(sandbox.motet(&["threads", "show", id]));
        assert!(show.status.success(), "{id}: {}", stderr(&show));
        let header = stdout(&show);
        let full = header
            .strip_prefix("thread ")
            .and_then(|h| h.split(' ').next())
            .unwrap()
            .to_owned();
        assert!(
            header.contains(&format!("user: question of {full}")),
            "{header}"
        );

        if full.starts_with("cli/") {
            // The CLI's own thread: `run --thread` and `resume` take the shown id too.
            let output = run(against(
                &sandbox,
                &server,
                &["run", "more", "--thread", id, "--json"],
            ));
            assert!(output.status.success(), "{id}: {}", stderr(&output));
            let reply: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
            assert_eq!(reply["thread"], id, "{reply}");
            // The stored question, then this one and its answer.
            assert_eq!(stored(&full), 3, "{id}: `run` wrote elsewhere");
            let output = run(against(&sandbox, &server, &["resume", id]));
            assert!(output.status.success(), "{id}: {}", stderr(&output));
            assert!(
                stdout(&output).contains("owed: nothing new"),
                "{}",
                stdout(&output)
            );
        } else {
            // Another agent's thread: readable, but the CLI's agent does not run it.
            for args in [&["run", "more", "--thread", id][..], &["resume", id]] {
                assert_fails(
                    &run(against(&sandbox, &server, args)),
                    2,
                    &[&format!("thread id `{id}`"), "names agent `helper`"],
                );
            }
            assert_eq!(stored(&full), 1);
        }
        let delete = run(sandbox.motet(&["threads", "delete", id]));
        assert!(delete.status.success(), "{id}: {}", stderr(&delete));
        assert_eq!(stored(&full), 0, "{id}: `delete` missed it");
    }

    // An id with a `/` is `<agent>/<thread>` everywhere: `notes/2024` is agent `notes`'s, so
    // `run` refuses it instead of filing it under `cli/notes/2024`, where nothing finds it.
    assert_fails(
        &run(against(
            &sandbox,
            &server,
            &["run", "hi", "--thread", "notes/2024"],
        )),
        2,
        &["thread id `notes/2024`", "`cli/notes/2024`"],
    );
    assert_eq!(stored("cli/notes/2024"), 0);
}

/// An answer that tries to write the clipboard (OSC 52), retitle the window (OSC 0), erase the
/// line (CSI, and C1 CSI) and reverse what follows (U+202E), with a newline and a tab that
/// belong to its layout.
const HOSTILE: &str =
    "Sure.\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07 \x1b[2K\u{9b}31m\u{202e}txt.exe\n\tdone";
/// Its first line as a terminal must show it.
const HOSTILE_SHOWN: &str =
    r"Sure.\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]0;pwned\u{7} \u{1b}[2K\u{9b}31m\u{202e}txt.exe";

/// Whether `text` holds a character a terminal would act on rather than show.
fn obeyable(text: &str) -> bool {
    text.chars().any(|c| {
        (c.is_control() && c != '\n' && c != '\r' && c != '\t')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    })
}

/// Runs `command` in a pseudo-terminal to its end; what it printed there.
fn on_terminal(mut command: Command) -> String {
    command.stdin(Stdio::inherit());
    let mut pty = Pty::spawn(command);
    let latin1 = pty.0.exp_eof().unwrap();
    let bytes: Vec<u8> = latin1.chars().map(|c| c as u8).collect();
    String::from_utf8_lossy(&bytes).replace("\r\n", "\n")
}

#[test]
fn model_text_is_escaped_on_a_terminal_and_exact_elsewhere() {
    let sandbox = Sandbox::new();
    let server = answering_server(HOSTILE);

    // Into a pipe or a file: the exact answer, byte for byte.
    let output = run(against(&sandbox, &server, &["run", "hi"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{HOSTILE}\n"));
    // JSON carries it exactly too, with nothing in it a terminal would obey.
    let output = run(against(&sandbox, &server, &["run", "hi", "--json"]));
    let text = stdout(&output);
    assert!(!obeyable(&text), "{text:?}");
    let reply: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["answer"], HOSTILE);
    let export = stdout(&run(sandbox.motet(&["threads", "export", "default"])));
    assert!(!obeyable(&export), "{export:?}");

    // On a terminal: shown, not obeyed; the layout kept.
    let shown = on_terminal(against(&sandbox, &server, &["run", "hi"]));
    assert!(
        shown.contains(&format!("{HOSTILE_SHOWN}\n\tdone")),
        "{shown:?}"
    );
    assert!(!obeyable(&shown), "{shown:?}");
    let shown = on_terminal(sandbox.motet(&["threads", "show", "default"]));
    assert!(shown.contains(HOSTILE_SHOWN), "{shown:?}");
    assert!(!obeyable(&shown), "{shown:?}");
    // `threads show` into a pipe is exact, as `run` is.
    let piped = stdout(&run(sandbox.motet(&["threads", "show", "default"])));
    assert!(piped.contains(HOSTILE), "{piped:?}");

    // --raw asks for the exact text on a terminal too.
    let raw = on_terminal(against(&sandbox, &server, &["--raw", "run", "hi"]));
    assert!(raw.contains("\x1b]52;c;cm0gLXJmIH4="), "{raw:?}");
}

#[test]
fn chat_escapes_a_streamed_answer() {
    let sandbox = Sandbox::new();
    let mut command = against(&sandbox, &answering_server(HOSTILE), &["chat"]);
    command.stdin(Stdio::inherit());
    let mut chat = Pty::spawn(command);
    chat.expect("> ");
    chat.0.send_line("hi").unwrap();
    let streamed = chat.expect("[cli · thread default · 2 entries");
    chat.0.send_line("/quit").unwrap();
    chat.0.exp_eof().unwrap();
    assert!(streamed.contains(HOSTILE_SHOWN), "{streamed:?}");
    assert!(!obeyable(&streamed), "{streamed:?}");
}

#[test]
fn thread_ids_and_errors_are_always_escaped() {
    let sandbox = Sandbox::new();
    let id = "cli/\x1b]0;pwned\x07evil\u{202e}";
    let shown = r"\u{1b}]0;pwned\u{7}evil\u{202e}";
    tokio().block_on(async {
        let store = SqliteStore::open(&sandbox.db()).await.unwrap();
        let mut thread = Thread::new(id, 1_700_000_000_000);
        thread.append(&FixedEnv::new(1_700_000_000_000), NewEntry::user("hello"));
        store
            .create_with(&ThreadHeader::of(&thread), None, thread.to_list())
            .await
            .unwrap();
    });
    // Into a pipe as well: an id is a label, not content.
    let list = stdout(&run(sandbox.motet(&["threads", "list"])));
    assert!(list.contains(shown), "{list:?}");
    assert!(!obeyable(&list), "{list:?}");
    let show = stdout(&run(sandbox.motet(&["threads", "show", id])));
    assert!(show.contains(&format!("thread cli/{shown} ·")), "{show:?}");
    assert!(!obeyable(&show), "{show:?}");

    let output = run(sandbox.motet(&["threads", "show", "\x1b]52;c;eA==\x07"]));
    assert_fails(&output, 4, &[r"no thread `cli/\u{1b}]52;c;eA==\u{7}`"]);
    assert!(!obeyable(&stderr(&output)), "{:?}", stderr(&output));

    let delete = stdout(&run(sandbox.motet(&["threads", "delete", id])));
    assert!(
        delete.contains(&format!("deleted thread cli/{shown}")),
        "{delete:?}"
    );
    assert!(!obeyable(&delete), "{delete:?}");
}

/// A server whose first answer is cut after "Hel"; every later one is whole.
fn cut_once_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        // Calls counted, not connections: the CLI's look at `/props` is not a call.
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let calls = calls.clone();
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut buf = [0u8; 65536];
                let _ = stream.read(&mut buf);
                if buf.starts_with(b"GET ") {
                    let _ = stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                    return;
                }
                let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let chunk = |text: &str, finish: &str| {
                    format!(
                        r#"data: {{"id":"c","model":"m","choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":{finish}}}]}}"#
                    ) + "\n\n"
                };
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                let body = if n == 0 {
                    // The connection closes before the stream's end.
                    chunk("Hel", "null")
                } else {
                    chunk("The answer is 391.", "\"stop\"") + "data: [DONE]\n\n"
                };
                let _ = write!(stream, "{head}{body}");
                let _ = stream.flush();
            });
        }
    });
    url
}

#[test]
fn chat_marks_the_text_of_a_cut_call_discarded_before_its_retry() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.motet(&["chat", "--model", "openai-compat:m"]);
    command.env("MOTET_OPENAI_COMPAT_BASE_URL", cut_once_server());
    command.stdin(Stdio::inherit());
    let mut chat = Pty::spawn(command);
    chat.expect("> ");
    chat.0.send_line("what is 17 * 23?").unwrap();
    // The cut call's words, then the mark, then the retry's whole answer.
    chat.expect("Hel");
    chat.expect("[cut off: the text above is discarded]");
    chat.expect("The answer is 391.");
    let status = chat.expect("]");
    assert!(status.contains("ok"), "{status}");
    // Two calls reached the server: the answered one and the one cut off before it.
    assert!(
        status.contains("1 LLM call(s) · 1 cut off and retried"),
        "{status}"
    );
    chat.0.send_line("/quit").unwrap();
    chat.0.exp_eof().unwrap();
}

/// The user questions thread `id` holds, read without taking any lock.
fn questions_in(db: &Path, id: &str) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let Ok(store) = SqliteStore::open_read_only(db).await else {
            return Vec::new();
        };
        let Ok(Some(thread)) = store.load(id).await else {
            return Vec::new();
        };
        thread
            .to_list()
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::User { content } => Some(content.to_string()),
                _ => None,
            })
            .collect()
    })
}

#[test]
fn a_second_process_asking_on_a_busy_thread_is_refused_before_it_writes() {
    let sandbox = Sandbox::new();
    let url = stalling_server();
    let mut first = sandbox.motet(&[
        "run",
        "--model",
        "openai-compat:m",
        "--thread",
        "t1",
        "--timeout",
        "60",
        "first question",
    ]);
    first.env("MOTET_OPENAI_COMPAT_BASE_URL", &url);
    first.stdout(Stdio::null()).stderr(Stdio::null());
    let mut first = first.spawn().unwrap();
    // The first process has committed its question and waits for the model.
    let started = Instant::now();
    while questions_in(&sandbox.db(), "cli/t1").is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the first run never asked"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut second = sandbox.motet(&[
        "run",
        "--model",
        "openai-compat:m",
        "--thread",
        "t1",
        "--timeout",
        "5",
        "second question",
    ]);
    second.env("MOTET_OPENAI_COMPAT_BASE_URL", &url);
    let output = run(second);
    assert_fails(&output, 4, &["thread `cli/t1` is busy"]);
    assert_eq!(questions_in(&sandbox.db(), "cli/t1"), ["first question"]);
    // Other threads are free meanwhile, and the lock dies with its process.
    assert!(motet_cli::db::Db::file(sandbox.db()).lock("cli/t2").is_ok());
    assert!(
        motet_cli::db::Db::file(sandbox.db())
            .lock("cli/t1")
            .is_err()
    );
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(motet_cli::db::Db::file(sandbox.db()).lock("cli/t1").is_ok());
}

/// The call id `motet pending` shows on its first line.
fn pending_call(sandbox: &Sandbox) -> Option<String> {
    let output = run(sandbox.motet(&["pending"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let (_, rest) = text.lines().next()?.split_once(" · call ")?;
    Some(rest.split_whitespace().next()?.to_owned())
}

#[test]
fn a_call_needing_approval_waits_across_processes_for_approve_or_reject() {
    let Some(url) =
        local_llm("a_call_needing_approval_waits_across_processes_for_approve_or_reject")
    else {
        return;
    };
    let question = "What is 17 times 23? Use the calculator.";
    let sandbox = Sandbox::new();
    sandbox.config("max_tokens = 48\ntool_choice = \"calculator\"\napprove = [\"calculator\"]\n");
    for (thread, verb) in [("yes", "approve"), ("no", "reject")] {
        // The run stops at the call, leaving the request stored as it is.
        let output = run(sandbox.with_local(&url, &["run", question, "--thread", thread]));
        assert!(output.status.success(), "{}", stderr(&output));
        let text = stdout(&output);
        assert!(text.contains("calculator {\"expression\":"), "{text}");
        assert!(text.contains("waits for approval"), "{text}");
        assert!(tool_results(&sandbox.db(), &format!("cli/{thread}")).is_empty());
        // Another process lists it, and answers it.
        let call = pending_call(&sandbox).expect("nothing pending");
        let output = run(sandbox.with_local(&url, &[verb, &call]));
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(!stdout(&output).trim().is_empty(), "no answer printed");
        let results = tool_results(&sandbox.db(), &format!("cli/{thread}"));
        assert_eq!(results.len(), 1, "{results:?}");
        if verb == "approve" {
            assert_eq!(results[0].1, "391", "{results:?}");
        } else {
            assert!(results[0].1.contains("rejected"), "{results:?}");
        }
        // Answered: nothing waits, and answering again says so.
        assert!(pending_call(&sandbox).is_none());
        let again = run(sandbox.with_local(&url, &[verb, &call]));
        assert_fails(&again, 1, &["no tool call", &call]);
    }
    // A tool the agent does not have cannot be gated.
    let output = run(sandbox.with_local(&url, &["run", question, "--approve", "shell"]));
    assert_fails(&output, 2, &["--approve", "`shell`"]);
}

#[test]
fn chat_asks_before_a_gated_call_and_takes_y_and_n() {
    let Some(url) = local_llm("chat_asks_before_a_gated_call_and_takes_y_and_n") else {
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.config("max_tokens = 48\n");
    let mut command = sandbox.with_local(
        &url,
        &[
            "chat",
            "--tool-choice",
            "calculator",
            "--approve",
            "calculator",
        ],
    );
    command.stdin(Stdio::inherit());
    let mut chat = Pty::spawn(command);
    chat.expect("ready]");
    chat.0
        .send_line("What is 17 times 23? Use the calculator.")
        .unwrap();
    chat.expect("`calculator` {\"expression\":");
    chat.expect("approve? [y/N/edit] ");
    chat.0.send_line("y").unwrap();
    chat.expect("(approved)");
    let status = chat.expect("]");
    assert!(status.contains("ok"), "{status}");

    chat.0
        .send_line("What is 6 times 7? Use the calculator.")
        .unwrap();
    chat.expect("approve? [y/N/edit] ");
    chat.0.send_line("n").unwrap();
    chat.expect("(rejected)");
    chat.expect("]");
    chat.0.send_line("/quit").unwrap();
    chat.0.exp_eof().unwrap();

    let results = tool_results(&sandbox.db(), "cli/default");
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].1, "391", "{results:?}");
    assert!(results[1].1.contains("said no"), "{results:?}");
}

/// Damages thread `id`'s row in the SQLite file at `db` as a bad disk or another program
/// could: a revision no store writes (the way runtime/tests damage rows on purpose).
fn damage_row(db: &Path, id: &str) {
    let raw = rusqlite::Connection::open(db).unwrap();
    let changed = raw
        .execute("UPDATE threads SET rev = -1 WHERE id = ?1", [id])
        .unwrap();
    assert_eq!(changed, 1, "no thread {id} to damage");
}

#[test]
fn threads_list_goes_on_past_a_damaged_thread_and_names_it() {
    let sandbox = Sandbox::new();
    store_work_thread(&sandbox.db());
    let url = answering_server("fine");
    let ok = run(against(
        &sandbox,
        &url,
        &["run", "hello", "--thread", "broken"],
    ));
    assert!(ok.status.success(), "{}", stderr(&ok));
    damage_row(&sandbox.db(), "cli/broken");

    let list = run(sandbox.motet(&["threads", "list"]));
    let (out, err) = (stdout(&list), stderr(&list));
    // The readable thread is listed, the damaged one named on stderr with what is wrong.
    assert!(out.lines().any(|l| l.starts_with("work ")), "{out}");
    assert!(!out.contains("broken"), "{out}");
    assert!(
        err.contains("thread `cli/broken` cannot be read") && err.contains("rev"),
        "{err}"
    );
    assert!(err.contains("1 thread could not be read"), "{err}");
    assert_eq!(list.status.code(), Some(4), "{err}");
    // Loading it still fails closed: never shown as an empty thread.
    assert_fails(
        &run(sandbox.motet(&["threads", "show", "broken"])),
        4,
        &["cli/broken"],
    );
}

#[test]
fn run_on_a_damaged_thread_is_a_store_error() {
    let sandbox = Sandbox::new();
    let url = answering_server("fine");
    for thread in ["default", "broken"] {
        let ok = run(against(
            &sandbox,
            &url,
            &["run", "hello", "--thread", thread],
        ));
        assert!(ok.status.success(), "{}", stderr(&ok));
    }
    for thread in ["default", "broken"] {
        damage_row(&sandbox.db(), &format!("cli/{thread}"));
    }
    for args in [
        &["run", "again"][..],
        &["run", "again", "--thread", "broken"][..],
    ] {
        let output = run(against(&sandbox, &url, args));
        assert_fails(&output, 4, &["thread store", "rev"]);
        let err = stderr(&output);
        assert!(!err.to_lowercase().contains("actor"), "{err}");
    }
}

#[test]
fn reading_with_no_store_creates_nothing_even_where_nothing_can_be_made() {
    let dir = tempfile::tempdir().unwrap();
    let motet = |home: &Path, args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_motet"));
        for var in CLEARED_VARS {
            command.env_remove(var);
        }
        // Set, and empty: no local server is looked for on this machine's usual ports.
        command.env("MOTET_LOCAL_LLM_URL", "");
        command
            .env("HOME", home)
            .current_dir(dir.path())
            .args(args)
            .stdin(Stdio::null());
        run(command)
    };
    // A home where nothing can be created (below a file: even root cannot make a folder).
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let blocked = file.join("home");
    let writable = dir.path().join("home");
    std::fs::create_dir(&writable).unwrap();
    for home in [&blocked, &writable] {
        let list = motet(home, &["threads", "list"]);
        assert!(list.status.success(), "{}", stderr(&list));
        assert!(stdout(&list).contains("no threads in"), "{}", stdout(&list));
        let pending = motet(home, &["pending"]);
        assert!(pending.status.success(), "{}", stderr(&pending));
        assert_fails(&motet(home, &["threads", "show", "x"]), 4, &["no thread"]);
    }
    // Reading made nothing, not even the data folder.
    assert!(!writable.join(".local").exists());
}

#[test]
fn token_counts_past_32_bits_are_shown_and_stored_exactly() {
    let sandbox = Sandbox::new();
    tokio().block_on(async {
        let store = SqliteStore::open(sandbox.db()).await.unwrap();
        let env = FixedEnv::new(1_700_000_000_000);
        let mut thread = Thread::new("cli/big", 1_700_000_000_000);
        thread.append(&env, NewEntry::user("hi"));
        let answer = AssistantMessage {
            blocks: vec![AssistantBlock::text("hello")],
            stop_reason: StopReason::EndTurn,
        };
        let usage = Usage {
            input_tokens: u64::MAX,
            output_tokens: 5,
            cache_read_tokens: u64::MAX,
            ..Usage::default()
        };
        thread.append(&env, NewEntry::assistant(answer, usage));
        store
            .create_with(&ThreadHeader::of(&thread), None, thread.to_list())
            .await
            .unwrap();
    });
    let max = u64::MAX.to_string();
    let export = run(sandbox.motet(&["threads", "export", "big"]));
    let text = stdout(&export);
    assert!(
        text.contains(&format!("\"cache_read_tokens\":{max}")),
        "{text}"
    );
    assert!(text.contains(&format!("\"input_tokens\":{max}")), "{text}");
    assert!(!text.contains(&u32::MAX.to_string()), "{text}");
    let show = stdout(&run(sandbox.motet(&["threads", "show", "big"])));
    assert!(show.contains(&format!("({max} in / 5 out)")), "{show}");
    let list = stdout(&run(sandbox.motet(&["threads", "list"])));
    assert!(list.contains(&format!("{max} in / 5 out")), "{list}");
}

#[test]
fn run_sends_an_image_and_a_file_with_the_question_and_refuses_what_it_cannot_name() {
    let sandbox = Sandbox::new();
    let png = sandbox.dir.path().join("square.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    let pdf = sandbox.dir.path().join("report");
    std::fs::write(&pdf, b"%PDF-1.4\n").unwrap();
    let url = answering_server("Red.");
    let png_arg = png.to_str().unwrap();
    let pdf_arg = pdf.to_str().unwrap();
    let output = run(against(
        &sandbox,
        &url,
        &["run", "--image", png_arg, "--file", pdf_arg, "What colour?"],
    ));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "Red.");
    let thread = load(&sandbox.db(), "cli/default").unwrap();
    let Some(EntryBody::User { content }) = thread.to_list().first().map(|e| &e.body) else {
        panic!("the question was not stored");
    };
    assert_eq!(content.text(), "What colour?");
    let kinds: Vec<_> = content
        .media()
        .map(|part| {
            let media_type = part.source().and_then(|s| s.media_type()).unwrap_or("");
            (part.kind().as_str(), media_type.to_owned())
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("image", "image/png".to_owned()),
            ("document", "application/pdf".to_owned())
        ]
    );

    // A file whose type cannot be told, and a PDF given as an image, fail before any request.
    let odd = sandbox.dir.path().join("data.bin");
    std::fs::write(&odd, b"\0\x01\x02").unwrap();
    let output = run(against(
        &sandbox,
        &url,
        &["run", "--file", odd.to_str().unwrap(), "?"],
    ));
    assert_fails(&output, 2, &["--file", "cannot tell what"]);
    let output = run(against(&sandbox, &url, &["run", "--image", pdf_arg, "?"]));
    assert_fails(&output, 2, &["--image", "not an image"]);
}

/// Writes three priced calls and an unpriced one into the usage ledger of the store at `db`.
fn store_usage(db: &Path) {
    use motet::providers::{CallKind, Cost};
    use motet::runtime::store::UsageRecord;
    tokio().block_on(async {
        let store = SqliteStore::open(db).await.unwrap();
        let day = 86_400_000;
        let call = |at: u64, agent: &str, model: &str, kind, cost: Option<u64>| UsageRecord {
            at,
            agent: agent.to_owned(),
            thread: "default".to_owned(),
            request: Some(format!("req_{at}")),
            tenant: (agent == "writer").then(|| "acme".to_owned()),
            model: model.to_owned(),
            kind,
            usage: Usage {
                input_tokens: 1_000,
                output_tokens: 100,
                cache_read_tokens: 250,
                ..Usage::default()
            },
            cost: cost.map(Cost::from_picodollars),
        };
        for record in [
            call(
                1_795_000_000_000,
                "writer",
                "openai:gpt-5.2",
                CallKind::Turn,
                Some(2_000_000_000),
            ),
            call(
                1_795_000_000_001,
                "writer",
                "openai:gpt-5.2",
                CallKind::Summary,
                Some(500_000_000),
            ),
            call(
                1_795_000_000_000 + day,
                "critic",
                "anthropic:claude-haiku-4-5",
                CallKind::Turn,
                Some(10_000_000_000),
            ),
            call(
                1_795_000_000_000 + day,
                "critic",
                "openai-compat:mystery",
                CallKind::Turn,
                None,
            ),
        ] {
            store.record_usage(&record).await.unwrap();
        }
    });
}

#[test]
fn usage_totals_the_ledger_by_agent_model_day_and_tenant() {
    let sandbox = Sandbox::new();
    // No store yet: nothing recorded, and nothing is created to say so.
    let empty = run(sandbox.motet(&["usage"]));
    assert!(empty.status.success(), "{}", stderr(&empty));
    assert!(stdout(&empty).contains("no LLM calls recorded"));
    assert!(!sandbox.db().exists());

    store_usage(&sandbox.db());
    let by_agent = run(sandbox.motet(&["usage"]));
    assert!(by_agent.status.success(), "{}", stderr(&by_agent));
    let text = stdout(&by_agent);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("AGENT"), "{text}");
    assert!(
        lines[1].starts_with("critic") && lines[1].contains("$0.01"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("writer") && lines[2].contains("$0.002500"),
        "{text}"
    );
    assert!(
        lines[3].starts_with("TOTAL") && lines[3].contains("25.0%"),
        "{text}"
    );
    assert!(text.contains("unpriced calls: 1"), "{text}");

    let by_model = stdout(&run(sandbox.motet(&["usage", "--by", "model"])));
    assert!(
        by_model.contains("anthropic:claude-haiku-4-5"),
        "{by_model}"
    );
    assert!(by_model.contains("openai-compat:mystery"), "{by_model}");

    let by_day = stdout(&run(sandbox.motet(&[
        "usage",
        "--by",
        "day",
        "--since",
        "2026-11-20",
    ])));
    assert!(!by_day.contains("2026-11-18"), "{by_day}");
    let json = stdout(&run(sandbox.motet(&[
        "usage",
        "--by",
        "tenant",
        "--json",
        "--since",
        "2026-11-18T00:00:00Z",
    ])));
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["by"], "tenant");
    assert_eq!(value["total"]["calls"], 4);
    assert_eq!(value["groups"][1]["key"], "acme");
    assert_eq!(value["groups"][1]["summary_calls"], 1);
    assert_eq!(value["groups"][1]["cost_picodollars"], 2_500_000_000u64);

    assert_fails(
        &run(sandbox.motet(&["usage", "--since", "last week"])),
        2,
        &["--since", "neither a UTC day"],
    );
}

#[test]
fn prices_and_budgets_in_the_config_file_are_checked() {
    let sandbox = Sandbox::new();
    let cases = [
        (
            "[prices.\"nomodel\"]\ninput = 1.0\noutput = 2.0\n",
            "key `prices.\"nomodel\"`: name a model as `provider:model`",
        ),
        (
            "[prices.\"openai:gpt-5.2\"]\ninput = -1.0\noutput = 2.0\n",
            "key `prices.\"openai:gpt-5.2\".input`: must be a price",
        ),
        (
            "[prices.\"openai:gpt-5.2\"]\ninput = 1.0\n",
            "missing field `output`",
        ),
        (
            "[budget.request]\n",
            "key `budget.request`: give `tokens`, `usd`, `soft_tokens` or `soft_usd`",
        ),
        ("[budget.request]\nusd = -2\n", "key `budget.request.usd`"),
        (
            "[budget.thread]\nsoft_usd = 0\n",
            "key `budget.thread.soft_usd`: must be an amount in dollars, more than 0",
        ),
        (
            "[budget.agent]\ntokens = 10\nsoft_tokens = 0\n",
            "key `budget.agent.soft_tokens`",
        ),
        ("[budget.week]\ntokens = 1\n", "unknown field `week`"),
    ];
    for (text, needle) in cases {
        sandbox.config(text);
        assert_fails(
            &run(sandbox.with_local("http://127.0.0.1:9", &["run", "hi"])),
            3,
            &[needle, "motet.toml"],
        );
    }
}

/// Threads of three agents — two threads of the virtual agent `room:a`, one of `room:b`, one of
/// the named agent `plain` — stored with the keys the runtime writes.
fn store_agents(db: &Path) {
    tokio().block_on(async {
        let store = SqliteStore::open(db).await.unwrap();
        for (at, agent, thread) in [
            (1_000, "room:a", "default"),
            (3_000, "room:a", "side"),
            (2_000, "room:b", "default"),
            (4_000, "plain", "default"),
        ] {
            let key = motet::runtime::store::ThreadKey::new(agent, thread);
            let mut stored = Thread::new(key.store_id(), at);
            stored.append(&FixedEnv::new(at), NewEntry::user("hello"));
            let meta = motet::runtime::store::ThreadMeta {
                key: Some(key),
                ..Default::default()
            };
            store
                .create_with(&ThreadHeader::of(&stored), Some(&meta), stored.to_list())
                .await
                .unwrap();
        }
    });
}

#[test]
fn agents_list_reads_the_directory_from_the_store() {
    let sandbox = Sandbox::new();
    store_agents(&sandbox.db());

    let rooms = run(sandbox.motet(&["agents", "list", "--kind", "room"]));
    assert!(rooms.status.success(), "{}", stderr(&rooms));
    let text = stdout(&rooms);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("room:a · 2 threads · created "),
        "{lines:?}"
    );
    assert!(lines[1].starts_with("room:b · 1 thread · "), "{lines:?}");

    let count = run(sandbox.motet(&["agents", "list", "--count"]));
    assert_eq!(stdout(&count).trim(), "3", "{}", stderr(&count));

    let json = run(sandbox.motet(&["agents", "list", "--json"]));
    let all: Vec<serde_json::Value> = stdout(&json)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = all.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["plain", "room:a", "room:b"]);
    assert_eq!(all[1]["kind"], "room");
    assert_eq!(all[1]["key"], "a");
    assert_eq!(all[1]["threads"], 2);
    assert!(all[0]["kind"].is_null());

    let none = run(sandbox.motet(&["agents", "list", "--kind", "nobody"]));
    assert!(stdout(&none).contains("no agents in"), "{}", stdout(&none));
}
