//! A strategy around another: [`Wrapped`] forwards every hook of [`Strategy`] to the inner
//! strategy and lets a [`Wrap`] decide what happens around its `handle`.

use motet_directives::{Directive, LlmRequest, ModelRef};
use motet_signals::Signal;

use crate::env::Env;
use crate::error::StrategyError;
use crate::policy::ContextPolicy;
use crate::protocol::Waiting;
use crate::strategy::Strategy;
use crate::thread::Thread;

/// What a [`Wrapped`] strategy does around its inner strategy's `handle`: anything before it
/// (refuse a signal, change it, crash on purpose), anything after it (add directives, read what
/// the step committed), or both. The state is the inner strategy's.
pub trait Wrap<S: Strategy> {
    /// Handles one signal, calling `inner.handle(state, signal, env)` when it sees fit (once,
    /// as a rule).
    ///
    /// # Errors
    /// The inner strategy's errors, or the wrapper's own; `state` is then unchanged.
    fn handle(
        &self,
        inner: &S,
        state: &mut S::State,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError>;
}

/// The strategy `S` with a [`Wrap`] `W` around its `handle`. Every other method of
/// [`Strategy`] is `S`'s: its model and the checks at spawn, and each durability hook (`init`,
/// `init_for_thread`, `restore`, `restore_thread`, `reload`, `thread`, `thread_mut`,
/// `waiting`, `context_policy`), so a wrapper never loses one of them the way a hand-written
/// forwarder does (one that forgets `waiting` leaves the calls waiting for a person unlisted
/// after a restart).
///
/// # Example
/// ```
/// use motet_agents::{Env, FixedEnv, ReAct, ReActConfig, ReActState, Strategy, StrategyError, Wrap, Wrapped};
/// use motet_directives::Directive;
/// use motet_signals::Signal;
///
/// /// Counts nothing, says nothing: ReAct as it is, with room around its `handle`.
/// struct Quiet;
///
/// impl Wrap<ReAct> for Quiet {
///     fn handle(
///         &self,
///         inner: &ReAct,
///         state: &mut ReActState,
///         signal: &Signal,
///         env: &dyn Env,
///     ) -> Result<Vec<Directive>, StrategyError> {
///         inner.handle(state, signal, env)
///     }
/// }
///
/// let react = ReAct::new(ReActConfig::new("openai:gpt-5.2".parse()?));
/// let strategy = Wrapped::new(react, Quiet);
/// let state = strategy.init_for_thread(&FixedEnv::new(0), "t1");
/// assert_eq!(strategy.thread(&state).map(|t| t.id()), Some("t1"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Wrapped<S, W> {
    inner: S,
    wrap: W,
}

impl<S, W> Wrapped<S, W> {
    /// `inner` with `wrap` around its `handle`.
    pub fn new(inner: S, wrap: W) -> Self {
        Self { inner, wrap }
    }

    /// The inner strategy.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapper.
    pub fn wrap(&self) -> &W {
        &self.wrap
    }

    /// The inner strategy, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Strategy, W: Wrap<S>> Strategy for Wrapped<S, W> {
    type State = S::State;

    fn init(&self, env: &dyn Env) -> S::State {
        self.inner.init(env)
    }

    fn init_for_thread(&self, env: &dyn Env, thread_id: &str) -> S::State {
        self.inner.init_for_thread(env, thread_id)
    }

    fn restore(&self, env: &dyn Env, saved: S::State) -> S::State {
        self.inner.restore(env, saved)
    }

    fn restore_thread(&self, env: &dyn Env, thread: Thread) -> S::State {
        self.inner.restore_thread(env, thread)
    }

    fn reload(&self, env: &dyn Env, saved: S::State) -> S::State {
        self.inner.reload(env, saved)
    }

    fn thread<'a>(&self, state: &'a S::State) -> Option<&'a Thread> {
        self.inner.thread(state)
    }

    fn thread_mut<'a>(&self, state: &'a mut S::State) -> Option<&'a mut Thread> {
        self.inner.thread_mut(state)
    }

    fn waiting(&self, state: &S::State) -> Vec<Waiting> {
        self.inner.waiting(state)
    }

    fn model(&self) -> Option<&ModelRef> {
        self.inner.model()
    }

    fn context_policy(&self, state: &S::State) -> Option<ContextPolicy> {
        self.inner.context_policy(state)
    }

    fn request_shape(&self) -> Option<LlmRequest> {
        self.inner.request_shape()
    }

    fn fallback_models(&self) -> &[ModelRef] {
        self.inner.fallback_models()
    }

    fn handle(
        &self,
        state: &mut S::State,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        self.wrap.handle(&self.inner, state, signal, env)
    }
}
