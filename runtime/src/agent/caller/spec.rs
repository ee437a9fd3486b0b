//! How to start an agent ([`AgentSpec`]) and how to ask it ([`AskOptions`]).

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{PolicyOverride, Strategy};
use motet_directives::ResponseFormat;
use motet_signals::Pattern;

use crate::agent::book::RequestPolicy;
use crate::agent::errors::RuntimeError;
use crate::supervisor::{Intensity, Supervision};
use crate::tool::ToolSet;

/// Options of one [`AgentHandle::ask`](crate::agent::AgentHandle::ask).
#[derive(Debug, Clone)]
pub struct AskOptions {
    /// The thread the request runs on; `None` for the agent's default thread.
    pub thread_id: Option<String>,
    /// Per-request changes to the context policy.
    pub context_policy: Option<PolicyOverride>,
    /// How long to wait for the reply. Default 30 s. A request not answered in time is
    /// cancelled, unless `keep_running`.
    pub timeout: Duration,
    /// Deliver the model's text as it is written ([`Ticket::next_delta`](crate::agent::Ticket::next_delta)). Default false.
    pub stream: bool,
    /// Leave the request running when the wait times out (its end is then seen with
    /// [`Runtime::request`](crate::agent::Runtime::request)). Default false.
    pub keep_running: bool,
    /// The shape the answer must have (structured output), sent to the strategy with the
    /// request; [`AgentHandle::ask_structured`](crate::agent::AgentHandle::ask_structured) sets it
    /// from the type asked for. Default none.
    pub response_format: Option<ResponseFormat>,
    /// Images, documents or audio sent with the query (after its text). Default none.
    pub attachments: motet_directives::Attachments,
}

impl Default for AskOptions {
    fn default() -> Self {
        Self {
            thread_id: None,
            context_policy: None,
            timeout: Duration::from_secs(30),
            stream: false,
            keep_running: false,
            response_format: None,
            attachments: motet_directives::Attachments::default(),
        }
    }
}

/// How to start one agent.
pub struct AgentSpec<S> {
    pub(crate) name: String,
    pub(crate) strategy: S,
    pub(crate) tools: Option<Arc<ToolSet>>,
    pub(crate) policy: RequestPolicy,
    pub(crate) supervision: Supervision,
    pub(crate) subscriptions: Vec<Pattern>,
    pub(crate) consumers: Vec<crate::bus::ConsumerSpec>,
    pub(crate) groups: Vec<String>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) tenant: Option<Arc<str>>,
    pub(crate) priority: motet_providers::Priority,
    pub(crate) budgets: Vec<(
        motet_providers::budget::BudgetLevel,
        motet_providers::budget::Budget,
    )>,
}

impl<S: Strategy> AgentSpec<S> {
    /// An agent named `name` running `strategy`, with no tools.
    pub fn new(name: impl Into<String>, strategy: S) -> Self {
        Self {
            name: name.into(),
            strategy,
            tools: None,
            policy: RequestPolicy::Queue,
            supervision: Supervision::default(),
            subscriptions: Vec::new(),
            consumers: Vec::new(),
            groups: Vec::new(),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            tenant: None,
            priority: motet_providers::Priority::Normal,
            budgets: Vec::new(),
        }
    }

    /// A budget (tokens, dollars or both; hard, soft or both) for each of this agent's requests
    /// ([`BudgetLevel::Request`](motet_providers::budget::BudgetLevel::Request)), each of its
    /// threads, or the agent as a whole, in place of the runtime's
    /// ([`RuntimeBuilder::budget`](crate::agent::RuntimeBuilder::budget)). A call it would take past
    /// the hard limit fails with `LlmErrorKind::Budget`; one past a soft step waits for a
    /// person's approval (docs/governance.md).
    pub fn with_budget(
        mut self,
        level: motet_providers::budget::BudgetLevel,
        budget: motet_providers::budget::Budget,
    ) -> Self {
        self.budgets.push((level, budget));
        self
    }

