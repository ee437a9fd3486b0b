//! The [`Runtime`]: many agents in one process, built with a [`RuntimeBuilder`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use motet_agents::Strategy;
use motet_providers::limits::{Rates, SharedLimits};
use motet_providers::{LlmClient, ProviderError, Providers};
use motet_signals::Bus;

use super::handle::AgentHandle;
use super::spec::{AgentSpec, DEFAULT_LLM_CONCURRENCY, IntoSpec};
use super::ticket::Ticket;
use crate::agent::errors::RuntimeError;
use crate::agent::host::core::{KindFactory, Registry, RuntimeCore, VirtualFactory};
use crate::agent::host::registry::{activate_agent, register_agent};
use crate::agent::requests::{FINISHED_REQUESTS_KEPT, RequestRecord, RequestRecords};
use crate::bus::{LocalBus, SignalBus};
use crate::store::{MemoryStore, OpenStoreError, ThreadStore};

/// How long a request resumed at boot may run before it is given up.
const BOOT_PATIENCE: Duration = Duration::from_secs(600);

/// How many stored threads a recovery reads the ids of at once.
const RECOVERY_PAGE: usize = 1_000;

/// Builds a [`Runtime`].
#[derive(Default)]
pub struct RuntimeBuilder {
    llm: Option<Arc<dyn LlmClient>>,
    bus: Option<Arc<Bus>>,
    limits: Vec<(String, usize)>,
    default_limit: Option<usize>,
    rates: Vec<(String, Rates)>,
    shared_limits: Option<SharedLimits>,
    llm_max_wait: Option<Duration>,
    store: Option<Arc<dyn ThreadStore>>,
    kinds: HashMap<String, KindFactory>,
    virtual_kinds: HashMap<String, VirtualFactory>,
    max_active: Option<usize>,
    routes: Vec<(motet_signals::Pattern, String)>,
    keep_finished: Option<usize>,
    signal_bus: Option<Arc<dyn SignalBus>>,
    prices: Option<motet_providers::PriceTable>,
    budgets: crate::agent::costs::LevelBudgets,
    tenant_budgets: HashMap<String, motet_providers::budget::Budget>,
    cluster: Option<crate::cluster::ClusterConfig>,
    link: Option<Arc<dyn crate::cluster::link::Link>>,
}

impl RuntimeBuilder {
    /// The LLM client agents' LLM calls go through. By default the providers configured
    /// from the environment ([`Providers::from_env`]: keys, base URLs, limits).
    pub fn llm(mut self, client: impl LlmClient + 'static) -> Self {
        self.llm = Some(Arc::new(client));
        self
    }

    /// At most `calls` LLM calls at once to `provider` (`anthropic`, `openai`, ...); the rest
    /// wait their turn. Default [`DEFAULT_LLM_CONCURRENCY`].
    pub fn llm_concurrency(mut self, provider: impl Into<String>, calls: usize) -> Self {
        self.limits.push((provider.into(), calls.max(1)));
        self
    }

    /// The limit for providers not named with [`RuntimeBuilder::llm_concurrency`].
    pub fn default_llm_concurrency(mut self, calls: usize) -> Self {
        self.default_limit = Some(calls.max(1));
        self
    }

    /// The limits of one provider account (`openai`), or of one model with limits of its own
    /// (`openai:gpt-5.2`): requests, input, output and total tokens per minute and streams at
    /// once. Calls over them wait, fairly between tenants and agents and by priority, rather
    /// than meet the provider's 429s. Limits the provider's headers announce lower these (and
    /// fill those not given) on their own. Streams at once default to
    /// [`DEFAULT_LLM_CONCURRENCY`]; [`llm_concurrency`](Self::llm_concurrency) sets them too.
    pub fn llm_limits(mut self, account: impl Into<String>, rates: Rates) -> Self {
        self.rates.push((account.into(), rates));
        self
    }

    /// Uses these shared limits instead of the ones the builder would make (the
    /// [`llm_limits`](Self::llm_limits) and concurrency settings are then ignored): to share
    /// one set between runtimes, or to watch it.
    pub fn shared_limits(mut self, limits: SharedLimits) -> Self {
        self.shared_limits = Some(limits);
        self
    }

