//! One benchmark result and its JSON-line form.

use std::time::Duration;

use serde_json::{Map, Value, json};

/// One measured figure: a scenario, a variant (motet's own or a floor), and how fast it ran.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    scenario: &'static str,
    variant: String,
    n: u64,
    ns_per_op: f64,
    extra: Map<String, Value>,
}

impl Report {
    /// A result for `n` operations that took `elapsed` in all.
    pub(crate) fn new(
        scenario: &'static str,
        variant: impl Into<String>,
        n: u64,
        elapsed: Duration,
    ) -> Self {
        let ns_per_op = if n == 0 {
            0.0
        } else {
            elapsed.as_nanos() as f64 / n as f64
        };
        Self {
            scenario,
            variant: variant.into(),
            n,
            ns_per_op,
            extra: Map::new(),
        }
    }

    /// Adds a scenario-specific field (`bytes_per_agent`, `mb_per_sec`, ...).
    pub(crate) fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// Nanoseconds per operation.
    #[allow(dead_code)]
    pub(crate) fn ns_per_op(&self) -> f64 {
        self.ns_per_op
    }

    /// The JSON object printed with `--json`.
    pub(crate) fn to_json_line(&self) -> String {
        let ops_per_sec = if self.ns_per_op > 0.0 {
            1e9 / self.ns_per_op
        } else {
            0.0
        };
        let mut obj = Map::new();
        obj.insert("scenario".into(), json!(self.scenario));
        obj.insert("variant".into(), json!(self.variant));
        obj.insert("n".into(), json!(self.n));
        obj.insert("ns_per_op".into(), json!(round2(self.ns_per_op)));
        obj.insert("ops_per_sec".into(), json!(round2(ops_per_sec)));
        for (k, v) in &self.extra {
            obj.insert(k.clone(), v.clone());
        }
        Value::Object(obj).to_string()
    }

    /// A line for people.
    pub(crate) fn to_human_line(&self) -> String {
        let mut line = format!(
            "{:<10} {:<16} n={:<10} {:>12.1} ns/op",
            self.scenario, self.variant, self.n, self.ns_per_op
        );
        for (k, v) in &self.extra {
            line.push_str(&format!("  {k}={v}"));
        }
        line
    }
}

/// Rounds to two decimals so JSON lines stay readable.
pub(crate) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The `q` quantile (0 to 1) of `sorted` (ascending), the nearest rank; 0 when it is empty.
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * q).round().max(0.0) as usize;
    sorted.get(at).copied().unwrap_or(0.0)
}
