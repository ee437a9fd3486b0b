//! One module per subcommand.

pub mod agents;
pub mod chat;
pub mod pending;
pub mod resume;
pub mod run;
pub mod serve;
pub mod threads;
pub mod transcript;
pub mod usage;

use std::io::Write as _;

use crate::error::CliError;

/// Writes to standard output; a reader that went away ends the command quietly
/// ([`CliError::OutputClosed`]) instead of panicking as `println!` does.
pub(crate) fn out(text: &str) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(CliError::OutputClosed),
        Err(source) => Err(CliError::Io {
            what: "cannot write to standard output".to_owned(),
            source,
        }),
    }
}
