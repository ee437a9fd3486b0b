//! `motet approve`, `reject` and `answer` across processes, against a scripted
//! OpenAI-compatible server on loopback that calls the calculator with the same call id in
//! every thread (as Gemini and local models do): only the chosen call's request is carried on,
//! an id waiting on two threads is refused until `--thread` names one, and a request with two
//! gated calls says what still waits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{run, stderr, stdout};
use motet::agents::{EntryBody, Thread};
use motet::runtime::store::{SqliteStore, ThreadStore};
use tempfile::TempDir;

/// What the scripted server saw.
#[derive(Default)]
struct Seen {
    /// The last user message of each request.
    questions: Mutex<Vec<String>>,
    /// Each chat request's `max_tokens`, `tool_choice` and `parallel_tool_calls`.
    asked_with: Mutex<Vec<(serde_json::Value, serde_json::Value, serde_json::Value)>>,
    stalled: AtomicUsize,
}

/// The per-slot context the scripted server reports at `GET /props`, as llama.cpp does.
const SLOT_CONTEXT: u64 = 1_024;

/// A scripted model: a user message whose text starts with `stall` is left unanswered the
/// first time (the connection held open); a user message asks for `calls` calculator calls
/// (ids `call_1`, `call_2`, ...); tool results get the answer `done: <the last result>`.
fn scripted_server(calls: usize) -> (String, Arc<Seen>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let shared = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let seen = shared.clone();
            std::thread::spawn(move || serve(stream, calls, &seen));
        }
    });
    (url, seen)
}

fn serve(stream: std::net::TcpStream, calls: usize, seen: &Seen) {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    let mut props = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end().to_ascii_lowercase();
        if line.is_empty() {
            break;
        }
        props |= line.starts_with("get /props ");
        if let Some(value) = line.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    if props {
        let body = serde_json::json!({
            "default_generation_settings": {"n_ctx": SLOT_CONTEXT}, "total_slots": 2,
        })
        .to_string();
        let _ = write!(
            reader.into_inner(),
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    seen.asked_with.lock().unwrap().push((
        request["max_tokens"].clone(),
        request["tool_choice"].clone(),
        request["parallel_tool_calls"].clone(),
    ));
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or_default();
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk = serde_json::json!({
            "id": "c", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {chunk}\n\n")
    };
    let events = if last["role"] == "tool" {
        let result = last["content"].as_str().unwrap_or_default().to_owned();
        chunk(
            serde_json::json!({"role": "assistant", "content": format!("done: {result}")}),
            Some("stop"),
        )
    } else {
        let question = last["content"].as_str().unwrap_or_default().to_owned();
        seen.questions.lock().unwrap().push(question.clone());
        if question.starts_with("stall") && seen.stalled.fetch_add(1, Ordering::SeqCst) == 0 {
            // Held open until the process asking is killed.
            std::thread::sleep(Duration::from_secs(120));
            return;
        }
        let tool_calls: Vec<serde_json::Value> = (0..calls)
            .map(|i| {
                serde_json::json!({
                    "index": i, "id": format!("call_{}", i + 1), "type": "function",
                    "function": {"name": "calculator",
                                 "arguments": format!("{{\"expression\": \"6 * {}\"}}", 7 + i)},
                })
            })
            .collect();
        chunk(
            serde_json::json!({"role": "assistant", "tool_calls": tool_calls}),
            Some("tool_calls"),
        )
    };
    let body = format!("{events}data: [DONE]\n\n");
    let mut stream = reader.into_inner();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A store folder whose `motet` runs against the scripted server, every calculator call gated.
struct Sandbox {
    dir: TempDir,
    url: String,
}

impl Sandbox {
    fn new(url: String) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("motet.toml"),
            "approve = [\"calculator\"]\ntimeout_secs = 30\n",
        )
        .unwrap();
        Self { dir, url }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("motet.db")
    }

    fn motet(&self, args: &[&str]) -> Command {
        let mut command = common::motet_in(self.dir.path());
        command
            .env("MOTET_MODEL", "openai-compat:m")
            .env("MOTET_OPENAI_COMPAT_BASE_URL", &self.url)
            .arg("--db")
            .arg(self.db())
            .args(args);
        command
    }

    fn ok(&self, args: &[&str]) -> String {
        let output = run(self.motet(args));
        assert!(
            output.status.success(),
            "motet {args:?}: {}{}",
            stdout(&output),
            stderr(&output)
        );
        stdout(&output)
    }
}

fn load(db: &Path, id: &str) -> Thread {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let store = SqliteStore::open(db).await.unwrap();
            store.load(id).await.unwrap().expect("no such thread")
        })
}

