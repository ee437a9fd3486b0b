//! Nothing committed is lost when the process dies, on PostgreSQL: the crash loop of
//! tests/common/crash.rs (as crash.rs runs it on SQLite), 25 SIGKILLs mid-request, each
//! followed by a resume, in a database of its own on the server at `MOTET_DATABASE_URL`
//! (`bash scripts/postgres.sh start`). Without the variable it prints `skipped:` and returns.
#![cfg(feature = "postgres")]

#[path = "common/crash.rs"]
mod crash_loop;
#[path = "common/pg.rs"]
mod pg;

const RUNS: usize = 25;

/// The children of the loop, not a test of its own: ignored, so only the parent runs it (with
/// `--ignored --exact child_run` and `MOTET_CRASH_CHILD` set).
#[tokio::test]
#[ignore = "a child process of the crash loop, run by it"]
async fn child_run() {
    crash_loop::child_run().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_request_and_resumed_on_postgres() {
    let Some(db) = pg::TestDb::new("crash").await else {
        return;
    };
    crash_loop::kill_and_resume(&db.url, RUNS, "child_run").await;
    db.drop_now().await;
}
