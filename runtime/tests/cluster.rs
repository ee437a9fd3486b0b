//! The cluster's members and leases on a real PostgreSQL server (`MOTET_DATABASE_URL`): a
//! lease held by one live member at a time, changing hands only once its holder's membership
//! expired and always at a higher epoch; a commit under a lease its node lost refused with
//! nothing written; an expired membership never coming back; and two runtimes as two nodes
//! over one store — a virtual agent active on one of them, moving when that node leaves, and a
//! node whose membership expired committing nothing and joining again as a new generation.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::{Entry, FixedEnv, NewEntry, Thread};
use motet_runtime::agent::{AskError, AskOptions, IntoSpec, Runtime};
use motet_runtime::cluster::ClusterConfig;
use motet_runtime::cluster::link::LocalLink;
use motet_runtime::cluster::plan::{self, Member};
use motet_runtime::store::{
    ClusterStore, Heartbeat, LeaseFence, LeaseGrant, PostgresStore, StepCommit, StoreError,
    ThreadHeader, ThreadStore,
};

use common::*;

const TTL: Duration = Duration::from_secs(1);

async fn store(db: &pg::TestDb) -> Arc<PostgresStore> {
    Arc::new(PostgresStore::open(&db.url).await.unwrap())
}

/// Ends the membership of `generation` now, as the store sees it: what a node paused past its
/// time to live looks like to everyone else.
async fn expire(db: &pg::TestDb, generation: u64) {
    pg::connect(&db.url)
        .await
        .execute(
            "UPDATE motet_members SET expires_at = clock_timestamp() - interval '1 second' \
             WHERE generation = $1",
            &[&i64::try_from(generation).unwrap()],
        )
        .await
        .unwrap();
}

