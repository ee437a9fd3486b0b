//! The client: an [`LlmRequest`] in, a stream of [`LlmEvent`]s (or one assembled
//! [`LlmResponse`]) out, over HTTP and server-sent events.
//!
//! [`Providers`] is what an application holds: it picks the dialect and endpoint from the
//! request's model ref (`anthropic:claude-sonnet-4-5`) at run time. [`HttpClient`] is one
//! dialect at one endpoint. Both implement [`LlmClient`].
//!
//! A call: validate the request against the model, render it, POST it; on a failure before
//! any content (connection, timeout, a retryable status, an error event ahead of the first
//! token) wait as the [`RetryPolicy`] says and try again; once content has flowed to the
//! caller, a failure ends the stream with a typed error instead. Timeouts are per phase
//! (connect, first byte, idle between reads); dropping the stream drops the response, which
//! cancels the request and closes its connection.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;
use motet_directives::{LlmRequest, LlmResponse};

use crate::assembler::BlockAssembler;
use crate::body::BodyDecoder;
use crate::config::{ApiKey, Limits, ProviderKind, ProvidersConfig, Timeouts};
use crate::dialect::Dialect;
use crate::endpoint::endpoint;
use crate::error::ProviderError;
use crate::event::LlmEvent;
use crate::limits::RateObserver;
use crate::models;
use crate::retry::{Failure, RetryHints, RetryPolicy};

/// The events of one streamed call. Ends after [`LlmEvent::Done`] (and any trailing usage),
/// or with one error.
pub type LlmEvents = Pin<Box<dyn Stream<Item = Result<LlmEvent, ProviderError>> + Send>>;

/// Something that answers LLM requests.
#[async_trait]
pub trait LlmClient: Send + Sync {
    /// Starts a call and returns its events as they arrive.
    ///
    /// # Errors
    /// A typed [`ProviderError`] when the call fails before any content (after retries).
    async fn stream(&self, req: LlmRequest) -> Result<LlmEvents, ProviderError>;

    /// Whether [`stream`](Self::stream) has already retried a failure it returns (with its
    /// own backoff and budget). The runtime then does not let the strategy try the same call
    /// again on top, which multiplied the requests one overload cost (3 × 3). Failures in
    /// the middle of a stream are never retried by the client. Default `false`.
    fn retries_before_content(&self) -> bool {
        false
    }

    /// Reports every response head of this client's calls (its own retries included) to
    /// `observer`, unless one is already attached; returns whether it was attached. Clients
    /// that make no HTTP calls ignore it (the default).
    fn share_rate_observer(&self, observer: Arc<dyn RateObserver>) -> bool {
        let _ = observer;
        false
    }

    /// Whether calls for `model` can be made at all as configured (its provider known, its
    /// key and base URL set), checked without a call when an agent is spawned. Default: yes.
    ///
    /// # Errors
    /// [`ProviderError::Config`] naming what is missing.
    fn check_model(&self, model: &motet_directives::ModelRef) -> Result<(), ProviderError> {
        let _ = model;
        Ok(())
    }

    /// Whether requests shaped like `req` (its model, tools and options; its messages are not
    /// looked at) can be made: [`LlmClient::check_model`] and, for clients that know models'
    /// capabilities, what the request asks of the model. Checked when an agent is spawned.
    /// Default: [`LlmClient::check_model`].
    ///
    /// # Errors
    /// [`ProviderError::Config`] as for `check_model`; [`ProviderError::UnsupportedModel`] with
    /// the reason when the model cannot do what the request asks (or is not allowed).
    fn check_request(&self, req: &LlmRequest) -> Result<(), ProviderError> {
        self.check_model(&req.model)
    }

    /// Runs a call to the end and assembles the response.
    ///
    /// # Errors
    /// A typed [`ProviderError`] from the call or its assembly.
    async fn complete(&self, req: LlmRequest) -> Result<LlmResponse, ProviderError> {
        use futures::StreamExt as _;
        let mut events = self.stream(req).await?;
        let mut assembler = BlockAssembler::new();
        while let Some(event) = events.next().await {
            assembler.push(event?)?;
        }
        Ok(assembler.finish()?)
    }
}

