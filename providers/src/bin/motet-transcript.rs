//! `motet-transcript --dialect <openai-chat|openai-responses|anthropic|gemini> FILE`
//!
//! Parses a recorded SSE response body and prints the assembled `LlmResponse` as JSON, or the
//! typed error on stderr with exit code 1. Reach for it when a provider stream misbehaves:
//! save the body (`curl -N … > stream.sse`) and look at what motet makes of it.

use std::process::ExitCode;

use motet_providers::{Dialect, transcript};

const USAGE: &str =
    "usage: motet-transcript --dialect <openai-chat|openai-responses|anthropic|gemini> FILE

Parses a recorded server-sent-event response body (`-` reads standard input) and prints the
assembled response as JSON: blocks in order (block_type text / reasoning / tool_use / opaque,
with any provider meta; an opaque block is a provider item kept as received), stop_reason,
usage, model and response id. A stream motet cannot accept prints its typed error and exits
with 1; bad arguments exit with 2.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dialect, file) = match parse(&args) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("motet-transcript: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let body = match read_capped(&file) {
        Ok(body) => body,
        Err(e) => {
            eprintln!("motet-transcript: cannot read {file}: {e}");
            return ExitCode::from(2);
        }
    };
    match transcript::assemble(dialect, &body) {
        Ok(response) => match serde_json::to_string_pretty(&response) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("motet-transcript: cannot print the response: {e}");
                ExitCode::from(1)
            }
        },
        Err(error) => {
            eprintln!("error: {error}");
            eprintln!("{error:?}");
            ExitCode::from(1)
        }
    }
}

/// The most a recorded body may hold, as `motet transcript` allows: a stream is never this
/// long, and an endless input (`/dev/zero`) must not take the machine's memory.
const MAX_BODY_BYTES: u64 = 256 << 20;

/// `file` (`-`: standard input), refused past [`MAX_BODY_BYTES`].
fn read_capped(file: &str) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut body = Vec::new();
    if file == "-" {
        std::io::stdin()
            .take(MAX_BODY_BYTES + 1)
            .read_to_end(&mut body)?;
    } else {
        std::fs::File::open(file)?
            .take(MAX_BODY_BYTES + 1)
            .read_to_end(&mut body)?;
    }
    if body.len() as u64 > MAX_BODY_BYTES {
        return Err(std::io::Error::other(format!(
            "more than {} MiB: not a recorded response body",
            MAX_BODY_BYTES >> 20
        )));
    }
    Ok(body)
}

/// `Ok(None)` asks for help.
fn parse(args: &[String]) -> Result<Option<(Dialect, String)>, String> {
    let mut dialect = None;
    let mut file = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--dialect" => {
                let name = rest.next().ok_or("--dialect needs a value")?;
                dialect = Some(name.parse::<Dialect>().map_err(|e| e.to_string())?);
            }
            other if other.starts_with("--dialect=") => {
                let name = &other["--dialect=".len()..];
                dialect = Some(name.parse::<Dialect>().map_err(|e| e.to_string())?);
            }
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            other => {
                if file.replace(other.to_owned()).is_some() {
                    return Err("one FILE only".to_owned());
                }
            }
        }
    }
    let dialect = dialect.ok_or("--dialect is required")?;
    let file = file.ok_or("FILE is required")?;
    Ok(Some((dialect, file)))
}
