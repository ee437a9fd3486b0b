//! Log lines go through a writer of the program's choosing (a progress bar prints them above
//! itself), whole lines, filtered as `RUST_LOG` says.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::io::Write;
use std::sync::{Arc, Mutex};

use motet_runtime::telemetry::Telemetry;

/// A writer into a shared buffer, one `write` call recorded per entry.
struct Lines(Arc<Mutex<Vec<String>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap()
            .push(String::from_utf8_lossy(buf).into_owned());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn log_lines_go_through_the_given_writer() {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let telemetry = Telemetry::from_vars(|key| (key == "RUST_LOG").then(|| "warn".to_owned()))
        .unwrap()
        .without_export()
        .with_log_writer(move || Box::new(Lines(sink.clone())));
    let (dispatch, _guard) = telemetry.into_dispatch().unwrap();
    tracing::dispatcher::with_default(&dispatch, || {
        tracing::warn!(agent = "worker-7", "thread restarted");
        tracing::info!("below the filter");
    });
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("thread restarted") && lines[0].contains("worker-7"));
    assert!(
        lines[0].ends_with('\n'),
        "one whole line per write: {lines:?}"
    );
}
