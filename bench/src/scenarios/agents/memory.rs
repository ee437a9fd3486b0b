//! `memory`: heap bytes per agent — just spawned, holding a 20-message conversation, and idle —
//! with the in-memory and the SQLite store, beside the bare messages and bare ractor actors.
//!
//! Each figure is the change in live heap bytes (counted by the bench's global allocator, see
//! `crate::alloc`) divided by [`MEMORY`] agents, read once the heap has settled: a ractor actor
//! boxes its processing loop after its spawn has returned, so a reading taken as the last spawn
//! returns missed some of them (up to 200 bytes an actor, from run to run). Growth figures also
//! carry the resident-set change, which reads low once an earlier variant has freed pages the
//! allocator reuses.
//! The conversation is five asks of "What is 2 + 3?", each four messages: the user's question,
//! an assistant turn calling `add` {"a": 2, "b": 3}, the tool's result "5", the answer "5". Every
//! tool call has an id of its own, as a provider's do: `call_1` to `call_5` in the floor's
//! messages, `call_<n>` numbered across all agents by the benchmark's model (up to four digits
//! longer than the floor's: in the floor's favour).
//!
//! - `floor_messages`: the 20 messages of that conversation, built with `motet_directives`'
//!   constructors, in a `Vec<Message>` per agent.
//! - `floor_actor_empty`: a bare ractor actor per agent whose state is an empty `Vec<Message>`.
//! - `floor_actor_conversation`: a bare ractor actor per agent holding its own 20 messages —
//!   the floor the issue measures a conversing agent against (≤ 1.5x).
//! - `<store>_empty`, for `memory` (`MemoryStore`, the runtime's default) and `sqlite`
//!   (`SqliteStore` in a fresh temporary folder): ReAct agents just spawned on a fresh runtime
//!   with the zero-latency model, each thread actor running, never asked.
//! - `<store>_conversation`: the same agents after five asks each (all agents asked at once,
//!   round by round), every thread actor still running (the idle timeout, 8 s, outlasts a
//!   round), counted from before spawning, with `vs_floor` against `floor_actor_conversation`.
//!   It includes what the runtime keeps of the requests: a record per finished request, the
//!   last `FINISHED_REQUESTS_KEPT` (1,000) of them, whatever the number of agents. `entries`
//!   reports how many User, Assistant and ToolResult entries one agent's thread holds (20
//!   expected), `thread_entries` all its entries (ReAct adds a window boundary).
//!   `threads_running` says how many thread actors ran when it was measured.
//! - `<store>_idle`: the same agents once the idle timeout has stopped every thread actor:
//!   registered, not running. `heap_bytes_per_agent` is everything since before spawning: with
//!   the memory store the conversations are still here, in the store's memory
//!   (`heap_bytes_per_agent_minus_messages` takes the bare messages off); with SQLite they are
//!   on disk, and in SQLite's page cache, which is counted. `agent_bytes` is what the idle
//!   agents themselves hold: the heap freed by removing them (`Runtime::stop_agent`), which
//!   leaves the request log, the store and its cache behind
//!   (`runtime_and_store_bytes_per_agent`). The ≤ 1 KB target is for `agent_bytes`.
//!
//! Every runtime figure includes the caller's `AgentHandle` per agent (a name and an `Arc`).

#[allow(
    clippy::wildcard_imports,
    reason = "a part of the agents scenarios, sharing their helpers"
)]
use super::*;

use motet_agents::EntryBody;
use motet_directives::{Message, ToolResult};
use motet_runtime::store::{MemoryStore, SqliteStore, ThreadStore};

use crate::alloc::{counting, live_bytes};

/// Agents (and floor actors) per variant.
const MEMORY: usize = 2_000;
/// Asks per agent: four messages each.
const ASKS: usize = 5;
/// The idle timeout of the agents: well beyond what a round of asks takes (1.5-3 s with SQLite
/// syncing every commit, with this machine's disk), so every thread actor runs when the
/// conversation is measured.
const IDLE: Duration = Duration::from_secs(8);

