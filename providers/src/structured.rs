//! Structured output ([`LlmOptions::response_format`]) on the wire: which dialect and model can
//! give it, and the schema each one is sent.
//!
//! | dialect | sent as |
//! |---|---|
//! | Chat Completions | `response_format: {type: "json_schema", json_schema: {name, schema, strict}}`, or `{type: "json_object"}` |
//! | Responses | `text: {format: {type: "json_schema", name, schema, strict}}`, or `{format: {type: "json_object"}}` |
//! | Anthropic | `output_config: {format: {type: "json_schema", schema}}` (structured outputs, generally available: no beta header) |
//! | Gemini | `generationConfig.responseMimeType: "application/json"` and `responseJsonSchema` (JSON Schema; `responseSchema` takes only the OpenAPI subset) |
//!
//! Anthropic's native `output_config.format` is used rather than a forced tool: it is the
//! documented way, constrains the text answer itself (a forced tool would make every answer a
//! tool call, and the model could then call no other tool), and needs no beta header since it
//! became generally available.
//!
//! A provider that constrains its decoding takes a subset of JSON Schema. The schema is
//! rewritten for it only in ways that keep every answer to the rewritten schema an answer to
//! the caller's (the caller's schema is what the answer is checked against afterwards,
//! `ResponseFormat::check`):
//! - OpenAI, `strict`: every object gets `additionalProperties: false` and all its properties
//!   in `required` (the model then always writes optional fields; schemars gives `Option`
//!   fields a `null` type, so it can write `null`); `oneOf` becomes `anyOf`; `format` on
//!   numbers (schemars' `int32`, `uint64`, `double`) goes (an annotation OpenAI does not know);
//!   `minLength` and `maxLength`, which OpenAI refuses, are left out of what is sent (and
//!   still checked on the answer). To a compatible server (`openai-compat`: llama.cpp, whose
//!   grammar enforces length bounds) they are sent.
//!   An object open to other properties, `allOf`, `not`, `if`/`then`/`else`,
//!   `patternProperties` and a root that is not an object are refused.
//! - Anthropic (always constrained): objects closed as above (`required` left as it is);
//!   numeric and length bounds (`minimum`, `maxLength`, `maxItems`, …), which it does not
//!   take, are left out of what is sent and still checked on the answer; `oneOf` becomes
//!   `anyOf`; `format` on numbers goes. An object open to other properties is refused.
//! - Gemini: sent as it is.
//!
//! [`check_dialect`] runs from [`Dialect::render`] and [`Dialect::encode`], so nothing is sent
//! with its format dropped; [`check_model`] from `models::validate`.
//!
//! [`LlmOptions::response_format`]: motet_directives::LlmOptions::response_format

use motet_directives::{LlmRequest, ResponseFormat, is_valid_schema_name};
use serde_json::{Map, Value, json};

use crate::dialect::Dialect;
use crate::error::ProviderError;

/// Checks that `dialect` can express the response format of `req`.
///
/// # Errors
/// [`ProviderError::UnsupportedResponseFormat`] saying why.
pub(crate) fn check_dialect(dialect: Dialect, req: &LlmRequest) -> Result<(), ProviderError> {
    wire_schema(dialect, req).map(|_| ())
}

/// Checks the response format of `req` against what the provider documents for its model
/// (known models only: an unknown one is let through, the provider decides).
///
/// # Errors
/// [`ProviderError::UnsupportedResponseFormat`] naming the model.
pub(crate) fn check_model(dialect: Dialect, req: &LlmRequest) -> Result<(), ProviderError> {
    let Some(format) = &req.options.response_format else {
        return Ok(());
    };
    let model = req.model.model();
    let is = |prefixes: &[&str]| prefixes.iter().any(|p| model.starts_with(p));
    let schema = matches!(format, ResponseFormat::JsonSchema { .. });
    let reason = match dialect {
        // Structured Outputs came with gpt-4o-2024-08-06 and gpt-4o-mini; the models before
        // have JSON mode only.
        Dialect::OpenAiChat | Dialect::OpenAiResponses
            if req.model.provider() != "openai-compat"
                && schema
                && (model == "gpt-4"
                    || is(&[
                        "gpt-3.5",
                        "gpt-4-",
                        "gpt-4o-2024-05-13",
                        "o1-mini",
                        "o1-preview",
                    ])) =>
        {
            Some(format!(
                "`{model}` has JSON mode only, no JSON Schema (Structured Outputs need gpt-4o-2024-08-06, gpt-4o-mini or later)"
            ))
        }
        // Generally available on Claude Opus 4.5 and later, Sonnet 4.5 and later, Haiku 4.5.
        Dialect::Anthropic
            if model == "claude-opus-4"
                || model == "claude-sonnet-4"
                || is(&[
                    "claude-3",
                    "claude-opus-4-0",
                    "claude-opus-4-1",
                    "claude-opus-4-2025",
                    "claude-sonnet-4-0",
                    "claude-sonnet-4-2025",
                ]) =>
        {
            Some(format!(
                "`{model}` has no structured outputs (Claude Opus 4.5, Sonnet 4.5, Haiku 4.5 and later have)"
            ))
        }
        // Before Gemini 3 the API refuses tools next to a JSON response ("Function calling
        // with a response mime type: 'application/json' is unsupported").
        Dialect::Gemini
            if (!req.tools.is_empty() || !req.options.hosted_tools.is_empty())
                && is(&["gemini-1.", "gemini-2."]) =>
        {
            Some(format!(
                "`{model}` cannot combine tools with a JSON response (Gemini 3 can); ask for the format on a call without tools"
            ))
        }
        _ => None,
    };
    match reason {
        Some(reason) => Err(ProviderError::UnsupportedResponseFormat { dialect, reason }),
        None => Ok(()),
    }
}

