//! Tools the model can call: the [`Tool`] trait, typed tools in a few lines ([`tool_fn`]), and
//! the [`ToolSet`] that dispatches a model's tool call to one of them.
//!
//! A tool call never crashes its agent. Whatever happens — an unknown tool, a tool outside the
//! agent's allowlist, arguments that are not JSON or have the wrong shape, a tool that fails,
//! panics or runs past its time limit — the dispatcher answers with an error
//! [`ToolResult`] the model can read and react to (seed 004: a parse failure is a tool error,
//! not a protocol error). Output longer than the set's limit is cut at a character boundary and
//! ends with a marker saying how much is shown.
//!
//! ```
//! use motet_directives::{ToolArgs, ToolCallView};
//! use motet_runtime::tool::{ToolError, ToolSet, tool_fn};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     a: i64,
//!     b: i64,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tools = ToolSet::builder()
//!     .tool(tool_fn("add", "Adds two integers.", |args: AddArgs| async move {
//!         Ok::<_, ToolError>((args.a + args.b).to_string())
//!     }))
//!     .build()?;
//!
//! let args = ToolArgs::from_text(r#"{"a": 2, "b": 3}"#);
//! let call = ToolCallView { id: "call_1", name: "add", args: &args };
//! let result = tools.dispatch(call).await;
//! assert_eq!(result.content, "5");
//! assert!(!result.is_error);
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - `error` — [`ToolError`] (a call's failure), [`ToolSetError`] (building a set).
//! - `typed` — [`TypedTool`], [`tool_fn`], [`schema_for`].
//! - `set` — [`ToolSet`], [`ToolSetBuilder`]: lookup, allowlist, timeout, panics, truncation.
//! - `output` — truncation and panic messages.

mod error;
pub(crate) mod output;
mod set;
mod typed;

use async_trait::async_trait;
use motet_directives::{Approval, ToolArgs, ToolCallView, ToolDefs, ToolResult};

pub use error::{ToolError, ToolSetError};
pub use set::{DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, Ran, ToolSet, ToolSetBuilder};
pub use typed::{TypedTool, schema_for, tool_fn};

/// Something the model can call.
///
/// Object safe: a [`ToolSet`] holds `Arc<dyn Tool>`. Most tools are written with [`tool_fn`];
/// implement the trait directly when the tool needs the [`ToolContext`] or parses its own
/// arguments.
///
/// `call` runs on the agent's async runtime: work that blocks a thread belongs in
/// `tokio::task::spawn_blocking`. Dropping the returned future cancels the call (that is how a
/// time limit is enforced).
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls the tool by (1 to 64 of `a-z A-Z 0-9 _ -`).
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments object.
    fn parameters(&self) -> serde_json::Value;

    /// True when running the call twice with the same arguments is harmless; after a crash only
    /// idempotent calls are re-run. Default: false.
    fn idempotent(&self) -> bool {
        false
    }

    /// Whether a call with these arguments needs a person's approval before it runs, and
    /// how it is gated (reason, deadline). Default: never. A [`ToolSetBuilder`] can require
    /// approval for any tool without it implementing this.
    fn approval(&self, args: &ToolArgs) -> Option<Approval> {
        let _ = args;
        None
    }

    /// Runs the call on the model's raw arguments.
    ///
    /// # Errors
    /// [`ToolError::InvalidArgs`] when the arguments do not fit; [`ToolError::Failed`] for the
    /// tool's own failures. Both reach the model as an error result. [`ToolError::Question`]
    /// to ask a person instead of answering.
    async fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<String, ToolError>;

    /// Runs the call and answers with text and what it returned besides text (images,
    /// documents, audio: an MCP tool's image content), which reach the model as the result's
    /// [`attachments`](motet_directives::ToolResult::attachments). Default: [`call`](Self::call)'s
    /// text, nothing attached; a tool that returns media implements this and `call` both.
    ///
    /// # Errors
    /// As for [`call`](Self::call).
    async fn call_with_attachments(
        &self,
        args: &ToolArgs,
        ctx: &ToolContext,
    ) -> Result<(String, motet_directives::Attachments), ToolError> {
        self.call(args, ctx)
            .await
            .map(|text| (text, motet_directives::Attachments::default()))
    }
}

/// Who is calling: handed to every [`Tool::call`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolContext {
    tool_call_id: String,
    agent_id: Option<String>,
    thread_id: Option<String>,
    request_id: Option<String>,
    /// The runtime and the delegation chain, for a tool that asks another agent (set by the
    /// runtime when it runs the call; `None` for a call run outside one).
    delegation: Option<crate::agent::delegate::Delegation>,
}

impl ToolContext {
    /// The context of one call, identified by the model's tool-call id.
    pub fn new(tool_call_id: impl Into<String>) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            agent_id: None,
            thread_id: None,
            request_id: None,
            delegation: None,
        }
    }

    /// With the runtime and the delegation chain an agent tool needs.
    pub(crate) fn with_delegation(
        mut self,
        delegation: crate::agent::delegate::Delegation,
    ) -> Self {
        self.delegation = Some(delegation);
        self
    }

    /// The runtime and the delegation chain, when the runtime runs the call.
    pub(crate) fn delegation(&self) -> Option<&crate::agent::delegate::Delegation> {
        self.delegation.as_ref()
    }

    /// With the calling agent's id.
    pub fn with_agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.agent_id = Some(agent_id.into());
        self
    }

    /// With the id of the thread the call belongs to.
    pub fn with_thread_id(mut self, thread_id: impl Into<String>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// With the id of the request the call serves.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// The model's id for this call.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The calling agent, when known.
    pub fn agent_id(&self) -> Option<&str> {
        self.agent_id.as_deref()
    }

    /// The thread the call belongs to, when known.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The request the call serves, when known.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }
}

/// Turns a model's tool call into its result (seed 004's `AgentToolDispatcher`).
///
/// Never fails: every failure is an error [`ToolResult`] the model reads.
#[async_trait]
pub trait ToolDispatcher: Send + Sync {
    /// Runs the call for the caller `ctx` names and answers it.
    async fn dispatch(&self, call: ToolCallView<'_>, ctx: &ToolContext) -> ToolResult;

    /// The tools to offer the model, in a stable order.
    fn definitions(&self) -> ToolDefs;
}
