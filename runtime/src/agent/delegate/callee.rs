//! The agent a delegating tool asks, and how: what [`AgentTool`](super::AgentTool) and
//! [`Handoff`](super::Handoff) share — the tool's name and description, the depth limit, the
//! time the callee is waited for, and the ask itself.

use std::time::Duration;

use motet_agents::delegate::callee_request;

use super::ask;
use super::{Delegation, tool_name};
use crate::agent::caller::ticket::Answer;
use crate::tool::{ToolContext, ToolError};

/// The agent a delegating tool asks, and how: what [`AgentTool`](super::AgentTool) and [`Handoff`](super::Handoff) share.
#[derive(Debug, Clone)]
pub(super) struct Callee {
    pub(super) agent: String,
    pub(super) name: String,
    pub(super) description: String,
    pub(super) max_depth: usize,
    pub(super) timeout: Duration,
}

impl Callee {
    /// Agent `agent`, as a tool named `<prefix><agent>`.
    pub(super) fn new(prefix: &str, description: String, agent: String) -> Self {
        Self {
            name: tool_name(prefix, &agent),
            description,
            agent,
            max_depth: motet_agents::delegate::DEFAULT_MAX_DEPTH,
            timeout: crate::tool::DEFAULT_TIMEOUT,
        }
    }

    /// Asks the callee `query` on its thread `thread` on behalf of the call `ctx` runs (the
    /// chain's limits checked first), its usage reported as spent by the call; with the call's
    /// delegation. A failure reads `agent `<callee>` <not_done>: <why>`.
    pub(super) async fn ask<'c>(
        &self,
        ctx: &'c ToolContext,
        thread: String,
        query: String,
        not_done: &str,
    ) -> Result<(Answer, &'c Delegation), ToolError> {
        let delegation = ctx.delegation().ok_or_else(|| {
            ToolError::failed(format!("`{}` runs only inside a motet runtime", self.name))
        })?;
        let chain = delegation
            .chain
            .enter(&self.agent, self.max_depth)
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let request = ctx.request_id().unwrap_or(ctx.tool_call_id());
        let call = ask::Call {
            core: &delegation.core,
            callee: &self.agent,
            thread,
            request: callee_request(request, ctx.tool_call_id()),
            query,
            chain: &chain,
            payers: &delegation.payers,
            caller_request: ctx.request_id(),
            timeout: self.timeout,
        };
        let answer = ask::ask(call)
            .await
            .map_err(|e| ToolError::failed(format!("agent `{}` {not_done}: {e}", self.agent)))?;
        delegation.spent.add(answer.usage);
        Ok((answer, delegation))
    }
}