fn held(grant: &LeaseGrant) -> u64 {
    match grant {
        LeaseGrant::Held { epoch, .. } => *epoch,
        other => panic!("expected the lease, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_is_held_by_one_live_member_and_changes_hands_only_after_it_expires() {
    let Some(db) = pg::TestDb::new("cluster_lease").await else {
        return;
    };
    let store = store(&db).await;
    let a = store.join("a", "addr-a", TTL).await.unwrap();
    let b = store.join("b", "addr-b", TTL).await.unwrap();
    assert_ne!(a, b);

    let first = store.acquire("worker:1", a).await.unwrap();
    assert_eq!(
        first,
        LeaseGrant::Held {
            epoch: 1,
            taken: true
        }
    );
    assert_eq!(
        store.acquire("worker:1", a).await.unwrap(),
        LeaseGrant::Held {
            epoch: 1,
            taken: false
        },
        "asked again, the holder keeps it at its epoch"
    );
    match store.acquire("worker:1", b).await.unwrap() {
        LeaseGrant::Elsewhere(holder) => {
            assert_eq!((holder.generation, holder.node.as_str()), (a, "a"));
            assert_eq!(holder.address, "addr-a");
        }
        other => panic!("b must find it held by a, got {other:?}"),
    }
    assert_eq!(
        store.holder("worker:1").await.unwrap().unwrap().generation,
        a
    );

    // a stops beating; once its membership expires, b takes the agent at a higher epoch.
    expire(&db, a).await;
    assert_eq!(
        store.orphans(10).await.unwrap(),
        vec!["worker:1".to_owned()]
    );
    assert_eq!(held(&store.acquire("worker:1", b).await.unwrap()), 2);
    assert!(store.orphans(10).await.unwrap().is_empty());
    assert_eq!(store.heartbeat(a, TTL).await.unwrap(), Heartbeat::Gone);
    assert_eq!(
        store.heartbeat(a, TTL).await.unwrap(),
        Heartbeat::Gone,
        "an expired membership never comes back"
    );
    assert_eq!(
        store.acquire("worker:2", a).await.unwrap(),
        LeaseGrant::NotMember
    );
    let live: Vec<u64> = store
        .members()
        .await
        .unwrap()
        .iter()
        .map(|m| m.generation)
        .collect();
    assert_eq!(live, vec![b]);

    // Given back, the lease keeps its epoch: the next holder's is higher still.
    assert!(store.release("worker:1", b, 2).await.unwrap());
    assert!(
        !store.release("worker:1", b, 2).await.unwrap(),
        "released once"
    );
    let c = store.join("c", "addr-c", TTL).await.unwrap();
    assert_eq!(held(&store.acquire("worker:1", c).await.unwrap()), 3);
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_member_keeps_its_agents_but_takes_no_new_one() {
    let Some(db) = pg::TestDb::new("cluster_drain").await else {
        return;
    };
    let store = store(&db).await;
    let a = store.join("a", "a", TTL).await.unwrap();
    assert_eq!(held(&store.acquire("worker:1", a).await.unwrap()), 1);
    assert_eq!(store.drain(a).await.unwrap(), Heartbeat::Alive);
    assert!(store.members().await.unwrap()[0].draining);
    assert_eq!(
        store.acquire("worker:1", a).await.unwrap(),
        LeaseGrant::Held {
            epoch: 1,
            taken: false
        }
    );
    assert_eq!(
        store.acquire("worker:2", a).await.unwrap(),
        LeaseGrant::NotMember
    );
    assert_eq!(store.heartbeat(a, TTL).await.unwrap(), Heartbeat::Alive);
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_started_again_declares_its_earlier_generation_dead() {
    let Some(db) = pg::TestDb::new("cluster_restart").await else {
        return;
    };
    let store = store(&db).await;
    let first = store.join("a", "a", Duration::from_secs(60)).await.unwrap();
    assert_eq!(held(&store.acquire("worker:1", first).await.unwrap()), 1);
    let second = store.join("a", "a", Duration::from_secs(60)).await.unwrap();
    assert!(second > first);
    assert_eq!(store.heartbeat(first, TTL).await.unwrap(), Heartbeat::Gone);
    // The earlier start's lease is an orphan now, taken over at once, not after its TTL.
    assert_eq!(held(&store.acquire("worker:1", second).await.unwrap()), 2);
    // Leaving makes every lease an orphan at once, for the others to adopt.
    store.leave(second).await.unwrap();
    assert!(store.members().await.unwrap().is_empty());
    assert!(store.holder("worker:1").await.unwrap().is_none());
    assert_eq!(
        store.orphans(10).await.unwrap(),
        vec!["worker:1".to_owned()]
    );
    db.drop_now().await;
}

fn note(thread: &mut Thread, text: &str) -> Arc<Entry> {
    thread.append(&FixedEnv::new(0), NewEntry::user(text));
    thread.to_list().last().cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_under_a_lost_lease_is_refused_and_writes_nothing() {
    let Some(db) = pg::TestDb::new("cluster_fence").await else {
        return;
    };
    let store = store(&db).await;
    let a = store.join("a", "a", TTL).await.unwrap();
    let b = store.join("b", "b", TTL).await.unwrap();
    let epoch = held(&store.acquire("worker:1", a).await.unwrap());
    let mut thread = Thread::new("worker:1/main", 0);
    let first = note(&mut thread, "one");
    let header = ThreadHeader::new("worker:1/main", 0);
    let meta = Default::default();
    let lease = LeaseFence {
        agent: "worker:1",
        generation: a,
        epoch,
    };
    let create = StepCommit {
        thread_id: "worker:1/main",
        create: Some((&header, &meta)),
        entries: std::slice::from_ref(&first),
        expected_rev: 0,
        state: Some("{}"),
        epoch: 0,
        timers: &[],
        lease: Some(lease),
    };
    assert_eq!(store.commit_step(&create).await.unwrap(), 1);

    // b's commit with no lease of its own is refused, even at the right rev.
    let second = note(&mut thread, "two");
    let by_b = StepCommit {
        create: None,
        entries: std::slice::from_ref(&second),
        expected_rev: 1,
        lease: Some(LeaseFence {
            generation: b,
            ..lease
        }),
        ..create
    };
    let refused = store.commit_step(&by_b).await.unwrap_err();
    assert!(matches!(refused, StoreError::LeaseLost { .. }), "{refused}");

    // a's membership expires: its own commit is refused too, before anyone took the agent.
    expire(&db, a).await;
    let by_a = StepCommit {
        lease: Some(lease),
        ..by_b
    };
    let refused = store.commit_step(&by_a).await.unwrap_err();
    assert!(matches!(refused, StoreError::LeaseLost { .. }), "{refused}");
    assert_eq!(
        store
            .load("worker:1/main")
            .await
            .unwrap()
            .unwrap()
            .entry_count(),
        1
    );

    // b takes the agent over, and commits under its new epoch.
    let taken = held(&store.acquire("worker:1", b).await.unwrap());
    let by_new_owner = StepCommit {
        lease: Some(LeaseFence {
            agent: "worker:1",
            generation: b,
            epoch: taken,
        }),
        ..by_a
    };
    assert_eq!(store.commit_step(&by_new_owner).await.unwrap(), 2);

    // A store that keeps no leases refuses a commit that carries one.
    let memory = motet_runtime::store::MemoryStore::new();
    let refused = memory.commit_step(&create).await.unwrap_err();
    assert!(matches!(refused, StoreError::NoLeases { .. }), "{refused}");
    db.drop_now().await;
}

/// A node: a runtime with the `echo` virtual kind on `store`, joined as `node`.
async fn node(store: &Arc<PostgresStore>, node: &str) -> Runtime {
    linked(store, node, None).await
}

/// A node as [`node`], reaching the others over `link` when one is given.
async fn linked(store: &Arc<PostgresStore>, node: &str, link: Option<&LocalLink>) -> Runtime {
    on_model(store, node, link, EchoModel::default()).await
}

/// A node as [`linked`], its agents calling `model`.
async fn on_model(
    store: &Arc<PostgresStore>,
    node: &str,
    link: Option<&LocalLink>,
    model: impl motet_providers::LlmClient + 'static,
) -> Runtime {
    let mut builder = Runtime::builder();
    if let Some(link) = link {
        builder = builder.link(Arc::new(link.clone()));
    }
    let runtime = builder
        .llm(model)
        .store(Arc::clone(store) as Arc<dyn ThreadStore>)
        .virtual_kind("echo", |key| {
            calc_agent(key).into_spec().map_err(|e| e.to_string())
        })
        .cluster(ClusterConfig::new(node).with_lease_ttl(TTL))
        .build()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while runtime.generation().is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{node} never joined"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    runtime
}

/// Waits until every one of `runtimes` sees `n` live members.
async fn members_seen(runtimes: &[&Runtime], n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while runtimes.iter().any(|r| r.members().len() != n) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the nodes never saw each other"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The node `agent` is placed on, by the members `runtime` sees.
fn place(runtime: &Runtime, agent: &str) -> String {
    let members: Vec<Member> = runtime
        .members()
        .into_iter()
        .map(|m| Member {
            node: m.node,
            generation: m.generation,
        })
        .collect();
    plan::place(agent, &members).unwrap().node.clone()
}

/// The first `echo:<n>` placed on `node`.
fn placed_on(runtime: &Runtime, node: &str) -> String {
    (0..1000)
        .map(|n| format!("echo:{n}"))
        .find(|agent| place(runtime, agent) == node)
        .unwrap()
}

async fn ask(runtime: &Runtime, agent: &str, text: &str) -> Result<String, AskError> {
    let handle = runtime.agent(agent).unwrap();
    handle
        .ask_with(
            text,
            AskOptions {
                timeout: Duration::from_secs(20),
                ..AskOptions::default()
            },
        )
        .await
        .map(|answer| answer.text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_virtual_agent_is_active_on_one_node_and_moves_when_its_node_leaves() {
    let Some(db) = pg::TestDb::new("cluster_nodes").await else {
        return;
    };
    let store = store(&db).await;
    let a = node(&store, "a").await;
    let b = node(&store, "b").await;
    assert_eq!(ask(&a, "echo:1", "one").await.unwrap(), "one");
    match ask(&b, "echo:1", "two").await {
        Err(AskError::Elsewhere { node, .. }) => assert_eq!(node, "a"),
        other => panic!("b must send it to a, got {other:?}"),
    }
    // a leaves: its leases go back at once, and b carries on from what a committed.
    a.shutdown().await;
    assert_eq!(ask(&b, "echo:1", "two").await.unwrap(), "one|two");
    let holder = store.holder("echo:1").await.unwrap().unwrap();
    assert_eq!(holder.node, "b");
    b.shutdown().await;
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_membership_expired_commits_nothing_and_joins_again() {
    let Some(db) = pg::TestDb::new("cluster_expired").await else {
        return;
    };
    let store = store(&db).await;
    let a = node(&store, "a").await;
    let first = a.generation().unwrap();
    assert_eq!(ask(&a, "echo:1", "one").await.unwrap(), "one");
    // As the store sees it, a was paused past its time to live.
    expire(&db, first).await;
    let refused = ask(&a, "echo:1", "two").await.unwrap_err();
    assert!(
        refused.to_string().contains("no longer holds its lease"),
        "{refused}"
    );
    // a notices at its next heartbeat and joins again, as a new generation.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while a.generation().is_none_or(|g| g == first) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "a never joined again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Nothing of the refused step was written; the agent comes back under a new lease.
    assert_eq!(ask(&a, "echo:1", "three").await.unwrap(), "one|three");
    let holder = store.holder("echo:1").await.unwrap().unwrap();
    assert_eq!(holder.generation, a.generation().unwrap());
    a.shutdown().await;
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_made_on_any_node_reaches_the_agent_where_it_is_placed() {
    let Some(db) = pg::TestDb::new("cluster_remote").await else {
        return;
    };
    let store = store(&db).await;
    let link = LocalLink::new();
    let a = linked(&store, "a", Some(&link)).await;
    let b = linked(&store, "b", Some(&link)).await;
    members_seen(&[&a, &b], 2).await;
    let on_a = placed_on(&a, "a");
    let on_b = placed_on(&a, "b");
    assert_eq!(place(&b, &on_a), "a", "both nodes place alike");

    // Asked on b first, the agent placed on a is activated on a: one thread, one history.
    assert_eq!(ask(&b, &on_a, "one").await.unwrap(), "one");
    assert_eq!(ask(&a, &on_a, "two").await.unwrap(), "one|two");
    assert_eq!(ask(&b, &on_a, "three").await.unwrap(), "one|two|three");
    assert_eq!(store.holder(&on_a).await.unwrap().unwrap().node, "a");
    assert!(!b.agent(&on_a).unwrap().is_active(), "never active on b");
    assert_eq!(ask(&a, &on_b, "x").await.unwrap(), "x");
    assert_eq!(store.holder(&on_b).await.unwrap().unwrap().node, "b");
    assert!(!a.agent(&on_b).unwrap().is_active(), "never active on a");

    // The deltas of a streamed ask come back to the asker's node as they are written.
    let mut ticket = b
        .agent(&on_a)
        .unwrap()
        .submit(
            "four",
            AskOptions {
                stream: true,
                ..AskOptions::default()
            },
        )
        .await
        .unwrap();
    let mut written = String::new();
    while let Some(delta) = ticket.next_delta().await {
        written.push_str(&delta.delta);
    }
    assert_eq!(ticket.wait().await.unwrap().text, "one|two|three|four");
    assert_eq!(written, "one|two|three|four", "every delta reached b");
    a.shutdown().await;
    b.shutdown().await;
    db.drop_now().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_leaves_mid_request_has_its_agent_adopted_and_the_request_resumed() {
    let Some(db) = pg::TestDb::new("cluster_adopt").await else {
        return;
    };
    let store = store(&db).await;
    let link = LocalLink::new();
    let hanging = HangingModel::default();
    let a = on_model(&store, "a", Some(&link), hanging.clone()).await;
    let b = linked(&store, "b", Some(&link)).await;
    members_seen(&[&a, &b], 2).await;
    let agent = placed_on(&a, "a");
    let started = hanging.started.notified();
    let ticket = b
        .agent(&agent)
        .unwrap()
        .submit("question", AskOptions::default())
        .await
        .unwrap();
    started.await;
    assert_eq!(store.holder(&agent).await.unwrap().unwrap().node, "a");
    // a goes away with the request in flight; b adopts the agent and resumes it.
    a.shutdown().await;
    let id = format!("{agent}/default");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let thread = store.load(&id).await.unwrap();
        let answered = thread.is_some_and(|t| {
            serde_json::to_string(t.to_list())
                .unwrap()
                .contains("\"text\":\"question\"")
        });
        if answered {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the request was never resumed on b"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(store.holder(&agent).await.unwrap().unwrap().node, "b");
    drop(ticket);
    b.shutdown().await;
    db.drop_now().await;
}
