//! An LLM call as a thread runs it: given its turn by the account's shared limits (a long wait
//! published as `llm.waiting`), streamed (its fragments published as `llm.delta`),
//! assembled, traced, and its failure turned into the strategy's `LlmError`.

use motet_directives::CallId;
use motet_directives::results::{LlmError, LlmErrorKind};
use motet_providers::{BlockAssembler, LlmEvent, ProviderError};
use motet_signals::Signal;

use super::core::RuntimeCore;
use crate::agent::trace;
use tracing::Instrument as _;

use crate::agent::events::{
    DeltaKind, LLM_DELTA, LLM_WAITING, LLM_WAITING_AFTER, LlmDelta, LlmWaiting,
};
use motet_providers::limits::{Claim, LimitError, Permit, Spent};

/// Streams one call inside its `chat` span, recording the response (or error) and the GenAI
/// metrics when it ends. `budget_approved` holds the soft budget limits a person approved for
/// its request; `None` checks the call against the hard budgets only (a summary, which no
/// person is asked about).
#[allow(clippy::too_many_arguments)] // the call, its approvals, and where it comes from
pub(crate) async fn stream_call(
    core: &RuntimeCore,
    request: motet_directives::LlmRequest,
    budget_approved: Option<&[motet_directives::budget::SoftLimit]>,
    scope: &motet_providers::CallScope,
    source: &str,
    cause: &Signal,
    call_id: &CallId,
    span: tracing::Span,
) -> Result<motet_directives::LlmResponse, CallFailure> {
    let model = request.model.clone();
    let started = std::time::Instant::now();
    let mut request = request;
    let input = crate::agent::costs::input_estimate(&request);
    // The budgets first: a call refused (or held for a person's approval) is never sent, and
    // fails like any other call.
    let outcome = match core
        .costs
        .admit(&*core.store, scope, &mut request, input, budget_approved)
        .await
    {
        Err(refused) => Err(CallFailure::from(refused)),
        Ok(reservation) => {
            let outcome = stream_events(core, request, scope, input, source, cause, call_id)
                .instrument(span.clone())
                .await;
            // Given back before the usage is counted, so the call is never counted twice.
            drop(reservation);
            if let Ok(response) = &outcome {
                let cost = core
                    .costs
                    .record(&*core.store, scope, &model, response)
                    .await;
                trace::chat_cost(&span, &model, scope.kind, &response.usage, cost);
            }
            outcome
        }
    };
    let error;
    let seen = match &outcome {
        Ok(response) => Ok(response),
        Err(failure) => {
            error = failure.error.to_string();
            Err(error.as_str())
        }
    };
    trace::chat_finished(&span, &model, seen, started.elapsed());
    // What an agent did, readable without a trace receiver (RUST_LOG=motet_runtime=info).
    let elapsed_ms = started.elapsed().as_millis();
    match &outcome {
        Ok(response) => core.activity.llm_answered(&response.usage),
        Err(_) => core.activity.llm_failed(),
    }
    match &outcome {
        Ok(response) => tracing::info!(
            %model,
            call = %call_id.as_str(),
            input_tokens = response.usage.input_tokens,
            output_tokens = response.usage.output_tokens,
            tool_calls = response.message.tool_calls().count(),
            elapsed_ms,
            "llm call answered"
        ),
        Err(failure) => {
            tracing::info!(%model, call = %call_id.as_str(), error = %failure.error, elapsed_ms, "llm call failed")
        }
    }
    outcome
}

/// A failed LLM call, and whether the client already retried it (before any content).
pub(crate) struct CallFailure {
    pub(crate) error: ProviderError,
    pub(crate) retried: bool,
}

impl From<ProviderError> for CallFailure {
    fn from(error: ProviderError) -> Self {
        Self {
            error,
            retried: false,
        }
    }
}

/// Streams one call: text and reasoning fragments are published on the bus as `llm.delta`
/// while they arrive (only when someone subscribed to that type), and the events are
/// assembled into the response.
async fn stream_events(
    core: &RuntimeCore,
    request: motet_directives::LlmRequest,
    scope: &motet_providers::CallScope,
    input: u64,
    source: &str,
    cause: &Signal,
    call_id: &CallId,
) -> Result<motet_directives::LlmResponse, CallFailure> {
    let claim = claim_for(core, &request, scope, input);
    let permit = wait_for_capacity(core, &request.model, claim, source, cause, call_id).await?;
    let mut events = core
        .llm
        .stream(request)
        .await
        .map_err(|error| CallFailure {
            error,
            retried: core.llm.retries_before_content(),
        })?;
    let publish = core.wants_deltas();
    let mut shown = false;
    let outcome = assemble(&mut events, |kind, delta| {
        if publish {
            shown = true;
            publish_delta(core, source, cause, call_id, kind, delta);
        }
    })
    .await;
    match &outcome {
        // What the provider counted goes back to the account in place of the estimate; a
        // call that reported nothing keeps the estimate charged.
        Ok(response) if !response.usage.is_zero() => permit.finish(Spent {
            input_tokens: response.usage.input_tokens,
            output_tokens: response.usage.output_tokens,
        }),
        _ => drop(permit),
    }
    if outcome.is_err() && shown {
        // What was shown of this call is not an answer: say so before the failure (and any
        // retry, which streams again from the start) reaches the strategy.
        publish_delta(core, source, cause, call_id, DeltaKind::Discard, "");
    }
    Ok(outcome?)
}