    /// Labels the agent as one tenant's: a shared provider account's limits share their
    /// capacity fairly between tenants (and between agents within one), and budgets and cost
    /// accounts sum per tenant.
    pub fn with_tenant(mut self, tenant: impl Into<Arc<str>>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// How soon the agent's LLM calls are served when a shared provider account is at its
    /// limits: a person waiting (a chat) is [`High`](motet_providers::Priority::High), a
    /// batch [`Low`](motet_providers::Priority::Low). Default `Normal`.
    pub fn with_priority(mut self, priority: motet_providers::Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Stops a thread's actor after this long without messages, to bound the memory of an
    /// agent with many conversations; the next signal for the thread brings it back from the
    /// store. `None` keeps threads running. Default [`DEFAULT_IDLE_TIMEOUT`].
    pub fn with_idle_timeout(mut self, idle: Option<Duration>) -> Self {
        self.idle_timeout = idle.filter(|d| !d.is_zero());
        self
    }

    /// Delivers every bus signal matching `pattern` (`*` one segment, `**` any) to the
    /// agent's default thread.
    pub fn subscribe(mut self, pattern: Pattern) -> Self {
        self.subscriptions.push(pattern);
        self
    }

    /// Consumes the runtime's durable bus ([`RuntimeBuilder::signal_bus`](crate::agent::RuntimeBuilder::signal_bus))
    /// as the named consumer `consumer`: every signal it delivers goes to the agent's default
    /// thread, and the bus acknowledges it only once the step that handled it committed. A
    /// delivery the thread fails (the strategy rejects it, the store refuses the commit, the
    /// thread stops first) is delivered again after the consumer's backoff, then dead-lettered;
    /// one the thread committed before (same `source` and `id`) is acknowledged without being
    /// handled twice. With no durable bus, the in-process bus stands in: the same
    /// acknowledgements and retries, but nothing outlives the process.
    pub fn consume(mut self, consumer: crate::bus::ConsumerSpec) -> Self {
        self.consumers.push(consumer);
        self
    }

    /// Makes the agent a member of the group `name`: `Emit` to the group reaches it.
    pub fn join_group(mut self, name: impl Into<String>) -> Self {
        self.groups.push(name.into());
        self
    }

    /// At most this many thread restarts in this window before the agent is stopped
    /// (default 3 in 5 s).
    pub fn with_restart_intensity(mut self, intensity: Intensity) -> Self {
        self.supervision.intensity = intensity;
        self
    }

    /// How the agent's threads are supervised: which restart with a failed one
    /// (one-for-one, one-for-all, rest-for-one), which exits restart a thread (permanent,
    /// transient, temporary), how long a restart waits, and the restart intensity
    /// (docs/supervision.md). The default is one-for-one, transient, at once, 3 in 5 s.
    pub fn with_supervision(mut self, supervision: Supervision) -> Self {
        self.supervision = supervision;
        self
    }

    /// What happens to a request that arrives while another runs on the same thread.
    pub fn with_request_policy(mut self, policy: RequestPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The tools this agent runs for its strategy's `ToolExec` directives (a [`ToolSet`], or
    /// one shared in an `Arc`). The strategy offers their definitions to the model itself
    /// ([`ToolSet::definitions`]); [`ReActAgent`](crate::agent::ReActAgent) does both from one list.
    pub fn with_tools(mut self, tools: impl Into<Arc<ToolSet>>) -> Self {
        self.tools = Some(tools.into());
        self
    }
}

/// What [`Runtime::spawn`](crate::agent::Runtime::spawn) starts: an [`AgentSpec`], or a description
/// that becomes one ([`ReActAgent`](crate::agent::ReActAgent)).
pub trait IntoSpec<S> {
    /// The spec.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidSpec`] when the description is not a valid agent.
    fn into_spec(self) -> Result<AgentSpec<S>, RuntimeError>;
}

impl<S> IntoSpec<S> for AgentSpec<S> {
    fn into_spec(self) -> Result<AgentSpec<S>, RuntimeError> {
        Ok(self)
    }
}

/// How long a thread actor waits without messages before it is stopped (10 minutes).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// How many LLM calls run at once per provider unless configured otherwise.
pub const DEFAULT_LLM_CONCURRENCY: usize = 64;
