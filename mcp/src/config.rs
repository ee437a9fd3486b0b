//! How to reach an MCP server: [`McpServerConfig`], built in code or read from `motet.toml`.

use std::path::PathBuf;
use std::time::Duration;

use crate::McpError;

/// How long connecting (start, `initialize`, first tool listing) may take unless configured.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The wait before the first retry after a failed start; it doubles with each further failure.
pub const DEFAULT_BACKOFF_INITIAL: Duration = Duration::from_millis(500);

/// The longest wait between two failed starts.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// The most `tools/list` pages read in one listing unless configured: a server whose cursor
/// never ends is stopped there rather than filling memory.
pub const DEFAULT_MAX_TOOL_PAGES: usize = 100;

/// The most tools one listing may give unless configured.
pub const DEFAULT_MAX_TOOLS: usize = 1000;

/// The longest single message read from a server unless configured, in bytes: 16 MiB, the
/// SDK's own line limit (stdio) and JSON body limit (HTTP).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The longest server name: with its `_` it leaves 32 characters of a motet tool name for the
/// server's own tool name.
pub const MAX_SERVER_NAME: usize = 31;

/// One MCP server: its name, how to reach it, and how its tools are named in motet.
///
/// ```
/// use motet_mcp::McpServerConfig;
///
/// let local = McpServerConfig::stdio("files", "npx")
///     .arg("-y")
///     .arg("@modelcontextprotocol/server-filesystem")
///     .arg("/tmp");
/// let remote = McpServerConfig::http("search", "https://mcp.example.com/mcp")
///     .header("Authorization", "Bearer ${SEARCH_TOKEN}");
/// assert_eq!(local.tool_prefix(), Some("files_"));
/// assert_eq!(remote.name(), "search");
/// ```
#[derive(Clone)]
pub struct McpServerConfig {
    name: String,
    transport: McpTransport,
    tool_prefix: Option<String>,
    connect_timeout: Duration,
    backoff_initial: Duration,
    backoff_max: Duration,
    max_tool_pages: usize,
    max_tools: usize,
    max_answer_bytes: usize,
}

/// How the server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio(StdioServer),
    /// A Streamable HTTP endpoint.
    Http(HttpServer),
}

/// A server run as a child process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioServer {
    /// The program (looked up on `PATH` when it has no `/`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the environment it inherits.
    pub env: Vec<(String, String)>,
    /// Its working directory (default: motet's).
    pub cwd: Option<PathBuf>,
}

/// A server reached over Streamable HTTP.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpServer {
    /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    pub url: String,
    /// Headers sent with every request. A value may name environment variables as `${VAR}`,
    /// read when connecting, so a token never has to be written into a file.
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values may be literal secrets: only their names are shown.
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("HttpServer")
            .field("url", &self.url)
            .field("headers", &names)
            .finish()
    }
}

impl std::fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("tool_prefix", &self.tool_prefix)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_tool_pages", &self.max_tool_pages)
            .field("max_tools", &self.max_tools)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .finish()
    }
}

impl McpServerConfig {
    fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        let name = name.into();
        Self {
            tool_prefix: Some(format!("{name}_")),
            name,
            transport,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            backoff_initial: DEFAULT_BACKOFF_INITIAL,
            backoff_max: DEFAULT_BACKOFF_MAX,
            max_tool_pages: DEFAULT_MAX_TOOL_PAGES,
            max_tools: DEFAULT_MAX_TOOLS,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }

