//! A JSON Schema validator for the keywords the parent module lists: pure, first failure
//! wins, every failure named by its place in the answer.

use serde_json::{Map, Value};

/// How deep `$ref`s may nest without the answer getting deeper: a schema that refers to
/// itself without consuming anything (`{"$ref": "#"}`) stops here instead of overflowing
/// the stack.
const MAX_REF_DEPTH: usize = 64;

/// Why validation stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Failure {
    /// The answer breaks the schema at `path`.
    Mismatch { path: String, message: String },
    /// The schema cannot be applied.
    Schema(String),
}

/// Checks `value` against `schema` (the root, against which `$ref`s resolve).
pub(super) fn validate(schema: &Value, value: &Value) -> Result<(), Failure> {
    Validator { root: schema }.check(schema, value, &mut "$".to_owned(), 0)
}

/// The JSON type of `value`, with its article, for messages.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if is_integer(n) => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

struct Validator<'a> {
    root: &'a Value,
}

fn mismatch(path: &str, message: impl Into<String>) -> Failure {
    Failure::Mismatch {
        path: path.to_owned(),
        message: message.into(),
    }
}

impl<'a> Validator<'a> {
    fn check(
        &self,
        schema: &'a Value,
        value: &Value,
        path: &mut String,
        refs: usize,
    ) -> Result<(), Failure> {
        let rules = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return Err(mismatch(path, "no value is allowed here")),
            Value::Object(rules) => rules,
            _ => {
                return Err(Failure::Schema(format!(
                    "the schema at {path} is not an object"
                )));
            }
        };
        if let Some(reference) = rules.get("$ref").and_then(Value::as_str) {
            if refs >= MAX_REF_DEPTH {
                return Err(Failure::Schema(format!(
                    "`$ref`s nest deeper than {MAX_REF_DEPTH} at {path}"
                )));
            }
            let target = self.resolve(reference)?;
            self.check(target, value, path, refs + 1)?;
        }
        self.check_type(rules, value, path)?;
        if let Some(allowed) = rules.get("enum").and_then(Value::as_array)
            && !allowed.iter().any(|a| same(a, value))
        {
            return Err(mismatch(
                path,
                format!("{value} is not one of {}", Value::from(allowed.clone())),
            ));
        }
        if let Some(constant) = rules.get("const")
            && !same(constant, value)
        {
            return Err(mismatch(
                path,
                format!("expected {constant}, found {value}"),
            ));
        }
        match value {
            Value::Object(object) => self.check_object(rules, object, path, refs)?,
            Value::Array(items) => self.check_array(rules, items, path, refs)?,
            Value::Number(n) => check_number(rules, n, path)?,
            Value::String(s) => check_string(rules, s, path)?,
            _ => {}
        }
        self.check_combinators(rules, value, path, refs)
    }

    /// The schema a local `$ref` points to: `#` or a JSON pointer under it.
    fn resolve(&self, reference: &str) -> Result<&'a Value, Failure> {
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| Failure::Schema(format!("`$ref` `{reference}` is not local")))?;
        self.root
            .pointer(pointer)
            .ok_or_else(|| Failure::Schema(format!("`$ref` `{reference}` points nowhere")))
    }

    fn check_type(
        &self,
        rules: &Map<String, Value>,
        value: &Value,
        path: &str,
    ) -> Result<(), Failure> {
        let names: Vec<&str> = match rules.get("type") {
            None => return Ok(()),
            Some(Value::String(name)) => vec![name.as_str()],
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            Some(other) => return Err(Failure::Schema(format!("`type` {other} at {path}"))),
        };
        let fits = |name: &str| match (name, value) {
            ("null", Value::Null)
            | ("boolean", Value::Bool(_))
            | ("number", Value::Number(_))
            | ("string", Value::String(_))
            | ("array", Value::Array(_))
            | ("object", Value::Object(_)) => true,
            ("integer", Value::Number(n)) => is_integer(n),
            _ => false,
        };
        if names.iter().any(|name| fits(name)) {
            return Ok(());
        }
        Err(mismatch(
            path,
            format!("expected {}, found {}", names.join(" or "), kind(value)),
        ))
    }

    fn check_object(
        &self,
        rules: &'a Map<String, Value>,
        object: &Map<String, Value>,
        path: &mut String,
        refs: usize,
    ) -> Result<(), Failure> {
        if let Some(required) = rules.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    return Err(mismatch(
                        path,
                        format!("missing required property `{name}`"),
                    ));
                }
            }
        }
        let count = |key: &str| rules.get(key).and_then(Value::as_u64);
        if let Some(min) = count("minProperties")
            && (object.len() as u64) < min
        {
            return Err(mismatch(path, format!("fewer than {min} properties")));
        }
        if let Some(max) = count("maxProperties")
            && (object.len() as u64) > max
        {
            return Err(mismatch(path, format!("more than {max} properties")));
        }
        let properties = rules.get("properties").and_then(Value::as_object);
        let additional = rules.get("additionalProperties");
        for (name, item) in object {
            let declared = properties.and_then(|p| p.get(name));
            let schema = match (declared, additional) {
                (Some(schema), _) => schema,
                (None, Some(Value::Bool(false))) => {
                    return Err(mismatch(path, format!("property `{name}` is not allowed")));
                }
                (None, Some(schema)) => schema,
                (None, None) => continue,
            };
            let len = path.len();
            push_field(path, name);
            self.check(schema, item, path, refs)?;
            path.truncate(len);
        }
        Ok(())
    }

    fn check_array(
        &self,
        rules: &'a Map<String, Value>,
        items: &[Value],
        path: &mut String,
        refs: usize,
    ) -> Result<(), Failure> {
        let count = |key: &str| rules.get(key).and_then(Value::as_u64);
        if let Some(min) = count("minItems")
            && (items.len() as u64) < min
        {
            return Err(mismatch(path, format!("fewer than {min} items")));
        }
        if let Some(max) = count("maxItems")
            && (items.len() as u64) > max
        {
            return Err(mismatch(path, format!("more than {max} items")));
        }
        if rules.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (i, item) in items.iter().enumerate() {
                if items[..i].iter().any(|earlier| same(earlier, item)) {
                    return Err(mismatch(path, format!("item {i} repeats an earlier item")));
                }
            }
        }
        let prefix = rules
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (i, item) in items.iter().enumerate() {
            let schema = match prefix.get(i) {
                Some(schema) => schema,
                None => match rules.get("items") {
                    Some(schema) => schema,
                    None => continue,
                },
            };
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            self.check(schema, item, path, refs)?;
            path.truncate(len);
        }
        Ok(())
    }

    /// [`Validator::check`] for a shape that may fail without failing the whole: the path is
    /// back as it was afterwards, whatever the outcome.
    fn attempt(
        &self,
        schema: &'a Value,
        value: &Value,
        path: &mut String,
        refs: usize,
    ) -> Result<(), Failure> {
        let len = path.len();
        let outcome = self.check(schema, value, path, refs);
        path.truncate(len);
        outcome
    }

    fn check_combinators(
        &self,
        rules: &'a Map<String, Value>,
        value: &Value,
        path: &mut String,
        refs: usize,
    ) -> Result<(), Failure> {
        let list = |key: &str| rules.get(key).and_then(Value::as_array);
        if let Some(all) = list("allOf") {
            for schema in all {
                self.check(schema, value, path, refs)?;
            }
        }
        if let Some(any) = list("anyOf") {
            let mut first = None;
            for schema in any {
                match self.attempt(schema, value, path, refs) {
                    Ok(()) => {
                        first = None;
                        break;
                    }
                    Err(failure @ Failure::Schema(_)) => return Err(failure),
                    Err(failure) => {
                        first.get_or_insert(failure);
                    }
                }
            }
            if let Some(Failure::Mismatch { path: at, message }) = first {
                return Err(mismatch(
                    path,
                    format!(
                        "matches none of the {} allowed shapes (the first fails at {at}: {message})",
                        any.len()
                    ),
                ));
            }
        }
        if let Some(one) = list("oneOf") {
            let mut matched = 0;
            for schema in one {
                match self.attempt(schema, value, path, refs) {
                    Ok(()) => matched += 1,
                    Err(failure @ Failure::Schema(_)) => return Err(failure),
                    Err(_) => {}
                }
            }
            if matched != 1 {
                return Err(mismatch(
                    path,
                    format!(
                        "matches {matched} of the {} shapes where exactly one must match",
                        one.len()
                    ),
                ));
            }
        }
        if let Some(not) = rules.get("not")
            && self.attempt(not, value, path, refs).is_ok()
        {
            return Err(mismatch(path, "matches a shape that is not allowed"));
        }
        Ok(())
    }
}

