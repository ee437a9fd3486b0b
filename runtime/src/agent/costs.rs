//! Cost accounting and budgets as the runtime carries them out: every LLM call's usage is
//! priced and recorded in the store's usage ledger, and a call is started only when the hard
//! budgets of its request, thread, agent and tenant admit it and it passes no soft step a
//! person has not approved ([`motet_providers::budget::decide`] decides; this module keeps the
//! tallies it decides on).
//!
//! # Tallies
//! Each limited level (a request, a thread, an agent, a tenant) has a tally: what the ledger
//! held for it from before this runtime started (read from the store the first time a call
//! of that level is checked, so a budget half spent before a restart stays half spent), what
//! this runtime recorded since, and what the calls still running there may spend (their
//! estimated input and their whole `max_tokens`, reserved while they run). Checking and
//! reserving happen under one lock, so calls racing at one level cannot all slip under its
//! limit. Another process spending from the same ledger at the same time is not seen until
//! this one reads that level again (at its next start).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use dashmap::DashMap;
use motet_agents::{Heuristic, estimate_message, estimate_tools};
use motet_directives::{LlmRequest, LlmResponse};
use motet_providers::budget::{
    self, Admission, Budget, BudgetLevel, CallEstimate, SoftLimit, Spent,
};
use motet_providers::{CallScope, Cost, PriceTable, ProviderError};

use crate::store::{ThreadStore, UsageFilter, UsageRecord};

/// `max_tokens` given to a call under a budget that set none, when the model's capability
/// table does not know its limit.
pub const DEFAULT_BUDGETED_MAX_TOKENS: u32 = 4_096;

/// The budgets (hard and soft) of one agent's requests, threads and the agent itself, and of a tenant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelBudgets {
    /// Each request.
    pub request: Budget,
    /// Each thread.
    pub thread: Budget,
    /// The agent, all threads together.
    pub agent: Budget,
    /// The agent's tenant, all its agents together (when the tenant has no budget of its own).
    pub tenant: Budget,
}

impl LevelBudgets {
    /// The budget of `level`.
    pub fn get(&self, level: BudgetLevel) -> Budget {
        match level {
            BudgetLevel::Request => self.request,
            BudgetLevel::Thread => self.thread,
            BudgetLevel::Agent => self.agent,
            BudgetLevel::Tenant => self.tenant,
        }
    }

    /// Sets the budget of `level`.
    pub fn set(&mut self, level: BudgetLevel, budget: Budget) {
        match level {
            BudgetLevel::Request => self.request = budget,
            BudgetLevel::Thread => self.thread = budget,
            BudgetLevel::Agent => self.agent = budget,
            BudgetLevel::Tenant => self.tenant = budget,
        }
    }

    fn any(&self) -> bool {
        [self.request, self.thread, self.agent, self.tenant]
            .iter()
            .any(Budget::is_limited)
    }
}

/// A level's tally key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Request(Arc<str>),
    Thread(Arc<str>, Arc<str>),
    Agent(Arc<str>),
    Tenant(Arc<str>),
}

impl Key {
    /// The ledger rows of this level.
    fn filter(&self) -> UsageFilter {
        match self {
            Self::Request(r) => UsageFilter::request(&**r),
            Self::Thread(a, t) => UsageFilter::thread(&**a, &**t),
            Self::Agent(a) => UsageFilter::agent(&**a),
            Self::Tenant(t) => UsageFilter::tenant(&**t),
        }
    }
}

/// What one level has spent.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    /// What the ledger held for the level when this runtime first checked it; `None` until
    /// read.
    before: Option<Spent>,
    /// Recorded by this runtime since it read `before`.
    since: Spent,
    /// Reserved by the calls running now.
    running: Spent,
    /// When a call of the level last started or was recorded (Unix ms).
    touched: u64,
}

impl Tally {
    fn spent(&self) -> Spent {
        self.before
            .unwrap_or_default()
            .plus(self.since)
            .plus(self.running)
    }
}

