//! Telemetry: `tracing` spans for every signal handled and every directive executed, exported
//! as OpenTelemetry traces (and GenAI metrics) over OTLP — to Jaeger, a collector, anything
//! that speaks OTLP.
//!
//! One call sets it up from the standard environment variables and returns a guard that
//! flushes what is buffered when it drops:
//!
//! ```no_run
//! # async fn run() -> Result<(), motet_runtime::telemetry::TelemetryError> {
//! let _telemetry = motet_runtime::telemetry::init()?;
//! // ... build the runtime, spawn agents, ask ...
//! # Ok(()) }
//! ```
//!
//! Without `OTEL_EXPORTER_OTLP_ENDPOINT` (or [`Telemetry::with_endpoint`]) nothing is exported
//! and the cost is that of `tracing` alone. The span tree, attribute names and metrics are
//! described in docs/observability.md.
//!
//! Setup is here (`Telemetry`, the exporters, the guard that flushes them); trace-context
//! propagation and content capture are in `telemetry/context.rs`, the metric instruments in
//! `telemetry/instruments.rs` (rebound when `init` installs a meter provider).

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

mod context;
mod instruments;

pub use context::{capture_content, context_of, continue_trace, set_capture_content};
pub(crate) use instruments::instruments;
use instruments::rebind_instruments;

/// How spans and metrics travel to the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// OTLP over gRPC (port 4317 by convention). The default.
    #[default]
    Grpc,
    /// OTLP over HTTP with protobuf bodies (port 4318 by convention; `/v1/traces`).
    HttpProtobuf,
}

impl Protocol {
    /// Reads `OTEL_EXPORTER_OTLP_PROTOCOL`'s value: `grpc` or `http/protobuf`.
    ///
    /// # Errors
    /// [`TelemetryError::Config`] for any other value (`http/json` is not supported).
    pub fn parse(value: &str) -> Result<Self, TelemetryError> {
        match value.trim() {
            "grpc" => Ok(Self::Grpc),
            "http/protobuf" => Ok(Self::HttpProtobuf),
            other => Err(TelemetryError::Config {
                key: "OTEL_EXPORTER_OTLP_PROTOCOL".into(),
                message: format!("`{other}` is not supported; use `grpc` or `http/protobuf`"),
            }),
        }
    }
}

/// What went wrong setting telemetry up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A setting has a value that cannot be used.
    #[error("telemetry setting {key}: {message}")]
    Config {
        /// The setting (an environment variable's name or a builder method).
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// The OTLP exporter could not be built.
    #[error("could not build the OTLP exporter for {endpoint}: {message}")]
    Exporter {
        /// Where it would have sent.
        endpoint: String,
        /// Why it could not.
        message: String,
    },
    /// A global tracing subscriber was already installed by someone else.
    #[error("a global tracing subscriber is already installed: {0}")]
    AlreadyInstalled(String),
    /// Flushing or shutting the exporters down failed.
    #[error("telemetry shutdown: {0}")]
    Shutdown(String),
}

/// Telemetry settings; [`Telemetry::from_env`] reads the standard variables, the `with_*`
/// methods override them, [`Telemetry::install`] sets everything up.
#[derive(Debug, Clone)]
pub struct Telemetry {
    service_name: Option<String>,
    endpoint: Option<String>,
    protocol: Protocol,
    capture_content: bool,
    log_filter: String,
    log: bool,
    log_writer: Option<LogWriter>,
    batch: Batch,
}

/// Where log lines go instead of stderr: a function that opens a writer for each line.
#[derive(Clone)]
struct LogWriter(Arc<dyn Fn() -> Box<dyn std::io::Write + Send> + Send + Sync>);

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogWriter")
    }
}

/// The batch span processor's settings; `None` leaves the SDK's default.
#[derive(Debug, Clone, Copy, Default)]
struct Batch {
    max_queue_size: Option<usize>,
    scheduled_delay: Option<Duration>,
    max_export_batch_size: Option<usize>,
}

impl Batch {
    fn from_vars(present: impl Fn(&str) -> Option<String>) -> Result<Self, TelemetryError> {
        let number = |key: &str| -> Result<Option<usize>, TelemetryError> {
            present(key)
                .map(|value| {
                    value
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| TelemetryError::Config {
                            key: key.into(),
                            message: format!("`{value}` is not a whole number"),
                        })
                })
                .transpose()
        };
        Ok(Self {
            max_queue_size: number("OTEL_BSP_MAX_QUEUE_SIZE")?,
            scheduled_delay: number("OTEL_BSP_SCHEDULE_DELAY")?
                .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))),
            max_export_batch_size: number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")?,
        })
    }

    fn config(self) -> opentelemetry_sdk::trace::BatchConfig {
        let mut config = opentelemetry_sdk::trace::BatchConfigBuilder::default();
        if let Some(size) = self.max_queue_size {
            config = config.with_max_queue_size(size);
        }
        if let Some(delay) = self.scheduled_delay {
            config = config.with_scheduled_delay(delay);
        }
        if let Some(size) = self.max_export_batch_size {
            config = config.with_max_export_batch_size(size);
        }
        config.build()
    }
}

