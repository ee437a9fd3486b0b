//! A recorded SSE response body turned into its [`LlmResponse`], offline: the path every
//! stream takes (SSE framing → dialect decoder → block assembler, within the default
//! [`Limits`]) without the HTTP around it.
//! The conformance tests and the `motet-transcript` tool use it.

use motet_directives::LlmResponse;

use crate::assembler::BlockAssembler;
use crate::body::BodyDecoder;
use crate::config::Limits;
use crate::dialect::Dialect;
use crate::error::ProviderError;
use crate::event::LlmEvent;

/// Assembles a whole response body.
///
/// # Errors
/// The typed error the stream carries or causes.
pub fn assemble(dialect: Dialect, body: &[u8]) -> Result<LlmResponse, ProviderError> {
    assemble_chunked(dialect, [body])
}

/// Assembles a response body delivered in pieces, as a socket would deliver it.
///
/// # Errors
/// The typed error the stream carries or causes.
pub fn assemble_chunked<'a>(
    dialect: Dialect,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<LlmResponse, ProviderError> {
    let (events, end) = decode_events(dialect, chunks);
    end?;
    let mut assembler = BlockAssembler::new();
    for event in events {
        assembler.push(event)?;
    }
    Ok(assembler.finish()?)
}

/// The [`LlmEvent`]s of a response body, and how decoding ended: the events decoded before
/// an error are kept.
pub fn decode_events<'a>(
    dialect: Dialect,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<LlmEvent>, Result<(), ProviderError>) {
    let mut body = BodyDecoder::new(dialect, Limits::default());
    let run = || {
        for chunk in chunks {
            body.push(chunk)?;
        }
        body.finish()
    };
    let end = run().map_err(ProviderError::redacted);
    (body.take_events(), end)
}
