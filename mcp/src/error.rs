//! What can go wrong between motet and an MCP server.

use std::time::Duration;

/// Why an MCP server could not be reached, or did not answer a request.
///
/// Every variant names the server (its configured name) and reads as a lowercase sentence: a
/// tool call that fails this way reaches the model as an error result with this text. It is
/// `Clone + PartialEq` because failures travel as data; sources are kept as their messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration cannot work (an empty command, a name that is not a valid prefix, ...).
    #[error("mcp server `{server}`: invalid configuration: {message}")]
    Config {
        /// The server's configured name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// A header value is to be read from an environment variable that is not set.
    #[error(
        "mcp server `{server}`: header `{header}` reads environment variable `{var}`, which is not set"
    )]
    MissingEnv {
        /// The server's configured name.
        server: String,
        /// The header.
        header: String,
        /// The environment variable.
        var: String,
    },
    /// A header name or value HTTP does not allow.
    #[error("mcp server `{server}`: invalid header `{header}`: {message}")]
    InvalidHeader {
        /// The server's configured name.
        server: String,
        /// The header.
        header: String,
        /// Why it is invalid (the value itself is never shown: it may be a secret).
        message: String,
    },
    /// The stdio server's process could not be started.
    #[error("mcp server `{server}`: could not start `{command}`: {message}")]
    Spawn {
        /// The server's configured name.
        server: String,
        /// The command.
        command: String,
        /// The operating system's message.
        message: String,
    },
    /// The connection was made but the MCP handshake (`initialize`) failed.
    #[error(
        "mcp server `{server}`: initialization failed: {message}{}",
        Stderr(stderr)
    )]
    Initialize {
        /// The server's configured name.
        server: String,
        /// The SDK's message.
        message: String,
        /// The last lines the stdio server wrote to stderr (empty for HTTP).
        stderr: String,
    },
    /// The server did not finish the handshake (or its first tool listing) in time: it hung,
    /// or wrote something other than MCP messages.
    #[error(
        "mcp server `{server}`: no answer to initialization within {after:?}{}",
        Stderr(stderr)
    )]
    ConnectTimeout {
        /// The server's configured name.
        server: String,
        /// The time limit that ran out.
        after: Duration,
        /// The last lines the stdio server wrote to stderr (empty for HTTP).
        stderr: String,
    },
    /// The connection ended (the server exited, crashed or closed the stream) before the
    /// answer came. The next request restarts the server.
    #[error(
        "mcp server `{server}`: the connection closed before the answer came{}",
        Stderr(stderr)
    )]
    Closed {
        /// The server's configured name.
        server: String,
        /// The last lines the stdio server wrote to stderr (empty for HTTP).
        stderr: String,
    },
    /// The server failed to start recently; it is not retried until the backoff has passed.
    #[error("mcp server `{server}` is unavailable (retrying in {retry_in:?}): {last_error}")]
    Backoff {
        /// The server's configured name.
        server: String,
        /// How long until the next attempt.
        retry_in: Duration,
        /// Why the last attempt failed.
        last_error: String,
    },
    /// The transport failed to send the request (an HTTP error, a broken pipe).
    #[error("mcp server `{server}`: transport error: {message}")]
    Transport {
        /// The server's configured name.
        server: String,
        /// The SDK's message.
        message: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("mcp server `{server}` answered with error {code}: {message}")]
    Server {
        /// The server's configured name.
        server: String,
        /// The JSON-RPC error code (-32602: invalid params, -32601: unknown method, ...).
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The server answered with something that is not the expected MCP result.
    #[error("mcp server `{server}`: unexpected answer: {message}")]
    Protocol {
        /// The server's configured name.
        server: String,
        /// What was wrong with it.
        message: String,
    },
    /// A server tool whose name cannot become a motet tool name.
    #[error("mcp server `{server}`: tool `{tool}` is not offered: {reason}")]
    ToolName {
        /// The server's configured name.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// Why (too long once prefixed, or the same motet name as another tool).
        reason: String,
    },
}

impl McpError {
    /// The configured name of the server the error is about.
    pub fn server(&self) -> &str {
        match self {
            Self::Config { server, .. }
            | Self::MissingEnv { server, .. }
            | Self::InvalidHeader { server, .. }
            | Self::Spawn { server, .. }
            | Self::Initialize { server, .. }
            | Self::ConnectTimeout { server, .. }
            | Self::Closed { server, .. }
            | Self::Backoff { server, .. }
            | Self::Transport { server, .. }
            | Self::Server { server, .. }
            | Self::Protocol { server, .. }
            | Self::ToolName { server, .. } => server,
        }
    }
}

/// Renders a stderr tail after an error message, when there is one.
struct Stderr<'a>(&'a str);

impl std::fmt::Display for Stderr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "; its stderr ends with: {}", self.0)
        }
    }
}
