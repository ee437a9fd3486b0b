//! Structured output: the shape an LLM's answer must have ([`ResponseFormat`]), and the check
//! that an answer has it ([`ResponseFormat::check`], [`ResponseFormat::decode`]).
//!
//! A format travels in [`LlmOptions::response_format`](crate::LlmOptions::response_format);
//! each provider dialect renders it in its own wire shape (and refuses, before sending, what
//! it cannot express). The schema stays the caller's full schema: what a provider's
//! constrained decoding cannot express (OpenAI's strict subset, Anthropic's missing numeric
//! bounds) is relaxed on the wire by the providers crate, never here, and the answer is
//! still checked here against the full schema.
//!
//! The check is a JSON Schema validator for the keywords schema generators (schemars) and
//! the providers use: `type`, `enum`, `const`, `properties`, `required`,
//! `additionalProperties`, `items`, `prefixItems`, `minItems`, `maxItems`, `uniqueItems`,
//! `minProperties`, `maxProperties`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `multipleOf`, `minLength`, `maxLength`, `anyOf`, `oneOf`, `allOf`,
//! `not`, and local `$ref`s (`#`, `#/$defs/…`, `#/definitions/…`). Annotations (`title`,
//! `description`, `format`, `default`, …) are not assertions and are not checked; neither is
//! `pattern` (the pure crates carry no regex engine; a provider that constrains its decoding
//! enforces it).

mod validate;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The shape an LLM's answer must have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResponseFormat {
    /// JSON that matches `schema`.
    JsonSchema {
        /// A name for the schema (OpenAI requires one: letters, digits, `_` and `-`, at most
        /// 64 characters).
        name: String,
        /// The JSON Schema (draft 2020-12) the answer must match.
        schema: Value,
        /// Ask the provider to constrain its decoding to the schema (OpenAI's `strict`).
        /// Anthropic and Gemini always constrain; llama.cpp always compiles the schema into a
        /// grammar. With `strict`, OpenAI needs every object closed and every property
        /// required; the providers crate closes them and makes the properties required (an
        /// answer to the tighter schema still matches this one), and refuses, before
        /// anything is sent, a schema it cannot tighten that way.
        strict: bool,
    },
    /// Any JSON object (OpenAI's and Gemini's JSON mode); no schema.
    JsonObject,
}

/// The longest schema name OpenAI takes.
const MAX_NAME: usize = 64;

impl ResponseFormat {
    /// A strict JSON Schema format named `name`.
    pub fn json_schema(name: impl Into<String>, schema: Value) -> Self {
        Self::JsonSchema {
            name: name.into(),
            schema,
            strict: true,
        }
    }

    /// The strict JSON Schema format of `T`, from its [`schemars::JsonSchema`] derive: its
    /// definitions under `$defs`, the `$schema` marker left out (some providers refuse
    /// keywords they do not know), named after the type (with anything OpenAI does not take
    /// in a name replaced by `_`). An integer field gets its Rust type's range as `minimum`
    /// and `maximum` (schemars gives `i32` only `format: "int32"`, an annotation), so a
    /// number that would not fit is a schema mismatch the model can be told about, and a
    /// provider that constrains its decoding keeps it in range.
    pub fn for_type<T: schemars::JsonSchema>() -> Self {
        let root = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
        let mut schema = root.to_value();
        if let Value::Object(map) = &mut schema {
            map.remove("$schema");
        }
        bound_integers(&mut schema);
        Self::json_schema(schema_name(&T::schema_name()), schema)
    }

    /// The same format with `strict` set to `strict` (no change for [`ResponseFormat::JsonObject`]).
    pub fn with_strict(self, strict: bool) -> Self {
        match self {
            Self::JsonSchema { name, schema, .. } => Self::JsonSchema {
                name,
                schema,
                strict,
            },
            other => other,
        }
    }

    /// The schema, for [`ResponseFormat::JsonSchema`].
    pub fn schema(&self) -> Option<&Value> {
        match self {
            Self::JsonSchema { schema, .. } => Some(schema),
            Self::JsonObject => None,
        }
    }