/// Reads the standard environment and installs telemetry: [`Telemetry::from_env`] then
/// [`Telemetry::install`].
///
/// # Errors
/// As [`Telemetry::from_env`] and [`Telemetry::install`].
pub fn init() -> Result<TelemetryGuard, TelemetryError> {
    Telemetry::from_env()?.install()
}

impl Telemetry {
    /// Settings from the environment: `OTEL_EXPORTER_OTLP_ENDPOINT` (no export when unset),
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` (`grpc` | `http/protobuf`), `OTEL_SERVICE_NAME`,
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (`true` records prompts and
    /// completions), `RUST_LOG` (the log lines printed to stderr; default `warn`), and the
    /// batch span processor's `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_SCHEDULE_DELAY` (ms) and
    /// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`. The sampler follows `OTEL_TRACES_SAMPLER` /
    /// `OTEL_TRACES_SAMPLER_ARG`.
    ///
    /// # Errors
    /// [`TelemetryError::Config`] naming the variable whose value cannot be used.
    pub fn from_env() -> Result<Self, TelemetryError> {
        Self::from_vars(|key| std::env::var(key).ok())
    }

    /// As [`from_env`](Self::from_env), reading variables through `var`.
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, TelemetryError> {
        let present = |key: &str| var(key).filter(|v| !v.trim().is_empty());
        let protocol = match present("OTEL_EXPORTER_OTLP_PROTOCOL") {
            Some(value) => Protocol::parse(&value)?,
            None => Protocol::default(),
        };
        let capture_content = match present("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") {
            None => false,
            Some(value) => match value.trim().to_ascii_lowercase().as_str() {
                "true" | "1" => true,
                "false" | "0" => false,
                other => {
                    return Err(TelemetryError::Config {
                        key: "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT".into(),
                        message: format!("`{other}` is not `true` or `false`"),
                    });
                }
            },
        };
        Ok(Self {
            service_name: present("OTEL_SERVICE_NAME"),
            endpoint: present("OTEL_EXPORTER_OTLP_ENDPOINT"),
            protocol,
            capture_content,
            log_filter: present("RUST_LOG").unwrap_or_else(|| "warn".to_owned()),
            log: true,
            log_writer: None,
            batch: Batch::from_vars(present)?,
        })
    }

    /// Sends to this OTLP endpoint (e.g. `http://localhost:4317` for gRPC,
    /// `http://localhost:4318` for HTTP; the `/v1/traces` path is added for HTTP).
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// Exports nothing (spans still exist for other `tracing` layers).
    pub fn without_export(mut self) -> Self {
        self.endpoint = None;
        self
    }

    /// The transport.
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// The `service.name` resource attribute (default `OTEL_SERVICE_NAME`, else `motet`).
    pub fn with_service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// Records prompt and completion content, tool arguments and results on spans. Off by
    /// default: content may hold personal data.
    pub fn with_capture_content(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }

    /// How many finished spans may wait for export (default `OTEL_BSP_MAX_QUEUE_SIZE`, else the
    /// SDK's 2,048). When the queue is full new spans are dropped rather than an agent
    /// blocked; a process finishing more spans per second than one export batch takes to send
    /// needs a larger queue to keep them all.
    pub fn with_max_queue_size(mut self, spans: usize) -> Self {
        self.batch.max_queue_size = Some(spans);
        self
    }

    /// Prints no log lines to stderr (spans are still exported).
    pub fn without_log(mut self) -> Self {
        self.log = false;
        self
    }

    /// Writes log lines through `make` (called once per line) instead of straight to stderr:
    /// a program drawing a progress bar prints them above the bar, so they do not tear it.
    pub fn with_log_writer(
        mut self,
        make: impl Fn() -> Box<dyn std::io::Write + Send> + Send + Sync + 'static,
    ) -> Self {
        self.log_writer = Some(LogWriter(Arc::new(make)));
        self
    }

    /// The endpoint spans go to, if any.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// Installs the global `tracing` subscriber (stderr log lines filtered by `RUST_LOG`, and
    /// the OpenTelemetry layer when there is an endpoint), the global meter provider, and the
    /// content-capture switch. Runtimes already running report their metrics to the new meter
    /// provider from then on.
    ///
    /// # Errors
    /// [`TelemetryError::Exporter`] when the exporter cannot be built,
    /// [`TelemetryError::AlreadyInstalled`] when a global subscriber exists.
    pub fn install(self) -> Result<TelemetryGuard, TelemetryError> {
        let (dispatch, guard) = self.into_dispatch()?;
        tracing::dispatcher::set_global_default(dispatch)
            .map_err(|e| TelemetryError::AlreadyInstalled(e.to_string()))?;
        Ok(guard)
    }

