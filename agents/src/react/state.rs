//! The ReAct strategy's state: the thread, the active request and what it waits for.

use motet_directives::budget::SoftLimit;
use motet_directives::{ArcStr, CallId, Usage};
use serde::{Deserialize, Serialize};

use crate::policy::{ContextPolicy, PolicyOverride};
use crate::thread::Thread;

/// Where the state machine is (seed 000/001):
/// idle → awaiting_llm ⇄ awaiting_tools → completed | failed | cancelled, with
/// awaiting_tools ⇄ awaiting_approval | awaiting_answer while the turn's only unfinished calls
/// wait for a person.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// No request has run yet.
    #[default]
    Idle,
    /// Waiting for an LLM call's result.
    AwaitingLlm,
    /// Waiting for the results of the last turn's tool calls.
    AwaitingTools,
    /// Every unfinished tool call of the turn waits for a person, at least one for an approval;
    /// or the request's next LLM call waits for a person to approve passing a soft budget
    /// limit ([`RequestState::budget_wait`]).
    AwaitingApproval,
    /// Every unfinished tool call of the turn waits for a person's answer to its question.
    AwaitingAnswer,
    /// The last request finished with an answer.
    Completed,
    /// The last request failed.
    Failed,
    /// The last request was cancelled.
    Cancelled,
}

impl Status {
    /// True while a request is running.
    pub fn is_active(self) -> bool {
        self == Self::AwaitingLlm || self.awaits_tools()
    }

    /// True while the turn's tool calls are unfinished (running, or waiting for a person).
    pub fn awaits_tools(self) -> bool {
        matches!(
            self,
            Self::AwaitingTools | Self::AwaitingApproval | Self::AwaitingAnswer
        )
    }
}

/// One tool call the current turn waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingTool {
    /// The `ToolExec` call id its result echoes.
    pub call_id: CallId,
    /// The model's id of the call (shared with the refs of the entries about it).
    pub tool_call_id: ArcStr,
    /// The tool's name.
    pub name: String,
    /// True once its result (or failure) is committed.
    pub done: bool,
    /// What it waits for from a person, while it does (boxed: most calls never wait, and a
    /// request keeps its turn's calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Box<crate::protocol::Waiting>>,
    /// The arguments a person approved it with (the model's, or edited), once approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_args: Option<motet_directives::ToolArgs>,
    /// True when the approved arguments are a person's edit, not the model's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
}

impl PendingTool {
    /// A call that was just asked for.
    pub fn new(call_id: CallId, tool_call_id: impl Into<ArcStr>, name: impl Into<String>) -> Self {
        Self {
            call_id,
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            done: false,
            waiting: None,
            approved_args: None,
            edited: false,
        }
    }

    /// Whether a restart keeps this call: it has not run and waits for a person or was
    /// approved by one (the thread does not hold that).
    pub fn outlives_a_restart(&self) -> bool {
        !self.done && (self.waiting.is_some() || self.approved_args.is_some())
    }
}

/// The request being run (or what a restart keeps of one that stopped: see
/// [`ReActState::request`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestState {
    /// The request's id (shared with the refs of the request's entries).
    pub request_id: ArcStr,
    /// LLM calls made so far (the current one included).
    pub iteration: u32,
    /// The LLM call in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_call: Option<CallId>,
    /// Retries spent on the current iteration.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub llm_retries: u32,
    /// Where in the agent's model chain the request is (0: the agent's model; more after it
    /// fell back).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub model: u32,
    /// The LLM call whose tool calls are pending.
    pub turn_call: Option<CallId>,
    /// Tool calls of the current turn.
    pub tools: Vec<PendingTool>,
    /// Tool calls the model has made in this request, over all its turns (what
    /// `reset_tool_choice` goes by).
    #[serde(default)]
    pub tool_calls: u32,
    /// Usage of this request's LLM calls.
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
    /// The request's policy changes (boxed, like the other rarely set fields: a thread keeps
    /// its last request, and most carry none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_override: Option<Box<PolicyOverride>>,
    /// Messages a person added (`agent.steer`) that wait for the next turn boundary, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steers: Vec<String>,
    /// The shape the answer must have (structured output), if the request asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Box<motet_directives::ResponseFormat>>,
    /// Answers that did not match `response_format` and were sent back to the model.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub format_retries: u32,
    /// What the projection of the call in flight was made from, kept with its turn when it
    /// comes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_basis: Option<Box<crate::thread::CallBasis>>,
    /// The soft budget limit the request's next LLM call waits on a person to approve, while
    /// it does (the call was not sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_wait: Option<Box<BudgetWait>>,
    /// The soft budget limits a person approved for this request (one per level and measure,
    /// the latest step), sent with each of its LLM calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budget_approved: Vec<SoftLimit>,
    /// The agent this request handed the conversation to and its answer, once its handoff
    /// call came back: the request ends with that answer when the turn's other calls are in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Box<HandedOff>>,
}

