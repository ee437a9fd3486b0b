//! The directory of agents: which agents the store holds threads of, when each was created
//! and last active, listed without activating anyone. Derived from the threads themselves (a
//! thread's key names its agent), so it is as durable as they are and needs no table of its
//! own: an agent is in it once a thread of it committed.

use serde::{Deserialize, Serialize};

/// Which agents to list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentQuery {
    /// Only the virtual agents of this kind (`<kind>:<key>`); every agent for `None`.
    pub kind: Option<String>,
    /// Only agents whose names sort after this one (the last of the page before).
    pub after: Option<String>,
    /// At most this many.
    pub limit: usize,
}

impl Default for AgentQuery {
    fn default() -> Self {
        Self {
            kind: None,
            after: None,
            limit: 1_000,
        }
    }
}

impl AgentQuery {
    /// Whether `agent` is one this query lists (its page aside).
    pub fn selects(&self, agent: &str) -> bool {
        let of_kind = match &self.kind {
            None => true,
            Some(kind) => agent
                .split_once(':')
                .is_some_and(|(k, key)| k == kind && !key.is_empty()),
        };
        of_kind && self.after.as_deref().is_none_or(|after| agent > after)
    }
}

/// One agent of the directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// The agent's name (`<kind>:<key>` for a virtual agent).
    pub name: String,
    /// How many threads of it are stored.
    pub threads: u64,
    /// When its first thread was created (Unix milliseconds).
    pub created_at: u64,
    /// When a thread of it last committed (Unix milliseconds).
    pub last_active: u64,
}

impl AgentRecord {
    /// The kind and key of a virtual agent's name; `None` for another agent.
    pub fn kind_and_key(&self) -> Option<(&str, &str)> {
        self.name
            .split_once(':')
            .filter(|(kind, key)| !kind.is_empty() && !key.is_empty() && !kind.contains('/'))
    }
}

/// The directory `query` asks for, from each stored thread's agent, creation and last commit:
/// grouped by agent, by name, the page after `query.after`, at most `query.limit`.
pub fn directory(
    threads: impl IntoIterator<Item = (String, u64, u64)>,
    query: &AgentQuery,
) -> Vec<AgentRecord> {
    let mut agents: std::collections::BTreeMap<String, AgentRecord> = Default::default();
    for (agent, created_at, updated_at) in threads {
        if !query.selects(&agent) {
            continue;
        }
        let record = agents.entry(agent).or_insert_with_key(|name| AgentRecord {
            name: name.clone(),
            threads: 0,
            created_at,
            last_active: updated_at,
        });
        record.threads += 1;
        record.created_at = record.created_at.min(created_at);
        record.last_active = record.last_active.max(updated_at);
    }
    agents.into_values().take(query.limit).collect()
}

#[cfg(test)]
mod tests {
    use super::{AgentQuery, directory};

    fn rows() -> Vec<(String, u64, u64)> {
        [
            ("room:b", 5, 9),
            ("room:a", 3, 4),
            ("room:b", 2, 12),
            ("roomy:a", 1, 1),
            ("plain", 7, 8),
        ]
        .into_iter()
        .map(|(a, c, u)| (a.to_owned(), c, u))
        .collect()
    }

    #[test]
    fn threads_group_into_agents_by_name() {
        let all = directory(rows(), &AgentQuery::default());
        let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["plain", "room:a", "room:b", "roomy:a"]);
        let b = &all[2];
        assert_eq!((b.threads, b.created_at, b.last_active), (2, 2, 12));
        assert_eq!(b.kind_and_key(), Some(("room", "b")));
        assert_eq!(all[0].kind_and_key(), None);
    }

    #[test]
    fn a_kind_selects_its_virtual_agents_only_and_pages_follow() {
        let query = AgentQuery {
            kind: Some("room".to_owned()),
            after: None,
            limit: 1,
        };
        let first = directory(rows(), &query);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].name, "room:a");
        let next = AgentQuery {
            after: Some(first[0].name.clone()),
            ..query
        };
        let second = directory(rows(), &next);
        assert_eq!(second[0].name, "room:b");
        let last = AgentQuery {
            after: Some("room:b".to_owned()),
            ..next
        };
        assert!(directory(rows(), &last).is_empty());
    }
}
