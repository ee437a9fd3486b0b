//! The runtime's own costs, each beside a floor written without motet:
//!
//! - `spawn`: 100,000 ReAct agents — µs and resident bytes per agent (RSS after minus before,
//!   divided by N) — against bare ractor actors holding the same state (`floor_ractor`).
//! - `ping`: request → reply round trips through an agent's mailbox as signals (an ask and the
//!   reply signal), against a bare ractor `call` (`floor_ractor`).
//! - `react`: one ask end to end — `agent.request`, an LLM call that asks for a tool, the tool,
//!   an LLM call that answers — with an in-process zero-latency model, at 1 agent and at 1,000
//!   agents asked at once (`agents_1000`), against the same loop by hand: the strategy, model
//!   and tool called directly, no actors (`floor_loop`). `two_workers_vs_one` compares 2
//!   workers with 1 beside the same comparison for that loop run in a bare ractor actor and
//!   asked the same way (`floor_actor_loop_*`): what a second worker costs any actor whose
//!   round trip takes this long.
//! - `fanout`: a coordinator publishes one task per worker on the bus to 10,000 subscribed
//!   worker agents, each answers the coordinator, which replies when all are in: wall time,
//!   against 10,000 bare ractor `call`s issued at once (`floor_ractor`).
//! - `new_thread`: a request on a new thread against one on a thread already active
//!   (agents/new_thread.rs says how).
//! - `memory`: heap bytes per agent — 2,000 ReAct agents just spawned, holding a 20-message
//!   conversation, and idle (thread actors stopped, conversation in the store), with the
//!   in-memory and the SQLite store — against the bare messages in a `Vec`
//!   (`floor_messages`) and bare ractor actors holding them (`floor_actor_*`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use motet_agents::{
    AGENT_REQUEST, AgentRequest, Env, FixedEnv, LLM_RESULT, LlmResult, ReAct, ReActConfig,
    ReActState, Strategy, TOOL_RESULT, ToolResultSignal,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, Directive, LlmResponse, StopReason, ToolArgs, ToolCallView,
    Usage,
};
use motet_runtime::agent::{AgentSpec, AskOptions, Runtime};
use motet_runtime::testing::ScriptedModel;
use motet_runtime::tool::{ToolError, ToolSet, tool_fn};
use motet_signals::Signal;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::report::{Report, round2};

mod fanout;
mod memory;
mod new_thread;
mod ping;
mod react;
mod spawn;

pub(crate) use fanout::run_fanout;
pub(crate) use memory::run_memory;
pub(crate) use new_thread::run_new_thread;
pub(crate) use ping::run_ping;
pub(crate) use react::{react_child, run_react};
pub(crate) use spawn::run_spawn;

const SPAWN: usize = 100_000;
/// Extra timing rounds of the spawn scenario (each spawns SPAWN bare actors and SPAWN agents).
const SPAWN_ROUNDS: usize = 4;
const PINGS: usize = 20_000;
const REACT_ONE: usize = 2_000;
const REACT_MANY: usize = 1_000;

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn tools() -> Option<Arc<ToolSet>> {
    let set = ToolSet::builder()
        .tool(tool_fn(
            "add",
            "Adds two integers.",
            |args: AddArgs| async move { Ok::<_, ToolError>((args.a + args.b).to_string()) },
        ))
        .build()
        .ok()?;
    Some(Arc::new(set))
}

fn react(tools: &ToolSet) -> Option<ReAct> {
    Some(ReAct::new(
        ReActConfig::new("openai:gpt-5.2".parse().ok()?)
            .with_system_prompt("You add numbers.")
            .with_tools(tools.definitions()),
    ))
}

/// The model's tool call numbered `n`: its id is `call_<n>`.
fn tool_turn(n: u64) -> LlmResponse {
    LlmResponse::new(
        AssistantMessage {
            blocks: vec![AssistantBlock::tool_use(
                format!("call_{n}"),
                "add",
                ToolArgs::from_text(r#"{"a": 2, "b": 3}"#),
            )],
            stop_reason: StopReason::ToolUse,
        },
        Usage::default(),
    )
}

fn answer_turn() -> LlmResponse {
    LlmResponse::new(AssistantMessage::text("5"), Usage::default())
}

/// A zero-latency model: it asks for the tool when the conversation ends with the user's
/// question and answers once the tool's result is in. Any number of agents share it; its tool
/// calls are numbered across all of them, so every call's id is new, as a provider's are (a
/// repeated id would be renamed by the strategy, which a real model does not make it do).
/// The number is the only state.
struct ZeroModel;

#[async_trait::async_trait]
impl motet_providers::LlmClient for ZeroModel {
    async fn stream(
        &self,
        req: motet_directives::LlmRequest,
    ) -> Result<motet_providers::LlmEvents, motet_providers::ProviderError> {
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let asks = matches!(
            req.messages.last(),
            Some(motet_directives::Message::User { .. })
        );
        let response = if asks {
            tool_turn(CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1)
        } else {
            answer_turn()
        };
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

/// A bare actor with the state an agent thread holds, for the spawn floor.
struct Bare;

impl Actor for Bare {
    type Msg = BareMsg;
    type State = ReActState;
    type Arguments = ReActState;

    async fn pre_start(
        &self,
        _me: ActorRef<BareMsg>,
        state: ReActState,
    ) -> Result<ReActState, ActorProcessingErr> {
        Ok(state)
    }

    async fn handle(
        &self,
        _me: ActorRef<BareMsg>,
        msg: BareMsg,
        _state: &mut ReActState,
    ) -> Result<(), ActorProcessingErr> {
        let BareMsg::Ping(reply) = msg;
        let _ = reply.send(());
        Ok(())
    }
}

enum BareMsg {
    Ping(RpcReplyPort<()>),
}

/// The bare floor again, each actor linked to one supervisor as motet's thread actors are: how
/// much of the gap is ractor's supervision link.
async fn spawn_linked_floor(strategy: &ReAct, env: &FixedEnv) -> Option<Duration> {
    let (supervisor, supervisor_join) =
        Actor::spawn(None, Bare, strategy.init_for_thread(env, "supervisor"))
            .await
            .ok()?;
    let start = Instant::now();
    let mut bare = Vec::with_capacity(SPAWN);
    for n in 0..SPAWN {
        let state = strategy.init_for_thread(env, &format!("agent-{n}/default"));
        bare.push(
            Actor::spawn_linked(None, Bare, state, supervisor.get_cell())
                .await
                .ok()?,
        );
    }
    let elapsed = start.elapsed();
    stop_all(bare).await;
    stop_all(vec![(supervisor, supervisor_join)]).await;
    Some(elapsed)
}

/// Stops bare actors and waits until every one has exited, so the next round does not share
/// the cores with their teardown (motet's `shutdown` waits for its threads the same way).
async fn stop_all(actors: Vec<(ActorRef<BareMsg>, tokio::task::JoinHandle<()>)>) {
    let mut joins = Vec::with_capacity(actors.len());
    for (actor, join) in actors {
        actor.stop(None);
        joins.push(join);
    }
    for join in joins {
        let _ = join.await;
    }
}

pub(super) fn block_on<F: std::future::Future<Output = Vec<Report>>>(f: F) -> Vec<Report> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(f),
        Err(_) => Vec::new(),
    }
}