    /// Everything [`install`](Self::install) does except installing the subscriber: it is
    /// returned, for [`tracing::dispatcher::with_default`] or a subscriber of your own making.
    /// The meter and tracer providers are still set globally.
    ///
    /// # Errors
    /// [`TelemetryError::Exporter`] when the exporter cannot be built;
    /// [`TelemetryError::Config`] for a bad `RUST_LOG`.
    pub fn into_dispatch(self) -> Result<(tracing::Dispatch, TelemetryGuard), TelemetryError> {
        set_capture_content(self.capture_content);
        let filter = EnvFilter::try_new(&self.log_filter).map_err(|e| TelemetryError::Config {
            key: "RUST_LOG".into(),
            message: e.to_string(),
        })?;
        let writer = match self.log_writer.clone() {
            Some(LogWriter(make)) => BoxMakeWriter::new(move || make()),
            None => BoxMakeWriter::new(std::io::stderr),
        };
        let log = self.log.then(|| {
            tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_filter(filter)
        });
        let Some(endpoint) = self.endpoint.clone() else {
            let subscriber = tracing_subscriber::registry().with(log);
            return Ok((
                tracing::Dispatch::new(subscriber),
                TelemetryGuard::default(),
            ));
        };
        let service = self
            .service_name
            .clone()
            .unwrap_or_else(|| "motet".to_owned());
        let exporters = Exporters::build(&endpoint, self.protocol, &service, self.batch)?;
        let tracer = exporters.tracer.tracer("motet");
        opentelemetry::global::set_tracer_provider(exporters.tracer.clone());
        opentelemetry::global::set_meter_provider(exporters.meter.clone());
        rebind_instruments();
        let otel = layer(tracer);
        let subscriber = tracing_subscriber::registry().with(log).with(otel);
        let guard = TelemetryGuard {
            tracer: Some(exporters.tracer),
            meter: Some(exporters.meter),
            runtime: exporters.runtime,
            endpoint: Some(endpoint),
        };
        Ok((tracing::Dispatch::new(subscriber), guard))
    }
}

/// The `tracing-opentelemetry` layer as [`Telemetry`] sets it up, for a subscriber of your own
/// making: spans at INFO and above except the chatter of the actor library and the HTTP and
/// gRPC stacks underneath; no code-location, thread or busy/idle-time attributes (each costs
/// allocations on every span and says nothing about an agent).
pub fn layer<S, T>(tracer: T) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    T: opentelemetry::trace::Tracer + Send + Sync + 'static,
    T::Span: Send + Sync,
{
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(span_filter())
}

/// Which spans go to OpenTelemetry: everything at INFO and above, except the chatter of the
/// actor library and the HTTP and gRPC stacks underneath.
fn span_filter() -> tracing_subscriber::filter::Targets {
    use tracing::level_filters::LevelFilter;
    tracing_subscriber::filter::Targets::new()
        .with_default(LevelFilter::INFO)
        .with_target("ractor", LevelFilter::WARN)
        .with_target("h2", LevelFilter::WARN)
        .with_target("hyper", LevelFilter::WARN)
        .with_target("hyper_util", LevelFilter::WARN)
        .with_target("tonic", LevelFilter::WARN)
        .with_target("tower", LevelFilter::WARN)
        .with_target("reqwest", LevelFilter::WARN)
        .with_target("opentelemetry", LevelFilter::WARN)
        .with_target("opentelemetry_sdk", LevelFilter::WARN)
        .with_target("opentelemetry_otlp", LevelFilter::WARN)
}

/// The providers and, for gRPC, the runtime that drives its connections.
struct Exporters {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Exporters {
    /// Builds them on a plain thread: the blocking HTTP client must not be created or dropped
    /// inside an async context, and gRPC channels must be created inside their own runtime
    /// (the SDK's batch processors export from threads of their own, with no runtime).
    fn build(
        endpoint: &str,
        protocol: Protocol,
        service: &str,
        batch: Batch,
    ) -> Result<Self, TelemetryError> {
        let endpoint = endpoint.trim_end_matches('/').to_owned();
        let service = service.to_owned();
        let failed = |message: String| TelemetryError::Exporter {
            endpoint: endpoint.clone(),
            message,
        };
        let built = std::thread::scope(|scope| {
            scope
                .spawn(|| Self::build_here(&endpoint, protocol, &service, batch))
                .join()
        });
        built.map_err(|_| failed("the exporter builder panicked".into()))?
    }