/// A request's LLM call held at a soft budget limit until a person approves going on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetWait {
    /// The limit reached.
    pub soft_limit: SoftLimit,
    /// The wait as listed and answered (its `tool` is `motet.budget`).
    pub waiting: crate::protocol::Waiting,
}

/// A handoff that came back: who holds the conversation now, and what it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandedOff {
    /// The agent that holds the conversation now.
    pub agent: String,
    /// Its answer, which ends the request.
    pub answer: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// True when no signal was ignored (the snapshot then leaves the count out).
fn nothing_ignored(n: &u64) -> bool {
    *n == 0
}

/// True when a restart keeps nothing of `request` (the snapshot then leaves it out).
fn nothing_outlives_a_restart(request: &Option<Box<RequestState>>) -> bool {
    !request.as_ref().is_some_and(|r| r.outlives_a_restart())
}

impl RequestState {
    /// Whether a restart keeps this request: it holds what a person did that the thread does
    /// not — messages not taken in yet, calls waiting for a person or approved by one
    /// ([`PendingTool::outlives_a_restart`]), a budget approval waited for or given.
    /// Everything else a restart rebuilds from the thread (`agent.resume`).
    pub fn outlives_a_restart(&self) -> bool {
        !self.steers.is_empty()
            || self.tools.iter().any(PendingTool::outlives_a_restart)
            || self.budget_wait.is_some()
            || !self.budget_approved.is_empty()
    }

    /// A request that has not called the LLM yet.
    pub fn new(request_id: impl Into<ArcStr>, policy_override: Option<PolicyOverride>) -> Self {
        Self {
            request_id: request_id.into(),
            iteration: 0,
            llm_call: None,
            llm_retries: 0,
            model: 0,
            turn_call: None,
            tools: Vec::new(),
            tool_calls: 0,
            usage: Usage::default(),
            policy_override: policy_override.map(Box::new),
            steers: Vec::new(),
            response_format: None,
            format_retries: 0,
            call_basis: None,
            budget_wait: None,
            budget_approved: Vec::new(),
            handoff: None,
        }
    }
}

/// A `Summarize` directive whose result has not arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingSummary {
    /// The directive's call id.
    pub call_id: CallId,
    /// First entry covered.
    pub from_seq: u64,
    /// Last entry covered.
    pub to_seq: u64,
    /// The `agent.summarize` request that asked for it, answered when it arrives (`None` for
    /// a summary the strategy asked for itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// For a summary the strategy asked for itself, the request whose LLM call asked for it:
    /// the summary's usage counts with that request's when it arrives while the request runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<String>,
}

/// A thread with no id, no entries and no time: what a snapshot's state holds in place of its
/// thread.
fn blank_thread() -> Thread {
    Thread::new(String::new(), 0)
}

fn is_blank(thread: &Thread) -> bool {
    *thread == blank_thread()
}

