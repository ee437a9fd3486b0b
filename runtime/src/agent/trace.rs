//! The spans a thread actor opens: one `invoke_agent` per request, one per signal handled, one
//! per directive executed, named and attributed after the OpenTelemetry GenAI conventions
//! (docs/observability.md has the tree). Each span's parent is given explicitly: the request's
//! span when the signal belongs to a request this thread runs, otherwise the trace the signal
//! arrived with — so work that crosses agents through signals stays in one trace.

use motet_directives::{LlmRequest, LlmResponse, Message, ModelRef, ToolResult};
use motet_signals::Signal;
use opentelemetry::trace::Status;
use opentelemetry::{KeyValue, Value};
use tracing::{Id, Span, field::Empty};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::telemetry::{capture_content, continue_trace, instruments};

/// The span of one request handled by `agent` on `thread`, continuing the trace its request
/// signal carries (the caller's span).
pub(crate) fn request_span(agent: &str, thread: &str, request: &str, signal: &Signal) -> Span {
    let span = tracing::info_span!(
        parent: None,
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {agent}"),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = agent,
        gen_ai.conversation.id = thread,
        motet.agent.id = agent,
        motet.thread.id = thread,
        motet.request.id = request,
        motet.signal.type = signal.signal_type().as_str(),
    );
    continue_trace(&span, signal.trace());
    span
}

/// The span of one signal going through the strategy.
pub(crate) fn handle_span(agent: &str, thread: &str, signal: &Signal, parent: Option<Id>) -> Span {
    let span = tracing::info_span!(
        parent: parent.clone(),
        "handle",
        otel.name = %format_args!("handle {}", signal.signal_type().as_str()),
        motet.agent.id = agent,
        motet.thread.id = thread,
        motet.request.id = signal.request_id(),
        motet.signal.type = signal.signal_type().as_str(),
        motet.thread.rev = Empty,
        motet.directives = Empty,
    );
    if parent.is_none() {
        continue_trace(&span, signal.trace());
    }
    span
}

/// The span of a directive other than an LLM call or a tool run: `{kind} {what}`.
pub(crate) fn directive_span(kind: &'static str, what: &str, parent: Option<Id>) -> Span {
    tracing::info_span!(
        parent: parent,
        "directive",
        otel.name = %format_args!("{kind} {what}"),
        motet.directive.kind = kind,
    )
}

/// `chat {model}`: one LLM call, kind CLIENT.
pub(crate) fn chat_span(request: &LlmRequest, parent: Option<Id>, iteration: u32) -> Span {
    let model = request.model.model();
    let span = tracing::info_span!(
        parent: parent,
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider_name(request.model.provider()),
        gen_ai.request.model = model,
        gen_ai.request.max_tokens = request.options.max_tokens,
        gen_ai.request.temperature = request.options.temperature,
        gen_ai.request.top_p = request.options.top_p,
        motet.directive.kind = "llm_stream",
        motet.iteration = iteration,
    );
    // Blocks kept for another provider (its server tools' calls and results) are not sent:
    // say how many, so a trace shows what the model did not see.
    if !span.is_disabled()
        && let Ok(dialect) = motet_providers::models::dialect_for(&request.model)
    {
        let dropped = dialect.unreplayed_blocks(request);
        if dropped > 0 {
            span.set_attribute("motet.replay.dropped_blocks", dropped as i64);
            tracing::info!(parent: &span, dropped, "blocks kept for another provider are not sent to this one");
        }
    }
    if capture_content() && !span.is_disabled() {
        let (system, messages): (Vec<&Message>, Vec<&Message>) = request
            .messages
            .iter()
            .partition(|m| matches!(m, Message::System { .. }));
        if let Ok(json) = serde_json::to_string(&system) {
            span.set_attribute("gen_ai.system_instructions", json);
        }
        if let Ok(json) = serde_json::to_string(&messages) {
            span.set_attribute("gen_ai.input.messages", json);
        }
    }
    span
}

/// Records what the call returned on its span, and the GenAI metrics.
pub(crate) fn chat_finished(
    span: &Span,
    model: &ModelRef,
    outcome: Result<&LlmResponse, &str>,
    elapsed: std::time::Duration,
) {
    let provider = provider_name(model.provider());
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", provider),
        KeyValue::new("gen_ai.request.model", model.model().to_owned()),
    ];
    match outcome {
        Ok(response) => {
            let usage = response.usage;
            if !span.is_disabled() {
                if let Some(model) = &response.model {
                    span.set_attribute("gen_ai.response.model", model.clone());
                }
                if let Some(id) = &response.response_id {
                    span.set_attribute("gen_ai.response.id", id.clone());
                }
                let reason = finish_reason(response);
                span.set_attribute(
                    "gen_ai.response.finish_reasons",
                    Value::Array(vec![opentelemetry::StringValue::from(reason)].into()),
                );
                span.set_attribute("gen_ai.usage.input_tokens", to_i64(usage.input_tokens));
                span.set_attribute("gen_ai.usage.output_tokens", to_i64(usage.output_tokens));
                if usage.cache_read_tokens > 0 {
                    span.set_attribute(
                        "gen_ai.usage.cache_read.input_tokens",
                        to_i64(usage.cache_read_tokens),
                    );
                }
                if usage.cache_write_tokens > 0 {
                    span.set_attribute(
                        "gen_ai.usage.cache_creation.input_tokens",
                        to_i64(usage.cache_write_tokens),
                    );
                }
                if usage.reasoning_tokens > 0 {
                    span.set_attribute(
                        "gen_ai.usage.reasoning.output_tokens",
                        to_i64(usage.reasoning_tokens),
                    );
                }
                if capture_content()
                    && let Ok(json) = serde_json::to_string(&response.message)
                {
                    span.set_attribute("gen_ai.output.messages", json);
                }
            }
            if let Some(model) = &response.model {
                attributes.push(KeyValue::new("gen_ai.response.model", model.clone()));
            }
            let metrics = instruments();
            for (kind, tokens) in [
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
            ] {
                let mut with_type = attributes.clone();
                with_type.push(KeyValue::new("gen_ai.token.type", kind));
                metrics.token_usage.record(tokens, &with_type);
            }
        }
        Err(error) => {
            failed(span, "llm_error", error);
            attributes.push(KeyValue::new("error.type", "llm_error"));
            instruments()
                .errors
                .add(1, &[KeyValue::new("error.type", "llm_error")]);
        }
    }
    instruments()
        .operation_duration
        .record(elapsed.as_secs_f64(), &attributes);
}

