//! Type and pattern syntax, and pattern matching edge cases through the Router.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use motet_signals::{Pattern, Router, SignalError, SignalType};

fn ty(s: &str) -> SignalType {
    SignalType::new(s).unwrap()
}

/// Whether the router (and the pattern's own matcher) match `pattern` against `ty`.
fn hits(pattern: &str, signal_type: &str) -> bool {
    let pattern = Pattern::new(pattern).unwrap();
    let signal_type = ty(signal_type);
    let mut router = Router::new();
    router.add(&pattern, 0, ());
    let routed = router.route(&signal_type).count();
    assert!(routed <= 1, "a route is returned at most once");
    assert_eq!(
        routed == 1,
        pattern.matches(&signal_type),
        "router and Pattern::matches agree"
    );
    routed == 1
}

#[test]
fn valid_types() {
    for ok in [
        "a",
        "agent.request",
        "agent.worker.17.done",
        "tool_call.re-sult",
        "café.commandé",
        "日本.語",
        "A1.B2",
    ] {
        assert_eq!(ty(ok).as_str(), ok);
    }
    assert_eq!(ty("a.b.c").segments().collect::<Vec<_>>(), ["a", "b", "c"]);
}

#[test]
fn invalid_types_are_typed_errors() {
    let empty_segment = |input: &str, index| SignalError::EmptySegment {
        input: input.into(),
        index,
    };
    let bad_char = |input: &str, found| SignalError::InvalidCharacter {
        input: input.into(),
        found,
    };
    let cases = [
        ("", SignalError::EmptyType),
        (".", empty_segment(".", 0)),
        ("a.", empty_segment("a.", 1)),
        (".a", empty_segment(".a", 0)),
        ("a..b", empty_segment("a..b", 1)),
        ("a b", bad_char("a b", ' ')),
        ("a.\tb", bad_char("a.\tb", '\t')),
        ("a.*", bad_char("a.*", '*')),
        ("a/b", bad_char("a/b", '/')),
    ];
    for (input, want) in cases {
        assert_eq!(SignalType::new(input), Err(want), "{input:?}");
    }
}

#[test]
fn invalid_patterns_are_typed_errors() {
    assert_eq!(Pattern::new(""), Err(SignalError::EmptyType));
    assert_eq!(
        Pattern::new("a.**."),
        Err(SignalError::EmptySegment {
            input: "a.**.".into(),
            index: 2
        })
    );
    assert_eq!(
        Pattern::new("**..a"),
        Err(SignalError::EmptySegment {
            input: "**..a".into(),
            index: 1
        })
    );
    for bad in ["a*", "***", "a.*b", "*.**x"] {
        assert!(
            matches!(Pattern::new(bad), Err(SignalError::InvalidWildcard { .. })),
            "{bad}"
        );
    }
    assert!(matches!(
        Pattern::new("a. b"),
        Err(SignalError::InvalidCharacter { found: ' ', .. })
    ));
}

#[test]
fn exact_and_single_wildcard() {
    assert!(hits("llm.result", "llm.result"));
    assert!(!hits("llm.result", "llm.result.extra"));
    assert!(!hits("llm.result", "llm"));
    assert!(hits("task.*.assigned", "task.7.assigned"));
    assert!(!hits("task.*.assigned", "task.assigned"));
    assert!(!hits("task.*.assigned", "task.7.8.assigned"));
    assert!(hits("*", "x"));
    assert!(!hits("*", "x.y"));
    assert!(hits("*.*", "x.y"));
}

#[test]
fn double_star_at_start_middle_end_and_alone() {
    // End: zero or more trailing segments.
    assert!(hits("task.**", "task"));
    assert!(hits("task.**", "task.1"));
    assert!(hits("task.**", "task.1.2.3"));
    assert!(!hits("task.**", "tasks.1"));
    // Start.
    assert!(hits("**.done", "done"));
    assert!(hits("**.done", "agent.worker.done"));
    assert!(!hits("**.done", "agent.done.not"));
    // Middle.
    assert!(hits("agent.**.done", "agent.done"));
    assert!(hits("agent.**.done", "agent.a.b.c.done"));
    assert!(!hits("agent.**.done", "agent.a.b.c"));
    // Alone: everything.
    for t in ["a", "a.b", "a.b.c.d.e.f"] {
        assert!(hits("**", t));
    }
    // Several.
    assert!(hits("a.**.b.**", "a.b"));
    assert!(hits("a.**.b.**", "a.x.b.y.z"));
    assert!(hits("a.**.b.**", "a.b.b.b"));
    assert!(!hits("a.**.b.**", "a.x.y"));
    assert!(hits("**.**", "a"));
    assert!(hits("**.*.**", "a"));
    assert!(!hits("**.*.*.**", "a"));
    assert!(hits("*.**.*", "a.b"));
    assert!(!hits("*.**.*", "a"));
}

#[test]
fn unicode_segments() {
    assert!(hits("café.*", "café.commandé"));
    assert!(!hits("cafe.*", "café.commandé"));
    assert!(hits("**.語", "日本.語"));
}

#[test]
fn very_long_types() {
    let long: Vec<String> = (0..1000).map(|i| format!("s{i}")).collect();
    let long_type = long.join(".");
    assert!(hits("**", &long_type));
    assert!(hits("s0.**", &long_type));
    assert!(hits("**.s999", &long_type));
    assert!(hits("s0.**.s500.**.s999", &long_type));
    assert!(!hits("s0.**.s500.**.s499", &long_type));
    assert!(hits(&long_type, &long_type));
    let mut one_off = long.clone();
    one_off[700] = "*".into();
    assert!(hits(&one_off.join("."), &long_type));
    // Many `**` in one pattern against a long type must not blow up.
    let stars = vec!["**"; 50].join(".");
    assert!(hits(&format!("{stars}.s999.{stars}"), &long_type));
    assert!(!hits(&format!("{stars}.nothere.{stars}"), &long_type));
}