/// A shared client is a client: `Arc<Providers>`, `Arc<dyn LlmClient>`.
#[async_trait]
impl<T: LlmClient + ?Sized> LlmClient for Arc<T> {
    async fn stream(&self, req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        (**self).stream(req).await
    }

    fn retries_before_content(&self) -> bool {
        (**self).retries_before_content()
    }

    fn share_rate_observer(&self, observer: Arc<dyn RateObserver>) -> bool {
        (**self).share_rate_observer(observer)
    }

    async fn complete(&self, req: LlmRequest) -> Result<LlmResponse, ProviderError> {
        (**self).complete(req).await
    }

    fn check_model(&self, model: &motet_directives::ModelRef) -> Result<(), ProviderError> {
        (**self).check_model(model)
    }

    fn check_request(&self, req: &LlmRequest) -> Result<(), ProviderError> {
        (**self).check_request(req)
    }
}

/// Every configured provider behind one client: the model ref of each request picks the
/// dialect, URL and key.
///
/// ```no_run
/// use motet_directives::{LlmRequest, Message};
/// use motet_providers::{LlmClient, Providers};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let providers = Providers::from_env()?;
/// let request = LlmRequest::new(
///     "anthropic:claude-sonnet-4-5".parse()?,
///     vec![Message::user("Say hello.")],
/// );
/// let response = providers.complete(request).await?;
/// println!("{}", response.message);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Providers {
    http: reqwest::Client,
    config: ProvidersConfig,
    /// The models agents may use, when restricted (seed 004's allowlist); `None`: any model.
    allowlist: Option<Arc<[String]>>,
    /// Told of every response head (shared with the clients made from this one).
    observer: ObserverSlot,
}

/// Where a client's [`RateObserver`] is kept: set once, shared by the clones of the client.
pub(crate) type ObserverSlot = Arc<OnceLock<Arc<dyn RateObserver>>>;

fn slot_with(observer: Arc<dyn RateObserver>) -> ObserverSlot {
    let slot = ObserverSlot::default();
    let _ = slot.set(observer);
    slot
}

impl Providers {
    /// Providers configured from the environment (see [`crate::config`]).
    ///
    /// # Errors
    /// [`ProviderError::Config`] when a limit's variable holds an unusable value, or the HTTP
    /// client cannot be built.
    pub fn from_env() -> Result<Self, ProviderError> {
        Self::new(ProvidersConfig::from_env()?)
    }

    /// Providers with this configuration.
    ///
    /// # Errors
    /// [`ProviderError::Config`] when the HTTP client cannot be built.
    pub fn new(config: ProvidersConfig) -> Result<Self, ProviderError> {
        Ok(Self {
            http: http_client(&config.timeouts)?,
            config,
            allowlist: None,
            observer: ObserverSlot::default(),
        })
    }

    /// Reports every response head (status and headers, 2xx and errors, the client's own
    /// retries included) to `observer`: what [`crate::limits::SharedLimits`] learns the
    /// account's limits and its 429s from.
    pub fn with_rate_observer(mut self, observer: Arc<dyn RateObserver>) -> Self {
        self.observer = slot_with(observer);
        self
    }

    /// Only these models (`provider:model`, as written in a model ref) may be called: any other
    /// is refused as [`ProviderError::UnsupportedModel`] when an agent is spawned and on every
    /// request. Without an allowlist any model may be called — plain chat works with models the
    /// capability table does not know.
    pub fn with_model_allowlist<I, M>(mut self, models: I) -> Self
    where
        I: IntoIterator<Item = M>,
        M: Into<String>,
    {
        self.allowlist = Some(models.into_iter().map(Into::into).collect());
        self
    }