/// The output a call is assumed to generate when its request sets no `max_tokens` (the
/// Anthropic dialect's own default); what it did not use goes back when it finishes.
const DEFAULT_MAX_OUTPUT: u64 = 4096;

/// What a call asks of its account: its input estimated from the request (messages and tool
/// definitions), its `max_tokens`, who it is for, and the runtime's longest wait.
fn claim_for(
    core: &RuntimeCore,
    request: &motet_directives::LlmRequest,
    scope: &motet_providers::CallScope,
    input: u64,
) -> Claim {
    let output = request
        .options
        .max_tokens
        .map_or(DEFAULT_MAX_OUTPUT, u64::from);
    let mut claim = Claim::for_scope(scope, input, output);
    claim.deadline = core
        .llm_max_wait
        .and_then(|wait| std::time::Instant::now().checked_add(wait));
    claim
}

/// Waits for the account's capacity. A wait longer than [`LLM_WAITING_AFTER`] is published as
/// `llm.waiting`; every wait is recorded in `motet.llm.wait.duration` and, past a millisecond,
/// as an event of the `chat` span.
async fn wait_for_capacity(
    core: &RuntimeCore,
    model: &motet_directives::ModelRef,
    claim: Claim,
    source: &str,
    cause: &Signal,
    call_id: &CallId,
) -> Result<Permit, CallFailure> {
    let priority = claim.priority;
    let acquire = core.limits.acquire(model, claim);
    tokio::pin!(acquire);
    // Most calls find capacity at once: they need no timer for the notice.
    let granted = match futures::poll!(&mut acquire) {
        std::task::Poll::Ready(granted) => granted,
        std::task::Poll::Pending => tokio::select! {
            granted = &mut acquire => granted,
            () = tokio::time::sleep(LLM_WAITING_AFTER) => {
                publish_waiting(core, model, source, cause, call_id);
                acquire.await
            }
        },
    };
    let account = core.limits.account_key(model);
    let waited = match &granted {
        Ok(permit) => permit.waited(),
        Err(LimitError::DeadlinePassed { waited, .. }) => *waited,
        Err(_) => std::time::Duration::ZERO,
    };
    crate::telemetry::instruments().llm_wait.record(
        waited.as_secs_f64(),
        &[
            opentelemetry::KeyValue::new("motet.limits.account", account),
            opentelemetry::KeyValue::new("motet.priority", priority.as_str()),
        ],
    );
    granted.map_err(|e| CallFailure::from(ProviderError::from(e)))
}

/// Publishes one `llm.waiting` on the bus.
fn publish_waiting(
    core: &RuntimeCore,
    model: &motet_directives::ModelRef,
    source: &str,
    cause: &Signal,
    call_id: &CallId,
) {
    let data = LlmWaiting {
        call_id: call_id.clone(),
        account: core.limits.account_key(model),
        waiting: core.limits.waiting(model),
        backoff_ms: u64::try_from(core.limits.backoff(model).as_millis()).unwrap_or(u64::MAX),
    };
    if let Ok(signal) = Signal::builder(LLM_WAITING, source)
        .caused_by(cause)
        .with_data(data)
        .build()
    {
        core.bus.publish(&signal);
    }
}

/// Assembles a call's events into its response, handing each text and reasoning fragment to
/// `fragment` as it arrives.
async fn assemble(
    events: &mut motet_providers::LlmEvents,
    mut fragment: impl FnMut(DeltaKind, &str),
) -> Result<motet_directives::LlmResponse, ProviderError> {
    use futures::StreamExt as _;
    let mut assembler = BlockAssembler::new();
    while let Some(event) = events.next().await {
        let event = event?;
        match &event {
            LlmEvent::TextDelta { delta, .. } => fragment(DeltaKind::Text, delta),
            LlmEvent::ReasoningDelta { delta, .. } => fragment(DeltaKind::Reasoning, delta),
            _ => {}
        }
        assembler.push(event)?;
    }
    Ok(assembler.finish()?)
}

/// Publishes one `llm.delta` on the bus.
fn publish_delta(
    core: &RuntimeCore,
    source: &str,
    cause: &Signal,
    call_id: &CallId,
    kind: DeltaKind,
    delta: &str,
) {
    let data = LlmDelta {
        call_id: call_id.clone(),
        kind,
        delta: delta.to_owned(),
        agent: None,
    };
    if let Ok(signal) = Signal::builder(LLM_DELTA, source)
        .caused_by(cause)
        .with_data(data)
        .build()
    {
        core.bus.publish(&signal);
    }
}

