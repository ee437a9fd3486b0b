//! Nothing committed is lost when the process dies, on a SQLite file: the crash loop of
//! tests/common/crash.rs, 50 SIGKILLs mid-request, each followed by a resume.
//! (crash_postgres.rs runs the same loop on PostgreSQL.)

#[path = "common/crash.rs"]
mod crash_loop;

const RUNS: usize = 50;

/// The children of the loop, not a test of its own: ignored, so only the parent runs it (with
/// `--ignored --exact child_run` and `MOTET_CRASH_CHILD` set).
#[tokio::test]
#[ignore = "a child process of the crash loop, run by it"]
async fn child_run() {
    crash_loop::child_run().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_request_and_resumed_fifty_times() {
    let Ok(dir) = tempfile::tempdir() else {
        panic!("no temp dir");
    };
    let url = format!("sqlite://{}", dir.path().join("crash.db").display());
    crash_loop::kill_and_resume(&url, RUNS, "child_run").await;
}
