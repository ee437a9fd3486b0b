//! The projector: a pure function from a thread, a policy and the pending input to the messages
//! of one LLM call (seed 001 §3–4).
//!
//! The context is the concatenation of four segments — system ⊕ summary ⊕ history ⊕ pending.
//! History starts after the latest summary's `to_seq` and at or after the latest boundary,
//! and is filled newest first, one atomic group at a time, until the token budget, the turn
//! window or the message window is reached. The walk reads only the groups it keeps (plus the
//! one that did not fit), so its cost follows the window, not the thread.
//!
//! When history had to be dropped the result says so (`truncated`, `needs_summary`) and proposes
//! where a stable window should restart (`suggested_boundary`): the oldest group start that keeps
//! the history within the policy's low-water mark, preferring the start of a user turn.

mod groups;

use motet_directives::{Message, ToolDefs, ToolResult};
use serde::{Deserialize, Serialize};

use crate::error::ProjectionError;
use crate::estimate::{Heuristic, TokenEstimator, estimate_message, estimate_tools};
use crate::policy::{ContextPolicy, Summarization, SummaryRole, WindowMode};
use crate::thread::{EntryBody, EntryKind, Thread};

use groups::{Group, GroupsRev};

/// The text a summary is introduced with.
pub const SUMMARY_PREFIX: &str = "Summary of earlier conversation:\n";

/// Correlation ids of the call being projected, echoed in the meta.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectionIds {
    /// The request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The LLM call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// Everything a projection depends on.
#[derive(Debug, Clone, Copy)]
pub struct ProjectionInput<'a> {
    /// The committed history.
    pub thread: &'a Thread,
    /// How to project it.
    pub policy: &'a ContextPolicy,
    /// Input not yet committed, shown after the history (must fit whole).
    pub pending: &'a [Message],
    /// The system prompt; the policy's when `None`.
    pub system: Option<&'a str>,
    /// Tools offered to the model.
    pub tools: &'a ToolDefs,
    /// Ids echoed in the meta.
    pub ids: &'a ProjectionIds,
}

/// What the projection did (seed 001 §3.1, plus the window fields).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectionMeta {
    /// The thread revision projected.
    pub basis_rev: u64,
    /// The last entry of the thread at projection time.
    pub basis_last_seq: Option<u64>,
    /// Pending messages appended.
    pub pending_count: usize,
    /// True when history inside the window had to be dropped.
    pub truncated: bool,
    /// Estimated tokens of all messages and the tools' schemas.
    pub estimated_tokens: u64,
    /// Of those, the tools' schemas (names, descriptions, parameter schemas).
    #[serde(default)]
    pub tool_tokens: u64,
    /// The input budget.
    pub budget: u64,
    /// True when a summary was shown.
    pub summary_used: bool,
    /// Thread entries shown (summary included).
    pub entries_included: usize,
    /// Entries in the thread.
    pub entries_total: usize,
    /// True when history was dropped that no summary covers: a summary would help.
    pub needs_summary: bool,
    /// Where the window starts (after the latest summary, at the latest boundary).
    pub window_start_seq: u64,
    /// The first entry of the history shown, if any.
    pub history_from_seq: Option<u64>,
    /// When truncated: where a stable window should restart.
    pub suggested_boundary: Option<u64>,
    /// How many of the messages, from the start, the next projection repeats unchanged (the
    /// prefix a provider's prompt cache can keep): all of them in the stable window mode (the
    /// next call extends them until a boundary), only system and summary when the window
    /// slides (its history moves on every call once full).
    #[serde(default)]
    pub stable_prefix: usize,
    /// The request, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The LLM call, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// The messages of one LLM call and how they were chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectionResult {
    /// system ⊕ summary ⊕ history ⊕ pending.
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tool_spec: ToolDefs,
    /// What the projection did.
    pub meta: ProjectionMeta,
}

/// How a thread becomes the messages of one LLM call. [`DefaultProjector`] is the seeds'
/// newest-first walk ([`project_with`]); a user can supply another (a retrieval step, a
/// different grouping) to [`ReActConfig::with_projector`](crate::ReActConfig::with_projector).
/// It must stay a pure function of its input: a call's context is rebuilt from the thread by
/// projecting again ([`Thread::as_of_call`]).
pub trait Projector: Send + Sync + std::fmt::Debug {
    /// Projects `input`, counting tokens with `estimator`.
    ///
    /// # Errors
    /// A [`ProjectionError`] when no context fits.
    fn project(
        &self,
        input: &ProjectionInput<'_>,
        estimator: &dyn TokenEstimator,
    ) -> Result<ProjectionResult, ProjectionError>;
}

