use std::collections::HashMap;

use super::*;
use crate::limits::headers::Window;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A minute of 60 s: one request a second for 60 rpm.
fn minute(rates: Rates) -> Rates {
    rates.with_window(Duration::from_secs(60))
}

#[test]
fn requests_per_minute_allow_a_burst_then_refill_continuously() {
    let t0 = Instant::now();
    let mut g = Governor::new(minute(Rates::unlimited().with_requests_per_minute(60)), t0);
    let ids: Vec<_> = (0..61)
        .map(|_| g.enqueue(Claim::new("a", 0, 0), t0))
        .collect();
    assert_eq!(g.grant(t0).len(), 60);
    assert!(g.is_waiting(ids[60]));
    assert_eq!(g.next_wake(t0), Some(t0 + Duration::from_secs(1)));
    assert!(g.grant(t0 + ms(999)).is_empty());
    assert_eq!(g.grant(t0 + ms(1000)), vec![ids[60]]);
    assert_eq!(g.next_wake(t0 + ms(1000)), None, "nothing waits");
}

#[test]
fn each_token_kind_limits_on_its_own() {
    let t0 = Instant::now();
    for (rates, claim, fit) in [
        (
            Rates::unlimited().with_input_tokens_per_minute(1000),
            Claim::new("a", 400, 1),
            2,
        ),
        (
            Rates::unlimited().with_output_tokens_per_minute(1000),
            Claim::new("a", 1, 300),
            3,
        ),
        (
            Rates::unlimited().with_tokens_per_minute(1000),
            Claim::new("a", 200, 200),
            2,
        ),
    ] {
        let mut g = Governor::new(minute(rates), t0);
        for _ in 0..5 {
            g.enqueue(claim.clone(), t0);
        }
        assert_eq!(g.grant(t0).len(), fit, "{rates:?}");
        assert!(g.next_wake(t0).is_some_and(|t| t > t0));
    }
}

#[test]
fn concurrent_streams_free_up_on_settle_not_on_time() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited().with_concurrent(2), t0);
    let ids: Vec<_> = (0..3)
        .map(|_| g.enqueue(Claim::new("a", 0, 0), t0))
        .collect();
    assert_eq!(g.grant(t0), ids[..2].to_vec());
    assert_eq!(g.next_wake(t0), None, "only a settle makes room");
    assert!(g.grant(t0 + Duration::from_secs(600)).is_empty());
    g.settle(ids[0], Spent::default(), t0);
    assert_eq!(g.grant(t0), vec![ids[2]]);
    assert_eq!(g.active(), 2);
}

#[test]
fn a_claim_larger_than_the_bucket_is_charged_the_whole_bucket_not_stuck() {
    let t0 = Instant::now();
    let mut g = Governor::new(minute(Rates::unlimited().with_tokens_per_minute(100)), t0);
    let big = g.enqueue(Claim::new("a", 5000, 0), t0);
    assert_eq!(g.grant(t0), vec![big]);
    let next = g.enqueue(Claim::new("a", 5000, 0), t0);
    assert_eq!(g.next_wake(t0), Some(t0 + Duration::from_secs(60)));
    assert_eq!(g.grant(t0 + Duration::from_secs(60)), vec![next]);
}

#[test]
fn settling_refunds_the_unused_estimate_and_charges_an_overrun() {
    let t0 = Instant::now();
    let rates = minute(
        Rates::unlimited()
            .with_output_tokens_per_minute(1000)
            .with_input_tokens_per_minute(1000),
    );
    let mut g = Governor::new(rates, t0);
    let a = g.enqueue(Claim::new("a", 100, 500), t0);
    g.grant(t0);
    assert_eq!(g.available(Kind::OutputTokens, t0), Some(500.0));
    g.settle(
        a,
        Spent {
            input_tokens: 300,
            output_tokens: 50,
        },
        t0,
    );
    assert_eq!(g.available(Kind::OutputTokens, t0), Some(950.0));
    assert_eq!(g.available(Kind::InputTokens, t0), Some(700.0));
    assert_eq!(g.active(), 0);
    // A second settle of the same claim changes nothing.
    g.settle(a, Spent::default(), t0);
    assert_eq!(g.available(Kind::InputTokens, t0), Some(700.0));
}

