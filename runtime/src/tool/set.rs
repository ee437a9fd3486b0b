//! The tool set: registration, the per-agent allowlist, and dispatch with a time limit, panic
//! containment and an output size limit.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use indexmap::IndexMap;
use motet_directives::{Approval, ToolArgs, ToolCallView, ToolDef, ToolDefs, ToolResult};

use super::output::{panic_message, truncate};
use super::{Tool, ToolContext, ToolDispatcher, ToolError, ToolSetError};

/// How long a call may run unless the set says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How many bytes of output the model sees unless the set says otherwise (32 KiB, roughly 8,000
/// tokens of English).
pub const DEFAULT_MAX_OUTPUT: usize = 32 * 1024;

/// The tools an agent may call, and the dispatcher that runs them.
///
/// Cheap to clone (one `Arc`): many agents share one set, each through its own
/// [`restrict`](Self::restrict)ed view. Tools are offered in registration order, and
/// [`definitions`](Self::definitions) returns the same cached list every time, so a request's tool
/// definitions (and the provider's prompt cache) stay stable.
#[derive(Clone)]
pub struct ToolSet {
    view: Arc<View>,
}

/// Every registered tool and the limits, shared by all views.
struct Registry {
    tools: IndexMap<String, Arc<dyn Tool>>,
    /// The approval rules the set adds, by tool name (over the tools' own).
    gates: IndexMap<String, Gate>,
    timeout: Duration,
    max_output: usize,
}

/// A predicate over a call's arguments: the approval the call needs, if any.
type Rule = Arc<dyn Fn(&ToolArgs) -> Option<Approval> + Send + Sync>;

/// Which calls of a tool need a person's approval.
#[derive(Clone)]
enum Gate {
    /// Every call.
    Always(Approval),
    /// The calls the rule picks.
    When(Rule),
}

/// How a call ended: a result, or a question for a person.
#[derive(Debug, Clone, PartialEq)]
pub enum Ran {
    /// The result the model reads (an error result for any failure).
    Result(ToolResult),
    /// The tool asked a person instead of answering ([`ToolError::Question`]).
    Question(String),
}

/// What one view offers: a subset of the registry (all of it for the unrestricted set).
struct View {
    registry: Arc<Registry>,
    /// Per registry index: offered by this view.
    offered: Box<[bool]>,
    /// The offered tools' names, in order, for error messages.
    names: Vec<String>,
    defs: ToolDefs,
}

impl View {
    fn new(registry: Arc<Registry>, offered: Box<[bool]>) -> Self {
        let mut names = Vec::new();
        let mut defs = Vec::new();
        for ((name, tool), _) in registry
            .tools
            .iter()
            .zip(offered.iter())
            .filter(|(_, on)| **on)
        {
            names.push(name.clone());
            defs.push(ToolDef::new(
                name.clone(),
                tool.description(),
                tool.parameters(),
            ));
        }
        Self {
            registry,
            offered,
            names,
            defs: defs.into(),
        }
    }
}

impl ToolSet {
    /// A builder for a set of tools.
    pub fn builder() -> ToolSetBuilder {
        ToolSetBuilder::default()
    }

    /// The tool definitions to offer the model: cached, in registration order.
    pub fn definitions(&self) -> ToolDefs {
        Arc::clone(&self.view.defs)
    }

    /// The names of the tools this set offers, in order.
    pub fn names(&self) -> &[String] {
        &self.view.names
    }

    /// The names of the offered tools that are safe to run twice ([`Tool::idempotent`]).
    pub fn idempotent_tools(&self) -> Vec<String> {
        self.names()
            .iter()
            .filter(|name| self.get(name).is_some_and(|tool| tool.idempotent()))
            .cloned()
            .collect()
    }

