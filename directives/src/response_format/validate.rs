//! A JSON Schema validator for the keywords the parent module lists: pure, first failure
//! wins, every failure named by its place in the answer.
//!
//! Bounded whatever the schema: each `$ref` target applied to a node of the answer is
//! worked out once and remembered (an `anyOf` of `$ref`s per level would otherwise explore
//! every path through the levels: 3^63 for 63 levels of three), every step counts against a
//! budget, `$ref`s followed in a row on one node of the answer are bounded (a loop that
//! consumes nothing), and so is the nesting of the checks (the stack).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

/// The steps a check takes at most by default: one per schema applied to a node of the
/// answer (a remembered `$ref` outcome included), one per `enum` entry compared, one per pair
/// of items `uniqueItems` compares. A realistic answer (thousands of nodes, a schemars schema
/// with `anyOf`s a few wide) takes tens of thousands; a million is about half a second of
/// work at worst (each a failing `anyOf` branch, optimised build: 0.46 s).
pub(super) const STEP_BUDGET: u64 = 1_000_000;

/// `$ref`s followed in a row on one node of the answer, at most: a schema that refers to
/// itself without consuming anything (`{"$ref": "#"}`) stops here. The count starts again
/// at each property or item, so a recursive schema is followed as deep as its answer goes.
const MAX_REF_CHAIN: usize = 64;

/// Schemas applied inside one another, at most (each property or item, `$ref`, combinator
/// branch is one more): the bound that keeps the check within the stack, about 0.35 MiB of it
/// optimised (2 MiB unoptimised). This, not the answer's depth, is what is bounded: an answer
/// nests at most 128 levels (serde_json's parser stops there), each usually three applications
/// deep (a property, its `anyOf`, the `$ref`), 384 in all.
const MAX_NESTING: usize = 512;

/// Why validation stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Failure {
    /// The answer breaks the schema at `path`.
    Mismatch { path: String, message: String },
    /// The schema cannot be applied.
    Schema(String),
    /// Checking takes more than `budget` steps.
    TooCostly { budget: u64 },
}

impl Failure {
    /// Ends the whole check, whatever combinator it arose under: it says nothing about whether
    /// one shape matches.
    fn is_fatal(&self) -> bool {
        !matches!(self, Self::Mismatch { .. })
    }
}

/// Checks `value` against `schema` (the root, against which `$ref`s resolve) in at most
/// `budget` steps.
pub(super) fn validate(schema: &Value, value: &Value, budget: u64) -> Result<(), Failure> {
    let mut validator = Validator {
        root: schema,
        budget,
        steps: 0,
        nesting: 0,
        seen: HashMap::new(),
    };
    validator.check(schema, value, &mut "$".to_owned(), 0)
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

/// A `$ref` target applied to a node of the answer, by address (both live as long as the
/// check): the same pair always has the same outcome, its path included, since a node's
/// path is where it sits in the answer.
type Seen = HashMap<(*const Value, *const Value), Result<(), Failure>>;

struct Validator<'a> {
    root: &'a Value,
    budget: u64,
    steps: u64,
    /// Checks inside one another right now.
    nesting: usize,
    /// Outcomes of `$ref` targets on nodes of the answer, fatal ones excepted (they end the
    /// check).
    seen: Seen,
}

fn mismatch(path: &str, message: impl Into<String>) -> Failure {
    Failure::Mismatch {
        path: path.to_owned(),
        message: message.into(),
    }
}

// The failures the recursive functions build go through these two, out of line: a `format!`
// in a recursive function's body reserves its temporaries in every frame of the recursion.

#[cold]
#[inline(never)]
fn mismatch_of(path: &str, message: std::fmt::Arguments<'_>) -> Failure {
    mismatch(path, message.to_string())
}

#[cold]
#[inline(never)]
fn schema_error(message: std::fmt::Arguments<'_>) -> Failure {
    Failure::Schema(message.to_string())
}

