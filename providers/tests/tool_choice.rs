//! Tool choice on the wire, per dialect: each mode in each provider's own words, a named tool
//! narrowed to `required` for OpenAI-compatible servers (llama.cpp ignores the named form), and
//! a name the request does not offer refused before anything is sent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;

use motet_directives::{LlmRequest, Message, ToolChoice, ToolDef};
use motet_providers::{Dialect, ProviderError};
use serde_json::{Value, json};

fn tools() -> Arc<[ToolDef]> {
    let object = json!({"type": "object", "properties": {}});
    Arc::from(vec![
        ToolDef::new("get_weather", "Current weather.", object.clone()),
        ToolDef::new("get_time", "Current time.", object),
    ])
}

fn request(model: &str, choice: ToolChoice) -> LlmRequest {
    LlmRequest::new(model.parse().unwrap(), vec![Message::user("Now?")])
        .with_tools(tools())
        .with_tool_choice(choice)
}

fn named() -> ToolChoice {
    ToolChoice::Tool {
        name: "get_time".into(),
    }
}

/// The names of the tools a rendered body lists, wherever the dialect puts them.
fn listed(dialect: Dialect, body: &Value) -> Vec<String> {
    let names: Vec<&Value> = match dialect {
        Dialect::OpenAiChat => body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["function"]["name"])
            .collect(),
        Dialect::OpenAiResponses | Dialect::Anthropic => body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["name"])
            .collect(),
        Dialect::Gemini => body["tools"][0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["name"])
            .collect(),
    };
    names
        .into_iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

/// Where each dialect says the choice: the field and its value.
fn choice_of(dialect: Dialect, body: &Value) -> Value {
    match dialect {
        Dialect::Gemini => body["toolConfig"]["functionCallingConfig"].clone(),
        _ => body["tool_choice"].clone(),
    }
}

#[test]
fn each_mode_in_each_dialects_words() {
    let both = vec!["get_weather".to_owned(), "get_time".to_owned()];
    let only_time = vec!["get_time".to_owned()];
    #[rustfmt::skip]
    let table: Vec<(Dialect, &str, ToolChoice, Value, &Vec<String>)> = vec![
        (Dialect::OpenAiChat, "openai:gpt-4.1", ToolChoice::Auto, json!("auto"), &both),
        (Dialect::OpenAiChat, "openai:gpt-4.1", ToolChoice::None, json!("none"), &both),
        (Dialect::OpenAiChat, "openai:gpt-4.1", ToolChoice::Required, json!("required"), &both),
        (Dialect::OpenAiChat, "openai:gpt-4.1", named(),
            json!({"type": "function", "function": {"name": "get_time"}}), &both),
        // A compatible server gets `required` with only the named tool listed.
        (Dialect::OpenAiChat, "openai-compat:local", named(), json!("required"), &only_time),
        (Dialect::OpenAiChat, "openai-compat:local", ToolChoice::Required, json!("required"), &both),
        (Dialect::OpenAiResponses, "openai-responses:gpt-5", ToolChoice::Required, json!("required"), &both),
        (Dialect::OpenAiResponses, "openai-responses:gpt-5", named(),
            json!({"type": "function", "name": "get_time"}), &both),
        (Dialect::Anthropic, "anthropic:claude-sonnet-4-5", ToolChoice::Required, json!({"type": "any"}), &both),
        (Dialect::Anthropic, "anthropic:claude-sonnet-4-5", named(),
            json!({"type": "tool", "name": "get_time"}), &both),
        (Dialect::Gemini, "gemini:gemini-2.5-flash", ToolChoice::Required, json!({"mode": "ANY"}), &both),
        (Dialect::Gemini, "gemini:gemini-2.5-flash", named(),
            json!({"mode": "ANY", "allowedFunctionNames": ["get_time"]}), &both),
    ];
    for (dialect, model, choice, expected, tools) in table {
        let body = dialect.render(&request(model, choice.clone())).unwrap();
        assert_eq!(
            choice_of(dialect, &body),
            expected,
            "{dialect} {model} {choice:?}"
        );
        assert_eq!(
            &listed(dialect, &body),
            tools,
            "{dialect} {model} {choice:?}"
        );
    }
}

#[test]
fn a_named_tool_that_is_not_offered_is_refused_in_every_dialect() {
    let models = [
        (Dialect::OpenAiChat, "openai:gpt-4.1"),
        (Dialect::OpenAiChat, "openai-compat:local"),
        (Dialect::OpenAiResponses, "openai-responses:gpt-5"),
        (Dialect::Anthropic, "anthropic:claude-sonnet-4-5"),
        (Dialect::Gemini, "gemini:gemini-2.5-flash"),
    ];
    let missing = ToolChoice::Tool {
        name: "calculator".into(),
    };
    for (dialect, model) in models {
        let error = dialect
            .render(&request(model, missing.clone()))
            .unwrap_err();
        let ProviderError::InvalidRequest { message, .. } = &error else {
            panic!("{dialect}: {error:?}");
        };
        assert!(
            message.contains("`calculator`") && message.contains("get_weather, get_time"),
            "{dialect}: {message}"
        );

        let bare = LlmRequest::new(model.parse().unwrap(), vec![Message::user("Now?")])
            .with_tool_choice(missing.clone());
        let error = dialect.render(&bare).unwrap_err();
        assert!(
            error.to_string().contains("no tools are offered"),
            "{dialect}: {error}"
        );
    }
}