fn results(db: &Path, id: &str) -> Vec<String> {
    load(db, id)
        .to_list()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::ToolResult { result, .. } => Some(result.content.clone()),
            _ => None,
        })
        .collect()
}

fn assert_fails(output: &Output, code: i32, needles: &[&str]) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
}

#[test]
fn approving_one_call_carries_on_its_request_only_and_a_shared_id_needs_a_thread() {
    let (url, seen) = scripted_server(1);
    let sandbox = Sandbox::new(url);
    // Two threads wait with the same call id.
    for thread in ["a", "c"] {
        let text = sandbox.ok(&["run", "What is 6 times 7?", "--thread", thread]);
        assert!(text.contains("waits for approval"), "{text}");
        assert!(
            text.contains(&format!("motet approve call_1 --thread {thread}")),
            "{text}"
        );
    }
    // A third thread's process dies in the middle of its request (SIGKILL).
    let mut killed = sandbox.motet(&["run", "stall: what is 1 + 1?", "--thread", "b"]);
    killed.stdout(Stdio::null()).stderr(Stdio::null());
    let mut killed = killed.spawn().unwrap();
    let started = Instant::now();
    while seen.stalled.load(Ordering::SeqCst) == 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "b never asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    let b_before = load(&sandbox.db(), "cli/b").to_list().len();

    // The id is ambiguous: refused, naming both threads, nothing answered.
    let output = run(sandbox.motet(&["approve", "call_1"]));
    assert_fails(
        &output,
        2,
        &["call `call_1` waits on 2 threads", "a, c", "--thread"],
    );
    assert!(results(&sandbox.db(), "cli/a").is_empty());
    assert!(results(&sandbox.db(), "cli/c").is_empty());

    // Named: that call only, and its answer printed.
    let text = sandbox.ok(&["approve", "call_1", "--thread", "a"]);
    assert!(text.contains("done: 42"), "{text}");
    assert_eq!(results(&sandbox.db(), "cli/a"), ["42"]);
    assert!(results(&sandbox.db(), "cli/c").is_empty());
    // The killed thread was not touched: no second LLM call for it, no entry added.
    let stalls = seen
        .questions
        .lock()
        .unwrap()
        .iter()
        .filter(|q| q.starts_with("stall"))
        .count();
    assert_eq!(stalls, 1, "{:?}", seen.questions.lock().unwrap());
    assert_eq!(load(&sandbox.db(), "cli/b").to_list().len(), b_before);

    // One left: the id is unique again.
    let pending = sandbox.ok(&["pending"]);
    assert_eq!(pending.lines().count(), 1, "{pending}");
    assert!(pending.contains("thread c"), "{pending}");
    let text = sandbox.ok(&["reject", "call_1", "--reason", "no"]);
    assert!(text.contains("not run: a person rejected"), "{text}");
    // A thread that is not waiting is named in the refusal.
    let output = run(sandbox.motet(&["approve", "call_1", "--thread", "a"]));
    assert_fails(&output, 1, &["no tool call `call_1` waits", "on thread a"]);
}

