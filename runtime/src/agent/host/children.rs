//! The children a thread started with `Spawn`, as it remembers them: by tag, each with the name
//! it runs under and the spec it was started from. They are stored with the thread's state, so
//! a thread that idled, restarted or came back in another process still knows its children —
//! `StopChild` finds them, and a child not running is started again when the thread next
//! starts. What a step's directives do to the map is decided here, before the step's commit,
//! so the map stored is the one the directives then carry out.

use std::collections::BTreeMap;

use motet_directives::{ChildSpec, Directive, Spawn};
use serde::{Deserialize, Serialize};

/// A child as its parent's thread remembers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredChild {
    /// The name it is registered under.
    pub(crate) name: String,
    /// What it was started from: its kind and configuration.
    pub(crate) spec: ChildSpec,
}

/// A thread's children, by tag.
pub(crate) type Children = BTreeMap<String, StoredChild>;

/// The name a spawned child runs under: the one its spec gives, else `<parent>/<tag>`.
pub(crate) fn child_name(parent: &str, spawn: &Spawn) -> String {
    spawn
        .spec
        .name
        .clone()
        .unwrap_or_else(|| format!("{parent}/{}", spawn.tag))
}

/// The children once `directives` (a step's, in order) are carried out by `parent`: each
/// `Spawn` records its child under its tag (a tag spawned again names the new child), each
/// `StopChild` forgets its tag. `None` when they change nothing.
pub(crate) fn after_step(
    children: &Children,
    parent: &str,
    directives: &[Directive],
) -> Option<Children> {
    let touches = |d: &Directive| matches!(d, Directive::Spawn(_) | Directive::StopChild(_));
    if !directives.iter().any(touches) {
        return None;
    }
    let mut after = children.clone();
    for directive in directives {
        match directive {
            Directive::Spawn(spawn) => {
                let child = StoredChild {
                    name: child_name(parent, spawn),
                    spec: spawn.spec.clone(),
                };
                after.insert(spawn.tag.clone(), child);
            }
            Directive::StopChild(stop) => {
                after.remove(&stop.tag);
            }
            _ => {}
        }
    }
    (after != *children).then_some(after)
}

/// Forgets the child `name` tagged `tag` (it stopped, or failed to start); a tag that names
/// another child by now (spawned again since) is left. Returns whether it was forgotten.
pub(crate) fn forget(children: &mut Children, tag: &str, name: &str) -> bool {
    if children.get(tag).is_some_and(|c| c.name == name) {
        children.remove(tag);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use motet_directives::{ChildSpec, Directive, Spawn, StopChild};

    use super::{Children, after_step, child_name, forget};

    fn spawn(tag: &str, name: Option<&str>) -> Directive {
        Directive::Spawn(Spawn {
            tag: tag.to_owned(),
            spec: ChildSpec {
                kind: "worker".to_owned(),
                name: name.map(str::to_owned),
                config: serde_json::json!({"tag": tag}),
            },
        })
    }

    fn stop(tag: &str) -> Directive {
        Directive::StopChild(StopChild {
            tag: tag.to_owned(),
            reason: "done".to_owned(),
        })
    }

    #[test]
    fn a_child_is_named_by_its_spec_else_under_its_parent() {
        let Directive::Spawn(named) = spawn("w", Some("alice")) else {
            unreachable!()
        };
        let Directive::Spawn(plain) = spawn("w", None) else {
            unreachable!()
        };
        assert_eq!(child_name("boss", &named), "alice");
        assert_eq!(child_name("boss", &plain), "boss/w");
    }

    #[test]
    fn directives_that_touch_no_child_change_nothing() {
        let children = after_step(&Children::new(), "boss", &[spawn("a", None)]).unwrap();
        assert_eq!(after_step(&children, "boss", &[]), None);
        let cancel = Directive::CancelSchedule(motet_directives::CancelSchedule {
            schedule_id: motet_directives::ScheduleId::new("t"),
        });
        assert_eq!(after_step(&children, "boss", &[cancel]), None);
        // A stop of a tag it does not have changes nothing either.
        assert_eq!(after_step(&children, "boss", &[stop("zz")]), None);
    }

    #[test]
    fn spawns_and_stops_apply_in_order() {
        let two = after_step(
            &Children::new(),
            "boss",
            &[spawn("a", None), spawn("b", Some("bee"))],
        )
        .unwrap();
        assert_eq!(two["a"].name, "boss/a");
        assert_eq!(two["b"].name, "bee");
        assert_eq!(two["b"].spec.config["tag"], "b");
        let one = after_step(&two, "boss", &[stop("a")]).unwrap();
        assert_eq!(one.keys().collect::<Vec<_>>(), ["b"]);
        // Stopped and spawned again in one step: the tag names the new child.
        let again = after_step(&one, "boss", &[stop("b"), spawn("b", None)]).unwrap();
        assert_eq!(again["b"].name, "boss/b");
        // Spawned and stopped in one step: nothing is left of it.
        assert_eq!(
            after_step(&one, "boss", &[spawn("c", None), stop("c")]),
            None
        );
    }

    #[test]
    fn a_stopped_child_is_forgotten_only_under_its_own_tag_and_name() {
        let mut children = after_step(&Children::new(), "boss", &[spawn("a", None)]).unwrap();
        assert!(
            !forget(&mut children, "a", "boss/old-a"),
            "another child by now"
        );
        assert!(!forget(&mut children, "b", "boss/a"));
        assert_eq!(children.len(), 1);
        assert!(forget(&mut children, "a", "boss/a"));
        assert!(children.is_empty());
    }
}
