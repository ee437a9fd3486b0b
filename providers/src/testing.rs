//! A hostile provider for tests: a loopback HTTP/1.1 server that answers each request as the
//! test scripted it, and records what it received. Behind the `test-utils` feature, never a
//! default on a user path.
//!
//! Each [`Reply`] says what one request gets: a status with headers and a body (whole, or
//! trickled one byte at a time), a redirect, an event stream written in pieces with pauses
//! that ends cleanly, is cut mid-body, holds the connection open, or repeats its last piece
//! until the client hangs up; a stall before the headers; response headers padded past any
//! client's limit; the request's own key headers echoed into the body. The `n`th request gets
//! the `n`th reply, the last one repeats. Every connection is closed after one reply, so hits,
//! connections and requests count the same thing.
//!
//! [`wire`] writes the answers of each dialect (an answer, a partial one, an error event).
//!
//! ```
//! use motet_providers::testing::{HostileServer, Reply};
//!
//! # async fn run() -> std::io::Result<()> {
//! let server = HostileServer::start([
//!     Reply::json(503, r#"{"error":{"message":"busy"}}"#),
//!     Reply::events(["data: {\"choices\":[]}\n\n"]),
//! ])
//! .await?;
//! // Point a client at server.url(), then look at server.hits() and server.requests().
//! # Ok(())
//! # }
//! ```

pub mod wire;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The request headers that carry a key, in every dialect.
const KEY_HEADERS: [&str; 3] = ["authorization", "x-api-key", "x-goog-api-key"];

/// The placeholder [`Reply::echo_secrets`] replaces in a body.
pub const SECRETS: &str = "{secrets}";

/// The most of a request the server reads (a request larger than this is cut short).
const MAX_REQUEST_BYTES: usize = 16 << 20;

/// How a streamed body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The chunked body is terminated properly.
    Clean,
    /// The connection is closed in the middle of the body (no terminating chunk).
    Cut,
    /// Nothing more is sent; the connection stays open this long, or until the client hangs up.
    Hold(Duration),
    /// The last piece is sent again and again until the client hangs up: an endless stream.
    RepeatLast,
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Wait after reading the request, before anything is written.
    delay: Duration,
    /// `None`: never answer; close after `delay`.
    status: Option<u16>,
    headers: Vec<(String, String)>,
    body: Body,
    /// Write the response one byte at a time, with this pause after each.
    trickle: Option<Duration>,
    /// Replace [`SECRETS`] in the body with the request's key headers.
    echo: bool,
}

#[derive(Debug, Clone)]
enum Body {
    /// With a `content-length`.
    Whole(Vec<u8>),
    /// Chunked, in these pieces with a pause after each, then `end`.
    Pieces {
        pieces: Vec<Vec<u8>>,
        pause: Duration,
        end: End,
    },
}

impl Reply {
    /// A response with this status, no headers of its own and an empty body.
    pub fn status(status: u16) -> Self {
        Self {
            delay: Duration::ZERO,
            status: Some(status),
            headers: Vec::new(),
            body: Body::Whole(Vec::new()),
            trickle: None,
            echo: false,
        }
    }

    /// A response with this status and a JSON body.
    pub fn json(status: u16, body: impl Into<String>) -> Self {
        Self::status(status)
            .header("content-type", "application/json")
            .body(body)
    }

    /// A redirect (`301`, `302`, `307`, `308`) to `location`.
    pub fn redirect(status: u16, location: impl Into<String>) -> Self {
        Self::status(status).header("location", location)
    }

    /// `200 text/event-stream`, chunked, written in these pieces; ends cleanly unless
    /// [`end`](Self::end) says otherwise.
    pub fn events<S: Into<String>>(pieces: impl IntoIterator<Item = S>) -> Self {
        Self {
            body: Body::Pieces {
                pieces: pieces.into_iter().map(|p| p.into().into_bytes()).collect(),
                pause: Duration::ZERO,
                end: End::Clean,
            },
            ..Self::status(200).header("content-type", "text/event-stream")
        }
    }

    /// Reads the request and says nothing for `wait`, then closes the connection: a stall
    /// before the headers.
    pub fn stall(wait: Duration) -> Self {
        Self {
            delay: wait,
            status: None,
            ..Self::status(0)
        }
    }

