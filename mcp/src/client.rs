//! The client of one MCP server: connects, supervises (restarts a dead server on the next
//! request, with backoff), keeps the server's tool list, and calls tools.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation};
use rmcp::service::{
    ClientInitializeError, NotificationContext, Peer, RoleClient, RunningService, ServiceError,
    serve_client,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, model};
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::McpError;
use crate::config::{HttpServer, McpServerConfig, McpTransport, StdioServer, expand_env};
use crate::naming::motet_name;
use crate::tool::McpTool;

/// How many of the stdio server's last stderr lines an error message quotes.
const STDERR_LINES: usize = 8;

/// How long the `ping` that checks a connection after an abandoned call may take. Short, so
/// the check and a reconnect fit in the next call's time limit.
pub const HEALTH_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection to one MCP server, shared by every tool it offers. Cheap to clone.
///
/// Requests go to the live connection; when there is none (the server exited, crashed, or
/// the HTTP session broke), the next request starts a new one. A start that fails is not
/// retried before a backoff has passed ([`McpServerConfig::with_backoff`]); requests in the
/// meantime fail at once with [`McpError::Backoff`].
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: McpServerConfig,
    /// The live connection and the restart bookkeeping. Held across a (re)start so that
    /// concurrent requests wait for one start rather than each starting a server.
    conn: tokio::sync::Mutex<Conn>,
    catalog: RwLock<Catalog>,
    /// Set by `notifications/tools/list_changed` and by every (re)start.
    stale: Arc<AtomicBool>,
    /// Counts tool list changes, for embedders that rebuild their tool set.
    changes: Arc<watch::Sender<u64>>,
    /// The generation of a connection on which a call was abandoned (dropped unfinished,
    /// e.g. by the tool set's time limit); 0 when none. The next request pings it first.
    suspect: AtomicU64,
}

/// Marks the connection suspect when a call is dropped before it finished.
struct Abandoned<'a> {
    inner: &'a Inner,
    generation: u64,
    finished: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.inner.suspect.store(self.generation, Ordering::Release);
        }
    }
}

#[derive(Default)]
struct Conn {
    live: Option<Live>,
    /// Counts connections made, so that a failed request retires its own connection and
    /// never a newer one.
    generation: u64,
    /// Failed starts in a row.
    failures: u32,
    /// No start before this instant (after a failed start).
    retry_at: Option<Instant>,
    last_error: Option<McpError>,
}

struct Live {
    service: RunningService<RoleClient, Handler>,
    pid: Option<u32>,
    stderr: StderrTail,
}

impl Live {
    fn is_up(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }
}

/// The server's tools as last listed.
#[derive(Default)]
struct Catalog {
    tools: Vec<Arc<ToolSpec>>,
    refused: Vec<McpError>,
}

/// One server tool as motet offers it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    pub(crate) motet_name: String,
    pub(crate) remote_name: String,
    pub(crate) description: String,
    pub(crate) parameters: serde_json::Value,
    pub(crate) idempotent: bool,
}

/// Answers the server's notifications: a tool list change marks the list stale.
struct Handler {
    server: String,
    stale: Arc<AtomicBool>,
    changes: Arc<watch::Sender<u64>>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "mcp tool list changed");
        self.stale.store(true, Ordering::Release);
        self.changes.send_modify(|generation| *generation += 1);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            model::ClientCapabilities::default(),
            Implementation::new("motet", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// The last lines a stdio server wrote to stderr (they explain most failed starts).
#[derive(Clone, Default)]
struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn text(&self) -> String {
        match self.0.lock() {
            Ok(lines) => lines.iter().cloned().collect::<Vec<_>>().join(" | "),
            Err(_) => String::new(),
        }
    }

    fn follow(&self, server: String, stderr: tokio::process::ChildStderr) {
        let tail = self.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %server, "mcp server stderr: {line}");
                if let Ok(mut kept) = tail.0.lock() {
                    if kept.len() == STDERR_LINES {
                        kept.pop_front();
                    }
                    kept.push_back(line);
                }
            }
        });
    }
}

