//! [`Router`]: a trie over type segments that finds every route whose pattern matches a type.
//!
//! Each trie node has a map of literal children keyed by segment, plus at most one `*` child and
//! one `**` child; a route lives at the node its pattern ends on. A lookup walks the type's
//! segments once: a literal step is one hash lookup, a `*` step takes any segment, and a `**`
//! node may be entered without consuming anything and then loops over one more segment at a time.
//! States `(** node, position)` are remembered, so a route is found once even when `**` can match
//! in several ways, and the work is bounded by (visited nodes x type length) instead of growing
//! exponentially with the number of `**`. Lookup cost therefore depends on the type's length and
//! the patterns that share its prefixes, not on the total number of routes.
//!
//! Matches come back ordered by priority (higher first), then registration order.
//!
//! A route may also carry a [`Predicate`] on the whole signal (Jido's router: `{path, match_fn,
//! handler}`): [`Router::route_signal`] returns only the routes whose pattern matches the type
//! and whose predicate, if any, accepts the signal. The trie finds candidates by type first, so
//! a predicate costs one call per candidate, never a pass over all routes.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use std::sync::Arc;

use crate::{Pattern, PatternSegment, Signal, SignalType};

/// A condition on a whole signal (its data, source, extensions) that a route also requires.
#[derive(Clone)]
pub struct Predicate(Arc<dyn Fn(&Signal) -> bool + Send + Sync>);

impl Predicate {
    /// A predicate from a function.
    pub fn new(test: impl Fn(&Signal) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(test))
    }

    /// Whether `signal` passes.
    pub fn accepts(&self, signal: &Signal) -> bool {
        (self.0)(signal)
    }
}

impl std::fmt::Debug for Predicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Predicate(..)")
    }
}

/// Identifies one route; returned by [`Router::add`], used by [`Router::remove`].
///
/// Ids grow with every `add`, so they also record registration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteId(u64);

impl RouteId {
    /// The id as a number (unique within its router).
    pub fn get(self) -> u64 {
        self.0
    }
}

#[derive(Debug)]
struct Route<T> {
    id: RouteId,
    priority: i32,
    when: Option<Predicate>,
    handler: T,
}

impl<T> Route<T> {
    fn order_key(&self) -> (Reverse<i32>, RouteId) {
        (Reverse(self.priority), self.id)
    }
}

#[derive(Debug)]
struct Node<T> {
    literal: HashMap<Box<str>, Node<T>, BuildHasherDefault<SegmentHasher>>,
    one: Option<Box<Node<T>>>,
    many: Option<Box<Node<T>>>,
    /// The routes ending here, kept sorted by priority then id.
    routes: Vec<Route<T>>,
}

impl<T> Node<T> {
    fn new() -> Self {
        Self {
            literal: HashMap::default(),
            one: None,
            many: None,
            routes: Vec::new(),
        }
    }

    fn child_count(&self) -> usize {
        self.literal.len() + usize::from(self.one.is_some()) + usize::from(self.many.is_some())
    }

    fn child(&self, segment: &PatternSegment) -> Option<&Node<T>> {
        match segment {
            PatternSegment::Literal(lit) => self.literal.get(lit),
            PatternSegment::One => self.one.as_deref(),
            PatternSegment::Many => self.many.as_deref(),
        }
    }

    fn child_mut(&mut self, segment: &PatternSegment) -> Option<&mut Node<T>> {
        match segment {
            PatternSegment::Literal(lit) => self.literal.get_mut(lit),
            PatternSegment::One => self.one.as_deref_mut(),
            PatternSegment::Many => self.many.as_deref_mut(),
        }
    }

    fn child_or_insert(&mut self, segment: &PatternSegment) -> &mut Node<T> {
        match segment {
            PatternSegment::Literal(lit) => self
                .literal
                .entry(lit.clone())
                .or_insert_with(|| Node::new()),
            PatternSegment::One => self.one.get_or_insert_with(|| Box::new(Node::new())),
            PatternSegment::Many => self.many.get_or_insert_with(|| Box::new(Node::new())),
        }
    }

    fn remove_child(&mut self, segment: &PatternSegment) {
        match segment {
            PatternSegment::Literal(lit) => {
                self.literal.remove(lit);
            }
            PatternSegment::One => self.one = None,
            PatternSegment::Many => self.many = None,
        }
    }
}

