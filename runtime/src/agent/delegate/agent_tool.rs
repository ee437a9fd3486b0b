//! [`AgentTool`]: an agent offered to another as a tool. A call is an ask of the callee, by
//! name, on a thread of its own that the caller chooses.

use async_trait::async_trait;
use motet_agents::delegate::CalleeThread;
use motet_directives::ToolArgs;

use super::callee::Callee;
use super::text_arg;
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
    callee: Callee,
    thread: CalleeThread,
    max_input: Option<usize>,
}

impl AgentTool {
    /// Agent `agent` as a tool named `ask_<agent>`.
    pub fn new(agent: impl Into<String>) -> Self {
        let agent = agent.into();
        Self {
            callee: Callee::new(
                "ask_",
                format!("Ask the agent `{agent}` and get its answer."),
                agent,
            ),
            thread: CalleeThread::default(),
            max_input: None,
        }
    }

    callee_settings!("a call");

    /// At most `chars` characters of input per call, said in the tool's schema (`maxLength`):
    /// a provider that constrains its output to the schema (llama.cpp's grammars) then cannot
    /// write an endless question. Default: no limit.
    pub fn max_input(mut self, chars: usize) -> Self {
        self.max_input = Some(chars);
        self
    }

    /// Which of the callee's threads a call is asked on (default [`CalleeThread::PerCall`]).
    pub fn thread(mut self, thread: CalleeThread) -> Self {
        self.thread = thread;
        self
    }

    /// The agent it asks.
    pub fn agent(&self) -> &str {
        &self.callee.agent
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &str {
        &self.callee.name
    }

    fn description(&self) -> &str {
        &self.callee.description
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
        let caller = ctx.agent_id().unwrap_or_default();
        let caller_thread = ctx.thread_id().unwrap_or_default();
        let request = ctx.request_id().unwrap_or(ctx.tool_call_id());
        let thread = self
            .thread
            .resolve(caller, caller_thread, request, ctx.tool_call_id());
        let (answer, _) = self
            .callee
            .ask(ctx, thread, input, "did not answer")
            .await?;
        Ok(answer.text)
    }
}
