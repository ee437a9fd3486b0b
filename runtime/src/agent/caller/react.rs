//! [`ReActAgent`]: a ReAct agent in one chain — model, system prompt, tools given once,
//! options — ready for [`Runtime::spawn`](crate::agent::Runtime::spawn).

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{ReAct, ReActConfig};
use motet_directives::{ModelRef, ToolChoice};

use super::spec::{AgentSpec, IntoSpec};
use crate::agent::errors::RuntimeError;
use crate::tool::{Tool, ToolSet};

/// A ReAct agent being described: `ReActAgent::new("calc", "openai:gpt-5.2")
/// .system("Be brief.").tool(multiply)`, then `runtime.spawn(agent)`. The tools are given
/// once: the model is offered their definitions and the agent runs them.
#[derive(Debug)]
pub struct ReActAgent {
    name: String,
    model: String,
    fallbacks: Vec<String>,
    system: Option<String>,
    tools: crate::tool::ToolSetBuilder,
    configure: Vec<ConfigStep>,
    spec: Vec<SpecStep>,
}

type ConfigStep = DebugFn<dyn FnOnce(ReActConfig) -> ReActConfig + Send>;
type SpecStep = DebugFn<dyn FnOnce(AgentSpec<ReAct>) -> AgentSpec<ReAct> + Send>;

/// A closure that prints as `<fn>`.
struct DebugFn<F: ?Sized>(Box<F>);

impl<F: ?Sized> std::fmt::Debug for DebugFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<fn>")
    }
}

impl ReActAgent {
    /// An agent named `name` answering with `model` (`provider:model`, e.g.
    /// `anthropic:claude-sonnet-4-5` or `openai-compat:local`).
    pub fn new(name: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            model: model.into(),
            fallbacks: Vec::new(),
            system: None,
            tools: ToolSet::builder(),
            configure: Vec::new(),
            spec: Vec::new(),
        }
    }

    /// A model to fall back to when the one before it in the chain fails from overload, an
    /// outage, the account's limits or a context too long: `.fallback("anthropic:claude-sonnet-4-5")`.
    /// Called again, the next one after it. A request moves down the chain only between
    /// calls and stays on the model it moved to; the thread records which model answered.
    pub fn fallback(mut self, model: impl Into<String>) -> Self {
        self.fallbacks.push(model.into());
        self
    }

    /// The system prompt.
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// A tool the model may call (`tool_fn(...)` or any [`Tool`]).
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools = self.tools.tool(tool);
        self
    }

    /// A tool shared with other agents.
    pub fn shared_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools = self.tools.shared_tool(tool);
        self
    }

    /// Whether the model must call a tool before it answers: [`ToolChoice::Required`] (any
    /// tool) or `ToolChoice::Tool { name }` (that one) forces the request's first LLM call to
    /// call one, and the calls after it are free again, so the model can answer from the
    /// result. Default [`ToolChoice::Auto`]: the model decides — and a small local model
    /// often answers arithmetic from memory, wrongly, rather than call the tool it was given.
    pub fn tool_choice(self, choice: ToolChoice) -> Self {
        self.configure(move |c| c.with_tool_choice(choice))
    }

    /// How long one tool run may take (default 60 s, [`crate::tool::DEFAULT_TIMEOUT`]).
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tools = self.tools.with_timeout(timeout);
        self
    }

    /// Any other ReAct setting: `.configure(|c| c.with_max_iterations(4))`.
    pub fn configure(
        mut self,
        step: impl FnOnce(ReActConfig) -> ReActConfig + Send + 'static,
    ) -> Self {
        self.configure.push(DebugFn(Box::new(step)));
        self
    }

    /// Any setting of the agent itself: `.agent(|s| s.join_group("workers"))`.
    pub fn agent(
        mut self,
        step: impl FnOnce(AgentSpec<ReAct>) -> AgentSpec<ReAct> + Send + 'static,
    ) -> Self {
        self.spec.push(DebugFn(Box::new(step)));
        self
    }
}

impl IntoSpec<ReAct> for ReActAgent {
    fn into_spec(self) -> Result<AgentSpec<ReAct>, RuntimeError> {
        let invalid = |message: String| RuntimeError::InvalidSpec {
            name: self.name.clone(),
            message,
        };
        let model: ModelRef = self
            .model
            .parse()
            .map_err(|e| invalid(format!("model `{}`: {e}", self.model)))?;
        let fallbacks = self
            .fallbacks
            .iter()
            .map(|text| {
                text.parse::<ModelRef>()
                    .map_err(|e| invalid(format!("fallback model `{text}`: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tools = self.tools.build().map_err(|e| invalid(e.to_string()))?;
        let mut config = ReActConfig::new(model)
            .with_fallbacks(fallbacks)
            .with_tools(tools.definitions());
        if let Some(system) = self.system {
            config = config.with_system_prompt(system);
        }
        for step in self.configure {
            config = (step.0)(config);
        }
        let mut spec = AgentSpec::new(self.name.clone(), ReAct::new(config));
        if !tools.names().is_empty() {
            spec = spec.with_tools(tools);
        }
        for step in self.spec {
            spec = (step.0)(spec);
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolError, tool_fn};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Word {
        word: String,
    }

    fn shout() -> impl Tool {
        tool_fn("shout", "Shouts a word.", |w: Word| async move {
            Ok::<_, ToolError>(w.word.to_uppercase())
        })
    }

    #[test]
    fn the_tools_given_once_are_offered_and_run() {
        let spec = ReActAgent::new("a", "openai:gpt-5.2")
            .system("Be brief.")
            .tool(shout())
            .configure(|c| c.with_max_iterations(4))
            .agent(|s| s.join_group("g"))
            .into_spec()
            .expect("a valid agent");
        let config = spec.strategy.config();
        assert_eq!(config.system_prompt.as_deref(), Some("Be brief."));
        assert_eq!(config.max_iterations, 4);
        assert!(config.fallbacks.is_empty());
        let offered: Vec<&str> = config.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(offered, ["shout"]);
        let run = spec.tools.as_ref().expect("the agent runs its tools");
        assert_eq!(run.names(), ["shout"]);
        assert_eq!(spec.groups, ["g"]);
    }

    #[test]
    fn a_bad_model_or_two_tools_of_one_name_fail_the_spec() {
        let bad_model = ReActAgent::new("a", "no-provider").into_spec();
        assert!(matches!(bad_model, Err(RuntimeError::InvalidSpec { .. })));
        let bad_fallback = ReActAgent::new("a", "openai:gpt-5.2")
            .fallback("no-provider")
            .into_spec();
        assert!(
            matches!(&bad_fallback, Err(RuntimeError::InvalidSpec { message, .. }) if message.starts_with("fallback model `no-provider`")),
            "{:?}",
            bad_fallback.err()
        );
        let twice = ReActAgent::new("a", "openai:gpt-5.2")
            .tool(shout())
            .tool(shout())
            .into_spec();
        assert!(matches!(twice, Err(RuntimeError::InvalidSpec { .. })));
    }
}
