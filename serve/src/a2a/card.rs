//! An agent's A2A 1.0 agent card (pure, plain `#[test]`s): who it is, where its JSON-RPC
//! endpoint is, what it can do, and the bearer scheme when the server has tokens.

use serde_json::{Value, json};

/// The card of agent `name`, whose JSON-RPC endpoint is `url`; `bearer` when the server takes
/// tokens.
pub(crate) fn card(name: &str, url: &str, bearer: bool) -> Value {
    let mut card = json!({
        "name": name,
        "description": format!(
            "The motet agent `{name}`. Ask it in plain text; it answers in text (the artifact \
             `answer`). It may stop for a person to approve a tool call or answer a tool's \
             question (input-required): reply on the same task."
        ),
        "supportedInterfaces": [{
            "url": url,
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        }],
        "provider": {"organization": "motet", "url": "https://github.com/motet-rs/motet"},
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {
            "streaming": true,
            "pushNotifications": false,
            "extendedAgentCard": false,
        },
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "ask",
            "name": format!("Ask {name}"),
            "description": format!(
                "One ask of `{name}`, run with its own tools on a motet thread (the task's \
                 contextId); send the contextId back to continue the conversation."
            ),
            "tags": ["motet", "agent"],
            "inputModes": ["text/plain", "application/json"],
            "outputModes": ["text/plain"],
        }],
    });
    if bearer {
        card["securitySchemes"] = json!({
            "bearer": {"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": "A token of the server (MOTET_SERVE_TOKEN or [[serve.tokens]]) whose scope reaches this agent",
            }},
        });
        card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
    }
    card
}

/// The base URL (`scheme://host`) a request reached the server at: its `Host` (or
/// `X-Forwarded-Host`) and `X-Forwarded-Proto`, else `http`; `localhost` without a host.
pub(crate) fn base_url(
    host: Option<&str>,
    forwarded_host: Option<&str>,
    proto: Option<&str>,
) -> String {
    let host = forwarded_host
        .or(host)
        .map(str::trim)
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_graphic() && c != '/'))
        .unwrap_or("localhost");
    let scheme = match proto.map(str::trim) {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_names_its_endpoint_and_says_bearer_only_with_tokens() {
        let open = card("calc", "http://127.0.0.1:8420/a2a/calc", false);
        assert_eq!(open["name"], "calc");
        assert_eq!(
            open["supportedInterfaces"][0]["url"],
            "http://127.0.0.1:8420/a2a/calc"
        );
        assert_eq!(open["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
        assert_eq!(open["capabilities"]["streaming"], true);
        assert!(open.get("securitySchemes").is_none());
        let closed = card("calc", "http://x/a2a/calc", true);
        assert_eq!(
            closed["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        assert_eq!(
            closed["securityRequirements"][0]["schemes"]["bearer"]["list"],
            json!([])
        );
    }

    #[test]
    fn the_base_url_follows_the_request() {
        assert_eq!(
            base_url(Some("127.0.0.1:8420"), None, None),
            "http://127.0.0.1:8420"
        );
        assert_eq!(
            base_url(Some("10.0.0.1"), Some("agents.example"), Some("https")),
            "https://agents.example"
        );
        assert_eq!(base_url(None, None, Some("ftp")), "http://localhost");
        assert_eq!(base_url(Some("a/b"), None, None), "http://localhost");
    }
}
