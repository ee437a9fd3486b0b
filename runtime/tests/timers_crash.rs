//! Timers and cron across SIGKILL, on a SQLite file and on PostgreSQL: an agent sets 600
//! one-shot `Schedule` timers due over the next few seconds and a `Cron` every second with
//! `Misfire::CatchUp(120)`, and records every firing in its stored state; the process running
//! it is killed with SIGKILL at random moments and started again (spawning the agent is all a
//! new process does: no `recover` call), then left to run until everything is due. From the
//! store: every one-shot timer fired exactly once, and every cron occurrence from the first to
//! the last fired exactly once (ids `<signal id>@<ms>`, one second apart) — none doubled, none
//! lost.
//!
//! Then each misfire policy across a SIGKILL: three crons every second (`Skip`, `FireOnce`,
//! `CatchUp(3)`), the process killed and kept down 4.3 s, so at least four occurrences of each
//! fall due with nothing running; the next process fires, of those, what its policy keeps (and
//! at most one more, on time) and every occurrence after it, none twice.
//!
//! The test binary plays the children itself, as tests/crash.rs does: its ignored `child_run`
//! entry (run only by the parent, with `--ignored --exact`) reads `MOTET_TIMERS_CHILD`
//! (`<store url>|<mode>`). PostgreSQL comes from `MOTET_DATABASE_URL` (tests/common/pg.rs):
//! without it that half prints `skipped:` (and fails under `CI=true`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

#[cfg(feature = "postgres")]
#[path = "common/pg.rs"]
mod pg;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use motet_agents::{Env, Strategy, StrategyError};
use motet_directives::cron::{CronExpr, Misfire};
use motet_directives::{Cron, Directive, Schedule, ScheduleId};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::store::{ThreadStore, open_store};
use motet_runtime::testing::ScriptedModel;
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

/// The variable that makes the test binary a child: `<store url>|<mode>`.
const CHILD_VAR: &str = "MOTET_TIMERS_CHILD";
const AGENT: &str = "ticker";
const THREAD: &str = "ticker/default";
/// One-shot timers set.
const ONE_SHOTS: u64 = 600;
/// The first one-shot is due this long after the setup, the others 5 ms apart after it: a
/// firing every 5 ms, so a kill often lands between a firing's commit and its settling.
const FIRST_MS: u64 = 2_000;
const APART_MS: u64 = 5;
/// Kills at random moments: the setup child's and those of the children after it, the last of
/// which is followed by the child that runs until everything fired.
const KILLS: usize = 10;

/// The crons `policies` sets: their schedule and signal ids, and their misfire policies.
const POLICIES: [(&str, Misfire); 3] = [
    ("skip", Misfire::Skip),
    ("once", Misfire::FireOnce),
    ("catch3", Misfire::CatchUp(3)),
];

/// `setup` sets the timers once, `policies` the crons of [`POLICIES`]; a `shot` {name} or a
/// `tick` is recorded when it arrives.
struct Ticker;

/// What the ticker has seen, committed with every step.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Seen {
    set_up: bool,
    /// The one-shot timers' names, in the order they fired.
    shots: Vec<String>,
    /// The cron occurrences' signal ids, in the order they fired.
    ticks: Vec<String>,
}

impl Strategy for Ticker {
    type State = Seen;

    fn init(&self, _env: &dyn Env) -> Seen {
        Seen::default()
    }

