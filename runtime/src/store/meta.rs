//! Which agent's thread a stored thread is, and what that agent needs besides the thread to
//! come back: [`ThreadKey`] (`<agent>/<thread>`, the thread's id in the store) and
//! [`ThreadMeta`], which names the key in fields of its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A thread of an agent. Its id in the store is `<agent>/<thread>`, so two agents' threads of
/// the same name never share a history; the runtime also keys its running threads by it.
///
/// A store id alone does not say where the agent's name ends: an agent started by another is
/// named `<parent>/<tag>`, so `a/b/c` may be thread `b/c` of `a` or thread `c` of `a/b`. The
/// meta stored with the thread names both ([`ThreadMeta::key`]); given the agent,
/// [`thread_in`](Self::thread_in) takes an id apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ThreadKey {
    pub(crate) agent: Arc<str>,
    pub(crate) thread: Arc<str>,
}

impl ThreadKey {
    /// The key of `thread` of `agent`.
    pub fn new(agent: impl Into<Arc<str>>, thread: impl Into<Arc<str>>) -> Self {
        Self {
            agent: agent.into(),
            thread: thread.into(),
        }
    }

    /// The agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The thread's id within the agent.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// The thread's id in the store: `<agent>/<thread>`.
    pub fn store_id(&self) -> String {
        Self::store_id_of(&self.agent, &self.thread)
    }

    /// The store id of `thread` of `agent`, without making a key: the one place it is written.
    pub fn store_id_of(agent: &str, thread: &str) -> String {
        format!("{agent}/{thread}")
    }

    /// The thread of `agent` that the store id `store_id` names, or `None` when it is not one of
    /// `agent`'s threads: the one place a store id is taken apart.
    pub fn thread_in<'a>(agent: &str, store_id: &'a str) -> Option<&'a str> {
        store_id.strip_prefix(agent)?.strip_prefix('/')
    }
}

impl std::fmt::Display for ThreadKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.agent, self.thread)
    }
}

/// What an agent needs, besides the thread, to come back after a restart.
///
/// Stored as JSON: `{"policy": …, "agent": …, "thread": …, "strategy_config_id": …, "extra":
/// {…}}`, each field left out when empty. Meta written before the key had fields of its own
/// (the agent's name in `strategy_config_id`, the thread in `extra["thread"]`) reads back with
/// them as its [`key`](Self::key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "MetaRecord", into = "MetaRecord")]
pub struct ThreadMeta {
    /// The context policy in force, as JSON (a `ContextPolicy` or a preset's name).
    pub policy: Option<serde_json::Value>,
    /// The agent that runs the thread and the thread's id within it: how recovery and the
    /// listing of calls waiting for a person find the thread's agent. `None` for a thread no
    /// agent wrote.
    pub key: Option<ThreadKey>,
    /// Which strategy configuration runs the thread, for an application that names its
    /// configurations; the runtime leaves it `None`.
    pub strategy_config_id: Option<String>,
    /// Anything else the runtime wants back.
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// [`ThreadMeta`] as its JSON spells it.
#[derive(Clone, Default, Serialize, Deserialize)]
struct MetaRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    policy: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    thread: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    strategy_config_id: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    extra: BTreeMap<String, serde_json::Value>,
}

impl From<MetaRecord> for ThreadMeta {
    fn from(mut record: MetaRecord) -> Self {
        let key = match (record.agent, record.thread) {
            (Some(agent), Some(thread)) => Some(ThreadKey::new(agent, thread)),
            _ => legacy_key(&mut record.strategy_config_id, &mut record.extra),
        };
        Self {
            policy: record.policy,
            key,
            strategy_config_id: record.strategy_config_id,
            extra: record.extra,
        }
    }
}

/// The key of meta written before it had fields of its own, taken out of where it was kept:
/// the agent's name in `strategy_config_id`, the thread in `extra["thread"]`. `None`, and
/// both left as they are, unless both are there.
fn legacy_key(
    strategy_config_id: &mut Option<String>,
    extra: &mut BTreeMap<String, serde_json::Value>,
) -> Option<ThreadKey> {
    let thread = extra.get("thread")?.as_str()?;
    let agent = strategy_config_id.as_deref()?;
    let key = ThreadKey::new(agent, thread);
    *strategy_config_id = None;
    extra.remove("thread");
    Some(key)
}

impl From<ThreadMeta> for MetaRecord {
    fn from(meta: ThreadMeta) -> Self {
        let (agent, thread) = match meta.key {
            Some(key) => (Some(key.agent.to_string()), Some(key.thread.to_string())),
            None => (None, None),
        };
        Self {
            policy: meta.policy,
            agent,
            thread,
            strategy_config_id: meta.strategy_config_id,
            extra: meta.extra,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_written_in_fields_of_its_own() {
        let meta = ThreadMeta {
            key: Some(ThreadKey::new("echo", "chat")),
            ..ThreadMeta::default()
        };
        let json = serde_json::to_value(&meta).unwrap_or_default();
        assert_eq!(json, serde_json::json!({"agent": "echo", "thread": "chat"}));
        let back: Option<ThreadMeta> = serde_json::from_value(json).ok();
        assert_eq!(back, Some(meta));
    }

    #[test]
    fn meta_of_the_old_shape_reads_with_its_key() {
        let old =
            r#"{"policy":"default","strategy_config_id":"echo","extra":{"thread":"chat","x":1}}"#;
        let meta: Option<ThreadMeta> = serde_json::from_str(old).ok();
        let expected = ThreadMeta {
            policy: Some(serde_json::json!("default")),
            key: Some(ThreadKey::new("echo", "chat")),
            strategy_config_id: None,
            extra: [("x".to_owned(), serde_json::json!(1))]
                .into_iter()
                .collect(),
        };
        assert_eq!(meta, Some(expected));
    }

    #[test]
    fn meta_without_both_halves_of_the_old_key_keeps_what_it_has() {
        let meta: Option<ThreadMeta> =
            serde_json::from_str(r#"{"strategy_config_id":"react/default"}"#).ok();
        let expected = ThreadMeta {
            strategy_config_id: Some("react/default".to_owned()),
            ..ThreadMeta::default()
        };
        assert_eq!(meta, Some(expected));
    }

    #[test]
    fn a_store_id_is_taken_apart_given_its_agent() {
        let key = ThreadKey::new("coord/worker", "t/1");
        assert_eq!(key.store_id(), "coord/worker/t/1");
        assert_eq!(key.to_string(), key.store_id());
        assert_eq!(
            ThreadKey::thread_in("coord/worker", &key.store_id()),
            Some("t/1")
        );
        assert_eq!(
            ThreadKey::thread_in("coord", &key.store_id()),
            Some("worker/t/1")
        );
        assert_eq!(ThreadKey::thread_in("coordinator", "coord/t"), None);
        assert_eq!(ThreadKey::thread_in("coord", "coordinator/t"), None);
    }
}
