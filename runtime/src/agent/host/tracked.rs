//! What the runtime tracks for one thread beside its strategy's state — the open requests, the
//! work in flight, timers, children, a person's waits — and [`Here`], who and where a thread
//! is, as the executors see it. Neither depends on the strategy's type, so the executors do not
//! either.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use motet_directives::ReplyStatus;
use motet_signals::Signal;
use opentelemetry::KeyValue;
use ractor::ActorRef;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::children::Children;
use super::core::{Labels, Parent, RuntimeCore, ThreadMsg, deliver};
use super::few::Few;
use crate::agent::book::RequestBook;
use crate::agent::errors::AskError;
use crate::agent::requests::RequestStatus;
use crate::agent::signals::failure_text;
use crate::agent::trace;
use crate::telemetry::instruments;
use crate::tool::ToolSet;

/// Who and where a thread is, for the executors: the runtime, the agent, the thread and its
/// actor. Borrowed from the thread's actor for one step.
pub(crate) struct Here<'a> {
    pub(crate) core: &'a Arc<RuntimeCore>,
    pub(crate) agent: &'a Arc<str>,
    pub(crate) thread: &'a Arc<str>,
    pub(crate) tools: Option<&'a Arc<ToolSet>>,
    /// The agent thread that spawned this agent.
    pub(crate) parent: Option<&'a Parent>,
    pub(crate) labels: Option<&'a Labels>,
    /// The thread's actor, where results come back.
    pub(crate) myself: &'a ActorRef<ThreadMsg>,
}

impl Here<'_> {
    /// The `source` of every signal this thread's agent makes: `motet.agent.<name>`.
    pub(crate) fn source(&self) -> String {
        crate::agent::signals::agent_source(self.agent)
    }

    /// Who this thread's LLM calls for `cause` are made for.
    pub(crate) fn scope(
        &self,
        cause: &Signal,
        kind: motet_providers::CallKind,
    ) -> motet_providers::CallScope {
        motet_providers::CallScope {
            agent: self.agent.clone(),
            thread: self.thread.clone(),
            request: cause.request_id().map(Arc::from),
            tenant: self.labels.and_then(|l| l.tenant.clone()),
            priority: self.labels.map(|l| l.priority).unwrap_or_default(),
            kind,
            on_behalf_of: Vec::new(),
        }
    }
}

/// One directive to carry out: the thread it runs on, the signal whose step returned it (its
/// results are caused by it), the span its own span hangs off, and where its work starts.
pub(crate) struct Job<'a> {
    pub(crate) here: &'a Here<'a>,
    pub(crate) cause: &'a Signal,
    pub(crate) parent: Option<tracing::Id>,
    pub(crate) run: Run,
}

/// What the runtime tracks for a thread: boxed parts made when first needed, so a thread
/// between requests holds two words.
#[derive(Default)]
pub(crate) struct Tracked {
    /// The open requests and what each holds (asker, span, LLM calls), boxed together and
    /// made with the first: a thread between requests holds one word.
    pub(crate) open: Option<Box<Open>>,
    /// Timers, children, a person's waits and messages held for a successor: what few
    /// threads hold, boxed together (one word for the many that hold none of it).
    pub(crate) occasional: Option<Box<Occasional>>,
}

/// What a thread holds while it has open requests.
#[derive(Default)]
pub(crate) struct Open {
    /// The request the strategy is working on, and those waiting for it to finish.
    pub(crate) book: RequestBook<Signal>,
    /// Asks waiting for their reply, by request id.
    pub(crate) pending: Few<oneshot::Sender<Result<Signal, AskError>>>,
    /// LLM calls in flight, by request id: aborted (closing their connections) when the
    /// request ends, so a cancelled request stops streaming.
    pub(crate) calls: HashMap<String, Vec<AbortHandle>>,
    /// The open `invoke_agent` span of each request this thread has admitted, by request id.
    pub(crate) spans: Few<RequestSpan>,
    /// Results of work that finished as it started ([`Run::Inline`]), handled before the
    /// actor reads its mailbox again: empty between messages.
    pub(crate) ready: VecDeque<Signal>,
}

impl Open {
    /// No request is open and nothing is held for one.
    fn is_empty(&self) -> bool {
        self.is_quiet() && self.calls.is_empty() && self.spans.is_empty() && self.ready.is_empty()
    }

    /// No request is open and no LLM call still runs.
    pub(crate) fn is_quiet(&self) -> bool {
        self.book.is_quiet()
            && self.pending.is_empty()
            && self
                .calls
                .values()
                .all(|c| c.iter().all(AbortHandle::is_finished))
    }
}

/// What a thread holds only for some directives (`Spawn`), while a person is
/// waited for, or while it retires.
#[derive(Default)]
pub(crate) struct Occasional {
    /// Children started with `Spawn`, by tag: stored with the thread's state.
    pub(crate) children: Children,
    /// Messages that reached the mailbox before it closed, handed to the successor in order
    /// when this actor stops ([`RuntimeCore::succeed`]).
    pub(crate) held: Vec<ThreadMsg>,
    /// The tool calls waiting for a person, as last seen after a step.
    pub(crate) waits: Vec<OpenWait>,
    /// The request the stored thread was left in the middle of by a process that stopped,
    /// until it is carried on ([`crate::agent::book::arrival`]).
    pub(crate) interrupted: Option<String>,
}

