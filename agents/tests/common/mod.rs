//! What the agents' tests share: [`Harness`] (a ReAct strategy, its state and a fixed
//! environment, fed one signal at a time), the builders of what comes in (the model's results,
//! tools' results, requests, steers, resumes: `build.rs`) and the compact descriptions of what
//! goes out, for transcript tables (`describe.rs`).

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "a failed unwrap is a failed test"
)]

pub(crate) mod build;
pub(crate) mod describe;

pub(crate) use build::*;
pub(crate) use describe::*;

use motet_agents::{
    AgentRequest, Env, FixedEnv, ReAct, ReActConfig, ReActState, Strategy, StrategyError,
};
use motet_directives::Directive;
use motet_signals::Signal;
use serde_json::Value;

/// When every harness's clock starts.
pub(crate) const START_MS: u64 = 1_700_000_000_000;

/// A ReAct strategy and its state: signals in (on thread `th`, under the current request, each
/// a millisecond after the last), directives out.
pub(crate) struct Harness {
    pub(crate) react: ReAct,
    pub(crate) state: ReActState,
    pub(crate) env: FixedEnv,
    /// The request the next signal belongs to.
    pub(crate) request: String,
}

impl Harness {
    /// A fresh state (`Strategy::init`).
    pub(crate) fn new(config: ReActConfig) -> Self {
        let env = FixedEnv::new(START_MS);
        let react = ReAct::new(config);
        let state = react.init(&env);
        Self::of(react, state, env)
    }

    /// A fresh state for thread `th` (`Strategy::init_for_thread`).
    pub(crate) fn on_thread(config: ReActConfig) -> Self {
        let env = FixedEnv::new(START_MS);
        let react = ReAct::new(config);
        let state = react.init_for_thread(&env, "th");
        Self::of(react, state, env)
    }

    /// `state` of `react`, under `env`.
    pub(crate) fn of(react: ReAct, state: ReActState, env: FixedEnv) -> Self {
        Self {
            react,
            state,
            env,
            request: "r0".into(),
        }
    }

    /// A signal of type `ty` with `data`, for the current request.
    pub(crate) fn signal(&self, ty: &str, data: Value) -> Signal {
        Signal::builder(ty, "test")
            .with_id(self.env.fresh_id("in"))
            .with_time(None)
            .with_thread_id("th")
            .with_request_id(self.request.as_str())
            .with_json_data(data)
            .build()
            .unwrap()
    }

    /// Handles a signal of type `ty` with `data`.
    pub(crate) fn try_send(
        &mut self,
        ty: &str,
        data: Value,
    ) -> Result<Vec<Directive>, StrategyError> {
        let signal = self.signal(ty, data);
        self.env.advance_ms(1);
        self.react.handle(&mut self.state, &signal, &self.env)
    }

    /// Handles a signal of type `ty` with `data`, which must succeed.
    pub(crate) fn send(&mut self, ty: &str, data: Value) -> Vec<Directive> {
        self.try_send(ty, data).unwrap()
    }

    /// Asks `input` as request `request`.
    pub(crate) fn ask_with(&mut self, request: &str, input: AgentRequest) -> Vec<Directive> {
        self.request = request.into();
        self.send("agent.request", to_value(&input))
    }

    /// Asks `query` as request `request`; the directives, described.
    pub(crate) fn ask(&mut self, request: &str, query: &str) -> Vec<String> {
        describe_all(&self.ask_with(request, question(query)))
    }

    /// Runs a table of (signal type, data, expected directives as [`describe`] writes them).
    pub(crate) fn script(&mut self, steps: &[(&str, Value, &[&str])]) {
        self.script_with(steps, describe);
    }

    /// Runs a table of (signal type, data, expected directives as `describe` writes them).
    pub(crate) fn script_with(
        &mut self,
        steps: &[(&str, Value, &[&str])],
        mut describe: impl FnMut(&Directive) -> String,
    ) {
        for (i, (ty, data, expected)) in steps.iter().enumerate() {
            let got: Vec<String> = self
                .send(ty, data.clone())
                .iter()
                .map(&mut describe)
                .collect();
            assert_eq!(got, *expected, "step {i}: {ty}");
        }
    }

    /// The thread's entries, described: `seq body`.
    pub(crate) fn thread(&self) -> Vec<String> {
        self.state
            .thread
            .to_list()
            .iter()
            .map(|e| format!("{} {}", e.seq, describe_body(&e.body)))
            .collect()
    }
}

/// The calculator agent asked `q` as request `r1`, its model calling the calculator twice at
/// once (`a` as `tool_1`, `b` as `tool_2`): both tools are running.
pub(crate) fn two_calculations() -> Harness {
    let mut h = Harness::new(calculator());
    h.ask("r1", "q");
    h.script(&[(
        "llm.result",
        llm_calls(
            "call_1",
            &[("a", "calculator", "{}"), ("b", "calculator", "{}")],
        ),
        &["tool tool_1 a calculator {}", "tool tool_2 b calculator {}"],
    )]);
    h
}
