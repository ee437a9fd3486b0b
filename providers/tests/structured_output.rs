//! Structured output as a request option, rendered: what each dialect sends for a JSON Schema
//! response format (goldens in tests/golden/), how a schema is rewritten for a provider's
//! constrained decoding (OpenAI strict, Anthropic), and the refusals made before anything is
//! sent. The local llama.cpp server's enforcement is in `structured_output_local.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;

use common::hosted::{body, weather};
use motet_directives::{LlmOptions, LlmRequest, Message, ResponseFormat};
use motet_providers::{Dialect, ProviderError, models};
use serde_json::{Value, json};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");

fn golden(name: &str) -> Value {
    let path = format!("{GOLDEN}/{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A schema of the kind schemars derives: an optional field (`null` in its type, not
/// required), integer formats and bounds, a definition under `$defs`, an enum as `oneOf`.
fn forecast_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Forecast",
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "high_c": {"type": "integer", "format": "int32", "minimum": -90, "maximum": 60},
            "note": {"type": ["string", "null"], "maxLength": 80},
            "days": {"type": "array", "items": {"$ref": "#/$defs/Day"}, "maxItems": 7},
            "updated": {"type": "string", "format": "date-time"}
        },
        "required": ["city", "high_c", "days", "updated"],
        "$defs": {
            "Day": {
                "type": "object",
                "properties": {
                    "sky": {"oneOf": [
                        {"type": "string", "const": "clear"},
                        {"type": "string", "const": "cloudy"}
                    ]},
                    "rain_mm": {"type": "number", "format": "double", "minimum": 0.0}
                },
                "required": ["sky"]
            }
        }
    })
}

fn forecast() -> ResponseFormat {
    ResponseFormat::json_schema("Forecast", forecast_schema())
}

/// A question to `model` offering `get_weather`, asking for answers of `format`.
fn request(model: &str, format: ResponseFormat) -> LlmRequest {
    LlmRequest::new(
        model.parse().unwrap(),
        vec![Message::user("The week's forecast for Lyon, please.")],
    )
    .with_tools(weather())
    .with_options(
        LlmOptions {
            max_tokens: Some(1024),
            ..LlmOptions::default()
        }
        .with_response_format(format),
    )
}

fn check_golden(dialect: Dialect, req: &LlmRequest, name: &str) -> Value {
    models::validate(req).unwrap();
    let rendered = body(dialect, req);
    assert_eq!(
        rendered,
        golden(name),
        "{name}: rendered\n{}",
        serde_json::to_string_pretty(&rendered).unwrap()
    );
    rendered
}

/// `dialect`'s refusal of `req`'s response format, from render and from validate alike.
fn refused(dialect: Dialect, req: &LlmRequest) -> String {
    let from_render = dialect.render(req).unwrap_err();
    assert_eq!(dialect.encode(req).unwrap_err(), from_render);
    assert_eq!(models::validate(req).unwrap_err(), from_render);
    match from_render {
        ProviderError::UnsupportedResponseFormat { dialect: d, reason } if d == dialect => reason,
        other => panic!("expected a response format refusal, got {other:?}"),
    }
}

fn refused_by_model(dialect: Dialect, req: &LlmRequest) -> String {
    dialect.render(req).unwrap();
    match models::validate(req).unwrap_err() {
        ProviderError::UnsupportedResponseFormat { dialect: d, reason } if d == dialect => reason,
        other => panic!("expected a response format refusal, got {other:?}"),
    }
}

#[test]
fn chat_completions_sends_response_format_with_the_strict_schema() {
    let req = request("openai:gpt-5.2", forecast());
    let body = check_golden(
        Dialect::OpenAiChat,
        &req,
        "openai_chat/structured_output.json",
    );
    // The tools go too: OpenAI takes tools and a response format in one call.
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
}

#[test]
fn responses_sends_text_format_with_the_strict_schema() {
    let req = request("openai-responses:gpt-5.2", forecast());
    check_golden(
        Dialect::OpenAiResponses,
        &req,
        "openai_responses/structured_output.json",
    );
}

#[test]
fn anthropic_sends_output_config_without_the_bounds_it_does_not_take() {
    let req = request("anthropic:claude-sonnet-4-5", forecast());
    let body = check_golden(Dialect::Anthropic, &req, "anthropic/structured_output.json");
    assert!(
        body.get("output_format").is_none(),
        "the beta field is not sent"
    );
}