    /// The longest an LLM call waits for its account's capacity; past it the call fails with
    /// a rate-limited error the strategy sees. By default a call waits as long as it takes.
    pub fn llm_max_wait(mut self, wait: Duration) -> Self {
        self.llm_max_wait = Some(wait);
        self
    }

    /// The shared limits the settings describe.
    fn limits(&mut self) -> SharedLimits {
        if let Some(limits) = self.shared_limits.take() {
            return limits;
        }
        let default_streams = self.default_limit.unwrap_or(DEFAULT_LLM_CONCURRENCY);
        let streams = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut limits = SharedLimits::new()
            .with_defaults(Rates::unlimited().with_concurrent(streams(default_streams)));
        let mut accounts: Vec<(String, Rates)> = Vec::new();
        for (account, rates) in self.rates.drain(..) {
            let rates = Rates {
                concurrent: rates.concurrent.or(Some(streams(default_streams))),
                ..rates
            };
            accounts.retain(|(a, _)| *a != account);
            accounts.push((account, rates));
        }
        for (provider, calls) in self.limits.drain(..) {
            match accounts.iter_mut().find(|(a, _)| *a == provider) {
                Some((_, rates)) => rates.concurrent = Some(streams(calls)),
                None => {
                    accounts.push((provider, Rates::unlimited().with_concurrent(streams(calls))))
                }
            }
        }
        for (account, rates) in accounts {
            limits = limits.with_account(account, rates);
        }
        limits
    }

    /// Where agents' threads are stored: every entry a strategy appends is committed before the
    /// directives of that step run, and a thread actor that comes back (after an idle stop or a
    /// restart) loads its thread from here. In memory by default; a
    /// [`crate::store::SqliteStore`] survives the process.
    pub fn store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The store `url` names, opened now: `postgres://...`, `sqlite://PATH` or a plain path,
    /// `memory:` ([`crate::store::StoreUrl::parse`]).
    ///
    /// # Errors
    /// [`OpenStoreError`] when the URL names no store or the store cannot be opened.
    pub async fn store_url(self, url: &str) -> Result<Self, OpenStoreError> {
        Ok(self.store(crate::store::open_store(url).await?))
    }

    /// The store `MOTET_DATABASE_URL` names, opened now, as [`store_url`](Self::store_url);
    /// when the variable is unset or empty the builder is left as it was (in memory, unless
    /// [`store`](Self::store) gave one).
    ///
    /// # Errors
    /// As [`store_url`](Self::store_url).
    pub async fn store_from_env(self) -> Result<Self, OpenStoreError> {
        Ok(match crate::store::store_from_env().await? {
            Some(store) => self.store(store),
            None => self,
        })
    }

    /// Registers an agent kind that a strategy's `Spawn` directive can start as its child:
    /// `factory` turns the child's configuration into its spec (its name is then the one the
    /// directive gives, or `<parent>/<tag>`).
    pub fn kind<S, F>(mut self, kind: impl Into<String>, factory: F) -> Self
    where
        S: Strategy + Send + Sync + 'static,
        S::State: Send + Sync + 'static,
        F: Fn(&serde_json::Value) -> Result<AgentSpec<S>, String> + Send + Sync + 'static,
    {
        let start: KindFactory = Arc::new(move |core, name, config, parent| {
            let spec = factory(config);
            Box::pin(async move {
                let mut spec = spec.map_err(|message| RuntimeError::SpawnFailed {
                    name: name.clone(),
                    message,
                })?;
                spec.name = name;
                register_agent(&core, spec, parent).await
            })
        });
        self.kinds.insert(kind.into(), start);
        self
    }