impl<'a> Validator<'a> {
    /// Counts `n` steps against the budget.
    fn charge(&mut self, n: u64) -> Result<(), Failure> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.budget {
            return Err(Failure::TooCostly {
                budget: self.budget,
            });
        }
        Ok(())
    }

    /// Applies `schema` to `value`, at `path` in the answer; `chain` counts the `$ref`s just
    /// followed on this same node.
    fn check(
        &mut self,
        schema: &'a Value,
        value: &Value,
        path: &mut String,
        chain: usize,
    ) -> Result<(), Failure> {
        self.charge(1)?;
        if self.nesting >= MAX_NESTING {
            return Err(schema_error(format_args!(
                "checking nests deeper than {MAX_NESTING} schemas at {path}"
            )));
        }
        self.nesting += 1;
        let outcome = self.apply(schema, value, path, chain);
        self.nesting -= 1;
        outcome
    }

    fn apply(
        &mut self,
        schema: &'a Value,
        value: &Value,
        path: &mut String,
        chain: usize,
    ) -> Result<(), Failure> {
        let rules = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return Err(mismatch(path, "no value is allowed here")),
            Value::Object(rules) => rules,
            _ => {
                return Err(schema_error(format_args!(
                    "the schema at {path} is not an object"
                )));
            }
        };
        if let Some(reference) = rules.get("$ref").and_then(Value::as_str) {
            self.follow(reference, value, path, chain)?;
        }
        self.check_type(rules, value, path)?;
        if let Some(allowed) = rules.get("enum").and_then(Value::as_array) {
            self.charge(allowed.len() as u64)?;
        }
        if let Some(allowed) = rules.get("enum").and_then(Value::as_array)
            && !allowed.iter().any(|a| same(a, value))
        {
            return Err(mismatch_of(
                path,
                format_args!("{value} is not one of {}", Value::from(allowed.clone())),
            ));
        }
        if let Some(constant) = rules.get("const")
            && !same(constant, value)
        {
            return Err(mismatch_of(
                path,
                format_args!("expected {constant}, found {value}"),
            ));
        }
        match value {
            Value::Object(object) => self.check_object(rules, object, path)?,
            Value::Array(items) => self.check_array(rules, items, path)?,
            Value::Number(n) => check_number(rules, n, path)?,
            Value::String(s) => check_string(rules, s, path)?,
            _ => {}
        }
        self.check_combinators(rules, value, path, chain)
    }

    /// Applies the target of `$ref` `reference` to `value`, once per pair: a second time, the
    /// remembered outcome.
    fn follow(
        &mut self,
        reference: &str,
        value: &Value,
        path: &mut String,
        chain: usize,
    ) -> Result<(), Failure> {
        if chain >= MAX_REF_CHAIN {
            return Err(schema_error(format_args!(
                "more than {MAX_REF_CHAIN} `$ref`s in a row at {path} without going deeper into the answer (a `$ref` loop?)"
            )));
        }
        let target = self.resolve(reference)?;
        let key = (std::ptr::from_ref(target), std::ptr::from_ref(value));
        if let Some(outcome) = self.seen.get(&key) {
            return outcome.clone();
        }
        let len = path.len();
        let outcome = self.check(target, value, path, chain + 1);
        path.truncate(len);
        match &outcome {
            Err(failure) if failure.is_fatal() => {}
            _ => {
                self.seen.insert(key, outcome.clone());
            }
        }
        outcome
    }

    /// The schema a local `$ref` points to: `#` or a JSON pointer under it.
    fn resolve(&self, reference: &str) -> Result<&'a Value, Failure> {
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| schema_error(format_args!("`$ref` `{reference}` is not local")))?;
        self.root
            .pointer(pointer)
            .ok_or_else(|| schema_error(format_args!("`$ref` `{reference}` points nowhere")))
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
            Some(other) => return Err(schema_error(format_args!("`type` {other} at {path}"))),
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
        Err(mismatch_of(
            path,
            format_args!("expected {}, found {}", names.join(" or "), kind(value)),
        ))
    }

    fn check_object(
        &mut self,
        rules: &'a Map<String, Value>,
        object: &Map<String, Value>,
        path: &mut String,
    ) -> Result<(), Failure> {
        if let Some(required) = rules.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    return Err(mismatch_of(
                        path,
                        format_args!("missing required property `{name}`"),
                    ));
                }
            }
        }
        let count = |key: &str| rules.get(key).and_then(Value::as_u64);
        if let Some(min) = count("minProperties")
            && (object.len() as u64) < min
        {
            return Err(mismatch_of(
                path,
                format_args!("fewer than {min} properties"),
            ));
        }
        if let Some(max) = count("maxProperties")
            && (object.len() as u64) > max
        {
            return Err(mismatch_of(
                path,
                format_args!("more than {max} properties"),
            ));
        }
        let properties = rules.get("properties").and_then(Value::as_object);
        let additional = rules.get("additionalProperties");
        for (name, item) in object {
            let declared = properties.and_then(|p| p.get(name));
            let schema = match (declared, additional) {
                (Some(schema), _) => schema,
                (None, Some(Value::Bool(false))) => {
                    return Err(mismatch_of(
                        path,
                        format_args!("property `{name}` is not allowed"),
                    ));
                }
                (None, Some(schema)) => schema,
                (None, None) => continue,
            };
            let len = path.len();
            push_field(path, name);
            // A new node of the answer: the `$ref` chain starts again.
            self.check(schema, item, path, 0)?;
            path.truncate(len);
        }
        Ok(())
    }

    fn check_array(
        &mut self,
        rules: &'a Map<String, Value>,
        items: &[Value],
        path: &mut String,
    ) -> Result<(), Failure> {
        let count = |key: &str| rules.get(key).and_then(Value::as_u64);
        if let Some(min) = count("minItems")
            && (items.len() as u64) < min
        {
            return Err(mismatch_of(path, format_args!("fewer than {min} items")));
        }
        if let Some(max) = count("maxItems")
            && (items.len() as u64) > max
        {
            return Err(mismatch_of(path, format_args!("more than {max} items")));
        }
        if rules.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (i, item) in items.iter().enumerate() {
                self.charge(i as u64)?;
                if items[..i].iter().any(|earlier| same(earlier, item)) {
                    return Err(mismatch_of(
                        path,
                        format_args!("item {i} repeats an earlier item"),
                    ));
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
            let _ = write!(path, "[{i}]");
            self.check(schema, item, path, 0)?;
            path.truncate(len);
        }
        Ok(())
    }

    /// [`Validator::check`] for a shape that may fail without failing the whole: the path is
    /// back as it was afterwards, whatever the outcome.
    fn attempt(
        &mut self,
        schema: &'a Value,
        value: &Value,
        path: &mut String,
        chain: usize,
    ) -> Result<(), Failure> {
        let len = path.len();
        let outcome = self.check(schema, value, path, chain);
        path.truncate(len);
        outcome
    }

    fn check_combinators(
        &mut self,
        rules: &'a Map<String, Value>,
        value: &Value,
        path: &mut String,
        chain: usize,
    ) -> Result<(), Failure> {
        let list = |key: &str| rules.get(key).and_then(Value::as_array);
        if let Some(all) = list("allOf") {
            for schema in all {
                self.check(schema, value, path, chain)?;
            }
        }
        if let Some(any) = list("anyOf") {
            let mut first = None;
            for schema in any {
                match self.attempt(schema, value, path, chain) {
                    Ok(()) => {
                        first = None;
                        break;
                    }
                    Err(failure) if failure.is_fatal() => return Err(failure),
                    Err(failure) => {
                        first.get_or_insert(failure);
                    }
                }
            }
            if let Some(Failure::Mismatch { path: at, message }) = first {
                return Err(mismatch_of(
                    path,
                    format_args!(
                        "matches none of the {} allowed shapes (the first fails at {at}: {message})",
                        any.len()
                    ),
                ));
            }
        }
        if let Some(one) = list("oneOf") {
            let mut matched = 0;
            for schema in one {
                match self.attempt(schema, value, path, chain) {
                    Ok(()) => matched += 1,
                    Err(failure) if failure.is_fatal() => return Err(failure),
                    Err(_) => {}
                }
            }
            if matched != 1 {
                return Err(mismatch_of(
                    path,
                    format_args!(
                        "matches {matched} of the {} shapes where exactly one must match",
                        one.len()
                    ),
                ));
            }
        }
        if let Some(not) = rules.get("not") {
            match self.attempt(not, value, path, chain) {
                Ok(()) => return Err(mismatch(path, "matches a shape that is not allowed")),
                // A schema that cannot be applied is not a shape the answer avoided.
                Err(failure) if failure.is_fatal() => return Err(failure),
                Err(_) => {}
            }
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
        match validate(&schema, &value, STEP_BUDGET) {
            Err(Failure::Mismatch { path, message }) => format!("{path}: {message}"),
            Err(Failure::Schema(message)) => format!("schema: {message}"),
            Err(Failure::TooCostly { budget }) => format!("over {budget} steps"),
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
            "schema: more than 64 `$ref`s in a row at $ without going deeper into the answer (a `$ref` loop?)"
        );
        assert_eq!(
            fails(json!({"$ref": "http://x/y"}), json!(1)),
            "schema: `$ref` `http://x/y` is not local"
        );
    }

    /// `{"allOf": [{"allOf": [... {} ...]}]}`, `depth` deep.
    fn nested_all_of(depth: usize) -> Value {
        (0..depth).fold(json!({}), |inner, _| json!({ "allOf": [inner] }))
    }

    #[test]
    fn nesting_stops_at_its_bound_within_a_small_stack() {
        // About 4 KiB a level unoptimised, 0.7 KiB optimised (tokio's workers have 2 MiB).
        let stack = if cfg!(debug_assertions) {
            3 << 20
        } else {
            1 << 20
        };
        let outcome = std::thread::Builder::new()
            .stack_size(stack)
            .spawn(|| {
                let within = fails(nested_all_of(MAX_NESTING - 1), json!(1));
                let beyond = fails(nested_all_of(MAX_NESTING + 10), json!(1));
                (within, beyond)
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(outcome.0, "ok");
        assert_eq!(
            outcome.1,
            format!("schema: checking nests deeper than {MAX_NESTING} schemas at $")
        );
    }

    #[test]
    fn the_budget_counts_schemas_enum_entries_and_item_pairs() {
        let steps = |schema: Value, value: Value| {
            (1..100)
                .find(|&budget| validate(&schema, &value, budget).is_ok())
                .unwrap()
        };
        assert_eq!(steps(json!({}), json!(1)), 1);
        assert_eq!(steps(json!({"enum": [3, 2, 1]}), json!(1)), 1 + 3);
        // The array, then 1 + 2 + 3 pairs, then the four items.
        assert_eq!(
            steps(
                json!({"uniqueItems": true, "items": {}}),
                json!([1, 2, 3, 4])
            ),
            1 + 6 + 4
        );
        assert_eq!(
            validate(&json!({"enum": [3, 2, 1]}), &json!(1), 3),
            Err(Failure::TooCostly { budget: 3 })
        );
    }

    #[test]
    fn a_ref_target_is_applied_to_a_node_once() {
        // Four refs to one definition on one node: the definition is applied once, each
        // other ref is a remembered outcome (a step each).
        let schema = json!({
            "allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/A"},
                      {"$ref": "#/$defs/A"}, {"$ref": "#/$defs/A"}],
            "$defs": {"A": {"type": "integer"}}
        });
        assert_eq!(validate(&schema, &json!(1), 1 + 4 + 1), Ok(()));
        assert_eq!(
            validate(&schema, &json!(1), 1 + 4),
            Err(Failure::TooCostly { budget: 5 })
        );
    }

    #[test]
    fn a_schema_error_under_not_is_not_a_shape_avoided() {
        assert_eq!(
            fails(json!({"not": {"$ref": "#/nowhere"}}), json!(1)),
            "schema: `$ref` `#/nowhere` points nowhere"
        );
    }
}
