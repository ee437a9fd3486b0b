//! Tools the provider runs on its own servers — web search, code execution, remote MCP
//! servers — asked for by name in a request's options, and the secret an MCP server's token is
//! kept in.
//!
//! What each dialect sends for them, and which models take them, is the providers crate's
//! business (docs/providers.md, "Hosted tools"); here they are plain, provider-agnostic data.
//! Their calls and results come back as the provider's own blocks
//! ([`AssistantBlock::Opaque`](crate::AssistantBlock::Opaque)).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A tool the provider runs itself, during the call, without a round trip through the agent.
///
/// ```
/// use motet_directives::{HostedTool, McpServer, Secret, WebSearch};
///
/// let tools = vec![
///     HostedTool::WebSearch(WebSearch::default().with_max_uses(3)),
///     HostedTool::CodeExecution,
///     HostedTool::McpServer(
///         McpServer::new("deepwiki", "https://mcp.deepwiki.com/mcp")
///             .with_allowed_tools(["ask_question"])
///             .with_authorization(Secret::new("token-from-the-environment")),
///     ),
/// ];
/// assert!(!format!("{tools:?}").contains("token-from-the-environment"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostedTool {
    /// The provider searches the web (Anthropic `web_search`, OpenAI `web_search`, Gemini
    /// `googleSearch`).
    WebSearch(WebSearch),
    /// The provider runs code in a sandbox of its own (Anthropic `code_execution`, OpenAI
    /// `code_interpreter`, Gemini `codeExecution`).
    CodeExecution,
    /// The provider connects to a remote MCP server and calls its tools (Anthropic's MCP
    /// connector, OpenAI's `mcp` tool).
    McpServer(McpServer),
}

impl HostedTool {
    /// The tool's kind as errors and docs name it: `web_search`, `code_execution`,
    /// `mcp_server`.
    pub fn kind(&self) -> &'static str {
        match self {
            HostedTool::WebSearch(_) => "web_search",
            HostedTool::CodeExecution => "code_execution",
            HostedTool::McpServer(_) => "mcp_server",
        }
    }
}

/// Web search and what narrows it. Every option is optional; a dialect that cannot express
/// one that is set refuses the request rather than search more widely than asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearch {
    /// The most searches in one call (Anthropic only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// Search only these domains (Anthropic, OpenAI Responses).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Never search these domains (Anthropic only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_domains: Vec<String>,
    /// Where the user is, to localize results (Anthropic, OpenAI Responses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_location: Option<UserLocation>,
}

impl WebSearch {
    /// At most `max_uses` searches in one call.
    pub fn with_max_uses(mut self, max_uses: u32) -> Self {
        self.max_uses = Some(max_uses);
        self
    }

    /// Only these domains.
    pub fn with_allowed_domains<S: Into<String>>(
        mut self,
        domains: impl IntoIterator<Item = S>,
    ) -> Self {
        self.allowed_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// Never these domains.
    pub fn with_blocked_domains<S: Into<String>>(
        mut self,
        domains: impl IntoIterator<Item = S>,
    ) -> Self {
        self.blocked_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// Results localized for this place.
    pub fn with_user_location(mut self, location: UserLocation) -> Self {
        self.user_location = Some(location);
        self
    }
}

/// An approximate place, as both Anthropic and OpenAI take it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserLocation {
    /// The city (`San Francisco`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    /// The region or state (`California`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The country, as an ISO 3166-1 alpha-2 code (`US`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// The IANA time zone (`America/Los_Angeles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

/// A remote MCP server the provider connects to on the model's behalf.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    /// The server's name, unique in the request (Anthropic `name`, OpenAI `server_label`); the
    /// provider's MCP call blocks name it.
    pub name: String,
    /// The server's URL (Streamable HTTP or SSE).
    pub url: String,
    /// Only these of the server's tools; `None` offers them all, an empty list none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Whether OpenAI asks for approval before each call (Anthropic never does).
    #[serde(default, skip_serializing_if = "McpApproval::is_never")]
    pub approval: McpApproval,
    /// The token the provider presents to the server (an OAuth bearer token). It never
    /// prints and is never serialized: see [`Secret`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<Secret>,
}

impl McpServer {
    /// A server offering all its tools, calls not approved one by one, no token.
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            allowed_tools: None,
            approval: McpApproval::Never,
            authorization: None,
        }
    }

    /// Only these of its tools.
    pub fn with_allowed_tools<S: Into<String>>(
        mut self,
        tools: impl IntoIterator<Item = S>,
    ) -> Self {
        self.allowed_tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Calls approved (or not) one by one.
    pub fn with_approval(mut self, approval: McpApproval) -> Self {
        self.approval = approval;
        self
    }

    /// The token the provider presents to the server.
    pub fn with_authorization(mut self, token: Secret) -> Self {
        self.authorization = Some(token);
        self
    }
}

