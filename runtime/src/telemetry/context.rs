//! Trace context across signals (W3C `traceparent`/`tracestate` in a signal's extensions), and
//! whether prompt and completion content is recorded on spans.

use std::sync::atomic::{AtomicBool, Ordering};

use motet_signals::TraceContext;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether prompt and completion content (and tool arguments and results) are recorded on
/// spans.
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// Turns content capture on or off for the whole process.
pub fn set_capture_content(capture: bool) {
    CAPTURE_CONTENT.store(capture, Ordering::Relaxed);
}

/// The W3C trace context of `span`, for a signal's extensions; empty when the span is not
/// recorded by OpenTelemetry.
pub fn context_of(span: &tracing::Span) -> TraceContext {
    let mut carrier = TraceContext::default();
    if span.is_disabled() {
        return carrier;
    }
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return carrier;
    }
    TraceContextPropagator::new().inject_context(&context, &mut Carrier(&mut carrier));
    carrier
}

/// Makes `span` continue the trace `trace` names (when it names one).
pub fn continue_trace(span: &tracing::Span, trace: &TraceContext) {
    if span.is_disabled() || trace.traceparent.is_none() {
        return;
    }
    let context = TraceContextPropagator::new().extract(&ReadCarrier(trace));
    if context.span().span_context().is_valid() {
        let _ = span.set_parent(context);
    }
}

struct Carrier<'a>(&'a mut TraceContext);

impl Injector for Carrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        match key {
            "traceparent" => self.0.traceparent = Some(value),
            "tracestate" if !value.is_empty() => self.0.tracestate = Some(value),
            _ => {}
        }
    }
}

struct ReadCarrier<'a>(&'a TraceContext);

impl Extractor for ReadCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.0.traceparent.as_deref(),
            "tracestate" => self.0.tracestate.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}
