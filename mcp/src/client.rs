//! The client of one MCP server: connects, supervises (restarts a dead server on the next
//! request, with backoff), keeps the server's tool list, and calls tools.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, Implementation, PaginatedRequestParams,
};
use rmcp::service::{
    ClientInitializeError, NotificationContext, Peer, RoleClient, RunningService, ServiceError,
    serve_client,
};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{DynamicTransportError, StreamableHttpClientTransport};
use rmcp::{ClientHandler, model};
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::{HttpServer, McpServerConfig, McpTransport, StdioServer, expand_env};
use crate::guard::{Fault, FaultSlot, GuardedReader, MAX_ANSWER_DEPTH};
use crate::naming::motet_name;
use crate::redact::Secrets;
use crate::{McpError, ToolListProblem};

/// A stdio server's transport: its stdout (guarded) and stdin.
type StdioTransport = AsyncRwTransport<
    RoleClient,
    GuardedReader<tokio::process::ChildStdout>,
    tokio::process::ChildStdin,
>;

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
    /// The configuration's secret values, kept out of every error text and log line.
    secrets: Secrets,
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
    /// The stdio server's process, killed when dropped.
    child: Option<tokio::process::Child>,
    diagnostics: Diagnostics,
}

/// What explains a connection's end: the stdio server's last stderr lines, and the answer
/// its output was cut off at (see [`GuardedReader`]).
#[derive(Clone, Default)]
struct Diagnostics {
    stderr: StderrTail,
    fault: FaultSlot,
}

/// The live connection as one request uses it.
struct Session {
    peer: Peer<RoleClient>,
    generation: u64,
    diagnostics: Diagnostics,
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

/// The last lines a stdio server wrote to stderr (they explain most failed starts), with the
/// configured secrets redacted.
#[derive(Clone, Default)]
struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn text(&self) -> String {
        match self.0.lock() {
            Ok(lines) => lines.iter().cloned().collect::<Vec<_>>().join(" | "),
            Err(_) => String::new(),
        }
    }