#[test]
fn learned_limits_lower_the_configured_never_raise_it_and_fill_the_unconfigured() {
    let t0 = Instant::now();
    let mut g = Governor::new(minute(Rates::unlimited().with_requests_per_minute(100)), t0);
    let said = |limit, remaining| Learned {
        requests: Window {
            limit: Some(limit),
            remaining: Some(remaining),
            reset: None,
        },
        tokens: Window {
            limit: Some(10_000),
            remaining: Some(9_000),
            reset: None,
        },
        ..Learned::default()
    };
    g.learn(&said(500, 500), t0);
    assert_eq!(g.limit(Kind::Requests), Some(100), "never raised");
    assert_eq!(g.limit(Kind::Tokens), Some(10_000), "filled");
    assert_eq!(g.available(Kind::Tokens, t0), Some(9_000.0));
    g.learn(&said(50, 20), t0);
    assert_eq!(g.limit(Kind::Requests), Some(50), "lowered");
    assert_eq!(g.available(Kind::Requests, t0), Some(20.0));
    for _ in 0..25 {
        g.enqueue(Claim::new("a", 0, 0), t0);
    }
    assert_eq!(
        g.grant(t0).len(),
        20,
        "the remaining count slows callers down"
    );
}

#[test]
fn an_exhausted_window_without_a_limit_holds_until_its_reset() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited(), t0);
    g.learn(
        &Learned {
            output_tokens: Window {
                limit: None,
                remaining: Some(0),
                reset: Some(ms(1500)),
            },
            ..Learned::default()
        },
        t0,
    );
    let id = g.enqueue(Claim::new("a", 1, 1), t0);
    assert!(g.grant(t0).is_empty());
    assert_eq!(g.next_wake(t0), Some(t0 + ms(1500)));
    assert_eq!(g.grant(t0 + ms(1500)), vec![id]);
}

#[test]
fn a_429_holds_every_waiter_until_retry_after_then_they_restart_gradually() {
    let t0 = Instant::now();
    let mut g = Governor::new(minute(Rates::unlimited().with_requests_per_minute(60)), t0);
    for _ in 0..10 {
        g.enqueue(Claim::new("a", 0, 0), t0);
    }
    g.throttle(Some(Duration::from_secs(2)), t0);
    assert!(g.grant(t0 + ms(1999)).is_empty());
    assert_eq!(g.next_wake(t0), Some(t0 + Duration::from_secs(2)));
    // Two seconds of refill from an empty bucket: two requests, not ten.
    assert_eq!(g.grant(t0 + Duration::from_secs(2)).len(), 2);
}

#[test]
fn the_default_backoff_doubles_with_429s_in_a_row_and_resets_on_success() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited(), t0);
    g.throttle(None, t0);
    assert_eq!(g.backoff_until(t0), Some(t0 + Duration::from_secs(1)));
    g.throttle(None, t0);
    assert_eq!(g.backoff_until(t0), Some(t0 + Duration::from_secs(2)));
    for _ in 0..20 {
        g.throttle(None, t0);
    }
    assert_eq!(g.backoff_until(t0), Some(t0 + Duration::from_secs(60)));
    let later = t0 + Duration::from_secs(61);
    g.succeeded();
    g.throttle(None, later);
    assert_eq!(g.backoff_until(later), Some(later + Duration::from_secs(1)));
}

#[test]
fn a_short_retry_after_does_not_cut_a_longer_backoff() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited(), t0);
    g.throttle(Some(Duration::from_secs(5)), t0);
    g.throttle(Some(Duration::from_secs(1)), t0);
    assert_eq!(g.backoff_until(t0), Some(t0 + Duration::from_secs(5)));
}

#[test]
fn high_goes_before_normal_before_low_whatever_the_order_of_arrival() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited().with_concurrent(1), t0);
    let low = g.enqueue(Claim::new("batch", 0, 0).with_priority(Priority::Low), t0);
    let normal = g.enqueue(Claim::new("agent", 0, 0), t0);
    let high = g.enqueue(Claim::new("chat", 0, 0).with_priority(Priority::High), t0);
    let mut order = Vec::new();
    for _ in 0..3 {
        let granted = g.grant(t0);
        order.extend(granted.iter().copied());
        for id in granted {
            g.settle(id, Spent::default(), t0);
        }
    }
    assert_eq!(order, vec![high, normal, low]);
}

#[test]
fn a_high_claim_behind_a_long_queue_waits_at_most_one_refill() {
    let t0 = Instant::now();
    // 600 a minute: one every 100 ms.
    let mut g = Governor::new(minute(Rates::unlimited().with_requests_per_minute(600)), t0);
    for n in 0..2000 {
        g.enqueue(Claim::new(format!("batch{}", n % 50), 0, 0), t0);
    }
    g.grant(t0);
    let at = t0 + ms(5);
    let high = g.enqueue(Claim::new("chat", 0, 0).with_priority(Priority::High), at);
    let wake = g.next_wake(at).unwrap_or(at + Duration::from_secs(3600));
    assert!(wake <= at + ms(100), "{:?}", wake - at);
    assert_eq!(g.grant(wake), vec![high]);
}

