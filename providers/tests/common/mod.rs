//! What the providers' recording tests share: a fixture's bytes, and what `motet-transcript`
//! prints for one.

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(clippy::unwrap_used, clippy::panic)] // a failed expectation is a failed test

pub(crate) mod hosted;

use serde_json::Value;

/// The recordings' folder.
pub(crate) const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// The bytes of the fixture at `path` (below tests/fixtures).
pub(crate) fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What `motet-transcript --dialect <dialect>` prints for the fixture at `path`, as JSON; a
/// run that fails fails the test with what the tool wrote to stderr.
pub(crate) fn transcript_json(dialect: &str, path: &str) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_motet-transcript"))
        .args(["--dialect", dialect, &format!("{FIXTURES}/{path}")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What a test does when a server it needs is missing, `reason` saying which and how to start
/// it: under `CI=true` (scripts/test.sh starts every server) the test fails; elsewhere it
/// prints `skipped: {reason}` and the caller returns. (The same as
/// `motet_runtime::testing::missing`, which this crate's tests cannot reach.)
pub(crate) fn missing(reason: &str) {
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "CI=true, and this test needs what is missing: {reason}"
    );
    println!("skipped: {reason}");
}
