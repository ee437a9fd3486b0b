//! Credentials in the server URL never show: a connect error names the server with the password
//! (or token) masked. The first tests need no server (a port nothing listens on); the last
//! starts a nats-server of its own that wants a password (the binary scripts/nats.sh fetched),
//! and prints `skipped:` without one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::time::Duration;

use motet_jetstream::{JetStreamBus, JetStreamConfig};

/// A loopback port nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

async fn connect_error(url: &str) -> String {
    let config = JetStreamConfig::default().with_timeout(Duration::from_secs(2));
    match JetStreamBus::connect(url, config).await {
        Ok(_) => panic!("something answered at {url}"),
        Err(error) => error.to_string(),
    }
}

#[tokio::test]
async fn a_connect_error_masks_the_password_in_the_url() {
    let port = closed_port();
    let error = connect_error(&format!("nats://alice:s3cr3t-pw@127.0.0.1:{port}")).await;
    assert!(!error.contains("s3cr3t-pw"), "{error}");
    assert!(
        error.contains(&format!("nats://alice:***@127.0.0.1:{port}")),
        "{error}"
    );
}

#[tokio::test]
async fn a_connect_error_masks_a_token_in_the_url() {
    let port = closed_port();
    let error = connect_error(&format!("nats://t0ken-xyz@127.0.0.1:{port}")).await;
    assert!(!error.contains("t0ken-xyz"), "{error}");
    assert!(
        error.contains(&format!("nats://***@127.0.0.1:{port}")),
        "{error}"
    );
}

/// The nats-server binary scripts/nats.sh uses: `MOTET_NATS_BIN`, or the one it fetched into
/// `MOTET_NATS_HOME` (default ~/.cache/motet-nats).
fn server_binary() -> Option<std::path::PathBuf> {
    if let Ok(bin) = std::env::var("MOTET_NATS_BIN") {
        return Some(bin.into());
    }
    let home = std::env::var("MOTET_NATS_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|_| {
            std::env::var("HOME").map(|h| std::path::Path::new(&h).join(".cache/motet-nats"))
        })
        .ok()?;
    std::fs::read_dir(home)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin/nats-server"))
        .find(|bin| bin.is_file())
}

/// A nats-server that wants user `alice`, password `s3cr3t-pw`; killed when dropped.
struct AuthServer {
    child: std::process::Child,
    store: std::path::PathBuf,
    port: u16,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

async fn auth_server() -> Option<AuthServer> {
    let Some(bin) = server_binary() else {
        motet_runtime::testing::missing("no nats-server binary (bash scripts/nats.sh fetch)");
        return None;
    };
    let port = closed_port();
    let store = std::env::temp_dir().join(format!("motet-nats-auth-{port}"));
    let child = std::process::Command::new(bin)
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
        .arg(&store)
        .args(["--user", "alice", "--pass", "s3cr3t-pw"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = AuthServer { child, store, port };
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Some(server);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the nats-server on port {port} did not start");
}

#[tokio::test]
async fn credentials_in_the_url_log_in_and_a_wrong_password_is_not_shown() {
    let Some(server) = auth_server().await else {
        return;
    };
    let port = server.port;
    let config = JetStreamConfig::default().in_memory();
    // Handed to the client on their own, the URL's credentials are the ones it logs in with.
    JetStreamBus::connect(
        &format!("nats://alice:s3cr3t-pw@127.0.0.1:{port}"),
        config.clone(),
    )
    .await
    .unwrap();
    let error = connect_error(&format!("nats://alice:wr0ng-pw@127.0.0.1:{port}")).await;
    assert!(!error.contains("wr0ng-pw"), "{error}");
    assert!(error.contains("authorization violation"), "{error}");
    assert!(
        error.contains(&format!("nats://alice:***@127.0.0.1:{port}")),
        "{error}"
    );
}