fn check_number(
    rules: &Map<String, Value>,
    n: &serde_json::Number,
    path: &str,
) -> Result<(), Failure> {
    let Some(x) = n.as_f64() else { return Ok(()) };
    let bound = |key: &str| rules.get(key).and_then(Value::as_f64);
    if let Some(min) = bound("minimum")
        && x < min
    {
        return Err(mismatch(
            path,
            format!("{n} is less than the minimum {min}"),
        ));
    }
    if let Some(max) = bound("maximum")
        && x > max
    {
        return Err(mismatch(
            path,
            format!("{n} is more than the maximum {max}"),
        ));
    }
    if let Some(min) = bound("exclusiveMinimum")
        && x <= min
    {
        return Err(mismatch(path, format!("{n} is not more than {min}")));
    }
    if let Some(max) = bound("exclusiveMaximum")
        && x >= max
    {
        return Err(mismatch(path, format!("{n} is not less than {max}")));
    }
    if let Some(step) = bound("multipleOf").filter(|s| *s > 0.0) {
        let ratio = x / step;
        if (ratio - ratio.round()).abs() > 1e-9 {
            return Err(mismatch(path, format!("{n} is not a multiple of {step}")));
        }
    }
    Ok(())
}

fn check_string(rules: &Map<String, Value>, s: &str, path: &str) -> Result<(), Failure> {
    let count = |key: &str| rules.get(key).and_then(Value::as_u64);
    let chars = s.chars().count() as u64;
    if let Some(min) = count("minLength")
        && chars < min
    {
        return Err(mismatch(path, format!("shorter than {min} characters")));
    }
    if let Some(max) = count("maxLength")
        && chars > max
    {
        return Err(mismatch(path, format!("longer than {max} characters")));
    }
    Ok(())
}