    /// Registers a virtual agent kind: the agent `<kind>:<key>` exists for every key, and the
    /// first message addressed to it ([`Runtime::virtual_agent`], an `Emit` to its name, a
    /// [`route`](Self::route)d signal, a timer) activates it — `factory` builds its spec from
    /// the key, and its threads load from the store. Once its threads have stopped (idle,
    /// or to make room under [`max_active_agents`](Self::max_active_agents)) it is
    /// deactivated, everything it did committed; the next message brings it back as it was.
    /// The spec's name is replaced by `<kind>:<key>`.
    ///
    /// A kind holds no `:`, `/` or control characters; a key no `/` or control characters,
    /// at most 256 bytes. docs/runtime.md, "Virtual agents".
    pub fn virtual_kind<S, F>(mut self, kind: impl Into<String>, factory: F) -> Self
    where
        S: Strategy + Send + Sync + 'static,
        S::State: Send + Sync + 'static,
        F: Fn(&str) -> Result<AgentSpec<S>, String> + Send + Sync + 'static,
    {
        let activate: VirtualFactory = Arc::new(move |core, name, key| {
            let spec = factory(&key);
            Box::pin(async move {
                let mut spec = spec.map_err(|message| RuntimeError::SpawnFailed {
                    name: name.clone(),
                    message,
                })?;
                spec.name = name;
                activate_agent(&core, spec).await
            })
        });
        self.virtual_kinds.insert(kind.into(), activate);
        self
    }

    /// Every signal published on the bus that `pattern` matches goes to the default thread of
    /// the virtual agent `<kind>:<subject>`, the signal's `subject` its key (activating it);
    /// a signal without a subject, or whose subject is no valid key, is not delivered. A route
    /// belongs to the kind, not to an active agent: it reaches agents that are not active.
    pub fn route(mut self, pattern: motet_signals::Pattern, kind: impl Into<String>) -> Self {
        self.routes.push((pattern, kind.into()));
        self
    }

    /// At most `agents` virtual agents active at once (default
    /// [`DEFAULT_MAX_ACTIVE`](crate::agent::DEFAULT_MAX_ACTIVE)): past nine tenths of it the
    /// least recently used idle ones are deactivated; one busy with a request stays. At the
    /// cap an activation waits (up to 60 s) for room. Spawned agents do not count.
    pub fn max_active_agents(mut self, agents: usize) -> Self {
        self.max_active = Some(agents);
        self
    }

    /// How many finished requests [`Runtime::request`] and [`AgentHandle::requests`] still
    /// show, with their replies (the oldest are forgotten first). Default
    /// [`FINISHED_REQUESTS_KEPT`]; running and queued requests are always shown.
    pub fn keep_finished_requests(mut self, requests: usize) -> Self {
        self.keep_finished = Some(requests);
        self
    }

    /// The bus `Emit` directives publish on; a fresh one by default.
    pub fn bus(mut self, bus: Arc<Bus>) -> Self {
        self.bus = Some(bus);
        self
    }

    /// A durable bus (NATS JetStream: `motet_jetstream::JetStreamBus`) beside the in-process
    /// one: `Emit`s to the bus and replies are also published on it, in order, each until the bus confirms
    /// it, and agents' [`AgentSpec::consume`] consumers consume from it. Without one, consumers
    /// consume the in-process bus (nothing outlives the process).
    pub fn signal_bus(mut self, bus: Arc<dyn SignalBus>) -> Self {
        self.signal_bus = Some(bus);
        self
    }

    /// The prices LLM calls are costed at: the ledger, the `motet.llm.cost` metric and dollar
    /// budgets use them. By default the shipped table
    /// ([`PriceTable::builtin`](motet_providers::PriceTable::builtin)).
    pub fn prices(mut self, prices: motet_providers::PriceTable) -> Self {
        self.prices = Some(prices);
        self
    }

    /// A budget for every agent's requests, threads, agents or tenants (at `level`): a call
    /// that would start past its hard limit fails with `LlmErrorKind::Budget`, and spending
    /// never passes it by more than one call's `max_tokens`; one that would pass a soft step
    /// waits for a person's approval (`LlmErrorKind::BudgetApproval`, docs/governance.md).
    /// An agent's own
    /// ([`AgentSpec::with_budget`]) and a tenant's own ([`tenant_budget`](Self::tenant_budget))
    /// take its place.
    pub fn budget(
        mut self,
        level: motet_providers::budget::BudgetLevel,
        budget: motet_providers::budget::Budget,
    ) -> Self {
        self.budgets.set(level, budget);
        self
    }

    /// A budget (hard, soft or both) for the agents labelled `tenant` ([`AgentSpec::with_tenant`]), together.
    pub fn tenant_budget(
        mut self,
        tenant: impl Into<String>,
        budget: motet_providers::budget::Budget,
    ) -> Self {
        self.tenant_budgets.insert(tenant.into(), budget);
        self
    }