#[test]
fn gemini_sends_a_json_mime_type_and_the_json_schema() {
    let req = request("gemini:gemini-3-pro-preview", forecast());
    check_golden(Dialect::Gemini, &req, "gemini/structured_output.json");
}

#[test]
fn the_strict_schema_closes_every_object_and_requires_every_property() {
    let req = request("openai:gpt-5.2", forecast());
    let body = body(Dialect::OpenAiChat, &req);
    let schema = &body["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["required"],
        json!(["city", "days", "high_c", "note", "updated"])
    );
    let day = &schema["$defs"]["Day"];
    assert_eq!(day["additionalProperties"], false);
    assert_eq!(day["required"], json!(["rain_mm", "sky"]));
    // oneOf goes as anyOf; number formats go, string formats stay; bounds stay.
    assert!(day["properties"]["sky"].get("oneOf").is_none());
    assert_eq!(
        day["properties"]["sky"]["anyOf"].as_array().unwrap().len(),
        2
    );
    assert!(schema["properties"]["high_c"].get("format").is_none());
    assert_eq!(schema["properties"]["high_c"]["minimum"], -90);
    assert_eq!(schema["properties"]["updated"]["format"], "date-time");
    // OpenAI refuses length bounds: left out, still checked on the answer.
    assert!(schema["properties"]["note"].get("maxLength").is_none());
    assert!(schema.get("$schema").is_none());
}

#[test]
fn an_answer_to_the_sent_schema_is_an_answer_to_the_callers() {
    // What a strict model writes: every property, the optional one as null.
    let answer = r#"{"city": "Lyon", "high_c": 21, "note": null,
        "days": [{"sky": "clear", "rain_mm": 0.0}], "updated": "2026-11-24T09:00:00Z"}"#;
    assert!(forecast().check(answer).is_ok());
    // The bounds Anthropic was not sent are still checked on its answer.
    let too_hot = answer.replace("21", "75");
    assert_eq!(
        forecast().check(&too_hot).unwrap_err().to_string(),
        "the answer does not match the schema at $.high_c: 75 is more than the maximum 60"
    );
}

