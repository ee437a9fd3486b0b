//! The SQLite store's own promises: provider meta survives byte for byte, and a file that
//! cannot be read fails closed with an error naming the file or the thread.

// The helpers below are test code too: a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};

use motet_agents::{FixedEnv, NewEntry, Thread};
use motet_directives::{
    AssistantBlock, AssistantMessage, ProviderMeta, StopReason, ToolArgs, ToolResult, Usage,
};
use motet_runtime::store::{
    SCHEMA_VERSION, SqliteStore, StoreError, ThreadHeader, ThreadKey, ThreadMeta, ThreadStore,
};

const ODD_ARGS: &str = r#"{"b": 2,  "a":1}"#;
const COMPACT_ARGS: &str = r#"{"b":2,"a":1}"#;
const BAD_ARGS: &str = r#"{"city": "Paris""#;

/// An assistant turn carrying every provider's continuity data.
fn turn_with_provider_meta() -> AssistantMessage {
    AssistantMessage {
        blocks: vec![
            AssistantBlock::reasoning(
                "thinking about it",
                Some(ProviderMeta::Anthropic {
                    signature: "EqQBCkgIARABGAIiQL+/c2lnbmF0dXJl==".into(),
                }),
            ),
            AssistantBlock::reasoning(
                "",
                Some(ProviderMeta::OpenAi {
                    id: "rs_0123".into(),
                    encrypted_content: Some("gAAAAABo\u{2028}x/y+z==".into()),
                }),
            ),
            AssistantBlock::Text {
                text: "calling tools".into(),
                meta: Some(Box::new(ProviderMeta::Gemini {
                    thought_signature: "CiQB0e2Kb3Nn".into(),
                })),
            },
            AssistantBlock::ToolUse {
                id: "call_1".into(),
                name: "sum".into(),
                args: ToolArgs::from_text(ODD_ARGS),
                meta: Some(Box::new(ProviderMeta::Gemini {
                    thought_signature: "CiQBsig2".into(),
                })),
            },
            AssistantBlock::tool_use("call_2", "weather", ToolArgs::from_text(BAD_ARGS)),
        ],
        stop_reason: StopReason::ToolUse,
    }
}

fn thread_with_meta(env: &FixedEnv) -> Thread {
    let mut thread = Thread::new("thread_meta", 0);
    thread.append(env, NewEntry::user("add and look up"));
    thread.append(
        env,
        NewEntry::assistant(
            turn_with_provider_meta(),
            Usage {
                input_tokens: 7,
                output_tokens: 9,
                reasoning_tokens: 4,
                ..Usage::default()
            },
        ),
    );
    thread.append_all(
        env,
        [
            NewEntry::tool_result("sum", ToolResult::ok("call_1", "3")),
            NewEntry::tool_result("weather", ToolResult::ok("call_2", "bad arguments")),
        ],
    );
    thread
}

/// A thread of `n` entries of about 1 KB, so its entries span many pages.
fn long_thread(id: &str, n: usize) -> Thread {
    let env = FixedEnv::new(0);
    let mut thread = Thread::new(id, 0);
    for i in 0..n {
        thread.append(&env, NewEntry::user(format!("{i}: {}", "x".repeat(1_000))));
    }
    thread
}

/// Writes `threads` into a fresh store file and closes it (the WAL is checkpointed away).
async fn written_db(dir: &Path, name: &str, threads: &[Thread]) -> PathBuf {
    let path = dir.join(name);
    let store = SqliteStore::open(&path).await.unwrap();
    for thread in threads {
        store.create(&ThreadHeader::of(thread)).await.unwrap();
        store.commit(thread, 0).await.unwrap();
    }
    drop(store);
    assert!(!path.with_extension("db-wal").exists());
    path
}

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

