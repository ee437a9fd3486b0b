//! The team example as a user runs it: a real process against the local llama.cpp server — the
//! supervisor's model routes the question to one of its two specialists, which answers. (Which
//! one a small model picks is its business: the route is checked for shape, not for value.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::path::PathBuf;
use std::process::Command;

/// The target folder this test was built into, so the example is built once, beside it.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

#[test]
fn the_supervisor_routes_a_question_to_a_specialist_who_answers() {
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
    cargo.args(["run", "--quiet", "--example", "team"]);
    if !cfg!(debug_assertions) {
        cargo.arg("--release");
    }
    cargo
        .args(["--", "What is 17 * 23?"])
        .env("CARGO_TARGET_DIR", target_dir())
        .env("MOTET_LOCAL_LLM_URL", url)
        .env_remove("MOTET_MODEL")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let output = cargo.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the team failed:\n{stdout}\n{stderr}"
    );
    let routed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("routed to: "))
        .collect();
    assert_eq!(routed.len(), 1, "one specialist asked:\n{stdout}");
    assert!(["calculator", "writer"].contains(&routed[0]), "{stdout}");
    let answer = stdout
        .lines()
        .find_map(|l| l.strip_prefix("answer: "))
        .unwrap_or_else(|| panic!("no answer:\n{stdout}"));
    assert!(!answer.trim().is_empty(), "{stdout}");
    assert!(stderr.contains("tokens: "), "{stderr}");
}
