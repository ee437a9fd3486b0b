//! Where signals go on NATS: the subject a signal is published on, the filter subjects a
//! consumer's pattern becomes, the durable name a consumer's name becomes, and the message id
//! JetStream deduplicates by. Pure functions, tested without a server.
//!
//! # Patterns as filter subjects
//! NATS subjects are dot-separated tokens like motet's types, so most patterns map directly:
//! `*` is NATS `*` (one token). A trailing `**` matches zero or more segments; NATS `>` matches
//! one or more, so `a.**` becomes two filters, `P.a` and `P.a.>` (they never overlap, as NATS
//! requires of one consumer's filters). A `**` anywhere else has no NATS equivalent: the server
//! filters on the part before the first `**` followed by `>`, and the consumer checks each
//! signal against the whole pattern ([`Pattern::matches`]), acknowledging and skipping the
//! rest.

use motet_signals::{Pattern, PatternSegment, Signal};
use uuid::Uuid;

/// How a pattern is filtered: the server's filter subjects, and whether the consumer must
/// check each signal against the pattern too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// The consumer's filter subjects (one or two, never overlapping).
    pub subjects: Vec<String>,
    /// The server's filters let through more than the pattern matches: check locally.
    pub local: bool,
}

/// The subject a signal of type `ty` is published on under `prefix`.
pub fn subject_for(prefix: &str, ty: &str) -> String {
    format!("{prefix}.{ty}")
}

/// The filter subjects for `pattern` under `prefix` (see the module docs).
pub fn filter_for(prefix: &str, pattern: &Pattern) -> Filter {
    // Consecutive `**` mean what one does.
    let mut segments: Vec<&PatternSegment> = Vec::new();
    for segment in pattern.segments() {
        let repeated = matches!(segment, PatternSegment::Many)
            && matches!(segments.last(), Some(PatternSegment::Many));
        if !repeated {
            segments.push(segment);
        }
    }
    let token = |segment: &PatternSegment| match segment {
        PatternSegment::Literal(text) => text.to_string(),
        PatternSegment::One => "*".to_owned(),
        PatternSegment::Many => ">".to_owned(),
    };
    let first_many = segments
        .iter()
        .position(|s| matches!(s, PatternSegment::Many));
    let head = |until: usize| -> String {
        let mut subject = prefix.to_owned();
        for segment in &segments[..until] {
            subject.push('.');
            subject.push_str(&token(segment));
        }
        subject
    };
    match first_many {
        None => Filter {
            subjects: vec![head(segments.len())],
            local: false,
        },
        // `**` alone: every type has at least one segment, so `>` is exact.
        Some(0) if segments.len() == 1 => Filter {
            subjects: vec![format!("{prefix}.>")],
            local: false,
        },
        // A trailing `**`: the head itself (zero segments) and the head with more (`>`).
        Some(at) if at + 1 == segments.len() => Filter {
            subjects: vec![head(at), format!("{}.>", head(at))],
            local: false,
        },
        // A `**` with more after it: at least one segment follows the head, so `head.>` holds
        // every match; the rest is checked locally.
        Some(at) => Filter {
            subjects: vec![format!("{}.>", head(at))],
            local: true,
        },
    }
}

/// Why a consumer name cannot be a JetStream durable name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is empty.
    #[error("a consumer name must not be empty")]
    Empty,
    /// The escaped name is longer than JetStream takes.
    #[error("the consumer name is too long ({0} bytes escaped; at most {MAX_NAME})")]
    TooLong(usize),
}

/// The longest durable name made (JetStream stores each consumer in a folder of that name).
pub const MAX_NAME: usize = 200;

/// The JetStream durable name for consumer `name`: ASCII letters, digits, `-` and `_` stay;
/// every other byte (`.`, `*`, `>`, whitespace, `/`, non-ASCII, and `~` itself) becomes `~XX`
/// (its hex value), so distinct names stay distinct: `agent.worker` is `agent~2Eworker`.
///
/// # Errors
/// [`NameError`] for an empty name or one longer than [`MAX_NAME`] once escaped.
pub fn durable_name(name: &str) -> Result<String, NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    let mut escaped = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            escaped.push(char::from(byte));
        } else {
            escaped.push_str(&format!("~{byte:02X}"));
        }
    }
    if escaped.len() > MAX_NAME {
        return Err(NameError::TooLong(escaped.len()));
    }
    Ok(escaped)
}

/// The namespace of motet's message ids (a fixed UUID, so ids agree across processes).
const MSG_ID_NAMESPACE: Uuid = Uuid::from_u128(0x6d6f_7465_742d_6a73_8000_0000_0000_0001);

