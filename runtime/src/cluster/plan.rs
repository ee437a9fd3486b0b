//! The cluster's pure decisions, each a plain function with plain `#[test]`s: where an agent
//! belongs, whether a node still stands, which agents a node hands over.
//!
//! Nothing here reads a clock or a socket: the driver (cluster/node.rs) passes in what it saw.

use std::time::Duration;

/// One live member of the cluster as placement sees it: a node and the generation of its
/// current start.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Member {
    /// The node's configured id (`MOTET_NODE_ID`): stable across its restarts.
    pub node: String,
    /// The generation of this start of the node, unique in the cluster: a restarted node is a
    /// new member, and a generation declared dead never comes back.
    pub generation: u64,
}

/// The member `agent` belongs on: the one whose node scores highest for it (rendezvous, or
/// highest random weight, hashing), or `None` when there are no members.
///
/// Scored by the node's id, not its generation, so a node restarted under the same id gets
/// the same agents back; and only the agents of a member that joins or leaves move (about
/// 1/n of them), never agents between two members that stay. Ties (a 64-bit collision) go to
/// the smaller node id, so every node decides alike.
#[must_use]
pub fn place<'a>(agent: &str, members: &'a [Member]) -> Option<&'a Member> {
    members.iter().max_by(|a, b| {
        score(agent, &a.node)
            .cmp(&score(agent, &b.node))
            .then_with(|| b.node.cmp(&a.node))
    })
}

/// The weight of `node` for `agent`: FNV-1a over both (a separator between them that no
/// UTF-8 text holds), then the SplitMix64 finalizer to spread the bits. Written here rather
/// than taken from `std`'s hasher, whose output may change between Rust releases: nodes of
/// different builds must place alike during a rolling upgrade.
fn score(agent: &str, node: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for byte in node.bytes().chain([0xff]).chain(agent.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// Where a node stands, from how long ago its last heartbeat was acknowledged by the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Heartbeats are going through: it may take leases and commit.
    Healthy,
    /// Its last acknowledged heartbeat is older than half the lease's time to live: it takes
    /// no new lease (one it took could expire before its first commit) but keeps what it
    /// holds; the store still refuses any commit past the lease.
    Doubtful,
    /// Past the time to live: the other nodes may have declared it dead and taken its agents.
    /// It gives up every agent it hosts and joins again as a new generation.
    Lost,
}

/// Where a node stands `since` its last acknowledged heartbeat, under leases living `ttl`.
///
/// The node measures `since` on its own monotonic clock from the moment it *sent* the
/// heartbeat that was acknowledged, so a slow acknowledgement only makes it more careful: the
/// store measured the lease from a later instant.
#[must_use]
pub fn standing(since: Duration, ttl: Duration) -> Standing {
    if since >= ttl {
        Standing::Lost
    } else if since >= ttl / 2 {
        Standing::Doubtful
    } else {
        Standing::Healthy
    }
}

/// How often a node sends its heartbeat under leases living `ttl`: three times per time to
/// live, so two in a row can be lost before it is [`Standing::Doubtful`].
#[must_use]
pub fn heartbeat_every(ttl: Duration) -> Duration {
    ttl / 3
}

/// One agent a node hosts, as the hand-over sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hosted<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// Whether none of its threads is working on a request: only an idle agent moves.
    pub idle: bool,
}

/// The agents `me` should hand over now: the idle ones whose place (by [`place`] over
/// `members`) is another member. A busy agent stays until it is idle, so no agent is ever
/// active on two nodes; with `draining` set every idle agent goes, as the node leaves.
#[must_use]
pub fn hand_over<'a>(
    hosted: &[Hosted<'a>],
    me: &str,
    members: &[Member],
    draining: bool,
) -> Vec<&'a str> {
    hosted
        .iter()
        .filter(|h| h.idle)
        .filter(|h| draining || place(h.agent, members).is_some_and(|m| m.node != me))
        .map(|h| h.agent)
        .collect()
}

/// An agent's lease row as the store holds it, read under the row's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseRow {
    /// The member holding it; `None` once released.
    pub holder: Option<u64>,
    /// Its epoch: bumped each time it changes hands, never reset.
    pub epoch: u64,
    /// Whether the holder's membership is live (not expired, dead or left), by the store's
    /// clock.
    pub holder_live: bool,
}