/// Routes signal types to handlers of type `T` by pattern (see [`Pattern`] for the syntax).
///
/// ```
/// use motet_signals::{Pattern, Router, SignalType};
///
/// let mut router = Router::new();
/// router.add(&Pattern::new("task.**")?, 0, "coordinator");
/// router.add(&Pattern::new("task.*.assigned")?, 10, "worker");
/// let ty = SignalType::new("task.7.assigned")?;
/// let found: Vec<&&str> = router.route(&ty).collect();
/// assert_eq!(found, [&"worker", &"coordinator"]);
/// # Ok::<(), motet_signals::SignalError>(())
/// ```
#[derive(Debug)]
pub struct Router<T> {
    root: Node<T>,
    patterns: HashMap<RouteId, Pattern>,
    next_id: u64,
}

impl<T> Default for Router<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Router<T> {
    /// An empty router.
    pub fn new() -> Self {
        Self {
            root: Node::new(),
            patterns: HashMap::new(),
            next_id: 0,
        }
    }

    /// The number of routes.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// Whether there are no routes.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The id the next [`Router::add`] will return.
    pub(crate) fn next_route_id(&self) -> RouteId {
        RouteId(self.next_id)
    }

    /// Adds `handler` for `pattern`. Higher `priority` is returned first; equal priorities keep
    /// registration order.
    pub fn add(&mut self, pattern: &Pattern, priority: i32, handler: T) -> RouteId {
        self.insert(pattern, priority, None, handler)
    }

    /// Adds `handler` for `pattern` that applies only to signals `when` accepts; found by
    /// [`Router::route_signal`] (and by [`Router::route`], which looks at the type alone).
    pub fn add_when(
        &mut self,
        pattern: &Pattern,
        priority: i32,
        when: Predicate,
        handler: T,
    ) -> RouteId {
        self.insert(pattern, priority, Some(when), handler)
    }

    fn insert(
        &mut self,
        pattern: &Pattern,
        priority: i32,
        when: Option<Predicate>,
        handler: T,
    ) -> RouteId {
        let id = RouteId(self.next_id);
        self.next_id += 1;
        let mut node = &mut self.root;
        for segment in pattern.segments() {
            node = node.child_or_insert(segment);
        }
        let route = Route {
            id,
            priority,
            when,
            handler,
        };
        let at = node
            .routes
            .partition_point(|r| r.order_key() < route.order_key());
        node.routes.insert(at, route);
        self.patterns.insert(id, pattern.clone());
        id
    }

    /// Removes a route, returning its handler; `None` if it was already removed.
    pub fn remove(&mut self, id: RouteId) -> Option<T> {
        let pattern = self.patterns.remove(&id)?;
        let segments = pattern.segments();

        // Which nodes on the path hold nothing but this route (or the path to it): walk down
        // once, then find the shallowest depth from which everything below can be cut off.
        let mut shape = Vec::with_capacity(segments.len());
        let mut node = &self.root;
        for segment in segments {
            node = node.child(segment)?;
            shape.push((node.routes.len(), node.child_count()));
        }
        let last = segments.len().saturating_sub(1);
        let mut cut = segments.len();
        for (depth, &(routes, children)) in shape.iter().enumerate().rev() {
            let bare = if depth == last {
                routes == 1 && children == 0
            } else {
                routes == 0 && children == 1 && cut == depth + 1
            };
            if !bare {
                break;
            }
            cut = depth;
        }

        let mut node = &mut self.root;
        for segment in segments {
            node = node.child_mut(segment)?;
        }
        let at = node.routes.iter().position(|r| r.id == id)?;
        let route = node.routes.remove(at);

        if cut < segments.len() {
            let mut parent = &mut self.root;
            for segment in &segments[..cut] {
                parent = parent.child_mut(segment)?;
            }
            parent.remove_child(&segments[cut]);
        }
        Some(route.handler)
    }

    /// Every handler whose pattern matches `signal`'s type and whose predicate, if any, accepts
    /// it, by priority (higher first) then registration.
    pub fn route_signal<'a, 's>(&'a self, signal: &'s Signal) -> SignalMatches<'a, 's, T> {
        SignalMatches {
            matches: self.route(signal.signal_type()),
            signal,
        }
    }