#[tokio::test]
async fn provider_meta_and_raw_args_survive_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let env = FixedEnv::new(0);
    let thread = thread_with_meta(&env);
    let path = written_db(dir.path(), "meta.db", std::slice::from_ref(&thread)).await;

    let store = SqliteStore::open(&path).await.unwrap();
    let back = store.load("thread_meta").await.unwrap().unwrap();
    assert_eq!(back.usage().reasoning_tokens, 4);

    // The stored text is exactly what serde_json wrote, odd spacing and invalid args included.
    let body: String = raw(&path)
        .query_row(
            "SELECT body FROM entries WHERE thread_id = 'thread_meta' AND seq = 1",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(body, serde_json::to_string(&thread.to_list()[1]).unwrap());
    assert!(body.contains(ODD_ARGS), "{body}");

    // Loaded back, every byte of provider meta and of the invalid args is the same. Valid args
    // inside an `AssistantBlock` come back re-encoded compactly with their key order kept: the
    // block is an internally tagged enum, whose deserializer buffers the value before
    // `ToolArgs` sees it (motet-directives documents this), so the spacing cannot reach it.
    let original = serde_json::to_string(thread.to_list()).unwrap();
    let loaded = serde_json::to_string(back.to_list()).unwrap();
    assert!(
        loaded == original || loaded == original.replace(ODD_ARGS, COMPACT_ARGS),
        "{loaded}"
    );
    for needle in [
        "EqQBCkgIARABGAIiQL+/c2lnbmF0dXJl==",
        r#""id":"rs_0123","encrypted_content":"gAAAAABo"#,
        "CiQB0e2Kb3Nn",
        "CiQBsig2",
        r#""args":"{\"city\": \"Paris\"""#,
    ] {
        assert!(loaded.contains(needle), "{needle} missing from {loaded}");
    }
    assert_eq!(back.to_list()[0], thread.to_list()[0]);
    assert_eq!(back.to_list()[2..], thread.to_list()[2..]);
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(200)).unwrap();
    let err = SqliteStore::open(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
    assert!(err.to_string().contains("notes.db"), "{err}");
}

#[tokio::test]
async fn another_programs_sqlite_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    raw(&path)
        .execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = SqliteStore::open(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
    assert!(err.to_string().contains("other.db"), "{err}");
    // Left as it was: still in its rollback-journal mode, byte for byte, no WAL beside it.
    assert!(
        std::fs::read(&path).unwrap() == before,
        "the file was changed"
    );
    assert!(!dir.path().join("other.db-wal").exists());
    let mode: String = raw(&path)
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_db(dir.path(), "newer.db", &[long_thread("thread_n", 3)]).await;
    raw(&path)
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let err = SqliteStore::open(&path).await.unwrap_err();
    match &err {
        StoreError::SchemaTooNew {
            path: p,
            found,
            supported,
        } => {
            assert_eq!(p, &path);
            assert_eq!((*found, *supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("newer.db"), "{err}");
}

#[tokio::test]
async fn an_undecodable_entry_fails_closed_naming_thread_and_seq() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_db(
        dir.path(),
        "entry.db",
        &[long_thread("thread_x", 5), long_thread("thread_ok", 2)],
    )
    .await;
    raw(&path)
        .execute(
            "UPDATE entries SET body = '{\"id\": \"entry_3\", \"seq\": 2, \"kind\": \"us' \
             WHERE thread_id = 'thread_x' AND seq = 2",
            [],
        )
        .unwrap();
    let store = SqliteStore::open(&path).await.unwrap();
    let err = store.load("thread_x").await.unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptEntry { thread_id, seq: 2, .. } if thread_id == "thread_x"),
        "{err}"
    );
    assert!(err.to_string().contains("thread_x"), "{err}");
    let err = store.load_after("thread_x", 1).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptEntry { seq: 2, .. }),
        "{err}"
    );
    // The damage stays with that thread.
    assert_eq!(
        store
            .load("thread_ok")
            .await
            .unwrap()
            .unwrap()
            .entry_count(),
        2
    );
    assert_eq!(store.list().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_damaged_thread_row_is_set_aside_by_a_listing_and_fails_closed_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_db(
        dir.path(),
        "row.db",
        &[
            long_thread("thread_a", 2),
            long_thread("thread_bad_rev", 2),
            long_thread("thread_bad_usage", 2),
            long_thread("thread_z", 3),
        ],
    )
    .await;
    raw(&path)
        .execute_batch(
            "UPDATE threads SET rev = -1 WHERE id = 'thread_bad_rev'; \
             UPDATE threads SET usage = '{\"input_tokens\": \"many\"}' WHERE id = 'thread_bad_usage';",
        )
        .unwrap();
    for store in [
        SqliteStore::open(&path).await.unwrap(),
        SqliteStore::open_read_only(&path).await.unwrap(),
    ] {
        assert!(store.list().await.is_err());
        let listing = store.list_readable().await.unwrap();
        let listed: Vec<&str> = listing.threads.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(listed, ["thread_a", "thread_z"]);
        let unreadable: Vec<(&str, String)> = listing
            .unreadable
            .iter()
            .map(|u| (u.thread_id.as_str(), u.error.to_string()))
            .collect();
        assert_eq!(unreadable.len(), 2, "{unreadable:?}");
        assert_eq!(unreadable[0].0, "thread_bad_rev");
        assert!(
            unreadable[0].1.contains("thread_bad_rev") && unreadable[0].1.contains("rev"),
            "{unreadable:?}"
        );
        assert_eq!(unreadable[1].0, "thread_bad_usage");
        assert!(unreadable[1].1.contains("usage"), "{unreadable:?}");
        // Loading a damaged thread still fails, naming it; never an empty thread.
        for id in ["thread_bad_rev", "thread_bad_usage"] {
            let err = store.load(id).await.unwrap_err();
            assert!(err.to_string().contains(id), "{err}");
        }
        assert_eq!(
            store.load("thread_z").await.unwrap().unwrap().entry_count(),
            3
        );
    }
}

