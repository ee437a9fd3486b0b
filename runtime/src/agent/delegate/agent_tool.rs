//! [`AgentTool`]: an agent offered to another as a tool. A call is an ask of the callee, by
//! name, on a thread of its own that the caller chooses.

use std::time::Duration;

use async_trait::async_trait;
use motet_agents::delegate::{CalleeThread, DEFAULT_MAX_DEPTH, callee_request};
use motet_directives::ToolArgs;

use super::ask::{Call, ask};
use super::{text_arg, tool_name};
use crate::tool::{Tool, ToolContext, ToolError};

/// An agent offered to other agents as a tool: the model calls it with `{"input": "..."}` (any
/// other arguments are passed on as their JSON text), and the runtime asks the agent named — by name, so it reaches the agent wherever it runs —
/// and returns its answer as the call's result.
///
/// - **Its thread** is the caller's choice ([`thread`](Self::thread)): a fresh one per call
///   (the default), one per caller thread (it remembers this conversation), or a named one.
/// - **What it does shows** on the caller's ticket: its streamed text (deltas tagged with its
///   name) and the calls it waits on a person for, which the caller's ticket can answer.
/// - **Cancelling** the caller's request cancels the callee's; the callee's **usage** counts
///   in the caller's answer; its request's span is a **child** of the caller's tool span.
/// - **Limits**: an agent already on the chain of delegations is refused (`a → b → a`), and
///   so is a call past [`max_depth`](Self::max_depth) delegations; the model reads the
///   [`DelegateError`](super::DelegateError) as the call's error result.
///
/// ```
/// use motet_runtime::agent::{AgentTool, CalleeThread};
/// use motet_runtime::tool::ToolSet;
///
/// let tools = ToolSet::builder()
///     .tool(
///         AgentTool::new("researcher")
///             .describe("Finds facts. Give it one precise question.")
///             .thread(CalleeThread::PerCallerThread),
///     )
///     .build()?;
/// assert_eq!(tools.names(), ["ask_researcher"]);
/// # Ok::<(), motet_runtime::tool::ToolSetError>(())
/// ```
#[derive(Debug, Clone)]
pub struct AgentTool {
    agent: String,
    name: String,
    description: String,
    thread: CalleeThread,
    max_depth: usize,
    timeout: Duration,
    max_input: Option<usize>,
}

impl AgentTool {
    /// Agent `agent` as a tool named `ask_<agent>`.
    pub fn new(agent: impl Into<String>) -> Self {
        let agent = agent.into();
        Self {
            name: tool_name("ask_", &agent),
            description: format!("Ask the agent `{agent}` and get its answer."),
            agent,
            thread: CalleeThread::default(),
            max_depth: DEFAULT_MAX_DEPTH,
            timeout: crate::tool::DEFAULT_TIMEOUT,
            max_input: None,
        }
    }

    /// At most `chars` characters of input per call, said in the tool's schema (`maxLength`):
    /// a provider that constrains its output to the schema (llama.cpp's grammars) then cannot
    /// write an endless question. Default: no limit.
    pub fn max_input(mut self, chars: usize) -> Self {
        self.max_input = Some(chars);
        self
    }

    /// Named `name` for the model instead of `ask_<agent>`.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// What the model reads about when to call it.
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Which of the callee's threads a call is asked on (default [`CalleeThread::PerCall`]).
    pub fn thread(mut self, thread: CalleeThread) -> Self {
        self.thread = thread;
        self
    }

    /// Delegations a request may go through before a call is refused (default
    /// [`DEFAULT_MAX_DEPTH`]).
    pub fn max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// How long a call waits for the callee's answer (default 60 s, the tool set's default
    /// time limit; a set with a shorter limit cuts it first, and cancels the callee).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The agent it asks.
    pub fn agent(&self) -> &str {
        &self.agent
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> serde_json::Value {
        let mut input =
            serde_json::json!({"type": "string", "description": "What to ask the agent."});
        if let (Some(max), Some(object)) = (self.max_input, input.as_object_mut()) {
            object.insert("maxLength".into(), max.into());
        }
        serde_json::json!({
            "type": "object",
            "properties": {"input": input},
            "required": ["input"]
        })
    }

    /// A call run again after a crash carries the callee's interrupted request on (same
    /// request id), so running it twice asks once.
    fn idempotent(&self) -> bool {
        true
    }

    async fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        // A small model may name the field otherwise: the callee then reads the arguments.
        let input = text_arg(args, "input", true).unwrap_or_else(|_| args.get().to_owned());
        let delegation = ctx
            .delegation()
            .ok_or_else(|| ToolError::failed("an agent tool runs only inside a motet runtime"))?;
        let chain = delegation
            .chain
            .enter(&self.agent, self.max_depth)
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let caller = ctx.agent_id().unwrap_or_default();
        let caller_thread = ctx.thread_id().unwrap_or_default();
        let request = ctx.request_id().unwrap_or(ctx.tool_call_id());
        let call = Call {
            core: &delegation.core,
            callee: &self.agent,
            thread: self
                .thread
                .resolve(caller, caller_thread, request, ctx.tool_call_id()),
            request: callee_request(request, ctx.tool_call_id()),
            query: input,
            chain: &chain,
            caller_request: ctx.request_id(),
            timeout: self.timeout,
        };
        let answer = ask(call).await.map_err(|e| {
            ToolError::failed(format!("agent `{}` did not answer: {e}", self.agent))
        })?;
        delegation.spent.add(answer.usage);
        Ok(answer.text)
    }
}
