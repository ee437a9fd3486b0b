//! `append`: durable appends to a thread store, and loading a 10,000-entry thread to project it.
//!
//! Each append variant commits entries of one realistic conversation (a user question, an
//! assistant turn with a tool call, its result, a final answer; about 0.5-2 KB of JSON each) to a
//! fresh store, one `ThreadStore::append` per transaction: one entry each (the checkpoint pattern
//! of seed 004 §4.2) or a batch of 100. The SQLite files live in `MOTET_BENCH_DIR` (default: the
//! system temp dir; put it on the disk a real store would use). The floor is what one durable
//! commit costs this disk at minimum: a 512-byte `write` plus `fdatasync` of a small file.
//! `load_project_10000` reopens the store and times `load` of a 10,000-entry thread plus one
//! projection of it, best of a few runs.

use std::fs::OpenOptions;
use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use motet_agents::{
    ContextPolicy, FixedEnv, NewEntry, ProjectionIds, ProjectionInput, Refs, Thread, WindowMode,
    project,
};
use motet_directives::{
    AssistantBlock, AssistantMessage, ProviderMeta, StopReason, ToolArgs, ToolDefs, ToolResult,
    Usage,
};
use motet_runtime::store::{
    Durability, MemoryStore, SqliteConfig, SqliteStore, ThreadHeader, ThreadStore,
};

use crate::report::{Report, round2};

const SEED: u64 = 0x6170_7064;
const SINGLE_FULL: usize = 400;
const SINGLE_NORMAL: usize = 4_000;
const BATCH: usize = 100;
const BATCHES: usize = 40;
const MEMORY: usize = 100_000;
const LOAD_ENTRIES: usize = 10_000;
const LOAD_RUNS: usize = 5;
const FSYNCS: usize = 400;

/// A thread of `entries` entries: whole turns of four, with reasoning signatures on the tool
/// turn so provider meta is part of what is written.
pub(super) fn conversation(id: &str, entries: usize) -> Thread {
    let env = FixedEnv::new(0);
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut thread = Thread::new(id, 0);
    let mut turn = 0usize;
    let words = |rng: &mut fastrand::Rng, lo: usize, hi: usize| "word ".repeat(rng.usize(lo..hi));
    while thread.entry_count() < entries {
        let request = Refs::request(format!("r{turn}"));
        let call = format!("call_{turn}");
        let tool_turn = AssistantMessage {
            blocks: vec![
                AssistantBlock::reasoning(
                    words(&mut rng, 10, 60),
                    Some(ProviderMeta::Anthropic {
                        signature: "EqQBCkgIARABGAIiQ".repeat(8),
                    }),
                ),
                AssistantBlock::tool_use(
                    &call,
                    "search",
                    ToolArgs::from_text(format!(
                        r#"{{"query": "{}"}}"#,
                        words(&mut rng, 2, 20).trim()
                    )),
                ),
            ],
            stop_reason: StopReason::ToolUse,
        };
        let usage = Usage {
            input_tokens: 900,
            output_tokens: 80,
            ..Usage::default()
        };
        for entry in [
            NewEntry::user(format!("question {turn}: {}", words(&mut rng, 40, 160))),
            NewEntry::assistant(tool_turn, usage),
            NewEntry::tool_result("search", ToolResult::ok(&call, words(&mut rng, 60, 300))),
            NewEntry::assistant(
                AssistantMessage::text(format!("answer {turn}: {}", words(&mut rng, 40, 200))),
                usage,
            ),
        ] {
            if thread.entry_count() < entries {
                thread.append(&env, entry.with_refs(request.clone()));
            }
        }
        turn += 1;
    }
    thread
}

fn bench_dir() -> PathBuf {
    let base = std::env::var_os("MOTET_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    base.join(format!("motet-bench-append-{}", std::process::id()))
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| eprintln!("append: cannot start a tokio runtime: {e}"))
        .ok()
}