    /// A server started as `command` (its tools are named `<name>_<tool>`).
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Stdio(StdioServer {
                command: command.into(),
                args: Vec::new(),
                env: Vec::new(),
                cwd: None,
            }),
        )
    }

    /// A server at a Streamable HTTP endpoint (its tools are named `<name>_<tool>`).
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http(HttpServer {
                url: url.into(),
                headers: Vec::new(),
            }),
        )
    }

    /// Adds an argument (stdio servers; ignored for HTTP).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        if let McpTransport::Stdio(stdio) = &mut self.transport {
            stdio.args.push(arg.into());
        }
        self
    }

    /// Adds arguments (stdio servers; ignored for HTTP).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let McpTransport::Stdio(stdio) = &mut self.transport {
            stdio.args.extend(args.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable for the process (stdio servers; ignored for HTTP).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio(stdio) = &mut self.transport {
            stdio.env.push((key.into(), value.into()));
        }
        self
    }

    /// Sets the process's working directory (stdio servers; ignored for HTTP).
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio(stdio) = &mut self.transport {
            stdio.cwd = Some(cwd.into());
        }
        self
    }

    /// Adds a header sent with every request (HTTP servers; ignored for stdio). `${VAR}` in the
    /// value is replaced by the environment variable `VAR` when connecting.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http(http) = &mut self.transport {
            http.headers.push((name.into(), value.into()));
        }
        self
    }

    /// Names the server's tools `<prefix><tool>` in motet (default `<name>_`).
    pub fn with_tool_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.tool_prefix = Some(prefix.into());
        self
    }

    /// Keeps the server's tool names as they are (two servers' tools may then clash).
    pub fn without_tool_prefix(mut self) -> Self {
        self.tool_prefix = None;
        self
    }

    /// How long starting the server, its `initialize` handshake and the first tool listing
    /// may take (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The wait after a failed start (doubling with each further failure) and its ceiling
    /// (defaults [`DEFAULT_BACKOFF_INITIAL`], [`DEFAULT_BACKOFF_MAX`]).
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff_initial = initial;
        self.backoff_max = max.max(initial);
        self
    }

    /// The most `tools/list` pages one listing reads (default [`DEFAULT_MAX_TOOL_PAGES`]);
    /// a server that gives more fails the listing with [`McpError::ToolList`].
    pub fn with_max_tool_pages(mut self, pages: usize) -> Self {
        self.max_tool_pages = pages.max(1);
        self
    }

    /// The most tools one listing may give (default [`DEFAULT_MAX_TOOLS`]); a server that
    /// gives more fails the listing with [`McpError::ToolList`].
    pub fn with_max_tools(mut self, tools: usize) -> Self {
        self.max_tools = tools;
        self
    }

    /// The longest single message read from the server, in bytes (default
    /// [`DEFAULT_MAX_ANSWER_BYTES`]); a longer one ends the requests waiting on the connection
    /// at once with [`McpError::AnswerTooLarge`].
    pub fn with_max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    /// The page limit of a tool listing.
    pub fn max_tool_pages(&self) -> usize {
        self.max_tool_pages
    }

    /// The tool limit of a tool listing.
    pub fn max_tools(&self) -> usize {
        self.max_tools
    }

    /// The answer size limit, in bytes.
    pub fn max_answer_bytes(&self) -> usize {
        self.max_answer_bytes
    }

    /// The server's name (in tool names, errors and spans).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the server is reached.
    pub fn transport(&self) -> &McpTransport {
        &self.transport
    }

    /// What its tools' names start with in motet, if anything.
    pub fn tool_prefix(&self) -> Option<&str> {
        self.tool_prefix.as_deref()
    }

    /// The connect time limit.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// How long to wait before starting again after `failures` failed starts in a row.
    pub fn backoff(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let doublings = (failures - 1).min(20);
        self.backoff_initial
            .saturating_mul(1u32 << doublings)
            .min(self.backoff_max)
    }

    /// Checks what can be checked before connecting.
    ///
    /// # Errors
    /// [`McpError::Config`] for a name that is not 1 to [`MAX_SERVER_NAME`] of
    /// `a-z A-Z 0-9 _ -`, a prefix with other characters, an empty command or URL.
    pub fn validate(&self) -> Result<(), McpError> {
        let fail = |message: String| {
            Err(McpError::Config {
                server: self.name.clone(),
                message,
            })
        };
        if !(1..=MAX_SERVER_NAME).contains(&self.name.len()) || !is_name_text(&self.name) {
            return fail(format!(
                "the name must be 1 to {MAX_SERVER_NAME} of a-z, A-Z, 0-9, `_` or `-`"
            ));
        }
        if let Some(prefix) = &self.tool_prefix
            && (prefix.len() > 63 || !is_name_text(prefix))
        {
            return fail("the tool prefix must be at most 63 of a-z, A-Z, 0-9, `_` or `-`".into());
        }
        match &self.transport {
            McpTransport::Stdio(stdio) if stdio.command.trim().is_empty() => {
                fail("the command is empty".into())
            }
            McpTransport::Http(http)
                if !(http.url.starts_with("http://") || http.url.starts_with("https://")) =>
            {
                fail(format!("the url `{}` is not http:// or https://", http.url))
            }
            _ => Ok(()),
        }
    }
}

/// True when every character may appear in a motet tool name.
pub(crate) fn is_name_text(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Replaces each `${VAR}` in `template` with the variable's value, read through `lookup`.
/// Text without `${` is returned as is; an unclosed `${` is kept literally.
///
/// # Errors
/// The name of the first variable `lookup` does not know.
pub(crate) fn expand_env(
    template: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        let var = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        out.push_str(&lookup(var).ok_or_else(|| var.to_owned())?);
        rest = &rest[start + 2 + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_ceiling() {
        let config = McpServerConfig::stdio("s", "x")
            .with_backoff(Duration::from_millis(100), Duration::from_millis(700));
        let waits: Vec<u128> = (0..6).map(|n| config.backoff(n).as_millis()).collect();
        assert_eq!(waits, [0, 100, 200, 400, 700, 700]);
        assert_eq!(config.backoff(u32::MAX), Duration::from_millis(700));
    }

    #[test]
    fn env_expansion_reads_each_variable() {
        let lookup = |var: &str| (var == "TOKEN").then(|| "abc".to_owned());
        assert_eq!(
            expand_env("Bearer ${TOKEN}", lookup),
            Ok("Bearer abc".into())
        );
        assert_eq!(
            expand_env("${TOKEN}-${TOKEN}", lookup),
            Ok("abc-abc".into())
        );
        assert_eq!(expand_env("plain", lookup), Ok("plain".into()));
        assert_eq!(
            expand_env("open ${TOKEN", lookup),
            Ok("open ${TOKEN".into())
        );
        assert_eq!(expand_env("${MISSING}", lookup), Err("MISSING".into()));
    }

    #[test]
    fn validation_names_what_is_wrong() {
        assert!(
            McpServerConfig::stdio("ok-name_1", "node")
                .validate()
                .is_ok()
        );
        for bad in [
            McpServerConfig::stdio("", "node"),
            McpServerConfig::stdio("has space", "node"),
            McpServerConfig::stdio("a".repeat(32), "node"),
            McpServerConfig::stdio("s", "  "),
            McpServerConfig::http("s", "ftp://x"),
            McpServerConfig::stdio("s", "node").with_tool_prefix("a.b"),
        ] {
            assert!(
                matches!(bad.validate(), Err(McpError::Config { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn debug_never_shows_header_values() {
        let config = McpServerConfig::http("s", "https://x").header("Authorization", "secret");
        let shown = format!("{config:?}");
        assert!(shown.contains("Authorization"));
        assert!(!shown.contains("secret"));
    }
}