    /// Checks that `answer` (an LLM's text) is JSON of this format, and returns it parsed.
    /// White space around the JSON is allowed; anything else around it (a code fence, a
    /// sentence) is not.
    ///
    /// # Errors
    /// [`AnswerError::NotJson`] when the text is not one JSON value,
    /// [`AnswerError::Mismatch`] naming the first place where it breaks the schema (or, for
    /// [`ResponseFormat::JsonObject`], that it is not an object), [`AnswerError::Schema`] when
    /// the schema itself cannot be applied (a `$ref` to nowhere),
    /// [`AnswerError::TooCostly`] when checking would take more than
    /// [`ResponseFormat::CHECK_STEP_BUDGET`] steps.
    pub fn check(&self, answer: &str) -> Result<Value, AnswerError> {
        self.check_within(answer, Self::CHECK_STEP_BUDGET)
    }

    /// The steps [`ResponseFormat::check`] takes at most: one per schema applied to a node of
    /// the answer, one per `enum` entry compared, one per pair of items `uniqueItems`
    /// compares. Each `$ref` target is applied to a node once and its outcome remembered, so a
    /// schema's cost grows with its size times the answer's, never exponentially; a realistic
    /// answer takes tens of thousands of steps, and a million about half a second at worst (a
    /// million failing `anyOf` branches, optimised build).
    pub const CHECK_STEP_BUDGET: u64 = validate::STEP_BUDGET;

    /// [`ResponseFormat::check`] in at most `budget` steps (see
    /// [`ResponseFormat::CHECK_STEP_BUDGET`]).
    ///
    /// # Errors
    /// As [`ResponseFormat::check`], with [`AnswerError::TooCostly`] past `budget` steps.
    pub fn check_within(&self, answer: &str, budget: u64) -> Result<Value, AnswerError> {
        let value: Value =
            serde_json::from_str(answer.trim()).map_err(|e| AnswerError::NotJson {
                message: e.to_string(),
            })?;
        match self {
            Self::JsonSchema { schema, .. } => validate::validate(schema, &value, budget)?,
            Self::JsonObject if !value.is_object() => {
                return Err(AnswerError::Mismatch {
                    path: "$".to_owned(),
                    message: format!("expected an object, found {}", validate::kind(&value)),
                });
            }
            Self::JsonObject => {}
        }
        Ok(value)
    }

    /// Checks `answer` (see [`ResponseFormat::check`]) and decodes it into `T`.
    ///
    /// # Errors
    /// As [`ResponseFormat::check`], and [`AnswerError::Decode`] when the JSON matches the
    /// schema but not `T` (a number too large for its field, a schema that is not `T`'s).
    pub fn decode<T: DeserializeOwned>(&self, answer: &str) -> Result<T, AnswerError> {
        let value = self.check(answer)?;
        serde_json::from_value(value).map_err(|e| AnswerError::Decode {
            message: e.to_string(),
        })
    }
}