    /// Makes this runtime a node of a cluster (docs/cluster.md): its virtual agents are
    /// active only while it holds their leases, kept in the store, which must be one all the
    /// nodes share and that checks each commit's lease (the PostgreSQL store). The node joins
    /// as the runtime is built (on the tokio runtime it is built on) and leaves when the
    /// runtime shuts down.
    pub fn cluster(mut self, config: crate::cluster::ClusterConfig) -> Self {
        self.cluster = Some(config);
        self
    }

    /// The link to the other nodes of the cluster (`motet_jetstream::NatsLink` between
    /// processes, [`LocalLink`](crate::cluster::link::LocalLink) within one): this node
    /// answers on its address ([`ClusterConfig::address`](crate::cluster::ClusterConfig)),
    /// and an ask, a signal or an expired wait for an agent another node hosts goes there.
    /// Without one, such an ask fails with [`AskError::Elsewhere`](crate::agent::AskError),
    /// naming the node.
    pub fn link(mut self, link: Arc<dyn crate::cluster::link::Link>) -> Self {
        self.link = Some(link);
        self
    }

    /// The runtime.
    ///
    /// # Errors
    /// [`RuntimeError::NoLlmClient`] when no client was given and the environment's providers
    /// cannot be configured (a malformed limit variable).
    pub fn build(mut self) -> Result<Runtime, RuntimeError> {
        let store = self
            .store
            .take()
            .unwrap_or_else(|| Arc::new(MemoryStore::new()) as Arc<dyn ThreadStore>);
        let node = match self.cluster.take() {
            Some(config) => {
                let shared = Arc::clone(&store)
                    .cluster()
                    .ok_or_else(|| RuntimeError::Cluster {
                        message:
                            "its store keeps no leases: a cluster needs a PostgreSQL store all \
                              the nodes share"
                                .to_owned(),
                    })?;
                if tokio::runtime::Handle::try_current().is_err() {
                    return Err(RuntimeError::Cluster {
                        message: "a cluster node must be built on a tokio runtime".to_owned(),
                    });
                }
                Some(Arc::new(crate::cluster::Node::new(config, shared)))
            }
            None => None,
        };
        let limits = self.limits();
        let llm = match self.llm {
            Some(llm) => llm,
            None => Arc::new(
                Providers::from_env().map_err(|e| RuntimeError::NoLlmClient {
                    message: e.to_string(),
                })?,
            ),
        };
        // The client reports its responses' limit headers and 429s to the shared limits
        // (unless it already reports them elsewhere).
        llm.share_rate_observer(Arc::new(limits.clone()));
        let bus = self.bus.unwrap_or_default();
        let (signal_bus, external_bus) = match self.signal_bus {
            Some(durable) => (
                Arc::clone(&durable),
                Some(crate::agent::host::outbox::ExternalBus::new(durable)),
            ),
            None => (
                Arc::new(LocalBus::new((*bus).clone())) as Arc<dyn SignalBus>,
                None,
            ),
        };
        let routes = std::mem::take(&mut self.routes);
        let runtime = Runtime {
            core: Arc::new(RuntimeCore {
                llm,
                bus,
                signal_bus,
                external_bus,
                agents: Registry::default(),
                limits,
                llm_max_wait: self.llm_max_wait,
                supervisor: tokio::sync::OnceCell::new(),
                groups: DashMap::new(),
                store,
                kinds: self.kinds,
                virtual_kinds: self.virtual_kinds,
                activations: crate::agent::host::virtuals::Activations::with_cap(
                    self.max_active
                        .unwrap_or(crate::agent::host::virtuals::DEFAULT_MAX_ACTIVE),
                ),
                routes: std::sync::Mutex::default(),
                requests: RequestRecords::keeping(
                    self.keep_finished.unwrap_or(FINISHED_REQUESTS_KEPT),
                ),
                housekeeping: Default::default(),
                timekeeper: Default::default(),
                holders: DashMap::new(),
                cluster: node.clone(),
                link: self.link.clone(),
                listening: std::sync::Mutex::default(),
                delta_type: crate::agent::events::LLM_DELTA.parse().ok(),
                activity: Arc::default(),
                costs: crate::agent::costs::Costs::new(
                    self.prices
                        .unwrap_or_else(motet_providers::PriceTable::builtin),
                    self.budgets,
                    self.tenant_budgets,
                ),
            }),
        };
        runtime.core.add_routes(routes);
        if let Some(node) = node {
            let hosting = Arc::new(NodeHost {
                core: Arc::downgrade(&runtime.core),
            });
            if let Some(link) = self.link.take() {
                runtime.core.serve_link(link, node.address().to_owned());
            }
            tokio::spawn(node.run(hosting));
        }
        runtime.boot();
        Ok(runtime)
    }
}

