//! Two nodes of a cluster in one test process, over a real nats-server (`MOTET_NATS_URL`, the
//! node link) and a real PostgreSQL server (`MOTET_DATABASE_URL`, members, leases, threads):
//! an ask made on either node reaches the node its agent is placed on, with its deltas, and a
//! node that leaves mid-request has its agent adopted and the request resumed by the other.
//! The three-process tests with SIGKILLs are the cluster scripts' (docs/cluster.md).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

mod common;
#[path = "../../runtime/tests/common/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::Duration;

use motet_agents::ContextPolicy;
use motet_directives::{AssistantBlock, AssistantMessage, LlmRequest, LlmResponse, Message, Usage};
use motet_jetstream::NatsLink;
use motet_providers::{LlmClient, LlmEvents, ProviderError};
use motet_runtime::agent::{AskOptions, IntoSpec, ReActAgent, Runtime};
use motet_runtime::cluster::ClusterConfig;
use motet_runtime::cluster::plan::{self, Member};
use motet_runtime::store::{ClusterStore, PostgresStore, ThreadStore};

use common::{nats_url, unique};

const TTL: Duration = Duration::from_secs(1);

/// Answers with the user messages it was shown, joined by `|`; never answers while `hang`.
#[derive(Clone, Default)]
struct Echo {
    hang: bool,
}

#[async_trait::async_trait]
impl LlmClient for Echo {
    async fn stream(&self, req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        if self.hang {
            futures::future::pending::<()>().await;
        }
        let seen: Vec<&str> = req
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User { content } => content.as_text(),
                _ => None,
            })
            .collect();
        let blocks = vec![AssistantBlock::text(seen.join("|"))];
        let stop_reason = motet_runtime::testing::stop_for(&blocks);
        let response = LlmResponse::new(
            AssistantMessage {
                blocks,
                stop_reason,
            },
            Usage::default(),
        );
        let events = motet_runtime::testing::events_of(response);
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

/// A node named `node` over `store`, reached over NATS under `prefix`.
async fn node(
    store: &Arc<PostgresStore>,
    url: &str,
    prefix: &str,
    node: &str,
    model: Echo,
) -> Runtime {
    let link = NatsLink::connect(url, Duration::from_secs(5))
        .await
        .unwrap()
        .with_prefix(prefix.to_owned());
    Runtime::builder()
        .llm(model)
        .store(Arc::clone(store) as Arc<dyn ThreadStore>)
        .virtual_kind("echo", |key| {
            ReActAgent::new(key, "openai:gpt-5.2")
                // The whole history in every call, so each answer shows what the thread holds.
                .configure(|c| c.with_context_policy(ContextPolicy::new().with_keep_last_turns(0)))
                .into_spec()
                .map_err(|e| e.to_string())
        })
        .cluster(ClusterConfig::new(node).with_lease_ttl(TTL))
        .link(Arc::new(link))
        .build()
        .unwrap()
}

/// Waits until each of `runtimes` sees `n` live members.
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

/// The first `echo:<n>` placed on `node`, as `runtime` sees the members.
fn placed_on(runtime: &Runtime, node: &str) -> String {
    let members: Vec<Member> = runtime
        .members()
        .into_iter()
        .map(|m| Member {
            node: m.node,
            generation: m.generation,
        })
        .collect();
    (0..1000)
        .map(|n| format!("echo:{n}"))
        .find(|agent| plan::place(agent, &members).is_some_and(|m| m.node == node))
        .unwrap()
}

async fn ask(runtime: &Runtime, agent: &str, text: &str) -> String {
    let options = AskOptions {
        timeout: Duration::from_secs(20),
        ..AskOptions::default()
    };
    let handle = runtime.agent(agent).unwrap();
    handle.ask_with(text, options).await.unwrap().text
}

/// Asks until the node answers: its link listens a moment after it joined.
async fn ready(runtime: &Runtime, agent: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let handle = runtime.agent(agent).unwrap();
        if handle.ask("ready?").await.is_ok() {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_crosses_nodes_over_nats_and_a_leaving_nodes_request_is_resumed() {
    let Some(url) = nats_url() else {
        return;
    };
    let Some(db) = pg::TestDb::new("jetstream_cluster").await else {
        return;
    };
    let store = Arc::new(PostgresStore::open(&db.url).await.unwrap());
    let prefix = format!("t.{}", unique("cluster"));
    let hanging = Echo { hang: true };
    let a = node(&store, &url, &prefix, "a", hanging).await;
    let b = node(&store, &url, &prefix, "b", Echo::default()).await;
    members_seen(&[&a, &b], 2).await;
    let on_a = placed_on(&a, "a");
    let on_b = placed_on(&a, "b");

    // b's agent answers asks made on a, over NATS; every answer holds the one history.
    ready(&a, &on_b).await;
    assert_eq!(ask(&a, &on_b, "one").await, "ready?|one");
    assert_eq!(ask(&b, &on_b, "two").await, "ready?|one|two");
    assert_eq!(store.holder(&on_b).await.unwrap().unwrap().node, "b");
    assert!(!a.agent(&on_b).unwrap().is_active(), "never active on a");

    // Deltas of an ask made on a come back over NATS as they are written.
    let mut ticket = a
        .agent(&on_b)
        .unwrap()
        .submit(
            "three",
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
    assert_eq!(ticket.wait().await.unwrap().text, "ready?|one|two|three");
    assert_eq!(written, "ready?|one|two|three");

    // Asked on b, a's agent starts a request that a's model never finishes; a leaves, and b
    // adopts the agent and carries the request to its answer.
    let _pending = b
        .agent(&on_a)
        .unwrap()
        .submit("question", AskOptions::default())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while store.holder(&on_a).await.unwrap().is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "a never took the agent"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(store.holder(&on_a).await.unwrap().unwrap().node, "a");
    a.shutdown().await;
    let id = format!("{on_a}/default");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let answered = store.load(&id).await.unwrap().is_some_and(|thread| {
            serde_json::to_string(thread.to_list())
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
    assert_eq!(store.holder(&on_a).await.unwrap().unwrap().node, "b");
    b.shutdown().await;
    db.drop_now().await;
}
