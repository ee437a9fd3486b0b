//! [`JetStreamConfig`]: the streams a [`JetStreamBus`](crate::JetStreamBus) uses and their limits.

use std::time::Duration;

/// Where signals and dead letters are kept, and how much.
///
/// The bus creates (or updates to this configuration) two streams: `stream` over
/// `subject_prefix.>` holds the signals, `dead_letter_stream` over `dead_letter_prefix.>` holds
/// each consumer's dead letters under `dead_letter_prefix.<durable name>`. The two prefixes must
/// not overlap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JetStreamConfig {
    /// The signals' stream (default `MOTET`).
    pub stream: String,
    /// The subject prefix: a signal of type `t` goes to `subject_prefix.t` (default
    /// `motet.signals`).
    pub subject_prefix: String,
    /// The dead letters' stream (default `MOTET_DEAD`).
    pub dead_letter_stream: String,
    /// The dead letters' subject prefix (default `motet.dead`).
    pub dead_letter_prefix: String,
    /// How long JetStream remembers a published signal's `source` + `id` to drop a second
    /// publish of it (default 2 minutes, JetStream's own default).
    pub duplicate_window: Duration,
    /// The signals' stream limits.
    pub limits: StreamLimits,
    /// Publishes awaiting the server's acknowledgement, at most, across the bus: a publisher
    /// beyond that waits (default 256).
    pub max_publishes_in_flight: usize,
    /// How long a publish, an acknowledgement or an API request waits for the server (default
    /// 10 s).
    pub timeout: Duration,
    /// Keep the streams in memory instead of on disk (default `false`: a server restart keeps
    /// them). For benchmarks and tests of the bus itself.
    pub memory: bool,
}

/// How much the signals' stream keeps. When a limit is reached the stream refuses new signals
/// (a publish fails with [`BusError::NotConfirmed`](motet_runtime::bus::BusError)) rather than
/// dropping old ones a consumer may not have seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamLimits {
    /// Signals held at most (`None`: no limit).
    pub max_messages: Option<i64>,
    /// Bytes held at most (`None`: no limit).
    pub max_bytes: Option<i64>,
    /// How long a signal is kept (`None`: until a limit is reached).
    pub max_age: Option<Duration>,
}

impl Default for JetStreamConfig {
    fn default() -> Self {
        Self {
            stream: "MOTET".into(),
            subject_prefix: "motet.signals".into(),
            dead_letter_stream: "MOTET_DEAD".into(),
            dead_letter_prefix: "motet.dead".into(),
            duplicate_window: Duration::from_secs(120),
            limits: StreamLimits::default(),
            max_publishes_in_flight: 256,
            timeout: Duration::from_secs(10),
            memory: false,
        }
    }
}

impl JetStreamConfig {
    /// The defaults with the streams named `<name>` and `<name>_DEAD` and the subjects under
    /// `<prefix>.signals` and `<prefix>.dead`: one per test or benchmark run, so that runs
    /// sharing a server do not meet.
    pub fn named(name: impl Into<String>, prefix: impl Into<String>) -> Self {
        let name = name.into();
        let prefix = prefix.into();
        Self {
            dead_letter_stream: format!("{name}_DEAD"),
            stream: name,
            subject_prefix: format!("{prefix}.signals"),
            dead_letter_prefix: format!("{prefix}.dead"),
            ..Self::default()
        }
    }

    /// With these stream limits.
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// With this duplicate window.
    pub fn with_duplicate_window(mut self, window: Duration) -> Self {
        self.duplicate_window = window;
        self
    }

    /// With at most `n` publishes awaiting acknowledgement (0 counts as 1).
    pub fn with_max_publishes_in_flight(mut self, n: usize) -> Self {
        self.max_publishes_in_flight = n.max(1);
        self
    }

    /// With this server timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// In memory rather than on disk.
    pub fn in_memory(mut self) -> Self {
        self.memory = true;
        self
    }
}