/// Whether each MCP call waits for approval (OpenAI's `require_approval`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpApproval {
    /// Calls run without asking (`"never"`).
    #[default]
    Never,
    /// Every call waits for an approval (`"always"`): OpenAI answers with an
    /// `mcp_approval_request` item, kept like any other item, and the turn ends there.
    Always,
}

impl McpApproval {
    fn is_never(&self) -> bool {
        *self == McpApproval::Never
    }
}

/// What a secret serializes as, and what it prints as.
const REDACTED: &str = "[redacted]";

/// A credential carried in a request: `Debug` and `Display` print `[redacted]`, and it
/// serializes as the string `"[redacted]"`, so a stored or logged request never holds it.
///
/// Deserializing reads any other string as the secret (a configuration file may hold one);
/// `"[redacted]"` reads back as a *withheld* secret, which [`expose`](Self::expose) does not
/// give out: a request read back from a transcript or a store cannot be replayed with a live
/// token, and the providers refuse to send it until the token is set again.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Option<String>);

impl Secret {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(Some(secret.into()))
    }

    /// The secret, for the one place that writes it into a request body; `None` when it was
    /// withheld by serialization.
    pub fn expose(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// Whether this secret was read back from a serialized request, without its value.
    pub fn is_withheld(&self) -> bool {
        self.0.is_none()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(if text == REDACTED {
            Self(None)
        } else {
            Self(Some(text))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "mcp-tok-3f9c2a71d8e4";

    fn server() -> HostedTool {
        HostedTool::McpServer(
            McpServer::new("docs", "https://mcp.example.com/mcp")
                .with_authorization(Secret::new(TOKEN)),
        )
    }

    #[test]
    fn a_secret_neither_prints_nor_serializes() {
        let tool = server();
        assert!(!format!("{tool:?}").contains(TOKEN));
        assert!(!format!("{tool:#?}").contains(TOKEN));
        assert_eq!(Secret::new(TOKEN).to_string(), "[redacted]");
        let json = serde_json::to_string(&tool).unwrap();
        assert!(!json.contains(TOKEN), "{json}");
        assert!(json.contains(r#""authorization":"[redacted]""#), "{json}");
    }

    #[test]
    fn a_serialized_secret_reads_back_withheld_and_a_written_one_live() {
        let json = serde_json::to_string(&server()).unwrap();
        let HostedTool::McpServer(back) = serde_json::from_str(&json).unwrap() else {
            panic!("not an MCP server: {json}");
        };
        let token = back.authorization.unwrap();
        assert!(token.is_withheld());
        assert_eq!(token.expose(), None);

        let written =
            r#"{"type":"mcp_server","name":"docs","url":"https://x","authorization":"tok"}"#;
        let HostedTool::McpServer(read) = serde_json::from_str(written).unwrap() else {
            panic!("not an MCP server");
        };
        assert_eq!(read.authorization.unwrap().expose(), Some("tok"));
    }

    #[test]
    fn hosted_tools_serialize_tagged_and_without_their_defaults() {
        let tools = vec![
            HostedTool::WebSearch(WebSearch::default()),
            HostedTool::CodeExecution,
            HostedTool::McpServer(McpServer::new("a", "https://a")),
        ];
        let json = serde_json::to_value(&tools).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"type": "web_search"},
                {"type": "code_execution"},
                {"type": "mcp_server", "name": "a", "url": "https://a"},
            ])
        );
        let back: Vec<HostedTool> = serde_json::from_value(json).unwrap();
        assert_eq!(back, tools);
    }
}
