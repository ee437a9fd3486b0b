//! A wrapped strategy is its inner strategy in every hook but `handle`, which the wrapper
//! wraps: the swarm's hand-written `Worker` forwarded seven hooks and forgot `waiting`, so its
//! calls waiting for a person went unlisted after a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet_agents::{
    ContextPolicy, Env, FixedEnv, Strategy, StrategyError, Thread, Waiting, Wrap, Wrapped,
};
use motet_directives::{Approval, Directive, LlmRequest, ModelRef, Pause, ToolArgs};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

/// A strategy whose every hook leaves a mark of its own.
struct Marked {
    model: ModelRef,
    fallbacks: Vec<ModelRef>,
}

#[derive(Clone, Serialize, Deserialize)]
struct MarkedState {
    thread: Thread,
    marks: Vec<String>,
}

impl MarkedState {
    fn marked(thread: Thread, mark: &str) -> Self {
        Self {
            thread,
            marks: vec![mark.to_owned()],
        }
    }
}

impl Strategy for Marked {
    type State = MarkedState;

    fn init(&self, env: &dyn Env) -> MarkedState {
        MarkedState::marked(Thread::create(env), "init")
    }

    fn init_for_thread(&self, env: &dyn Env, thread_id: &str) -> MarkedState {
        MarkedState::marked(Thread::new(thread_id, env.now_ms()), "init_for_thread")
    }

    fn restore(&self, _env: &dyn Env, mut saved: MarkedState) -> MarkedState {
        saved.marks.push("restore".into());
        saved
    }

    fn restore_thread(&self, _env: &dyn Env, thread: Thread) -> MarkedState {
        MarkedState::marked(thread, "restore_thread")
    }

    fn reload(&self, _env: &dyn Env, mut saved: MarkedState) -> MarkedState {
        saved.marks.push("reload".into());
        saved
    }

    fn thread<'a>(&self, state: &'a MarkedState) -> Option<&'a Thread> {
        Some(&state.thread)
    }

    fn thread_mut<'a>(&self, state: &'a mut MarkedState) -> Option<&'a mut Thread> {
        Some(&mut state.thread)
    }

    fn waiting(&self, state: &MarkedState) -> Vec<Waiting> {
        vec![Waiting {
            agent: String::new(),
            thread: String::new(),
            request_id: state.marks.join(","),
            tool_call_id: "toolu_1".into(),
            tool: "rm".into(),
            args: ToolArgs::empty_object(),
            pause: Pause::Approval(Approval::required()),
            since_ms: 7,
            deadline_ms: None,
        }]
    }

    fn model(&self) -> Option<&ModelRef> {
        Some(&self.model)
    }

    fn context_policy(&self, _state: &MarkedState) -> Option<ContextPolicy> {
        Some(ContextPolicy::new().with_max_input_tokens(1_234))
    }

    fn request_shape(&self) -> Option<LlmRequest> {
        Some(LlmRequest::new(self.model.clone(), Vec::new()))
    }

    fn fallback_models(&self) -> &[ModelRef] {
        &self.fallbacks
    }

    fn handle(
        &self,
        state: &mut MarkedState,
        _signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        state.marks.push("handle".into());
        Ok(Vec::new())
    }
}

/// Marks the state before and after the inner `handle`.
struct Around;

impl Wrap<Marked> for Around {
    fn handle(
        &self,
        inner: &Marked,
        state: &mut MarkedState,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        state.marks.push("before".into());
        let directives = inner.handle(state, signal, env)?;
        state.marks.push("after".into());
        Ok(directives)
    }
}

fn wrapped() -> Wrapped<Marked, Around> {
    let inner = Marked {
        model: "openai:gpt-5.2".parse().unwrap(),
        fallbacks: vec!["anthropic:claude-haiku-4-5".parse().unwrap()],
    };
    Wrapped::new(inner, Around)
}

#[test]
fn every_hook_but_handle_is_the_inner_strategys() {
    let strategy = wrapped();
    let inner = strategy.get_ref();
    let env = FixedEnv::new(5);
    let marks = |state: &MarkedState| state.marks.join(",");

    assert_eq!(marks(&strategy.init(&env)), "init");
    let state = strategy.init_for_thread(&env, "t1");
    assert_eq!(marks(&state), "init_for_thread");
    assert_eq!(
        marks(&strategy.restore(&env, state.clone())),
        "init_for_thread,restore"
    );
    assert_eq!(
        marks(&strategy.reload(&env, state.clone())),
        "init_for_thread,reload"
    );
    let thread = Thread::new("t2", 5);
    assert_eq!(
        marks(&strategy.restore_thread(&env, thread)),
        "restore_thread"
    );

    let mut state = state;
    assert_eq!(strategy.thread(&state).map(Thread::id), Some("t1"));
    assert_eq!(strategy.thread_mut(&mut state).map(|t| t.id()), Some("t1"));
    assert_eq!(strategy.waiting(&state), inner.waiting(&state));
    assert_eq!(strategy.waiting(&state).len(), 1);
    assert_eq!(strategy.model(), inner.model());
    assert_eq!(
        strategy.context_policy(&state),
        inner.context_policy(&state)
    );
    assert_eq!(strategy.request_shape(), inner.request_shape());
    assert_eq!(strategy.fallback_models(), inner.fallback_models());
    assert_eq!(strategy.fallback_models().len(), 1);
}

#[test]
fn the_wrapper_runs_around_the_inner_handle() {
    let strategy = wrapped();
    let env = FixedEnv::new(5);
    let mut state = strategy.init_for_thread(&env, "t1");
    let signal = Signal::builder("agent.request", "test").build().unwrap();
    let directives = strategy.handle(&mut state, &signal, &env).unwrap();
    assert!(directives.is_empty());
    assert_eq!(
        state.marks,
        ["init_for_thread", "before", "handle", "after"]
    );
    assert_eq!(strategy.into_inner().fallbacks.len(), 1);
}
