//! The Router against a naive reference matcher, on random patterns, types, priorities and
//! removals.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use motet_signals::{Pattern, RouteId, Router, SignalType};
use proptest::prelude::*;

/// The reference: recursive matching over segment slices, straight from the definition.
fn naive(pattern: &[&str], ty: &[&str]) -> bool {
    match pattern.split_first() {
        None => ty.is_empty(),
        Some((&"**", rest)) => (0..=ty.len()).any(|k| naive(rest, &ty[k..])),
        Some((&"*", rest)) => !ty.is_empty() && naive(rest, &ty[1..]),
        Some((lit, rest)) => ty.first() == Some(lit) && naive(rest, &ty[1..]),
    }
}

/// A small alphabet so patterns and types collide often.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![Just("a"), Just("b"), Just("c"), Just("é")].prop_map(str::to_owned)
}

fn pattern_segment() -> impl Strategy<Value = String> {
    prop_oneof![3 => segment(), 1 => Just("*".to_owned()), 1 => Just("**".to_owned())]
}

fn pattern() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(pattern_segment(), 1..6)
}

fn signal_type() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(segment(), 1..8)
}

struct Case {
    id: RouteId,
    index: usize,
    priority: i32,
    pattern: Vec<String>,
}

/// What the router must return: matching live routes, higher priority first, then insertion.
fn expected(cases: &[Case], ty: &[String]) -> Vec<usize> {
    let ty: Vec<&str> = ty.iter().map(String::as_str).collect();
    let mut hits: Vec<&Case> = cases
        .iter()
        .filter(|c| {
            naive(
                &c.pattern.iter().map(String::as_str).collect::<Vec<_>>(),
                &ty,
            )
        })
        .collect();
    hits.sort_by_key(|c| (std::cmp::Reverse(c.priority), c.index));
    hits.into_iter().map(|c| c.index).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn router_agrees_with_naive_matcher(
        routes in prop::collection::vec((pattern(), -2i32..3), 0..24),
        removals in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        types in prop::collection::vec(signal_type(), 1..12),
    ) {
        let mut router = Router::new();
        let mut cases = Vec::new();
        for (index, (segments, priority)) in routes.into_iter().enumerate() {
            let pattern = Pattern::new(segments.join(".")).unwrap();
            let id = router.add(&pattern, priority, index);
            cases.push(Case { id, index, priority, pattern: segments });
        }
        for removal in removals {
            if cases.is_empty() {
                break;
            }
            let case = cases.remove(removal.index(cases.len()));
            prop_assert_eq!(router.remove(case.id), Some(case.index));
            prop_assert_eq!(router.remove(case.id), None);
        }
        prop_assert_eq!(router.len(), cases.len());
        for ty in types {
            let signal_type = SignalType::new(ty.join(".")).unwrap();
            let got: Vec<usize> = router.route(&signal_type).copied().collect();
            prop_assert_eq!(got, expected(&cases, &ty), "type {}", signal_type);
        }
    }

    #[test]
    fn pattern_matches_agrees_with_naive_matcher(p in pattern(), t in signal_type()) {
        let pattern = Pattern::new(p.join(".")).unwrap();
        let ty = SignalType::new(t.join(".")).unwrap();
        let p: Vec<&str> = p.iter().map(String::as_str).collect();
        let t: Vec<&str> = t.iter().map(String::as_str).collect();
        prop_assert_eq!(pattern.matches(&ty), naive(&p, &t));
    }
}

#[test]
fn removing_every_route_leaves_an_empty_router_that_matches_nothing() {
    let mut router = Router::new();
    let patterns = ["a.**", "a.b", "a.b.c", "a.*.c", "**", "a.**.c"];
    let ids: Vec<RouteId> = patterns
        .iter()
        .map(|p| router.add(&Pattern::new(p).unwrap(), 0, *p))
        .collect();
    let ty = SignalType::new("a.b.c").unwrap();
    assert_eq!(router.route(&ty).count(), 5);
    router.remove(ids[2]);
    assert_eq!(
        router.route(&ty).copied().collect::<Vec<_>>(),
        ["a.**", "a.*.c", "**", "a.**.c"]
    );
    for id in ids {
        router.remove(id);
    }
    assert!(router.is_empty());
    assert_eq!(router.route(&ty).count(), 0);
    // Routes added after removals still work (the trie was pruned, not corrupted).
    router.add(&Pattern::new("a.b.c").unwrap(), 0, "again");
    assert_eq!(router.route(&ty).copied().collect::<Vec<_>>(), ["again"]);
}

#[test]
fn priority_then_registration_order_across_nodes() {
    let mut router = Router::new();
    router.add(&Pattern::new("**").unwrap(), 0, "all-first");
    router.add(&Pattern::new("x.y").unwrap(), 5, "exact-high");
    router.add(&Pattern::new("x.*").unwrap(), 0, "one-second");
    router.add(&Pattern::new("x.y").unwrap(), 0, "exact-third");
    router.add(&Pattern::new("x.**").unwrap(), 5, "many-high-later");
    router.add(&Pattern::new("x.y").unwrap(), -1, "exact-low");
    let got: Vec<&str> = router
        .route(&SignalType::new("x.y").unwrap())
        .copied()
        .collect();
    assert_eq!(
        got,
        [
            "exact-high",
            "many-high-later",
            "all-first",
            "one-second",
            "exact-third",
            "exact-low"
        ]
    );
}

/// More matching trie nodes than the lazily merged inline runs: the collected-and-sorted path.
#[test]
fn many_matching_nodes_still_come_back_in_priority_order() {
    let mut patterns: Vec<String> = Vec::new();
    for mask in 0..8 {
        let segs: Vec<&str> = ["a", "b", "c"]
            .iter()
            .enumerate()
            .map(|(i, s)| if mask & (1 << i) == 0 { *s } else { "*" })
            .collect();
        patterns.push(segs.join("."));
    }
    patterns.extend(["**", "a.**", "**.c", "a.**.c", "*.**", "a.b.c.**"].map(str::to_owned));
    let mut router = Router::new();
    let mut cases = Vec::new();
    for (index, text) in patterns.iter().enumerate() {
        for copy in 0..2 {
            let priority = ((index * 7 + copy) % 5) as i32 - 2;
            let id = router.add(&Pattern::new(text).unwrap(), priority, (index, copy));
            cases.push((id, priority, (index, copy)));
        }
    }
    let mut want: Vec<_> = cases.clone();
    want.sort_by_key(|&(id, priority, _)| (std::cmp::Reverse(priority), id));
    let want: Vec<(usize, usize)> = want.into_iter().map(|c| c.2).collect();
    let matches = router.route(&SignalType::new("a.b.c").unwrap());
    assert_eq!(matches.len(), 28);
    assert_eq!(matches.copied().collect::<Vec<_>>(), want);
}