/// JSON equality, numbers by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// `$.name`, or `$["odd name"]` for a name that is not an identifier.
fn push_field(path: &mut String, name: &str) {
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        path.push('.');
        path.push_str(name);
    } else {
        path.push_str(&format!("[{}]", Value::from(name)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fails(schema: Value, value: Value) -> String {
        match validate(&schema, &value) {
            Err(Failure::Mismatch { path, message }) => format!("{path}: {message}"),
            Err(Failure::Schema(message)) => format!("schema: {message}"),
            Ok(()) => "ok".to_owned(),
        }
    }

    #[test]
    fn each_keyword_can_fail_and_pass() {
        let cases = [
            (
                json!({"type": "integer"}),
                json!(1.5),
                "$: expected integer, found a number",
            ),
            (json!({"type": "integer"}), json!(2.0), "ok"),
            (json!({"type": ["string", "null"]}), json!(null), "ok"),
            (
                json!({"enum": ["a", "b"]}),
                json!("c"),
                r#"$: "c" is not one of ["a","b"]"#,
            ),
            (json!({"const": 1}), json!(1.0), "ok"),
            (
                json!({"properties": {"a": {"type": "string"}}, "additionalProperties": false}),
                json!({"a": "x", "b": 1}),
                "$: property `b` is not allowed",
            ),
            (
                json!({"additionalProperties": {"type": "integer"}}),
                json!({"odd key": "x"}),
                r#"$["odd key"]: expected integer, found a string"#,
            ),
            (
                json!({"items": {"minimum": 0}}),
                json!([1, -1]),
                "$[1]: -1 is less than the minimum 0",
            ),
            (
                json!({"prefixItems": [{"type": "string"}], "items": false}),
                json!(["a", 1]),
                "$[1]: no value is allowed here",
            ),
            (json!({"minItems": 2}), json!([1]), "$: fewer than 2 items"),
            (
                json!({"uniqueItems": true}),
                json!([1, 1.0]),
                "$: item 1 repeats an earlier item",
            ),
            (
                json!({"maxLength": 2}),
                json!("été"),
                "$: longer than 2 characters",
            ),
            (
                json!({"exclusiveMaximum": 3}),
                json!(3),
                "$: 3 is not less than 3",
            ),
            (json!({"multipleOf": 0.5}), json!(1.5), "ok"),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                json!(null),
                "ok",
            ),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                json!(3),
                "$: matches none of the 2 allowed shapes (the first fails at $: expected string, found an integer)",
            ),
            (
                json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}),
                json!(3),
                "$: matches 2 of the 2 shapes where exactly one must match",
            ),
            (
                json!({"not": {"type": "null"}}),
                json!(null),
                "$: matches a shape that is not allowed",
            ),
            (
                json!({"allOf": [{"required": ["a"]}, {"required": ["b"]}]}),
                json!({"a": 1}),
                "$: missing required property `b`",
            ),
        ];
        for (schema, value, expected) in cases {
            assert_eq!(
                fails(schema.clone(), value.clone()),
                expected,
                "{schema} / {value}"
            );
        }
    }

    #[test]
    fn refs_resolve_locally_and_stop_when_they_loop() {
        let schema = json!({
            "type": "object",
            "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
                           "tag": {"$ref": "#/$defs/Tag"}},
            "required": ["next"],
            "$defs": {"Tag": {"enum": ["a"]}}
        });
        assert_eq!(
            fails(schema.clone(), json!({"next": {"next": null, "tag": "a"}})),
            "ok"
        );
        assert_eq!(
            fails(schema.clone(), json!({"next": {"next": null, "tag": "b"}})),
            r#"$.next: matches none of the 2 allowed shapes (the first fails at $.next.tag: "b" is not one of ["a"])"#
        );
        assert_eq!(
            fails(json!({"$ref": "#/$defs/Nope"}), json!(1)),
            "schema: `$ref` `#/$defs/Nope` points nowhere"
        );
        assert_eq!(
            fails(json!({"$ref": "#"}), json!(1)),
            "schema: `$ref`s nest deeper than 64 at $"
        );
        assert_eq!(
            fails(json!({"$ref": "http://x/y"}), json!(1)),
            "schema: `$ref` `http://x/y` is not local"
        );
    }
}