#[test]
fn two_gated_calls_are_both_listed_and_answering_one_says_what_still_waits() {
    let (url, _) = scripted_server(2);
    let sandbox = Sandbox::new(url);
    let text = sandbox.ok(&["run", "What is 6 times 7 and 6 times 8?", "--thread", "t"]);
    assert!(text.contains("1 of 2") && text.contains("2 of 2"), "{text}");
    assert!(
        text.contains("call call_1") && text.contains("call call_2"),
        "{text}"
    );

    // The first approval returns at once: its call ran, the other still waits.
    let started = Instant::now();
    let text = sandbox.ok(&["approve", "call_1"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "approve waited"
    );
    assert!(text.contains("still waits"), "{text}");
    assert!(text.contains("call call_2"), "{text}");
    assert!(!text.contains("call call_1 ·"), "{text}");
    assert_eq!(results(&sandbox.db(), "cli/t"), ["42"]);

    // A resume or a new question on the thread says what waits and how to go on.
    let text = sandbox.ok(&["resume", "t"]);
    assert!(text.contains("motet approve call_2 --thread t"), "{text}");
    let output = run(sandbox.motet(&["run", "another question", "--thread", "t"]));
    assert_fails(
        &output,
        1,
        &[
            "thread `t` waits for a person",
            "motet approve call_2 --thread t",
        ],
    );

    // The second: the request goes on to its answer.
    let text = sandbox.ok(&["approve", "call_2"]);
    assert!(text.contains("done: 48"), "{text}");
    assert_eq!(results(&sandbox.db(), "cli/t"), ["42", "48"]);
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
fn pending_goes_on_past_a_damaged_thread_and_names_it() {
    let (url, _) = scripted_server(1);
    let sandbox = Sandbox::new(url);
    sandbox.ok(&["run", "What is 6 times 7?", "--thread", "waits"]);
    sandbox.ok(&["run", "What is 6 times 7?", "--thread", "broken"]);
    damage_row(&sandbox.db(), "cli/broken");

    let output = run(sandbox.motet(&["pending"]));
    let (out, err) = (stdout(&output), stderr(&output));
    // What waits on the readable thread is listed whole.
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.contains("thread waits") && out.contains("call call_1"),
        "{out}"
    );
    // The damaged one is named, with what is wrong, and the status says the store is damaged.
    assert!(
        err.contains("thread `cli/broken`") && err.contains("rev"),
        "{err}"
    );
    assert!(err.contains("1 thread could not be read"), "{err}");
    assert_eq!(output.status.code(), Some(4), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // A call that waits elsewhere is answered all the same; one not found names the thread
    // that could not be read, since it may wait there.
    let output = run(sandbox.motet(&["approve", "call_9"]));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cli/broken") && err.contains("could not be read"),
        "{err}"
    );
    let text = sandbox.ok(&["approve", "call_1"]);
    assert!(text.contains("done: 42"), "{text}");
}

#[test]
fn chat_asks_again_when_edited_arguments_are_not_json() {
    let (url, _) = scripted_server(1);
    let sandbox = Sandbox::new(url);
    let mut command = sandbox.motet(&["chat"]);
    command.stdin(Stdio::inherit());
    let mut chat = rexpect::session::spawn_command(command, Some(60_000)).unwrap();
    chat.exp_string("ready]").unwrap();
    chat.send_line("What is 6 times 7?").unwrap();
    chat.exp_string("approve? [y/N/edit] ").unwrap();
    chat.send_line("edit").unwrap();
    chat.exp_string("arguments (a JSON object): ").unwrap();
    chat.send_line("{\"expression\": \"6 * 8\"").unwrap();
    // Refused before anything is claimed, saying why, and asked again.
    let refused = chat.exp_string("arguments (a JSON object): ").unwrap();
    assert!(refused.contains("not valid JSON"), "{refused}");
    assert!(!refused.contains("(approved)"), "{refused}");
    chat.send_line("{\"expression\": \"6 * 8\"}").unwrap();
    chat.exp_string("(approved)").unwrap();
    let status = chat.exp_string("]").unwrap();
    assert!(status.contains("ok"), "{status}");
    chat.send_line("/quit").unwrap();
    chat.exp_eof().unwrap();
    // The call ran once, with the arguments typed the second time.
    let results = results(&sandbox.db(), "cli/default");
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("edited") && results[0].ends_with("48"),
        "{results:?}"
    );
}