/// Many agents in one process.
#[derive(Clone)]
pub struct Runtime {
    core: Arc<RuntimeCore>,
}

impl Runtime {
    /// A builder.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// What this runtime's agents have done since it was built: LLM calls, tool calls and
    /// tokens, counted as each finishes (a progress display can poll it).
    pub fn activity(&self) -> crate::agent::ActivitySnapshot {
        self.core.activity.snapshot()
    }

    /// The shared limits of the provider accounts agents call: what waits, the backoff.
    pub fn limits(&self) -> &SharedLimits {
        &self.core.limits
    }

    /// What the LLM calls `filter` selects cost, summed from the store's usage ledger
    /// (summaries included): per request, thread, agent or tenant
    /// ([`UsageFilter`](crate::store::UsageFilter)), across restarts when the store is durable.
    ///
    /// # Errors
    /// The store's, when its ledger cannot be read.
    pub async fn usage(
        &self,
        filter: &crate::store::UsageFilter,
    ) -> Result<crate::store::UsageTotals, crate::store::StoreError> {
        self.core.store.usage_totals(filter).await
    }

    /// The bus agents publish on.
    pub fn bus(&self) -> &Arc<Bus> {
        &self.core.bus
    }

    /// The bus agents' durable consumers consume: the one given to
    /// [`RuntimeBuilder::signal_bus`], else the in-process bus behind the same trait. Publish
    /// on it to reach them from outside any agent.
    pub fn signal_bus(&self) -> &Arc<dyn SignalBus> {
        &self.core.signal_bus
    }

    /// Starts an agent: an [`AgentSpec`] around any strategy, or a
    /// [`ReActAgent`](crate::agent::ReActAgent).
    ///
    /// # Errors
    /// [`RuntimeError::InvalidSpec`] when the description is not a valid agent,
    /// [`RuntimeError::NameTaken`] when an agent of that name runs,
    /// [`RuntimeError::SpawnFailed`] when its actor cannot start.
    pub async fn spawn<S>(&self, spec: impl IntoSpec<S>) -> Result<AgentHandle, RuntimeError>
    where
        S: Strategy + Send + Sync + 'static,
        S::State: Send + Sync + 'static,
    {
        let spec = spec.into_spec()?;
        let name = spec.name.clone();
        // A model the client cannot call as configured (no key, no base URL), or that cannot
        // do what the agent asks of it (seed 004 §1.3), is said now, not at the first ask.
        let shape = spec.strategy.request_shape();
        let primary = match &shape {
            Some(request) => Some((&request.model, self.core.llm.check_request(request))),
            None => spec
                .strategy
                .model()
                .map(|model| (model, self.core.llm.check_model(model))),
        };
        // Each fallback as the agent's own model: a chain that cannot be called is said now.
        let fallbacks = spec.strategy.fallback_models().iter().map(|model| {
            let checked = match &shape {
                Some(request) => {
                    let mut request = request.clone();
                    request.model = model.clone();
                    self.core.llm.check_request(&request)
                }
                None => self.core.llm.check_model(model),
            };
            (model, checked)
        });
        let failed = primary
            .into_iter()
            .chain(fallbacks)
            .find_map(|(model, checked)| checked.err().map(|error| (model, error)));
        if let Some((model, error)) = failed {
            return Err(match error {
                ProviderError::UnsupportedModel { model, reason } => {
                    RuntimeError::UnsupportedModel {
                        name: name.clone(),
                        model,
                        reason,
                    }
                }
                other => RuntimeError::InvalidSpec {
                    name: name.clone(),
                    message: format!("model `{model}`: {other}"),
                },
            });
        }
        register_agent(&self.core, spec, None).await?;
        Ok(AgentHandle {
            name,
            core: self.core.clone(),
        })
    }

