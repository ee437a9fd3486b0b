//! [`SharedLimits`]: the governor of each account behind a lock, calls that wait on a oneshot
//! until it grants them, and a timer task armed for the next moment a grant can happen. It
//! decides nothing itself: every decision is the [`Governor`]'s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use motet_directives::ModelRef;
use tokio::sync::oneshot;

use super::RateObserver;
use super::headers::Learned;
use super::plan::{Claim, ClaimId, Governor, Rates, Spent};
use crate::error::ProviderError;

/// Why a call got no permit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// The call's deadline passed while it waited for the account's capacity.
    #[error(
        "waited {} ms for the shared rate limits of `{account}` and the call's deadline passed",
        waited.as_millis()
    )]
    DeadlinePassed {
        /// The account (`openai`, or `openai:gpt-5.2` when the model has limits of its own).
        account: String,
        /// How long it waited.
        waited: Duration,
    },
    /// The limiter went away while the call waited (its runtime is shutting down).
    #[error("the shared rate limits of `{account}` closed while the call waited")]
    Closed {
        /// The account.
        account: String,
    },
}

impl From<LimitError> for ProviderError {
    fn from(error: LimitError) -> Self {
        ProviderError::RateLimited {
            retry_after: None,
            message: error.to_string(),
        }
    }
}

/// What a waiting call is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Granted,
    Expired,
}

/// One account: its governor, the calls waiting on it, and the armed timer.
#[derive(Debug)]
struct Account {
    key: Arc<str>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    governor: Governor,
    waiters: HashMap<ClaimId, oneshot::Sender<Outcome>>,
    /// The earliest moment a timer task will run the governor again.
    timer: Option<Instant>,
}

fn clock() -> Instant {
    tokio::time::Instant::now().into_std()
}

impl Account {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs the governor at `now`: tells the expired and the granted, and arms a timer for its
    /// next wake-up.
    fn pump(self: &Arc<Self>, state: &mut State, now: Instant) {
        for id in state.governor.expire(now) {
            if let Some(waiter) = state.waiters.remove(&id) {
                let _ = waiter.send(Outcome::Expired);
            }
        }
        loop {
            let granted = state.governor.grant(now);
            if granted.is_empty() {
                break;
            }
            let mut gone = false;
            for id in granted {
                let told = state
                    .waiters
                    .remove(&id)
                    .is_some_and(|w| w.send(Outcome::Granted).is_ok());
                if !told {
                    // The caller stopped waiting as it was granted: its stream is free again.
                    state.governor.cancel(id);
                    gone = true;
                }
            }
            if !gone {
                break;
            }
        }
        let Some(wake) = state.governor.next_wake(now) else {
            return;
        };
        if state.timer.is_some_and(|armed| armed <= wake) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        state.timer = Some(wake);
        let account = Arc::clone(self);
        runtime.spawn(async move {
            tokio::time::sleep_until(tokio::time::Instant::from_std(wake)).await;
            let mut state = account.lock();
            if state.timer == Some(wake) {
                state.timer = None;
            }
            account.pump(&mut state, clock());
        });
    }
}

/// The shared limits of every provider account a process calls, cheap to clone (an `Arc`).
/// Accounts are named by provider (`openai`), or by model ref (`openai:gpt-5.2`) for a model
/// configured with limits of its own; an account not configured gets the default limits.
#[derive(Debug, Clone, Default)]
pub struct SharedLimits {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    defaults: Rates,
    configured: HashMap<String, Rates>,
    accounts: Mutex<HashMap<String, Arc<Account>>>,
}

impl SharedLimits {
    /// No limits configured: none apply until headers teach some or a 429 says to wait.
    pub fn new() -> Self {
        Self::default()
    }

    /// The limits of accounts not configured by name. Configure before the first call: a
    /// builder method starts the accounts afresh.
    pub fn with_defaults(self, rates: Rates) -> Self {
        self.rebuilt(|inner| inner.defaults = rates)
    }

    /// The limits of the account `key`: a provider (`anthropic`) or a model ref
    /// (`anthropic:claude-sonnet-4-5`) whose limits are its own.
    pub fn with_account(self, key: impl Into<String>, rates: Rates) -> Self {
        let key = key.into();
        self.rebuilt(|inner| {
            inner.configured.insert(key, rates);
        })
    }