impl Occasional {
    fn is_empty(&self) -> bool {
        self.children.is_empty()
            && self.held.is_empty()
            && self.waits.is_empty()
            && self.interrupted.is_none()
    }
}

/// A request's span and how many LLM calls it has made.
pub(crate) struct RequestSpan {
    pub(crate) span: tracing::Span,
    pub(crate) llm_calls: u32,
    /// The agents that delegated this request, as its signal's `motetchain` extension said
    /// (`None` for a request asked directly): what an agent tool it calls checks.
    pub(crate) chain: Option<Box<str>>,
    /// The requests it works for, as its signal's `motetpayers` extension said (`None` for a
    /// request asked directly): their budgets count its calls too.
    pub(crate) payers: Option<Box<str>>,
}

impl Tracked {
    /// Who `here`'s LLM calls of `kind` for `cause` are made for, the requests its request
    /// works for among them (their budgets count the call).
    pub(crate) fn scope(
        &self,
        here: &Here<'_>,
        cause: &Signal,
        kind: motet_providers::CallKind,
    ) -> motet_providers::CallScope {
        let mut scope = here.scope(cause, kind);
        scope.on_behalf_of = self
            .payers(cause.request_id())
            .requests()
            .iter()
            .map(|(agent, request)| (Arc::from(agent.as_str()), Arc::from(request.as_str())))
            .collect();
        scope
    }

    /// The requests request `request` works for (its delegating callers'), as `(agent,
    /// request)`: empty for one nobody delegated.
    pub(crate) fn payers(&self, request: Option<&str>) -> motet_agents::delegate::Payers {
        let text = request
            .and_then(|request| self.span(request))
            .and_then(|span| span.payers.as_deref());
        motet_agents::delegate::Payers::of_extension(text)
    }
}

/// One wait for a person being watched. Dropping it ends its span and takes it off the gauge.
pub(crate) struct OpenWait {
    pub(crate) request_id: String,
    pub(crate) tool_call_id: String,
    pub(crate) kind: &'static str,
    pub(crate) since_ms: u64,
    pub(crate) span: tracing::Span,
}

impl Drop for OpenWait {
    fn drop(&mut self) {
        instruments()
            .waiting
            .add(-1, &[KeyValue::new("motet.wait.kind", self.kind)]);
    }
}

/// How a request ends.
pub(crate) enum Ending<'a> {
    /// With the strategy's reply.
    Replied {
        status: ReplyStatus,
        reply: &'a Signal,
    },
    /// On a failure before its directives ran: its span closes with `kind`, its asker gets
    /// `failure`.
    Abandoned {
        kind: &'static str,
        message: &'a str,
        failure: AskError,
    },
}

impl Tracked {
    /// The open requests, made when the first arrives.
    pub(crate) fn open(&mut self) -> &mut Open {
        self.open.get_or_insert_default()
    }

    /// The open `invoke_agent` span of request `id`.
    pub(crate) fn span(&self, id: &str) -> Option<&RequestSpan> {
        self.open.as_ref().and_then(|o| o.spans.get(id))
    }

    /// The occasional part, made when first needed.
    pub(crate) fn occasional(&mut self) -> &mut Occasional {
        self.occasional.get_or_insert_default()
    }

    /// The children the thread started, by tag.
    pub(crate) fn children(&self) -> &Children {
        static NONE: Children = Children::new();
        self.occasional.as_ref().map_or(&NONE, |o| &o.children)
    }

    /// Replaces the children the thread started with `children` (as stored, or as a step
    /// left them).
    pub(crate) fn replace_children(&mut self, children: Children) {
        if children.is_empty() && self.occasional.is_none() {
            return;
        }
        self.occasional().children = children;
    }

    /// Whether no request is open and no LLM call runs (a pending timer is the timekeeper's,
    /// and lets the thread idle).
    pub(crate) fn is_quiet(&self) -> bool {
        self.open.as_ref().is_none_or(|o| o.is_quiet())
    }

    /// The tool calls waiting for a person.
    pub(crate) fn waits(&self) -> &[OpenWait] {
        self.occasional.as_ref().map_or(&[], |o| &o.waits)
    }

    /// Remembers work started for the request `cause` belongs to, dropping finished ones:
    /// aborted when the request ends.
    pub(crate) fn track(&mut self, cause: &Signal, work: AbortHandle) {
        if let Some(request) = cause.request_id() {
            let calls = self.open().calls.entry(request.to_owned()).or_default();
            calls.retain(|c| !c.is_finished());
            calls.push(work);
        }
    }

