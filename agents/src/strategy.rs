//! The Strategy trait: a pure decision function from (state, signal) to directives.

use motet_directives::Directive;
use motet_signals::Signal;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::env::Env;
use crate::error::StrategyError;

/// How an agent decides. `handle` is pure: it reads time and fresh ids only from `env`, changes
/// only `state`, and describes all work as [`Directive`]s for the runtime, whose results come
/// back as signals. Replaying the same signals with the same environment gives the same state
/// and directives.
///
/// A strategy that wraps another must forward [`Strategy::init_for_thread`],
/// [`Strategy::restore`], [`Strategy::reload`] and [`Strategy::thread`] too: their defaults keep no thread, so a
/// wrapper that forgets them has its threads neither stored nor restored.
pub trait Strategy {
    /// The agent's state; serializable so the runtime can persist and reload it.
    type State: Clone + Serialize + DeserializeOwned;

    /// A fresh state.
    fn init(&self, env: &dyn Env) -> Self::State;

    /// A fresh state for the conversation thread `thread_id` (the runtime runs one state per
    /// thread, so requests on different threads never see each other's history). By default
    /// the same as [`Strategy::init`]; strategies that keep a Thread name it `thread_id`.
    fn init_for_thread(&self, env: &dyn Env, thread_id: &str) -> Self::State {
        let _ = thread_id;
        self.init(env)
    }

    /// A state around a thread loaded from storage (an agent thread coming back after it was
    /// stopped). By default a fresh state for that thread id, so strategies that keep no
    /// Thread ignore it; strategies that keep one resume from it.
    fn restore(&self, env: &dyn Env, thread: crate::Thread) -> Self::State {
        self.init_for_thread(env, thread.id())
    }

    /// A state around the stored thread after another writer moved it on while this agent
    /// held an older copy (two processes on one thread); the signal that met the conflict is
    /// then handled again on it. The other writer may be in the middle of a request: a
    /// strategy that runs one request at a time refuses the next one, as it would within one
    /// process. By default [`Strategy::restore`].
    fn reload(&self, env: &dyn Env, thread: crate::Thread) -> Self::State {
        self.restore(env, thread)
    }

    /// The conversation thread this state keeps, if any: the runtime reads it to answer a
    /// `Summarize` directive. By default none.
    fn thread<'a>(&self, state: &'a Self::State) -> Option<&'a crate::Thread> {
        let _ = state;
        None
    }

    /// Handles one signal.
    ///
    /// # Errors
    /// A [`StrategyError`] when the signal cannot be handled; `state` is then unchanged.
    fn handle(
        &self,
        state: &mut Self::State,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError>;
}
