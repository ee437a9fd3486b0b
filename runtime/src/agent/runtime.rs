//! The [`Runtime`]: many agents in one process, built with a [`RuntimeBuilder`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use motet_agents::Strategy;
use motet_providers::LlmClient;
use motet_signals::Bus;

use super::errors::RuntimeError;
use super::handle::AgentHandle;
use super::registry::{KindFactory, Registry, Services, register_agent};
use super::requests::{RequestRecord, Requests};
use super::spec::{AgentSpec, DEFAULT_LLM_CONCURRENCY};
use crate::store::{MemoryStore, ThreadStore};

/// Builds a [`Runtime`].
#[derive(Default)]
pub struct RuntimeBuilder {
    llm: Option<Arc<dyn LlmClient>>,
    bus: Option<Arc<Bus>>,
    limits: Vec<(String, usize)>,
    default_limit: Option<usize>,
    store: Option<Arc<dyn ThreadStore>>,
    kinds: HashMap<String, KindFactory>,
}

impl RuntimeBuilder {
    /// The LLM client agents' `LlmStream` directives go through (a
    /// [`motet_providers::Providers`] in production).
    pub fn llm(mut self, client: Arc<dyn LlmClient>) -> Self {
        self.llm = Some(client);
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

    /// Where agents' threads are stored: every entry a strategy appends is committed before the
    /// directives of that step run, and a thread actor that comes back (after an idle stop or a
    /// restart) loads its thread from here. In memory by default; a
    /// [`crate::store::SqliteStore`] survives the process.
    pub fn store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.store = Some(store);
        self
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
        let start: KindFactory = Arc::new(move |services, name, config, parent| {
            let spec = factory(config);
            Box::pin(async move {
                let mut spec = spec.map_err(|message| RuntimeError::SpawnFailed {
                    name: name.clone(),
                    message,
                })?;
                spec.name = name;
                register_agent(&services, spec, parent).await
            })
        });
        self.kinds.insert(kind.into(), start);
        self
    }

    /// The bus `Emit` directives publish on; a fresh one by default.
    pub fn bus(mut self, bus: Arc<Bus>) -> Self {
        self.bus = Some(bus);
        self
    }

    /// The runtime.
    ///
    /// # Errors
    /// [`RuntimeError::NoLlmClient`] when no client was given.
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        Ok(Runtime {
            services: Arc::new(Services {
                llm: self.llm.ok_or(RuntimeError::NoLlmClient)?,
                bus: self.bus.unwrap_or_default(),
                agents: Registry::default(),
                thread_keys: Registry::default(),
                llm_limits: self
                    .limits
                    .into_iter()
                    .map(|(p, n)| (p, Arc::new(tokio::sync::Semaphore::new(n))))
                    .collect(),
                default_llm_limit: self.default_limit.unwrap_or(DEFAULT_LLM_CONCURRENCY),
                supervisor: tokio::sync::OnceCell::new(),
                groups: DashMap::new(),
                store: self
                    .store
                    .unwrap_or_else(|| Arc::new(MemoryStore::new()) as Arc<dyn ThreadStore>),
                kinds: self.kinds,
                requests: Requests::default(),
                idle_sweep: std::sync::Mutex::new(None),
                idle_period_ns: std::sync::atomic::AtomicU64::new(0),
                delta_type: super::events::LLM_DELTA.parse().ok(),
            }),
        })
    }
}

/// Many agents in one process.
#[derive(Clone)]
pub struct Runtime {
    services: Arc<Services>,
}

impl Runtime {
    /// A builder.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The bus agents publish on.
    pub fn bus(&self) -> &Arc<Bus> {
        &self.services.bus
    }

    /// Starts an agent.
    ///
    /// # Errors
    /// [`RuntimeError::NameTaken`] when an agent of that name runs,
    /// [`RuntimeError::SpawnFailed`] when its actor cannot start.
    pub async fn spawn<S>(&self, spec: AgentSpec<S>) -> Result<AgentHandle, RuntimeError>
    where
        S: Strategy + Send + Sync + 'static,
        S::State: Send + Sync + 'static,
    {
        let name = spec.name.clone();
        register_agent(&self.services, spec, None).await?;
        Ok(AgentHandle {
            name,
            services: self.services.clone(),
        })
    }

    /// The running agent named `name`.
    pub fn agent(&self, name: &str) -> Option<AgentHandle> {
        self.services
            .agents
            .contains_key(name)
            .then(|| AgentHandle {
                name: name.to_owned(),
                services: self.services.clone(),
            })
    }

    /// How many agents are running.
    pub fn agent_count(&self) -> usize {
        self.services.agents.len()
    }

    /// How many conversation threads are running (each is one actor).
    pub fn thread_count(&self) -> usize {
        self.services
            .agents
            .iter()
            .map(|e| e.value().thread_count())
            .sum()
    }

    /// What became of request `id` (any agent): status, timestamps, result.
    pub fn request(&self, id: &str) -> Option<RequestRecord> {
        self.services.requests.get(id)
    }

    /// Stops an agent, its children and their threads.
    pub fn stop_agent(&self, name: &str) {
        self.services.stop_agent(name, "stopped by the application");
    }

    /// Stops every agent and waits for each thread to finish the message it is handling.
    pub async fn shutdown(&self) {
        let threads = self.services.all_threads();
        for agent in self.services.agents.iter() {
            agent.value().end_subscriptions();
        }
        self.services.agents.clear();
        self.services.groups.clear();
        // All at once: each stops when its current message is handled.
        let stopping = threads.iter().map(|thread| {
            thread.stop_and_wait(
                Some("runtime shutdown".to_owned()),
                Some(Duration::from_secs(5)),
            )
        });
        futures::future::join_all(stopping).await;
        self.services.thread_keys.clear();
        if let Some(supervisor) = self.services.supervisor.get() {
            supervisor.stop(None);
        }
        if let Ok(mut sweep) = self.services.idle_sweep.lock()
            && let Some(task) = sweep.take()
        {
            task.abort();
            self.services
                .idle_period_ns
                .store(0, std::sync::atomic::Ordering::Release);
        }
    }
}