    /// Ends `request`: recorded, its span closed, its calls still running aborted, the next
    /// request let in, and its asker answered.
    pub(crate) fn end_request(&mut self, here: &Here<'_>, request: &str, ending: Ending<'_>) {
        let now = motet_agents::Env::now_ms(&crate::agent::env::SystemEnv);
        let (recorded, reply, failure) = match &ending {
            Ending::Replied { status, reply } => match status {
                ReplyStatus::Completed => (RequestStatus::Completed, Some(*reply), None),
                ReplyStatus::Failed => (
                    RequestStatus::Failed,
                    Some(*reply),
                    Some(("request_failed", failure_text(reply))),
                ),
            },
            Ending::Abandoned { kind, message, .. } => (
                RequestStatus::Failed,
                None,
                Some((*kind, (*message).to_owned())),
            ),
        };
        here.core
            .requests
            .finished(request, recorded, reply.cloned(), now);
        self.end_request_span(request, failure.as_ref().map(|(k, t)| (*k, t.as_str())));
        let asker = self.open.as_mut().and_then(|open| {
            open.book.finished(request);
            // Its LLM calls would stream for a request that is over.
            if let Some(calls) = open.calls.remove(request) {
                calls.iter().for_each(AbortHandle::abort);
            }
            open.pending.remove(request)
        });
        if let Some(asker) = asker {
            let answer = match ending {
                Ending::Replied {
                    status: ReplyStatus::Completed,
                    reply,
                } => Ok(reply.clone()),
                Ending::Replied { reply, .. } => Err(AskError::Failed {
                    reply: Box::new(reply.clone()),
                }),
                Ending::Abandoned { failure, .. } => Err(failure),
            };
            let _ = asker.send(answer);
        }
        self.release_room();
    }

    /// Closes a request's `invoke_agent` span (marked failed with `(error type, text)` when
    /// given) and counts the request.
    fn end_request_span(&mut self, request: &str, failure: Option<(&'static str, &str)>) {
        let status = if failure.is_some() {
            "failed"
        } else {
            "completed"
        };
        instruments()
            .requests
            .add(1, &[KeyValue::new("motet.request.status", status)]);
        let Some(trace) = self.open.as_mut().and_then(|o| o.spans.remove(request)) else {
            return;
        };
        if let Some((error_type, text)) = failure {
            trace::failed(&trace.span, error_type, text);
            instruments()
                .errors
                .add(1, &[KeyValue::new("error.type", error_type)]);
        }
    }

    /// Gives back the room of the hash maps a request emptied: each keeps its capacity
    /// otherwise, which a conversing thread would hold for as long as it runs; the occasional
    /// part goes whole once it holds nothing. (The asker and the span of a request are in
    /// [`Few`]s, which keep nothing once empty.)
    pub(crate) fn release_room(&mut self) {
        fn shrink<K: Eq + Hash, V, H: BuildHasher>(map: &mut HashMap<K, V, H>) {
            if map.is_empty() {
                map.shrink_to_fit();
            }
        }
        if self.open.as_ref().is_some_and(|o| o.is_empty()) {
            self.open = None;
        } else if let Some(open) = self.open.as_mut() {
            shrink(&mut open.calls);
        }
        if self.occasional.as_ref().is_some_and(|o| o.is_empty()) {
            self.occasional = None;
        }
    }

    /// Starts a directive's work. Run [`Run::Inline`], it is polled once here, on the actor's
    /// own task: work that is done at once (a tool that never waits, a model that answers from
    /// memory) hands its result to this actor's next step without a task or a mailbox trip,
    /// which on a multi-threaded runtime would each be a chance for tokio to move the chain to
    /// another worker. Work that must wait goes on as a task of its own, so the actor keeps
    /// reading its mailbox (a cancel, another request) meanwhile; its result comes back as a
    /// message, and cancelling the request aborts it.
    pub(crate) fn start(&mut self, job: &Job<'_>, mut work: Work) {
        use futures::FutureExt as _;
        if job.run == Run::Inline
            && let Some(signal) = (&mut work).now_or_never()
        {
            self.open().ready.push_back(signal);
            return;
        }
        let me = job.here.myself.clone();
        let task = tokio::spawn(async move { deliver(&me, work.await) });
        self.track(job.cause, task.abort_handle());
    }
}

/// A directive's work: the result signal it ends with.
pub(crate) type Work = std::pin::Pin<Box<dyn std::future::Future<Output = Signal> + Send>>;

/// Where a directive's work starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    /// Polled once on the actor's task; a task of its own only if it must wait. For a step's
    /// only piece of work: nothing else could run meanwhile.
    Inline,
    /// A task of its own from the start. For each of several pieces of work one step starts
    /// (parallel tool calls), so they run side by side, on both workers if need be.
    Task,
}

impl Run {
    /// How the work of a step returning `directives` starts.
    pub(crate) fn for_step(directives: &[motet_directives::Directive]) -> Self {
        use motet_directives::Directive;
        let work = directives
            .iter()
            .filter(|d| {
                matches!(
                    d,
                    Directive::LlmStream(_) | Directive::ToolExec(_) | Directive::Summarize(_)
                )
            })
            .count();
        if work == 1 { Self::Inline } else { Self::Task }
    }
}
