//! The library behind the `motet` command line: settings, the `cli` agent, the built-in
//! calculator tool, rendering, and one module per subcommand. `src/main.rs` holds the
//! command-line grammar and calls into it. See docs/cli.md.
//!
//! # Layout
//! - [`config`] — `motet.toml`, the environment and flags, resolved into [`config::Settings`].
//! - [`db`] — which thread store (`--db`, `MOTET_DATABASE_URL`, ...), opened and locked.
//! - [`agent`] — the `cli` agent over the thread store; thread ids as users type them.
//! - [`calculator`] — the built-in tool.
//! - [`render`] — entries and thread lists as text.
//! - [`escape`] — control characters in model text and ids shown, not obeyed by the terminal.
//! - [`commands`] — one module per subcommand.
//! - [`follow`] — a request followed until it has its answer or waits for a person.
//! - [`error`] — [`error::CliError`] and its exit codes.
//! - [`input`] — files and standard input, read with a size limit.

pub mod agent;
pub mod calculator;
pub mod commands;
pub mod config;
pub mod db;
pub mod error;
pub mod escape;
pub mod follow;
pub mod input;
pub mod lock;
pub mod progress;
pub mod render;