    fn follow(&self, server: String, stderr: tokio::process::ChildStderr, secrets: Secrets) {
        let tail = self.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                // A traceback may print a token or the environment.
                let line = secrets.redact(&line);
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
        let secrets = Secrets::default();
        if let McpTransport::Stdio(stdio) = config.transport() {
            for (_, value) in &stdio.env {
                secrets.add(value);
            }
        }
        let client = Self {
            inner: Arc::new(Inner {
                config,
                conn: tokio::sync::Mutex::new(Conn::default()),
                catalog: RwLock::new(Catalog::default()),
                stale: Arc::new(AtomicBool::new(true)),
                changes: Arc::new(watch::channel(0).0),
                suspect: AtomicU64::new(0),
                secrets,
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

    /// The server's tools as motet offers them, listing them again first when the server said
    /// its list changed (or it was restarted). [`McpClient::tools`] wraps each in an
    /// [`McpTool`](crate::McpTool); it is written beside that type, so this file need not
    /// know it.
    ///
    /// # Errors
    /// When the list had to be fetched and could not be.
    pub(crate) async fn tool_specs(&self) -> Result<Vec<Arc<ToolSpec>>, McpError> {
        if self.inner.stale.load(Ordering::Acquire) {
            self.refresh_tools().await?;
        }
        Ok(self.read_catalog().tools.clone())
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
        let session = self.peer().await?;
        // Cleared before listing: a change announced while the list is in flight marks it
        // stale again, so it is not lost.
        self.inner.stale.store(false, Ordering::Release);
        let limit = self.inner.config.connect_timeout();
        let listed = match tokio::time::timeout(limit, self.list_all_tools(&session.peer)).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(Listing::Failed(error))) => {
                self.inner.stale.store(true, Ordering::Release);
                return Err(self.failed(error, &session).await);
            }
            Ok(Err(Listing::Refused(problem))) => {
                self.inner.stale.store(true, Ordering::Release);
                return Err(McpError::ToolList {
                    server: self.name().to_owned(),
                    problem,
                });
            }
            Err(_) => {
                self.inner.stale.store(true, Ordering::Release);
                return Err(McpError::Protocol {
                    server: self.name().to_owned(),
                    message: format!("no answer to tools/list within {limit:?}"),
                });
            }
        };
        let mut catalog = build_catalog(&self.inner.config, listed);
        catalog.refused = std::mem::take(&mut catalog.refused)
            .into_iter()
            .map(|refused| self.inner.secrets.redact_error(refused))
            .collect();
        for refused in &catalog.refused {
            tracing::warn!(server = %self.name(), "{refused}");
        }
        match self.inner.catalog.write() {
            Ok(mut current) => *current = catalog,
            Err(poisoned) => *poisoned.into_inner() = catalog,
        }
        Ok(())
    }

    /// Every page of `tools/list`, within the configured page and tool limits, refusing a
    /// cursor already followed (a server whose cursor loops or never ends would otherwise
    /// be listed until memory runs out).
    async fn list_all_tools(&self, peer: &Peer<RoleClient>) -> Result<Vec<model::Tool>, Listing> {
        let config = &self.inner.config;
        let mut tools = Vec::new();
        let mut followed = std::collections::HashSet::new();
        let mut cursor = None;
        for page in 1..=config.max_tool_pages() {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let listed = peer.list_tools(Some(params)).await?;
            if tools.len() + listed.tools.len() > config.max_tools() {
                return Err(Listing::Refused(ToolListProblem::TooManyTools {
                    limit: config.max_tools(),
                }));
            }
            tools.extend(listed.tools);
            match listed.next_cursor {
                None => return Ok(tools),
                Some(next) if !followed.insert(next.clone()) => {
                    return Err(Listing::Refused(ToolListProblem::RepeatedCursor { page }));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(Listing::Refused(ToolListProblem::TooManyPages {
            limit: config.max_tool_pages(),
        }))
    }

    /// `text` with the configuration's secret values replaced by `[redacted]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.inner.secrets.redact(text)
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
        let session = self.checked_peer().await?;
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let mut guard = Abandoned {
            inner: &self.inner,
            generation: session.generation,
            finished: false,
        };
        let result = session.peer.call_tool(params).await;
        guard.finished = true;
        match result {
            Ok(result) => Ok(result),
            Err(error) => Err(self.failed(error, &session).await),
        }
    }

    /// The process id of the running stdio server, if there is one (for supervision and
    /// tests; `None` for HTTP servers and between restarts).
    pub async fn server_pid(&self) -> Option<u32> {
        let conn = self.inner.conn.lock().await;
        conn.live
            .as_ref()
            .filter(|live| live.is_up())?
            .child
            .as_ref()?
            .id()
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
    async fn checked_peer(&self) -> Result<Session, McpError> {
        let session = self.peer().await?;
        let generation = session.generation;
        if self.inner.suspect.load(Ordering::Acquire) != generation {
            return Ok(session);
        }
        let ping = session
            .peer
            .send_request(model::ClientRequest::PingRequest(Default::default()));
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
                Ok(session)
            }
            failed => {
                let why = match failed {
                    Ok(Err(error)) => self.service_error(error, &session).to_string(),
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
    async fn peer(&self) -> Result<Session, McpError> {
        let mut conn = self.inner.conn.lock().await;
        if let Some(live) = &conn.live {
            if live.is_up() {
                return Ok(Session {
                    peer: live.service.peer().clone(),
                    generation: conn.generation,
                    diagnostics: live.diagnostics.clone(),
                });
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
                let diagnostics = live.diagnostics.clone();
                conn.live = Some(live);
                conn.generation += 1;
                conn.failures = 0;
                conn.retry_at = None;
                conn.last_error = None;
                // A restarted server may offer other tools.
                self.inner.stale.store(true, Ordering::Release);
                Ok(Session {
                    peer,
                    generation: conn.generation,
                    diagnostics,
                })
            }
            Err(error) => {
                let error = self.inner.secrets.redact_error(error);
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
        let diagnostics = Diagnostics::default();
        let (initialized, child) = match config.transport() {
            McpTransport::Stdio(stdio) => {
                let (transport, child) = self.spawn(stdio, &diagnostics)?;
                let initialized =
                    tokio::time::timeout(limit, serve_client(handler, transport)).await;
                (initialized, Some(child))
            }
            McpTransport::Http(http) => {
                let transport = self.http_transport(http)?;
                let initialized =
                    tokio::time::timeout(limit, serve_client(handler, transport)).await;
                (initialized, None)
            }
        };
        match initialized {
            Ok(Ok(service)) => Ok(Live {
                service,
                child,
                diagnostics,
            }),
            Ok(Err(error)) => Err(self.init_error(&error, &diagnostics).await),
            Err(_) => Err(McpError::ConnectTimeout {
                server: config.name().to_owned(),
                after: limit,
                stderr: diagnostics.stderr.text(),
            }),
        }
    }

    /// A failed handshake as an [`McpError`]: an answer too long or too deep to read, an HTTP
    /// body over the limit, or the handshake's own failure with the stderr tail.
    async fn init_error(
        &self,
        error: &ClientInitializeError,
        diagnostics: &Diagnostics,
    ) -> McpError {
        let server = self.name().to_owned();
        if let Some(fault) = diagnostics.fault.get() {
            return fault_error(server, fault);
        }
        if let ClientInitializeError::TransportError { error, .. } = error
            && let Some(limit) = body_too_large(error)
        {
            return McpError::AnswerTooLarge { server, limit };
        }
        McpError::Initialize {
            server,
            message: init_message(error),
            stderr: settle_stderr(&diagnostics.stderr).await,
        }
    }

    /// Starts the stdio server, its stdout read through a [`GuardedReader`] that records in
    /// `diagnostics` why it cut the output off, and its stderr followed there.
    fn spawn(
        &self,
        stdio: &StdioServer,
        diagnostics: &Diagnostics,
    ) -> Result<(StdioTransport, tokio::process::Child), McpError> {
        let mut command = tokio::process::Command::new(&stdio.command);
        command.args(&stdio.args);
        command.envs(stdio.env.iter().map(|(k, v)| (k, v)));
        if let Some(cwd) = &stdio.cwd {
            command.current_dir(cwd);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let spawn_error = |message: String| McpError::Spawn {
            server: self.name().to_owned(),
            command: stdio.command.clone(),
            message,
        };
        let mut child = command
            .spawn()
            .map_err(|error| spawn_error(error.to_string()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(spawn_error(
                "its stdin and stdout could not be piped".into(),
            ));
        };
        if let Some(stderr) = child.stderr.take() {
            diagnostics
                .stderr
                .follow(self.name().to_owned(), stderr, self.inner.secrets.clone());
        }
        let limit = self.inner.config.max_answer_bytes();
        let stdout = GuardedReader::new(stdout, limit, diagnostics.fault.clone());
        // The guard cuts a long line off first; the SDK's own limit (a line is dropped and
        // the connection kept) must not be the shorter one. Room for `\r\n`.
        let transport = AsyncRwTransport::new_client(stdout, stdin)
            .with_max_line_length(limit.saturating_add(2));
        Ok((transport, child))
    }

    fn http_transport(
        &self,
        http: &HttpServer,
    ) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
        use reqwest::header::{HeaderName, HeaderValue};
        let server = self.name();
        let mut headers = HashMap::with_capacity(http.headers.len());
        let secrets = &self.inner.secrets;
        for (name, template) in &http.headers {
            let lookup = |var: &str| {
                let value = std::env::var(var).ok();
                if let Some(value) = &value {
                    secrets.add(value);
                }
                value
            };
            let value = expand_env(template, lookup).map_err(|var| McpError::MissingEnv {
                server: server.to_owned(),
                header: name.clone(),
                var,
            })?;
            // Every configured header value is treated as a secret: the SDK's HTTP errors
            // quote the body of the answer, and a server may echo the request's headers.
            secrets.add(&value);
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
        let limit = self.inner.config.max_answer_bytes();
        let transport_config = StreamableHttpClientTransportConfig::with_uri(http.url.as_str())
            .custom_headers(headers)
            .max_json_response_size(limit)
            .max_sse_event_size(limit);
        Ok(StreamableHttpClientTransport::from_config(transport_config))
    }

    /// A failed request as an [`McpError`]. A connection that broke (closed, or its transport
    /// failed) is retired so the next request makes a new one: an HTTP server that restarted
    /// does not know the old session, and requests on it would wait forever.
    /// Its texts are redacted ([`Secrets`]).
    async fn failed(&self, error: ServiceError, session: &Session) -> McpError {
        let error = match error {
            ServiceError::TransportClosed => {
                let server = self.name().to_owned();
                match session.diagnostics.fault.get() {
                    Some(fault) => fault_error(server, fault),
                    None => McpError::Closed {
                        server,
                        stderr: settle_stderr(&session.diagnostics.stderr).await,
                    },
                }
            }
            other => self.service_error(other, session),
        };
        let error = self.inner.secrets.redact_error(error);
        if matches!(
            error,
            McpError::Closed { .. }
                | McpError::Transport { .. }
                | McpError::AnswerTooLarge { .. }
                | McpError::AnswerTooDeep { .. }
        ) {
            tracing::info!(server = %self.name(), "{error}; the next request reconnects");
            self.retire(session.generation).await;
        }
        error
    }

    /// A failed request as an [`McpError`] (a closed connection is [`failed`](Self::failed)'s:
    /// it waits for the stderr tail), its texts redacted.
    fn service_error(&self, error: ServiceError, session: &Session) -> McpError {
        let server = self.name().to_owned();
        let error = match error {
            ServiceError::McpError(data) => McpError::Server {
                server,
                code: data.code.0,
                message: data.message.into_owned(),
            },
            ServiceError::TransportClosed => match session.diagnostics.fault.get() {
                Some(fault) => fault_error(server, fault),
                None => McpError::Closed {
                    server,
                    stderr: session.diagnostics.stderr.text(),
                },
            },
            ServiceError::TransportSend(error) => match body_too_large(&error) {
                Some(limit) => McpError::AnswerTooLarge { server, limit },
                None => McpError::Transport {
                    server,
                    message: error.error.to_string(),
                },
            },
            ServiceError::UnexpectedResponse => McpError::Protocol {
                server,
                message: "the result is not the one the request asks for".into(),
            },
            other => McpError::Protocol {
                server,
                message: other.to_string(),
            },
        };
        self.inner.secrets.redact_error(error)
    }
}

/// Why a tool listing stopped.
enum Listing {
    /// A request failed.
    Failed(ServiceError),
    /// The server's list passed a limit or looped.
    Refused(ToolListProblem),
}

impl From<ServiceError> for Listing {
    fn from(error: ServiceError) -> Self {
        Self::Failed(error)
    }
}

/// The error for an answer the stdio transport cut off.
fn fault_error(server: String, fault: Fault) -> McpError {
    match fault {
        Fault::TooLarge { limit } => McpError::AnswerTooLarge { server, limit },
        Fault::TooDeep => McpError::AnswerTooDeep {
            server,
            limit: MAX_ANSWER_DEPTH,
        },
    }
}

/// The limit an HTTP answer's body passed, when that is why the transport failed.
fn body_too_large(error: &DynamicTransportError) -> Option<usize> {
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()?
    {
        StreamableHttpError::ResponseBodyTooLarge { max_size } => Some(*max_size),
        _ => None,
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