/// Appends `thread`'s entries `per_txn` at a time; the time of all the appends.
pub(super) async fn append_all(
    store: &dyn ThreadStore,
    thread: &Thread,
    per_txn: usize,
) -> Result<Duration, String> {
    store
        .create(&ThreadHeader::of(thread))
        .await
        .map_err(|e| e.to_string())?;
    let entries = thread.to_list();
    let start = Instant::now();
    let mut rev = 0u64;
    for chunk in entries.chunks(per_txn) {
        rev = store
            .append(thread.id(), chunk, rev)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(start.elapsed())
}

/// The report of scenario `scenario`'s `variant`: `entries` appended `per_txn` at a time.
pub(super) fn append_report(
    scenario: &'static str,
    variant: &str,
    entries: usize,
    per_txn: usize,
    elapsed: Duration,
) -> Report {
    let transactions = entries.div_ceil(per_txn) as u64;
    let secs = elapsed.as_secs_f64();
    Report::new(scenario, variant, transactions, elapsed)
        .with("entries_per_txn", per_txn)
        .with(
            "entries_per_sec",
            round2(if secs > 0.0 {
                entries as f64 / secs
            } else {
                0.0
            }),
        )
}

async fn sqlite_variant(
    dir: &std::path::Path,
    variant: &str,
    durability: Durability,
    entries: usize,
    per_txn: usize,
) -> Result<Report, String> {
    let path = dir.join(format!("{variant}.db"));
    let config = SqliteConfig::default().with_durability(durability);
    let store = SqliteStore::open_with(&path, config)
        .await
        .map_err(|e| e.to_string())?;
    let thread = conversation(variant, entries);
    let elapsed = append_all(&store, &thread, per_txn).await?;
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(path.with_extension("db-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    Ok(append_report("append", variant, entries, per_txn, elapsed)
        .with("synchronous", format!("{durability:?}").to_uppercase())
        .with("bytes_per_entry", bytes / entries.max(1) as u64))
}

async fn load_project(dir: &std::path::Path) -> Result<Report, String> {
    let path = dir.join("load.db");
    let thread = conversation("thread_load", LOAD_ENTRIES);
    {
        let store = SqliteStore::open(&path).await.map_err(|e| e.to_string())?;
        append_all(&store, &thread, 500).await?;
    }
    let store = SqliteStore::open(&path).await.map_err(|e| e.to_string())?;
    let policy = ContextPolicy::new()
        .with_max_input_tokens(8_000)
        .with_keep_last_turns(0)
        .with_window(WindowMode::Sliding);
    let tools = ToolDefs::from(Vec::new());
    let ids = ProjectionIds::default();
    let mut best = (Duration::MAX, Duration::ZERO, Duration::ZERO);
    let mut included = 0;
    for run in 0..=LOAD_RUNS {
        let start = Instant::now();
        let loaded = store
            .load("thread_load")
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the thread vanished")?;
        let loaded_at = start.elapsed();
        let input = ProjectionInput {
            thread: &loaded,
            policy: &policy,
            pending: &[],
            system: Some("You are a research assistant."),
            tools: &tools,
            ids: &ids,
        };
        let projection = project(black_box(&input)).map_err(|e| e.to_string())?;
        let total = start.elapsed();
        included = projection.meta.entries_included;
        if loaded.entry_count() != LOAD_ENTRIES {
            return Err(format!("loaded {} entries", loaded.entry_count()));
        }
        // Run 0 warms the page cache and the statement cache.
        if run > 0 && total < best.0 {
            best = (total, loaded_at, total - loaded_at);
        }
    }
    let db_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(Report::new("append", "load_project_10000", 1, best.0)
        .with("entries", LOAD_ENTRIES)
        .with("load_ms", round2(best.1.as_secs_f64() * 1e3))
        .with("project_ms", round2(best.2.as_secs_f64() * 1e3))
        .with("entries_included", included)
        .with("db_bytes", db_bytes))
}

/// One durable commit's minimum: write 512 bytes and `fdatasync`, `FSYNCS` times.
fn floor_fsync(dir: &std::path::Path) -> Result<Report, String> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("floor.bin"))
        .map_err(|e| e.to_string())?;
    let block = [0x5au8; 512];
    let start = Instant::now();
    for _ in 0..FSYNCS {
        file.write_all(&block).map_err(|e| e.to_string())?;
        file.sync_data().map_err(|e| e.to_string())?;
    }
    Ok(Report::new(
        "append",
        "floor_fsync",
        FSYNCS as u64,
        start.elapsed(),
    ))
}

async fn all(dir: &std::path::Path) -> Result<Vec<Report>, String> {
    let floor = floor_fsync(dir)?;
    let full = sqlite_variant(dir, "sqlite_single", Durability::Full, SINGLE_FULL, 1).await?;
    let normal = sqlite_variant(
        dir,
        "sqlite_single_normal",
        Durability::Normal,
        SINGLE_NORMAL,
        1,
    )
    .await?;
    let batch = sqlite_variant(
        dir,
        "sqlite_batch_100",
        Durability::Full,
        BATCH * BATCHES,
        BATCH,
    )
    .await?;
    let memory_thread = conversation("thread_memory", MEMORY);
    let memory = append_report(
        "append",
        "memory_single",
        MEMORY,
        1,
        append_all(&MemoryStore::new(), &memory_thread, 1).await?,
    );
    let load = load_project(dir).await?;
    let vs_floor = |r: Report| {
        let ratio = if floor.ns_per_op() > 0.0 {
            r.ns_per_op() / floor.ns_per_op()
        } else {
            0.0
        };
        r.with("vs_floor", round2(ratio))
    };
    Ok(vec![
        vs_floor(full),
        vs_floor(normal),
        vs_floor(batch),
        memory,
        load,
        floor,
    ])
}

/// Every variant; a setup failure is printed and yields no reports.
pub(crate) fn run() -> Vec<Report> {
    let dir = bench_dir();
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("append: cannot create {}: {e}", dir.display());
        return Vec::new();
    }
    let reports = match runtime() {
        Some(rt) => rt.block_on(all(&dir)),
        None => Ok(Vec::new()),
    };
    if let Err(e) = std::fs::remove_dir_all(&dir) {
        eprintln!("append: cannot remove {}: {e}", dir.display());
    }
    reports.unwrap_or_else(|e| {
        eprintln!("append: {e}");
        Vec::new()
    })
}