    /// Refuses a model outside the allowlist, if one is configured.
    fn allowed(&self, model: &motet_directives::ModelRef) -> Result<(), ProviderError> {
        match &self.allowlist {
            Some(list) if !list.iter().any(|m| *m == model.to_string()) => {
                Err(ProviderError::UnsupportedModel {
                    model: model.to_string(),
                    reason: "it is not in the configured model allowlist".to_owned(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &ProvidersConfig {
        &self.config
    }

    /// The client a request for `model` goes through.
    ///
    /// # Errors
    /// [`ProviderError::Config`] for an unknown provider or a missing key or URL.
    pub fn client_for(
        &self,
        model: &motet_directives::ModelRef,
    ) -> Result<HttpClient, ProviderError> {
        let dialect = models::dialect_for(model)?;
        let (base_url, key) = self
            .config
            .resolve(ProviderKind::from_provider(model.provider())?)?;
        Ok(HttpClient {
            http: self.http.clone(),
            dialect,
            base_url,
            key,
            retry: self.config.retry,
            timeouts: self.config.timeouts,
            limits: self.config.limits,
            observer: Arc::clone(&self.observer),
        })
    }
}

impl Providers {
    /// The context window `model` is served with, in tokens: the capability table's for a known
    /// hosted model; for an OpenAI-compatible server, what the server says of itself — a
    /// llama.cpp server reports the context of one slot at `GET /props`
    /// (`default_generation_settings.n_ctx`), which is what one request may use, often far less
    /// than the model was trained for. `None` when neither knows (a server without `/props`,
    /// an unknown model): the caller's own setting or default stands. Waits at most 2 s.
    pub async fn context_window(&self, model: &motet_directives::ModelRef) -> Option<u32> {
        if let Some(caps) = models::capabilities(model) {
            return Some(caps.context_window);
        }
        let kind = ProviderKind::from_provider(model.provider()).ok()?;
        if kind != ProviderKind::OpenAiCompat {
            return None;
        }
        let (base_url, key) = self.config.resolve(kind).ok()?;
        let mut request = self
            .http
            .get(props_url(&base_url))
            .timeout(Duration::from_secs(2));
        if let Some(key) = key {
            request = request.bearer_auth(key.expose());
        }
        let mut response = request.send().await.ok()?.error_for_status().ok()?;
        let json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("json"));
        if !json {
            return None;
        }
        // A page of settings, not a stream: read in pieces and given up past 1 MiB, so a
        // hostile server's endless answer takes no memory.
        let mut body = Vec::new();
        while let Some(piece) = response.chunk().await.ok()? {
            if body.len() + piece.len() > 1 << 20 {
                return None;
            }
            body.extend_from_slice(&piece);
        }
        served_window(&body)
    }
}

/// `GET /props` of the server whose OpenAI-compatible API is at `base_url` (`…/v1`).
fn props_url(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    let host = base.strip_suffix("/v1").unwrap_or(base);
    format!("{host}/props")
}

/// The per-slot context a llama.cpp `/props` answer reports (`default_generation_settings.n_ctx`,
/// or `n_ctx` at its top in older servers); `None` for anything else.
fn served_window(body: &[u8]) -> Option<u32> {
    let props: serde_json::Value = serde_json::from_slice(body).ok()?;
    let n_ctx = props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))?
        .as_u64()?;
    u32::try_from(n_ctx).ok().filter(|&n| n > 0)
}

#[async_trait]
impl LlmClient for Providers {
    async fn stream(&self, req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        self.allowed(&req.model)?;
        self.client_for(&req.model)?.stream(req).await
    }

    fn retries_before_content(&self) -> bool {
        true
    }

    fn share_rate_observer(&self, observer: Arc<dyn RateObserver>) -> bool {
        self.observer.set(observer).is_ok()
    }

    fn check_model(&self, model: &motet_directives::ModelRef) -> Result<(), ProviderError> {
        self.allowed(model)?;
        self.client_for(model).map(|_| ())
    }

    fn check_request(&self, req: &LlmRequest) -> Result<(), ProviderError> {
        self.check_model(&req.model)?;
        models::validate(req)
    }
}

/// One dialect at one endpoint.
#[derive(Debug, Clone)]
pub struct HttpClient {
    http: reqwest::Client,
    dialect: Dialect,
    base_url: String,
    key: Option<ApiKey>,
    retry: RetryPolicy,
    timeouts: Timeouts,
    limits: Limits,
    observer: ObserverSlot,
}

impl HttpClient {
    /// A client for `dialect` at `base_url` (for Chat Completions and Responses the URL ends in
    /// `/v1`; for Anthropic and Gemini it is the host), with default timeouts and retries.
    ///
    /// # Errors
    /// [`ProviderError::Config`] when the HTTP client cannot be built.
    pub fn new(
        dialect: Dialect,
        base_url: impl Into<String>,
        key: Option<ApiKey>,
    ) -> Result<Self, ProviderError> {
        let timeouts = Timeouts::default();
        Ok(Self {
            http: http_client(&timeouts)?,
            dialect,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            key,
            retry: RetryPolicy::default(),
            timeouts,
            limits: Limits::default(),
            observer: ObserverSlot::default(),
        })
    }

    /// Reports every response head to `observer` (see [`Providers::with_rate_observer`]).
    pub fn with_rate_observer(mut self, observer: Arc<dyn RateObserver>) -> Self {
        self.observer = slot_with(observer);
        self
    }

    /// With these timeouts.
    ///
    /// # Errors
    /// [`ProviderError::Config`] when the HTTP client cannot be rebuilt.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Result<Self, ProviderError> {
        self.http = http_client(&timeouts)?;
        self.timeouts = timeouts;
        Ok(self)
    }

    /// With this retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// With these size limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The dialect spoken.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// One attempt: send, check the status, read up to the first content event.
    async fn attempt(&self, body: &bytes::Bytes, req: &LlmRequest) -> Attempt {
        let target = endpoint(self.dialect, &self.base_url, self.key.as_ref(), req);
        let mut builder = self
            .http
            .post(&target.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        for (name, value) in &target.headers {
            builder = builder.header(*name, value);
        }
        if let Some((name, value)) = &target.auth {
            builder = builder.header(*name, value);
        }
        let sent = tokio::time::timeout(self.timeouts.first_byte, builder.send()).await;
        let response = match sent {
            Err(_) => return Attempt::Failed(timeout("first byte"), RetryHints::default()),
            Ok(Err(e)) => return Attempt::Failed(transport(e), RetryHints::default()),
            Ok(Ok(response)) => response,
        };
        if response.status().is_redirection() {
            return Attempt::Failed(redirected(&response), RetryHints::default());
        }
        let status = response.status().as_u16();
        let hints = hints(&response);
        if let Some(observer) = self.observer.get() {
            let headers: Vec<(&str, &str)> = response
                .headers()
                .iter()
                .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
                .collect();
            observer.observed(&req.model, status, &headers);
        }
        if !response.status().is_success() {
            let body = read_capped(response, MAX_ERROR_BODY, &self.timeouts).await;
            let mut error = self.dialect.classify_error(status, &body);
            if let ProviderError::RateLimited { retry_after, .. } = &mut error
                && retry_after.is_none()
            {
                *retry_after = hints.retry_after;
            }
            return Attempt::Status(status, error, hints);
        }
        if let Some(kind) = not_an_event_stream(&response) {
            let body = read_capped(response, MAX_QUOTED_BODY, &self.timeouts).await;
            let message = format!(
                "the server answered with {kind}, not an event stream (is the base URL the \
                 API's, not a website's or a proxy's?); the body begins: {}",
                quote(&body, MAX_QUOTED_CHARS)
            );
            return Attempt::Failed(ProviderError::Protocol { message }, hints);
        }
        let mut reader = Reader {
            response,
            body: BodyDecoder::new(self.dialect, self.limits),
            idle: self.timeouts.idle,
            first_read: Some(self.timeouts.first_byte),
            ended: false,
            key: self.key.clone(),
            mcp_tokens: req.options.mcp_tokens().map(str::to_owned).collect(),
        };
        let mut ready = VecDeque::new();
        loop {
            match reader.next_batch().await {
                Ok(Some(batch)) => {
                    let content = batch.iter().any(is_content);
                    ready.extend(batch);
                    if content {
                        return Attempt::Streaming(Box::new(reader), ready);
                    }
                }
                Ok(None) => return Attempt::Streaming(Box::new(reader), ready),
                Err(e) => return Attempt::Failed(e, hints),
            }
        }
    }
}

#[async_trait]
impl LlmClient for HttpClient {
    fn retries_before_content(&self) -> bool {
        self.retry.max_retries > 0
    }

    fn share_rate_observer(&self, observer: Arc<dyn RateObserver>) -> bool {
        self.observer.set(observer).is_ok()
    }

    async fn stream(&self, req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        models::validate(&req)?;
        // Encoded once: every retry sends the same bytes.
        let body = bytes::Bytes::from(self.dialect.encode(&req)?);
        let mut attempt_no = 0;
        loop {
            let (error, failure, hints) = match self.attempt(&body, &req).await {
                Attempt::Streaming(reader, ready) => return Ok(reader.into_stream(ready)),
                Attempt::Status(status, error, hints) => (error, Failure::Status(status), hints),
                Attempt::Failed(error, hints) => {
                    let failure = Failure::of(&error);
                    (error, failure, hints)
                }
            };
            // Scrubbed before it is logged or returned: a provider may echo a key, or an MCP
            // server's token it could not use.
            let error = error
                .redacted()
                .without_secrets(self.key.as_ref().map(ApiKey::expose))
                .without_secrets(req.options.mcp_tokens());
            match self
                .retry
                .decide(attempt_no, failure, hints, fastrand::f64())
            {
                Some(wait) => {
                    // Not before the account's shared backoff ends: a retry of its own would
                    // meet the same 429 the backoff is there to avoid.
                    let wait = match self.observer.get() {
                        Some(observer) => wait.max(observer.hold(&req.model)),
                        None => wait,
                    };
                    // An event of the current span: on the `chat` span it becomes a span event.
                    tracing::info!(
                        dialect = %self.dialect,
                        motet.retry.attempt = attempt_no + 1,
                        motet.retry.wait_ms = wait.as_millis() as u64,
                        error.type = ?failure,
                        error.message = %error,
                        "retry"
                    );
                    tokio::time::sleep(wait).await;
                    attempt_no += 1;
                }
                None => return Err(error),
            }
        }
    }
}

enum Attempt {
    /// The stream is flowing; these events are ready.
    Streaming(Box<Reader>, VecDeque<LlmEvent>),
    /// The server answered with an error status.
    Status(u16, ProviderError, RetryHints),
    /// The attempt failed before content.
    Failed(ProviderError, RetryHints),
}

/// Reads a 2xx streaming body into the [`BodyDecoder`], under the timeouts.
struct Reader {
    response: reqwest::Response,
    body: BodyDecoder,
    idle: Duration,
    /// The wait for the first body bytes, then `None` (the idle wait applies).
    first_read: Option<Duration>,
    ended: bool,
    /// The key the call was made with, to scrub from a failure mid-stream.
    key: Option<ApiKey>,
    /// The MCP servers' tokens the request carried, scrubbed likewise.
    mcp_tokens: Vec<String>,
}

impl Reader {
    /// The next non-empty batch of events, `None` at a clean end.
    async fn next_batch(&mut self) -> Result<Option<Vec<LlmEvent>>, ProviderError> {
        while !self.ended {
            let (wait, phase) = match self.first_read.take() {
                Some(wait) => (wait, "first byte"),
                None => (self.idle, "next event"),
            };
            let chunk = match tokio::time::timeout(wait, self.response.chunk()).await {
                Err(_) => return Err(timeout(phase)),
                Ok(Err(e)) => return Err(broken(e)),
                Ok(Ok(chunk)) => chunk,
            };
            match chunk {
                Some(bytes) => self.body.push(&bytes)?,
                None => {
                    self.ended = true;
                    self.body.finish()?;
                }
            }
            let events = self.body.take_events();
            if !events.is_empty() {
                return Ok(Some(events));
            }
        }
        Ok(None)
    }

    fn into_stream(self: Box<Self>, ready: VecDeque<LlmEvent>) -> LlmEvents {
        let state = (self, ready, false);
        Box::pin(futures::stream::unfold(
            state,
            |(mut reader, mut ready, failed)| async move {
                if failed {
                    return None;
                }
                loop {
                    if let Some(event) = ready.pop_front() {
                        return Some((Ok(event), (reader, ready, false)));
                    }
                    match reader.next_batch().await {
                        Ok(Some(batch)) => ready.extend(batch),
                        Ok(None) => return None,
                        Err(e) => {
                            let e = e
                                .redacted()
                                .without_secrets(reader.key.as_ref().map(ApiKey::expose))
                                .without_secrets(reader.mcp_tokens.iter().map(String::as_str));
                            return Some((Err(e), (reader, ready, true)));
                        }
                    }
                }
            },
        ))
    }
}

/// Text, reasoning or a tool call: what makes a retry unsafe once the caller has seen it.
fn is_content(event: &LlmEvent) -> bool {
    matches!(
        event,
        LlmEvent::TextDelta { .. }
            | LlmEvent::ReasoningStart { .. }
            | LlmEvent::ReasoningDelta { .. }
            | LlmEvent::ReasoningComplete { .. }
            | LlmEvent::ToolCallStart { .. }
            | LlmEvent::ToolCallDelta { .. }
            | LlmEvent::ToolCallComplete { .. }
            | LlmEvent::Done { .. }
    )
}

/// Redirects followed within one origin before giving up.
const MAX_REDIRECTS: usize = 5;

fn http_client(timeouts: &Timeouts) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .redirect(reqwest::redirect::Policy::custom(same_origin_only))
        .build()
        .map_err(|e| ProviderError::Config {
            message: format!("cannot build the HTTP client: {}", e.without_url()),
        })
}

/// Follows a redirect only to the origin the request was sent to. Provider APIs do not
/// redirect their POSTs; a redirect elsewhere would carry the API key headers reqwest keeps
/// (`x-api-key`, `x-goog-api-key`: it strips only `Authorization`) and the prompt to another
/// host. The redirect response itself comes back, and [`redirected`] turns it into an error.
fn same_origin_only(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let first = attempt.previous().first().map(reqwest::Url::origin);
    let same = first.is_some_and(|origin| origin == attempt.url().origin());
    if same && attempt.previous().len() <= MAX_REDIRECTS {
        attempt.follow()
    } else {
        attempt.stop()
    }
}

/// The error for a redirect the client did not follow.
fn redirected(response: &reqwest::Response) -> ProviderError {
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("nowhere");
    let message = format!(
        "the server answered {} redirecting to {location}, which was not followed (another \
         origin, or more than {MAX_REDIRECTS} redirects): the API key and the prompt go only \
         to the configured server; set its base URL to where the API is",
        response.status().as_u16()
    );
    ProviderError::Config {
        message: crate::error::redact_keys(&message),
    }
}

fn hints(response: &reqwest::Response) -> RetryHints {
    let now = jiff::Timestamp::now().as_second();
    RetryHints::from_headers(
        response
            .headers()
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?))),
        now,
    )
}

