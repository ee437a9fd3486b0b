//! Arbitrary tool arguments through the CLI's built-in calculator, the way the runtime calls
//! it (a `ToolSet` holding `calculator::tool()`, `execute` on the model's raw arguments):
//! arbitrary JSON values, arguments that are not objects or not JSON, nesting past the JSON
//! parser's limit, huge strings, and expressions nested far past the calculator's own bound.
//! Each call must answer with a number or a typed `InvalidArgs` error — never a panic (the set
//! would contain it, as `Panicked`), a stack overflow (which would abort this test) or a
//! time-out.
//!
//! The seeds are fixed: a failure reproduces on every run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet::directives::{ToolArgs, ToolCallView};
use motet::runtime::tool::{ToolContext, ToolError, ToolSet};
use motet_cli::calculator::{self, CalcError, MAX_NESTING, evaluate, format_number};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{Value, json};

fn config(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    }
}

/// What the calculator answered to `raw` arguments, through the tool set.
fn call(
    tools: &ToolSet,
    runtime: &tokio::runtime::Runtime,
    raw: &str,
) -> Result<String, ToolError> {
    let args = ToolArgs::from_text(raw);
    let view = ToolCallView {
        id: "call_1",
        name: calculator::NAME,
        args: &args,
    };
    runtime.block_on(tools.execute(view, &ToolContext::new("call_1")))
}

fn setup() -> (ToolSet, tokio::runtime::Runtime) {
    let tools = ToolSet::builder().tool(calculator::tool()).build().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    (tools, runtime)
}

/// The start of `text`, for a failure message.
fn short(text: &str) -> String {
    text.chars().take(80).collect()
}

/// A number, or a typed error about the arguments: nothing else is an answer.
fn check_answer(raw: &str, answer: &Result<String, ToolError>) -> Result<(), TestCaseError> {
    let shown = short(raw);
    match answer {
        Ok(output) => {
            let value: f64 = output
                .parse()
                .map_err(|_| TestCaseError::fail(format!("{shown}: answered {output:?}")))?;
            prop_assert!(value.is_finite(), "{shown}: answered {output}");
        }
        Err(ToolError::InvalidArgs { message }) => {
            prop_assert!(!message.is_empty(), "{shown}: an empty message");
        }
        Err(other) => prop_assert!(false, "{shown}: {other:?}"),
    }
    Ok(())
}

/// The expression's answer through the tool must be the evaluator's.
fn check_expression(
    expression: &str,
    answer: &Result<String, ToolError>,
) -> Result<(), TestCaseError> {
    match (evaluate(expression), answer) {
        (Ok(value), Ok(output)) => prop_assert_eq!(output, &format_number(value)),
        (Err(e), Err(ToolError::InvalidArgs { message })) => {
            prop_assert_eq!(message, &e.to_string())
        }
        (expected, got) => prop_assert!(false, "{expected:?} evaluated, {got:?} answered"),
    }
    Ok(())
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,40}".prop_map(Value::String),
        "[-+*/%^(). 0-9a-z]{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![Just("expression".to_owned()), "[a-z]{0,8}"],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Expressions the calculator reads, nested or repeated from 0 to 30,000 times.
fn hostile_expression() -> impl Strategy<Value = String> {
    let n = 0usize..30_000;
    prop_oneof![
        "[-+*/%^(). 0-9a-z]{0,200}",
        n.clone()
            .prop_map(|n| format!("{}1{}", "(".repeat(n), ")".repeat(n))),
        n.clone().prop_map(|n| format!("{}1", "-".repeat(n))),
        n.clone().prop_map(|n| format!("{}1", "+-".repeat(n))),
        n.clone().prop_map(|n| format!("2{}", "^2".repeat(n))),
        n.clone()
            .prop_map(|n| format!("{}1{}", "sqrt(".repeat(n), ")".repeat(n))),
        n.clone().prop_map(|n| format!("{}1", "(".repeat(n))),
        n.clone().prop_map(|n| format!("1{}", ")".repeat(n))),
        n.clone().prop_map(|n| format!("1{}", "+1".repeat(n))),
        n.clone().prop_map(|n| "9".repeat(n)),
        n.clone().prop_map(|n| format!("1e{}", "9".repeat(n % 400))),
        n.prop_map(|n| "a".repeat(n + 1) + "(1)"),
    ]
}

