//! The OpenAPI 3.1 document of the native API and the A2A routes, served at `/openapi.json`:
//! written by hand, and held against the routes by a test (every routed path is in it).

use serde_json::{Value, json};

/// A path parameter named `name`.
fn param(name: &str, about: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "description": about,
           "schema": {"type": "string"}})
}

/// An operation: its summary, parameters, body (a schema ref, if any) and answers.
fn op(summary: &str, params: &[Value], body: Option<&str>, answers: &[(&str, &str)]) -> Value {
    let mut responses = serde_json::Map::new();
    for (status, about) in answers {
        let mut answer = json!({"description": about});
        if status.starts_with('4') || status.starts_with('5') {
            if *status != "401" {
                answer["content"] =
                    json!({"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}});
            }
        } else if *status == "200" || *status == "201" {
            answer["content"] = json!({"application/json": {"schema": {"type": "object"}}});
        }
        responses.insert((*status).to_owned(), answer);
    }
    let mut operation = json!({"summary": summary, "parameters": params, "responses": responses});
    if let Some(schema) = body {
        operation["requestBody"] = json!({"required": true, "content": {"application/json":
            {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}});
    }
    operation
}

/// The document.
pub(crate) fn document() -> Value {
    let agent = param("agent", "the agent's name");
    let thread = param(
        "thread",
        "the thread's id (`new` starts a fresh one when a run starts)",
    );
    let run = param("run", "the run's id");
    let call = param("call", "the model's id of the waiting tool call");
    let auth = [("401", "no token or a wrong one (nothing else is said)")];
    let with = |extra: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        extra.iter().chain(auth.iter()).copied().collect()
    };
    json!({
        "openapi": "3.1.0",
        "info": {"title": "motet native API", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Agents, threads, runs streamed as SSE with ids (resumable with Last-Event-ID), waits for a person. docs/serve.md"},
        "security": [{"bearer": []}],
        "paths": {
            "/healthz": {"get": op("The process is up", &[], None, &[("200", "ok")])},
            "/readyz": {"get": op("Every served agent runs", &[], None, &[("200", "ready"), ("503", "not ready")])},
            "/openapi.json": {"get": op("This document", &[], None, &[("200", "the document")])},
            "/api/agents": {"get": op("The agents the token reaches", &[], None, &with(&[("200", "{agents: [{name}]}")]))},
            "/api/agents/{agent}/threads": {
                "get": op("The agent's stored threads", std::slice::from_ref(&agent), None, &with(&[("200", "{threads}"), ("404", "no such agent")])),
                "post": op("Create an empty thread", std::slice::from_ref(&agent), None, &with(&[("201", "{id}"), ("404", "no such agent")])),
            },
            "/api/agents/{agent}/threads/{thread}": {
                "get": op("A thread: totals and entries", &[agent.clone(), thread.clone()], None, &with(&[("200", "the thread"), ("400", "a bad thread id"), ("404", "no such agent or thread")])),
                "delete": op("Forget a thread", &[agent.clone(), thread.clone()], None, &with(&[("204", "deleted"), ("404", "no such agent or thread"), ("409", "a run of it is going")])),
            },
            "/api/agents/{agent}/threads/{thread}/entries": {
                "get": {
                    "summary": "A thread's entries in seq order",
                    "parameters": [agent.clone(), thread.clone(),
                        {"name": "after", "in": "query", "schema": {"type": "integer"}, "description": "only entries with a seq above this"},
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 1000}}],
                    "responses": op("", &[], None, &with(&[("200", "{entries}"), ("400", "a bad query"), ("404", "no such agent or thread")]))["responses"],
                },
            },
            "/api/agents/{agent}/threads/{thread}/runs": {
                "get": op("The thread's runs this server holds", &[agent.clone(), thread.clone()], None, &with(&[("200", "{runs}"), ("404", "no such agent")])),
                "post": op("Start a run: ask a question on the thread", &[agent.clone(), thread.clone()], Some("StartRun"), &with(&[("201", "the run"), ("400", "not JSON"), ("404", "no such agent"), ("413", "the body is too large"), ("422", "the wrong shape, or an empty query")])),
            },
            "/api/agents/{agent}/runs/{run}": {
                "get": op("A run: status, and its answer or failure once ended", &[agent.clone(), run.clone()], None, &with(&[("200", "the run"), ("404", "no such run")])),
            },
            "/api/agents/{agent}/runs/{run}/cancel": {
                "post": op("Cancel a run", &[agent.clone(), run.clone()], None, &with(&[("202", "asked to stop"), ("404", "no such run"), ("409", "the run has ended")])),
            },
            "/api/agents/{agent}/runs/{run}/steer": {
                "post": op("Add a user message to a running run", &[agent.clone(), run.clone()], Some("Steer"), &with(&[("202", "taken in at the next turn boundary"), ("404", "no such run"), ("409", "the run is not running"), ("413", "the body is too large"), ("422", "an empty text")])),
            },
            "/api/agents/{agent}/runs/{run}/events": {
                "get": {
                    "summary": "A run's events as SSE with ids: delta, entry, waiting, answer, failed; `gap` when deltas after Last-Event-ID are no longer held; `shutdown` when the server closes",
                    "parameters": [agent.clone(), run.clone(),
                        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}, "description": "resume after this event"},
                        {"name": "last_event_id", "in": "query", "schema": {"type": "string"}, "description": "as the header, for clients that cannot set it"}],
                    "responses": {
                        "200": {"description": "the stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                        "400": {"description": "a Last-Event-ID that names no event", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                        "401": {"description": "no token or a wrong one"},
                        "404": {"description": "no such run", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                        "503": {"description": "as many streams as the run or the server takes", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                    },
                },
            },
            "/.well-known/agent-card.json": {"get": op("A2A: the agent card of the first served agent (by name) the token reaches", &[], None, &with(&[("200", "an A2A 1.0 AgentCard"), ("404", "no agent the token reaches")]))},
            "/a2a/{agent}/.well-known/agent-card.json": {"get": op("A2A: the agent's card, naming its JSON-RPC endpoint", std::slice::from_ref(&agent), None, &with(&[("200", "an A2A 1.0 AgentCard"), ("404", "no such agent")]))},
            "/a2a/{agent}": {"post": {
                "summary": "A2A 1.0 JSON-RPC: SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask (docs/serve.md, A2A); send `A2A-Version: 1.0`",
                "parameters": [agent.clone(),
                    {"name": "A2A-Version", "in": "header", "schema": {"type": "string"}, "description": "1.0 (none means 0.3, not served)"}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcRequest"}}}},
                "responses": {
                    "200": {"description": "a JSON-RPC response (its errors too, with A2A's codes), or for the streaming methods an SSE stream of JSON-RPC responses",
                        "content": {"application/json": {"schema": {"type": "object"}}, "text/event-stream": {"schema": {"type": "string"}}}},
                    "401": {"description": "no token or a wrong one"},
                    "404": {"description": "no such agent", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                    "413": {"description": "the body is too large", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                },
            }},
            "/api/waiting": {"get": op("Every call waiting for a person, of the agents the token reaches", &[], None, &with(&[("200", "{waiting}")]))},
            "/api/agents/{agent}/waiting": {"get": op("The agent's calls waiting for a person", std::slice::from_ref(&agent), None, &with(&[("200", "{waiting}"), ("404", "no such agent")]))},
            "/api/agents/{agent}/threads/{thread}/waiting/{call}": {
                "post": op("Answer a waiting call: approve, edit, reject, answer", &[agent, thread, call], Some("Decision"), &with(&[("202", "answered"), ("400", "not JSON"), ("404", "the call does not wait"), ("409", "answered already"), ("413", "the body is too large"), ("422", "the wrong kind of answer, or edited arguments that are not an object")])),
            },
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object",
                    "required": ["code", "message"], "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}},
                "JsonRpcRequest": {"type": "object", "required": ["jsonrpc", "method"],
                    "properties": {"jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer", "null"]},
                        "method": {"enum": ["SendMessage", "SendStreamingMessage", "GetTask", "CancelTask", "SubscribeToTask"]},
                        "params": {"type": "object"}}},
                "StartRun": {"type": "object", "required": ["query"], "additionalProperties": false,
                    "properties": {"query": {"type": "string", "minLength": 1}}},
                "Steer": {"type": "object", "required": ["text"], "additionalProperties": false,
                    "properties": {"text": {"type": "string", "minLength": 1}}},
                "Decision": {"oneOf": [
                    {"type": "object", "required": ["action"], "properties": {"action": {"const": "approve"}}},
                    {"type": "object", "required": ["action", "args"], "properties": {"action": {"const": "edit"}, "args": {"type": "object"}}},
                    {"type": "object", "required": ["action", "reason"], "properties": {"action": {"const": "reject"}, "reason": {"type": "string"}}},
                    {"type": "object", "required": ["action", "text"], "properties": {"action": {"const": "answer"}, "text": {"type": "string"}}},
                ]},
            },
        },
    })
}
