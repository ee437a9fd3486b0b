//! motet: an actor-based multi-agent LLM runtime.
//!
//! Many agents live in one process; each is a supervised actor whose pure strategy turns one
//! signal into directives that the runtime executes. This crate is the facade: it re-exports the
//! member crates and a [`prelude`].
//!
//! # Layout
//! - [`signals`] — the Signal envelope, type router and bus.
//! - [`directives`] — what a strategy asks the runtime to do, and the LLM vocabulary.
//! - [`agents`] — Strategy, Thread, context projection, ReAct (pure).
//! - [`providers`] — streaming LLM clients for four dialects, with exact reasoning replay.
//! - [`runtime`] — agent actors, supervision, registry, stores, telemetry.
//! - `mcp` — MCP servers' tools as motet tools (cargo feature `mcp`, on by default).
//! - `jetstream` — the durable signal bus on NATS JetStream (cargo feature `jetstream`, off by
//!   default; docs/bus.md).
//! - `serve` — agents over HTTP: the native API with resumable SSE runs (cargo feature
//!   `serve`, on by default; docs/serve.md).

pub use motet_agents as agents;
pub use motet_directives as directives;
#[cfg(feature = "jetstream")]
pub use motet_jetstream as jetstream;
#[cfg(feature = "mcp")]
pub use motet_mcp as mcp;
pub use motet_providers as providers;
pub use motet_runtime as runtime;
#[cfg(feature = "serve")]
pub use motet_serve as serve;
pub use motet_signals as signals;

/// OpenTelemetry setup: `let _guard = motet::telemetry::init()?;` exports every request's
/// spans and the GenAI metrics to `OTEL_EXPORTER_OTLP_ENDPOINT` (docs/observability.md).
pub use motet_runtime::telemetry;

/// The names the README tour and the examples use, in one import: `use motet::prelude::*;`.
/// Everything else is in the member crates ([`agents`], [`directives`], [`runtime`], ...).
pub mod prelude {
    pub use motet_agents::{
        Env, Input, ReAct, ReActConfig, Strategy, StrategyError, Thread, Waiting,
    };
    pub use motet_directives::{
        Approval, Directive, ModelRef, Response, ResponseFormat, ToolChoice,
    };
    pub use motet_providers::{LlmClient, Providers};
    pub use motet_runtime::agent::{
        AgentHandle, AgentSpec, AgentTool, Answer, AskError, AskOptions, CalleeThread, Handoff,
        HistoryFilter, ReActAgent, Runtime, RuntimeError, StructuredError, Ticket,
    };
    pub use motet_runtime::store::SqliteStore;
    pub use motet_runtime::tool::{Tool, ToolError, ToolSet, tool_fn};
    pub use motet_signals::{Pattern, Signal};
}
