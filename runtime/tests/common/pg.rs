//! A database of its own for one test, on the PostgreSQL server at `MOTET_DATABASE_URL`
//! (`bash scripts/postgres.sh start` prints the URL), so tests run in parallel on one server.

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(clippy::unwrap_used, clippy::panic)] // a failed expectation is a failed test

use tokio_postgres::NoTls;

/// A database made for one test.
pub(crate) struct TestDb {
    /// The server's own URL, for administration.
    pub(crate) admin_url: String,
    /// The test database's name.
    pub(crate) name: String,
    /// The test database's URL.
    pub(crate) url: String,
}

/// Connects with the plain driver, for what the store does not do (create, break, drop).
pub(crate) async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// `url` with its database replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{name}{query}")
}

impl TestDb {
    /// A fresh database named after `test`, or `None` (having printed `skipped:`) when
    /// `MOTET_DATABASE_URL` is not set; under `CI=true` that fails the test.
    pub(crate) async fn new(test: &str) -> Option<Self> {
        let Some(admin_url) = std::env::var("MOTET_DATABASE_URL")
            .ok()
            .filter(|url| !url.trim().is_empty())
        else {
            // What `motet_runtime::testing::missing` does, written out: the CLI's tests include
            // this file too, and cannot reach that crate's test utilities.
            let reason = "MOTET_DATABASE_URL is not set (bash scripts/postgres.sh start)";
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "CI=true, and this test needs what is missing: {reason}"
            );
            println!("skipped: {reason}");
            return None;
        };
        let name = format!("motet_test_{test}_{:016x}", fastrand::u64(..));
        connect(&admin_url)
            .await
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let url = with_database(&admin_url, &name);
        Some(Self {
            admin_url,
            name,
            url,
        })
    }

    /// Drops the database, closing whatever connections still hold it.
    pub(crate) async fn drop_now(self) {
        connect(&self.admin_url)
            .await
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .await
            .unwrap();
    }
}
