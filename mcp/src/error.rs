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
    /// One message from the server was longer than the answer limit
    /// ([`McpServerConfig::with_max_answer_bytes`](crate::McpServerConfig::with_max_answer_bytes)).
    /// It cannot be read, so the requests waiting on the connection end at once with this
    /// error and the next request reconnects.
    #[error("mcp server `{server}`: answer larger than {limit} bytes; the connection is dropped")]
    AnswerTooLarge {
        /// The server's configured name.
        server: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// One message from the server was nested deeper than [`MAX_ANSWER_DEPTH`](crate::MAX_ANSWER_DEPTH)
    /// arrays and objects (a result, an error, or a tool schema in `tools/list`). It cannot be
    /// read, so the requests waiting on the connection end at once with this error and the
    /// next request reconnects.
    #[error(
        "mcp server `{server}`: answer nested deeper than {limit} levels; the connection is dropped"
    )]
    AnswerTooDeep {
        /// The server's configured name.
        server: String,
        /// The deepest nesting read.
        limit: usize,
    },
    /// The server's tool list could not be read to its end: too many pages or tools, or a
    /// cursor that loops.
    #[error("mcp server `{server}`: tools/list {problem}")]
    ToolList {
        /// The server's configured name.
        server: String,
        /// What went wrong.
        problem: ToolListProblem,
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
            | Self::ToolName { server, .. }
            | Self::AnswerTooLarge { server, .. }
            | Self::AnswerTooDeep { server, .. }
            | Self::ToolList { server, .. } => server,
        }
    }

    /// The same error with `r` applied to every text the server or its process wrote (or that
    /// quotes the configuration): messages, stderr tails, the last error of a backoff.
    pub(crate) fn map_texts(self, r: impl Fn(String) -> String) -> Self {
        match self {
            Self::Config { server, message } => Self::Config {
                server,
                message: r(message),
            },
            Self::Spawn {
                server,
                command,
                message,
            } => Self::Spawn {
                server,
                command,
                message: r(message),
            },
            Self::Initialize {
                server,
                message,
                stderr,
            } => Self::Initialize {
                server,
                message: r(message),
                stderr: r(stderr),
            },
            Self::ConnectTimeout {
                server,
                after,
                stderr,
            } => Self::ConnectTimeout {
                server,
                after,
                stderr: r(stderr),
            },
            Self::Closed { server, stderr } => Self::Closed {
                server,
                stderr: r(stderr),
            },
            Self::Backoff {
                server,
                retry_in,
                last_error,
            } => Self::Backoff {
                server,
                retry_in,
                last_error: r(last_error),
            },
            Self::Transport { server, message } => Self::Transport {
                server,
                message: r(message),
            },
            Self::Server {
                server,
                code,
                message,
            } => Self::Server {
                server,
                code,
                message: r(message),
            },
            Self::Protocol { server, message } => Self::Protocol {
                server,
                message: r(message),
            },
            Self::ToolName {
                server,
                tool,
                reason,
            } => Self::ToolName {
                server,
                tool: r(tool),
                reason: r(reason),
            },
            // Names and numbers of motet's own: nothing a server wrote.
            other @ (Self::MissingEnv { .. }
            | Self::InvalidHeader { .. }
            | Self::AnswerTooLarge { .. }
            | Self::AnswerTooDeep { .. }
            | Self::ToolList { .. }) => other,
        }
    }
}

/// Why a server's tool list could not be read to its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolListProblem {
    /// More pages than [`McpServerConfig::with_max_tool_pages`](crate::McpServerConfig::with_max_tool_pages) allows.
    #[error("gave more than {limit} pages")]
    TooManyPages {
        /// The page limit.
        limit: usize,
    },
    /// More tools than [`McpServerConfig::with_max_tools`](crate::McpServerConfig::with_max_tools) allows.
    #[error("gave more than {limit} tools")]
    TooManyTools {
        /// The tool limit.
        limit: usize,
    },
    /// A page named, as the next one, a cursor the listing had already followed: it would
    /// never end.
    #[error("gave page {page} a cursor that repeats an earlier page's")]
    RepeatedCursor {
        /// The page (counted from 1) whose `nextCursor` repeats.
        page: usize,
    },
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