/// A provider error as the strategy sees it: its kind (the provider's own mapping, one kind per
/// variant) and whether trying again may help; one the client already retried is not retryable
/// again (one retry budget: the client's before content, the strategy's after).
pub(crate) fn llm_error(error: &ProviderError, retried: bool) -> LlmError {
    let kind = error.llm_error_kind();
    // Worth another try: the provider or the way to it was busy or broke off; the request
    // itself was not refused.
    let retryable = matches!(
        kind,
        LlmErrorKind::RateLimited
            | LlmErrorKind::Overloaded
            | LlmErrorKind::Timeout
            | LlmErrorKind::Server
            | LlmErrorKind::Connect
            | LlmErrorKind::StreamTruncated
    );
    let soft_limit = match error {
        ProviderError::BudgetApproval(soft) => Some(*soft),
        _ => None,
    };
    LlmError {
        kind,
        message: error.to_string(),
        retryable: retryable && !retried,
        soft_limit,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use motet_directives::results::LlmErrorKind as K;
    use motet_providers::{Dialect, ProviderError as E};

    use super::llm_error;

    fn text() -> String {
        "the provider's words".to_owned()
    }

    /// Every provider error, the kind its failure is stored under, and whether the strategy
    /// may try the call again (when the client did not retry it already).
    #[test]
    fn every_provider_error_is_stored_under_its_own_kind() {
        let cases = [
            (
                E::Authentication {
                    status: 401,
                    message: text(),
                },
                K::Auth,
                false,
            ),
            (
                E::Authentication {
                    status: 403,
                    message: text(),
                },
                K::Auth,
                false,
            ),
            (
                E::RateLimited {
                    retry_after: Some(Duration::from_secs(1)),
                    message: text(),
                },
                K::RateLimited,
                true,
            ),
            (E::Overloaded { message: text() }, K::Overloaded, true),
            (
                E::InvalidRequest {
                    status: 400,
                    message: text(),
                },
                K::InvalidRequest,
                false,
            ),
            (
                E::ContextLengthExceeded { message: text() },
                K::ContextLength,
                false,
            ),
            (
                E::ContentFiltered { message: text() },
                K::ContentFiltered,
                false,
            ),
            (
                E::Server {
                    status: 500,
                    message: text(),
                },
                K::Server,
                true,
            ),
            (
                E::StreamTruncated { reason: text() },
                K::StreamTruncated,
                true,
            ),
            (E::Protocol { message: text() }, K::Protocol, false),
            (
                E::MaxTokensInToolCall {
                    tool: "add".to_owned(),
                },
                K::MaxTokens,
                false,
            ),
            (E::Connect { message: text() }, K::Connect, true),
            (
                E::Timeout {
                    phase: "the first byte".to_owned(),
                },
                K::Timeout,
                true,
            ),
            (
                E::UnsupportedModel {
                    model: "m".to_owned(),
                    reason: text(),
                },
                K::Unsupported,
                false,
            ),
            (
                E::UnsupportedHostedTool {
                    dialect: Dialect::Gemini,
                    tool: "web_search",
                    reason: text(),
                },
                K::Unsupported,
                false,
            ),
            (
                E::UnsupportedResponseFormat {
                    dialect: Dialect::Gemini,
                    reason: text(),
                },
                K::Unsupported,
                false,
            ),
            (
                E::ResponseTooLarge { limit: 1024 },
                K::ResponseTooLarge,
                false,
            ),
            (E::Config { message: text() }, K::Config, false),
            (
                E::BudgetExceeded(motet_providers::budget::BudgetExceeded {
                    level: motet_providers::budget::BudgetLevel::Request,
                    measure: motet_providers::budget::Measure::Tokens,
                    limit: 100,
                    spent: 90,
                    estimated_input: 20,
                }),
                K::Budget,
                false,
            ),
            (
                E::BudgetApproval(motet_providers::budget::SoftLimit {
                    level: motet_providers::budget::BudgetLevel::Thread,
                    measure: motet_providers::budget::Measure::Tokens,
                    limit: 100,
                    spent: 120,
                }),
                K::BudgetApproval,
                false,
            ),
        ];
        for (error, kind, retryable) in cases {
            let fresh = llm_error(&error, false);
            // Only a call held at a soft limit names one, for a person to approve.
            assert_eq!(
                fresh.soft_limit.is_some(),
                kind == K::BudgetApproval,
                "{error:?}"
            );
            assert_eq!(fresh.kind, kind, "{error:?}");
            assert_eq!(fresh.retryable, retryable, "{error:?}");
            assert_eq!(fresh.message, error.to_string());
            let retried = llm_error(&error, true);
            assert_eq!(
                (retried.kind, retried.retryable),
                (kind, false),
                "{error:?}"
            );
        }
    }
}
