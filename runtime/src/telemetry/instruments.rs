//! The runtime's metric instruments, taken from the global meter provider and taken again when
//! motet's telemetry installs one.

use std::sync::{Arc, RwLock};

use opentelemetry::metrics::{Counter, Histogram, UpDownCounter};

/// The runtime's metric instruments, taken from the global meter provider.
pub(crate) struct Instruments {
    /// `gen_ai.client.token.usage`: tokens per LLM call, by `gen_ai.token.type`.
    pub(crate) token_usage: Histogram<u64>,
    /// `gen_ai.client.operation.duration`: seconds per LLM call.
    pub(crate) operation_duration: Histogram<f64>,
    /// `motet.llm.cost`: dollars spent on LLM calls at the price table's prices, by provider,
    /// model and `motet.call.kind` (turn or summary).
    pub(crate) cost: Counter<f64>,
    /// `motet.requests`: requests finished, by `motet.request.status`.
    pub(crate) requests: Counter<u64>,
    /// `motet.errors`: failures, by `error.type`.
    pub(crate) errors: Counter<u64>,
    /// `motet.agent.restarts`: thread actors restarted by their supervisor.
    pub(crate) restarts: Counter<u64>,
    /// `motet.queue.depth`: requests waiting behind a running one.
    pub(crate) queue_depth: UpDownCounter<i64>,
    /// `motet.person.waiting`: tool calls waiting for a person now, by `motet.wait.kind`.
    pub(crate) waiting: UpDownCounter<i64>,
    /// `motet.person.wait.duration`: seconds a tool call waited for a person, by
    /// `motet.wait.kind` and `motet.wait.outcome`.
    pub(crate) wait_duration: Histogram<f64>,
    /// `motet.llm.wait.duration`: seconds an LLM call waited for its provider account's shared
    /// limits, by `motet.limits.account` and `motet.priority`.
    pub(crate) llm_wait: Histogram<f64>,
}

impl Instruments {
    pub(crate) fn new() -> Self {
        let meter = opentelemetry::global::meter("motet");
        Self {
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .with_boundaries(vec![
                    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0,
                    1048576.0, 4194304.0, 16777216.0, 67108864.0,
                ])
                .build(),
            operation_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(vec![
                    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                    40.96, 81.92,
                ])
                .build(),
            cost: meter
                .f64_counter("motet.llm.cost")
                .with_unit("USD")
                .with_description("Cost of LLM calls at the price table's prices")
                .build(),
            requests: meter
                .u64_counter("motet.requests")
                .with_description("RequestRecords finished by agents")
                .build(),
            errors: meter
                .u64_counter("motet.errors")
                .with_description("Failed requests, LLM calls and tool runs")
                .build(),
            restarts: meter
                .u64_counter("motet.agent.restarts")
                .with_description("Agent threads restarted by their supervisor")
                .build(),
            queue_depth: meter
                .i64_up_down_counter("motet.queue.depth")
                .with_description("RequestRecords queued behind a running request on their thread")
                .build(),
            waiting: meter
                .i64_up_down_counter("motet.person.waiting")
                .with_description("Tool calls waiting for a person's approval or answer")
                .build(),
            wait_duration: meter
                .f64_histogram("motet.person.wait.duration")
                .with_unit("s")
                .with_description("Time a tool call waited for a person")
                .with_boundaries(vec![
                    1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0, 604800.0,
                ])
                .build(),
            llm_wait: meter
                .f64_histogram("motet.llm.wait.duration")
                .with_unit("s")
                .with_description("Time an LLM call waited for its provider account's limits")
                .with_boundaries(vec![
                    0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
                ])
                .build(),
        }
    }
}

/// The process's instruments, built from the global meter provider on first use and built
/// again after motet's telemetry installs a provider ([`rebind_instruments`]), so a runtime
/// used before `init()` still reports to the provider installed later.
static INSTRUMENTS: RwLock<Option<Arc<Instruments>>> = RwLock::new(None);

/// The runtime's metric instruments.
pub(crate) fn instruments() -> Arc<Instruments> {
    if let Some(bound) = INSTRUMENTS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
    {
        return bound.clone();
    }
    INSTRUMENTS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get_or_insert_with(|| Arc::new(Instruments::new()))
        .clone()
}

/// Forgets the instruments, so the next use takes them from the current global meter provider.
pub(super) fn rebind_instruments() {
    *INSTRUMENTS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}
