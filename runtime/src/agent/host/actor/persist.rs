//! The commit point and the way back: what a thread actor writes to the store after each step
//! (its strategy's new thread entries and a snapshot of the whole state, in one write) and how
//! it reads them back when it starts again or another writer moved the thread on.

use motet_agents::{Strategy, Thread, Waiting};
use serde::{Deserialize, Serialize};

use super::state::Fingerprint;
use super::{ThreadActor, ThreadState};
use crate::agent::host::children::Children;
use crate::store::{StepCommit, StoreError, ThreadHeader, ThreadKey, ThreadMeta, TimerWrite};

/// What a step commits beside the strategy's entries and state: the request still running
/// after it, the tool calls waiting for a person, the bus delivery it handled, the changes
/// its directives make to the thread's timers, and its children when its directives changed
/// them (`None`: those the thread has).
pub(super) struct Commit<'a> {
    pub(super) open: Option<&'a str>,
    pub(super) waiting: &'a [Waiting],
    pub(super) delivered: Option<&'a str>,
    pub(super) timers: &'a [TimerWrite],
    pub(super) children: Option<&'a Children>,
}

/// What is stored beside a thread's entries: the strategy's state at the last commit (its
/// Thread taken out, stored as the entries), the rev it goes with, the request that was
/// running then (the one a recovery resumes) and the tool calls that waited for a person
/// (listed without the thread running).
#[derive(Serialize)]
struct SnapshotOut<'a, T> {
    rev: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    waiting: &'a [Waiting],
    /// The durable bus deliveries committed last (`id@source`), oldest first.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    applied: &'a [&'a str],
    /// The children started with `Spawn`, by tag.
    #[serde(skip_serializing_if = "Children::is_empty")]
    children: &'a Children,
    state: &'a T,
}

/// A stored snapshot, read back.
#[derive(Deserialize)]
pub(crate) struct Snapshot<T> {
    pub(crate) rev: u64,
    #[serde(default)]
    pub(crate) request: Option<String>,
    #[serde(default)]
    pub(crate) applied: Vec<String>,
    #[serde(default)]
    pub(crate) children: Children,
    pub(crate) state: T,
}

/// The request that was running when the thread last committed, read from stored state text
/// without knowing the strategy's state type.
pub(crate) fn open_request(saved: &str) -> Option<String> {
    serde_json::from_str::<Snapshot<serde::de::IgnoredAny>>(saved)
        .ok()
        .and_then(|s| s.request)
}

/// The tool calls that waited for a person when the thread last committed, read from stored
/// state text without knowing the strategy's state type.
///
/// # Errors
/// The decoder's message when the text is not a snapshot.
pub(crate) fn stored_waiting(saved: &str) -> Result<Vec<Waiting>, String> {
    #[derive(Deserialize)]
    struct Waits {
        #[serde(default)]
        waiting: Vec<Waiting>,
    }
    serde_json::from_str::<Waits>(saved)
        .map(|s| s.waiting)
        .map_err(|e| e.to_string())
}

/// A thread as stored: the state put together from its entries and its snapshot (or, for a
/// thread stored without one, from its entries alone: `saved` is then `None`).
pub(super) struct Stored<T> {
    state: T,
    rev: u64,
    saved: Option<String>,
    applied: Vec<String>,
    children: Children,
}

/// How a thread comes back from the store.
pub(super) struct Loaded<T> {
    pub(super) strategy: T,
    pub(super) rev: u64,
    pub(super) stored: bool,
    /// The fingerprint of the snapshot as stored, so an unchanged state is not written again.
    pub(super) saved: Option<Fingerprint>,
    /// The durable bus deliveries committed last.
    pub(super) applied: Vec<String>,
    /// The children the thread had started, by tag.
    pub(super) children: Children,
    /// The fencing epoch claimed for this actor (0 for a thread not stored yet).
    pub(super) epoch: u64,
    /// The request the stored thread was in the middle of when it was last committed: a
    /// process stopped there.
    pub(super) interrupted: Option<String>,
}

/// How many times a load is tried again when the thread changes between reading its entries
/// and reading its state (another process committing at that moment).
const LOAD_ATTEMPTS: usize = 3;