impl McpClient {
    /// Connects to the server and lists its tools: a server that cannot start fails here,
    /// not at the model's first call.
    ///
    /// # Errors
    /// Every [`McpError`] of starting, initializing or listing.
    pub async fn connect(config: McpServerConfig) -> Result<Self, McpError> {
        config.validate()?;
        let client = Self {
            inner: Arc::new(Inner {
                config,
                conn: tokio::sync::Mutex::new(Conn::default()),
                catalog: RwLock::new(Catalog::default()),
                stale: Arc::new(AtomicBool::new(true)),
                changes: Arc::new(watch::channel(0).0),
                suspect: AtomicU64::new(0),
            }),
        };
        client.refresh_tools().await?;
        Ok(client)
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.inner.config
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        self.inner.config.name()
    }

    /// The server's tools as motet tools, listing them again first when the server said its
    /// list changed (or it was restarted). Add them to a `ToolSet` like any tool.
    ///
    /// # Errors
    /// When the list had to be fetched and could not be.
    pub async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        if self.inner.stale.load(Ordering::Acquire) {
            self.refresh_tools().await?;
        }
        let catalog = self.read_catalog();
        Ok(catalog
            .tools
            .iter()
            .map(|spec| McpTool::new(self.clone(), Arc::clone(spec)))
            .collect())
    }

    /// The server tools that are not offered because their names cannot be motet names
    /// (too long once prefixed, or clashing with another after mapping).
    pub fn refused_tools(&self) -> Vec<McpError> {
        self.read_catalog().refused.clone()
    }

    /// Lists the server's tools again, every page.
    ///
    /// # Errors
    /// Every [`McpError`] of reaching the server and of the `tools/list` request.
    pub async fn refresh_tools(&self) -> Result<(), McpError> {
        let (peer, generation) = self.peer().await?;
        // Cleared before listing: a change announced while the list is in flight marks it
        // stale again, so it is not lost.
        self.inner.stale.store(false, Ordering::Release);
        let limit = self.inner.config.connect_timeout();
        let listed = match tokio::time::timeout(limit, peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(error)) => {
                self.inner.stale.store(true, Ordering::Release);
                return Err(self.failed(error, generation).await);
            }
            Err(_) => {
                self.inner.stale.store(true, Ordering::Release);
                return Err(McpError::Protocol {
                    server: self.name().to_owned(),
                    message: format!("no answer to tools/list within {limit:?}"),
                });
            }
        };
        let catalog = build_catalog(&self.inner.config, listed);
        for refused in &catalog.refused {
            tracing::warn!(server = %self.name(), "{refused}");
        }
        match self.inner.catalog.write() {
            Ok(mut current) => *current = catalog,
            Err(poisoned) => *poisoned.into_inner() = catalog,
        }
        Ok(())
    }

    /// A receiver whose value changes each time the server announces a new tool list: an
    /// embedder that wants new tools rebuilds its `ToolSet` from [`tools`](Self::tools) then.
    pub fn tool_list_changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Calls the server tool `name` (its name on the server) with `arguments`.
    ///
    /// No time limit of its own: the `ToolSet`'s limit bounds a call made through a tool, and
    /// dropping the future abandons the request without disturbing later ones.
    ///
    /// # Errors
    /// Every [`McpError`] of reaching the server and of the request. A result the server
    /// flags with `isError` is not an error here: it is a result.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, McpError> {
        let (peer, generation) = self.checked_peer().await?;
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let mut guard = Abandoned {
            inner: &self.inner,
            generation,
            finished: false,
        };
        let result = peer.call_tool(params).await;
        guard.finished = true;
        match result {
            Ok(result) => Ok(result),
            Err(error) => Err(self.failed(error, generation).await),
        }
    }

    /// The process id of the running stdio server, if there is one (for supervision and
    /// tests; `None` for HTTP servers and between restarts).
    pub async fn server_pid(&self) -> Option<u32> {
        let conn = self.inner.conn.lock().await;
        conn.live.as_ref().filter(|live| live.is_up())?.pid
    }

    /// Closes the connection (a stdio server is stopped). A later request starts it again.
    pub async fn disconnect(&self) {
        let live = self.inner.conn.lock().await.live.take();
        if let Some(mut live) = live {
            let _ = live.service.close().await;
        }
    }

    fn read_catalog(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        match self.inner.catalog.read() {
            Ok(catalog) => catalog,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The live connection's peer, checked with a `ping` when a call on it was abandoned: a
    /// connection whose calls hang (an HTTP session the server forgot, a server stuck on
    /// stdin) is replaced rather than wedging every later call. A server that is merely busy
    /// with the abandoned call still answers the ping.
    async fn checked_peer(&self) -> Result<(Peer<RoleClient>, u64), McpError> {
        let (peer, generation) = self.peer().await?;
        if self.inner.suspect.load(Ordering::Acquire) != generation {
            return Ok((peer, generation));
        }
        let ping = peer.send_request(model::ClientRequest::PingRequest(Default::default()));
        match tokio::time::timeout(HEALTH_CHECK_TIMEOUT, ping).await {
            // Any answer, even an error (a server that does not implement ping), shows that
            // the connection carries requests and answers.
            Ok(Ok(_) | Err(ServiceError::McpError(_))) => {
                let _ = self.inner.suspect.compare_exchange(
                    generation,
                    0,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                Ok((peer, generation))
            }
            failed => {
                let why = match failed {
                    Ok(Err(error)) => error.to_string(),
                    _ => format!("no answer to ping within {HEALTH_CHECK_TIMEOUT:?}"),
                };
                tracing::info!(server = %self.name(), "a call was abandoned and {why}; reconnecting");
                self.retire(generation).await;
                self.peer().await
            }
        }
    }

    /// Drops the connection `generation` (if it is still the live one) so the next request
    /// makes a new one.
    async fn retire(&self, generation: u64) {
        let mut conn = self.inner.conn.lock().await;
        if conn.generation == generation {
            conn.live = None;
        }
    }

    /// The live connection's peer and generation, starting the server first when there is
    /// none.
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), McpError> {
        let mut conn = self.inner.conn.lock().await;
        if let Some(live) = &conn.live {
            if live.is_up() {
                return Ok((live.service.peer().clone(), conn.generation));
            }
            tracing::info!(server = %self.name(), "mcp server connection lost; restarting");
            // Dropping the service stops what is left of it (a stdio child is killed).
            conn.live = None;
        }
        if let Some(retry_at) = conn.retry_at {
            let now = Instant::now();
            if retry_at > now {
                return Err(McpError::Backoff {
                    server: self.name().to_owned(),
                    retry_in: retry_at - now,
                    last_error: conn
                        .last_error
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                });
            }
        }
        match self.start().await {
            Ok(live) => {
                let peer = live.service.peer().clone();
                conn.live = Some(live);
                conn.generation += 1;
                conn.failures = 0;
                conn.retry_at = None;
                conn.last_error = None;
                // A restarted server may offer other tools.
                self.inner.stale.store(true, Ordering::Release);
                Ok((peer, conn.generation))
            }
            Err(error) => {
                conn.failures = conn.failures.saturating_add(1);
                let wait = self.inner.config.backoff(conn.failures);
                conn.retry_at = Some(Instant::now() + wait);
                conn.last_error = Some(error.clone());
                tracing::warn!(server = %self.name(), failures = conn.failures, retry_in = ?wait, "{error}");
                Err(error)
            }
        }
    }

    /// Starts a connection and runs the `initialize` handshake, within the connect limit.
    async fn start(&self) -> Result<Live, McpError> {
        let config = &self.inner.config;
        let handler = Handler {
            server: config.name().to_owned(),
            stale: Arc::clone(&self.inner.stale),
            changes: Arc::clone(&self.inner.changes),
        };
        let limit = config.connect_timeout();
        let (initialized, pid, stderr) = match config.transport() {
            McpTransport::Stdio(stdio) => {
                let (transport, pid, stderr) = self.spawn(stdio)?;
                let initialized =
                    tokio::time::timeout(limit, serve_client(handler, transport)).await;
                (initialized, pid, stderr)
            }
            McpTransport::Http(http) => {
                let transport = self.http_transport(http)?;
                let initialized =
                    tokio::time::timeout(limit, serve_client(handler, transport)).await;
                (initialized, None, StderrTail::default())
            }
        };
        match initialized {
            Ok(Ok(service)) => Ok(Live {
                service,
                pid,
                stderr,
            }),
            Ok(Err(error)) => Err(McpError::Initialize {
                server: config.name().to_owned(),
                message: init_message(&error),
                stderr: settle_stderr(&stderr).await,
            }),
            Err(_) => Err(McpError::ConnectTimeout {
                server: config.name().to_owned(),
                after: limit,
                stderr: stderr.text(),
            }),
        }
    }

    fn spawn(
        &self,
        stdio: &StdioServer,
    ) -> Result<(TokioChildProcess, Option<u32>, StderrTail), McpError> {
        let mut command = tokio::process::Command::new(&stdio.command);
        command.args(&stdio.args);
        command.envs(stdio.env.iter().map(|(k, v)| (k, v)));
        if let Some(cwd) = &stdio.cwd {
            command.current_dir(cwd);
        }
        let spawned = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn();
        let (process, stderr) = spawned.map_err(|error| McpError::Spawn {
            server: self.name().to_owned(),
            command: stdio.command.clone(),
            message: error.to_string(),
        })?;
        let tail = StderrTail::default();
        if let Some(stderr) = stderr {
            tail.follow(self.name().to_owned(), stderr);
        }
        let pid = process.id();
        Ok((process, pid, tail))
    }

    fn http_transport(
        &self,
        http: &HttpServer,
    ) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
        use reqwest::header::{HeaderName, HeaderValue};
        let server = self.name();
        let mut headers = HashMap::with_capacity(http.headers.len());
        for (name, template) in &http.headers {
            let value = expand_env(template, |var| std::env::var(var).ok()).map_err(|var| {
                McpError::MissingEnv {
                    server: server.to_owned(),
                    header: name.clone(),
                    var,
                }
            })?;
            let invalid = |message: String| McpError::InvalidHeader {
                server: server.to_owned(),
                header: name.clone(),
                message,
            };
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid("not a valid header name".into()))?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| invalid("the value has characters a header cannot carry".into()))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        let transport_config = StreamableHttpClientTransportConfig::with_uri(http.url.as_str())
            .custom_headers(headers);
        Ok(StreamableHttpClientTransport::from_config(transport_config))
    }

    /// A failed request as an [`McpError`]. A connection that broke (closed, or its transport
    /// failed) is retired so the next request makes a new one: an HTTP server that restarted
    /// does not know the old session, and requests on it would wait forever.
    async fn failed(&self, error: ServiceError, generation: u64) -> McpError {
        let error = self.service_error(error).await;
        if matches!(error, McpError::Closed { .. } | McpError::Transport { .. }) {
            tracing::info!(server = %self.name(), "{error}; the next request reconnects");
            self.retire(generation).await;
        }
        error
    }

    /// A failed request as an [`McpError`], with the stdio server's stderr when the
    /// connection is gone.
    async fn service_error(&self, error: ServiceError) -> McpError {
        let server = self.name().to_owned();
        match error {
            ServiceError::McpError(data) => McpError::Server {
                server,
                code: data.code.0,
                message: data.message.into_owned(),
            },
            ServiceError::TransportClosed => {
                let stderr = self.stderr_text().await;
                McpError::Closed { server, stderr }
            }
            ServiceError::TransportSend(error) => McpError::Transport {
                server,
                message: error.error.to_string(),
            },
            ServiceError::UnexpectedResponse => McpError::Protocol {
                server,
                message: "the result is not the one the request asks for".into(),
            },
            other => McpError::Protocol {
                server,
                message: other.to_string(),
            },
        }
    }

    async fn stderr_text(&self) -> String {
        let tail = match self.inner.conn.try_lock() {
            Ok(conn) => conn.live.as_ref().map(|live| live.stderr.clone()),
            Err(_) => None,
        };
        match tail {
            Some(tail) => settle_stderr(&tail).await,
            None => String::new(),
        }
    }
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// The stderr tail after a short pause: a process that just died has usually written its
/// last words, but the reader task may not have read them yet.
async fn settle_stderr(tail: &StderrTail) -> String {
    tokio::time::sleep(Duration::from_millis(50)).await;
    tail.text()
}