    fn handle(
        &self,
        state: &mut Seen,
        signal: &Signal,
        _env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        match signal.signal_type().as_str() {
            "setup" if !state.set_up => {
                state.set_up = true;
                let mut directives: Vec<Directive> = (0..ONE_SHOTS)
                    .map(|n| {
                        let name = format!("t{n}");
                        Directive::Schedule(Schedule {
                            schedule_id: ScheduleId::new(&name),
                            delay: Duration::from_millis(FIRST_MS + n * APART_MS),
                            signal: Signal::builder("shot", "ticker")
                                .with_data(name)
                                .build()
                                .unwrap(),
                        })
                    })
                    .collect();
                directives.push(Directive::Cron(Cron {
                    schedule_id: ScheduleId::new("every-second"),
                    expr: CronExpr::parse("* * * * * *").unwrap(),
                    zone: "UTC".into(),
                    misfire: Misfire::CatchUp(120),
                    signal: Signal::builder("tick", "ticker").build().unwrap(),
                }));
                Ok(directives)
            }
            "policies" => Ok(POLICIES
                .iter()
                .map(|(id, misfire)| {
                    Directive::Cron(Cron {
                        schedule_id: ScheduleId::new(*id),
                        expr: CronExpr::parse("* * * * * *").unwrap(),
                        zone: "UTC".into(),
                        misfire: *misfire,
                        signal: Signal::builder("tick", "ticker")
                            .with_id(*id)
                            .build()
                            .unwrap(),
                    })
                })
                .collect()),
            "shot" => {
                let name = signal
                    .data_as::<String>()
                    .map_err(|e| StrategyError::InvalidData {
                        signal_type: "shot".into(),
                        message: e.to_string(),
                    })?;
                state.shots.push(name);
                Ok(Vec::new())
            }
            "tick" => {
                state.ticks.push(signal.id().as_str().to_owned());
                Ok(Vec::new())
            }
            _ => Ok(Vec::new()),
        }
    }
}

/// The ticker's state as last committed, if it was.
async fn seen(store: &dyn ThreadStore) -> Option<Seen> {
    #[derive(Deserialize)]
    struct Snapshot {
        state: Seen,
    }
    let text = store.load_state(THREAD).await.ok()??;
    Some(serde_json::from_str::<Snapshot>(&text).unwrap().state)
}

/// The milliseconds since the Unix epoch, now.
fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    u64::try_from(since.unwrap().as_millis()).unwrap()
}

/// The ms of a cron occurrence's signal id `<id>@<ms>`.
fn occurrence_ms(id: &str) -> u64 {
    id.rsplit_once('@').unwrap().1.parse().unwrap()
}