/// The conversation one agent holds after [`ASKS`] asks, as bare messages.
fn conversation() -> Vec<Message> {
    let mut messages = Vec::with_capacity(ASKS * 4);
    for ask in 1..=ASKS {
        messages.push(Message::user("What is 2 + 3?"));
        messages.push(Message::Assistant(AssistantMessage {
            blocks: vec![AssistantBlock::tool_use(
                format!("call_{ask}"),
                "add",
                ToolArgs::from_text(r#"{"a": 2, "b": 3}"#),
            )],
            stop_reason: StopReason::ToolUse,
        }));
        messages.push(Message::ToolResults {
            results: vec![ToolResult::ok(format!("call_{ask}"), "5")],
        });
        messages.push(Message::Assistant(AssistantMessage::text("5")));
    }
    messages
}

/// A bare actor holding a conversation, for the floors.
struct BareHolder;

impl Actor for BareHolder {
    type Msg = BareMsg;
    type State = Vec<Message>;
    type Arguments = Vec<Message>;

    async fn pre_start(
        &self,
        _me: ActorRef<BareMsg>,
        messages: Vec<Message>,
    ) -> Result<Vec<Message>, ActorProcessingErr> {
        Ok(messages)
    }

    async fn handle(
        &self,
        _me: ActorRef<BareMsg>,
        msg: BareMsg,
        _messages: &mut Vec<Message>,
    ) -> Result<(), ActorProcessingErr> {
        let BareMsg::Ping(reply) = msg;
        let _ = reply.send(());
        Ok(())
    }
}

/// Live heap and resident bytes at one moment.
#[derive(Clone, Copy)]
struct Mark {
    heap: i64,
    rss: u64,
    at: Instant,
}

impl Mark {
    fn now() -> Self {
        Self {
            heap: live_bytes(),
            rss: rss_bytes(),
            at: Instant::now(),
        }
    }

    /// Heap bytes per agent since this mark.
    fn heap_per_agent(&self) -> i64 {
        (live_bytes() - self.heap) / MEMORY as i64
    }

    /// Resident bytes per agent since this mark (0 when the set shrank).
    fn rss_per_agent(&self) -> u64 {
        rss_bytes().saturating_sub(self.rss) / MEMORY as u64
    }
}

/// The floors: bare messages, then bare actors empty and holding them. Returns the reports and
/// the heap bytes per agent of `floor_messages` and `floor_actor_conversation`.
async fn floors() -> Option<(Vec<Report>, i64, i64)> {
    let mark = Mark::now();
    let held: Vec<Vec<Message>> = (0..MEMORY).map(|_| conversation()).collect();
    let (messages_heap, messages_rss) = (mark.heap_per_agent(), mark.rss_per_agent());
    let messages_time = mark.at.elapsed();
    drop(held);
    settle().await;

    let mark = Mark::now();
    let mut empty = Vec::with_capacity(MEMORY);
    for _ in 0..MEMORY {
        empty.push(Actor::spawn(None, BareHolder, Vec::new()).await.ok()?);
    }
    let empty_time = mark.at.elapsed();
    settle().await;
    let (empty_heap, empty_rss) = (mark.heap_per_agent(), mark.rss_per_agent());
    stop_all(empty).await;
    settle().await;

    let mark = Mark::now();
    let mut holding = Vec::with_capacity(MEMORY);
    for _ in 0..MEMORY {
        holding.push(Actor::spawn(None, BareHolder, conversation()).await.ok()?);
    }
    let actor_time = mark.at.elapsed();
    settle().await;
    let (actor_heap, actor_rss) = (mark.heap_per_agent(), mark.rss_per_agent());
    stop_all(holding).await;

    let n = MEMORY as u64;
    let reports = vec![
        Report::new("memory", "floor_messages", n, messages_time)
            .with("heap_bytes_per_agent", messages_heap)
            .with("rss_bytes_per_agent", messages_rss)
            .with("messages", (ASKS * 4) as u64),
        Report::new("memory", "floor_actor_empty", n, empty_time)
            .with("heap_bytes_per_agent", empty_heap)
            .with("rss_bytes_per_agent", empty_rss),
        Report::new("memory", "floor_actor_conversation", n, actor_time)
            .with("heap_bytes_per_agent", actor_heap)
            .with("rss_bytes_per_agent", actor_rss)
            .with("messages", (ASKS * 4) as u64),
    ];
    Some((reports, messages_heap, actor_heap))
}

/// The User, Assistant and ToolResult entries of a thread: the conversation it projects.
fn conversation_entries(thread: &motet_agents::Thread) -> usize {
    thread
        .to_list()
        .iter()
        .filter(|e| {
            matches!(
                e.body,
                EntryBody::User { .. } | EntryBody::Assistant { .. } | EntryBody::ToolResult { .. }
            )
        })
        .count()
}

/// Waits until the live heap stops shrinking (two readings 50 ms apart within 0.1%), at most
/// 2 s.
async fn settle() {
    let started = Instant::now();
    let mut last = live_bytes();
    while started.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = live_bytes();
        if (last - now).abs() <= last.abs() / 1000 {
            return;
        }
        last = now;
    }
}

