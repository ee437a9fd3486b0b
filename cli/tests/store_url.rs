//! `motet` on a store named by URL: a PostgreSQL database (through `--db` and through
//! `MOTET_DATABASE_URL`), and URLs that name no store. The PostgreSQL tests make a database of
//! their own on the server at `MOTET_DATABASE_URL` (`bash scripts/postgres.sh start`) and print
//! `skipped:` without it; the one that asks a question needs the local llama.cpp server too
//! (`MOTET_LOCAL_LLM_URL`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
#[path = "../../runtime/tests/common/pg.rs"]
mod pg;

use std::process::{Command, Stdio};

use common::{CLEARED_VARS, run, stderr, stdout};
use motet::runtime::store::open_store;
use tempfile::TempDir;

/// `motet args` in a fresh folder (its HOME too, so lock files land there), with no provider,
/// store or model settings from the environment.
fn motet(home: &TempDir, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_motet"));
    for var in CLEARED_VARS {
        command.env_remove(var);
    }
    // Set, and empty: no local server is looked for on this machine's usual ports.
    command.env("MOTET_LOCAL_LLM_URL", "");
    command
        .env("HOME", home.path())
        .current_dir(home.path())
        .args(args)
        .stdin(Stdio::null());
    command
}

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_question_asked_on_postgres_is_read_back_by_every_command() {
    let Some(llm) = std::env::var("MOTET_LOCAL_LLM_URL").ok() else {
        common::missing("needs MOTET_LOCAL_LLM_URL (bash scripts/local-llm.sh start)");
        return;
    };
    let rt = tokio();
    let Some(db) = rt.block_on(pg::TestDb::new("cli")) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("motet.toml"), "max_tokens = 32\n").unwrap();

    // `--db URL`: the question and its answer go to the server.
    let mut ask = motet(
        &home,
        &[
            "--db",
            &db.url,
            "run",
            "What is 2 + 3?",
            "--thread",
            "pg",
            "--json",
        ],
    );
    ask.env("MOTET_LOCAL_LLM_URL", &llm);
    let output = run(ask);
    assert!(output.status.success(), "{}", stderr(&output));
    let reply: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let answer = reply["answer"].as_str().unwrap().trim().to_owned();
    assert_eq!(reply["thread"], "pg");
    // The thread was locked under the cache folder, not beside a file.
    let locks: Vec<_> = std::fs::read_dir(home.path().join(".cache/motet/locks"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(locks.len(), 1, "{locks:?}");
    assert!(!home.path().join(".local/share/motet").exists());
    // While another process holds that lock, a question on the thread is refused unwritten.
    {
        let _held = motet_cli::lock::ThreadLock::acquire(&locks[0], "cli/pg").unwrap();
        let mut again = motet(&home, &["--db", &db.url, "run", "Again?", "--thread", "pg"]);
        again.env("MOTET_LOCAL_LLM_URL", &llm);
        let refused = run(again);
        assert_eq!(refused.status.code(), Some(4), "{}", stderr(&refused));
        assert!(
            stderr(&refused).contains("thread `cli/pg` is busy"),
            "{}",
            stderr(&refused)
        );
    }

    // Every other command finds it through MOTET_DATABASE_URL alone.
    let with_env = |args: &[&str]| {
        let mut command = motet(&home, args);
        command.env("MOTET_DATABASE_URL", &db.url);
        run(command)
    };
    let list = with_env(&["threads", "list"]);
    assert!(list.status.success(), "{}", stderr(&list));
    assert!(
        stdout(&list).lines().any(|l| l.starts_with("pg ")),
        "{}",
        stdout(&list)
    );
    let show = with_env(&["threads", "show", "pg"]);
    let text = stdout(&show);
    assert!(text.contains("thread cli/pg · "), "{text}");
    assert!(!text.contains("Again?"), "{text}");
    assert!(text.contains("user: What is 2 + 3?"), "{text}");
    assert!(
        text.contains(answer.lines().next().unwrap_or("")),
        "{answer:?} not in {text}"
    );

    // The export is the stored thread, entry for entry.
    let stored = rt.block_on(async {
        let store = open_store(&db.url).await.unwrap();
        store.load("cli/pg").await.unwrap().unwrap()
    });
    // (with each entry's time also in UTC, `at_utc`)
    let expected: Vec<serde_json::Value> = stored
        .to_list()
        .iter()
        .map(|e| {
            let mut value = serde_json::to_value(e).unwrap();
            let utc = jiff::Timestamp::from_millisecond(i64::try_from(e.at).unwrap()).unwrap();
            value["at_utc"] = utc.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string().into();
            value
        })
        .collect();
    let export = with_env(&["threads", "export", "pg"]);
    assert!(export.status.success(), "{}", stderr(&export));
    let lines: Vec<serde_json::Value> = stdout(&export)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, expected);

    // Nothing is owed; `pending` reads the server too.
    let mut resume = motet(&home, &["resume", "pg"]);
    resume
        .env("MOTET_DATABASE_URL", &db.url)
        .env("MOTET_LOCAL_LLM_URL", &llm);
    let resumed = run(resume);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert!(
        stdout(&resumed).contains("nothing new"),
        "{}",
        stdout(&resumed)
    );
    let pending = with_env(&["pending"]);
    assert!(
        stdout(&pending).contains("nothing waits"),
        "{}",
        stdout(&pending)
    );

    // `--db` wins over the variable: a file there holds no thread.
    let mut file_list = motet(&home, &["--db", "local.db", "threads", "list"]);
    file_list.env("MOTET_DATABASE_URL", &db.url);
    let file_list = run(file_list);
    assert!(
        stdout(&file_list).contains("no threads in local.db"),
        "{}",
        stdout(&file_list)
    );

    let delete = with_env(&["threads", "delete", "pg"]);
    assert!(delete.status.success(), "{}", stderr(&delete));
    let gone = with_env(&["threads", "show", "pg"]);
    assert_eq!(gone.status.code(), Some(4));
    assert!(
        stderr(&gone).contains("no thread `cli/pg` in postgres://"),
        "{}",
        stderr(&gone)
    );
    rt.block_on(db.drop_now());
}