    /// The running agent named `name`, or the virtual agent `name` names (`<kind>:<key>` of a
    /// registered kind), active or not.
    pub fn agent(&self, name: &str) -> Option<AgentHandle> {
        (self.core.agents.contains_key(name) || self.core.is_virtual(name)).then(|| AgentHandle {
            name: name.to_owned(),
            core: self.core.clone(),
        })
    }

    /// The virtual agent of `kind` keyed `key`: a handle, nothing started. The first message
    /// through it (or from anywhere else) activates the agent.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownKind`] when no virtual kind `kind` is registered,
    /// [`RuntimeError::InvalidSpec`] when the kind or key cannot name an agent.
    pub fn virtual_agent(&self, kind: &str, key: &str) -> Result<AgentHandle, RuntimeError> {
        let name = crate::agent::host::virtuals::name_of(kind, key)?;
        if !self.core.virtual_kinds.contains_key(kind) {
            return Err(RuntimeError::UnknownKind {
                kind: kind.to_owned(),
            });
        }
        Ok(AgentHandle {
            name,
            core: self.core.clone(),
        })
    }

    /// How many agents are running (virtual agents while active).
    pub fn agent_count(&self) -> usize {
        self.core.agents.len()
    }

    /// How many virtual agents are active now, and the most that were at once.
    pub fn active_virtual_agents(&self) -> (usize, usize) {
        let activations = &self.core.activations;
        (activations.active(), activations.most())
    }

    /// The agents the store holds threads of (virtual ones of `kind` only, with `Some`), by
    /// name after `after`, at most `limit`: listed without activating anyone.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot be read.
    pub async fn stored_agents(
        &self,
        query: &crate::store::AgentQuery,
    ) -> Result<Vec<crate::store::AgentRecord>, RuntimeError> {
        self.core
            .store
            .agents(query)
            .await
            .map_err(|e| RuntimeError::Store(e.into()))
    }

    /// How many conversation threads are running (each is one actor).
    pub fn thread_count(&self) -> usize {
        self.core
            .agents
            .iter()
            .map(|e| e.value().thread_count())
            .sum()
    }

    /// What became of request `id` (any agent): status, timestamps, result.
    pub fn request(&self, id: &str) -> Option<RequestRecord> {
        self.core.requests.get(id)
    }

    /// Resumes every thread of the running agents whose last commit was in the middle of a
    /// request — its process stopped there (a crash, a kill, a deploy). Each gets
    /// `agent.resume` for that request, as [`AgentHandle::resume`] sends it; the tickets
    /// await their answers (waiting up to `timeout`). Not done unasked: call it at boot, once
    /// the agents are spawned. Threads of agents not running are left as they are.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot be listed or read.
    pub async fn recover(&self, timeout: Duration) -> Result<Vec<Ticket>, RuntimeError> {
        self.recover_where(timeout, |_| true, Waits::Resume).await
    }

