//! Reading what a user hands the CLI — a file, or standard input for `-` — with a size limit,
//! so `--config /dev/zero` or `transcript -` fed without end is refused instead of filling
//! memory.

use std::io::Read;
use std::path::Path;

use crate::error::CliError;

/// The most `motet.toml` may hold.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The most a recorded stream for `motet transcript` may hold.
pub const MAX_TRANSCRIPT_BYTES: u64 = 256 << 20;
/// The most a question read from standard input (`motet run -`) may hold.
pub const MAX_QUESTION_BYTES: u64 = 16 << 20;

/// Why an input could not be read.
#[derive(Debug)]
pub enum InputError {
    /// Reading failed.
    Io(std::io::Error),
    /// It holds more than the limit (in bytes).
    TooLarge(u64),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::TooLarge(limit) => write!(f, "it holds more than {limit} bytes"),
        }
    }
}

/// The bytes of `path` (standard input for `-`), at most `limit` of them.
///
/// # Errors
/// [`InputError::Io`] when reading fails, [`InputError::TooLarge`] past `limit`.
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    let read = if path == Path::new("-") {
        std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|file| file.take(limit + 1).read_to_end(&mut bytes))
    };
    read.map_err(InputError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge(limit));
    }
    Ok(bytes)
}

/// The question `motet run` was given: the argument itself, or standard input for `-`.
///
/// # Errors
/// [`CliError::Io`] when standard input cannot be read, is too large or is not UTF-8.
pub fn question(argument: &str) -> Result<String, CliError> {
    if argument != "-" {
        return Ok(argument.to_owned());
    }
    let what = || "cannot read the question from standard input".to_owned();
    let bytes = read_capped(Path::new("-"), MAX_QUESTION_BYTES).map_err(|e| CliError::Io {
        what: what(),
        source: std::io::Error::other(e.to_string()),
    })?;
    String::from_utf8(bytes).map_err(|_| CliError::Io {
        what: what(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"),
    })
}