/// The children. Every one spawns the ticker and prints `ready`; `setup` first sends the ticker
/// its `setup` and waits until every timer is in the store, then prints `ready <first cron ms>`;
/// `last` then prints `done` once everything fired.
async fn run_child() {
    let spec = std::env::var(CHILD_VAR)
        .unwrap_or_else(|_| panic!("a child of the timers' crash loop: {CHILD_VAR} is unset"));
    let (url, mode) = spec.rsplit_once('|').unwrap();
    let store = open_store(url).await.unwrap();
    let runtime = Runtime::builder()
        .llm(Arc::new(ScriptedModel::default()))
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let ticker = runtime
        .spawn(AgentSpec::new(AGENT, Ticker).with_idle_timeout(Some(Duration::from_millis(300))))
        .await
        .unwrap();
    let mut ready = "ready".to_owned();
    if mode == "policies" {
        ticker
            .send(Signal::builder("policies", "test").build().unwrap())
            .await
            .unwrap();
        // Ready once each cron fired.
        loop {
            let fired = seen(&*store).await.unwrap_or_default();
            if POLICIES
                .iter()
                .all(|(id, _)| fired.ticks.iter().any(|t| t.starts_with(&format!("{id}@"))))
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    if mode == "setup" {
        ticker
            .send(Signal::builder("setup", "test").build().unwrap())
            .await
            .unwrap();
        let agents = motet_runtime::store::TimerOwners {
            agents: vec![AGENT.to_owned()],
            kinds: Vec::new(),
        };
        loop {
            let timers = store.due_timers(0..u64::MAX, &agents, 1_000).await.unwrap();
            // Read after the rows: a timer settled meanwhile is in the state.
            let fired = seen(&*store).await.unwrap_or_default();
            let mut set: HashSet<String> = timers.iter().map(|t| t.id.clone()).collect();
            set.extend(fired.shots.iter().cloned());
            if set.len() as u64 == ONE_SHOTS + 1 {
                let cron = timers.iter().find(|t| t.cron.is_some()).unwrap().due_ms;
                let first = fired
                    .ticks
                    .iter()
                    .map(|t| occurrence_ms(t))
                    .min()
                    .unwrap_or(cron);
                ready = format!("ready {first}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    say(&ready);
    if mode == "last" {
        // Runs until every one-shot fired and the cron went on two seconds past this start.
        let started = now_ms();
        loop {
            let fired = seen(&*store).await.unwrap_or_default();
            let ticked_on = fired.ticks.iter().map(|t| occurrence_ms(t)).max();
            if fired.shots.len() as u64 >= ONE_SHOTS && ticked_on > Some(started + 2_000) {
                say("done");
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // Runs until killed.
    tokio::time::sleep(Duration::from_secs(120)).await;
}

/// A line for the parent.
fn say(line: &str) {
    println!("{line}");
    std::io::Write::flush(&mut std::io::stdout()).unwrap();
}

/// This test binary run as a child (its ignored entry `child_run`).
fn child(url: &str, mode: &str) -> (std::process::Child, String, Lines) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_run",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_VAR, format!("{url}|{mode}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines
        // libtest may put the test's name before its first line.
        .find_map(|l| Some(l.ok()?.split_once("ready")?.1.trim().to_owned()))
        .unwrap_or_else(|| panic!("a child ({mode}) ended before it was ready"));
    (child, line, lines)
}

/// What a child prints.
type Lines = std::io::Lines<std::io::BufReader<std::process::ChildStdout>>;

/// Kills the ticker's process [`KILLS`] times at random moments while its timers fire, lets a
/// last one run until every one-shot fired and the cron went on for two seconds more, and
/// checks from the store that every firing happened once.
async fn kill_and_restart(url: &str) {
    let mut rng = fastrand::Rng::with_seed(0x7133);
    let (mut running, ready, _) = tokio::task::block_in_place(|| child(url, "setup"));
    let first: u64 = ready.parse().unwrap();
    for kill in 1..=KILLS {
        tokio::time::sleep(Duration::from_millis(rng.u64(50..500))).await;
        running.kill().unwrap(); // SIGKILL
        running.wait().unwrap();
        let mode = if kill == KILLS { "last" } else { "run" };
        running = tokio::task::block_in_place(|| {
            let (mut running, _, mut lines) = child(url, mode);
            if mode == "last" {
                let done = lines.any(|l| l.is_ok_and(|l| l.ends_with("done")));
                running.kill().unwrap();
                running.wait().unwrap();
                assert!(done, "the last child ended before everything fired");
            }
            running
        });
    }
    let store = open_store(url).await.unwrap();
    let fired = seen(&*store).await.unwrap();

    let mut shots: HashMap<&str, usize> = HashMap::new();
    for name in &fired.shots {
        *shots.entry(name).or_default() += 1;
    }
    let doubled: Vec<_> = shots.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "one-shots fired twice: {doubled:?}");
    let lost: Vec<_> = (0..ONE_SHOTS)
        .map(|n| format!("t{n}"))
        .filter(|name| !shots.contains_key(name.as_str()))
        .collect();
    assert!(lost.is_empty(), "one-shots never fired: {lost:?}");

    let mut ticks: BTreeMap<u64, usize> = BTreeMap::new();
    for id in &fired.ticks {
        *ticks.entry(occurrence_ms(id)).or_default() += 1;
    }
    let doubled: Vec<_> = ticks.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        doubled.is_empty(),
        "cron occurrences fired twice: {doubled:?}"
    );
    let last = *ticks.keys().next_back().unwrap();
    let lost: Vec<u64> = (first..=last)
        .step_by(1_000)
        .filter(|ms| !ticks.contains_key(ms))
        .collect();
    assert!(lost.is_empty(), "cron occurrences never fired: {lost:?}");
    assert_eq!(
        ticks.keys().next(),
        Some(&first),
        "an occurrence before the first"
    );
    println!(
        "{} one-shots and {} cron occurrences fired once each across {KILLS} kills",
        shots.len(),
        ticks.len()
    );
}

/// The children of the loop, not a test of its own: ignored, so only the parent runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a child process of the timers' crash loop, run by it"]
async fn child_run() {
    run_child().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_and_cron_fire_once_each_across_sigkills_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("timers.db").display());
    kill_and_restart(&url).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_and_cron_fire_once_each_across_sigkills_on_postgres() {
    let Some(db) = pg::TestDb::new("timers_crash").await else {
        return;
    };
    kill_and_restart(&db.url).await;
    db.drop_now().await;
}

/// Each misfire policy across a SIGKILL and 4.3 s down (see the file's head).
async fn misfires_across_a_kill(url: &str) {
    let (mut running, _, _) = tokio::task::block_in_place(|| child(url, "policies"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    running.kill().unwrap(); // SIGKILL
    running.wait().unwrap();
    let store = open_store(url).await.unwrap();
    let before = seen(&*store).await.unwrap();
    let occurrences = |fired: &Seen, id: &str| -> Vec<u64> {
        let prefix = format!("{id}@");
        let mut ms: Vec<u64> = fired
            .ticks
            .iter()
            .filter(|t| t.starts_with(&prefix))
            .map(|t| occurrence_ms(t))
            .collect();
        ms.sort_unstable();
        ms
    };
    tokio::time::sleep(Duration::from_millis(4_300)).await;
    let restarted = now_ms();
    let (mut running, _, _) = tokio::task::block_in_place(|| child(url, "run"));
    // A process slow to start fires later: a missed occurrence it keeps may then be due after
    // `restarted`, outside the window counted below.
    let slow = now_ms() - restarted > 800;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    running.kill().unwrap();
    running.wait().unwrap();
    let after = seen(&*store).await.unwrap();
    for (id, misfire) in POLICIES {
        let last_before = *occurrences(&before, id).last().unwrap();
        let all = occurrences(&after, id);
        let mut distinct = all.clone();
        distinct.dedup();
        assert_eq!(distinct, all, "{misfire:?}: an occurrence fired twice");
        // Due while nothing ran (or in flight at the kill): at least four, three of them over
        // the grace second old when the next process fired.
        let down: Vec<u64> = all
            .iter()
            .copied()
            .filter(|ms| (last_before + 1..restarted).contains(ms))
            .collect();
        let kept = match misfire {
            Misfire::Skip => 0,
            Misfire::FireOnce => 1,
            Misfire::CatchUp(n) => n as usize,
        };
        // An occurrence due less than a second before the next process fired is on time.
        assert!(
            (kept.saturating_sub(usize::from(slow))..=kept + 1).contains(&down.len()),
            "{misfire:?}: {} of the occurrences due while down fired: {down:?}",
            down.len()
        );
        // After the restart, every occurrence on time, none lost.
        let since: Vec<u64> = all.iter().copied().filter(|ms| *ms >= restarted).collect();
        assert!(since.len() >= 2, "{misfire:?}: {since:?} after the restart");
        assert!(
            since.windows(2).all(|w| w[1] - w[0] == 1_000),
            "{misfire:?}: an occurrence lost after the restart: {since:?}"
        );
        println!(
            "{misfire:?}: {} of the occurrences due while down fired",
            down.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_misfire_policy_holds_across_a_sigkill_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("misfires.db").display());
    misfires_across_a_kill(&url).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_misfire_policy_holds_across_a_sigkill_on_postgres() {
    let Some(db) = pg::TestDb::new("timers_misfires").await else {
        return;
    };
    misfires_across_a_kill(&db.url).await;
    db.drop_now().await;
}