/// The runtime's prices, budgets and tallies.
pub(crate) struct Costs {
    prices: PriceTable,
    /// Every agent's budgets, unless it has its own.
    defaults: LevelBudgets,
    /// Agents' own budgets (set on their spec).
    agents: DashMap<String, LevelBudgets>,
    /// Tenants' own budgets.
    tenants: HashMap<String, Budget>,
    /// Whether any budget is set anywhere: when not, calls skip the budget path.
    limited: std::sync::atomic::AtomicBool,
    tallies: Arc<Mutex<HashMap<Key, Tally>>>,
}

/// Tallies kept before the idle ones of finished requests are let go: a long-running process
/// asks many requests, each with a tally of its own, and would otherwise keep them all.
const TALLIES_KEPT: usize = 4_096;

/// How long a request's tally stays after its last call, however many there are: long enough
/// that no call of it is still being recorded when it goes. A request that calls again later
/// reads its total back from the ledger.
const IDLE_TALLY_MS: u64 = 60_000;

/// Lets go of the tallies of requests with no call running and none for [`IDLE_TALLY_MS`]. Their
/// spending is in the ledger: a later call of one reads it back.
fn forget_idle_requests(tallies: &mut HashMap<Key, Tally>, now: u64) {
    tallies.retain(|key, tally| {
        !matches!(key, Key::Request(_))
            || tally.running != Spent::default()
            || now.saturating_sub(tally.touched) < IDLE_TALLY_MS
    });
}

impl Costs {
    /// Prices and budgets as configured.
    pub(crate) fn new(
        prices: PriceTable,
        defaults: LevelBudgets,
        tenants: HashMap<String, Budget>,
    ) -> Self {
        let limited = defaults.any() || tenants.values().any(Budget::is_limited);
        Self {
            prices,
            defaults,
            agents: DashMap::new(),
            tenants,
            limited: limited.into(),
            tallies: Arc::default(),
        }
    }

    /// Forgets one agent's own budgets (a virtual agent deactivated: set again as it comes
    /// back).
    pub(crate) fn forget_agent(&self, agent: &str) {
        self.agents.remove(agent);
    }

    /// Sets one agent's own budgets.
    pub(crate) fn set_agent(&self, agent: &str, budgets: &[(BudgetLevel, Budget)]) {
        if budgets.is_empty() {
            return;
        }
        let mut own = self.defaults;
        for (level, budget) in budgets {
            own.set(*level, *budget);
        }
        if own.any() {
            self.limited
                .store(true, std::sync::atomic::Ordering::Release);
        }
        self.agents.insert(agent.to_owned(), own);
    }

    /// The limited levels of a call for `scope`, with their tally keys.
    fn levels(&self, scope: &CallScope) -> Vec<(BudgetLevel, Budget, Key)> {
        if !self.limited.load(std::sync::atomic::Ordering::Acquire) {
            return Vec::new();
        }
        let own = self
            .agents
            .get(&*scope.agent)
            .map(|b| *b.value())
            .unwrap_or(self.defaults);
        let mut levels = Vec::new();
        if let Some(request) = &scope.request {
            levels.push((
                BudgetLevel::Request,
                own.request,
                Key::Request(request.clone()),
            ));
        }
        levels.push((
            BudgetLevel::Thread,
            own.thread,
            Key::Thread(scope.agent.clone(), scope.thread.clone()),
        ));
        levels.push((
            BudgetLevel::Agent,
            own.agent,
            Key::Agent(scope.agent.clone()),
        ));
        if let Some(tenant) = &scope.tenant {
            let budget = self.tenants.get(&**tenant).copied().unwrap_or(own.tenant);
            levels.push((BudgetLevel::Tenant, budget, Key::Tenant(tenant.clone())));
        }
        // A delegated request's calls count in each caller's request budget (its hard limits:
        // a soft step is for the caller's own person to approve on the caller's calls).
        for (agent, request) in &scope.on_behalf_of {
            let budget = self
                .agents
                .get(&**agent)
                .map_or(self.defaults.request, |b| b.value().request);
            let hard = Budget {
                tokens: budget.tokens,
                cost: budget.cost,
                ..Budget::default()
            };
            levels.push((BudgetLevel::Request, hard, Key::Request(request.clone())));
        }
        levels.retain(|(_, budget, _)| budget.is_limited());
        levels
    }