fn init_message(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ConnectionClosed(context) => {
            format!("the connection closed during the handshake ({context})")
        }
        // The SDK's own text names the transport's Rust type; the reader wants the cause.
        ClientInitializeError::TransportError { error, context } => {
            format!("{}, when {context}", error.error)
        }
        other => other.to_string(),
    }
}

/// The server's tool list as motet tools: names mapped ([`motet_name`]), and those that
/// cannot be named — or would clash with an earlier one — refused.
fn build_catalog(config: &McpServerConfig, listed: Vec<model::Tool>) -> Catalog {
    let mut catalog = Catalog::default();
    let mut taken = std::collections::HashSet::new();
    for tool in listed {
        let refuse = |reason: String| McpError::ToolName {
            server: config.name().to_owned(),
            tool: tool.name.to_string(),
            reason,
        };
        let name = match motet_name(config.tool_prefix(), &tool.name) {
            Ok(name) => name,
            Err(reason) => {
                catalog.refused.push(refuse(reason));
                continue;
            }
        };
        if !taken.insert(name.clone()) {
            catalog.refused.push(refuse(format!(
                "another tool of the server is also named `{name}`"
            )));
            continue;
        }
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_owned();
        let idempotent = tool
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.idempotent_hint)
            .unwrap_or(false);
        catalog.tools.push(Arc::new(ToolSpec {
            motet_name: name,
            remote_name: tool.name.into_owned(),
            description,
            parameters: serde_json::Value::Object((*tool.input_schema).clone()),
            idempotent,
        }));
    }
    catalog
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> model::Tool {
        match serde_json::from_value(json!({
            "name": name,
            "description": format!("does {name}"),
            "inputSchema": {"type": "object"},
            "annotations": {"idempotentHint": name == "get"}
        })) {
            Ok(tool) => tool,
            Err(error) => unreachable!("test tool does not parse: {error}"),
        }
    }

    #[test]
    fn catalog_maps_names_and_refuses_clashes() {
        let config = McpServerConfig::stdio("srv", "x");
        let catalog = build_catalog(
            &config,
            vec![tool("get"), tool("a.b"), tool("a_b"), tool(&"x".repeat(70))],
        );
        let names: Vec<&str> = catalog
            .tools
            .iter()
            .map(|t| t.motet_name.as_str())
            .collect();
        assert_eq!(names, ["srv_get", "srv_a_b"]);
        assert_eq!(catalog.tools[1].remote_name, "a.b");
        assert!(catalog.tools[0].idempotent);
        assert!(!catalog.tools[1].idempotent);
        assert_eq!(catalog.refused.len(), 2);
        assert!(
            catalog
                .refused
                .iter()
                .all(|error| matches!(error, McpError::ToolName { .. }))
        );
    }
}