/// Everything the ReAct strategy remembers. Serializable: the runtime persists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReActState {
    /// The conversation: the source of truth for every projection. Left out when written
    /// blank (no id, no entries, no time), as the runtime writes its snapshots (it keeps the
    /// thread's entries apart), and read back blank when absent.
    #[serde(default = "blank_thread", skip_serializing_if = "is_blank")]
    pub thread: Thread,
    /// The agent's context policy (over the strategy's configured one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_policy: Option<Box<ContextPolicy>>,
    /// Where the state machine is.
    pub status: Status,
    /// The current request. Once it ends, the state keeps of it what a restart keeps (see
    /// [`RequestState::outlives_a_restart`]): an answered request, nothing at all. Stored the
    /// same way. Boxed: a thread between requests holds one word, and the state sits in its
    /// actor's task for the actor's life.
    #[serde(default, skip_serializing_if = "nothing_outlives_a_restart")]
    pub request: Option<Box<RequestState>>,
    /// Summaries asked for and not yet received.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<PendingSummary>,
    /// Signals ignored as unknown, stale or duplicated (each also noted in the thread).
    #[serde(default, skip_serializing_if = "nothing_ignored")]
    pub ignored: u64,
    /// The tool-call ids the thread holds, for keeping them unique; derived, never stored.
    #[serde(skip)]
    pub(crate) call_ids: CallIds,
    /// A request another writer began on the stored thread and has not ended, seen when the
    /// thread was reloaded after that writer moved it on; the next input is refused as busy.
    /// Read once, never stored.
    #[serde(skip)]
    pub(crate) elsewhere: Option<Box<str>>,
}

/// Hashes of the tool-call ids in a thread: built from the thread the first time a request
/// needs them (after a restore too), then kept up to date as turns are committed, so checking
/// a new call costs a lookup rather than a pass over the whole thread (a pass per request made
/// a long conversation's requests cost in proportion to its length). A hash that collides only
/// costs a needless rename. Boxed: one word in a state that has not needed them, since the
/// state sits in its actor's task for the actor's life.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallIds(Option<Box<Taken>>);

/// The hashes: a sorted slice while there are few (eight bytes an id), a hash set beyond
/// [`Taken::FEW`], where copying the slice on each insert would cost more than the set's room.
#[derive(Debug, Clone)]
enum Taken {
    Few(Box<[u64]>),
    #[allow(
        clippy::box_collection,
        reason = "boxed, the set keeps the slice's variant at 16 bytes: a thread with few calls holds no set's room"
    )]
    Many(Box<std::collections::HashSet<u64>>),
}

impl Taken {
    /// The most ids kept as a sorted slice.
    const FEW: usize = 32;

    fn of(mut hashes: Vec<u64>) -> Self {
        if hashes.len() > Self::FEW {
            Self::Many(Box::new(hashes.into_iter().collect()))
        } else {
            hashes.sort_unstable();
            hashes.dedup();
            Self::Few(hashes.into_boxed_slice())
        }
    }

    fn contains(&self, hash: u64) -> bool {
        match self {
            Self::Few(sorted) => sorted.binary_search(&hash).is_ok(),
            Self::Many(set) => set.contains(&hash),
        }
    }

    fn insert(&mut self, hash: u64) {
        match self {
            Self::Few(sorted) if sorted.len() < Self::FEW => {
                let at = sorted.partition_point(|&h| h < hash);
                let mut grown = Vec::with_capacity(sorted.len() + 1);
                grown.extend_from_slice(&sorted[..at]);
                grown.push(hash);
                grown.extend_from_slice(&sorted[at..]);
                *sorted = grown.into_boxed_slice();
            }
            Self::Few(sorted) => {
                let mut set: std::collections::HashSet<u64> = sorted.iter().copied().collect();
                set.insert(hash);
                *self = Self::Many(Box::new(set));
            }
            Self::Many(set) => {
                set.insert(hash);
            }
        }
    }
}

impl PartialEq for CallIds {
    /// Derived from the thread, which the states compare already: never a difference.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl CallIds {
    fn hash(id: &str) -> u64 {
        use std::hash::{Hash as _, Hasher as _};
        let mut hasher = std::hash::DefaultHasher::new();
        id.hash(&mut hasher);
        hasher.finish()
    }

    /// The hashes, built from `thread` when there are none yet.
    fn of(&mut self, thread: &Thread) -> &mut Taken {
        self.0.get_or_insert_with(|| {
            let hashes: Vec<u64> = thread
                .to_list()
                .iter()
                .filter_map(|e| match &e.body {
                    crate::thread::EntryBody::Assistant { message, .. } => Some(message),
                    _ => None,
                })
                .flat_map(|m| m.tool_calls().map(|c| Self::hash(c.id)))
                .collect();
            Box::new(Taken::of(hashes))
        })
    }