    /// Every handler whose pattern matches `ty`, by priority (higher first) then registration.
    /// Predicates are not evaluated (there is no signal): see [`Router::route_signal`].
    pub fn route<'a>(&'a self, ty: &SignalType) -> Matches<'a, T> {
        let text = ty.as_str();
        let mut inline = [""; INLINE_SEGMENTS];
        let spilled: Vec<&str>;
        let mut count = 0;
        for segment in text.split('.') {
            if let Some(slot) = inline.get_mut(count) {
                *slot = segment;
            }
            count += 1;
        }
        let segments: &[&str] = if count <= INLINE_SEGMENTS {
            &inline[..count]
        } else {
            spilled = text.split('.').collect();
            &spilled
        };

        let mut matches = Matches::new();
        let mut stack = StateStack::new();
        let mut covered = Covered::new();
        stack.push(&self.root, 0);
        while let Some((node, pos)) = stack.pop() {
            match segments.get(pos) {
                None => {
                    if !node.routes.is_empty() {
                        matches.add_run(&node.routes);
                    }
                }
                Some(segment) => {
                    if let Some(child) = node.one.as_deref() {
                        stack.push(child, pos + 1);
                    }
                    if let Some(child) = node.literal.get(*segment) {
                        stack.push(child, pos + 1);
                    }
                }
            }
            if let Some(many) = node.many.as_deref() {
                // `**` entered at `pos` continues at every later position. Earlier entries
                // already queued the positions from their own start on, so only the new ones
                // before that are queued: each (node, position) is explored once.
                let end = covered.extend(many, pos, segments.len() + 1);
                for at in pos..end {
                    stack.push(many, at);
                }
            }
        }
        matches.finish();
        matches
    }
}

/// Segments kept on the stack before a lookup falls back to a heap buffer.
const INLINE_SEGMENTS: usize = 16;
const INLINE_STATES: usize = 16;