    fn rebuilt(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Inner {
            defaults: self.inner.defaults,
            configured: self.inner.configured.clone(),
            accounts: Mutex::default(),
        };
        change(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The limits configured for `key`, or the defaults.
    pub fn rates(&self, key: &str) -> Rates {
        self.inner
            .configured
            .get(key)
            .copied()
            .unwrap_or(self.inner.defaults)
    }

    /// The account calls for `model` spend from.
    pub fn account_key(&self, model: &ModelRef) -> String {
        let full = model.to_string();
        if self.inner.configured.contains_key(&full) {
            full
        } else {
            model.provider().to_owned()
        }
    }

    fn account(&self, model: &ModelRef) -> Arc<Account> {
        let key = self.account_key(model);
        let mut accounts = self
            .inner
            .accounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(account) = accounts.get(&key) {
            return Arc::clone(account);
        }
        let account = Arc::new(Account {
            key: Arc::from(key.as_str()),
            state: Mutex::new(State {
                governor: Governor::new(self.rates(&key), clock()),
                waiters: HashMap::new(),
                timer: None,
            }),
        });
        accounts.insert(key, Arc::clone(&account));
        account
    }

    /// Waits until the account of `model` has room for `claim`, in fair order, and returns the
    /// permit that holds its share until it is finished or dropped. Dropping the future while
    /// it waits withdraws the claim.
    ///
    /// # Errors
    /// [`LimitError::DeadlinePassed`] when the claim's deadline passes first.
    pub async fn acquire(&self, model: &ModelRef, claim: Claim) -> Result<Permit, LimitError> {
        let account = self.account(model);
        let started = clock();
        let priority = claim.priority;
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut state = account.lock();
            let id = state.governor.enqueue(claim, started);
            state.waiters.insert(id, tx);
            account.pump(&mut state, started);
            id
        };
        let mut withdraw = Withdraw {
            account: Some(Arc::clone(&account)),
            id,
        };
        let outcome = rx.await;
        withdraw.account = None;
        let waited = clock().saturating_duration_since(started);
        match outcome {
            Ok(Outcome::Granted) => {
                if waited >= Duration::from_millis(1) {
                    // An event of the current span: on the `chat` span it becomes a span event.
                    tracing::info!(
                        motet.limits.account = %account.key,
                        motet.limits.wait_ms = waited.as_millis() as u64,
                        motet.limits.priority = %priority,
                        "rate limit wait"
                    );
                }
                Ok(Permit {
                    account,
                    id,
                    waited,
                    done: false,
                })
            }
            Ok(Outcome::Expired) => Err(LimitError::DeadlinePassed {
                account: account.key.to_string(),
                waited,
            }),
            Err(_) => Err(LimitError::Closed {
                account: account.key.to_string(),
            }),
        }
    }

    /// How long calls for `model` are held by the shared backoff from now.
    pub fn backoff(&self, model: &ModelRef) -> Duration {
        let account = self.account(model);
        let now = clock();
        let state = account.lock();
        state
            .governor
            .backoff_until(now)
            .map_or(Duration::ZERO, |until| until.saturating_duration_since(now))
    }

    /// Calls waiting for the account of `model`.
    pub fn waiting(&self, model: &ModelRef) -> usize {
        self.account(model).lock().governor.waiting()
    }
}

impl RateObserver for SharedLimits {
    fn observed(&self, model: &ModelRef, status: u16, headers: &[(&str, &str)]) {
        let now_ms = jiff::Timestamp::now().as_millisecond();
        let learned = Learned::from_headers(headers.iter().copied(), now_ms);
        let account = self.account(model);
        let now = clock();
        let mut state = account.lock();
        if !learned.is_empty() {
            state.governor.learn(&learned, now);
        }
        if status == 429 {
            state.governor.throttle(learned.retry_after, now);
            tracing::info!(
                motet.limits.account = %account.key,
                motet.limits.backoff_ms = state
                    .governor
                    .backoff_until(now)
                    .map_or(0, |u| u.saturating_duration_since(now).as_millis() as u64),
                "rate limited: every call to the account backs off"
            );
        } else if (200..300).contains(&status) {
            state.governor.succeeded();
        }
        account.pump(&mut state, now);
    }

    fn hold(&self, model: &ModelRef) -> Duration {
        self.backoff(model)
    }
}

/// Withdraws a claim whose caller stopped waiting.
struct Withdraw {
    account: Option<Arc<Account>>,
    id: ClaimId,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(account) = self.account.take() {
            let mut state = account.lock();
            state.waiters.remove(&self.id);
            state.governor.cancel(self.id);
            account.pump(&mut state, clock());
        }
    }
}

/// A call's share of its account, held until [`finish`](Self::finish)ed with what it used, or
/// dropped (then its token charges stay as estimated).
#[derive(Debug)]
pub struct Permit {
    account: Arc<Account>,
    id: ClaimId,
    waited: Duration,
    done: bool,
}

impl Permit {
    /// How long the call waited for it.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// The account it was granted by.
    pub fn account(&self) -> &str {
        &self.account.key
    }

    /// Settles with what the call used: the unused part of the estimate goes back to the
    /// account, an overrun is taken from it.
    pub fn finish(mut self, spent: Spent) {
        self.done = true;
        let now = clock();
        let mut state = self.account.lock();
        state.governor.settle(self.id, spent, now);
        self.account.pump(&mut state, now);
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.done {
            let now = clock();
            let mut state = self.account.lock();
            state.governor.cancel(self.id);
            self.account.pump(&mut state, now);
        }
    }
}