    /// Starts what a runtime with virtual kinds owes from the start, on a task (when built
    /// inside a tokio runtime): the timekeeper, which fires the stored timers of the kinds'
    /// agents, and the requests their threads were in the middle of.
    fn boot(&self) {
        if self.core.virtual_kinds.is_empty() {
            return;
        }
        let Ok(tokio) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                "a runtime with virtual agent kinds was built outside tokio: call `recover` to resume what its agents owe"
            );
            return;
        };
        self.core
            .timekeeper
            .agent_added(&self.core.timer_host(), None);
        if self.core.cluster.is_some() {
            // In a cluster what the agents owe is resumed by the node each is placed on, as
            // it adopts the leases of members gone (this node's earlier start among them).
            return;
        }
        let runtime = self.clone();
        tokio.spawn(async move {
            let core = Arc::clone(&runtime.core);
            // A virtual agent's name holds no `/`: its threads' store ids start `<name>/`.
            let virtual_only = move |store_id: &str| {
                store_id
                    .split_once('/')
                    .is_some_and(|(agent, _)| core.is_virtual(agent))
            };
            // A request waiting for a person is left for the answer to carry on (`respond`
            // resumes it): resumed here as well, the two would race to the thread.
            match runtime
                .recover_where(BOOT_PATIENCE, virtual_only, Waits::Leave)
                .await
            {
                Ok(resumed) if !resumed.is_empty() => {
                    tracing::info!(
                        resumed = resumed.len(),
                        "virtual agents resumed the requests they owed"
                    );
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::error!(%error, "virtual agents' owed requests could not be listed")
                }
            }
        });
    }

    /// [`recover`](Self::recover) for the threads whose store ids `wanted` chooses; `waits`
    /// says whether a request waiting for a person is resumed too.
    async fn recover_where(
        &self,
        timeout: Duration,
        wanted: impl Fn(&str) -> bool,
        waits: Waits,
    ) -> Result<Vec<Ticket>, RuntimeError> {
        let store = &self.core.store;
        let store_error = |e: crate::store::StoreError| RuntimeError::Store(e.into());
        let mut resumed = Vec::new();
        // A page of ids at a time: a store of a million threads is walked holding a thousand.
        let mut page = store
            .thread_ids(None, RECOVERY_PAGE)
            .await
            .map_err(store_error)?;
        while !page.is_empty() {
            for id in page.iter().filter(|id| wanted(id)) {
                if let Some(ticket) = self.recover_thread(id, waits, timeout).await? {
                    resumed.push(ticket);
                }
            }
            page = match page.last() {
                Some(last) if page.len() == RECOVERY_PAGE => store
                    .thread_ids(Some(last), RECOVERY_PAGE)
                    .await
                    .map_err(store_error)?,
                _ => Vec::new(),
            };
        }
        Ok(resumed)
    }

    /// Resumes the request stored thread `id` was in the middle of, when it is one of a
    /// running agent's and `waits` lets it; `None` when there is nothing to resume.
    async fn recover_thread(
        &self,
        id: &str,
        waits: Waits,
        timeout: Duration,
    ) -> Result<Option<Ticket>, RuntimeError> {
        let store = &self.core.store;
        let store_error = |e: crate::store::StoreError| RuntimeError::Store(e.into());
        let Some(key) = store
            .get_meta(id)
            .await
            .map_err(store_error)?
            .and_then(|m| m.key)
        else {
            return Ok(None);
        };
        let Some(agent) = self.agent(key.agent()) else {
            return Ok(None);
        };
        let thread = key.thread();
        let saved = store.load_state(id).await.map_err(store_error)?;
        let Some(request) = saved
            .as_deref()
            .and_then(crate::agent::host::actor::open_request)
        else {
            return Ok(None);
        };
        let waiting = saved.as_deref().is_some_and(|saved| {
            crate::agent::host::actor::stored_waiting(saved).is_ok_and(|w| !w.is_empty())
        });
        if waiting && waits == Waits::Leave {
            return Ok(None);
        }
        let if_ended = super::person::IfEnded::Refuse;
        match agent
            .resume_request(thread, &request, timeout, if_ended)
            .await
        {
            Ok(ticket) => Ok(Some(ticket)),
            // Carried on by another caller since the store was read (a person's answer).
            Err(
                crate::agent::AskError::RequestRunning { .. }
                | crate::agent::AskError::RequestEnded { .. },
            ) => Ok(None),
            Err(error) => {
                tracing::warn!(agent = %agent.name(), %thread, %request, %error, "a thread owing work could not be resumed");
                Ok(None)
            }
        }
    }

    /// Every tool call waiting for a person, on every stored thread, oldest first: listed
    /// after a crash or a restart too, with no thread running (one store read per thread).
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot be listed or read.
    pub async fn waiting(&self) -> Result<Vec<motet_agents::Waiting>, RuntimeError> {
        super::person::waiting_in(self.core.store.as_ref(), None).await
    }

    /// Answers `waiting` (from [`waiting`](Self::waiting) or an `agent.waiting` signal) with
    /// `response`, as [`Ticket::respond`] does. A request this runtime does not run — it
    /// paused in a process that stopped, and [`recover`](Self::recover) was not called — is
    /// resumed first; its answer then goes to the request records and the bus.
    ///
    /// # Errors
    /// As [`Ticket::respond`].
    pub async fn respond(
        &self,
        waiting: &motet_agents::Waiting,
        response: motet_directives::Response,
    ) -> Result<(), RuntimeError> {
        super::person::respond(
            &self.core,
            &waiting.agent,
            &waiting.thread,
            &waiting.request_id,
            &waiting.tool_call_id,
            response,
        )
        .await
    }

    /// Stops an agent, its children and their threads.
    pub fn stop_agent(&self, name: &str) {
        self.core
            .stop_agent(name, "stopped by the application", true);
    }

    /// In a cluster, this node's generation (this start of it, as a member), once it has
    /// joined; `None` outside a cluster or before.
    pub fn generation(&self) -> Option<u64> {
        self.core
            .cluster
            .as_ref()
            .and_then(|node| node.generation())
    }

    /// In a cluster, the live members as this node last read them (each heartbeat reads them
    /// again); empty outside a cluster.
    pub fn members(&self) -> Vec<crate::store::MemberRecord> {
        self.core
            .cluster
            .as_ref()
            .map(|node| node.members())
            .unwrap_or_default()
    }

    /// Stops every agent and waits for each thread to finish the message it is handling, then
    /// (with a durable bus) up to 10 s for the signals they emitted to be published on it.
    pub async fn shutdown(&self) {
        let threads = self.core.all_threads();
        for agent in self.core.agents.iter() {
            agent.value().end_subscriptions();
        }
        self.core.agents.clear();
        self.core.groups.clear();
        // All at once: each stops when its current message is handled.
        let stopping = threads.iter().map(|thread| {
            thread.stop_and_wait(
                Some("runtime shutdown".to_owned()),
                Some(Duration::from_secs(5)),
            )
        });
        futures::future::join_all(stopping).await;
        if !self.core.flush_durable(Duration::from_secs(10)).await {
            tracing::warn!(
                "shutdown: some emitted signals were not yet published on the durable bus"
            );
        }
        if let Ok(mut listening) = self.core.listening.lock() {
            listening.take();
        }
        if let Some(node) = &self.core.cluster
            && let Err(error) = node.leave().await
        {
            tracing::warn!(target: "motet::cluster", %error, "could not leave the cluster: the membership expires instead");
        }
        self.core.shut_down();
    }
}

