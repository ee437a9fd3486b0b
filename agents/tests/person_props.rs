//! A person in the loop under any interleaving: whatever order asks, steers, cancels, model
//! answers, tool results, pauses for approval or a question, responses (fitting or not, twice,
//! for unknown calls) and restarts arrive in, every call the model is sent holds each tool call
//! followed at once by its result, the thread holds no user message between a turn's calls and
//! their results, a request that ended leaves no call without its result, and every steer is
//! taken in as a user message, still waits, or is on record as a note.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod common;

use motet_agents::{
    AgentCancel, AgentRequest, AgentRespond, AgentResume, AgentSteer, EntryBody, LlmResult,
    ReActConfig, ReActState, Strategy as _, ToolPaused, ToolResultSignal,
};
use motet_directives::{
    Approval, AssistantBlock, AssistantMessage, CallId, Directive, LlmResponse, Message, Pause,
    Response, StopReason, ToolArgs, ToolDef, ToolDefs, ToolResult, Usage,
};
use proptest::prelude::*;
use serde::Serialize;
use serde_json::json;

use common::{Harness, to_value};

#[derive(Debug, Clone, Copy)]
enum Op {
    Ask,
    Steer,
    Cancel,
    /// The model answers the call in flight with this many tool calls (0: a text answer).
    Answer(usize),
    /// The tool result owed at this position (modulo how many are owed) arrives.
    ToolResult(usize),
    /// The call owed at this position pauses: for an approval (true) or with a question.
    Pause(usize, bool),
    /// A person responds to the paused call at this position (or to an unknown call when none
    /// is paused): approve, edit, reject, answer — fitting or not.
    Respond(usize, u8),
    /// The process stops and comes back: the state as stored, restored, resumed.
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Ask),
        3 => Just(Op::Steer),
        1 => Just(Op::Cancel),
        3 => (0usize..3).prop_map(Op::Answer),
        4 => (0usize..3).prop_map(Op::ToolResult),
        2 => (0usize..3, any::<bool>()).prop_map(|(at, approval)| Op::Pause(at, approval)),
        3 => (0usize..3, 0u8..4).prop_map(|(at, kind)| Op::Respond(at, kind)),
        1 => Just(Op::Restart),
    ]
}

/// The strategy, its state and what its directives left owed.
struct World {
    h: Harness,
    requests: usize,
    llm_call: Option<CallId>,
    tools: Vec<(CallId, String)>,
    /// Calls paused by the tool runner: the model's id, and whether for an approval.
    paused: Vec<(String, bool)>,
    steers: Vec<String>,
    calls: Vec<Vec<Message>>,
}

impl World {
    fn new() -> Self {
        let tools: ToolDefs =
            vec![ToolDef::new("calc", "Computes", json!({"type": "object"}))].into();
        let config = ReActConfig::new("openai:gpt-5.2".parse().unwrap())
            .with_tools(tools)
            .with_max_iterations(50);
        Self {
            h: Harness::new(config),
            requests: 0,
            llm_call: None,
            tools: Vec::new(),
            paused: Vec::new(),
            steers: Vec::new(),
            calls: Vec::new(),
        }
    }

    fn send(&mut self, ty: &str, data: impl Serialize) {
        for directive in self.h.send(ty, to_value(&data)) {
            match directive {
                Directive::LlmStream(stream) => {
                    self.llm_call = Some(stream.call_id);
                    self.calls.push(stream.request.messages);
                }
                Directive::ToolExec(exec) => {
                    self.paused.retain(|(id, _)| *id != exec.tool_call_id);
                    self.tools.push((exec.call_id, exec.tool_call_id));
                }
                Directive::Reply(_) => {
                    self.llm_call = None;
                    self.tools.clear();
                    self.paused.clear();
                }
                _ => {}
            }
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Ask if !self.h.state.status.is_active() => {
                self.requests += 1;
                self.h.request = format!("r{}", self.requests);
                let query = format!("question {}", self.requests);
                self.send(
                    "agent.request",
                    AgentRequest {
                        query,
                        attachments: Default::default(),
                        context_policy: None,
                        response_format: None,
                    },
                );
            }
            Op::Ask => {}
            Op::Steer => {
                let text = format!("steer {}", self.steers.len());
                self.steers.push(text.clone());
                self.send("agent.steer", AgentSteer { text });
            }
            Op::Cancel => self.send("agent.cancel", AgentCancel::default()),
            Op::Answer(n) => {
                let Some(call) = self.llm_call.take() else {
                    return;
                };
                let blocks: Vec<AssistantBlock> = (0..n)
                    .map(|i| {
                        let id = format!("tc_{}_{i}", self.calls.len());
                        AssistantBlock::tool_use(id, "calc", ToolArgs::from_text("{}"))
                    })
                    .collect();
                let message = if blocks.is_empty() {
                    AssistantMessage::text("an answer")
                } else {
                    AssistantMessage {
                        blocks,
                        stop_reason: StopReason::ToolUse,
                    }
                };
                self.send(
                    "llm.result",
                    LlmResult {
                        call_id: call,
                        response: LlmResponse::new(message, Usage::default()),
                    },
                );
            }
            Op::ToolResult(at) => {
                if self.tools.is_empty() {
                    return;
                }
                let (call_id, tool_call_id) = self.tools.remove(at % self.tools.len());
                self.send(
                    "tool.result",
                    ToolResultSignal::new(call_id, ToolResult::ok(tool_call_id, "1")),
                );
            }
            Op::Pause(at, approval) => {
                if self.tools.is_empty() {
                    return;
                }
                let (call_id, tool_call_id) = self.tools.remove(at % self.tools.len());
                let pause = if approval {
                    Pause::Approval(Approval::required())
                } else {
                    Pause::Question {
                        text: "which?".into(),
                    }
                };
                self.paused.push((tool_call_id.clone(), approval));
                self.send(
                    "tool.paused",
                    ToolPaused {
                        call_id,
                        tool_call_id,
                        name: "calc".into(),
                        args: ToolArgs::from_text("{}"),
                        pause,
                    },
                );
            }
            Op::Respond(at, kind) => {
                let (tool_call_id, approval) = match self.paused.len() {
                    0 => ("unknown".to_owned(), true),
                    n => self.paused[at % n].clone(),
                };
                let response = match kind {
                    0 => Response::Approve,
                    1 => Response::Edit {
                        args: r#"{"x": 1}"#.into(),
                    },
                    2 => Response::Reject {
                        reason: "no".into(),
                    },
                    _ => Response::Answer { text: "42".into() },
                };
                let fits = kind == 2 || (kind < 2) == approval;
                if fits && !matches!(response, Response::Approve | Response::Edit { .. }) {
                    self.paused.retain(|(id, _)| *id != tool_call_id);
                }
                self.send(
                    "agent.respond",
                    AgentRespond {
                        tool_call_id,
                        response,
                        by: None,
                    },
                );
            }
            Op::Restart => {
                let saved: ReActState =
                    serde_json::from_value(serde_json::to_value(&self.h.state).unwrap()).unwrap();
                let active = self.h.state.status.is_active();
                self.h.state = self.h.react.restore(&self.h.env, saved);
                self.llm_call = None;
                self.tools.clear();
                if active {
                    self.send(
                        "agent.resume",
                        AgentResume {
                            idempotent_tools: vec!["calc".into()],
                        },
                    );
                } else {
                    self.paused.clear();
                }
            }
        }
    }
}