/// The `Nats-Msg-Id` of `signal`: a UUIDv5 of its `source` and `id`, the pair CloudEvents
/// identifies an event by, so publishing the same event twice stores it once (within the
/// stream's duplicate window). The source's length goes first, so no two pairs run together.
pub fn message_id(signal: &Signal) -> String {
    let source = signal.source();
    let key = format!("{}:{source}{}", source.len(), signal.id().as_str());
    Uuid::new_v5(&MSG_ID_NAMESPACE, key.as_bytes()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use motet_signals::SignalType;

    fn pattern(text: &str) -> Pattern {
        Pattern::new(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn filter(text: &str) -> (Vec<String>, bool) {
        let f = filter_for("P", &pattern(text));
        (f.subjects, f.local)
    }

    fn subjects(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn literal_and_single_wildcard_patterns_map_token_for_token() {
        assert_eq!(
            filter("agent.request"),
            (subjects(&["P.agent.request"]), false)
        );
        assert_eq!(filter("task.*.done"), (subjects(&["P.task.*.done"]), false));
        assert_eq!(filter("*"), (subjects(&["P.*"]), false));
    }

    #[test]
    fn a_trailing_double_star_also_matches_the_head_itself() {
        assert_eq!(filter("a.**"), (subjects(&["P.a", "P.a.>"]), false));
        assert_eq!(filter("a.*.**"), (subjects(&["P.a.*", "P.a.*.>"]), false));
        assert_eq!(filter("a.**.**"), (subjects(&["P.a", "P.a.>"]), false));
        assert_eq!(filter("**"), (subjects(&["P.>"]), false));
        assert_eq!(filter("**.**"), (subjects(&["P.>"]), false));
    }

    #[test]
    fn a_double_star_in_the_middle_filters_on_its_head_and_locally() {
        assert_eq!(filter("a.**.done"), (subjects(&["P.a.>"]), true));
        assert_eq!(filter("a.*.**.b.**"), (subjects(&["P.a.*.>"]), true));
        assert_eq!(filter("**.done"), (subjects(&["P.>"]), true));
    }

    /// A NATS subject filter as the server reads it: `*` one token, a last `>` one or more.
    fn nats_matches(filter: &str, subject: &str) -> bool {
        let f: Vec<&str> = filter.split('.').collect();
        let s: Vec<&str> = subject.split('.').collect();
        for (i, token) in f.iter().enumerate() {
            if *token == ">" {
                return s.len() > i;
            }
            match s.get(i) {
                Some(t) if *token == "*" || token == t => {}
                _ => return false,
            }
        }
        f.len() == s.len()
    }

    /// The server filters plus the local check accept exactly what the pattern matches, and
    /// one consumer's filters never overlap.
    #[test]
    fn filters_accept_exactly_the_pattern_matches() {
        let patterns = [
            "a",
            "a.b",
            "*",
            "a.*",
            "*.b",
            "a.**",
            "**",
            "**.b",
            "a.**.b",
            "a.*.**",
            "**.a.**",
            "a.**.b.**",
            "*.**.*",
            "a.**.**.b",
        ];
        let types = [
            "a", "b", "a.b", "a.c", "b.b", "a.b.c", "a.x.b", "a.b.b", "x.a.y", "a.x.y.b", "c.a",
            "a.a.a.a",
        ];
        for text in patterns {
            let p = pattern(text);
            let f = filter_for("motet.signals", &p);
            for (i, x) in f.subjects.iter().enumerate() {
                for y in &f.subjects[i + 1..] {
                    for ty in types {
                        let subject = subject_for("motet.signals", ty);
                        assert!(
                            !(nats_matches(x, &subject) && nats_matches(y, &subject)),
                            "{text}: {x} and {y} overlap on {ty}"
                        );
                    }
                }
            }
            for ty in types {
                let t = SignalType::new(ty).unwrap_or_else(|e| panic!("{e}"));
                let subject = subject_for("motet.signals", ty);
                let server = f.subjects.iter().any(|s| nats_matches(s, &subject));
                let accepted = server && (!f.local || p.matches(&t));
                assert_eq!(accepted, p.matches(&t), "{text} vs {ty}: {f:?}");
                assert!(
                    server || !p.matches(&t),
                    "{text} vs {ty}: server drops a match"
                );
            }
        }
    }

    #[test]
    fn durable_names_escape_what_nats_refuses_and_stay_distinct() {
        assert_eq!(durable_name("worker-1_a").as_deref(), Ok("worker-1_a"));
        assert_eq!(
            durable_name("agent.worker").as_deref(),
            Ok("agent~2Eworker")
        );
        assert_eq!(durable_name("a b*>/~").as_deref(), Ok("a~20b~2A~3E~2F~7E"));
        assert_eq!(durable_name("é").as_deref(), Ok("~C3~A9"));
        assert_ne!(durable_name("a.b"), durable_name("a_b"));
        assert_ne!(durable_name("a~2Eb"), durable_name("a.b"));
        assert_eq!(durable_name(""), Err(NameError::Empty));
        assert_eq!(durable_name(&".".repeat(100)), Err(NameError::TooLong(300)));
    }

    #[test]
    fn message_ids_follow_source_and_id_only() {
        let make = |source: &str, id: &str, ty: &str| {
            Signal::builder(ty, source)
                .with_id(id)
                .build()
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let a = message_id(&make("/a", "1", "x.y"));
        assert_eq!(a, message_id(&make("/a", "1", "other.type")));
        assert_ne!(a, message_id(&make("/a", "2", "x.y")));
        assert_ne!(a, message_id(&make("/b", "1", "x.y")));
        // `/a1` + `` can not be told from `/a` + `1` without the length.
        assert_ne!(
            message_id(&make("/a1", "2", "x")),
            message_id(&make("/a", "12", "x"))
        );
    }
}
