//! Validated signal types (`llm.result`) and the patterns routers and buses match them with.
//!
//! # Syntax
//! A type is one or more segments separated by `.`. A segment is one or more characters, each a
//! Unicode alphanumeric character (`char::is_alphanumeric`), `_` or `-`. So `agent.worker.17.done`,
//! `tool_call.result` and `café.commandé` are types; ``, `.a`, `a.`, `a..b`, `a b` and `a.*` are not.
//!
//! A [`Pattern`] uses the same segments plus two wildcards, each a whole segment:
//! - `*` matches exactly one segment: `task.*.assigned` matches `task.7.assigned`.
//! - `**` matches zero or more segments, anywhere and any number of times: `task.**` matches
//!   `task`, `task.7` and `task.7.assigned`; `**` alone matches every type; `a.**.b.**` matches
//!   `a.b`, `a.x.b.y.z`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::SignalError;

/// Whether `c` may appear in a type segment.
fn is_segment_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Checks one literal segment of `input` (a type or pattern, for the error message).
fn check_literal(input: &str, segment: &str, index: usize) -> Result<(), SignalError> {
    if segment.is_empty() {
        return Err(SignalError::EmptySegment {
            input: input.to_owned(),
            index,
        });
    }
    match segment.chars().find(|c| !is_segment_char(*c)) {
        Some(found) => Err(SignalError::InvalidCharacter {
            input: input.to_owned(),
            found,
        }),
        None => Ok(()),
    }
}

/// A validated, dot-separated signal type such as `agent.request` or `agent.worker.done`.
///
/// One or more segments separated by `.`; a segment is one or more Unicode alphanumeric
/// characters, `_` or `-`. Empty segments (leading, trailing or double dots), whitespace, `*` and
/// other punctuation are rejected. Cheap to clone (a shared `Arc<str>`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SignalType(Arc<str>);

impl SignalType {
    /// Validates `ty` and wraps it.
    ///
    /// # Errors
    /// [`SignalError::EmptyType`], [`SignalError::EmptySegment`] or
    /// [`SignalError::InvalidCharacter`] when `ty` is not a valid type.
    pub fn new(ty: impl AsRef<str>) -> Result<Self, SignalError> {
        let ty = ty.as_ref();
        Self::validate(ty)?;
        Ok(Self(Arc::from(ty)))
    }

    /// Checks `ty` without allocating.
    ///
    /// # Errors
    /// As [`SignalType::new`].
    pub fn validate(ty: &str) -> Result<(), SignalError> {
        if ty.is_empty() {
            return Err(SignalError::EmptyType);
        }
        for (index, segment) in ty.split('.').enumerate() {
            check_literal(ty, segment, index)?;
        }
        Ok(())
    }

    /// The type as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The segments, in order.
    pub fn segments(&self) -> std::str::Split<'_, char> {
        self.0.split('.')
    }
}

impl fmt::Display for SignalType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SignalType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SignalType({:?})", &*self.0)
    }
}

impl AsRef<str> for SignalType {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for SignalType {
    type Err = SignalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<&str> for SignalType {
    type Error = SignalError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl TryFrom<String> for SignalType {
    type Error = SignalError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl Serialize for SignalType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SignalType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::new(text).map_err(serde::de::Error::custom)
    }
}

/// One segment of a [`Pattern`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PatternSegment {
    /// Matches exactly this segment.
    Literal(Box<str>),
    /// `*`: matches exactly one segment, whatever it is.
    One,
    /// `**`: matches zero or more segments.
    Many,
}

/// A validated type pattern for routers and buses: `task.*.assigned`, `task.**`, `**`.
///
/// Segments as in [`SignalType`], plus two wildcards, each a whole segment: `*` matches exactly
/// one segment, `**` matches zero or more (anywhere, any number of times). `task.**` matches
/// `task` and `task.7.assigned`; `**` alone matches every type. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Pattern {
    text: Arc<str>,
    segments: Arc<[PatternSegment]>,
}

impl Pattern {
    /// Parses and validates `pattern`.
    ///
    /// # Errors
    /// [`SignalError::EmptyType`], [`SignalError::EmptySegment`],
    /// [`SignalError::InvalidCharacter`] or [`SignalError::InvalidWildcard`].
    pub fn new(pattern: impl AsRef<str>) -> Result<Self, SignalError> {
        let text = pattern.as_ref();
        if text.is_empty() {
            return Err(SignalError::EmptyType);
        }
        let mut segments = Vec::new();
        for (index, segment) in text.split('.').enumerate() {
            let parsed = match segment {
                "*" => PatternSegment::One,
                "**" => PatternSegment::Many,
                _ if segment.contains('*') => {
                    return Err(SignalError::InvalidWildcard {
                        pattern: text.to_owned(),
                        segment: segment.to_owned(),
                    });
                }
                _ => {
                    check_literal(text, segment, index)?;
                    PatternSegment::Literal(segment.into())
                }
            };
            segments.push(parsed);
        }
        Ok(Self {
            text: Arc::from(text),
            segments: segments.into(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The parsed segments.
    pub fn segments(&self) -> &[PatternSegment] {
        &self.segments
    }

    /// Whether the pattern has no wildcard (it matches one type only).
    pub fn is_exact(&self) -> bool {
        self.segments
            .iter()
            .all(|s| matches!(s, PatternSegment::Literal(_)))
    }

    /// Whether `ty` matches this pattern.
    ///
    /// A single check; to match one type against many patterns use a [`Router`](crate::Router).
    pub fn matches(&self, ty: &SignalType) -> bool {
        // Greedy glob matching with one backtrack point: the most recent `**` and the type
        // position it was tried at. Linear in practice, never exponential.
        let segs: Vec<&str> = ty.segments().collect();
        let pat = &self.segments;
        let (mut p, mut t) = (0usize, 0usize);
        let mut backtrack: Option<(usize, usize)> = None;
        loop {
            if p < pat.len() {
                match &pat[p] {
                    PatternSegment::Many => {
                        backtrack = Some((p, t));
                        p += 1;
                        continue;
                    }
                    PatternSegment::One if t < segs.len() => {
                        p += 1;
                        t += 1;
                        continue;
                    }
                    PatternSegment::Literal(lit) if t < segs.len() && **lit == *segs[t] => {
                        p += 1;
                        t += 1;
                        continue;
                    }
                    _ => {}
                }
            } else if t == segs.len() {
                return true;
            }
            match backtrack {
                Some((star, at)) if at < segs.len() => {
                    backtrack = Some((star, at + 1));
                    p = star + 1;
                    t = at + 1;
                }
                _ => return false,
            }
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pattern({:?})", &*self.text)
    }
}

impl FromStr for Pattern {
    type Err = SignalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<&str> for Pattern {
    type Error = SignalError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<SignalType> for Pattern {
    fn from(ty: SignalType) -> Self {
        let segments: Vec<PatternSegment> = ty
            .segments()
            .map(|s| PatternSegment::Literal(s.into()))
            .collect();
        Self {
            text: ty.0,
            segments: segments.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_backtracks_over_several_double_stars() {
        let p = Pattern::new("a.**.b.**.c").unwrap();
        for ok in ["a.b.c", "a.x.b.y.c", "a.b.b.c.c", "a.x.y.b.c"] {
            assert!(p.matches(&SignalType::new(ok).unwrap()), "{ok}");
        }
        for no in ["a.c", "a.b", "b.b.c", "a.b.c.d"] {
            assert!(!p.matches(&SignalType::new(no).unwrap()), "{no}");
        }
    }
}