#[tokio::test]
async fn a_missing_entry_row_is_not_a_shorter_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_db(dir.path(), "gap.db", &[long_thread("thread_g", 4)]).await;
    raw(&path)
        .execute(
            "DELETE FROM entries WHERE thread_id = 'thread_g' AND seq = 1",
            [],
        )
        .unwrap();
    let store = SqliteStore::open(&path).await.unwrap();
    let err = store.load("thread_g").await.unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptThread { thread_id, .. } if thread_id == "thread_g"),
        "{err}"
    );
}

#[tokio::test]
async fn meta_written_before_the_key_had_fields_reads_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_db(dir.path(), "old-meta.db", &[long_thread("echo/chat", 2)]).await;
    // What builds before the typed key wrote: the agent's name as the strategy configuration,
    // the thread in `extra`.
    raw(&path)
        .execute(
            "UPDATE threads SET meta = '{\"policy\":\"default\",\"strategy_config_id\":\"echo\",\
             \"extra\":{\"thread\":\"chat\"}}' WHERE id = 'echo/chat'",
            [],
        )
        .unwrap();
    let store = SqliteStore::open(&path).await.unwrap();
    let meta = store.get_meta("echo/chat").await.unwrap().unwrap();
    let expected = ThreadMeta {
        policy: Some(serde_json::json!("default")),
        key: Some(ThreadKey::new("echo", "chat")),
        ..ThreadMeta::default()
    };
    assert_eq!(meta, expected);
    assert_eq!(meta.key.map(|k| k.store_id()).as_deref(), Some("echo/chat"));
}

/// Loads every thread; a damaged file must give errors, never a silently shorter history.
async fn load_all(path: &Path, ids: &[&str]) -> Result<Vec<usize>, StoreError> {
    let store = SqliteStore::open(path).await?;
    let mut counts = Vec::new();
    for id in ids {
        let thread = store.load(id).await?;
        counts.push(thread.map_or(0, |t| t.entry_count()));
    }
    Ok(counts)
}

#[tokio::test]
async fn a_truncated_file_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_db(dir.path(), "full.db", &[long_thread("thread_t", 300)]).await;
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 200_000, "the thread spans many pages ({len} bytes)");
    for (name, keep) in [
        ("half.db", len / 2),
        ("header.db", 50),
        ("one_page.db", 4096),
    ] {
        let copy = dir.path().join(name);
        std::fs::copy(&path, &copy).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&copy)
            .unwrap()
            .set_len(keep)
            .unwrap();
        // The error comes at open (naming the file) or at load (naming the thread).
        let err = load_all(&copy, &["thread_t"]).await.unwrap_err();
        let text = err.to_string();
        eprintln!("{name}: {text}");
        assert!(
            matches!(
                err,
                StoreError::CorruptFile { .. }
                    | StoreError::NotAStore { .. }
                    | StoreError::Thread { .. }
                    | StoreError::CorruptThread { .. }
                    | StoreError::CorruptEntry { .. }
            ),
            "{name}: {text}"
        );
        assert!(
            text.contains(name) || text.contains("thread_t"),
            "{name}: {text}"
        );
    }
}

#[tokio::test]
async fn garbage_in_the_middle_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_db(dir.path(), "good.db", &[long_thread("thread_z", 300)]).await;
    let mut bytes = std::fs::read(&path).unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle..middle + 16_384] {
        *byte = rng.u8(..);
    }
    let copy = dir.path().join("garbled.db");
    std::fs::write(&copy, &bytes).unwrap();
    let err = load_all(&copy, &["thread_z"]).await.unwrap_err();
    let text = err.to_string();
    eprintln!("garbled.db: {text}");
    assert!(
        text.contains("garbled.db") || text.contains("thread_z"),
        "{text}"
    );

    // Garbage over the header: not a database at all.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..100].fill(0xA5);
    let copy = dir.path().join("no_header.db");
    std::fs::write(&copy, &bytes).unwrap();
    let err = SqliteStore::open(&copy).await.unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
}