    /// Checks the call against its budgets and reserves what it may spend; gives it a
    /// `max_tokens` when a budget applies and it has none. `None` when no budget applies.
    /// `approved` holds the soft limits a person approved for the call's request ([`budget::decide`]);
    /// `None` checks the hard limits only.
    ///
    /// # Errors
    /// [`ProviderError::BudgetExceeded`] when a hard budget refuses it,
    /// [`ProviderError::BudgetApproval`] when it would pass a soft step nobody approved
    /// (nothing is reserved either way).
    pub(crate) async fn admit(
        &self,
        store: &dyn ThreadStore,
        scope: &CallScope,
        request: &mut LlmRequest,
        input_tokens: u64,
        approved: Option<&[SoftLimit]>,
    ) -> Result<Option<Reservation>, ProviderError> {
        let levels = self.levels(scope);
        if levels.is_empty() {
            return Ok(None);
        }
        for (_, _, key) in &levels {
            self.read_before(store, key).await;
        }
        let max_tokens = *request.options.max_tokens.get_or_insert_with(|| {
            motet_providers::models::capabilities(&request.model)
                .map_or(DEFAULT_BUDGETED_MAX_TOKENS, |caps| caps.max_output)
        });
        let estimate = self.estimate(request, input_tokens, u64::from(max_tokens));
        let at_most = estimate.at_most();
        let now = now_ms();
        let mut tallies = self.tallies.lock().unwrap_or_else(PoisonError::into_inner);
        if tallies.len() > TALLIES_KEPT {
            forget_idle_requests(&mut tallies, now);
        }
        let checked: Vec<_> = levels
            .iter()
            .map(|(level, limit, key)| {
                let spent = tallies.get(key).map(Tally::spent).unwrap_or_default();
                (*level, *limit, spent)
            })
            .collect();
        match approved {
            None => budget::admit(&checked, &estimate).map_err(ProviderError::BudgetExceeded)?,
            Some(approved) => {
                let admission = budget::decide(&checked, &estimate, approved)
                    .map_err(ProviderError::BudgetExceeded)?;
                if let Admission::Ask(soft) = admission {
                    return Err(ProviderError::BudgetApproval(soft));
                }
            }
        }
        let keys: Vec<Key> = levels.into_iter().map(|(_, _, key)| key).collect();
        for key in &keys {
            let tally = tallies.entry(key.clone()).or_default();
            tally.running = tally.running.plus(at_most);
            tally.touched = now;
        }
        drop(tallies);
        Ok(Some(Reservation {
            tallies: Arc::clone(&self.tallies),
            keys,
            amount: at_most,
        }))
    }

    /// What the call may spend: its estimated prompt ([`input_estimate`]) and its whole
    /// `max_tokens`, priced.
    fn estimate(&self, request: &LlmRequest, input_tokens: u64, max_tokens: u64) -> CallEstimate {
        let price = self.prices.price(&request.model).unwrap_or_default();
        let dearer = price.reasoning.max(price.output);
        CallEstimate {
            input_tokens,
            max_output_tokens: max_tokens,
            input_cost: price.input.of(input_tokens),
            max_output_cost: dearer.of(max_tokens),
        }
    }

    /// Reads what the ledger holds for `key`, once while its tally is kept (every call this
    /// runtime recorded before is in it: a level's calls are recorded in its tally only once
    /// the tally was read). A store that cannot be read leaves it unread (asked again at the
    /// next call) and is logged: the call is checked against what this runtime saw.
    async fn read_before(&self, store: &dyn ThreadStore, key: &Key) {
        let known = self
            .tallies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .is_some_and(|t| t.before.is_some());
        if known {
            return;
        }
        match store.usage_totals(&key.filter()).await {
            Ok(totals) => {
                let before = Spent {
                    tokens: totals.usage.total_tokens(),
                    cost: totals.cost,
                };
                let mut tallies = self.tallies.lock().unwrap_or_else(PoisonError::into_inner);
                let tally = tallies.entry(key.clone()).or_default();
                tally.before.get_or_insert(before);
            }
            Err(error) => {
                tracing::warn!(?key, %error, "budget: the usage ledger could not be read");
            }
        }
    }

