//! `router`: one type looked up among 100 and among 10,000 routes, beside a plain `HashMap`
//! lookup of the same types (the floor).
//!
//! Routes are generated deterministically (seeded `fastrand`): a few realistic ones
//! (`llm.result`, `agent.worker.*.done`, `**.failed`) plus generated exact, `*` and `**` patterns
//! under many distinct first segments (about ten routes per prefix; wildcards only after the
//! first segment), so the 10,000-route table
//! is wide the way a real one is, not 10,000 patterns on the lookup's own path. The lookups are
//! the same types for every variant, so the ratio shows what the table's size costs.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use motet_signals::{Pattern, Router, SignalType};

use crate::report::{Report, round2};

const LOOKUPS: u64 = 1_000_000;
const RUNS: usize = 3;
const SEED: u64 = 0x5167_4e41;
const ROUTES_PER_PREFIX: usize = 10;

const CORE_ROUTES: &[&str] = &[
    "agent.request",
    "llm.result",
    "llm.*",
    "tool.result",
    "tool.**",
    "agent.worker.*.done",
    "agent.**",
    "**.failed",
    "task.*.assigned",
    "task.**",
];

const CORE_TYPES: &[&str] = &[
    "agent.worker.17.done",
    "llm.result",
    "tool.result",
    "agent.request",
    "task.3.assigned",
];

const WORDS: &[&str] = &[
    "worker", "agent", "tool", "result", "done", "input", "call", "step", "plan", "reply", "chunk",
    "started", "stopped", "retry", "summary", "17", "42",
];

fn word(rng: &mut fastrand::Rng) -> String {
    if rng.u8(..4) == 0 {
        rng.u16(..100).to_string()
    } else {
        WORDS[rng.usize(..WORDS.len())].to_owned()
    }
}

/// `count` patterns: the core ones, then generated ones over `count / ROUTES_PER_PREFIX` prefixes.
fn patterns(count: usize) -> Vec<Pattern> {
    let mut rng = fastrand::Rng::with_seed(SEED);
    let prefixes = (count / ROUTES_PER_PREFIX).max(1);
    let mut texts: Vec<String> = CORE_ROUTES.iter().map(|s| (*s).to_owned()).collect();
    while texts.len() < count {
        // Wildcards that open a pattern match across every prefix; a real table has a handful
        // (the core `**.failed`), not one per hundred routes.
        let mut segments = vec![format!("svc{}", rng.usize(..prefixes))];
        for _ in 0..rng.usize(1..5) {
            segments.push(match rng.u8(..10) {
                0 => "**".to_owned(),
                1 | 2 => "*".to_owned(),
                _ => word(&mut rng),
            });
        }
        texts.push(segments.join("."));
    }
    texts.iter().filter_map(|t| Pattern::new(t).ok()).collect()
}

/// The looked-up types: the core ones and generated 3-6 segment types under the first ten
/// prefixes (present in every table, so each variant's matches are comparable).
fn lookup_types() -> Vec<SignalType> {
    let mut rng = fastrand::Rng::with_seed(SEED ^ 0xffff);
    let mut texts: Vec<String> = CORE_TYPES.iter().map(|s| (*s).to_owned()).collect();
    while texts.len() < 1024 {
        let mut segments = vec![format!("svc{}", rng.usize(..10))];
        for _ in 0..rng.usize(2..6) {
            segments.push(word(&mut rng));
        }
        texts.push(segments.join("."));
        // Keep the realistic types a steady part of the traffic.
        texts.push(CORE_TYPES[rng.usize(..CORE_TYPES.len())].to_owned());
    }
    texts
        .iter()
        .filter_map(|t| SignalType::new(t).ok())
        .collect()
}

/// The fastest of `RUNS` timings of `f`, after one warm-up run.
fn best_of(mut f: impl FnMut() -> u64) -> (Duration, u64) {
    black_box(f());
    let mut best = Duration::MAX;
    let mut result = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        result = black_box(f());
        best = best.min(start.elapsed());
    }
    (best, result)
}

fn route_variant(routes: usize, types: &[SignalType]) -> Report {
    let mut router = Router::new();
    for (i, pattern) in patterns(routes).iter().enumerate() {
        router.add(pattern, (i % 3) as i32, i);
    }
    let (elapsed, matched) = best_of(|| {
        let mut matched = 0u64;
        for i in 0..LOOKUPS as usize {
            let ty = &types[i % types.len()];
            matched += router.route(black_box(ty)).len() as u64;
        }
        matched
    });
    Report::new("router", format!("routes_{routes}"), LOOKUPS, elapsed)
        .with("routes", router.len())
        .with(
            "matches_per_lookup",
            round2(matched as f64 / LOOKUPS as f64),
        )
}

fn floor_variant(types: &[SignalType]) -> Report {
    let map: HashMap<String, usize> = patterns(10_000)
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_str().to_owned(), i))
        .collect();
    let (elapsed, hits) = best_of(|| {
        let mut hits = 0u64;
        for i in 0..LOOKUPS as usize {
            let ty = &types[i % types.len()];
            hits += u64::from(map.contains_key(black_box(ty.as_str())));
        }
        hits
    });
    Report::new("router", "floor_hashmap", LOOKUPS, elapsed)
        .with("routes", map.len())
        .with("matches_per_lookup", round2(hits as f64 / LOOKUPS as f64))
}

/// Runs the scenario.
pub(crate) fn run() -> Vec<Report> {
    let types = lookup_types();
    let small = route_variant(100, &types);
    let large = route_variant(10_000, &types);
    let floor = floor_variant(&types);
    let ratio =
        |a: &Report, b: &Report| round2(a.ns_per_op() / b.ns_per_op().max(f64::MIN_POSITIVE));
    let large_vs_small = ratio(&large, &small);
    let small_vs_floor = ratio(&small, &floor);
    let large_vs_floor = ratio(&large, &floor);
    vec![
        small.with("ratio_to_floor", small_vs_floor),
        large
            .with("ratio_to_floor", large_vs_floor)
            .with("ratio_to_routes_100", large_vs_small),
        floor,
    ]
}