    /// Sets a response header (replacing one of the same name, any case).
    pub fn header(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        let mut reply = self.without_header(&name);
        reply.headers.push((name, value.into()));
        reply
    }

    /// Removes a response header (`content-type`, say, from an event stream).
    pub fn without_header(mut self, name: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    /// Sets a whole body (sent with its `content-length`).
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = Body::Whole(body.into().into_bytes());
        self
    }

    /// Pauses this long after each piece of a streamed body.
    pub fn pause(mut self, pause: Duration) -> Self {
        if let Body::Pieces { pause: p, .. } = &mut self.body {
            *p = pause;
        }
        self
    }

    /// How a streamed body ends.
    pub fn end(mut self, end: End) -> Self {
        if let Body::Pieces { end: e, .. } = &mut self.body {
            *e = end;
        }
        self
    }

    /// Waits this long after reading the request before the headers go out.
    pub fn delay(mut self, wait: Duration) -> Self {
        self.delay = wait;
        self
    }

    /// Writes the body one byte at a time, pausing `every` after each byte.
    pub fn trickle(mut self, every: Duration) -> Self {
        self.trickle = Some(every);
        self
    }

    /// Pads the response headers past `bytes` (one `x-padding` header of that size).
    pub fn pad_headers(self, bytes: usize) -> Self {
        self.header("x-padding", "a".repeat(bytes))
    }

    /// Replaces [`SECRETS`] in the body with the values of the request's key headers
    /// (`authorization`, `x-api-key`, `x-goog-api-key`), as a careless proxy might echo them.
    pub fn echo_secrets(mut self) -> Self {
        self.echo = true;
        self
    }
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The request line and headers, as sent (without the blank line).
    pub head: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Received {
    /// `POST /v1/chat/completions HTTP/1.1`.
    pub fn request_line(&self) -> &str {
        self.head.lines().next().unwrap_or("")
    }

    /// The path and query of the request line.
    pub fn path(&self) -> &str {
        self.request_line().split(' ').nth(1).unwrap_or("")
    }

    /// A header's value (the first of that name, any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then_some(value.trim())
        })
    }

    /// The body as text (lossy).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What the server saw, shared with its connection tasks.
#[derive(Debug)]
struct Shared {
    replies: Vec<Reply>,
    hits: AtomicUsize,
    requests: Mutex<Vec<Received>>,
    closed: watch::Sender<usize>,
    /// The account limit it enforces, if any.
    limit: Option<Mutex<Account>>,
    /// Requests it answered 429 for being past the limit.
    rejected: AtomicUsize,
}

