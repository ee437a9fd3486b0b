//! An OTLP endpoint where nothing listens: the export's failure names the endpoint, rather than
//! a bare "Failed to shutdown" at exit.
//!
//! One test per file: the tracer and meter providers are global to the process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet_runtime::telemetry::{Protocol, Telemetry};

#[test]
fn a_receiver_that_does_not_answer_is_named_in_the_failure() {
    let port = {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        socket.local_addr().unwrap().port()
    };
    let endpoint = format!("http://127.0.0.1:{port}");
    let (_dispatch, guard) = Telemetry::from_vars(|_| None)
        .unwrap()
        .with_endpoint(endpoint.clone())
        .with_protocol(Protocol::HttpProtobuf)
        .without_log()
        .into_dispatch()
        .unwrap();
    tracing::dispatcher::with_default(&_dispatch, || {
        let span = tracing::info_span!("work");
        let _entered = span.enter();
    });
    let error = guard.flush().unwrap_err().to_string();
    assert!(error.contains(&endpoint), "{error}");
    assert!(error.contains("OTLP receiver"), "{error}");
}