#[test]
fn a_compatible_server_gets_the_length_bounds_its_grammar_enforces() {
    let req = request("openai-compat:smollm2-135m", forecast());
    let body = body(Dialect::OpenAiChat, &req);
    let schema = &body["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["properties"]["note"]["maxLength"], 80);
    assert_eq!(schema["additionalProperties"], false);
}

#[test]
fn without_strict_openai_gets_the_schema_as_it_is() {
    let req = request("openai:gpt-5.2", forecast().with_strict(false));
    let body = body(Dialect::OpenAiChat, &req);
    let format = &body["response_format"]["json_schema"];
    assert_eq!(format["strict"], false);
    let mut sent = forecast_schema();
    sent.as_object_mut().unwrap().remove("$schema");
    assert_eq!(format["schema"], sent);
}

#[test]
fn json_mode_where_the_dialect_has_one() {
    let chat = body(
        Dialect::OpenAiChat,
        &request("openai:gpt-5.2", ResponseFormat::JsonObject),
    );
    assert_eq!(chat["response_format"], json!({"type": "json_object"}));
    let responses = body(
        Dialect::OpenAiResponses,
        &request("openai-responses:gpt-5.2", ResponseFormat::JsonObject),
    );
    assert_eq!(
        responses["text"],
        json!({"format": {"type": "json_object"}})
    );
    let gemini = body(
        Dialect::Gemini,
        &request("gemini:gemini-3-pro-preview", ResponseFormat::JsonObject),
    );
    assert_eq!(
        gemini["generationConfig"],
        json!({"maxOutputTokens": 1024, "responseMimeType": "application/json"})
    );
    let reason = refused(
        Dialect::Anthropic,
        &request("anthropic:claude-sonnet-4-5", ResponseFormat::JsonObject),
    );
    assert!(reason.contains("no JSON mode"), "{reason}");
}

#[test]
fn schemas_a_constrained_provider_cannot_take_are_refused_before_sending() {
    let open = ResponseFormat::json_schema(
        "Tags",
        json!({"type": "object", "properties": {"a": {"type": "object", "additionalProperties": {"type": "string"}}}}),
    );
    for (dialect, model) in [
        (Dialect::OpenAiChat, "openai:gpt-5.2"),
        (Dialect::OpenAiResponses, "openai-responses:gpt-5.2"),
        (Dialect::Anthropic, "anthropic:claude-opus-4-6"),
    ] {
        let reason = refused(dialect, &request(model, open.clone()));
        assert!(
            reason.contains("the object at $.properties.a takes properties it does not name"),
            "{dialect}: {reason}"
        );
    }
    // Not strict, OpenAI takes it as it is; Gemini always does.
    body(
        Dialect::OpenAiChat,
        &request("openai:gpt-5.2", open.clone().with_strict(false)),
    );
    body(
        Dialect::Gemini,
        &request("gemini:gemini-3-pro-preview", open),
    );

    let all_of = ResponseFormat::json_schema(
        "Both",
        json!({"type": "object", "properties": {"x": {"allOf": [{"type": "string"}]}}}),
    );
    let reason = refused(Dialect::OpenAiChat, &request("openai:gpt-5.2", all_of));
    assert_eq!(
        reason,
        "OpenAI's strict mode does not take `allOf` (at $.properties.x)"
    );

    let list = ResponseFormat::json_schema("List", json!({"type": "array"}));
    let reason = refused(
        Dialect::OpenAiResponses,
        &request("openai-responses:gpt-5.2", list),
    );
    assert!(reason.contains("needs an object at the root"), "{reason}");

    let badly_named = ResponseFormat::json_schema("a forecast", forecast_schema());
    let reason = refused(Dialect::OpenAiChat, &request("openai:gpt-5.2", badly_named));
    assert!(reason.contains("`a forecast`"), "{reason}");

    let not_a_schema = ResponseFormat::json_schema("X", json!("object"));
    refused(
        Dialect::Gemini,
        &request("gemini:gemini-3-pro-preview", not_a_schema),
    );
}

#[test]
fn models_whose_provider_documents_no_structured_output_are_refused() {
    for (dialect, model) in [
        (Dialect::OpenAiChat, "openai:gpt-4o-2024-05-13"),
        (Dialect::OpenAiChat, "openai:gpt-3.5-turbo"),
        (Dialect::OpenAiResponses, "openai-responses:gpt-4-turbo"),
        (Dialect::Anthropic, "anthropic:claude-sonnet-4-20250514"),
        (Dialect::Anthropic, "anthropic:claude-opus-4-1"),
        (Dialect::Anthropic, "anthropic:claude-3-7-sonnet-latest"),
    ] {
        let reason = refused_by_model(dialect, &request(model, forecast()));
        let name = model.split_once(':').unwrap().1;
        assert!(reason.contains(&format!("`{name}`")), "{model}: {reason}");
    }
    // JSON mode is older than Structured Outputs.
    models::validate(&request("openai:gpt-3.5-turbo", ResponseFormat::JsonObject)).unwrap();
    // The models that have it, and servers whose models are whatever they serve.
    for model in [
        "openai:gpt-4o-2024-08-06",
        "openai:gpt-4o-mini",
        "anthropic:claude-haiku-4-5",
        "anthropic:claude-sonnet-4-6",
        "anthropic:claude-opus-4-5-20251101",
        "openai-compat:gpt-3.5-turbo",
    ] {
        models::validate(&request(model, forecast())).unwrap();
    }
}

#[test]
fn gemini_before_3_takes_a_json_response_only_on_a_call_without_tools() {
    let with_tools = request("gemini:gemini-2.5-flash", forecast());
    let reason = refused_by_model(Dialect::Gemini, &with_tools);
    assert!(reason.contains("cannot combine tools"), "{reason}");
    let without = with_tools.with_tools(std::sync::Arc::from(Vec::new()));
    models::validate(&without).unwrap();
    let body = body(Dialect::Gemini, &without);
    assert_eq!(
        body["generationConfig"]["responseMimeType"],
        "application/json"
    );
}

#[test]
fn a_request_without_a_format_renders_as_before() {
    let req = LlmRequest::new("openai:gpt-5.2".parse().unwrap(), vec![Message::user("hi")]);
    for dialect in Dialect::ALL {
        let body = body(dialect, &req);
        for key in ["response_format", "text", "output_config"] {
            assert!(body.get(key).is_none(), "{dialect}: {key}");
        }
        assert!(body.get("generationConfig").is_none(), "{dialect}");
    }
    // An old stored request (no field) still reads.
    let stored = r#"{"model": "openai:gpt-5.2", "messages": [], "options": {"max_tokens": 5}}"#;
    let read: LlmRequest = serde_json::from_str(stored).unwrap();
    assert_eq!(read.options.response_format, None);
}
