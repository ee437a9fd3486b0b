//! The environment a strategy sees in production: the system clock and UUIDv7 ids, written
//! in base 62.

use std::time::{SystemTime, UNIX_EPOCH};

use motet_agents::Env;

/// The system clock and time-ordered random ids (UUIDv7, in 22 base-62 digits that sort as
/// the ids do), prefixed as the strategy asks.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemEnv;

impl Env for SystemEnv {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }

    fn fresh_id(&self, prefix: &str) -> String {
        motet_agents::id_text(prefix, uuid::Uuid::now_v7().as_u128())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_prefixed_and_time_ordered() {
        let env = SystemEnv;
        let a = env.fresh_id("call");
        let b = env.fresh_id("call");
        assert!(a.starts_with("call_"));
        assert_eq!(a.len(), "call_".len() + 22);
        assert_ne!(a, b);
        // A UUIDv7 counts up within a process, and its digits sort as its bits.
        assert!(a < b, "{a} then {b}");
        assert_eq!(
            motet_agents::EntryId::new(env.fresh_id("entry"))
                .to_string()
                .len(),
            "entry_".len() + 22
        );
        assert!(env.now_ms() > 1_700_000_000_000);
    }
}
