//! What the serve tests share: a runtime on a scripted model that writes its text a few
//! characters at a time, a janitor agent whose `rm` waits for a person's approval, the server
//! on a free loopback port, and an SSE reader.

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use motet_agents::{ContextPolicy, ReAct, ReActConfig};
use motet_directives::{
    AssistantBlock, AssistantMessage, LlmRequest, LlmResponse, ToolArgs, Usage,
};
use motet_providers::{LlmClient, LlmEvent, LlmEvents, ProviderError};
use motet_runtime::agent::{AgentSpec, Runtime};
use motet_runtime::tool::{Tool, ToolError, ToolSet, tool_fn};
use motet_serve::{RunLimits, Served, Tokens};

/// A model that answers with the next turn of its script, its text written three characters
/// at a time, `delay` apart.
#[derive(Clone, Default)]
pub(crate) struct Writer {
    script: Arc<Mutex<VecDeque<Vec<AssistantBlock>>>>,
    delay: Arc<Mutex<Duration>>,
    /// Characters per fragment (0: three).
    chunk: Arc<Mutex<usize>>,
}

impl Writer {
    /// Writes `chars` characters per fragment.
    pub(crate) fn chunk_by(&self, chars: usize) {
        *self.chunk.lock().unwrap() = chars;
    }

    /// Writes each fragment `delay` after the one before.
    pub(crate) fn delay_by(&self, delay: Duration) {
        *self.delay.lock().unwrap() = delay;
    }

    pub(crate) fn push(&self, blocks: Vec<AssistantBlock>) {
        self.script.lock().unwrap().push_back(blocks);
    }
}

#[async_trait::async_trait]
impl LlmClient for Writer {
    async fn stream(&self, _req: LlmRequest) -> Result<LlmEvents, ProviderError> {
        let Some(blocks) = self.script.lock().unwrap().pop_front() else {
            return Err(ProviderError::InvalidRequest {
                status: 0,
                message: "the script has no answer left".to_owned(),
            });
        };
        let stop_reason = motet_runtime::testing::stop_for(&blocks);
        let response = LlmResponse::new(
            AssistantMessage {
                blocks,
                stop_reason,
            },
            Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            },
        );
        let chunk = match *self.chunk.lock().unwrap() {
            0 => 3,
            n => n,
        };
        let mut events = Vec::new();
        for event in motet_runtime::testing::events_of(response) {
            match event {
                LlmEvent::TextDelta { delta, .. } => {
                    let chars: Vec<char> = delta.chars().collect();
                    for chunk in chars.chunks(chunk) {
                        events.push(LlmEvent::TextDelta {
                            delta: chunk.iter().collect(),
                            meta: None,
                        });
                    }
                }
                other => events.push(other),
            }
        }
        let delay = *self.delay.lock().unwrap();
        Ok(Box::pin(futures::stream::iter(events).then(
            move |event| async move {
                if matches!(event, LlmEvent::TextDelta { .. }) && !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Ok(event)
            },
        )))
    }
}

pub(crate) fn text(text: &str) -> AssistantBlock {
    AssistantBlock::text(text)
}