/// The most of an error body kept (a proxy's HTML page can be large).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The most read of a 2xx body that is not an event stream, and the most of it quoted.
const MAX_QUOTED_BODY: usize = 1024;
const MAX_QUOTED_CHARS: usize = 300;

/// Up to `max` bytes of a body that is not a stream (an error, a page), lossy UTF-8: what
/// arrived before a read waited the `idle` timeout, or `timeouts.first_byte` passed in all. A
/// body trickled a byte at a time, each just inside the idle timeout, would otherwise hold the
/// call for as long as the server likes.
async fn read_capped(mut response: reqwest::Response, max: usize, timeouts: &Timeouts) -> String {
    let mut body = Vec::new();
    let read = async {
        while body.len() < max {
            match tokio::time::timeout(timeouts.idle, response.chunk()).await {
                Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(timeouts.first_byte, read).await;
    body.truncate(max);
    String::from_utf8_lossy(&body).into_owned()
}

/// The `content-type` of a response that is not an event stream; `None` for one that is,
/// whatever its case and parameters (`text/event-stream; charset=utf-8`, as OpenAI and
/// Anthropic send it), or that names no type (some minimal servers omit it; the body then
/// decides).
fn not_an_event_stream(response: &reqwest::Response) -> Option<String> {
    let value = response.headers().get(reqwest::header::CONTENT_TYPE)?;
    let Ok(text) = value.to_str() else {
        return Some("an unreadable content-type".to_owned());
    };
    let media = text.split(';').next().unwrap_or_default().trim();
    if media.is_empty() || media.eq_ignore_ascii_case("text/event-stream") {
        return None;
    }
    Some(text.trim().chars().take(100).collect())
}

/// The start of `body` in quotes, its whitespace runs made single spaces, at most `chars`
/// characters (`…` when cut).
fn quote(body: &str, chars: usize) -> String {
    let flat = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return "nothing (an empty body)".to_owned();
    }
    let mut quoted: String = flat.chars().take(chars).collect();
    if quoted.len() < flat.len() {
        quoted.push('…');
    }
    format!("\"{quoted}\"")
}

fn timeout(phase: &str) -> ProviderError {
    ProviderError::Timeout {
        phase: phase.to_owned(),
    }
}

/// A failure before the response headers. The server was not reached (a connection error,
/// the connect timeout) unless HTTP could not read its answer: then it answered with
/// something that is not a usable HTTP head (headers past the client's limit, garbage), which
/// a retry would only fetch again.
fn transport(e: reqwest::Error) -> ProviderError {
    if e.is_timeout() {
        return timeout("connect");
    }
    let e = e.without_url();
    let chain = error_chain(&e);
    match http_error(&e) {
        // hyper says which parse failure only with its server feature; the chain names it
        // ("message head is too large", "invalid HTTP status-code parsed").
        Some(http) if !e.is_connect() && http.is_parse() => ProviderError::Protocol {
            message: format!(
                "the server's answer is not a usable HTTP response head (response headers too \
                 large for the HTTP client, or malformed): {chain}"
            ),
        },
        _ => ProviderError::Connect { message: chain },
    }
}

/// A failure reading the body of a 2xx response: the server was reached and answered, then
/// the body broke off (the connection closed or reset, chunked framing broken). Retried when
/// nothing had reached the caller yet, like a stream that ended early.
fn broken(e: reqwest::Error) -> ProviderError {
    ProviderError::StreamTruncated {
        reason: format!(
            "the stream broke off after the server answered: {}",
            error_chain(&e.without_url())
        ),
    }
}

/// The HTTP stack's own error among `e`'s causes, which says what kind of failure it was.
fn http_error(e: &reqwest::Error) -> Option<&hyper::Error> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = source {
        if let Some(http) = error.downcast_ref::<hyper::Error>() {
            return Some(http);
        }
        source = error.source();
    }
    None
}

/// An error and its causes on one line (reqwest's Display shows only the outermost).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod window_tests {
    use super::*;

    #[test]
    fn the_props_of_a_llama_server_give_its_slot_context() {
        let props =
            br#"{"default_generation_settings":{"n_ctx":2048,"params":{}},"total_slots":2}"#;
        assert_eq!(served_window(props), Some(2048));
        assert_eq!(served_window(br#"{"n_ctx":4096}"#), Some(4096));
        for other in [
            &br#"{"default_generation_settings":{"n_ctx":0}}"#[..],
            br#"{"default_generation_settings":{"n_ctx":-1}}"#,
            br#"{"default_generation_settings":{"n_ctx":"big"}}"#,
            br#"{"n_ctx":99999999999}"#,
            br#"[]"#,
            b"not json",
        ] {
            assert_eq!(
                served_window(other),
                None,
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn props_live_beside_the_v1_api() {
        assert_eq!(
            props_url("http://127.0.0.1:8089/v1"),
            "http://127.0.0.1:8089/props"
        );
        assert_eq!(
            props_url("http://127.0.0.1:8089/v1/"),
            "http://127.0.0.1:8089/props"
        );
        assert_eq!(props_url("http://h:1/llm"), "http://h:1/llm/props");
    }
}