/// Every assistant turn with tool calls is followed at once by the results of all of them.
fn calls_have_their_results_next(messages: &[Message]) -> Result<(), String> {
    for (at, message) in messages.iter().enumerate() {
        let Message::Assistant(turn) = message else {
            continue;
        };
        let ids: Vec<&str> = turn
            .blocks
            .iter()
            .filter_map(|b| match b {
                AssistantBlock::ToolUse { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        if ids.is_empty() {
            continue;
        }
        let Some(Message::ToolResults { results }) = messages.get(at + 1) else {
            return Err(format!(
                "message {at}: calls {ids:?} not followed by their results"
            ));
        };
        let answered: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
        if ids.iter().any(|id| !answered.contains(id)) {
            return Err(format!("message {at}: calls {ids:?}, results {answered:?}"));
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn no_interleaving_leaves_a_tool_call_without_its_result(
        ops in prop::collection::vec(op(), 1..60)
    ) {
        let mut world = World::new();
        for op in ops {
            world.apply(op);
        }
        for (n, messages) in world.calls.iter().enumerate() {
            if let Err(why) = calls_have_their_results_next(messages) {
                prop_assert!(false, "call {}: {}", n, why);
            }
        }
        // And in the thread itself: no user message between a turn's tool calls and the last
        // of their results.
        let thread = world.h.state.thread.to_list();
        let mut owed: Vec<String> = Vec::new();
        for entry in thread {
            match &entry.body {
                EntryBody::Assistant { message, .. } => {
                    owed = message
                        .blocks
                        .iter()
                        .filter_map(|b| match b {
                            AssistantBlock::ToolUse { id, .. } => Some(id.to_string()),
                            _ => None,
                        })
                        .collect();
                }
                EntryBody::ToolResult { result, .. } => owed.retain(|id| *id != result.tool_use_id),
                EntryBody::User { content } => prop_assert!(
                    owed.is_empty(),
                    "user message {:?} at seq {} while {:?} are owed",
                    content,
                    entry.seq,
                    owed
                ),
                _ => {}
            }
        }
        // A request that ended answered every call it made.
        prop_assert!(
            world.h.state.status.is_active() || owed.is_empty(),
            "{:?} owed after the request ended ({:?})",
            owed,
            world.h.state.status
        );
        // What the state lists as waiting is exactly what waits, and only while it is active.
        let listed: Vec<String> = world
            .h
            .react
            .waiting(&world.h.state)
            .into_iter()
            .map(|w| w.tool_call_id)
            .collect();
        if world.h.state.status.is_active() {
            for id in &listed {
                prop_assert!(owed.contains(id), "{} is listed but not owed", id);
            }
        } else {
            prop_assert!(listed.is_empty(), "{:?} listed with no request", listed);
        }
        // Every steer the active request accepted is in the thread as a user message or a note.
        let thread = world.h.state.thread.to_list();
        let recorded = |text: &str| thread.iter().any(|e| match &e.body {
            EntryBody::User { content } => content == text,
            EntryBody::Note { text: note } => note.ends_with(&format!(": {text}")),
            _ => false,
        });
        let waiting: Vec<String> = world
            .h
            .state
            .request
            .as_ref()
            .map(|r| r.steers.clone())
            .unwrap_or_default();
        let ignored = usize::try_from(world.h.state.ignored).unwrap();
        let lost: Vec<&String> = world
            .steers
            .iter()
            .filter(|s| !recorded(s) && !waiting.contains(s))
            .collect();
        // A steer with no running request is ignored (and noted as ignored): those are the
        // only ones neither taken in, nor waiting, nor noted as not taken in.
        prop_assert!(lost.len() <= ignored, "lost {:?}, ignored {}", lost, ignored);
    }
}