/// The scripted server on `127.0.0.1` (a free port). Stops accepting when dropped.
#[derive(Debug)]
pub struct HostileServer {
    url: String,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl HostileServer {
    /// Starts a server answering request `n` with `replies[n]`; the last reply repeats (no
    /// replies: every request gets a 500 saying so).
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> std::io::Result<Self> {
        Self::serve(replies, None).await
    }

    /// Starts a server that enforces `limit` the way the real APIs do: each request is
    /// charged one request and its tokens (a quarter of its body's bytes, plus its
    /// `max_tokens`); past the limit it answers `429` with `retry-after-ms`, `retry-after` and
    /// the `x-ratelimit-*` headers, within it the scripted reply with the same headers. The
    /// output not generated (`max_tokens` minus [`ServerLimit::output_tokens`]) is given back
    /// when the reply has been written.
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn limited(
        limit: ServerLimit,
        replies: impl IntoIterator<Item = Reply>,
    ) -> std::io::Result<Self> {
        Self::serve(replies, Some(limit)).await
    }

    async fn serve(
        replies: impl IntoIterator<Item = Reply>,
        limit: Option<ServerLimit>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let mut replies: Vec<Reply> = replies.into_iter().collect();
        if replies.is_empty() {
            replies.push(Reply::status(500).body("the test scripted no reply"));
        }
        let shared = Arc::new(Shared {
            replies,
            hits: AtomicUsize::new(0),
            requests: Mutex::default(),
            closed: watch::Sender::new(0),
            limit: limit.map(|limit| Mutex::new(Account::new(limit))),
            rejected: AtomicUsize::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Self {
            url,
            shared,
            accept,
        })
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Connections accepted so far (one request each).
    pub fn hits(&self) -> usize {
        self.shared.hits.load(Ordering::SeqCst)
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<Received> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Requests answered `429` for being past the [`ServerLimit`].
    pub fn rejected(&self) -> usize {
        self.shared.rejected.load(Ordering::SeqCst)
    }

    /// Tokens the [`ServerLimit`] charged the admitted requests, after what they gave back.
    pub fn tokens_admitted(&self) -> u64 {
        self.shared.limit.as_ref().map_or(0, |account| {
            account
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .admitted
        })
    }

    /// Connections the client closed before the server was done with them.
    pub fn closed(&self) -> usize {
        *self.shared.closed.borrow()
    }

    /// Waits until the client has closed `n` connections early (put a time limit on it).
    pub async fn hung_up(&self, n: usize) {
        let mut closed = self.shared.closed.subscribe();
        let _ = closed.wait_for(|count| *count >= n).await;
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((socket, _)) = listener.accept().await {
        let n = shared.hits.fetch_add(1, Ordering::SeqCst);
        let last = shared.replies.len().saturating_sub(1);
        let Some(reply) = shared.replies.get(n.min(last)).cloned() else {
            return;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut connection = Connection {
                socket,
                trickle: reply.trickle,
            };
            if let Ok(Outcome::ClientLeft) = connection.answer(reply, &shared).await {
                shared.closed.send_modify(|count| *count += 1);
            }
        });
    }
}

/// How a connection ended.
enum Outcome {
    /// The server said all it meant to.
    Done,
    /// The client hung up first.
    ClientLeft,
}

struct Connection {
    socket: TcpStream,
    trickle: Option<Duration>,
}

impl Connection {
    async fn answer(&mut self, reply: Reply, shared: &Shared) -> std::io::Result<Outcome> {
        let received = self.read_request().await?;
        let (reply, refund) = match &shared.limit {
            None => (reply, 0),
            Some(account) => {
                let verdict = account
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .admit(&received);
                if verdict.admitted {
                    (verdict.headed(reply), verdict.refund)
                } else {
                    shared.rejected.fetch_add(1, Ordering::SeqCst);
                    let busy = Reply::json(
                        429,
                        r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#,
                    );
                    (verdict.headed(busy), 0)
                }
            }
        };
        let outcome = self.answer_with(reply, received, shared).await;
        if refund > 0
            && let Some(account) = &shared.limit
        {
            account
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .refund(refund);
        }
        outcome
    }

    async fn answer_with(
        &mut self,
        reply: Reply,
        received: Received,
        shared: &Shared,
    ) -> std::io::Result<Outcome> {
        let secrets = KEY_HEADERS
            .iter()
            .filter_map(|name| received.header(name))
            .collect::<Vec<_>>()
            .join(" ");
        shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(received);
        tokio::time::sleep(reply.delay).await;
        let Some(status) = reply.status else {
            return Ok(Outcome::Done);
        };
        let echo = |bytes: Vec<u8>| {
            if reply.echo {
                String::from_utf8_lossy(&bytes)
                    .replace(SECRETS, &json_escape(&secrets))
                    .into_bytes()
            } else {
                bytes
            }
        };
        let mut head = format!("HTTP/1.1 {status} Scripted\r\nconnection: close\r\n");
        for (name, value) in &reply.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        match reply.body {
            Body::Whole(bytes) => {
                let bytes = echo(bytes);
                head.push_str(&format!("content-length: {}\r\n\r\n", bytes.len()));
                // Headers at once (a trickle is about the body), then the body.
                self.socket.write_all(head.as_bytes()).await?;
                Ok(self.write(&bytes).await)
            }
            Body::Pieces { pieces, pause, end } => {
                head.push_str("transfer-encoding: chunked\r\n\r\n");
                self.socket.write_all(head.as_bytes()).await?;
                let pieces: Vec<Vec<u8>> = pieces.into_iter().map(echo).collect();
                for piece in &pieces {
                    if let Outcome::ClientLeft = self.chunk(piece).await {
                        return Ok(Outcome::ClientLeft);
                    }
                    tokio::time::sleep(pause).await;
                }
                Ok(self.end(end, pieces.last(), pause).await)
            }
        }
    }

    async fn end(&mut self, end: End, last: Option<&Vec<u8>>, pause: Duration) -> Outcome {
        match end {
            End::Clean => self.write(b"0\r\n\r\n").await,
            End::Cut => Outcome::Done,
            End::Hold(hold) => {
                let mut byte = [0u8; 1];
                match tokio::time::timeout(hold, self.socket.read(&mut byte)).await {
                    Ok(Ok(0) | Err(_)) => Outcome::ClientLeft,
                    _ => Outcome::Done,
                }
            }
            End::RepeatLast => {
                let Some(piece) = last.filter(|p| !p.is_empty()) else {
                    return Outcome::Done;
                };
                loop {
                    if let Outcome::ClientLeft = self.chunk(piece).await {
                        return Outcome::ClientLeft;
                    }
                    if pause.is_zero() {
                        tokio::task::yield_now().await;
                    } else {
                        tokio::time::sleep(pause).await;
                    }
                }
            }
        }
    }

    /// One chunk of a chunked body (an empty piece would end the body, so it is skipped).
    async fn chunk(&mut self, piece: &[u8]) -> Outcome {
        if piece.is_empty() {
            return Outcome::Done;
        }
        let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
        framed.extend_from_slice(piece);
        framed.extend_from_slice(b"\r\n");
        self.write(&framed).await
    }

    async fn write(&mut self, bytes: &[u8]) -> Outcome {
        let written = match self.trickle {
            None => self.socket.write_all(bytes).await,
            Some(every) => {
                let mut result = Ok(());
                for byte in bytes {
                    result = self.socket.write_all(std::slice::from_ref(byte)).await;
                    if result.is_err() {
                        break;
                    }
                    tokio::time::sleep(every).await;
                }
                result
            }
        };
        match written {
            Ok(()) => Outcome::Done,
            Err(_) => Outcome::ClientLeft,
        }
    }

    async fn read_request(&mut self) -> std::io::Result<Received> {
        let mut buf = Vec::new();
        let mut scratch = [0u8; 8192];
        let end = loop {
            if let Some(end) = find(&buf, b"\r\n\r\n") {
                break end;
            }
            let n = self.socket.read(&mut scratch).await?;
            if n == 0 || buf.len() > MAX_REQUEST_BYTES {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&scratch[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let mut received = Received {
            head,
            body: Vec::new(),
        };
        let length = received
            .header("content-length")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0)
            .min(MAX_REQUEST_BYTES);
        let mut body = buf.split_off(end + 4);
        while body.len() < length {
            let n = self.socket.read(&mut scratch).await?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&scratch[..n]);
        }
        received.body = body;
        Ok(received)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `text` as it goes inside a JSON string.
fn json_escape(text: &str) -> String {
    let quoted = serde_json::Value::String(text.to_owned()).to_string();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(&quoted)
        .to_owned()
}

/// An account limit the server enforces (see [`HostileServer::limited`]): continuously
/// refilling buckets of `requests_per_minute` requests and `tokens_per_minute` tokens over a
/// `minute` that tests and benchmarks scale down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimit {
    /// Requests per minute.
    pub requests_per_minute: u64,
    /// Input and output tokens per minute.
    pub tokens_per_minute: u64,
    /// How long a minute is.
    pub minute: Duration,
    /// The output tokens each scripted reply generates (the rest of a request's `max_tokens`
    /// is given back when the reply ends).
    pub output_tokens: u64,
}

impl ServerLimit {
    /// `requests` and `tokens` a minute, a minute of 60 s, replies of 20 output tokens.
    pub fn per_minute(requests: u64, tokens: u64) -> Self {
        Self {
            requests_per_minute: requests,
            tokens_per_minute: tokens,
            minute: Duration::from_secs(60),
            output_tokens: 20,
        }
    }

    /// With a minute this long.
    pub fn with_minute(mut self, minute: Duration) -> Self {
        self.minute = minute.max(Duration::from_millis(1));
        self
    }
}

/// The server's side of the limit: two buckets refilling continuously.
#[derive(Debug)]
struct Account {
    limit: ServerLimit,
    requests: f64,
    tokens: f64,
    refilled: std::time::Instant,
    /// Tokens charged to admitted requests, net of what they gave back.
    admitted: u64,
}

/// Whether a request was admitted, and the headers that say so.
struct Verdict {
    admitted: bool,
    headers: Vec<(String, String)>,
    /// Tokens to give back after the reply.
    refund: u64,
}

impl Verdict {
    fn headed(&self, mut reply: Reply) -> Reply {
        for (name, value) in &self.headers {
            reply = reply.header(name.clone(), value.clone());
        }
        reply
    }
}

impl Account {
    fn new(limit: ServerLimit) -> Self {
        Self {
            limit,
            requests: limit.requests_per_minute as f64,
            tokens: limit.tokens_per_minute as f64,
            refilled: std::time::Instant::now(),
            admitted: 0,
        }
    }

    fn per_second(&self, per_minute: u64) -> f64 {
        per_minute as f64 / self.limit.minute.as_secs_f64()
    }

    fn refill(&mut self) {
        let now = std::time::Instant::now();
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        self.requests = (self.requests + elapsed * self.per_second(self.limit.requests_per_minute))
            .min(self.limit.requests_per_minute as f64);
        self.tokens = (self.tokens + elapsed * self.per_second(self.limit.tokens_per_minute))
            .min(self.limit.tokens_per_minute as f64);
    }

    fn admit(&mut self, request: &Received) -> Verdict {
        self.refill();
        let max_tokens = max_tokens(&request.body);
        let tokens = (request.body.len() as u64).div_ceil(4) + max_tokens;
        let want = (tokens as f64).min(self.limit.tokens_per_minute as f64);
        let admitted = self.requests >= 1.0 && self.tokens >= want;
        let mut wait = 0.0_f64;
        if admitted {
            self.requests -= 1.0;
            self.tokens -= want;
            self.admitted = self.admitted.saturating_add(want as u64);
        } else {
            let per_request = self.per_second(self.limit.requests_per_minute);
            let per_token = self.per_second(self.limit.tokens_per_minute);
            wait = ((1.0 - self.requests) / per_request)
                .max((want - self.tokens) / per_token)
                .max(0.001);
        }
        let reset = |level: f64, limit: u64, rate: f64| {
            let ms = ((limit as f64 - level).max(0.0) / rate * 1000.0).ceil();
            format!("{ms}ms")
        };
        let mut headers = vec![
            (
                "x-ratelimit-limit-requests".to_owned(),
                self.limit.requests_per_minute.to_string(),
            ),
            (
                "x-ratelimit-remaining-requests".to_owned(),
                (self.requests.max(0.0).floor() as u64).to_string(),
            ),
            (
                "x-ratelimit-reset-requests".to_owned(),
                reset(
                    self.requests,
                    self.limit.requests_per_minute,
                    self.per_second(self.limit.requests_per_minute),
                ),
            ),
            (
                "x-ratelimit-limit-tokens".to_owned(),
                self.limit.tokens_per_minute.to_string(),
            ),
            (
                "x-ratelimit-remaining-tokens".to_owned(),
                (self.tokens.max(0.0).floor() as u64).to_string(),
            ),
            (
                "x-ratelimit-reset-tokens".to_owned(),
                reset(
                    self.tokens,
                    self.limit.tokens_per_minute,
                    self.per_second(self.limit.tokens_per_minute),
                ),
            ),
        ];
        if !admitted {
            let ms = (wait * 1000.0).ceil();
            headers.push(("retry-after-ms".to_owned(), format!("{ms}")));
            headers.push((
                "retry-after".to_owned(),
                format!("{}", wait.ceil().max(1.0)),
            ));
        }
        Verdict {
            admitted,
            headers,
            refund: max_tokens.saturating_sub(self.limit.output_tokens),
        }
    }

    fn refund(&mut self, tokens: u64) {
        self.refill();
        self.tokens = (self.tokens + tokens as f64).min(self.limit.tokens_per_minute as f64);
        self.admitted = self.admitted.saturating_sub(tokens);
    }
}

/// The most output a request asks for, in any dialect's name for it (0 when it names none).
fn max_tokens(body: &[u8]) -> u64 {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) else {
        return 0;
    };
    ["max_tokens", "max_completion_tokens", "max_output_tokens"]
        .iter()
        .find_map(|key| json.get(key).and_then(serde_json::Value::as_u64))
        .unwrap_or(0)
}