/// What a cluster's node asks of the runtime it is part of.
struct NodeHost {
    core: std::sync::Weak<RuntimeCore>,
}

impl crate::cluster::Hosting for NodeHost {
    fn alive(&self) -> bool {
        self.core.strong_count() > 0
    }

    fn give_up_all(&self) {
        if let Some(core) = self.core.upgrade() {
            core.give_up_all();
        }
    }

    fn hosted(&self) -> Vec<String> {
        self.core
            .upgrade()
            .map(|core| core.hosted_virtual())
            .unwrap_or_default()
    }

    fn hand_over(&self, agent: &str) {
        if let Some(core) = self.core.upgrade() {
            core.hand_over(agent);
        }
    }

    fn adopt(
        &self,
        agent: String,
        threads: Vec<String>,
    ) -> futures::future::BoxFuture<'static, ()> {
        let core = self.core.upgrade();
        Box::pin(async move {
            let Some(core) = core else {
                return;
            };
            // Its lease first: a member racing for it learns who took it.
            if let Err(error) = core.activate(&agent).await {
                tracing::info!(target: "motet::cluster", %agent, %error, "an orphaned agent was not adopted here");
                return;
            }
            let runtime = Runtime { core };
            for id in threads {
                // Those waiting for a person are left for the answer to carry on.
                match runtime
                    .recover_thread(&id, Waits::Leave, BOOT_PATIENCE)
                    .await
                {
                    Ok(Some(_resumed)) => {
                        tracing::info!(target: "motet::cluster", %agent, thread = %id, "resumed the request an adopted agent owed");
                    }
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!(target: "motet::cluster", %agent, thread = %id, %error, "could not resume an adopted agent's thread");
                    }
                }
            }
        })
    }
}

/// Whether a recovery resumes the requests that wait for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waits {
    /// Resumed with the rest: their waits are shown again on their tickets.
    Resume,
    /// Left for a person's answer to carry on.
    Leave,
}
