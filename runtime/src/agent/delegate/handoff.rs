//! [`Handoff`]: a conversation handed to another agent, and who holds a thread after one.
//!
//! Threads belong to agents (stored as `<agent>/<thread>`), so "the same thread" is the same
//! thread id: the receiving agent carries on in its thread of that id, briefed with the
//! history the [`HistoryFilter`] lets through, with its own instructions and tools. The
//! giver's thread records the handoff (the call, its result — the receiver's answer — and a
//! note naming the receiver, [`motet_agents::delegate::holder`]), its request ends with the
//! receiver's answer, and later asks of the giver on that thread go to the holder — after a
//! restart too: the table of holders is read back from each thread's committed entries as the
//! thread starts ([`route`] starts it before it looks).

use async_trait::async_trait;
use motet_agents::delegate::{HistoryFilter, briefing};
use motet_directives::ToolArgs;

use super::callee::Callee;
use super::text_arg;
use std::sync::Arc;

use crate::agent::host::core::{RuntimeCore, ThreadKey};
use crate::tool::{Tool, ToolContext, ToolError};

/// A tool that hands the conversation to agent `agent` (the OpenAI Agents SDK's handoff),
/// named `transfer_to_<agent>`: the model calls it with an optional `reason`; the receiver
/// carries on in its own thread of the same id, briefed with the history [`history`](Self::history)
/// lets through, and its answer ends the caller's request. From then on, asks of the caller on
/// that thread are routed to the receiver, after a restart too (the giver's thread records the
/// handoff, docs/patterns.md). The chain limits of [`AgentTool`](super::AgentTool) hold: the receiver may
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
    callee: Callee,
    filter: HistoryFilter,
}

impl Handoff {
    /// A handoff to agent `agent`, named `transfer_to_<agent>`.
    pub fn to(agent: impl Into<String>) -> Self {
        let agent = agent.into();
        let description = format!(
            "Hand the conversation over to the agent `{agent}`; it answers the user from now on."
        );
        Self {
            callee: Callee::new("transfer_to_", description, agent),
            filter: HistoryFilter::default(),
        }
    }

    callee_settings!("the handoff");

    /// What history the receiver is shown (default all of it).
    pub fn history(mut self, filter: HistoryFilter) -> Self {
        self.filter = filter;
        self
    }
}

#[async_trait]
impl Tool for Handoff {
    fn name(&self) -> &str {
        &self.callee.name
    }

    fn description(&self) -> &str {
        &self.callee.description
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
        let (giver, thread) = match (ctx.agent_id(), ctx.thread_id()) {
            (Some(agent), Some(thread)) => (agent, thread),
            _ => {
                return Err(ToolError::failed(
                    "a handoff needs the thread it hands over",
                ));
            }
        };
        let store = ctx
            .delegation()
            .map(|d| std::sync::Arc::clone(&d.core.store))
            .ok_or_else(|| ToolError::failed("a handoff runs only inside a motet runtime"))?;
        let history = store
            .load(&ThreadKey::store_id_of(giver, thread))
            .await
            .map_err(|e| {
                ToolError::failed(format!("the thread to hand over could not be read: {e}"))
            })?
            .unwrap_or_else(|| motet_agents::Thread::create(&crate::agent::SystemEnv));
        let query = briefing(&history, &self.filter, giver, &reason);
        let (answer, delegation) = self
            .callee
            .ask(ctx, thread.to_owned(), query, "did not take over")
            .await?;
        let receiver = &self.callee.agent;
        delegation.spent.handed_to(receiver);
        hand_over(&delegation.core, giver, thread, receiver);
        Ok(answer.text)
    }
}

/// Records that `receiver` holds thread `thread` of `giver` now: what the giver's next commit
/// (its note of the handoff) says too, known a little sooner.
fn hand_over(core: &RuntimeCore, giver: &str, thread: &str, receiver: &str) {
    core.held_by(giver, thread, Some(receiver));
}

/// The agent that answers asks of `agent` on `thread`: the agent itself, or where its handoffs
/// lead, followed hop by hop. Each hop's thread is started first, which reads who holds it
/// from the store (so the answer holds after a restart); a hop to an agent not running, or back
/// to one already passed, stops there.
pub(crate) async fn route(core: &Arc<RuntimeCore>, agent: &str, thread: &str) -> String {
    let mut at = agent.to_owned();
    let mut passed: Vec<String> = Vec::new();
    loop {
        // In a cluster, an agent another node is the place of is that node's to route.
        if core.placed_elsewhere(&at).is_some() {
            return at;
        }
        if let Ok(entry) = core.activate(&at).await
            && entry.thread(thread).is_none()
            && let Err(error) = core.ensure_thread(&entry, thread, None).await
        {
            tracing::debug!(agent = %at, %thread, %error, "a thread to route through did not start");
        }
        match core.holder(&at, thread) {
            Some(next)
                if !passed.contains(&next)
                    && (core.agent(&next).is_some() || core.is_virtual(&next)) =>
            {
                passed.push(std::mem::replace(&mut at, next));
            }
            _ => return at,
        }
    }
}
