//! A map by request id for what a thread holds per open request: almost always one entry or
//! none, so the one is held in place and a hash map is made only for more.

use std::collections::HashMap;

/// Values by request id. A thread holds the asker and the span of its running request, and
/// rarely of several (queued or joined requests): one entry costs no allocation beyond its key,
/// and when the last leaves nothing is kept (a `HashMap` keeps its room between requests, which
/// a conversing thread would hold for as long as it runs).
#[derive(Debug, Default)]
pub(crate) enum Few<V> {
    /// No entries.
    #[default]
    None,
    /// One entry.
    One(String, V),
    /// Two or more (or, after removals, fewer until the last leaves). Boxed: the map is
    /// rare, and unboxed it would make every `Few` the size of a map.
    #[allow(
        clippy::box_collection,
        reason = "a map's 48 bytes out of every Few, at the cost of one allocation when rare"
    )]
    Many(Box<HashMap<String, V>>),
}

impl<V> Few<V> {
    /// Sets `key`'s value, returning the one it replaces.
    pub(crate) fn insert(&mut self, key: String, value: V) -> Option<V> {
        match self {
            Self::None => {
                *self = Self::One(key, value);
                None
            }
            Self::One(held, old) if *held == key => Some(std::mem::replace(old, value)),
            Self::One(..) => {
                let Self::One(held, old) = std::mem::take(self) else {
                    return None;
                };
                *self = Self::Many(Box::new(HashMap::from([(held, old), (key, value)])));
                None
            }
            Self::Many(map) => map.insert(key, value),
        }
    }

    /// `key`'s value.
    pub(crate) fn get(&self, key: &str) -> Option<&V> {
        match self {
            Self::One(held, value) if held == key => Some(value),
            Self::Many(map) => map.get(key),
            _ => None,
        }
    }

    /// `key`'s value, to change.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        match self {
            Self::One(held, value) if held == key => Some(value),
            Self::Many(map) => map.get_mut(key),
            _ => None,
        }
    }

    /// Takes `key`'s value out.
    pub(crate) fn remove(&mut self, key: &str) -> Option<V> {
        match self {
            Self::One(held, _) if held == key => match std::mem::take(self) {
                Self::One(_, value) => Some(value),
                _ => None,
            },
            Self::Many(map) => {
                let value = map.remove(key);
                if map.is_empty() {
                    *self = Self::None;
                }
                value
            }
            _ => None,
        }
    }

    /// How many entries there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::None => 0,
            Self::One(..) => 1,
            Self::Many(map) => map.len(),
        }
    }

    /// The values, in no particular order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        let (one, many) = match self {
            Self::None => (None, None),
            Self::One(_, value) => (Some(value), None),
            Self::Many(map) => (None, Some(map.values())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// Whether there are no entries.
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Self::None)
    }

    /// Takes every entry out.
    pub(crate) fn drain(&mut self) -> Vec<(String, V)> {
        match std::mem::take(self) {
            Self::None => Vec::new(),
            Self::One(key, value) => vec![(key, value)],
            Self::Many(map) => map.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_is_held_in_place_and_more_go_to_a_map_until_the_last_leaves() {
        let mut few = Few::default();
        assert!(few.is_empty());
        assert_eq!(few.insert("r1".to_owned(), 1), None);
        assert!(matches!(few, Few::One(..)));
        assert_eq!(few.insert("r1".to_owned(), 2), Some(1));
        assert_eq!(few.get("r1"), Some(&2));
        assert_eq!(few.insert("r2".to_owned(), 3), None);
        assert!(matches!(few, Few::Many(_)));
        if let Some(v) = few.get_mut("r2") {
            *v = 4;
        }
        assert!(few.get("r1").is_some() && few.get("r2").is_some() && few.get("r3").is_none());
        assert_eq!(few.remove("r1"), Some(2));
        assert_eq!(few.remove("r1"), None);
        assert!(!few.is_empty());
        assert_eq!(few.remove("r2"), Some(4));
        assert!(few.is_empty() && matches!(few, Few::None));
        assert_eq!(few.remove("r2"), None);
    }

    #[test]
    fn a_few_is_the_size_of_its_one_entry() {
        // Every agent holds one for its running threads: a key and an actor ref, no more.
        assert_eq!(size_of::<Few<u64>>(), size_of::<(String, u64)>());
    }

    #[test]
    fn len_and_values_see_every_entry_held_in_place_or_in_the_map() {
        let mut few = Few::default();
        assert_eq!((few.len(), few.values().count()), (0, 0));
        few.insert("a".to_owned(), 1);
        assert_eq!(few.len(), 1);
        assert_eq!(few.values().copied().collect::<Vec<_>>(), [1]);
        few.insert("b".to_owned(), 2);
        let mut values: Vec<i32> = few.values().copied().collect();
        values.sort_unstable();
        assert_eq!((few.len(), values), (2, vec![1, 2]));
    }

    #[test]
    fn drain_takes_every_entry_and_leaves_none() {
        let mut few = Few::default();
        assert!(few.drain().is_empty());
        few.insert("a".to_owned(), 1);
        assert_eq!(few.drain(), [("a".to_owned(), 1)]);
        few.insert("a".to_owned(), 1);
        few.insert("b".to_owned(), 2);
        let mut all = few.drain();
        all.sort();
        assert_eq!(all, [("a".to_owned(), 1), ("b".to_owned(), 2)]);
        assert!(few.is_empty());
    }
}
