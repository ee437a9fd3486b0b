//! One MCP server tool as a motet [`Tool`], and [`McpClient::tools`], which hands them out
//! (written here so that the client, which the tool holds, need not know the tool).

use std::sync::Arc;

use async_trait::async_trait;
use motet_directives::{Attachments, ToolArgs};
use motet_runtime::tool::{Tool, ToolContext, ToolError};

use crate::McpError;
use crate::client::{McpClient, ToolSpec};
use crate::content::render;

/// A server tool, callable by the model through a `ToolSet` like any tool: the set's
/// allowlist, time limit, output limit and spans apply.
///
/// A call sends `tools/call` to the server (starting it first if it is down); the result is
/// rendered by [`render`](crate::content::render). A result flagged `isError`, and every
/// [`McpError`], becomes [`ToolError::Failed`] with its text, so the model reads what went
/// wrong; a JSON-RPC "invalid params" answer becomes [`ToolError::InvalidArgs`]. The
/// configured header and environment values are redacted from every error text.
#[derive(Clone)]
pub struct McpTool {
    client: McpClient,
    spec: Arc<ToolSpec>,
}

impl McpTool {
    pub(crate) fn new(client: McpClient, spec: Arc<ToolSpec>) -> Self {
        Self { client, spec }
    }

    /// The tool's name on the server (its motet [`name`](Tool::name) may carry a prefix).
    pub fn remote_name(&self) -> &str {
        &self.spec.remote_name
    }

    /// The client of the server that offers the tool.
    pub fn client(&self) -> &McpClient {
        &self.client
    }
}

impl McpClient {
    /// The server's tools as motet tools, listing them again first when the server said its
    /// list changed (or it was restarted). Add them to a `ToolSet` like any tool.
    ///
    /// # Errors
    /// When the list had to be fetched and could not be.
    pub async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        let specs = self.tool_specs().await?;
        Ok(specs
            .into_iter()
            .map(|spec| McpTool::new(self.clone(), spec))
            .collect())
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.motet_name)
            .field("server", &self.client.name())
            .field("remote_name", &self.spec.remote_name)
            .finish()
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.spec.motet_name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.spec.parameters.clone()
    }

    /// The server's `idempotentHint` (a hint the server gives about itself).
    fn idempotent(&self) -> bool {
        self.spec.idempotent
    }

    async fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        self.call_with_attachments(args, ctx)
            .await
            .map(|(text, _)| text)
    }

    /// The result's text, and its images, audio and embedded PDFs as attachments.
    async fn call_with_attachments(
        &self,
        args: &ToolArgs,
        _ctx: &ToolContext,
    ) -> Result<(String, Attachments), ToolError> {
        let arguments: serde_json::Map<String, serde_json::Value> = args
            .parse()
            .map_err(|error| ToolError::invalid_args(error.to_string()))?;
        let span = tracing::info_span!(
            "mcp.tools.call",
            mcp.server = %self.client.name(),
            mcp.tool = %self.spec.remote_name,
        );
        let result = tracing::Instrument::instrument(
            self.client.call_tool(&self.spec.remote_name, arguments),
            span,
        )
        .await;
        match result {
            Ok(result) => {
                let rendered = render(&result);
                if rendered.is_error {
                    // An error result may quote the request (its headers, the server's
                    // environment); a successful one is the tool's answer and is kept as is.
                    Err(ToolError::failed(self.client.redact(&rendered.text)))
                } else {
                    Ok((rendered.text, Attachments::from(rendered.attachments)))
                }
            }
            // JSON-RPC -32602: the server rejected the arguments.
            Err(McpError::Server {
                code: -32602,
                message,
                ..
            }) => Err(ToolError::invalid_args(message)),
            Err(error) => Err(ToolError::failed(error.to_string())),
        }
    }
}
