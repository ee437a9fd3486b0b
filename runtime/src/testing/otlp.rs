//! A real OTLP receiver for tests and benchmarks: the TraceService and MetricsService of the
//! official opentelemetry-proto definitions over gRPC, and `POST /v1/traces` / `/v1/metrics`
//! with protobuf bodies over HTTP, each on an ephemeral loopback port. It keeps what it
//! receives, decoded into [`ReceivedSpan`]s, and every request body as received.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message as _;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;

/// One span as the receiver got it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// The trace id, hex.
    pub trace_id: String,
    /// The span id, hex.
    pub span_id: String,
    /// The parent's span id, hex; empty for a root.
    pub parent_span_id: String,
    /// The span's name.
    pub name: String,
    /// The OTLP span kind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    pub kind: i32,
    /// Attributes, their values rendered as text (arrays as JSON-ish lists).
    pub attributes: BTreeMap<String, String>,
    /// The status code: 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    /// The status message.
    pub status_message: String,
    /// The names of the span's events.
    pub events: Vec<String>,
    /// The resource's `service.name`.
    pub service_name: String,
}

impl ReceivedSpan {
    /// An attribute's value as text.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

#[derive(Default)]
struct Received {
    spans: Vec<ReceivedSpan>,
    metrics: Vec<String>,
    bodies: Vec<Vec<u8>>,
}

type Shared = Arc<Mutex<Received>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Received> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The receiver; its servers stop when it is dropped.
pub struct OtlpReceiver {
    grpc: SocketAddr,
    http: SocketAddr,
    received: Shared,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for OtlpReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpReceiver")
            .field("grpc", &self.grpc)
            .field("http", &self.http)
            .finish()
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.tasks.iter().for_each(tokio::task::JoinHandle::abort);
    }
}

impl OtlpReceiver {
    /// Starts both servers on ephemeral loopback ports (inside the current Tokio runtime).
    ///
    /// # Errors
    /// When a port cannot be bound.
    pub async fn start() -> std::io::Result<Self> {
        let received: Shared = Arc::default();
        let grpc_listener = TcpListener::bind("127.0.0.1:0").await?;
        let grpc = grpc_listener.local_addr()?;
        let http_listener = TcpListener::bind("127.0.0.1:0").await?;
        let http = http_listener.local_addr()?;
        let service = Collector(Arc::clone(&received));
        let grpc_task = tokio::spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(grpc_listener);
            let served = tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(service.clone()))
                .add_service(MetricsServiceServer::new(service))
                .serve_with_incoming(incoming)
                .await;
            if let Err(error) = served {
                eprintln!("otlp receiver (grpc) stopped: {error}");
            }
        });
        let shared = Arc::clone(&received);
        let http_task = tokio::spawn(async move {
            while let Ok((stream, _)) = http_listener.accept().await {
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let _ = serve_http(stream, shared).await;
                });
            }
        });
        Ok(Self {
            grpc,
            http,
            received,
            tasks: vec![grpc_task, http_task],
        })
    }

    /// The gRPC endpoint, e.g. `http://127.0.0.1:40123`.
    pub fn grpc_endpoint(&self) -> String {
        format!("http://{}", self.grpc)
    }

    /// The HTTP endpoint (without `/v1/traces`).
    pub fn http_endpoint(&self) -> String {
        format!("http://{}", self.http)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        lock(&self.received).spans.clone()
    }

    /// The names of every metric received so far (repeats included).
    pub fn metric_names(&self) -> Vec<String> {
        lock(&self.received).metrics.clone()
    }

    /// Every request body received, as sent (protobuf).
    pub fn bodies(&self) -> Vec<Vec<u8>> {
        lock(&self.received).bodies.clone()
    }

    /// Forgets everything received.
    pub fn clear(&self) {
        *lock(&self.received) = Received::default();
    }

    /// Waits until `done` holds for the spans received, or `timeout` passes; returns the spans.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        done: impl Fn(&[ReceivedSpan]) -> bool,
    ) -> Vec<ReceivedSpan> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let spans = self.spans();
            if done(&spans) || tokio::time::Instant::now() >= deadline {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[derive(Clone)]
struct Collector(Shared);

impl Collector {
    fn take_traces(&self, request: ExportTraceServiceRequest) {
        let body = request.encode_to_vec();
        let mut received = lock(&self.0);
        received.bodies.push(body);
        for resource_spans in request.resource_spans {
            let service_name = resource_spans
                .resource
                .as_ref()
                .and_then(|r| {
                    r.attributes
                        .iter()
                        .find(|kv| kv.key == "service.name")
                        .map(|kv| render(kv.value.as_ref()))
                })
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    let (status_code, status_message) =
                        span.status.map(|s| (s.code, s.message)).unwrap_or_default();
                    received.spans.push(ReceivedSpan {
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        name: span.name,
                        kind: span.kind,
                        attributes: attributes(&span.attributes),
                        status_code,
                        status_message,
                        events: span.events.into_iter().map(|e| e.name).collect(),
                        service_name: service_name.clone(),
                    });
                }
            }
        }
    }

    fn take_metrics(&self, request: ExportMetricsServiceRequest) {
        let body = request.encode_to_vec();
        let mut received = lock(&self.0);
        received.bodies.push(body);
        for resource in request.resource_metrics {
            for scope in resource.scope_metrics {
                received
                    .metrics
                    .extend(scope.metrics.into_iter().map(|m| m.name));
            }
        }
    }
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.take_traces(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

#[tonic::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.take_metrics(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse {
            partial_success: None,
        }))
    }
}

/// One HTTP/1.1 connection: `POST /v1/traces` and `POST /v1/metrics` with protobuf bodies.
async fn serve_http(stream: tokio::net::TcpStream, shared: Shared) -> std::io::Result<()> {
    let collector = Collector(shared);
    let mut stream = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if stream.read_line(&mut request_line).await? == 0 {
            return Ok(());
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if stream.read_line(&mut header).await? == 0 {
                return Ok(());
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        stream.read_exact(&mut body).await?;
        let status = match path.as_str() {
            "/v1/traces" => match ExportTraceServiceRequest::decode(body.as_slice()) {
                Ok(request) => {
                    collector.take_traces(request);
                    "200 OK"
                }
                Err(_) => "400 Bad Request",
            },
            "/v1/metrics" => match ExportMetricsServiceRequest::decode(body.as_slice()) {
                Ok(request) => {
                    collector.take_metrics(request);
                    "200 OK"
                }
                Err(_) => "400 Bad Request",
            },
            _ => "404 Not Found",
        };
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"
        );
        stream.get_mut().write_all(response.as_bytes()).await?;
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), render(kv.value.as_ref())))
        .collect()
}

fn render(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::ArrayValue(a)) => {
            let items: Vec<String> = a.values.iter().map(|v| render(Some(v))).collect();
            format!("[{}]", items.join(","))
        }
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