/// The format of `req` as Chat Completions' `response_format`.
pub(crate) fn openai_chat(req: &LlmRequest) -> Result<Option<Value>, ProviderError> {
    let Some(format) = &req.options.response_format else {
        return Ok(None);
    };
    Ok(Some(
        match (format, wire_schema(Dialect::OpenAiChat, req)?) {
            (ResponseFormat::JsonSchema { name, strict, .. }, Some(schema)) => json!({
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": strict},
            }),
            _ => json!({"type": "json_object"}),
        },
    ))
}

/// The format of `req` as the Responses API's `text`.
pub(crate) fn openai_responses(req: &LlmRequest) -> Result<Option<Value>, ProviderError> {
    let Some(format) = &req.options.response_format else {
        return Ok(None);
    };
    let format = match (format, wire_schema(Dialect::OpenAiResponses, req)?) {
        (ResponseFormat::JsonSchema { name, strict, .. }, Some(schema)) => json!({
            "type": "json_schema", "name": name, "schema": schema, "strict": strict,
        }),
        _ => json!({"type": "json_object"}),
    };
    Ok(Some(json!({ "format": format })))
}

/// The format of `req` as Anthropic's `output_config`.
pub(crate) fn anthropic(req: &LlmRequest) -> Result<Option<Value>, ProviderError> {
    Ok(wire_schema(Dialect::Anthropic, req)?
        .map(|schema| json!({"format": {"type": "json_schema", "schema": schema}})))
}

/// The format of `req` as Gemini's `responseMimeType` and `responseJsonSchema`.
pub(crate) fn gemini(
    req: &LlmRequest,
) -> Result<Option<(&'static str, Option<Value>)>, ProviderError> {
    if req.options.response_format.is_none() {
        return Ok(None);
    }
    Ok(Some((
        "application/json",
        wire_schema(Dialect::Gemini, req)?,
    )))
}

/// The schema `dialect` is sent for the format of `req` (`None` for no format or JSON mode).
fn wire_schema(dialect: Dialect, req: &LlmRequest) -> Result<Option<Value>, ProviderError> {
    let refuse = |reason: String| ProviderError::UnsupportedResponseFormat { dialect, reason };
    let (name, schema, strict) = match &req.options.response_format {
        None => return Ok(None),
        Some(ResponseFormat::JsonObject) if dialect == Dialect::Anthropic => {
            return Err(refuse(
                "Anthropic has no JSON mode without a schema; ask for a JSON Schema".to_owned(),
            ));
        }
        Some(ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        }) => (name, schema, *strict),
        Some(_) => return Ok(None),
    };
    if !schema.is_object() {
        return Err(refuse(format!(
            "the schema must be a JSON object, not {schema}"
        )));
    }
    let openai = matches!(dialect, Dialect::OpenAiChat | Dialect::OpenAiResponses);
    if openai && !is_valid_schema_name(name) {
        return Err(refuse(format!(
            "the schema name `{name}` is not 1 to 64 letters, digits, `_` or `-`"
        )));
    }
    let mut schema = schema.clone();
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
    }
    let rules = match dialect {
        // Compatible servers (llama.cpp) take the whole schema into their grammar, length
        // bounds included; only OpenAI itself refuses those.
        Dialect::OpenAiChat | Dialect::OpenAiResponses
            if strict && req.model.provider() == "openai-compat" =>
        {
            Rules::CompatStrict
        }
        Dialect::OpenAiChat | Dialect::OpenAiResponses if strict => Rules::OpenAiStrict,
        Dialect::Anthropic => Rules::Anthropic,
        _ => return Ok(Some(schema)),
    };
    if rules != Rules::Anthropic && !is_object_schema(schema.as_object()) {
        return Err(refuse(
            "OpenAI's strict mode needs an object at the root of the schema; wrap the answer in a struct"
                .to_owned(),
        ));
    }
    rules.rewrite(&mut schema, "$").map_err(refuse)?;
    Ok(Some(schema))
}