pub(crate) fn rm_call(id: &str, path: &str) -> AssistantBlock {
    AssistantBlock::tool_use(
        id,
        "rm",
        ToolArgs::from_text(format!(r#"{{"path":"{path}"}}"#)),
    )
}

pub(crate) fn which_call(id: &str) -> AssistantBlock {
    AssistantBlock::tool_use(id, "which", ToolArgs::from_text("{}"))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RmArgs {
    path: String,
}

fn rm() -> impl Tool {
    tool_fn("rm", "Removes a path.", |args: RmArgs| async move {
        Ok::<_, ToolError>(format!("removed {}", args.path))
    })
}

fn which() -> impl Tool {
    tool_fn("which", "Asks which path.", |_: serde_json::Value| async {
        Err::<String, _>(ToolError::question("which path may I remove?"))
    })
}

/// A running server.
pub(crate) struct Server {
    pub(crate) url: String,
    pub(crate) runtime: Runtime,
    pub(crate) model: Writer,
    pub(crate) http: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub(crate) done: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    pub(crate) fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// Stops the server and waits for it to finish.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            tokio::time::timeout(Duration::from_secs(10), done)
                .await
                .expect("the server stops within 10 s")
                .unwrap()
                .unwrap();
        }
    }
}

/// Agents `janitor` and `other` (each with `rm` gated by an approval, `which` and nothing
/// else) on a [`Writer`], served on a free port with `tokens`.
pub(crate) async fn serve(tokens: Tokens, limits: RunLimits) -> Server {
    serve_with(tokens, limits, |served| served).await
}

/// As [`serve`], the server shaped by `shape`.
pub(crate) async fn serve_with(
    tokens: Tokens,
    limits: RunLimits,
    shape: impl FnOnce(Served) -> Served,
) -> Server {
    let model = Writer::default();
    let runtime = Runtime::builder().llm(model.clone()).build().unwrap();
    let mut agents = Vec::new();
    for name in ["janitor", "other"] {
        let tools = Arc::new(
            ToolSet::builder()
                .tool(rm())
                .tool(which())
                .require_approval("rm", motet_directives::Approval::required())
                .build()
                .unwrap(),
        );
        let react = ReAct::new(
            ReActConfig::new("openai:gpt-5.2".parse().unwrap())
                .with_system_prompt("You clean up.")
                .with_tools(tools.definitions())
                .with_context_policy(ContextPolicy::new().with_keep_last_turns(0)),
        );
        agents.push(
            runtime
                .spawn(AgentSpec::new(name, react).with_tools(tools))
                .await
                .unwrap(),
        );
    }
    let served = shape(Served::new(runtime.clone(), agents, tokens).with_run_limits(limits));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(served.serve(listener, async move {
        let _ = stopped.await;
    }));
    Server {
        url,
        runtime,
        model,
        http: reqwest::Client::new(),
        stop: Some(stop),
        done: Some(done),
    }
}

/// One SSE event as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) id: Option<String>,
    pub(crate) event: String,
    pub(crate) data: String,
}

impl SseEvent {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

/// An SSE stream read event by event.
pub(crate) struct Sse {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl Sse {
    /// Opens `url`'s stream, resuming after `last` when given; panics unless it is a 200.
    pub(crate) async fn open(
        http: &reqwest::Client,
        url: &str,
        token: Option<&str>,
        last: Option<&str>,
    ) -> Self {
        let response = Self::request(http, url, token, last).await;
        assert_eq!(response.status(), 200, "{}", url);
        Self::of(response)
    }

    /// The response to a stream request.
    pub(crate) async fn request(
        http: &reqwest::Client,
        url: &str,
        token: Option<&str>,
        last: Option<&str>,
    ) -> reqwest::Response {
        let mut request = http.get(url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(last) = last {
            request = request.header("Last-Event-ID", last);
        }
        request.send().await.unwrap()
    }

    pub(crate) fn of(response: reqwest::Response) -> Self {
        Self {
            body: response
                .bytes_stream()
                .map(|b| b.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    /// The next event (comments skipped), or `None` when the stream ends; panics after 10 s.
    pub(crate) async fn next(&mut self) -> Option<SseEvent> {
        tokio::time::timeout(Duration::from_secs(10), self.next_event())
            .await
            .expect("an SSE event within 10 s")
    }

    async fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = SseEvent {
                    id: None,
                    event: "message".to_owned(),
                    data: String::new(),
                };
                let mut any = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        event.id = Some(v.trim_start().to_owned());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event.event = v.trim_start().to_owned();
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data:") {
                        if !event.data.is_empty() {
                            event.data.push('\n');
                        }
                        event.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                        any = true;
                    }
                }
                if any {
                    return Some(event);
                }
                continue;
            }
            match self.body.next().await {
                Some(Ok(bytes)) => self.buffer.push_str(&String::from_utf8(bytes).unwrap()),
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// Every event up to the end of the stream; panics past 10,000 (a stream that repeats
    /// itself).
    pub(crate) async fn rest(&mut self) -> Vec<SseEvent> {
        let mut all = Vec::new();
        while let Some(event) = self.next().await {
            all.push(event);
            assert!(
                all.len() <= 10_000,
                "a stream that never ends: {:?}",
                &all[..5]
            );
        }
        all
    }
}

/// The JSON of a response that must have `status`.
pub(crate) async fn json_of(response: reqwest::Response, status: u16) -> serde_json::Value {
    let got = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert_eq!(got, status, "{text}");
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

/// Waits until `agent`'s calls waiting for a person are `n`.
pub(crate) async fn waits_for(server: &Server, agent: &str, n: usize) -> serde_json::Value {
    for _ in 0..200 {
        let listed = json_of(
            server
                .http
                .get(server.at(&format!("/api/agents/{agent}/waiting")))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        if listed["waiting"].as_array().map(Vec::len) == Some(n) {
            return listed;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{agent} never had {n} waiting calls");
}