/// Opens `path` from `n` threads at once, each with its own connections (as `n` processes
/// would), and returns each open's outcome.
fn open_at_once(path: &Path, n: usize) -> Vec<Result<(), StoreError>> {
    let start = std::sync::Arc::new(std::sync::Barrier::new(n));
    let openers: Vec<_> = (0..n)
        .map(|_| {
            let (path, start) = (path.to_owned(), std::sync::Arc::clone(&start));
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                start.wait();
                rt.block_on(async {
                    let store = SqliteStore::open(&path).await?;
                    store.list().await.map(drop)
                })
            })
        })
        .collect();
    openers.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn many_openers_of_a_fresh_file_all_succeed() {
    // Creating the schema and switching to WAL both need the write lock: the openers that
    // lose the race must wait for it, not fail with "database is locked", and find the schema
    // made once — not take a file whose schema committed while they looked at it for another
    // program's (tables, and no application id yet).
    let dir = tempfile::tempdir().unwrap();
    for round in 0..100 {
        let path = dir.path().join(format!("fresh_{round}.db"));
        for outcome in open_at_once(&path, 8) {
            if let Err(e) = outcome {
                panic!("round {round}: {e}");
            }
        }
        let version: i64 = raw(&path)
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }
}

#[tokio::test]
async fn a_read_only_open_reads_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let thread = long_thread("thread_r", 3);
    let path = written_db(dir.path(), "ro.db", std::slice::from_ref(&thread)).await;
    // A store in rollback-journal mode (copied, or switched by a tool) stays in it: opening it
    // to read must not switch it to WAL, which is a write.
    let mode: String = raw(&path)
        .query_row("PRAGMA journal_mode=DELETE", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
    let before = std::fs::read(&path).unwrap();

    let store = SqliteStore::open_read_only(&path).await.unwrap();
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, "thread_r");
    let back = store.load("thread_r").await.unwrap().unwrap();
    assert_eq!(back.to_list(), thread.to_list());
    // Every write is refused as such, naming the file.
    let more = long_thread("thread_r", 4);
    let writes = [
        store.commit(&more, 3).await.unwrap_err(),
        store.delete("thread_r").await.unwrap_err(),
        store
            .create(&ThreadHeader::of(&long_thread("thread_new", 0)))
            .await
            .unwrap_err(),
    ];
    for err in writes {
        assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
        assert!(err.to_string().contains("ro.db is read-only"), "{err}");
    }
    drop(store);

    assert!(std::fs::read(&path).unwrap() == before, "the file changed");
    for side in ["ro.db-wal", "ro.db-shm", "ro.db-journal"] {
        assert!(!dir.path().join(side).exists(), "{side} was left behind");
    }

    // A store in WAL mode (as motet leaves them) is read the same, and its -wal and -shm
    // files are gone again once it is closed.
    let path = written_db(dir.path(), "wal.db", std::slice::from_ref(&thread)).await;
    let store = SqliteStore::open_read_only(&path).await.unwrap();
    assert_eq!(store.list().await.unwrap().len(), 1);
    drop(store);
    for side in ["wal.db-wal", "wal.db-shm"] {
        assert!(!dir.path().join(side).exists(), "{side} was left behind");
    }
}

#[tokio::test]
async fn a_read_only_open_creates_nothing_and_names_what_it_found() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let err = SqliteStore::open_read_only(&missing).await.unwrap_err();
    assert!(matches!(err, StoreError::Missing { .. }), "{err:?}");
    assert!(!missing.exists());

    // An empty file is a store nobody created yet, and stays empty.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, "").unwrap();
    let err = SqliteStore::open_read_only(&empty).await.unwrap_err();
    assert!(matches!(err, StoreError::Missing { .. }), "{err:?}");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);

    // Another program's database, a newer schema, a folder: refused by name, both ways.
    let other = dir.path().join("other.db");
    raw(&other)
        .execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY)")
        .unwrap();
    let err = SqliteStore::open_read_only(&other).await.unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
    let newer = written_db(dir.path(), "newer.db", &[]).await;
    raw(&newer)
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let err = SqliteStore::open_read_only(&newer).await.unwrap_err();
    assert!(matches!(err, StoreError::SchemaTooNew { .. }), "{err:?}");
    let folder = dir.path().join("folder.db");
    std::fs::create_dir(&folder).unwrap();
    for err in [
        SqliteStore::open_read_only(&folder).await.unwrap_err(),
        SqliteStore::open(&folder).await.unwrap_err(),
    ] {
        assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
        assert!(err.to_string().contains("a directory"), "{err}");
    }
}
