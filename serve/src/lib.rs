//! motet's agents over HTTP.
//!
//! [`Served`] gathers a runtime's agents and the tokens allowed to reach them; [`Served::router`]
//! is an axum router a program mounts in its own server, [`Served::serve`] runs it on a listener
//! until told to stop, and `motet serve` runs it on its own.
//!
//! Layout:
//! - `native.rs` + `native/`: the native API (agents, threads, runs streamed as SSE with ids
//!   and resumable, waits for a person), `/healthz`, `/readyz`, `/openapi.json`;
//! - `runs.rs` + `runs/`: a run's task, its event log and its subscribers (the decisions pure:
//!   `runs/log.rs`, `runs/admit.rs`);
//! - `openai.rs`: an OpenAI-compatible endpoint (`/v1/models`, `/v1/chat/completions`);
//! - `a2a.rs` + `a2a/`: A2A 1.0 (agent cards, JSON-RPC over HTTP and SSE), its tasks being runs;
//! - `auth.rs`: bearer tokens scoped to agents; `error.rs`: the API's typed errors; `ids.rs`:
//!   ids checked; `openapi.rs`: the OpenAPI document; `trace.rs`: each request's span, joined
//!   to its trace;
//! - `console.rs`: the web console at `/` (its page, script and stylesheet in serve/console/,
//!   built into the binary).
//!
//! docs/serve.md has the whole surface.
//!
//! ```no_run
//! # async fn run(runtime: motet_runtime::agent::Runtime, agent: motet_runtime::agent::AgentHandle) -> std::io::Result<()> {
//! use motet_serve::{Served, Tokens};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8420").await?;
//! let served = Served::new(runtime, [agent], Tokens::open());
//! // Until the program stops it (any future: a signal, a channel).
//! served.serve(listener, std::future::pending()).await
//! # }
//! ```

mod a2a;
mod auth;
mod console;
mod error;
mod ids;
mod native;
mod openai;
mod openapi;
mod runs;
mod trace;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use motet_runtime::agent::{AgentHandle, Runtime};
use tokio::sync::watch;

pub use auth::{Scope, Tokens};
pub use error::ApiError;
pub use runs::{BufferLimits, RunLimits, StreamLimits};

/// The largest request body taken by default (1 MiB).
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// The agents one HTTP server serves, and who may reach them.
#[derive(Clone)]
pub struct Served {
    shared: Arc<Shared>,
    body_limit: usize,
    cors: Vec<String>,
}

/// What every route reads: the runtime, the served agents by name, the tokens, the runs.
pub(crate) struct Shared {
    pub(crate) runtime: Runtime,
    pub(crate) agents: BTreeMap<String, AgentHandle>,
    pub(crate) tokens: Tokens,
    /// The runs started over HTTP.
    pub(crate) runs: Arc<runs::Runs>,
    /// Set when the server shuts down: streams end (resumable elsewhere or later).
    pub(crate) closing: watch::Sender<bool>,
}

impl Served {
    /// Serves `agents` of `runtime`, reachable with any of `tokens`.
    pub fn new(
        runtime: Runtime,
        agents: impl IntoIterator<Item = AgentHandle>,
        tokens: Tokens,
    ) -> Self {
        let agents = agents
            .into_iter()
            .map(|agent| (agent.name().to_owned(), agent))
            .collect();
        Self {
            shared: Arc::new(Shared {
                runtime,
                agents,
                tokens,
                runs: Arc::new(runs::Runs::new(RunLimits::default())),
                closing: watch::channel(false).0,
            }),
            body_limit: DEFAULT_BODY_LIMIT,
            cors: Vec::new(),
        }
    }

    /// With runs kept and streamed within `limits` (a server's runs start afresh: call it
    /// before [`router`](Self::router)).
    pub fn with_run_limits(mut self, limits: RunLimits) -> Self {
        let shared = &self.shared;
        self.shared = Arc::new(Shared {
            runtime: shared.runtime.clone(),
            agents: shared.agents.clone(),
            tokens: shared.tokens.clone(),
            runs: Arc::new(runs::Runs::new(limits)),
            closing: watch::channel(false).0,
        });
        self
    }

    /// With request bodies of at most `bytes` (larger: 413).
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// With CORS for these origins (`https://app.example`); off when none is given.
    pub fn with_cors_origins(mut self, origins: impl IntoIterator<Item = String>) -> Self {
        self.cors = origins.into_iter().collect();
        self
    }

    /// Every route, ready to mount or to serve.
    pub fn router(&self) -> axum::Router {
        let a2a = a2a::table()
            .into_iter()
            .fold(axum::Router::new(), |router, (path, method)| {
                router.route(path, method)
            });
        let router = axum::Router::new()
            .merge(native::routes())
            .merge(a2a)
            .merge(openai::routes())
            .merge(console::routes())
            // After every merge: a router merged with a fallback of its own cannot be.
            .fallback(native::no_route)
            .method_not_allowed_fallback(native::no_method)
            .with_state(Arc::clone(&self.shared))
            .layer(DefaultBodyLimit::max(self.body_limit))
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&self.shared),
                trace::traced,
            ));
        match cors_layer(&self.cors) {
            Some(cors) => router.layer(cors),
            None => router,
        }
    }

    /// Serves [`router`](Self::router) on `listener` until `shutdown` completes; then new
    /// connections are refused, every run's stream ends with an `event: shutdown` (its
    /// subscribers resume with `Last-Event-ID` wherever the run goes on), and in-flight
    /// requests finish.
    ///
    /// # Errors
    /// The listener's, when it fails.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let shared = Arc::clone(&self.shared);
        axum::serve(listener, self.router())
            .with_graceful_shutdown(async move {
                shutdown.await;
                shared.closing.send_replace(true);
            })
            .await
    }

    /// Ends every run's stream now (as [`serve`](Self::serve) does at shutdown), for a program
    /// that mounts [`router`](Self::router) in its own server.
    pub fn close_streams(&self) {
        self.shared.closing.send_replace(true);
    }
}

/// CORS for `origins`, or none.
fn cors_layer(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allowed: Vec<axum::http::HeaderValue> = origins
        .iter()
        .filter_map(|origin| axum::http::HeaderValue::from_str(origin).ok())
        .collect();
    Some(
        tower_http::cors::CorsLayer::new()
            .allow_origin(allowed)
            .allow_methods(tower_http::cors::Any)
            .allow_headers([
                axum::http::header::AUTHORIZATION,
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderName::from_static("last-event-id"),
            ]),
    )
}
