//! One module per subcommand.

pub mod chat;
pub mod pending;
pub mod resume;
pub mod run;
pub mod threads;
pub mod transcript;
pub mod usage;