impl<S> ThreadActor<S>
where
    S: Strategy + Send + Sync + 'static,
    S::State: Send + Sync + 'static,
{
    /// The thread as stored: its entries and the state committed with them, put together. A
    /// thread never stored is `None`; a state that cannot be read is an error (the thread is
    /// never replaced by a fresh one).
    pub(super) async fn load(&self) -> Result<Option<Stored<S::State>>, StoreError> {
        let store = &self.core.store;
        let id = &self.store_id;
        for _ in 0..LOAD_ATTEMPTS {
            let Some(thread) = store.load(id).await? else {
                return Ok(None);
            };
            let saved = store.load_state(id).await?;
            if let Some(stored) = self.assemble(thread, saved)? {
                return Ok(Some(stored));
            }
        }
        Err(StoreError::CorruptThread {
            thread_id: id.to_string(),
            reason: format!("it changed under each of {LOAD_ATTEMPTS} reads"),
        })
    }

    /// The thread as stored, from its entries and the state stored with them; `None` when the
    /// two disagree (read while another writer committed: read them again). A state that
    /// cannot be read is an error.
    fn assemble(
        &self,
        thread: Thread,
        saved: Option<String>,
    ) -> Result<Option<Stored<S::State>>, StoreError> {
        let rev = thread.entry_count() as u64;
        let Some(saved) = saved else {
            let state = self.agent.strategy.restore_thread(&SYSTEM_ENV, thread);
            return Ok(Some(Stored {
                state,
                rev,
                saved: None,
                applied: Vec::new(),
                children: Children::new(),
            }));
        };
        let snapshot: Snapshot<S::State> =
            serde_json::from_str(&saved).map_err(|e| StoreError::CorruptThread {
                thread_id: self.store_id.to_string(),
                reason: format!("the agent state does not fit the strategy: {e}"),
            })?;
        if snapshot.rev != rev {
            return Ok(None);
        }
        let mut state = snapshot.state;
        if let Some(slot) = self.agent.strategy.thread_mut(&mut state) {
            *slot = thread;
        }
        Ok(Some(Stored {
            state,
            rev,
            saved: Some(saved),
            applied: snapshot.applied,
            children: snapshot.children,
        }))
    }

    /// The state a starting thread actor begins with. A stored thread is claimed first (its
    /// fencing epoch bumped): from then on a writer still holding it from before cannot commit.
    /// Claim and reads are one call to the store ([`ThreadStore::claim_and_load`]); a thread
    /// and state that disagree (another process committing at that moment) are read again.
    ///
    /// [`ThreadStore::claim_and_load`]: crate::store::ThreadStore::claim_and_load
    pub(super) async fn starting_state(&self) -> Result<Loaded<S::State>, StoreError> {
        let env = SYSTEM_ENV;
        let Some(claimed) = self.core.store.claim_and_load(&self.store_id).await? else {
            return Ok(Loaded {
                epoch: 0,
                strategy: self.agent.strategy.init_for_thread(&env, &self.store_id),
                rev: 0,
                stored: false,
                saved: None,
                interrupted: None,
                applied: Vec::new(),
                children: Children::new(),
            });
        };
        let epoch = claimed.epoch;
        let stored = match self.assemble(claimed.thread, claimed.state)? {
            Some(stored) => Some(stored),
            None => self.load().await?,
        };
        let loaded = match stored {
            Some(stored) => Loaded {
                epoch,
                strategy: match stored.saved {
                    Some(_) => self.agent.strategy.restore(&env, stored.state),
                    None => stored.state,
                },
                rev: stored.rev,
                stored: true,
                saved: stored.saved.as_deref().map(Fingerprint::of),
                interrupted: stored.saved.as_deref().and_then(open_request),
                applied: stored.applied,
                children: stored.children,
            },
            // Deleted between the claim and the read: it starts afresh.
            None => Loaded {
                epoch: 0,
                strategy: self.agent.strategy.init_for_thread(&env, &self.store_id),
                rev: 0,
                stored: false,
                saved: None,
                interrupted: None,
                applied: Vec::new(),
                children: Children::new(),
            },
        };
        self.note_holder(&loaded.strategy);
        Ok(loaded)
    }

    /// Tells the runtime who holds this thread as its stored entries say (a handoff moves it
    /// to another agent; a request taken in brings it back): asks on it are routed there.
    fn note_holder(&self, strategy: &S::State) {
        let held = self
            .agent
            .strategy
            .thread(strategy)
            .and_then(motet_agents::delegate::holder);
        self.core.held_by(&self.agent.name, &self.thread_id, held);
    }

    /// Replaces the strategy's state with the stored one (another writer moved the thread
    /// on); nothing changes when it cannot be loaded. Returns whether it was reloaded.
    pub(super) async fn reload(&self, state: &mut ThreadState<S>) -> bool {
        // Rejoined at the epoch whoever moved it on left it at (not claimed: a writer whose
        // request is still in flight keeps its claim; the rev keeps the two from interleaving).
        match self.core.store.epoch(&self.store_id).await {
            Ok(epoch) => state.epoch = epoch,
            Err(error) => {
                tracing::warn!(thread = %self.store_id, %error, "could not read the thread's epoch to reload it");
                return false;
            }
        }
        let stored = match self.load().await {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(thread = %self.store_id, %error, "could not read the thread to reload it");
                return false;
            }
        };
        if let Some(stored) = stored {
            state.stored_rev = stored.rev;
            state.stored = true;
            state.strategy = match stored.saved {
                Some(_) => self.agent.strategy.reload(&state.env, stored.state),
                None => stored.state,
            };
            state.saved = stored.saved.as_deref().map(Fingerprint::of);
            if let Some(deliveries) = state.deliveries.as_mut() {
                deliveries.replace_applied(stored.applied);
            }
            state.tracked.replace_children(stored.children);
            self.note_holder(&state.strategy);
            return true;
        }
        false
    }

    /// Drops what the actor holds beyond the store after a commit failed, taking the thread
    /// back as stored: as if its process had stopped at the last commit. A request whose first
    /// commit failed left nothing behind (asked again, it runs afresh); one that failed later
    /// is the stored thread's open request, carried on in place when asked again under its id
    /// ([`book::arrival`](crate::agent::book::arrival)), and until then the thread takes new requests.
    /// Fails, changing nothing, while the store cannot be read.
    pub(super) async fn catch_up(&self, state: &mut ThreadState<S>) -> Result<(), StoreError> {
        let interrupted = match self.load().await? {
            Some(stored) => {
                let interrupted = stored.saved.as_deref().and_then(open_request);
                state.strategy = match stored.saved {
                    Some(_) => self.agent.strategy.restore(&state.env, stored.state),
                    None => stored.state,
                };
                state.stored_rev = stored.rev;
                state.stored = true;
                state.saved = stored.saved.as_deref().map(Fingerprint::of);
                if let Some(deliveries) = state.deliveries.as_mut() {
                    deliveries.replace_applied(stored.applied);
                }
                state.tracked.replace_children(stored.children);
                interrupted
            }
            None => {
                // The thread's first write failed: it starts again as it would have.
                state.strategy = self
                    .agent
                    .strategy
                    .init_for_thread(&state.env, &self.store_id);
                state.stored_rev = 0;
                state.stored = false;
                state.saved = None;
                state.epoch = 0;
                None
            }
        };
        match interrupted {
            Some(request) => state.tracked.occasional().interrupted = Some(request),
            None => {
                if let Some(occasional) = state.tracked.occasional.as_mut() {
                    occasional.interrupted = None;
                }
            }
        }
        state.diverged = false;
        self.note_holder(&state.strategy);
        Ok(())
    }

    /// Writes what the step changed: the entries the strategy's thread gained, the state's
    /// snapshot (with what `commit` says: the request still running, the bus delivery handled)
    /// and the timers its directives set or cancel — after the settling of the timer whose
    /// firing the step handles, if it does — in one write; nothing when none changed.
    pub(super) async fn persist(
        &self,
        state: &mut ThreadState<S>,
        commit: &Commit<'_>,
    ) -> Result<(), StoreError> {
        let id = &self.store_id;
        let entry_count = self
            .agent
            .strategy
            .thread(&state.strategy)
            .map_or(0, |t| t.entry_count() as u64);
        let rev = entry_count.max(state.stored_rev);
        let applied = state
            .deliveries
            .as_deref()
            .map(|d| d.applied_with(commit.delivered))
            .unwrap_or_default();
        let children = commit.children.unwrap_or(state.tracked.children());
        // A firing's settling first: the step's own writes to the same timer come after it.
        let joined: Vec<TimerWrite>;
        let timers = match commit
            .delivered
            .and_then(|key| state.deliveries.as_deref()?.settles(key))
        {
            Some(settles) => {
                joined = std::iter::once(settles)
                    .chain(commit.timers)
                    .cloned()
                    .collect();
                &joined[..]
            }
            None => commit.timers,
        };
        let snapshot = self.snapshot(
            &mut state.strategy,
            rev,
            commit.open,
            commit.waiting,
            &applied,
            children,
        )?;
        let print = Fingerprint::of(&snapshot);
        if entry_count <= state.stored_rev {
            if state.saved.is_none() && !state.stored {
                // Never stored: the state a fresh thread starts with needs no write.
                let mut fresh = self.agent.strategy.init_for_thread(&state.env, id);
                state.saved = Some(Fingerprint::of(&self.snapshot(
                    &mut fresh,
                    0,
                    None,
                    &[],
                    &[],
                    &Children::new(),
                )?));
            }
            if state.saved == Some(print) {
                if timers.is_empty() {
                    return Ok(());
                }
                if state.stored {
                    // Only the timers changed.
                    return self.commit_timers(state, timers).await;
                }
                // A thread never stored: its first write, below, creates it with them.
            }
        }
        let store = &self.core.store;
        let lease = self.lease()?;
        let thread = self.agent.strategy.thread(&state.strategy);
        let entries = thread.map_or(&[][..], |t| {
            let from = usize::try_from(state.stored_rev)
                .unwrap_or(usize::MAX)
                .min(t.entry_count());
            &t.to_list()[from..]
        });
        if !state.stored {
            // The thread's first write: the thread, who runs it, its first entries, its state
            // and its timers at once — a crash never leaves a thread without its entries or
            // its meta, nor a step without its timers.
            // Stored under the agent's thread, whatever id the strategy gave its Thread.
            let header = match thread {
                Some(thread) => ThreadHeader {
                    id: id.to_string(),
                    ..ThreadHeader::of(thread)
                },
                None => ThreadHeader::new(id.clone(), motet_agents::Env::now_ms(&state.env)),
            };
            // The state and the timers go in the same write.
            let meta = self.meta(&state.strategy);
            let first = StepCommit {
                thread_id: id,
                create: Some((&header, &meta)),
                entries,
                expected_rev: 0,
                state: Some(&snapshot),
                epoch: 0,
                timers,
                lease,
            };
            state.stored_rev = store.commit_step(&first).await?;
            // Created at epoch 0, which this actor holds until someone claims the thread.
            state.epoch = 0;
            state.stored = true;
        } else {
            let next = StepCommit {
                thread_id: id,
                create: None,
                entries,
                expected_rev: state.stored_rev,
                state: Some(&snapshot),
                epoch: state.epoch,
                timers,
                lease,
            };
            state.stored_rev = store.commit_step(&next).await?;
        }
        state.saved = Some(print);
        if let Some(held) = motet_agents::delegate::holder_change(entries) {
            self.core.held_by(&self.agent.name, &self.thread_id, held);
        }
        if !entries.is_empty() {
            self.thread_updated(state, entries.len() as u64);
        }
        Ok(())
    }

    /// In a cluster, the lease this thread's agent commits under: the one this node holds, or
    /// [`StoreError::LeaseLost`] when it holds none now (a commit without it would not be
    /// fenced). Outside a cluster, and for agents not leased, `None`.
    fn lease(&self) -> Result<Option<crate::store::LeaseFence<'_>>, StoreError> {
        let Some(node) = &self.core.cluster else {
            return Ok(None);
        };
        if !self.core.is_virtual(&self.agent.name) {
            return Ok(None);
        }
        node.fence(&self.agent.name)
            .map(Some)
            .ok_or_else(|| StoreError::LeaseLost {
                agent: self.agent.name.to_string(),
                epoch: 0,
            })
    }

    /// Writes a step's timer changes alone, for a stored thread the step changed nothing else
    /// of: at the thread's rev and epoch, so a writer that lost the thread cannot set them.
    async fn commit_timers(
        &self,
        state: &mut ThreadState<S>,
        timers: &[TimerWrite],
    ) -> Result<(), StoreError> {
        let timers_only = StepCommit {
            thread_id: &self.store_id,
            create: None,
            entries: &[],
            expected_rev: state.stored_rev,
            state: None,
            epoch: state.epoch,
            timers,
            lease: self.lease()?,
        };
        state.stored_rev = self.core.store.commit_step(&timers_only).await?;
        Ok(())
    }

    /// Publishes `thread.updated` for a commit that added `appended` entries.
    fn thread_updated(&self, state: &ThreadState<S>, appended: u64) {
        let estimated_tokens = self
            .agent
            .strategy
            .thread(&state.strategy)
            .map_or(0, |t| t.stats().estimated_tokens);
        let data = motet_agents::ThreadUpdated {
            thread_id: self.thread_id.to_string(),
            agent: self.agent.name.to_string(),
            rev: state.stored_rev,
            appended,
            estimated_tokens,
        };
        let thread = Some(&*self.thread_id);
        if let Some(signal) =
            crate::agent::signals::notice(motet_agents::THREAD_UPDATED, thread, data)
        {
            self.core.bus.publish(&signal);
        }
    }

    /// The state as stored: its Thread swapped out for an empty one while it is written (the
    /// entries are stored on their own), so a snapshot stays small however long the thread.
    fn snapshot(
        &self,
        strategy: &mut S::State,
        rev: u64,
        request: Option<&str>,
        waiting: &[Waiting],
        applied: &[&str],
        children: &Children,
    ) -> Result<String, StoreError> {
        let encode = |state: &S::State| {
            serde_json::to_string(&SnapshotOut {
                rev,
                request,
                waiting,
                applied,
                children,
                state,
            })
            .map_err(|e| StoreError::Encode {
                thread_id: self.store_id.to_string(),
                reason: format!("the agent state: {e}"),
            })
        };
        let Some(slot) = self.agent.strategy.thread_mut(strategy) else {
            return encode(strategy);
        };
        // Read back, the snapshot's thread is replaced by the stored one (`load`): the
        // placeholder carries nothing, not even the id (ReAct leaves such a thread out of its
        // state's JSON altogether).
        let placeholder = Thread::new(String::new(), 0);
        let thread = std::mem::replace(slot, placeholder);
        let encoded = encode(strategy);
        if let Some(slot) = self.agent.strategy.thread_mut(strategy) {
            *slot = thread;
        }
        encoded
    }

    /// What the agent needs to come back: who runs the thread, under which name (`recover`
    /// reads both; every agent takes requests as `agent.request`, so no request type is kept).
    ///
    /// The context policy in force is recorded too (seed 000's ThreadMeta.policy).
    fn meta(&self, strategy: &S::State) -> ThreadMeta {
        let policy = self
            .agent
            .strategy
            .context_policy(strategy)
            .and_then(|p| serde_json::to_value(p).ok());
        ThreadMeta {
            policy,
            key: Some(ThreadKey::new(
                self.agent.name.clone(),
                self.thread_id.clone(),
            )),
            ..ThreadMeta::default()
        }
    }

    /// Rewrites the stored thread's meta (after the agent's context policy changed); nothing
    /// for a thread not stored yet, whose first write carries it.
    pub(super) async fn write_meta(&self, state: &ThreadState<S>) -> Result<(), StoreError> {
        if !state.stored {
            return Ok(());
        }
        let meta = self.meta(&state.strategy);
        self.core.store.put_meta(&self.store_id, &meta).await
    }
}

const SYSTEM_ENV: crate::agent::env::SystemEnv = crate::agent::env::SystemEnv;