/// Which constrained-decoding subset a schema is rewritten for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rules {
    /// OpenAI itself, `strict`.
    OpenAiStrict,
    /// A compatible server, `strict`: OpenAI's shape rules, none of its keyword limits.
    CompatStrict,
    Anthropic,
}

/// Keywords whose subschemas are schemas of the same value or its parts.
const SCHEMA_MAPS: [&str; 3] = ["properties", "$defs", "definitions"];
const SCHEMA_LISTS: [&str; 3] = ["anyOf", "oneOf", "prefixItems"];

/// String bounds OpenAI's strict mode does not take ("maxLength is not permitted"); the answer
/// is still checked against them.
const OPENAI_DROPS: [&str; 2] = ["minLength", "maxLength"];

/// Bounds Anthropic does not take; the answer is still checked against them.
const ANTHROPIC_DROPS: [&str; 10] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "minProperties",
    "maxProperties",
];

impl Rules {
    fn name(self) -> &'static str {
        match self {
            Rules::OpenAiStrict | Rules::CompatStrict => "OpenAI's strict mode",
            Rules::Anthropic => "Anthropic's structured outputs",
        }
    }

    /// Rewrites `schema` (at `path` in the whole) for these rules, or says why it cannot be.
    fn rewrite(self, schema: &mut Value, path: &str) -> Result<(), String> {
        let Value::Object(rules) = schema else {
            return Ok(());
        };
        let refused: &[&str] = match self {
            Rules::OpenAiStrict | Rules::CompatStrict => &[
                "allOf",
                "not",
                "if",
                "then",
                "else",
                "patternProperties",
                "dependentRequired",
                "dependentSchemas",
                "unevaluatedProperties",
                "propertyNames",
            ],
            Rules::Anthropic => &["not", "if", "then", "else", "patternProperties"],
        };
        if let Some(keyword) = refused.iter().find(|k| rules.contains_key(**k)) {
            return Err(format!(
                "{} does not take `{keyword}` (at {path})",
                self.name()
            ));
        }
        if let Some(one_of) = rules.remove("oneOf") {
            rules.insert("anyOf".into(), one_of);
        }
        if !matches!(rules.get("type").and_then(Value::as_str), Some("string")) {
            rules.remove("format");
        }
        if self == Rules::OpenAiStrict {
            for keyword in OPENAI_DROPS {
                rules.remove(keyword);
            }
        }
        if self == Rules::Anthropic {
            for keyword in ANTHROPIC_DROPS {
                rules.remove(keyword);
            }
            if rules
                .get("minItems")
                .and_then(Value::as_u64)
                .is_some_and(|n| n > 1)
            {
                rules.remove("minItems");
            }
        }
        if is_object_schema(Some(rules)) {
            match rules.get("additionalProperties") {
                None | Some(Value::Bool(false)) => {}
                Some(_) => {
                    return Err(format!(
                        "{} needs every object closed, and the object at {path} takes properties it does not name (`additionalProperties`); send it with strict off (OpenAI) or name them",
                        self.name()
                    ));
                }
            }
            rules.insert("additionalProperties".into(), Value::Bool(false));
            if self != Rules::Anthropic {
                let names: Vec<Value> = rules
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().map(Value::String).collect())
                    .unwrap_or_default();
                rules.insert("required".into(), Value::Array(names));
            }
        }
        self.rewrite_children(rules, path)
    }

    fn rewrite_children(self, rules: &mut Map<String, Value>, path: &str) -> Result<(), String> {
        for key in SCHEMA_MAPS {
            if let Some(Value::Object(children)) = rules.get_mut(key) {
                for (name, child) in children.iter_mut() {
                    self.rewrite(child, &format!("{path}.{key}.{name}"))?;
                }
            }
        }
        for key in SCHEMA_LISTS {
            if let Some(Value::Array(children)) = rules.get_mut(key) {
                for (i, child) in children.iter_mut().enumerate() {
                    self.rewrite(child, &format!("{path}.{key}[{i}]"))?;
                }
            }
        }
        if let Some(items) = rules.get_mut("items") {
            self.rewrite(items, &format!("{path}.items"))?;
        }
        Ok(())
    }
}

/// Whether a schema describes objects: `type: "object"` (alone or among others) or properties.
fn is_object_schema(rules: Option<&Map<String, Value>>) -> bool {
    let Some(rules) = rules else { return false };
    let typed = match rules.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => false,
    };
    typed || rules.contains_key("properties")
}