#[test]
fn deadlines_expire_waiting_claims_only() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited().with_concurrent(1), t0);
    let running = g.enqueue(Claim::new("a", 0, 0).with_deadline(t0 + ms(10)), t0);
    let late = g.enqueue(Claim::new("b", 0, 0).with_deadline(t0 + ms(10)), t0);
    let patient = g.enqueue(Claim::new("c", 0, 0), t0);
    assert_eq!(g.grant(t0), vec![running]);
    assert_eq!(g.next_wake(t0), Some(t0 + ms(10)), "the deadline wakes");
    assert_eq!(g.expire(t0 + ms(10)), vec![late]);
    assert!(g.is_granted(running) && !g.is_waiting(late) && g.is_waiting(patient));
    g.settle(running, Spent::default(), t0 + ms(11));
    assert_eq!(g.grant(t0 + ms(11)), vec![patient]);
}

#[test]
fn a_cancelled_claim_leaves_the_queue_and_a_cancelled_grant_frees_its_stream() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited().with_concurrent(1), t0);
    let a = g.enqueue(Claim::new("a", 0, 0), t0);
    let b = g.enqueue(Claim::new("b", 0, 0), t0);
    let c = g.enqueue(Claim::new("c", 0, 0), t0);
    assert_eq!(g.grant(t0), vec![a]);
    assert!(g.cancel(b));
    assert!(g.cancel(a));
    assert!(!g.cancel(a));
    assert_eq!(g.grant(t0), vec![c]);
    assert_eq!(g.waiting(), 0);
}

/// Jain's fairness index of `xs`: 1 when all are equal, 1/n when one has everything.
fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if squares == 0.0 {
        return 1.0;
    }
    sum * sum / (xs.len() as f64 * squares)
}

/// Runs a governor of `rates` for `steps` steps of `step`, granting and settling at once, and
/// counts the grants of each agent.
fn simulate(g: &mut Governor, t0: Instant, step: Duration, steps: u32) -> HashMap<ClaimId, u32> {
    let mut at = HashMap::new();
    for n in 0..steps {
        let now = t0 + step * n;
        for id in g.grant(now) {
            at.insert(id, n);
            g.settle(id, Spent::default(), now);
        }
    }
    at
}

#[test]
fn one_agents_burst_does_not_starve_the_others() {
    let t0 = Instant::now();
    let mut g = Governor::new(minute(Rates::unlimited().with_requests_per_minute(60)), t0);
    g.grant(t0);
    // Drain the burst so the run is the steady state.
    for _ in 0..60 {
        g.enqueue(Claim::new("warmup", 0, 0), t0);
    }
    g.grant(t0);
    let mut owner = HashMap::new();
    // The greedy agent queues 500 claims before anyone else queues one.
    for _ in 0..500 {
        owner.insert(g.enqueue(Claim::new("greedy", 0, 0), t0), 0usize);
    }
    for agent in 1..10 {
        for _ in 0..50 {
            owner.insert(g.enqueue(Claim::new(format!("a{agent}"), 0, 0), t0), agent);
        }
    }
    // 200 s: 200 grants, while every agent still has claims waiting.
    let granted = simulate(&mut g, t0 + ms(1), Duration::from_secs(1), 200);
    let mut counts = [0.0; 10];
    for id in granted.keys() {
        if let Some(agent) = owner.get(id) {
            counts[*agent] += 1.0;
        }
    }
    let index = jain(&counts);
    assert!(index >= 0.99, "jain {index}: {counts:?}");
    assert!(
        counts.iter().all(|c| (*c - 20.0).abs() <= 1.0),
        "{counts:?}"
    );
}

#[test]
fn tenants_share_first_then_their_agents() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited().with_concurrent(1), t0);
    let mut owner = HashMap::new();
    // Tenant a has nine agents, tenant b one: b's agent gets half of everything.
    for agent in 0..9 {
        for _ in 0..20 {
            let claim = Claim::new(format!("a{agent}"), 0, 0).with_tenant("a");
            owner.insert(g.enqueue(claim, t0), "a");
        }
    }
    for _ in 0..100 {
        owner.insert(g.enqueue(Claim::new("b0", 0, 0).with_tenant("b"), t0), "b");
    }
    let mut b = 0;
    for _ in 0..100 {
        for id in g.grant(t0) {
            b += usize::from(owner.get(&id) == Some(&"b"));
            g.settle(id, Spent::default(), t0);
        }
    }
    assert_eq!(b, 50);
}