/// The seeds' projector: [`project_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DefaultProjector;

impl Projector for DefaultProjector {
    fn project(
        &self,
        input: &ProjectionInput<'_>,
        estimator: &dyn TokenEstimator,
    ) -> Result<ProjectionResult, ProjectionError> {
        project_with(input, estimator)
    }
}

/// Projects with the seeds' heuristic estimator.
///
/// # Errors
/// See [`project_with`].
pub fn project(input: &ProjectionInput<'_>) -> Result<ProjectionResult, ProjectionError> {
    project_with(input, &Heuristic)
}

/// Projects with `estimator` for the system prompt, summary and pending input (history entries
/// carry the estimate made when they were appended).
///
/// # Errors
/// [`ProjectionError::FixedSegmentsOverBudget`] when system, summary and pending input alone
/// exceed the budget; [`ProjectionError::NewestGroupOverBudget`] when the newest history group
/// does not fit in what is left. The projector never answers with a broken history instead.
pub fn project_with(
    input: &ProjectionInput<'_>,
    estimator: &dyn TokenEstimator,
) -> Result<ProjectionResult, ProjectionError> {
    let thread = input.thread;
    let policy = input.policy;
    let entries = thread.to_list();
    let budget = policy.input_budget();

    let system = input
        .system
        .or(policy.system_prompt.as_deref())
        .map(Message::system);
    let (summary, window_start) = window(thread, policy);
    // The tools' schemas go with every call and count against the same window: a server
    // with many tools can take a good part of it.
    let tool_tokens = estimate_tools(estimator, input.tools);
    let fixed: u64 = tool_tokens
        + system
            .iter()
            .chain(summary.iter())
            .chain(input.pending.iter())
            .map(|m| u64::from(estimate_message(estimator, m)))
            .sum::<u64>();
    if fixed > budget {
        return Err(ProjectionError::FixedSegmentsOverBudget {
            needed: fixed,
            budget,
        });
    }
    let walk = walk(entries, window_start, policy, budget - fixed)?;

    let mut messages = Vec::with_capacity(
        usize::from(system.is_some())
            + usize::from(summary.is_some())
            + walk.kept.len() * 2
            + input.pending.len(),
    );
    let system_used = system.is_some();
    messages.extend(system);
    let summary_used = summary.is_some();
    messages.extend(summary);
    for group in walk.kept.iter().rev() {
        render(thread, group, &mut messages);
    }
    messages.extend(input.pending.iter().cloned());
    let stable_prefix = match policy.window {
        WindowMode::Stable => messages.len(),
        WindowMode::Sliding => usize::from(system_used) + usize::from(summary_used),
    };

    let entries_included =
        walk.kept.iter().map(Group::entry_count).sum::<usize>() + usize::from(summary_used);
    Ok(ProjectionResult {
        messages,
        tool_spec: input.tools.clone(),
        meta: ProjectionMeta {
            basis_rev: thread.rev(),
            basis_last_seq: thread.last().map(|e| u64::from(e.seq)),
            pending_count: input.pending.len(),
            truncated: walk.truncated,
            estimated_tokens: fixed + walk.used,
            tool_tokens,
            budget,
            summary_used,
            entries_included,
            entries_total: entries.len(),
            needs_summary: walk.truncated,
            window_start_seq: window_start as u64,
            history_from_seq: walk.kept.last().map(|g| g.head as u64),
            suggested_boundary: walk.truncated.then_some(walk.low_water_seq).flatten(),
            stable_prefix,
            request_id: input.ids.request_id.clone(),
            call_id: input.ids.call_id.clone(),
        },
    })
}