/// The three figures of one store, on a fresh runtime: agents just spawned, after the
/// conversation, and idle.
async fn agents_on(
    store_name: &'static str,
    store: Arc<dyn ThreadStore>,
    messages_heap: i64,
    floor_heap: i64,
) -> Option<Vec<Report>> {
    let tools = tools()?;
    let strategy = react(&tools)?;
    let runtime = Runtime::builder()
        .llm(Arc::new(ZeroModel))
        .store(store)
        .build()
        .ok()?;

    // The variant before freed its actors a little after they stopped: every figure counts
    // from a heap that has settled.
    settle().await;
    let mark = Mark::now();
    let mut handles = Vec::with_capacity(MEMORY);
    for n in 0..MEMORY {
        let spec = AgentSpec::new(format!("m{n}"), strategy.clone())
            .with_tools(tools.clone())
            .with_idle_timeout(Some(IDLE));
        match runtime.spawn(spec).await {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                eprintln!("motet-bench: memory/{store_name}: spawning agent {n} failed: {e}");
                return None;
            }
        }
    }
    let empty_time = mark.at.elapsed();
    settle().await;
    let (empty_heap, empty_rss) = (mark.heap_per_agent(), mark.rss_per_agent());
    let empty_running = runtime.thread_count();

    let asked = Instant::now();
    for _ in 0..ASKS {
        let asks = handles.iter().map(|h| h.ask("What is 2 + 3?"));
        for reply in futures::future::join_all(asks).await {
            if let Err(e) = reply {
                eprintln!("motet-bench: memory/{store_name}: an ask failed: {e}");
                return None;
            }
        }
    }
    let talk_time = asked.elapsed();
    settle().await;
    let (talk_heap, talk_rss) = (mark.heap_per_agent(), mark.rss_per_agent());
    // Threads whose last answer came early may already have been stopped by the idle timeout.
    let talk_running = runtime.thread_count();
    let thread = handles.first()?.get_thread(None).await.ok()??;
    let entries = conversation_entries(&thread);
    if entries != ASKS * 4 {
        eprintln!(
            "motet-bench: memory/{store_name}: one agent's thread holds {entries} conversation \
             entries, not {}: {:?}",
            ASKS * 4,
            thread
                .to_list()
                .iter()
                .map(|e| e.body.kind())
                .collect::<Vec<_>>()
        );
    }
    let thread_entries = thread.entry_count();

    drop(thread);

    let waited = Instant::now();
    while runtime.thread_count() > 0 && waited.elapsed() < IDLE + Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let idle_running = runtime.thread_count();
    // A stopped actor's memory is freed a little after it leaves the registry (its task ends,
    // the supervisor handles its exit): let the heap settle before reading it.
    settle().await;
    let idle_heap = mark.heap_per_agent();
    let idle_time = waited.elapsed();
    if idle_running > 0 {
        eprintln!(
            "motet-bench: memory/{store_name}: {idle_running} threads still running 10 s past the idle timeout"
        );
    }

    // What the idle agents themselves hold is what removing them frees: the request log, the
    // store and SQLite's page cache stay behind.
    let names: Vec<String> = handles.iter().map(|h| h.name().to_owned()).collect();
    drop(handles);
    for name in &names {
        runtime.stop_agent(name);
    }
    let removed = Instant::now();
    while (runtime.agent_count() > 0 || runtime.thread_count() > 0)
        && removed.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    settle().await;
    let left_heap = mark.heap_per_agent();
    runtime.shutdown().await;

    let n = MEMORY as u64;
    let mut idle = Report::new("memory", format!("{store_name}_idle"), n, idle_time)
        .with("heap_bytes_per_agent", idle_heap)
        .with("agent_bytes", idle_heap - left_heap)
        .with("runtime_and_store_bytes_per_agent", left_heap)
        .with("threads_running", idle_running as u64);
    if store_name == "memory" {
        idle = idle.with(
            "heap_bytes_per_agent_minus_messages",
            idle_heap - messages_heap,
        );
    }
    Some(vec![
        Report::new("memory", format!("{store_name}_empty"), n, empty_time)
            .with("heap_bytes_per_agent", empty_heap)
            .with("rss_bytes_per_agent", empty_rss)
            .with("threads_running", empty_running as u64),
        // Time: the five rounds of asks, per agent.
        Report::new("memory", format!("{store_name}_conversation"), n, talk_time)
            .with("heap_bytes_per_agent", talk_heap)
            .with("rss_bytes_per_agent", talk_rss)
            .with(
                "vs_floor",
                round2(talk_heap as f64 / floor_heap.max(1) as f64),
            )
            .with("entries", entries as u64)
            .with("thread_entries", thread_entries as u64)
            .with("threads_running", talk_running as u64),
        idle,
    ])
}

async fn memory() -> Vec<Report> {
    memory_inner().await.unwrap_or_default()
}

async fn memory_inner() -> Option<Vec<Report>> {
    let (mut reports, messages_heap, floor_heap) = floors().await?;

    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    reports.extend(agents_on("memory", store, messages_heap, floor_heap).await?);

    let dir = std::env::temp_dir().join(format!("motet-bench-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let sqlite = async {
        let store: Arc<dyn ThreadStore> =
            Arc::new(SqliteStore::open(dir.join("threads.db")).await.ok()?);
        agents_on("sqlite", store, messages_heap, floor_heap).await
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    reports.extend(sqlite?);
    Some(reports)
}

/// `memory`, with the allocator counting for the whole scenario.
pub(crate) fn run_memory() -> Vec<Report> {
    counting(true);
    let reports = block_on(memory());
    counting(false);
    reports
}
