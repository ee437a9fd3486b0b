//! `motet transcript`: what motet makes of a recorded SSE stream (the library's
//! `motet_providers::transcript`, as `motet-transcript` uses it).

use std::path::Path;

use motet::providers::{Dialect, transcript};

use crate::error::CliError;
use crate::input::{InputError, MAX_TRANSCRIPT_BYTES, read_capped};

/// Assembles the stream in `file` (`-`: standard input) and prints the response as JSON.
///
/// # Errors
/// [`CliError::Io`] when the file cannot be read, [`CliError::Transcript`] for an unknown
/// dialect or a stream motet rejects (with the typed error).
pub fn run(dialect: &str, file: &Path) -> Result<(), CliError> {
    let dialect: Dialect = dialect
        .parse()
        .map_err(|e: motet::providers::ProviderError| CliError::Transcript(e.to_string()))?;
    let body = read_capped(file, MAX_TRANSCRIPT_BYTES).map_err(|e| CliError::Io {
        what: format!("cannot read {}", file.display()),
        source: match e {
            InputError::Io(source) => source,
            too_large => std::io::Error::other(too_large.to_string()),
        },
    })?;
    let response = transcript::assemble(dialect, &body)
        .map_err(|e| CliError::Transcript(format!("the stream was rejected: {e} ({e:?})")))?;
    let json = serde_json::to_string_pretty(&response)
        .map_err(|e| CliError::Transcript(format!("cannot print the response: {e}")))?;
    println!("{json}");
    Ok(())
}
