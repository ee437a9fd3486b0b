//! [`Handoff`]: a conversation handed to another agent, and who holds a thread after one.
//!
//! Threads belong to agents (stored as `<agent>/<thread>`), so "the same thread" is the same
//! thread id: the receiving agent carries on in its thread of that id, briefed with the
//! history the [`HistoryFilter`] lets through, with its own instructions and tools. The
//! giver's thread records the handoff (the call, its result — the receiver's answer — and a
//! note naming the receiver, [`motet_agents::delegate::holder`]), its request ends with the
//! receiver's answer, and later asks of the giver on that thread go to the holder.

use std::time::Duration;

use async_trait::async_trait;
use motet_agents::delegate::{DEFAULT_MAX_DEPTH, HistoryFilter, briefing, callee_request};
use motet_directives::ToolArgs;

use super::ask::{Call, ask};
use super::{text_arg, tool_name};
use crate::agent::host::core::{RuntimeCore, ThreadKey};
use crate::tool::{Tool, ToolContext, ToolError};

/// A tool that hands the conversation to agent `agent` (the OpenAI Agents SDK's handoff),
/// named `transfer_to_<agent>`: the model calls it with an optional `reason`; the receiver
/// carries on in its own thread of the same id, briefed with the history [`history`](Self::history)
/// lets through, and its answer ends the caller's request. From then on, asks of the caller on
/// that thread are routed to the receiver (in this process; docs/patterns.md says what a
/// restart keeps). The chain limits of [`AgentTool`](super::AgentTool) hold: the receiver may
/// not hand back to an agent still waiting on it in the same request.
///
/// ```
/// use motet_runtime::agent::{Handoff, HistoryFilter};
/// use motet_runtime::tool::ToolSet;
///
/// let tools = ToolSet::builder()
///     .tool(Handoff::to("billing").describe("Invoices, refunds, payments.").history(HistoryFilter::Last(6)))
///     .build()?;
/// assert_eq!(tools.names(), ["transfer_to_billing"]);
/// # Ok::<(), motet_runtime::tool::ToolSetError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Handoff {
    agent: String,
    name: String,
    description: String,
    filter: HistoryFilter,
    max_depth: usize,
    timeout: Duration,
}

impl Handoff {
    /// A handoff to agent `agent`, named `transfer_to_<agent>`.
    pub fn to(agent: impl Into<String>) -> Self {
        let agent = agent.into();
        Self {
            name: tool_name("transfer_to_", &agent),
            description: format!(
                "Hand the conversation over to the agent `{agent}`; it answers the user from now on."
            ),
            agent,
            filter: HistoryFilter::default(),
            max_depth: DEFAULT_MAX_DEPTH,
            timeout: crate::tool::DEFAULT_TIMEOUT,
        }
    }

    /// Named `name` for the model.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// What the model reads about when to hand over.
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// What history the receiver is shown (default all of it).
    pub fn history(mut self, filter: HistoryFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Delegations a request may go through before a handoff is refused.
    pub fn max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// How long the handoff waits for the receiver's answer (default 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

#[async_trait]
impl Tool for Handoff {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "reason": {
                    "type": "string",
                    "description": "Why the conversation is handed over.",
                    // A line, not an essay: a grammar-constrained model stops there.
                    "maxLength": 200
                }
            }
        })
    }

    /// Run again after a crash, it carries the receiver's interrupted request on.
    fn idempotent(&self) -> bool {
        true
    }

    async fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        // The reason is for the receiver's briefing only: one a model garbled is left out.
        let reason = text_arg(args, "reason", false).unwrap_or_default();
        let delegation = ctx
            .delegation()
            .ok_or_else(|| ToolError::failed("a handoff runs only inside a motet runtime"))?;
        let chain = delegation
            .chain
            .enter(&self.agent, self.max_depth)
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let (giver, thread) = match (ctx.agent_id(), ctx.thread_id()) {
            (Some(agent), Some(thread)) => (agent, thread),
            _ => {
                return Err(ToolError::failed(
                    "a handoff needs the thread it hands over",
                ));
            }
        };
        let core = &delegation.core;
        let history = core
            .store
            .load(&ThreadKey::store_id_of(giver, thread))
            .await
            .map_err(|e| {
                ToolError::failed(format!("the thread to hand over could not be read: {e}"))
            })?
            .unwrap_or_else(|| motet_agents::Thread::create(&crate::agent::SystemEnv));
        let request = ctx.request_id().unwrap_or(ctx.tool_call_id());
        let call = Call {
            core,
            callee: &self.agent,
            thread: thread.to_owned(),
            request: callee_request(request, ctx.tool_call_id()),
            query: briefing(&history, &self.filter, giver, &reason),
            chain: &chain,
            caller_request: ctx.request_id(),
            timeout: self.timeout,
        };
        let answer = ask(call).await.map_err(|e| {
            ToolError::failed(format!("agent `{}` did not take over: {e}", self.agent))
        })?;
        delegation.spent.add(answer.usage);
        delegation.spent.handed_to(&self.agent);
        hand_over(core, giver, thread, &self.agent);
        Ok(answer.text)
    }
}

/// Records that `receiver` holds thread `thread` now, taken over from `giver`: asks of the
/// agent the thread was first asked of go to `receiver` (and to nobody else when it is that
/// agent again).
pub(crate) fn hand_over(core: &RuntimeCore, giver: &str, thread: &str, receiver: &str) {
    // The agent this thread is asked of: the one whose asks were routed to the giver, else the
    // giver itself.
    let asked = core
        .holders
        .iter()
        .find(|held| held.key().1 == thread && held.value() == giver)
        .map(|held| held.key().0.clone())
        .unwrap_or_else(|| giver.to_owned());
    if asked == receiver {
        core.holders.remove(&(asked, thread.to_owned()));
    } else {
        core.holders
            .insert((asked, thread.to_owned()), receiver.to_owned());
    }
}

/// The agent that holds thread `thread` of `agent` now, when a handoff moved it.
pub(crate) fn holder(core: &RuntimeCore, agent: &str, thread: &str) -> Option<String> {
    if core.holders.is_empty() {
        return None;
    }
    core.holders
        .get(&(agent.to_owned(), thread.to_owned()))
        .map(|held| held.value().clone())
}