/// The lookup's work list: a fixed array first, a `Vec` only for unusually wide searches.
struct StateStack<'a, T> {
    inline: [Option<(&'a Node<T>, usize)>; INLINE_STATES],
    len: usize,
    spill: Vec<(&'a Node<T>, usize)>,
}

impl<'a, T> StateStack<'a, T> {
    fn new() -> Self {
        Self {
            inline: [None; INLINE_STATES],
            len: 0,
            spill: Vec::new(),
        }
    }

    fn push(&mut self, node: &'a Node<T>, pos: usize) {
        match self.inline.get_mut(self.len) {
            Some(slot) => {
                *slot = Some((node, pos));
                self.len += 1;
            }
            None => self.spill.push((node, pos)),
        }
    }

    fn pop(&mut self) -> Option<(&'a Node<T>, usize)> {
        if let Some(state) = self.spill.pop() {
            return Some(state);
        }
        self.len = self.len.checked_sub(1)?;
        self.inline.get_mut(self.len).and_then(Option::take)
    }
}

/// For each `**` node reached, the first position it has been explored from (it is explored from
/// every position after that too). A few inline slots cover ordinary lookups.
struct Covered {
    inline: [(usize, usize); COVERED_INLINE],
    len: usize,
    spill: Option<HashMap<usize, usize, BuildHasherDefault<SegmentHasher>>>,
}

const COVERED_INLINE: usize = 8;

impl Covered {
    fn new() -> Self {
        Self {
            inline: [(0, 0); COVERED_INLINE],
            len: 0,
            spill: None,
        }
    }

    /// Records that `node` is explored from `from` on, and returns where the newly needed
    /// positions end: `from..end` must be queued (empty if nothing is new). `unseen` is the end
    /// for a node not reached before.
    fn extend<T>(&mut self, node: &Node<T>, from: usize, unseen: usize) -> usize {
        let key = std::ptr::from_ref(node) as usize;
        let start = if let Some(map) = &mut self.spill {
            map.entry(key).or_insert(unseen)
        } else if let Some(i) = self.inline[..self.len.min(COVERED_INLINE)]
            .iter()
            .position(|e| e.0 == key)
        {
            &mut self.inline[i].1
        } else if self.len < COVERED_INLINE {
            self.inline[self.len] = (key, unseen);
            self.len += 1;
            &mut self.inline[self.len - 1].1
        } else {
            let map = self.spill.insert(self.inline.iter().copied().collect());
            map.entry(key).or_insert(unseen)
        };
        let end = *start;
        *start = (*start).min(from);
        end.max(from)
    }
}

/// A fast, unkeyed hasher for the trie's segment maps (the multiply-rotate scheme of rustc's
/// FxHash, eight bytes at a time). The keys are the segments of registered patterns, chosen by
/// the program, so the HashDoS resistance of the default SipHash buys nothing here; a lookup
/// only hashes the incoming type's segments.
#[derive(Default, Clone, Copy)]
struct SegmentHasher {
    hash: u64,
}

impl SegmentHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for SegmentHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // Byte by byte: a variable-length copy would call memcpy for a few bytes.
            let word = rest
                .iter()
                .rev()
                .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
            self.add(word ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// Node route lists a lookup merges in place before falling back to collecting and sorting.
const INLINE_RUNS: usize = 8;

/// The handlers matching one type, in order; returned by [`Router::route`].
///
/// Each trie node keeps its routes sorted, so the matches are a few sorted runs (one per node
/// that matched). Up to eight runs are merged lazily as the iterator advances, without
/// allocating; more are collected and sorted once.
#[derive(Debug)]
pub struct Matches<'a, T> {
    runs: [&'a [Route<T>]; INLINE_RUNS],
    run_count: usize,
    remaining: usize,
    overflow: Option<std::vec::IntoIter<&'a Route<T>>>,
    collecting: Vec<&'a Route<T>>,
}

impl<'a, T> Matches<'a, T> {
    fn new() -> Self {
        Self {
            runs: [<&[Route<T>]>::default(); INLINE_RUNS],
            run_count: 0,
            remaining: 0,
            overflow: None,
            collecting: Vec::new(),
        }
    }

    fn add_run(&mut self, run: &'a [Route<T>]) {
        self.remaining += run.len();
        if let Some(slot) = self.runs.get_mut(self.run_count) {
            *slot = run;
            self.run_count += 1;
        } else {
            if self.collecting.is_empty() {
                for earlier in &self.runs {
                    self.collecting.extend(earlier.iter());
                }
            }
            self.collecting.extend(run.iter());
        }
    }

    fn finish(&mut self) {
        if !self.collecting.is_empty() {
            let mut all = std::mem::take(&mut self.collecting);
            all.sort_by_key(|r| r.order_key());
            self.overflow = Some(all.into_iter());
        }
    }
}

/// The routes [`Router::route_signal`] found: pattern and predicate both accept the signal.
#[derive(Debug)]
pub struct SignalMatches<'a, 's, T> {
    matches: Matches<'a, T>,
    signal: &'s Signal,
}

impl<'a, T> Iterator for SignalMatches<'a, '_, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        loop {
            let route = self.matches.next_route()?;
            if route.when.as_ref().is_none_or(|p| p.accepts(self.signal)) {
                return Some(&route.handler);
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.matches.remaining))
    }
}

impl<'a, T> Iterator for Matches<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        self.next_route().map(|r| &r.handler)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<'a, T> Matches<'a, T> {
    fn next_route(&mut self) -> Option<&'a Route<T>> {
        if let Some(sorted) = &mut self.overflow {
            self.remaining = self.remaining.saturating_sub(1);
            return sorted.next();
        }
        let runs = self.runs.get_mut(..self.run_count)?;
        let mut best: Option<usize> = None;
        for (i, run) in runs.iter().enumerate() {
            let Some(head) = run.first() else { continue };
            let better = match best.and_then(|b| runs.get(b)).and_then(|r| r.first()) {
                Some(current) => head.order_key() < current.order_key(),
                None => true,
            };
            if better {
                best = Some(i);
            }
        }
        let run = runs.get_mut(best?)?;
        let (head, rest) = run.split_first()?;
        *run = rest;
        self.remaining = self.remaining.saturating_sub(1);
        Some(head)
    }
}

impl<T> ExactSizeIterator for Matches<'_, T> {}