#[test]
fn urls_naming_no_store_are_refused_without_showing_the_password() {
    let home = tempfile::tempdir().unwrap();
    // --db: a bad command line (2).
    let flag = run(motet(
        &home,
        &["--db", "mysql://root:s3cret@db/motet", "threads", "list"],
    ));
    assert_eq!(flag.status.code(), Some(2), "{}", stderr(&flag));
    let err = stderr(&flag);
    assert!(
        err.contains("--db") && err.contains("unknown scheme `mysql`"),
        "{err}"
    );
    assert!(
        err.contains("postgres://") && !err.contains("s3cret"),
        "{err}"
    );
    // The variable: configuration (3).
    let mut env = motet(&home, &["threads", "list"]);
    env.env("MOTET_DATABASE_URL", "redis://:s3cret@cache");
    let env = run(env);
    assert_eq!(env.status.code(), Some(3), "{}", stderr(&env));
    assert!(
        stderr(&env).contains("MOTET_DATABASE_URL"),
        "{}",
        stderr(&env)
    );
    assert!(!stderr(&env).contains("s3cret"), "{}", stderr(&env));
    // A server that is not there: the store (4), named without its password.
    let down = run(motet(
        &home,
        &[
            "--db",
            "postgres://motet:s3cret@127.0.0.1:1/motet?connect_timeout=2",
            "threads",
            "list",
        ],
    ));
    assert_eq!(down.status.code(), Some(4), "{}", stderr(&down));
    let err = stderr(&down);
    assert!(
        err.contains("postgres://motet:***@127.0.0.1:1/motet"),
        "{err}"
    );
    assert!(
        !err.contains("s3cret") && !err.contains("panicked"),
        "{err}"
    );
    // Nothing was created for any of them.
    assert!(!home.path().join(".local").exists());
}

#[test]
fn a_table_locked_elsewhere_fails_run_within_its_timeout_as_a_store_error() {
    let rt = tokio();
    let Some(db) = rt.block_on(pg::TestDb::new("cli_locked")) else {
        return;
    };
    // The schema is made, then another session holds the whole table (a process cut off by
    // the network keeps its locks until TCP notices: hours).
    let (holder, tx_open) = rt.block_on(async {
        drop(open_store(&db.url).await.unwrap());
        let holder = pg::connect(&db.url).await;
        holder
            .batch_execute("BEGIN; LOCK TABLE threads IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        (holder, true)
    });
    assert!(tx_open);
    let home = tempfile::tempdir().unwrap();
    let mut ask = motet(
        &home,
        &[
            "--db",
            &db.url,
            "run",
            "Hello?",
            "--thread",
            "held",
            "--timeout",
            "3",
        ],
    );
    // A model that is never reached: the store fails first.
    ask.env("MOTET_MODEL", "openai-compat:m")
        .env("MOTET_OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:9/v1");
    let started = std::time::Instant::now();
    let mut child = ask
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = loop {
        if let Some(_status) = child.try_wait().unwrap() {
            break child.wait_with_output().unwrap();
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("`motet run --timeout 3` still waits on the locked table after 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(4), "{err}");
    assert!(
        err.contains("timeout") || err.contains("did not answer"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    rt.block_on(async {
        holder.batch_execute("ROLLBACK").await.unwrap();
        drop(holder);
        db.drop_now().await;
    });
}
