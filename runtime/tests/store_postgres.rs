//! The ThreadStore contract (tests/common/store.rs) and the fencing epoch on a real PostgreSQL
//! server: `bash scripts/postgres.sh start` prints the URL to put in MOTET_DATABASE_URL. Every
//! test makes a database of its own with a random name, so the tests run in parallel; without
//! the variable each prints `skipped:` and returns.
#![cfg(feature = "postgres")]
// The helpers are test code too: a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "common/pg.rs"]
mod pg;
#[path = "common/store.rs"]
mod suite;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{FixedEnv, NewEntry};
use motet_runtime::store::{
    POSTGRES_SCHEMA_VERSION, PostgresConfig, PostgresStore, StoreError, ThreadStore,
};
use pg::{TestDb, connect};
use suite::{
    conversation, list_summaries_carry_totals_and_window_marks, save,
    thread_ids_come_a_page_at_a_time, whole_suite,
};

/// A PostgreSQL store on the test's database.
async fn open(db: &TestDb) -> PostgresStore {
    PostgresStore::open(&db.url).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_keeps_the_contract() {
    let Some(db) = TestDb::new("contract").await else {
        return;
    };
    whole_suite(Arc::new(open(&db).await)).await;
    db.drop_now().await;
    let Some(other) = TestDb::new("list").await else {
        return;
    };
    let listed = open(&other).await;
    list_summaries_carry_totals_and_window_marks(&listed).await;
    thread_ids_come_a_page_at_a_time(&listed).await;
    other.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pooled_stores_on_one_database_never_interleave() {
    let Some(db) = TestDb::new("two_pools").await else {
        return;
    };
    // Both open (and migrate) at once: the advisory lock lets one create the schema.
    let config = PostgresConfig::default().with_pool_size(3);
    let (a, b) = tokio::join!(
        PostgresStore::open_with(&db.url, config.clone()),
        PostgresStore::open_with(&db.url, config),
    );
    let a: Arc<dyn ThreadStore> = Arc::new(a.unwrap());
    let b: Arc<dyn ThreadStore> = Arc::new(b.unwrap());
    suite::two_writers_one_wins(Arc::clone(&a), Arc::clone(&b)).await;

    // Four writers over both pools, each appending ten entries to one thread, catching up on
    // every conflict: all forty land, each once, in a gapless sequence.
    let env = FixedEnv::new(0);
    let base = conversation(&env, "thread_crowd");
    save(a.as_ref(), &base).await;
    let mut writers = Vec::new();
    for w in 0..4 {
        let store = Arc::clone(if w % 2 == 0 { &a } else { &b });
        writers.push(tokio::spawn(async move {
            let env = FixedEnv::new(0);
            let mut conflicts = 0;
            for i in 0..10 {
                loop {
                    let mut thread = store.load("thread_crowd").await.unwrap().unwrap();
                    let rev = thread.rev();
                    thread.append(&env, NewEntry::note(format!("writer {w} note {i}")));
                    match store.commit(&thread, rev).await {
                        Ok(_) => break,
                        Err(StoreError::Conflict { .. }) => conflicts += 1,
                        Err(other) => panic!("writer {w}: {other}"),
                    }
                }
            }
            conflicts
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let stored = a.load("thread_crowd").await.unwrap().unwrap();
    assert_eq!(stored.rev(), 44);
    let seqs: Vec<u32> = stored.to_list().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..44).collect::<Vec<_>>());
    let notes = serde_json::to_string(stored.to_list()).unwrap();
    for w in 0..4 {
        for i in 0..10 {
            assert_eq!(
                notes.matches(&format!("\"writer {w} note {i}\"")).count(),
                1,
                "writer {w} note {i}"
            );
        }
    }
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_are_stored_as_the_json_serde_wrote() {
    let Some(db) = TestDb::new("bytes").await else {
        return;
    };
    let store = open(&db).await;
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_bytes");
    save(&store, &thread).await;
    let admin = connect(&db.url).await;
    let rows = admin
        .query(
            "SELECT body FROM entries WHERE thread_id = 'thread_bytes' ORDER BY seq",
            &[],
        )
        .await
        .unwrap();
    let stored: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    let written: Vec<String> = thread
        .to_list()
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert_eq!(stored, written);
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_rows_fail_closed_naming_the_thread() {
    let Some(db) = TestDb::new("corrupt").await else {
        return;
    };
    let store = open(&db).await;
    let env = FixedEnv::new(0);
    save(&store, &conversation(&env, "thread_bad_entry")).await;
    save(&store, &conversation(&env, "thread_bad_rev")).await;
    let admin = connect(&db.url).await;
    admin
        .batch_execute(
            "UPDATE entries SET body = '{\"seq\": 2, \"not\": \"an entry\"}' \
             WHERE thread_id = 'thread_bad_entry' AND seq = 2; \
             UPDATE threads SET rev = -1 WHERE id = 'thread_bad_rev';",
        )
        .await
        .unwrap();
    let err = store.load("thread_bad_entry").await.unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptEntry { thread_id, seq: 2, .. } if thread_id == "thread_bad_entry"),
        "{err}"
    );
    let err = store.load_after("thread_bad_entry", 1).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptEntry { seq: 2, .. }),
        "{err}"
    );
    let err = store.load("thread_bad_rev").await.unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptThread { thread_id, .. } if thread_id == "thread_bad_rev"),
        "{err}"
    );
    assert!(store.list().await.is_err());
    // A listing that goes on past it: the damaged row set aside with its error, the thread
    // whose entry is damaged listed (its row is whole), and loading both still failing.
    let listing = store.list_readable().await.unwrap();
    let listed: Vec<&str> = listing.threads.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(listed, ["thread_bad_entry"]);
    assert_eq!(listing.unreadable.len(), 1);
    assert_eq!(listing.unreadable[0].thread_id, "thread_bad_rev");
    assert!(
        matches!(&listing.unreadable[0].error, StoreError::CorruptThread { thread_id, reason } if thread_id == "thread_bad_rev" && reason.contains("rev")),
        "{}",
        listing.unreadable[0].error
    );
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_and_newer_databases_are_refused() {
    let Some(db) = TestDb::new("schema").await else {
        return;
    };
    let admin = connect(&db.url).await;
    admin
        .batch_execute("CREATE TABLE threads (id integer)")
        .await
        .unwrap();
    let err = PostgresStore::open(&db.url).await.unwrap_err();
    assert!(matches!(err, StoreError::ServerNotAStore { .. }), "{err}");
    admin.batch_execute("DROP TABLE threads").await.unwrap();
    drop(open(&db).await);
    admin
        .batch_execute("UPDATE motet_schema SET version = version + 1")
        .await
        .unwrap();
    let err = PostgresStore::open(&db.url).await.unwrap_err();
    assert!(
        matches!(err, StoreError::ServerSchemaTooNew { found, supported } if found == supported + 1 && supported == POSTGRES_SCHEMA_VERSION),
        "{err}"
    );
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_gives_typed_errors() {
    let Some(db) = TestDb::new("gone").await else {
        return;
    };
    // Nothing listens on the port: opening fails, quickly, with a server error.
    let dead = {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        drop(socket);
        format!("postgres://motet@127.0.0.1:{port}/motet")
    };
    let started = std::time::Instant::now();
    let err = PostgresStore::open_with(
        &dead,
        PostgresConfig::default().with_connect_timeout(Duration::from_secs(2)),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, StoreError::Server { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let err = PostgresStore::open("not a url at all").await.unwrap_err();
    assert!(matches!(err, StoreError::Server { .. }), "{err}");

    let store = PostgresStore::open_with(
        &db.url,
        PostgresConfig::default()
            .with_pool_size(2)
            .with_connect_timeout(Duration::from_secs(2))
            .with_wait_timeout(Duration::from_secs(2)),
    )
    .await
    .unwrap();
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_gone");
    save(&store, &thread).await;
    let admin = connect(&db.admin_url).await;
    // The server ends the store's connections: the next calls fail as server errors naming
    // the thread, or succeed on a fresh connection; none panics, and the pool recovers.
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
            &[&db.name],
        )
        .await
        .unwrap();
    let mut recovered = false;
    for _ in 0..5 {
        match store.load("thread_gone").await {
            Ok(Some(back)) => {
                assert_eq!(back.to_list(), thread.to_list());
                recovered = true;
                break;
            }
            Ok(None) => panic!("the thread vanished"),
            Err(StoreError::ServerThread { thread_id, .. }) => assert_eq!(thread_id, "thread_gone"),
            Err(other) => panic!("{other}"),
        }
    }
    assert!(recovered, "the pool did not reconnect");

    // The database goes away for good: every call is a server error, none a panic or `None`.
    db.drop_now().await;
    let err = store.load("thread_gone").await.unwrap_err();
    assert!(
        matches!(&err, StoreError::ServerThread { thread_id, .. } if thread_id == "thread_gone"),
        "{err}"
    );
    let err = store.append("thread_gone", &[], 4).await.unwrap_err();
    assert!(matches!(err, StoreError::ServerThread { .. }), "{err}");
    let err = store.list().await.unwrap_err();
    assert!(matches!(err, StoreError::Server { .. }), "{err}");
    assert!(err.to_string().contains("database server failure"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_in_two_schemas_of_one_database_are_apart() {
    let Some(db) = TestDb::new("schemas").await else {
        return;
    };
    connect(&db.url)
        .await
        .batch_execute("CREATE SCHEMA tenant_a; CREATE SCHEMA tenant_b")
        .await
        .unwrap();
    let in_schema = |schema: &str| format!("{}?options=-c%20search_path%3D{schema}", db.url);
    let a = PostgresStore::open(&in_schema("tenant_a")).await.unwrap();
    let b = PostgresStore::open(&in_schema("tenant_b")).await.unwrap();
    let env = FixedEnv::new(0);
    save(&a, &conversation(&env, "thread_a")).await;
    assert!(b.load("thread_a").await.unwrap().is_none());
    assert!(b.list().await.unwrap().is_empty());
    assert_eq!(a.list().await.unwrap().len(), 1);
    let tables: i64 = connect(&db.url)
        .await
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'tenant_a' AND tablename = 'entries'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tables, 1);
    db.drop_now().await;
}

/// Runs `op`, failing the test if it has not ended within `within`: what a hang looks like.
async fn ends_within<T>(within: Duration, op: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(within, op)
        .await
        .unwrap_or_else(|_| panic!("still waiting after {within:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_elsewhere_is_a_store_error_in_bounded_time() {
    let Some(db) = TestDb::new("held_lock").await else {
        return;
    };
    let store = PostgresStore::open_with(
        &db.url,
        PostgresConfig::default().with_operation_timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_held");
    let rev = save(&store, &thread).await;
    // Another session (a process the network cut off keeps its locks for hours) holds the
    // thread's row, then the whole table.
    let mut holder = connect(&db.url).await;
    let tx = holder.transaction().await.unwrap();
    tx.execute(
        "SELECT 1 FROM threads WHERE id = 'thread_held' FOR UPDATE",
        &[],
    )
    .await
    .unwrap();
    let mut more = thread.clone();
    more.append(&env, NewEntry::note("blocked"));
    let err = ends_within(Duration::from_secs(10), store.commit(&more, rev))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::ServerThread { thread_id, .. } if thread_id == "thread_held"),
        "{err}"
    );
    assert!(
        err.to_string().contains("due to statement timeout")
            || err.to_string().contains("due to lock timeout"),
        "{err}"
    );
    let err = ends_within(Duration::from_secs(10), store.claim("thread_held"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("due to statement timeout")
            || err.to_string().contains("due to lock timeout"),
        "{err}"
    );
    tx.batch_execute("LOCK TABLE threads IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    for err in [
        ends_within(Duration::from_secs(10), store.load("thread_held"))
            .await
            .unwrap_err(),
        ends_within(Duration::from_secs(10), store.list())
            .await
            .unwrap_err(),
    ] {
        assert!(
            err.to_string().contains("due to statement timeout")
                || err.to_string().contains("due to lock timeout"),
            "{err}"
        );
    }
    // Let go: the store works again and nothing half-written is there.
    tx.rollback().await.unwrap();
    assert_eq!(
        store.load("thread_held").await.unwrap().unwrap().to_list(),
        thread.to_list()
    );
    store.commit(&more, rev).await.unwrap();
    db.drop_now().await;
}

/// A claim reads the row and the entries in one statement, whose snapshot is taken before the
/// claim waits for a row lock: an earlier holder's step, committed while the claim waited, is in
/// the row it returns and must be in the entries too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_waited_for_a_step_reads_that_step_too() {
    let Some(db) = TestDb::new("claim_waits").await else {
        return;
    };
    let store = open(&db).await;
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_wait");
    let rev = save(&store, &thread).await;
    let mut more = thread.clone();
    more.append(&env, NewEntry::note("written while the claim waited"));
    let last = more.to_list().last().cloned().unwrap();
    // The earlier holder's step, as its commit writes it, left open.
    let mut holder = connect(&db.url).await;
    let tx = holder.transaction().await.unwrap();
    tx.execute(
        "INSERT INTO entries (thread_id, seq, kind, at, body) VALUES ('thread_wait', $1, $2, $3, $4)",
        &[
            &i64::try_from(rev).unwrap(),
            &last.kind().as_str(),
            &i64::try_from(last.at).unwrap(),
            &serde_json::to_string(&*last).unwrap(),
        ],
    )
    .await
    .unwrap();
    tx.execute(
        "UPDATE threads SET rev = rev + 1 WHERE id = 'thread_wait'",
        &[],
    )
    .await
    .unwrap();
    let claiming = tokio::spawn({
        let store = store.clone();
        async move { store.claim_and_load("thread_wait").await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!claiming.is_finished(), "the claim waits for the row");
    tx.commit().await.unwrap();
    let claimed = claiming.await.unwrap().unwrap().unwrap();
    assert_eq!(claimed.thread.to_list(), more.to_list());
    assert_eq!(claimed.thread.rev(), rev + 1);
    db.drop_now().await;
}

/// A TCP relay to `target` on loopback that stops passing bytes (both ways, the connections
/// kept open) once `frozen` is set: a server that stopped answering, or a network cut.
fn freezing_relay(target: std::net::SocketAddr) -> (u16, Arc<std::sync::atomic::AtomicBool>) {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    let frozen = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let flag = frozen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = std::net::TcpStream::connect(target) else {
                return;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                let flag = flag.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    loop {
                        let Ok(n) = from.read(&mut buf) else { return };
                        if n == 0 {
                            return;
                        }
                        while flag.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        if to.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        }
    });
    (port, frozen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_answering_is_a_timeout_not_a_hang() {
    let Some(db) = TestDb::new("frozen").await else {
        return;
    };
    let config: tokio_postgres::Config = db.url.parse().unwrap();
    let tokio_postgres::config::Host::Tcp(host) = &config.get_hosts()[0] else {
        panic!("a TCP server expected");
    };
    let target = std::net::SocketAddr::new(host.parse().unwrap(), config.get_ports()[0]);
    let (port, frozen) = freezing_relay(target);
    let relayed = db
        .url
        .replacen(&format!(":{}/", target.port()), &format!(":{port}/"), 1);
    let store = PostgresStore::open_with(
        &relayed,
        PostgresConfig::default().with_operation_timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_frozen");
    save(&store, &thread).await;
    frozen.store(true, std::sync::atomic::Ordering::SeqCst);
    let err = ends_within(Duration::from_secs(10), store.load("thread_frozen"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Timeout { thread_id: Some(id), .. } if id == "thread_frozen"),
        "{err}"
    );
    assert!(err.to_string().contains("did not answer within"), "{err}");
    let err = ends_within(Duration::from_secs(10), store.list())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Timeout {
                thread_id: None,
                ..
            }
        ),
        "{err}"
    );
    // Answering again: the store serves again.
    frozen.store(false, std::sync::atomic::Ordering::SeqCst);
    let mut back = None;
    for _ in 0..5 {
        if let Ok(loaded) = store.load("thread_frozen").await {
            back = loaded;
            break;
        }
    }
    assert_eq!(back.unwrap().to_list(), thread.to_list());
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_errors_say_what_the_server_said() {
    let Some(db) = TestDb::new("why").await else {
        return;
    };
    let config = PostgresConfig::default().with_connect_timeout(Duration::from_secs(5));
    let unknown_db = format!("{}_missing", db.url);
    let err = PostgresStore::open_with(&unknown_db, config.clone())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(
        err.to_string().contains(&format!("{}_missing", db.name)),
        "{err}"
    );
    let unknown_role = db.url.replacen("://motet@", "://nobody_here@", 1);
    if unknown_role != db.url {
        let err = PostgresStore::open_with(&unknown_role, config)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("nobody_here"), "{err}");
        assert!(err.to_string().contains("does not exist"), "{err}");
    }
    db.drop_now().await;
}

/// A budget counts from the ledger: an agent's budget half spent by one runtime is half spent
/// for the next one on the same database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_half_spent_before_a_restart_is_half_spent_after_it() {
    use motet_directives::{AssistantBlock, AssistantMessage, LlmResponse, StopReason, Usage};
    use motet_providers::budget::{Budget, BudgetLevel};
    use motet_runtime::agent::{AskError, ReActAgent, Runtime};
    use motet_runtime::testing::ScriptedModel;

    let Some(db) = TestDb::new("budget").await else {
        return;
    };
    let spending = || {
        Ok(LlmResponse::new(
            AssistantMessage {
                blocks: vec![AssistantBlock::text("done")],
                stop_reason: StopReason::EndTurn,
            },
            Usage {
                input_tokens: 1_000,
                output_tokens: 500,
                ..Usage::default()
            },
        ))
    };
    let start = |model: ScriptedModel, store: PostgresStore| {
        Runtime::builder()
            .llm(Arc::new(model))
            .store(Arc::new(store))
            .budget(BudgetLevel::Agent, Budget::tokens(3_000))
            .build()
            .unwrap()
    };
    let agent_spec = || ReActAgent::new("spender", "openai:gpt-5.2");
    let runtime = start(ScriptedModel::new([spending()]), open(&db).await);
    let agent = runtime.spawn(agent_spec()).await.unwrap();
    agent.ask("first").await.unwrap();
    runtime.shutdown().await;

    let model = ScriptedModel::new([spending(), spending()]);
    let runtime = start(model.clone(), open(&db).await);
    let agent = runtime.spawn(agent_spec()).await.unwrap();
    agent.ask("second").await.unwrap();
    let Err(AskError::Failed { reply }) = agent.ask("third").await else {
        panic!("the third call must be refused: 3,000 of 3,000 tokens spent");
    };
    let data: serde_json::Value = reply.data_as().unwrap();
    assert_eq!(data["reason"]["error"]["kind"], "budget", "{data}");
    assert_eq!(model.requests().len(), 1);
    runtime.shutdown().await;
    db.drop_now().await;
}

/// A request held at a soft budget step waits in the database: a new runtime on it lists the
/// wait, and the approval sends the held call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soft_budget_wait_survives_a_restart_and_is_approved_after_it() {
    use motet_agents::BUDGET_WAIT_TOOL;
    use motet_directives::{
        AssistantBlock, AssistantMessage, LlmResponse, Response, StopReason, ToolArgs, Usage,
    };
    use motet_providers::budget::{Budget, BudgetLevel};
    use motet_runtime::agent::{AskOptions, ReActAgent, Runtime};
    use motet_runtime::testing::ScriptedModel;
    use motet_runtime::tool::{ToolError, tool_fn};

    let Some(db) = TestDb::new("soft_budget").await else {
        return;
    };
    let turn = |blocks: Vec<AssistantBlock>, stop_reason| {
        Ok(LlmResponse::new(
            AssistantMessage {
                blocks,
                stop_reason,
            },
            Usage {
                input_tokens: 1_000,
                output_tokens: 500,
                ..Usage::default()
            },
        ))
    };
    let call = || {
        turn(
            vec![AssistantBlock::tool_use(
                "call_1",
                "echo",
                ToolArgs::from_text("{}"),
            )],
            StopReason::ToolUse,
        )
    };
    let start = |model: ScriptedModel, store: PostgresStore| {
        Runtime::builder()
            .llm(Arc::new(model))
            .store(Arc::new(store))
            .budget(
                BudgetLevel::Request,
                Budget::tokens(5_000).with_soft_tokens(1_000),
            )
            .build()
            .unwrap()
    };
    let agent_spec = || {
        ReActAgent::new("spender", "openai:gpt-5.2").tool(tool_fn(
            "echo",
            "Says ok.",
            |_: serde_json::Value| async { Ok::<_, ToolError>("ok".to_owned()) },
        ))
    };
    let runtime = start(ScriptedModel::new([call()]), open(&db).await);
    let agent = runtime.spawn(agent_spec()).await.unwrap();
    let mut ticket = agent.submit("spend", AskOptions::default()).await.unwrap();
    let before = tokio::time::timeout(Duration::from_secs(10), ticket.next_waiting())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(before.tool, BUDGET_WAIT_TOOL);
    runtime.shutdown().await;
    drop(ticket);

    let model = ScriptedModel::new([turn(
        vec![AssistantBlock::text("done")],
        StopReason::EndTurn,
    )]);
    let runtime = start(model.clone(), open(&db).await);
    runtime.spawn(agent_spec()).await.unwrap();
    let waiting = runtime.waiting().await.unwrap();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0].tool_call_id, before.tool_call_id);
    let tickets = runtime.recover(Duration::from_secs(10)).await.unwrap();
    assert_eq!(tickets.len(), 1);
    runtime
        .respond(&waiting[0], Response::Approve)
        .await
        .unwrap();
    let answer = tickets.into_iter().next().unwrap().wait().await.unwrap();
    assert_eq!(answer.text, "done");
    assert_eq!(model.requests().len(), 1);
    runtime.shutdown().await;
    db.drop_now().await;
}
