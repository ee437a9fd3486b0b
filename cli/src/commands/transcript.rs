//! `motet transcript`: what motet makes of a recorded SSE stream (the library's
//! `motet_providers::transcript`, as `motet-transcript` uses it).

use std::path::Path;

use motet::providers::{Dialect, transcript};

use crate::error::CliError;

/// Assembles the stream in `file` (`-`: standard input) and prints the response as JSON.
///
/// # Errors
/// [`CliError::Io`] when the file cannot be read, [`CliError::Transcript`] for an unknown
/// dialect or a stream motet rejects (with the typed error).
pub fn run(dialect: &str, file: &Path) -> Result<(), CliError> {
    let dialect: Dialect = dialect
        .parse()
        .map_err(|e: motet::providers::ProviderError| CliError::Transcript(e.to_string()))?;
    let body = if file == Path::new("-") {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map(|_| buf)
    } else {
        std::fs::read(file)
    }
    .map_err(|source| CliError::Io {
        what: format!("cannot read {}", file.display()),
        source,
    })?;
    let response = transcript::assemble(dialect, &body)
        .map_err(|e| CliError::Transcript(format!("the stream was rejected: {e} ({e:?})")))?;
    let json = serde_json::to_string_pretty(&response)
        .map_err(|e| CliError::Transcript(format!("cannot print the response: {e}")))?;
    println!("{json}");
    Ok(())
}
