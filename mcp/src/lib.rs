//! MCP servers' tools as motet tools, through the official MCP Rust SDK ([`rmcp`]).
//!
//! Configure a server ([`McpServerConfig`]: a stdio command or a Streamable HTTP URL),
//! [`connect`](McpClient::connect), and add its [`tools`](McpClient::tools) to a `ToolSet`:
//! each is an ordinary [`Tool`](motet_runtime::tool::Tool), so the set's allowlist, time limit,
//! output limit and spans apply to it.
//!
//! ```no_run
//! use motet_mcp::{McpClient, McpServerConfig};
//! use motet_runtime::tool::ToolSet;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = McpServerConfig::stdio("everything", "npx")
//!     .args(["-y", "@modelcontextprotocol/server-everything"]);
//! let server = McpClient::connect(config).await?;
//! let mut tools = ToolSet::builder();
//! for tool in server.tools().await? {
//!     tools = tools.tool(tool);
//! }
//! let tools = tools.build()?; // everything_echo, everything_get-sum, ...
//! # Ok(())
//! # }
//! ```
//!
//! Faults stay typed and local: a server that exits or crashes is restarted by the next call
//! (with backoff when starting fails), a call that hangs is cut by the `ToolSet`'s time limit
//! without wedging later calls, and whatever a server writes becomes a [`McpError`] or an
//! error result — never a panic. Configured header and environment values never reach an
//! error text, a tool listing is bounded in pages and tools, and an answer too long or too
//! deep to read fails its request at once. See docs/mcp.md.
//!
//! # Layout
//! - `config` — [`McpServerConfig`], [`McpTransport`]: how to reach a server, tool naming.
//! - `client` — [`McpClient`]: connect, supervise and restart, list tools, call.
//! - `tool` — [`McpTool`]: one server tool as a motet tool.
//! - `content` — [`render`](content::render): a tool result as the text the model reads.
//! - `naming` — server tool names as motet tool names.
//! - `guard` — a stdio server's output, cut off at the first message too long or too deep.
//! - `redact` — configured secrets kept out of error texts.
//! - `error` — [`McpError`].

mod client;
mod config;
pub mod content;
mod error;
mod guard;
mod naming;
mod redact;
mod tool;

pub use client::{HEALTH_CHECK_TIMEOUT, McpClient};
pub use config::{
    DEFAULT_BACKOFF_INITIAL, DEFAULT_BACKOFF_MAX, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_TOOL_PAGES, DEFAULT_MAX_TOOLS, HttpServer,
    MAX_SERVER_NAME, McpServerConfig, McpTransport, StdioServer,
};
pub use error::{McpError, ToolListProblem};
pub use guard::MAX_ANSWER_DEPTH;
pub use redact::MIN_SECRET_LEN;
pub use tool::McpTool;

/// The MCP SDK motet uses, for its result and content types.
pub use rmcp;