    /// The tool with this name, when this set offers it.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        let (index, _, tool) = self.view.registry.tools.get_full(name)?;
        self.view.offered[index].then_some(tool)
    }

    /// Whether this call needs a person's approval before it runs: the set's rule for the tool
    /// (from [`ToolSetBuilder::require_approval`]), else the tool's own [`Tool::approval`].
    /// `None` for a tool the set does not offer (running it is an error result anyway).
    pub fn approval(&self, call: ToolCallView<'_>) -> Option<Approval> {
        let tool = self.get(call.name)?;
        match self.view.registry.gates.get(call.name) {
            Some(Gate::Always(approval)) => Some(approval.clone()),
            Some(Gate::When(rule)) => rule(call.args),
            None => tool.approval(call.args),
        }
    }

    /// How long one call may run.
    pub fn timeout(&self) -> Duration {
        self.view.registry.timeout
    }

    /// How many bytes of output the model sees at most (plus the truncation marker).
    pub fn max_output(&self) -> usize {
        self.view.registry.max_output
    }

    /// A view offering only the named tools (an agent's allowlist); calling any other tool
    /// through it is an error result. Order stays the registration order; restricting a
    /// restricted view narrows it further.
    ///
    /// # Errors
    /// [`ToolSetError::NotInSet`] for a name this set does not offer.
    pub fn restrict<S: AsRef<str>>(&self, allowed: &[S]) -> Result<ToolSet, ToolSetError> {
        let registry = &self.view.registry;
        let mut offered = vec![false; registry.tools.len()].into_boxed_slice();
        for name in allowed {
            let name = name.as_ref();
            match registry.tools.get_index_of(name) {
                Some(index) if self.view.offered[index] => offered[index] = true,
                _ => {
                    return Err(ToolSetError::NotInSet {
                        name: name.to_owned(),
                    });
                }
            }
        }
        Ok(ToolSet {
            view: Arc::new(View::new(Arc::clone(registry), offered)),
        })
    }

    /// Runs a call and answers it, with a context holding only the call's id.
    pub async fn dispatch(&self, call: ToolCallView<'_>) -> ToolResult {
        self.dispatch_with(call, &ToolContext::new(call.id)).await
    }

    /// Runs a call in the given context and answers it: the tool's output, or an error result
    /// naming the tool and what went wrong. Either is cut to [`max_output`](Self::max_output).
    pub async fn dispatch_with(&self, call: ToolCallView<'_>, ctx: &ToolContext) -> ToolResult {
        match self.run(call, ctx).await {
            Ran::Result(result) => result,
            Ran::Question(text) => {
                let error = ToolError::Question { text };
                ToolResult::error(
                    call.id,
                    truncate(
                        format!("tool `{}` failed: {error}", call.name),
                        self.max_output(),
                    ),
                )
            }
        }
    }

    /// Runs a call: its result, as [`dispatch_with`](Self::dispatch_with) gives it, or the
    /// question the tool asked instead (for a runtime that can put it to a person).
    pub async fn run(&self, call: ToolCallView<'_>, ctx: &ToolContext) -> Ran {
        let max_output = self.max_output();
        Ran::Result(match self.execute_with_attachments(call, ctx).await {
            Ok((output, attachments)) => ToolResult {
                attachments,
                ..ToolResult::ok(call.id, output)
            },
            Err(ToolError::Question { text }) => return Ran::Question(text),
            Err(error) => {
                let content = match &error {
                    ToolError::UnknownTool { .. } | ToolError::NotAllowed { .. } => {
                        error.to_string()
                    }
                    _ => format!("tool `{}` failed: {error}", call.name),
                };
                ToolResult::error(call.id, truncate(content, max_output))
            }
        })
    }

    /// Runs a call: its output (already cut to [`max_output`](Self::max_output)) or why there
    /// is none, for callers that want the failure typed rather than as an error result.
    ///
    /// # Errors
    /// Every [`ToolError`]: unknown or disallowed tool, invalid arguments, the tool's failure,
    /// a panic, the time limit.
    pub async fn execute(
        &self,
        call: ToolCallView<'_>,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        self.execute_with_attachments(call, ctx)
            .await
            .map(|(text, _)| text)
    }

    /// [`execute`](Self::execute), with what the tool returned besides text (images an MCP
    /// tool returned), as [`Tool::call_with_attachments`] gives it.
    ///
    /// # Errors
    /// As for [`execute`](Self::execute).
    pub async fn execute_with_attachments(
        &self,
        call: ToolCallView<'_>,
        ctx: &ToolContext,
    ) -> Result<(String, motet_directives::Attachments), ToolError> {
        let registry = &self.view.registry;
        let Some((index, _, tool)) = registry.tools.get_full(call.name) else {
            return Err(ToolError::UnknownTool {
                name: call.name.to_owned(),
                available: self.view.names.clone(),
            });
        };
        if !self.view.offered[index] {
            return Err(ToolError::NotAllowed {
                name: call.name.to_owned(),
                available: self.view.names.clone(),
            });
        }
        if let Some(problem) = call.args.problem() {
            return Err(ToolError::invalid_args(problem));
        }
        // Dropping the call's future on timeout cancels it at its next await; the unwind guard
        // keeps a panic inside the tool from reaching the agent.
        let guarded = AssertUnwindSafe(tool.call_with_attachments(call.args, ctx)).catch_unwind();
        match tokio::time::timeout(registry.timeout, guarded).await {
            Ok(Ok(Ok((output, attachments)))) => {
                Ok((truncate(output, registry.max_output), attachments))
            }
            Ok(Ok(Err(error))) => Err(error),
            Ok(Err(payload)) => {
                let message = panic_message(payload.as_ref());
                tracing::warn!(tool = call.name, %message, "tool panicked");
                Err(ToolError::Panicked { message })
            }
            Err(_elapsed) => Err(ToolError::Timeout {
                after: registry.timeout,
            }),
        }
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("tools", &self.view.names)
            .field("timeout", &self.view.registry.timeout)
            .field("max_output", &self.view.registry.max_output)
            .finish()
    }
}