#[test]
fn a_local_server_is_asked_within_its_slot_and_made_to_call_a_tool_first() {
    let (url, seen) = scripted_server(1);
    let sandbox = Sandbox::new(url);
    std::fs::write(sandbox.dir.path().join("motet.toml"), "timeout_secs = 30\n").unwrap();
    let text = sandbox.ok(&["run", "What is 6 times 7?", "--thread", "slot"]);
    assert!(text.contains("done: 42"), "{text}");
    let asked = seen.asked_with.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    // The answer is bounded by a quarter of the slot the server reports at /props...
    for (max_tokens, _, parallel) in &asked {
        assert_eq!(
            max_tokens,
            &serde_json::json!(SLOT_CONTEXT / 4),
            "{asked:?}"
        );
        // One tool call a turn: a small model otherwise repeats its call to the bound.
        assert_eq!(parallel, &serde_json::json!(false), "{asked:?}");
    }
    // ...and the first call must call a tool; the one after the result may answer.
    assert_eq!(asked[0].1, "required", "{asked:?}");
    assert_ne!(asked[1].1, "required", "{asked:?}");
}

/// The id of the one call `pending` lists (`... · call ID · ...`).
fn pending_call(pending: &str) -> String {
    let lines: Vec<&str> = pending.lines().collect();
    assert_eq!(lines.len(), 1, "{pending}");
    let after = lines[0].split(" · call ").nth(1).unwrap();
    after.split(' ').next().unwrap().to_owned()
}

#[test]
fn a_soft_budget_waits_in_pending_and_is_approved_or_rejected() {
    let (url, _) = scripted_server(1);
    let sandbox = Sandbox::new(url);
    // Nothing gated; a soft step of one token, so every call of a request passes a step.
    std::fs::write(
        sandbox.dir.path().join("motet.toml"),
        "timeout_secs = 30\n[budget.request]\nsoft_tokens = 1\n",
    )
    .unwrap();
    let text = sandbox.ok(&["run", "What is 6 times 7?", "--thread", "s"]);
    assert!(text.contains("this request has spent 0 of"), "{text}");
    assert!(text.contains("motet approve budget:"), "{text}");

    let pending = sandbox.ok(&["pending"]);
    assert!(
        pending.contains(" · budget · waits for approval (this request has spent"),
        "{pending}"
    );
    assert!(pending.contains("tokens: continue?)"), "{pending}");
    let first = pending_call(&pending);
    assert!(first.starts_with("budget:"), "{pending}");
    // Approved: the first call goes out and calls the calculator; the second passes the
    // next step and waits in its turn.
    let text = sandbox.ok(&["approve", &first]);
    assert!(results(&sandbox.db(), "cli/s") == ["42"], "{text}");
    let second = pending_call(&sandbox.ok(&["pending"]));
    assert_ne!(second, first);
    let text = sandbox.ok(&["approve", &second]);
    assert!(text.contains("done: 42"), "{text}");
    assert!(sandbox.ok(&["pending"]).contains("nothing waits"));

    // Rejected: the request fails with a budget failure.
    sandbox.ok(&["run", "What is 6 times 7?", "--thread", "r"]);
    let held = pending_call(&sandbox.ok(&["pending"]));
    let output = run(sandbox.motet(&["reject", &held, "--reason", "too dear"]));
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        said.contains("declined to go on past a soft limit"),
        "{said}"
    );
    assert!(said.contains("too dear"), "{said}");
    assert!(results(&sandbox.db(), "cli/r").is_empty());
}