#[test]
fn an_agent_that_arrives_late_is_not_owed_the_past() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited().with_concurrent(1), t0);
    for _ in 0..100 {
        g.enqueue(Claim::new("early", 0, 0), t0);
    }
    for _ in 0..50 {
        for id in g.grant(t0) {
            g.settle(id, Spent::default(), t0);
        }
    }
    // A newcomer now alternates with the early agent rather than taking 50 turns in a row.
    let late: Vec<_> = (0..10)
        .map(|_| g.enqueue(Claim::new("late", 0, 0), t0))
        .collect();
    let mut order = Vec::new();
    for _ in 0..10 {
        for id in g.grant(t0) {
            order.push(late.contains(&id));
            g.settle(id, Spent::default(), t0);
        }
    }
    let late_turns = order.iter().filter(|l| **l).count();
    assert!((4..=6).contains(&late_turns), "{order:?}");
}

#[test]
fn idle_flows_are_forgotten() {
    let t0 = Instant::now();
    let mut g = Governor::new(Rates::unlimited(), t0);
    for n in 0..(2 * SWEEP_EVERY) {
        let id = g.enqueue(Claim::new(format!("agent{n}"), 0, 0), t0);
        g.grant(t0);
        g.settle(id, Spent::default(), t0);
    }
    let flows: usize = g.queues[1].tenants.values().map(|t| t.agents.len()).sum();
    assert!(flows < SWEEP_EVERY as usize, "{flows}");
}

mod invariants {
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Enqueue {
            agent: u8,
            tenant: u8,
            priority: u8,
            input: u16,
            output: u16,
        },
        Advance(u16),
        SettleOldest(u16),
        Cancel(u8),
        Throttle(Option<u16>),
        Learn(u16, u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..6, 0u8..3, 0u8..3, 0u16..3000, 0u16..3000).prop_map(
                |(agent, tenant, priority, input, output)| Op::Enqueue {
                    agent,
                    tenant,
                    priority,
                    input,
                    output,
                }
            ),
            3 => (0u16..2000).prop_map(Op::Advance),
            2 => (0u16..5000).prop_map(Op::SettleOldest),
            1 => (0u8..50).prop_map(Op::Cancel),
            1 => proptest::option::of(0u16..3000).prop_map(Op::Throttle),
            1 => (0u16..200, 0u16..200).prop_map(|(l, r)| Op::Learn(l, r)),
        ]
    }

    proptest! {
        /// Whatever happens, no more requests are granted than the bucket allows (a full
        /// minute's burst plus the refill since), streams never pass their limit, and nothing
        /// panics.
        #[test]
        fn grants_stay_within_the_limits(ops in proptest::collection::vec(op(), 1..200)) {
            let t0 = Instant::now();
            let rates = Rates::unlimited()
                .with_requests_per_minute(30)
                .with_tokens_per_minute(20_000)
                .with_concurrent(4)
                .with_window(Duration::from_secs(6));
            let mut g = Governor::new(rates, t0);
            let mut now = t0;
            let mut ids = Vec::new();
            let mut granted = Vec::new();
            let mut total = 0u64;
            for op in ops {
                match op {
                    Op::Enqueue { agent, tenant, priority, input, output } => {
                        let priority = [Priority::Low, Priority::Normal, Priority::High]
                            [usize::from(priority)];
                        let claim = Claim::new(format!("a{agent}"), input.into(), output.into())
                            .with_tenant(format!("t{tenant}"))
                            .with_priority(priority);
                        ids.push(g.enqueue(claim, now));
                    }
                    Op::Advance(ms) => now += Duration::from_millis(ms.into()),
                    Op::SettleOldest(used) => {
                        if !granted.is_empty() {
                            let id = granted.remove(0);
                            let spent = Spent { input_tokens: used.into(), output_tokens: 1 };
                            g.settle(id, spent, now);
                        }
                    }
                    Op::Cancel(n) => {
                        if let Some(id) = ids.get(usize::from(n)) {
                            g.cancel(*id);
                            granted.retain(|other| other != id);
                        }
                    }
                    Op::Throttle(ms) => {
                        g.throttle(ms.map(|ms| Duration::from_millis(ms.into())), now);
                    }
                    Op::Learn(limit, remaining) => {
                        let learned = Learned {
                            requests: Window {
                                limit: Some(limit.into()),
                                remaining: Some(remaining.into()),
                                reset: None,
                            },
                            ..Learned::default()
                        };
                        g.learn(&learned, now);
                    }
                }
                let new = g.grant(now);
                total += new.len() as u64;
                granted.extend(new);
                prop_assert!(g.active() <= 4);
                let elapsed = now.duration_since(t0).as_secs_f64();
                prop_assert!(total as f64 <= 30.0 + 5.0 * elapsed + 1e-6, "{total} in {elapsed} s");
                if g.waiting() > 0 && g.active() < 4 && g.backoff_until(now).is_none() {
                    prop_assert!(g.next_wake(now).is_some(), "a waiting claim is never forgotten");
                }
            }
        }
    }
}
