//! Properties of the structured-output check on schemas built to be expensive: recursive
//! schemas answered far deeper than their `$ref` chains, and "schema bombs" (`anyOf`, `oneOf`,
//! `allOf` over several `$ref`s to the next level, 63 levels deep) that a naive validator
//! explores in exponential time. Each bomb is answered, and correctly.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use motet_directives::{AnswerError, ResponseFormat};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// `{"next": {"next": ... null}}`, `depth` objects deep.
fn linked_list(depth: usize) -> Value {
    (0..depth).fold(Value::Null, |next, _| json!({ "next": next }))
}

#[test]
fn a_valid_answer_deeper_than_64_levels_of_a_recursive_schema_is_accepted() {
    let format = ResponseFormat::json_schema(
        "list",
        json!({
            "type": "object",
            "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
            "required": ["next"],
            "additionalProperties": false
        }),
    );
    // 120 objects: under serde_json's 128-level parse limit, far over 64 `$ref`s in all.
    let answer = linked_list(120).to_string();
    assert_eq!(format.check(&answer), Ok(linked_list(120)));
    // And a deep answer that breaks the schema at the bottom is still a mismatch there.
    let bad = answer.replacen("null", "1", 1);
    match format.check(&bad) {
        Err(AnswerError::Mismatch { .. }) => {}
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn a_deep_tree_through_defs_and_items_is_accepted() {
    let format = ResponseFormat::json_schema(
        "tree",
        json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Child"}}},
                "required": ["children"]
            },
            "Child": {"$ref": "#/$defs/Node"}}
        }),
    );
    // Two `$ref`s a level, 60 levels: 120 in all.
    let tree = (0..60).fold(
        json!({"children": []}),
        |child, _| json!({"children": [child, {"children": []}]}),
    );
    assert_eq!(format.check(&tree.to_string()), Ok(tree));
}

/// A combinator whose every branch refers to the next level.
#[derive(Debug, Clone, Copy)]
#[allow(
    clippy::enum_variant_names,
    reason = "named after the keywords they stand for"
)]
enum Combinator {
    AnyOf,
    OneOf,
    AllOf,
}

impl Combinator {
    fn keyword(self) -> &'static str {
        match self {
            Self::AnyOf => "anyOf",
            Self::OneOf => "oneOf",
            Self::AllOf => "allOf",
        }
    }
}

/// Levels `L0`..`L{n-1}`, level `i` a combinator over `width` `$ref`s to level `i + 1`, the
/// last level over `width` copies of `{"type": "integer"}`.
fn bomb(levels: &[Combinator], width: usize) -> Value {
    let mut defs = Map::new();
    for (i, combinator) in levels.iter().enumerate() {
        let branch = if i + 1 == levels.len() {
            json!({"type": "integer"})
        } else {
            json!({"$ref": format!("#/$defs/L{}", i + 1)})
        };
        defs.insert(
            format!("L{i}"),
            json!({ combinator.keyword(): vec![branch; width] }),
        );
    }
    json!({"$ref": "#/$defs/L0", "$defs": defs})
}

/// What the bomb says of an answer, level by level from the bottom: `width` (at least 2)
/// identical branches, so `oneOf` never has exactly one match.
fn expected(levels: &[Combinator], is_integer: bool) -> bool {
    levels.iter().rev().fold(is_integer, |below, c| match c {
        Combinator::AnyOf | Combinator::AllOf => below,
        Combinator::OneOf => false,
    })
}

fn combinator() -> impl Strategy<Value = Combinator> {
    prop_oneof![
        Just(Combinator::AnyOf),
        Just(Combinator::OneOf),
        Just(Combinator::AllOf)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn schema_bombs_are_answered_correctly(
        levels in prop::collection::vec(combinator(), 1..=63),
        width in 2usize..=4,
        is_integer: bool,
    ) {
        let format = ResponseFormat::json_schema("bomb", bomb(&levels, width));
        let answer = if is_integer { "7" } else { "\"seven\"" };
        // Counted, not timed: each level applied once (its combinator, its branches, one
        // `$ref` target), so the steps grow with the levels times the width.
        let linear = (width as u64 + 2) * levels.len() as u64 + 2;
        let outcome = format.check_within(answer, linear);
        match (expected(&levels, is_integer), &outcome) {
            (true, Ok(_)) | (false, Err(AnswerError::Mismatch { .. })) => {}
            (want, got) => prop_assert!(false, "expected valid = {want}, got {got:?}"),
        }
        prop_assert_eq!(format.check(answer), outcome);
    }
}

#[test]
fn the_worst_bomb_of_the_issue_is_answered() {
    // 63 levels of `anyOf` over three refs, answered with what fails at the bottom: 3^63
    // branches for a validator that explores them all.
    let levels = vec![Combinator::AnyOf; 63];
    let format = ResponseFormat::json_schema("bomb", bomb(&levels, 3));
    match format.check_within("\"seven\"", 5 * 63 + 2) {
        Err(AnswerError::Mismatch { .. }) => {}
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn over_its_budget_a_check_says_the_schema_is_too_costly() {
    let levels = vec![Combinator::OneOf; 63];
    let format = ResponseFormat::json_schema("bomb", bomb(&levels, 4));
    let refused = format.check_within("7", 100);
    assert_eq!(refused, Err(AnswerError::TooCostly { budget: 100 }));
    assert_eq!(
        refused.unwrap_err().to_string(),
        "the schema is too costly to check: more than 100 steps"
    );
}

#[test]
fn an_answer_the_default_budget_cannot_check_is_refused_not_checked_forever() {
    // Polynomial, not exponential, but large: 300 `anyOf` branches, each a `$ref` to a
    // distinct definition, over every item of a 4,000-item array, each item matching only the
    // last one: 2.4 million steps.
    let mut defs = Map::new();
    let mut branches = Vec::new();
    for i in 0..300 {
        defs.insert(format!("D{i}"), json!({"const": i}));
        branches.push(json!({"$ref": format!("#/$defs/D{i}")}));
    }
    let schema = json!({"type": "array", "items": {"anyOf": branches}, "$defs": defs});
    let format = ResponseFormat::json_schema("wide", schema);
    let answer = serde_json::to_string(&vec![299; 4000]).unwrap();
    assert_eq!(format.check_within(&answer, 10_000_000).map(|_| ()), Ok(()));
    assert_eq!(
        format.check(&answer),
        Err(AnswerError::TooCostly {
            budget: ResponseFormat::CHECK_STEP_BUDGET
        })
    );
}
