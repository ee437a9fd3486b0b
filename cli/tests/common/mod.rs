//! What the CLI's integration tests share.

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(clippy::unwrap_used)] // a failed expectation is a failed test

/// Variables that would let a test reach a real provider, pick a model by itself, change its
/// limits or export its traces: cleared for every `motet` a test runs.
pub(crate) const CLEARED_VARS: [&str; 23] = [
    "MOTET_DATABASE_URL",
    "XDG_CACHE_HOME",
    "MOTET_MODEL",
    "MOTET_LOCAL_LLM_URL",
    "MOTET_OPENAI_COMPAT_BASE_URL",
    "MOTET_OPENAI_COMPAT_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
    "XDG_DATA_HOME",
    "HOME",
    "MOTET_CONNECT_TIMEOUT",
    "MOTET_FIRST_BYTE_TIMEOUT",
    "MOTET_IDLE_TIMEOUT",
    "MOTET_INITIAL_BACKOFF",
    "MOTET_MAX_BACKOFF",
    "MOTET_MAX_RETRIES",
    "MOTET_MAX_RESPONSE_BYTES",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The `motet` binary run in `dir` (its HOME too), with none of [`CLEARED_VARS`] and no local
/// server looked for on this machine's usual ports (`MOTET_LOCAL_LLM_URL` set, and empty);
/// standard input closed.
pub(crate) fn motet_in(dir: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_motet"));
    for var in CLEARED_VARS {
        command.env_remove(var);
    }
    command
        .env("MOTET_LOCAL_LLM_URL", "")
        .env("HOME", dir)
        .current_dir(dir)
        .stdin(std::process::Stdio::null());
    command
}

/// Runs `command` to its end.
pub(crate) fn run(mut command: std::process::Command) -> std::process::Output {
    command.output().unwrap()
}

/// What the process wrote on stdout, as text.
pub(crate) fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What the process wrote on stderr, as text.
pub(crate) fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
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