#[async_trait]
impl ToolDispatcher for ToolSet {
    async fn dispatch(&self, call: ToolCallView<'_>, ctx: &ToolContext) -> ToolResult {
        self.dispatch_with(call, ctx).await
    }

    fn definitions(&self) -> ToolDefs {
        ToolSet::definitions(self)
    }
}

/// Collects tools and limits for a [`ToolSet`].
pub struct ToolSetBuilder {
    tools: Vec<Arc<dyn Tool>>,
    gates: IndexMap<String, Gate>,
    timeout: Duration,
    max_output: usize,
}

impl Default for ToolSetBuilder {
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            gates: IndexMap::new(),
            timeout: DEFAULT_TIMEOUT,
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }
}

impl std::fmt::Debug for ToolSetBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|tool| tool.name()).collect();
        f.debug_struct("ToolSetBuilder")
            .field("tools", &names)
            .field("timeout", &self.timeout)
            .field("max_output", &self.max_output)
            .finish()
    }
}

impl ToolSetBuilder {
    /// Adds a tool; tools are offered in the order they are added.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a tool that is shared with other sets.
    pub fn shared_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Every call of tool `name` waits for a person's approval before it runs (over the
    /// tool's own [`Tool::approval`]). The tool must be added too, before or after.
    pub fn require_approval(mut self, name: impl Into<String>, approval: Approval) -> Self {
        self.gates.insert(name.into(), Gate::Always(approval));
        self
    }

    /// The calls of tool `name` for which `rule` gives an approval wait for a person before
    /// they run; the others run at once.
    pub fn require_approval_when(
        mut self,
        name: impl Into<String>,
        rule: impl Fn(&ToolArgs) -> Option<Approval> + Send + Sync + 'static,
    ) -> Self {
        self.gates.insert(name.into(), Gate::When(Arc::new(rule)));
        self
    }

    /// How long one call may run before it is cancelled and answered with a timeout error.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many bytes of output the model sees at most; longer output is cut and marked.
    pub fn with_max_output(mut self, max_bytes: usize) -> Self {
        self.max_output = max_bytes;
        self
    }

    /// The set, with every tool's definition computed once.
    ///
    /// # Errors
    /// [`ToolSetError::InvalidName`] for a name providers reject;
    /// [`ToolSetError::DuplicateName`] when two tools share a name;
    /// [`ToolSetError::UngatedName`] for an approval rule naming no tool of the set.
    pub fn build(self) -> Result<ToolSet, ToolSetError> {
        let mut tools = IndexMap::with_capacity(self.tools.len());
        for tool in self.tools {
            let name = tool.name().to_owned();
            if !is_valid_name(&name) {
                return Err(ToolSetError::InvalidName { name });
            }
            if tools.contains_key(&name) {
                return Err(ToolSetError::DuplicateName { name });
            }
            tools.insert(name, tool);
        }
        if let Some(name) = self.gates.keys().find(|name| !tools.contains_key(*name)) {
            return Err(ToolSetError::UngatedName { name: name.clone() });
        }
        let offered = vec![true; tools.len()].into_boxed_slice();
        let registry = Arc::new(Registry {
            tools,
            gates: self.gates,
            timeout: self.timeout,
            max_output: self.max_output,
        });
        Ok(ToolSet {
            view: Arc::new(View::new(registry, offered)),
        })
    }
}

/// The name rule every provider accepts: `^[a-zA-Z0-9_-]{1,64}$`.
fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