/// Records what an answered call cost on its `chat` span (`motet.llm.cost_usd`, and
/// `motet.llm.cached_share`: the share of input tokens read from the provider's cache) and on
/// the `motet.llm.cost` counter. An unpriced call records its cached share only.
pub(crate) fn chat_cost(
    span: &Span,
    model: &ModelRef,
    kind: motet_providers::CallKind,
    usage: &motet_directives::Usage,
    cost: Option<motet_providers::Cost>,
) {
    if !span.is_disabled() {
        if let Some(cost) = cost {
            span.set_attribute("motet.llm.cost_usd", cost.usd());
        }
        span.set_attribute("motet.llm.cached_share", crate::store::cached_share(usage));
    }
    if let Some(cost) = cost {
        instruments().cost.add(
            cost.usd(),
            &[
                KeyValue::new("gen_ai.provider.name", provider_name(model.provider())),
                KeyValue::new("gen_ai.request.model", model.model().to_owned()),
                KeyValue::new("motet.call.kind", kind.as_str()),
            ],
        );
    }
}

/// `execute_tool {name}`.
pub(crate) fn tool_span(name: &str, tool_call_id: &str, args: &str, parent: Option<Id>) -> Span {
    let span = tracing::info_span!(
        parent: parent,
        "execute_tool",
        otel.name = %format_args!("execute_tool {name}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = tool_call_id,
        gen_ai.tool.type = "function",
        motet.directive.kind = "tool_exec",
    );
    if capture_content() && !span.is_disabled() {
        span.set_attribute("gen_ai.tool.call.arguments", args.to_owned());
    }
    span
}

/// Records a tool's result on its span.
pub(crate) fn tool_finished(span: &Span, result: &ToolResult) {
    if span.is_disabled() {
        return;
    }
    if capture_content() {
        span.set_attribute("gen_ai.tool.call.result", result.content.clone());
    }
    if result.is_error {
        failed(span, "tool_error", &result.content);
        instruments()
            .errors
            .add(1, &[KeyValue::new("error.type", "tool_error")]);
    }
}

/// Marks a tool span as ending in a pause for a person (`approval` or `question`).
pub(crate) fn tool_paused(span: &Span, kind: &'static str) {
    if !span.is_disabled() {
        span.set_attribute("motet.tool.paused", kind);
    }
}

/// The span of one tool call's wait for a person, from when the thread saw it wait until a
/// response (or the request's end) took it out of the waiting list.
pub(crate) fn wait_span(
    agent: &str,
    thread: &str,
    waiting: &motet_agents::Waiting,
    parent: Option<Id>,
) -> Span {
    let kind = wait_kind(waiting);
    tracing::info_span!(
        parent: parent,
        "wait",
        otel.name = %format_args!("wait_for_person {}", waiting.tool),
        motet.agent.id = agent,
        motet.thread.id = thread,
        motet.request.id = waiting.request_id.as_str(),
        gen_ai.tool.name = waiting.tool.as_str(),
        gen_ai.tool.call.id = waiting.tool_call_id.as_str(),
        motet.wait.kind = kind,
        motet.wait.since_ms = waiting.since_ms,
        motet.wait.outcome = Empty,
    )
}

/// `approval` or `question`.
pub(crate) fn wait_kind(waiting: &motet_agents::Waiting) -> &'static str {
    if waiting.pause.is_approval() {
        "approval"
    } else {
        "question"
    }
}

/// Marks `span` failed: status ERROR with `description`, and `error.type`.
pub(crate) fn failed(span: &Span, error_type: &'static str, description: &str) {
    if span.is_disabled() {
        return;
    }
    span.set_attribute("error.type", error_type);
    span.set_status(Status::error(description.to_owned()));
}

/// The GenAI conventions' provider names.
fn provider_name(provider: &str) -> &'static str {
    match provider {
        "openai" | "openai-responses" => "openai",
        "anthropic" => "anthropic",
        "gemini" => "gcp.gemini",
        "openai-compat" => "openai_compatible",
        _ => "unknown",
    }
}

fn finish_reason(response: &LlmResponse) -> String {
    serde_json::to_value(&response.message.stop_reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