    /// Gives every tool call of `message` an id no call in `thread` has (nor another call of
    /// `message`), and records them as taken: the turn is about to be committed. Ids already
    /// unique are kept.
    pub(crate) fn make_unique(
        &mut self,
        thread: &Thread,
        message: &mut motet_directives::AssistantMessage,
        env: &dyn crate::env::Env,
    ) {
        for block in &mut message.blocks {
            if let motet_directives::AssistantBlock::ToolUse { id, .. } = block {
                let ids = self.of(thread);
                while id.is_empty() || ids.contains(Self::hash(id)) {
                    *id = env.fresh_id("call").into();
                }
                ids.insert(Self::hash(id));
            }
        }
    }
}

impl ReActState {
    /// A state around an existing thread.
    pub fn new(thread: Thread) -> Self {
        Self {
            thread,
            context_policy: None,
            status: Status::Idle,
            request: None,
            summaries: Vec::new(),
            ignored: 0,
            call_ids: CallIds::default(),
            elsewhere: None,
        }
    }

    /// Sets the agent's context policy.
    pub fn with_context_policy(mut self, policy: ContextPolicy) -> Self {
        self.context_policy = Some(Box::new(policy));
        self
    }

    /// A request ended: the state keeps of it what a restart would (usually nothing: see
    /// [`RequestState::outlives_a_restart`]), so a live thread and a restored one hold the same
    /// request.
    pub(crate) fn end_request(&mut self) {
        // A budget approval holds for its request alone.
        if let Some(request) = self.request.as_mut() {
            request.budget_wait = None;
            request.budget_approved.clear();
        }
        self.request = self.request.take().filter(|r| r.outlives_a_restart());
    }

    /// The running request, if any.
    pub fn active_request(&self) -> Option<&RequestState> {
        self.request.as_deref().filter(|_| self.status.is_active())
    }

    /// Where a turn with unfinished tool calls stands: running while any of them runs, else
    /// waiting for a person (for an approval if any waits on one).
    pub(crate) fn settle(&mut self) {
        if !self.status.awaits_tools() {
            return;
        }
        let Some(request) = self.request.as_ref() else {
            return;
        };
        if request.budget_wait.is_some() {
            self.status = Status::AwaitingApproval;
            return;
        }
        let open = || request.tools.iter().filter(|t| !t.done);
        self.status = if open().any(|t| t.waiting.is_none()) || open().next().is_none() {
            Status::AwaitingTools
        } else if open().any(|t| t.waiting.as_ref().is_some_and(|w| w.pause.is_approval())) {
            Status::AwaitingApproval
        } else {
            Status::AwaitingAnswer
        };
    }
}

#[cfg(test)]
mod tests {
    use super::{ReActState, Taken, Thread, blank_thread};

    #[test]
    fn a_blank_thread_is_left_out_of_the_state_json() {
        let snapshot = ReActState::new(blank_thread());
        let json = serde_json::to_value(&snapshot).unwrap();
        assert!(json.get("thread").is_none(), "{json}");
        let back: ReActState = serde_json::from_value(json).unwrap();
        assert_eq!(back, snapshot);

        let kept = ReActState::new(Thread::new("t1", 5));
        let json = serde_json::to_value(&kept).unwrap();
        assert_eq!(json["thread"]["id"], "t1");
        let back: ReActState = serde_json::from_value(json).unwrap();
        assert_eq!(back, kept);
    }

    #[test]
    fn taken_ids_stay_found_past_the_few() {
        let hashes =
            |range: std::ops::Range<u64>| range.map(|n| n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut taken = Taken::of(Vec::new());
        for (n, hash) in hashes(0..100).enumerate() {
            assert!(!taken.contains(hash));
            taken.insert(hash);
            assert_eq!(
                matches!(taken, Taken::Many(_)),
                n >= Taken::FEW,
                "a slice up to {} ids, a set after",
                Taken::FEW
            );
        }
        assert!(hashes(0..100).all(|h| taken.contains(h)));
        assert!(!hashes(100..200).any(|h| taken.contains(h)));
        let built = Taken::of(hashes(0..40).collect());
        assert!(matches!(built, Taken::Many(_)));
        assert!(hashes(0..40).all(|h| built.contains(h)));
        let few = Taken::of(hashes(0..3).rev().chain(hashes(0..1)).collect());
        assert!(matches!(&few, Taken::Few(sorted) if sorted.len() == 3 && sorted.is_sorted()));
        assert_eq!(size_of::<Taken>(), 16);
    }
}