/// Adds the range of schemars' integer formats (`int8` … `uint64`) as `minimum` and `maximum`
/// wherever they are not bounded tighter already, through every subschema.
fn bound_integers(schema: &mut Value) {
    match schema {
        Value::Object(rules) => {
            let range = match rules.get("format").and_then(Value::as_str) {
                Some("int8") => Some((i64::from(i8::MIN).into(), i8::MAX.into())),
                Some("int16") => Some((i64::from(i16::MIN).into(), i16::MAX.into())),
                Some("int32") => Some((i64::from(i32::MIN).into(), i32::MAX.into())),
                Some("int64") => Some((i64::MIN.into(), i64::MAX.into())),
                Some("uint8") => Some((0.into(), u8::MAX.into())),
                Some("uint16") => Some((0.into(), u16::MAX.into())),
                Some("uint32") => Some((0.into(), u32::MAX.into())),
                Some("uint64") => Some((0.into(), u64::MAX.into())),
                _ => None,
            };
            if let Some((min, max)) = range {
                let (min, max): (Value, Value) = (min, max);
                rules.entry("minimum").or_insert(min);
                rules.entry("maximum").or_insert(max);
            }
            rules.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// A schema name OpenAI takes: letters, digits, `_` and `-`, 1 to 64 of them.
fn schema_name(type_name: &str) -> String {
    let name: String = type_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect();
    match name.is_empty() {
        true => "response".to_owned(),
        false => name,
    }
}

/// Whether `name` is a schema name OpenAI takes.
pub fn is_valid_schema_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Why an answer is not of the format asked for. Its message is written to be read by the
/// model too: ReAct sends it back when it asks again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// The answer is not one JSON value.
    #[error("the answer is not JSON: {message}")]
    NotJson {
        /// The parser's message (line and column included).
        message: String,
    },
    /// The answer is JSON that breaks the schema.
    #[error("the answer does not match the schema at {path}: {message}")]
    Mismatch {
        /// Where, as `$`, `$.field`, `$.list[2]`.
        path: String,
        /// What is wrong there.
        message: String,
    },
    /// The answer matches the schema but does not decode into the type asked for.
    #[error("the answer does not decode: {message}")]
    Decode {
        /// serde's message.
        message: String,
    },
    /// The schema cannot be applied (a `$ref` that points nowhere, a `$ref` loop that goes no
    /// deeper into the answer).
    #[error("the schema cannot be applied: {message}")]
    Schema {
        /// What is wrong with it.
        message: String,
    },
    /// Checking the answer against the schema would take more than `budget` steps (see
    /// [`ResponseFormat::CHECK_STEP_BUDGET`]): the schema is too costly to check.
    #[error("the schema is too costly to check: more than {budget} steps")]
    TooCostly {
        /// The steps allowed.
        budget: u64,
    },
}

impl From<validate::Failure> for AnswerError {
    fn from(failure: validate::Failure) -> Self {
        match failure {
            validate::Failure::Mismatch { path, message } => Self::Mismatch { path, message },
            validate::Failure::Schema(message) => Self::Schema { message },
            validate::Failure::TooCostly { budget } => Self::TooCostly { budget },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
    struct Point {
        x: i32,
        y: i32,
        label: Option<String>,
    }

    #[test]
    fn a_format_round_trips_through_serde() {
        let format = ResponseFormat::for_type::<Point>();
        let text = serde_json::to_string(&format).unwrap();
        assert!(
            text.starts_with(r#"{"type":"json_schema","name":"Point""#),
            "{text}"
        );
        assert_eq!(
            serde_json::from_str::<ResponseFormat>(&text).unwrap(),
            format
        );
        let object = serde_json::to_value(ResponseFormat::JsonObject).unwrap();
        assert_eq!(object, json!({"type": "json_object"}));
    }

    #[test]
    fn for_type_drops_the_schema_marker_and_keeps_the_shape() {
        let format = ResponseFormat::for_type::<Point>();
        let schema = format.schema().unwrap();
        assert!(schema.get("$schema").is_none());
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["x", "y"]));
        // An i32 carries its range.
        assert_eq!(schema["properties"]["x"]["minimum"], i32::MIN);
        assert_eq!(schema["properties"]["x"]["maximum"], i32::MAX);
    }

    #[test]
    fn decode_checks_then_decodes() {
        let format = ResponseFormat::for_type::<Point>();
        assert_eq!(
            format.decode::<Point>(" {\"x\": 1, \"y\": 2}\n").unwrap(),
            Point {
                x: 1,
                y: 2,
                label: None
            }
        );
        assert!(matches!(
            format.decode::<Point>("```json\n{\"x\": 1, \"y\": 2}\n```"),
            Err(AnswerError::NotJson { .. })
        ));
        assert_eq!(
            format.decode::<Point>(r#"{"x": 1}"#),
            Err(AnswerError::Mismatch {
                path: "$".into(),
                message: "missing required property `y`".into()
            })
        );
        // Out of an i32's range: a mismatch the model can be told about.
        assert_eq!(
            format
                .decode::<Point>(r#"{"x": 1, "y": 99999999999}"#)
                .unwrap_err()
                .to_string(),
            "the answer does not match the schema at $.y: 99999999999 is more than the maximum 2147483647"
        );
        // Matches the schema, is not a Point.
        let other = ResponseFormat::json_schema("Any", json!({"type": "object"}));
        assert!(matches!(
            other.decode::<Point>(r#"{"x": "one"}"#),
            Err(AnswerError::Decode { .. })
        ));
    }

    #[test]
    fn json_object_wants_an_object() {
        let format = ResponseFormat::JsonObject;
        assert_eq!(format.check(r#"{"a": 1}"#).unwrap(), json!({"a": 1}));
        assert_eq!(
            format.check("[1]").unwrap_err().to_string(),
            "the answer does not match the schema at $: expected an object, found an array"
        );
    }

    #[test]
    fn type_names_become_schema_names() {
        assert_eq!(schema_name("Wrapper<Point>"), "Wrapper_Point_");
        assert_eq!(schema_name(""), "response");
        assert_eq!(schema_name(&"a".repeat(100)).len(), 64);
        assert!(is_valid_schema_name("Point_2-d"));
        assert!(!is_valid_schema_name("a b") && !is_valid_schema_name(""));
    }
}
