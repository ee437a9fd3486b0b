//! Each HTTP request in a span of its own, joined to the trace it belongs to.
//!
//! A request that starts a run (a native run, an OpenAI-compatible completion) is the run's
//! root: the run is traced inside the request's span. A request about a run this server holds
//! (`/api/agents/{agent}/runs/{run}`, its events, cancel, steer) continues the trace of the
//! request that started it, so a run's reads, streams and controls sit in the run's trace. Any
//! other request continues the caller's trace when it sends a W3C `traceparent` header.
//! Nothing is looked up while no tracing subscriber records the span.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use motet_signals::TraceContext;
use tracing::Instrument;

use crate::Shared;

/// Each request in an `http.request` span (method and path; never its headers, which carry the
/// token), parented as the module says.
pub(crate) async fn traced(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> axum::response::Response {
    let span = tracing::info_span!(
        "http.request",
        method = %request.method(),
        path = %request.uri().path(),
        status = tracing::field::Empty,
        run = tracing::field::Empty,
    );
    if !span.is_disabled() {
        let path = request.uri().path();
        let of_run = run_of_path(path).and_then(|(agent, run)| {
            let run = shared.runs.get(run).filter(|r| r.agent == agent)?;
            span.record("run", run.id.as_str());
            Some(run.trace.clone())
        });
        let parent = of_run.or_else(|| caller_trace(&request));
        if let Some(parent) = parent {
            motet_runtime::telemetry::continue_trace(&span, &parent);
        }
    }
    let response = next.run(request).instrument(span.clone()).await;
    span.record("status", response.status().as_u16());
    response
}

/// The trace the caller's `traceparent` (and `tracestate`) headers name.
fn caller_trace(request: &Request) -> Option<TraceContext> {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let traceparent = header("traceparent")?;
    Some(TraceContext {
        traceparent: Some(traceparent),
        tracestate: header("tracestate"),
    })
}

/// The agent and run a native path addresses (`/api/agents/{agent}/runs/{run}` and below).
fn run_of_path(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/api/agents/")?;
    let mut parts = rest.split('/');
    let agent = parts.next().filter(|a| !a.is_empty())?;
    let run = match (parts.next(), parts.next()) {
        (Some("runs"), Some(run)) if !run.is_empty() => run,
        _ => return None,
    };
    Some((agent, run))
}

#[cfg(test)]
mod tests {
    use super::run_of_path;

    #[test]
    fn a_run_path_names_its_agent_and_run() {
        assert_eq!(
            run_of_path("/api/agents/calc/runs/req_1"),
            Some(("calc", "req_1"))
        );
        assert_eq!(
            run_of_path("/api/agents/calc/runs/req_1/events"),
            Some(("calc", "req_1"))
        );
        assert_eq!(run_of_path("/api/agents/calc/runs/"), None);
        assert_eq!(run_of_path("/api/agents/calc/threads/t/runs"), None);
        assert_eq!(run_of_path("/api/agents//runs/r"), None);
        assert_eq!(run_of_path("/v1/chat/completions"), None);
        assert_eq!(run_of_path("/api/agents/calc"), None);
    }
}