/// What a member asking for a lease does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseMove {
    /// Take it at `epoch`: the row is written (or created at epoch 1).
    Take {
        /// The new epoch.
        epoch: u64,
    },
    /// It holds it already, at `epoch`: nothing is written.
    Keep {
        /// The epoch it holds.
        epoch: u64,
    },
    /// Another live member, `holder`, holds it.
    Elsewhere {
        /// The holder's generation.
        holder: u64,
    },
    /// The asking member is not live, or draining: it takes nothing.
    Refuse,
}

/// The lease decision for member `me` (taking leases only while `me_takes`: live and not
/// draining) given the agent's row, if it has one: a lease changes hands only once its
/// holder's membership is no longer live, and then at a higher epoch than any before.
#[must_use]
pub fn lease_move(row: Option<LeaseRow>, me: u64, me_takes: bool) -> LeaseMove {
    match row {
        Some(row) if row.holder == Some(me) && row.holder_live => {
            LeaseMove::Keep { epoch: row.epoch }
        }
        Some(LeaseRow {
            holder: Some(holder),
            holder_live: true,
            ..
        }) => LeaseMove::Elsewhere { holder },
        _ if !me_takes => LeaseMove::Refuse,
        None => LeaseMove::Take { epoch: 1 },
        Some(row) => LeaseMove::Take {
            epoch: row.epoch.saturating_add(1),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn members(nodes: &[&str]) -> Vec<Member> {
        nodes
            .iter()
            .zip(1..)
            .map(|(node, generation)| Member {
                node: (*node).to_owned(),
                generation,
            })
            .collect()
    }

    fn agents(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("worker:{i}")).collect()
    }

    #[test]
    fn no_members_place_nothing() {
        assert_eq!(place("worker:1", &[]), None);
    }

    #[test]
    fn every_node_places_alike_whatever_the_order_of_the_members() {
        let forward = members(&["n1", "n2", "n3"]);
        let mut backward = forward.clone();
        backward.reverse();
        for agent in agents(500) {
            let a = place(&agent, &forward).map(|m| &m.node);
            let b = place(&agent, &backward).map(|m| &m.node);
            assert_eq!(a, b, "{agent}");
        }
    }

    #[test]
    fn agents_spread_over_the_members() {
        let members = members(&["n1", "n2", "n3"]);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for agent in agents(3000) {
            let member = place(&agent, &members).expect("a member");
            *counts.entry(member.node.as_str()).or_default() += 1;
        }
        for node in ["n1", "n2", "n3"] {
            let n = counts.get(node).copied().unwrap_or(0);
            assert!(
                (850..=1150).contains(&n),
                "{node} got {n} of 3000: {counts:?}"
            );
        }
    }

    #[test]
    fn a_member_joining_takes_only_its_share_and_moves_nothing_else() {
        let before = members(&["n1", "n2", "n3"]);
        let after = members(&["n1", "n2", "n3", "n4"]);
        let mut moved = 0;
        for agent in agents(4000) {
            let old = &place(&agent, &before).expect("a member").node;
            let new = &place(&agent, &after).expect("a member").node;
            if old != new {
                assert_eq!(new, "n4", "{agent} moved between members that stayed");
                moved += 1;
            }
        }
        assert!((850..=1150).contains(&moved), "{moved} of 4000 moved");
    }

    #[test]
    fn a_member_leaving_gives_away_only_its_own_agents() {
        let before = members(&["n1", "n2", "n3"]);
        let after = members(&["n1", "n3"]);
        for agent in agents(2000) {
            let old = &place(&agent, &before).expect("a member").node;
            let new = &place(&agent, &after).expect("a member").node;
            if old != "n2" {
                assert_eq!(old, new, "{agent} moved though its member stayed");
            }
        }
    }

    #[test]
    fn a_restarted_node_gets_its_agents_back() {
        let before = members(&["n1", "n2", "n3"]);
        let mut after = before.clone();
        after[1].generation = 17;
        for agent in agents(500) {
            assert_eq!(
                place(&agent, &before).map(|m| &m.node),
                place(&agent, &after).map(|m| &m.node)
            );
        }
    }

    #[test]
    fn the_score_is_the_same_in_every_build() {
        // Fixed values (also computed apart, in Python): a change here moves agents between
        // nodes of different builds.
        assert_eq!(score("worker:1", "n1"), 0x787d_f26b_8dd0_a107);
        assert_ne!(score("a", "bc"), score("ab", "c"));
    }

    #[test]
    fn standing_follows_the_age_of_the_last_heartbeat() {
        let ttl = Duration::from_secs(6);
        assert_eq!(standing(Duration::ZERO, ttl), Standing::Healthy);
        assert_eq!(
            standing(Duration::from_millis(2_999), ttl),
            Standing::Healthy
        );
        assert_eq!(standing(Duration::from_secs(3), ttl), Standing::Doubtful);
        assert_eq!(
            standing(Duration::from_millis(5_999), ttl),
            Standing::Doubtful
        );
        assert_eq!(standing(ttl, ttl), Standing::Lost);
        assert_eq!(heartbeat_every(ttl), Duration::from_secs(2));
    }

    #[test]
    fn only_idle_agents_placed_elsewhere_are_handed_over() {
        let members = members(&["n1", "n2"]);
        let names = agents(40);
        let hosted: Vec<Hosted<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, agent)| Hosted {
                agent,
                idle: i % 2 == 0,
            })
            .collect();
        let moving = hand_over(&hosted, "n1", &members, false);
        assert!(!moving.is_empty());
        for agent in &moving {
            let index = names.iter().position(|n| n == agent).expect("hosted");
            assert_eq!(index % 2, 0, "{agent} is busy");
            assert_eq!(place(agent, &members).expect("a member").node, "n2");
        }
        let staying_idle = hosted
            .iter()
            .filter(|h| h.idle && !moving.contains(&h.agent))
            .all(|h| place(h.agent, &members).expect("a member").node == "n1");
        assert!(staying_idle);
    }

    #[test]
    fn a_draining_node_hands_over_every_idle_agent() {
        let members = members(&["n1", "n2"]);
        let hosted = [
            Hosted {
                agent: "worker:1",
                idle: true,
            },
            Hosted {
                agent: "worker:2",
                idle: false,
            },
            Hosted {
                agent: "worker:3",
                idle: true,
            },
        ];
        assert_eq!(
            hand_over(&hosted, "n1", &members, true),
            vec!["worker:1", "worker:3"]
        );
    }

    #[test]
    fn a_lease_changes_hands_only_once_its_holder_is_gone_and_always_upward() {
        let live = |holder, epoch| LeaseRow {
            holder: Some(holder),
            epoch,
            holder_live: true,
        };
        assert_eq!(lease_move(None, 7, true), LeaseMove::Take { epoch: 1 });
        assert_eq!(
            lease_move(Some(live(7, 4)), 7, true),
            LeaseMove::Keep { epoch: 4 }
        );
        assert_eq!(
            lease_move(Some(live(3, 4)), 7, true),
            LeaseMove::Elsewhere { holder: 3 }
        );
        let dead = LeaseRow {
            holder_live: false,
            ..live(3, 4)
        };
        assert_eq!(
            lease_move(Some(dead), 7, true),
            LeaseMove::Take { epoch: 5 }
        );
        let released = LeaseRow {
            holder: None,
            epoch: 9,
            holder_live: false,
        };
        assert_eq!(
            lease_move(Some(released), 7, true),
            LeaseMove::Take { epoch: 10 }
        );
    }

    #[test]
    fn a_member_that_may_not_take_takes_nothing_but_keeps_what_it_holds() {
        let mine = LeaseRow {
            holder: Some(7),
            epoch: 2,
            holder_live: true,
        };
        assert_eq!(lease_move(None, 7, false), LeaseMove::Refuse);
        assert_eq!(
            lease_move(Some(mine), 7, false),
            LeaseMove::Keep { epoch: 2 }
        );
        let orphan = LeaseRow {
            holder: Some(3),
            epoch: 2,
            holder_live: false,
        };
        assert_eq!(lease_move(Some(orphan), 7, false), LeaseMove::Refuse);
    }
}
