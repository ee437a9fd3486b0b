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
/// # Durability
/// The runtime stores the whole state at every commit point (with the thread's new entries, in
/// one write), so every strategy — with or without a [`Thread`] — comes back after a crash, a
/// restart or an idle stop as it committed: [`Strategy::restore`] gets that state. Nothing has
/// to be forwarded for this: a wrapper that implements only `init` and `handle` is durable too.
/// [`Strategy::thread`] and [`Strategy::thread_mut`] are an index and an optimisation: a
/// state's Thread is then stored as entries (listed, exported and summarized by the runtime)
/// instead of inside the snapshot, which stays small however long the conversation grows.
///
/// [`Thread`]: crate::Thread
pub trait Strategy {
    /// The agent's state; serializable so the runtime can store it and bring it back.
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

    /// The state a thread comes back with after a stop (idle, a crash, a restart): `saved` is
    /// the state of its last commit, its Thread in place. By default exactly that. Work in
    /// flight at the stop is gone (its results will never come); a request the state shows
    /// running is carried on when the runtime sends `agent.resume`
    /// ([`Runtime::recover`](https://docs.rs/motet-runtime)).
    fn restore(&self, env: &dyn Env, saved: Self::State) -> Self::State {
        let _ = env;
        saved
    }

    /// A state around a thread stored without a state (written by an older version, or
    /// imported): by default a fresh state for that thread id, so strategies that keep no
    /// Thread ignore it; strategies that keep one resume from it.
    fn restore_thread(&self, env: &dyn Env, thread: crate::Thread) -> Self::State {
        self.init_for_thread(env, thread.id())
    }

    /// The stored state after another writer moved the thread on while this agent held an
    /// older copy (two processes on one thread); the signal that met the conflict is then
    /// handled again on it. The other writer may be in the middle of a request: a strategy
    /// that runs one request at a time refuses the next one, as it would within one process.
    /// By default [`Strategy::restore`].
    fn reload(&self, env: &dyn Env, saved: Self::State) -> Self::State {
        self.restore(env, saved)
    }

    /// The conversation thread this state keeps, if any: the runtime stores its entries (and
    /// lists, exports and counts them). By default none.
    fn thread<'a>(&self, state: &'a Self::State) -> Option<&'a crate::Thread> {
        let _ = state;
        None
    }

    /// The same thread, to swap: the runtime takes it out while it snapshots the rest of the
    /// state and puts the stored one back when the thread comes back. By default none (the
    /// thread, if any, is then stored inside the snapshot as well).
    fn thread_mut<'a>(&self, state: &'a mut Self::State) -> Option<&'a mut crate::Thread> {
        let _ = state;
        None
    }

    /// The tool calls this state waits on a person for (approvals, questions), in order. The
    /// runtime stores them with every commit, so they are listed — and can be answered —
    /// after a crash or a restart, without the thread running. By default none.
    fn waiting(&self, state: &Self::State) -> Vec<crate::protocol::Waiting> {
        let _ = state;
        Vec::new()
    }

    /// The model this strategy calls, when it has one: the runtime checks it against its LLM
    /// client when the agent is spawned, so a missing key or base URL is said then, naming
    /// the variable to set, rather than at the first ask. By default none.
    fn model(&self) -> Option<&motet_directives::ModelRef> {
        None
    }

    /// The context policy in force on this state's thread for its next LLM call (the agent's
    /// layer over the strategy's configured one over the default; a request's override comes
    /// on top per request): the runtime records it in the thread's stored meta. By default
    /// none (a strategy that projects no context).
    fn context_policy(&self, state: &Self::State) -> Option<crate::ContextPolicy> {
        let _ = state;
        None
    }

    /// A request of the shape this strategy sends — its model, tools and options, no messages —
    /// which the runtime checks against the model's capabilities when the agent is spawned
    /// (seed 004 §1.3: an unsupported model is refused when the agent is built, with the
    /// reason). By default none: only [`Strategy::model`] is checked.
    fn request_shape(&self) -> Option<motet_directives::LlmRequest> {
        None
    }

    /// The models this strategy may fall back to besides [`Strategy::model`]; the runtime
    /// checks each as it checks that one (with [`Strategy::request_shape`]'s tools and
    /// options) when the agent is spawned. By default none.
    fn fallback_models(&self) -> &[motet_directives::ModelRef] {
        &[]
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