/// The summary message to show and the index history starts at.
fn window(thread: &Thread, policy: &ContextPolicy) -> (Option<Message>, usize) {
    let mut start = match thread.latest_boundary().map(|e| &e.body) {
        Some(EntryBody::Boundary { from_seq }) => *from_seq,
        _ => 0,
    };
    let mut summary = None;
    let use_summary =
        policy.summarization != Summarization::None && policy.includes(EntryKind::Summary);
    if let Some(EntryBody::Summary {
        to_seq, content, ..
    }) = thread
        .latest_summary()
        .map(|e| &e.body)
        .filter(|_| use_summary)
    {
        start = start.max(to_seq.saturating_add(1));
        let text = format!("{SUMMARY_PREFIX}{content}");
        summary = Some(match policy.summary_role {
            SummaryRole::System => Message::System { content: text },
            SummaryRole::User => Message::user(text),
        });
    }
    let start = usize::try_from(start).unwrap_or(usize::MAX);
    (summary, start.min(thread.entry_count()))
}

/// The outcome of the newest-first walk.
struct Walk {
    /// Kept groups, newest first.
    kept: Vec<Group>,
    used: u64,
    truncated: bool,
    /// Where a stable window should restart: the oldest kept user turn within low water, else the
    /// oldest kept group within low water, else the newest group.
    low_water_seq: Option<u64>,
}

fn walk(
    entries: &[std::sync::Arc<crate::thread::Entry>],
    start: usize,
    policy: &ContextPolicy,
    available: u64,
) -> Result<Walk, ProjectionError> {
    let low = policy.low_water_fraction();
    let scaled = |limit: u64| -> u64 {
        // Truncation toward zero is the point: low water is at most the fraction.
        ((limit as f64) * low) as u64
    };
    let low_tokens = scaled(available);
    let max_turns = u64::from(policy.keep_last_turns);
    let max_messages = u64::from(policy.max_messages);
    let low_turns = scaled(max_turns).max(1);
    let low_messages = scaled(max_messages).max(1);

    let mut kept: Vec<Group> = Vec::new();
    let (mut used, mut messages, mut turns) = (0u64, 0u64, 0u64);
    let mut truncated = false;
    let (mut low_any, mut low_user): (Option<u64>, Option<u64>) = (None, None);
    for group in GroupsRev::new(entries, start, policy) {
        if kept.is_empty() && group.tokens > available {
            let last = group.results.last().copied().unwrap_or(group.head);
            return Err(ProjectionError::NewestGroupOverBudget {
                from_seq: group.head as u64,
                to_seq: last as u64,
                needed: group.tokens,
                available,
            });
        }
        let over_tokens = used + group.tokens > available;
        let over_turns = max_turns > 0 && turns >= max_turns;
        let over_messages =
            max_messages > 0 && !kept.is_empty() && messages + group.message_count() > max_messages;
        if over_tokens || over_turns || over_messages {
            truncated = true;
            break;
        }
        used += group.tokens;
        messages += group.message_count();
        turns += u64::from(group.is_user);
        let within_low = used <= low_tokens
            && (max_turns == 0 || turns <= low_turns)
            && (max_messages == 0 || messages <= low_messages);
        if within_low || kept.is_empty() {
            low_any = Some(group.head as u64);
            if group.is_user && within_low {
                low_user = Some(group.head as u64);
            }
        }
        kept.push(group);
    }
    Ok(Walk {
        kept,
        used,
        truncated,
        low_water_seq: low_user.or(low_any),
    })
}

/// Appends the messages of one group.
fn render(thread: &Thread, group: &Group, out: &mut Vec<Message>) {
    let entries = thread.to_list();
    match &entries[group.head].body {
        EntryBody::User { content } => out.push(Message::User {
            content: content.clone(),
        }),
        EntryBody::System { content } => out.push(Message::system(content.clone())),
        EntryBody::Assistant { message, .. } => {
            match out.last_mut() {
                // A turn the provider paused and the model continued is one turn, as the
                // model wrote it: the continuation's blocks follow the paused ones.
                Some(Message::Assistant(paused))
                    if paused.stop_reason == motet_directives::StopReason::PauseTurn =>
                {
                    paused.blocks.extend(message.blocks.iter().cloned());
                    paused.stop_reason = message.stop_reason.clone();
                }
                _ => out.push(Message::Assistant(message.clone())),
            }
            if !group.results.is_empty() {
                let results: Vec<ToolResult> = group
                    .results
                    .iter()
                    .filter_map(|&i| match &entries[i].body {
                        EntryBody::ToolResult { result, .. } => Some(result.clone()),
                        _ => None,
                    })
                    .collect();
                out.push(Message::ToolResults { results });
            }
        }
        _ => {}
    }
}