    /// Prices an answered call, records it in the ledger and in the tallies of its limited
    /// levels; returns its cost (`None` when unpriced). A ledger that cannot be written is
    /// logged, not the call's failure.
    pub(crate) async fn record(
        &self,
        store: &dyn ThreadStore,
        scope: &CallScope,
        request_model: &motet_directives::ModelRef,
        response: &LlmResponse,
    ) -> Option<Cost> {
        let cost = self
            .prices
            .cost_split(request_model, &response.usage, &response.usage_by_model);
        let spent = Spent {
            tokens: response.usage.total_tokens(),
            cost: cost.unwrap_or_default(),
        };
        let levels = self.levels(scope);
        let now = now_ms();
        if !levels.is_empty() {
            let mut tallies = self.tallies.lock().unwrap_or_else(PoisonError::into_inner);
            // Only a tally already read counts it: one read later finds it in the ledger.
            for (_, _, key) in levels {
                if let Some(tally) = tallies.get_mut(&key).filter(|t| t.before.is_some()) {
                    tally.since = tally.since.plus(spent);
                    tally.touched = now;
                }
            }
        }
        let record = UsageRecord {
            at: now,
            agent: scope.agent.to_string(),
            thread: scope.thread.to_string(),
            request: scope.request.as_deref().map(str::to_owned),
            tenant: scope.tenant.as_deref().map(str::to_owned),
            model: request_model.to_string(),
            kind: scope.kind,
            usage: response.usage,
            cost,
        };
        if let Err(error) = store.record_usage(&record).await {
            tracing::warn!(agent = %scope.agent, %error, "the usage ledger could not be written");
        }
        cost
    }
}

/// What a running call reserved at each of its limited levels, given back when it ends
/// (answered, failed or dropped).
pub(crate) struct Reservation {
    tallies: Arc<Mutex<HashMap<Key, Tally>>>,
    keys: Vec<Key>,
    amount: Spent,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut tallies = self.tallies.lock().unwrap_or_else(PoisonError::into_inner);
        for key in &self.keys {
            if let Some(tally) = tallies.get_mut(key) {
                tally.running = tally.running.minus(self.amount);
            }
        }
    }
}

/// A request's prompt estimated as the thread's projection estimates it: its messages and tool
/// definitions, by the heuristic. Made once a call, for its account's limits and its budgets.
pub(crate) fn input_estimate(request: &LlmRequest) -> u64 {
    request
        .messages
        .iter()
        .map(|m| u64::from(estimate_message(&Heuristic, m)))
        .sum::<u64>()
        .saturating_add(estimate_tools(&Heuristic, &request.tools))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(running: u64, touched: u64) -> Tally {
        Tally {
            before: Some(Spent::default()),
            since: Spent {
                tokens: 10,
                cost: Cost::ZERO,
            },
            running: Spent {
                tokens: running,
                cost: Cost::ZERO,
            },
            touched,
        }
    }

    #[test]
    fn only_idle_requests_tallies_are_let_go() {
        let now = 1_000_000;
        let long_ago = now - IDLE_TALLY_MS;
        let mut tallies = HashMap::from([
            (Key::Request("idle".into()), tally(0, long_ago)),
            (Key::Request("running".into()), tally(500, long_ago)),
            (Key::Request("recent".into()), tally(0, now - 1)),
            (Key::Thread("a".into(), "t".into()), tally(0, long_ago)),
            (Key::Agent("a".into()), tally(0, long_ago)),
            (Key::Tenant("acme".into()), tally(0, long_ago)),
        ]);
        forget_idle_requests(&mut tallies, now);
        let mut kept: Vec<String> = tallies.keys().map(|k| format!("{k:?}")).collect();
        kept.sort();
        assert_eq!(
            kept,
            [
                r#"Agent("a")"#,
                r#"Request("recent")"#,
                r#"Request("running")"#,
                r#"Tenant("acme")"#,
                r#"Thread("a", "t")"#,
            ]
        );
    }
}