/// `value` nested `depth` levels down in arrays, past serde_json's recursion limit (128)
/// when `depth` is over it.
fn nested(depth: usize, value: &str) -> String {
    format!("{}{value}{}", "[".repeat(depth), "]".repeat(depth))
}

proptest! {
    #![proptest_config(config(1500, 0x0c41_c0de))]

    #[test]
    fn arbitrary_json_arguments_are_a_number_or_invalid_args(args in any_json()) {
        let (tools, runtime) = setup();
        let raw = args.to_string();
        check_answer(&raw, &call(&tools, &runtime, &raw))?;
    }

    #[test]
    fn hostile_expressions_are_a_number_or_invalid_args(expression in hostile_expression()) {
        let (tools, runtime) = setup();
        let raw = json!({ "expression": expression }).to_string();
        let answer = call(&tools, &runtime, &raw);
        check_answer(&raw, &answer)?;
        check_expression(&expression, &answer)?;
    }

    #[test]
    fn arguments_that_are_not_an_expression_object_are_invalid_args(
        raw in prop_oneof![
            // Not objects.
            any_json().prop_filter("not an object", |v| !v.is_object()).prop_map(|v| v.to_string()),
            // Not JSON at all.
            ".{0,60}",
            Just(String::new()),
            Just("{".to_owned()),
            Just(r#"{"expression":"#.to_owned()),
            // An expression of the wrong type.
            any_json()
                .prop_filter("not a string", |v| !v.is_string())
                .prop_map(|v| json!({ "expression": v }).to_string()),
            // Nested past the JSON parser's limit instead of the expression.
            (100usize..2_000).prop_map(|d| format!(r#"{{"expression":{}}}"#, nested(d, "\"1\""))),
            // A huge string that is not arithmetic.
            (0usize..200_000).prop_map(|n| json!({ "expression": "#".repeat(n) }).to_string()),
        ],
    ) {
        let (tools, runtime) = setup();
        let answer = call(&tools, &runtime, &raw);
        check_answer(&raw, &answer)?;
        prop_assert!(answer.is_err(), "{} answered {answer:?}", short(&raw));
    }
}

#[test]
fn nesting_beside_the_expression_is_ignored_up_to_the_arguments_limit_and_refused_past_it() {
    let (tools, runtime) = setup();
    let max = ToolArgs::MAX_DEPTH;
    // The arguments object is level 1, `extra` opens level 2.
    for depth in [10, max - 1] {
        let raw = format!(r#"{{"expression":"1+1","extra":{}}}"#, nested(depth, "1"));
        assert_eq!(
            call(&tools, &runtime, &raw),
            Ok("2".to_owned()),
            "{depth} deep"
        );
    }
    for depth in [max, 127, 128, 129, 200, 10_000] {
        let raw = format!(r#"{{"expression":"1+1","extra":{}}}"#, nested(depth, "1"));
        assert_eq!(
            call(&tools, &runtime, &raw),
            Err(ToolError::invalid_args(format!(
                "tool arguments nest deeper than {max} levels"
            ))),
            "{depth} deep"
        );
    }
}

#[test]
fn a_megabyte_of_arithmetic_is_evaluated_and_a_megabyte_of_anything_else_refused() {
    let (tools, runtime) = setup();
    let sum = format!("1{}", "+1".repeat(500_000));
    let answer = call(&tools, &runtime, &json!({ "expression": sum }).to_string());
    assert_eq!(answer, Ok("500001".to_owned()));
    let junk = "#".repeat(1 << 20);
    let answer = call(&tools, &runtime, &json!({ "expression": junk }).to_string());
    assert!(
        matches!(answer, Err(ToolError::InvalidArgs { .. })),
        "{answer:?}"
    );
}

#[test]
fn nesting_past_the_bound_is_named_in_the_error() {
    let (tools, runtime) = setup();
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    let answer = call(&tools, &runtime, &json!({ "expression": deep }).to_string());
    assert_eq!(
        answer,
        Err(ToolError::invalid_args(
            CalcError::TooDeep { max: MAX_NESTING }.to_string()
        ))
    );
}
