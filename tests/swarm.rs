//! The swarm example as a user runs it: a real process against the local llama.cpp server,
//! 50 workers with chaos, its `--json` summary checked — every task answered, every task ran
//! its tool, the correctness counts reported per skill, workers restarted by the supervisor,
//! nothing lost — and 12 virtual workers under a cap of 4. (How many results and answers are right is the small model's business: the
//! counts are checked for shape, not for value.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// The target folder this test was built into (`<target>/<profile>/deps/swarm-…`), so the
/// example is built once, beside it.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

#[test]
fn fifty_agents_with_chaos_answer_every_task() {
    let Ok(url) = std::env::var("MOTET_LOCAL_LLM_URL") else {
        println!("skipped: MOTET_LOCAL_LLM_URL is not set (bash scripts/local-llm.sh start)");
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true, so what this test needs must be there: see the skipped line"
        );
        return;
    };
    let started = Instant::now();
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["run", "--quiet", "--example", "swarm"]);
    if !cfg!(debug_assertions) {
        cargo.arg("--release");
    }
    cargo
        .arg("--")
        .args(["--agents", "50", "--chaos", "0.2", "--json"])
        .env("CARGO_TARGET_DIR", target_dir())
        .env("MOTET_LOCAL_LLM_URL", url)
        .env_remove("MOTET_MODEL")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let output = cargo.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the swarm failed:\n{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    // Nothing but one JSON object on stdout.
    let summary: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}):\n{stdout}"));
    println!("{summary} in {:.0?}", started.elapsed());

    assert_eq!(summary["agents"], 50);
    assert_eq!(summary["tasks"], 50);
    assert_eq!(summary["answered"], 50, "every task answered: {summary}");
    assert_eq!(summary["failures"], 0, "{summary}");
    // round(0.2 × 50) = 10 workers crash on purpose, each restarted and its task sent again.
    assert!(summary["restarts"].as_u64().unwrap() >= 10, "{summary}");
    assert!(summary["retries"].as_u64().unwrap() >= 10, "{summary}");
    // Every task's first LLM call must call its tool, then the model answers: two calls.
    assert!(summary["llm_calls"].as_u64().unwrap() >= 100, "{summary}");
    let tool_calls = summary["tool_calls"].as_u64().unwrap();
    assert!(tool_calls >= 50, "a tool call per task: {summary}");
    let mut per_skill = [0, 0, 0];
    for skill in ["calculate", "read"] {
        let counts = &summary["skills"][skill];
        assert_eq!(counts["tasks"], 25, "{skill}: {summary}");
        assert!(
            counts["tool_calls"].as_u64().unwrap() >= 25,
            "{skill}: {summary}"
        );
        let results = counts["tool_results_correct"].as_u64().unwrap();
        let answers = counts["answers_correct"].as_u64().unwrap();
        assert!(
            results <= counts["tool_calls"].as_u64().unwrap(),
            "{skill}: {summary}"
        );
        assert!(answers <= 25, "{skill}: {summary}");
        for (sum, n) in
            per_skill
                .iter_mut()
                .zip([counts["tool_calls"].as_u64().unwrap(), results, answers])
        {
            *sum += n;
        }
    }
    // The totals are the sums of the skills'.
    assert_eq!(
        per_skill,
        [
            tool_calls,
            summary["tool_results_correct"].as_u64().unwrap(),
            summary["answers_correct"].as_u64().unwrap()
        ],
        "{summary}"
    );
    assert!(summary["tokens_in"].as_u64().unwrap() > 0, "{summary}");
    assert!(summary["tokens_out"].as_u64().unwrap() > 0, "{summary}");
    let p50 = summary["latency_ms"]["p50"].as_u64().unwrap();
    let p99 = summary["latency_ms"]["p99"].as_u64().unwrap();
    assert!(0 < p50 && p50 <= p99, "{summary}");
}

/// `--virtual`: 12 workers addressed as virtual agents on SQLite, at most 4 active at once (the
/// coordinator asks 4 tasks at a time) — every task answered, and never more workers in memory
/// than the cap.
#[test]
fn virtual_workers_answer_every_task_with_few_active() {
    let Ok(url) = std::env::var("MOTET_LOCAL_LLM_URL") else {
        println!("skipped: MOTET_LOCAL_LLM_URL is not set (bash scripts/local-llm.sh start)");
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true, so what this test needs must be there: see the skipped line"
        );
        return;
    };
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["run", "--quiet", "--example", "swarm"]);
    if !cfg!(debug_assertions) {
        cargo.arg("--release");
    }
    cargo
        .arg("--")
        .args(["--agents", "12", "--virtual", "4", "--store", "sqlite"])
        .arg("--json")
        .env("CARGO_TARGET_DIR", target_dir())
        .env("MOTET_LOCAL_LLM_URL", url)
        .env_remove("MOTET_MODEL")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let output = cargo.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the swarm failed:\n{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let summary: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}):\n{stdout}"));
    println!("{summary}");
    assert_eq!(summary["agents"], 12);
    assert_eq!(summary["answered"], 12, "every task answered: {summary}");
    let most = summary["active_max"].as_u64().unwrap();
    assert!((1..=4).contains(&most), "at most 4 active: {summary}");
    // Every worker committed its thread: 12 tasks' threads, and the coordinator's.
    assert!(
        summary["stored_threads"].as_u64().unwrap() > 12,
        "{summary}"
    );
}