    fn build_here(
        endpoint: &str,
        protocol: Protocol,
        service: &str,
        batch: Batch,
    ) -> Result<Self, TelemetryError> {
        let failed = |e: &dyn std::fmt::Display| TelemetryError::Exporter {
            endpoint: endpoint.to_owned(),
            message: e.to_string(),
        };
        let timeout = Duration::from_secs(10);
        let (spans, metrics, runtime) = match protocol {
            Protocol::Grpc => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("motet-otlp")
                    .enable_all()
                    .build()
                    .map_err(|e| failed(&e))?;
                let _inside = runtime.enter();
                let spans = opentelemetry_otlp::SpanExporter::builder()
                    .with_tonic()
                    .with_endpoint(endpoint)
                    .with_timeout(timeout)
                    .build()
                    .map_err(|e| failed(&e))?;
                let metrics = opentelemetry_otlp::MetricExporter::builder()
                    .with_tonic()
                    .with_endpoint(endpoint)
                    .with_timeout(timeout)
                    .build()
                    .map_err(|e| failed(&e))?;
                drop(_inside);
                (spans, metrics, Some(runtime))
            }
            Protocol::HttpProtobuf => {
                let spans = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                    .with_endpoint(format!("{endpoint}/v1/traces"))
                    .with_timeout(timeout)
                    .build()
                    .map_err(|e| failed(&e))?;
                let metrics = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                    .with_endpoint(format!("{endpoint}/v1/metrics"))
                    .with_timeout(timeout)
                    .build()
                    .map_err(|e| failed(&e))?;
                (spans, metrics, None)
            }
        };
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service.to_owned())
            .build();
        let processor = opentelemetry_sdk::trace::BatchSpanProcessor::builder(spans)
            .with_batch_config(batch.config())
            .build();
        let tracer = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource.clone())
            .build();
        let meter = SdkMeterProvider::builder()
            .with_periodic_exporter(metrics)
            .with_resource(resource)
            .build();
        Ok(Self {
            tracer,
            meter,
            runtime,
        })
    }
}

/// Keeps the exporters alive; flushes and shuts them down when dropped (or on
/// [`shutdown`](Self::shutdown)), so a short program does not lose its last spans.
#[derive(Default)]
#[must_use = "telemetry stops exporting when the guard is dropped"]
pub struct TelemetryGuard {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    runtime: Option<tokio::runtime::Runtime>,
    /// Where the exporters send, named in their failures.
    endpoint: Option<String>,
}

impl std::fmt::Debug for TelemetryGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryGuard")
            .field("exporting", &self.tracer.is_some())
            .finish()
    }
}

impl TelemetryGuard {
    /// Sends everything buffered now (spans and metrics), waiting until it is sent.
    ///
    /// # Errors
    /// [`TelemetryError::Shutdown`] when the receiver could not take it.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        let tracer = self.tracer.clone();
        let meter = self.meter.clone();
        // The SDK blocks while it exports: off the async threads.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    if let Some(tracer) = &tracer {
                        tracer
                            .force_flush()
                            .map_err(|e| self.failed(&e.to_string()))?;
                    }
                    if let Some(meter) = &meter {
                        meter
                            .force_flush()
                            .map_err(|e| self.failed(&e.to_string()))?;
                    }
                    Ok(())
                })
                .join()
                .unwrap_or_else(|_| Err(TelemetryError::Shutdown("flush panicked".into())))
        })
    }

    /// Flushes and stops the exporters.
    ///
    /// # Errors
    /// [`TelemetryError::Shutdown`] when the last export failed.
    pub fn shutdown(mut self) -> Result<(), TelemetryError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), TelemetryError> {
        let tracer = self.tracer.take();
        let meter = self.meter.take();
        let result = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut errors = Vec::new();
                    if let Some(tracer) = tracer
                        && let Err(e) = tracer.shutdown()
                    {
                        errors.push(e.to_string());
                    }
                    if let Some(meter) = meter
                        && let Err(e) = meter.shutdown()
                    {
                        errors.push(e.to_string());
                    }
                    errors
                })
                .join()
                .unwrap_or_else(|_| vec!["shutdown panicked".into()])
        });
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        match result.is_empty() {
            true => Ok(()),
            false => Err(self.failed(&result.join("; "))),
        }
    }

    /// An export failure, naming where it was sent: "Failed to shutdown" alone did not say
    /// which receiver did not answer.
    fn failed(&self, message: &str) -> TelemetryError {
        match &self.endpoint {
            Some(endpoint) => TelemetryError::Shutdown(format!(
                "exporting to {endpoint} failed (is an OTLP receiver listening there?): {message}"
            )),
            None => TelemetryError::Shutdown(message.to_owned()),
        }
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Err(error) = self.stop() {
            eprintln!("motet telemetry: {error}");
        }
    }
}
