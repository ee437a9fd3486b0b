//! `motet serve`: the CLI's agent over HTTP (the native API, docs/serve.md) until Ctrl-C or
//! SIGTERM.

use std::net::SocketAddr;

use motet::serve::{Scope, Served, Tokens};

use crate::agent;
use crate::config::{ServeTable, Settings};
use crate::db::Db;
use crate::error::CliError;

/// Where `motet serve` listens unless told otherwise.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8420";

/// The variable holding a token that reaches every served agent.
pub const TOKEN_VAR: &str = "MOTET_SERVE_TOKEN";

/// The shortest token taken: a guessable one is refused.
const MIN_TOKEN: usize = 16;

/// Serves the CLI's agent on `addr` (else the file's `[serve] addr`, else [`DEFAULT_ADDR`])
/// until Ctrl-C or SIGTERM; prints `listening on http://ADDR` once it listens.
///
/// # Errors
/// [`CliError::BadFlag`] for an address that cannot be read, or one off loopback with no token;
/// [`CliError::ConfigFile`] / [`CliError::Environment`] for tokens that cannot be read;
/// [`CliError::Io`] when the address cannot be bound; store and runtime failures.
pub async fn run(
    settings: &Settings,
    db: &Db,
    table: &ServeTable,
    addr: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), CliError> {
    let addr = address(addr.or(table.addr.as_deref()).unwrap_or(DEFAULT_ADDR))?;
    let tokens = tokens(table, env)?;
    exposed(addr, &tokens)?;
    let store = db.open().await?;
    let (runtime, agent) = agent::start(settings, store).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| CliError::Io {
            what: format!("cannot listen on {addr}"),
            source,
        })?;
    let bound = listener.local_addr().unwrap_or(addr);
    let served = Served::new(runtime.clone(), [agent], tokens)
        .with_cors_origins(table.cors_origins.iter().cloned());
    super::out(&format!("listening on http://{bound}\n"))?;
    let served = served.serve(listener, stop_signal()).await;
    runtime.shutdown().await;
    served.map_err(|source| CliError::Io {
        what: format!("serving on {bound}"),
        source,
    })
}

/// `text` as a socket address.
///
/// # Errors
/// [`CliError::BadFlag`] when it is not `HOST:PORT` with an IP address.
pub fn address(text: &str) -> Result<SocketAddr, CliError> {
    let text = text.trim();
    let text = text
        .strip_prefix("localhost:")
        .map_or_else(|| text.to_owned(), |port| format!("127.0.0.1:{port}"));
    text.parse().map_err(|_| CliError::BadFlag {
        flag: "--addr".to_owned(),
        message: format!(
            "`{text}` is not HOST:PORT (an IP address and a port, e.g. {DEFAULT_ADDR})"
        ),
    })
}

/// The tokens accepted: [`TOKEN_VAR`]'s (every agent) and the file's.
///
/// # Errors
/// [`CliError::Environment`] when an entry names no token, or both, or a variable that is not
/// set, or a token is shorter than 16 characters.
pub fn tokens(
    table: &ServeTable,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Tokens, CliError> {
    let mut tokens = Tokens::open();
    if let Some(token) = env(TOKEN_VAR) {
        if token.trim().len() < MIN_TOKEN {
            return Err(CliError::Environment {
                message: format!("{TOKEN_VAR}: a token has at least {MIN_TOKEN} characters"),
            });
        }
        tokens = tokens.with(token.trim(), Scope::All);
    }
    for (n, entry) in table.tokens.iter().enumerate() {
        let token = match (&entry.token, &entry.token_env) {
            (Some(token), None) => token.clone(),
            (None, Some(var)) => env(var).ok_or_else(|| CliError::Environment {
                message: format!("[[serve.tokens]] entry {}: `{var}` is not set", n + 1),
            })?,
            _ => {
                return Err(CliError::Environment {
                    message: format!(
                        "[[serve.tokens]] entry {}: give `token` or `token_env`, one of them",
                        n + 1
                    ),
                });
            }
        };
        let token = token.trim();
        if token.len() < MIN_TOKEN {
            return Err(CliError::Environment {
                message: format!(
                    "[[serve.tokens]] entry {}: a token has at least {MIN_TOKEN} characters",
                    n + 1
                ),
            });
        }
        let scope = match &entry.agents {
            None => Scope::All,
            Some(agents) => Scope::Agents(agents.iter().cloned().collect()),
        };
        tokens = tokens.with(token, scope);
    }
    Ok(tokens)
}

/// Refuses to listen off loopback when no token is required.
///
/// # Errors
/// [`CliError::BadFlag`] for a non-loopback `addr` with open `tokens`.
pub fn exposed(addr: SocketAddr, tokens: &Tokens) -> Result<(), CliError> {
    if tokens.is_open() && !addr.ip().is_loopback() {
        return Err(CliError::BadFlag {
            flag: "--addr".to_owned(),
            message: format!(
                "{addr} is reachable from other machines: set {TOKEN_VAR} or [[serve.tokens]] first"
            ),
        });
    }
    Ok(())
}

/// Completes at Ctrl-C or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenEntry;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn an_address_is_an_ip_and_a_port() {
        assert_eq!(
            address("127.0.0.1:8420").ok(),
            "127.0.0.1:8420".parse().ok()
        );
        assert_eq!(address("localhost:9").ok(), "127.0.0.1:9".parse().ok());
        assert!(address("example.com:80").is_err());
        assert!(address("8420").is_err());
    }

    #[test]
    fn off_loopback_needs_a_token() {
        let open = Tokens::open();
        let closed = Tokens::open().with("0123456789abcdef", Scope::All);
        let outside: SocketAddr = "0.0.0.0:8420".parse().unwrap_or_else(|_| unreachable!());
        let inside: SocketAddr = "127.0.0.1:8420".parse().unwrap_or_else(|_| unreachable!());
        assert!(exposed(outside, &open).is_err());
        assert!(exposed(outside, &closed).is_ok());
        assert!(exposed(inside, &open).is_ok());
    }

    #[test]
    fn tokens_come_from_the_environment_and_the_file_each_with_its_scope() {
        let table = ServeTable {
            tokens: vec![
                TokenEntry {
                    token_env: Some("UI".to_owned()),
                    agents: Some(vec!["cli".to_owned()]),
                    ..TokenEntry::default()
                },
                TokenEntry {
                    token: Some("literal-token-0001".to_owned()),
                    ..TokenEntry::default()
                },
            ],
            ..ServeTable::default()
        };
        let env = env_of(&[
            (TOKEN_VAR, "every-agent-token"),
            ("UI", "console-token-0001"),
        ]);
        let tokens = tokens(&table, &env).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            tokens.scope_of(Some("Bearer every-agent-token")),
            Some(Scope::All)
        );
        assert_eq!(
            tokens.scope_of(Some("Bearer console-token-0001")),
            Some(Scope::Agents(["cli".to_owned()].into()))
        );
        assert_eq!(
            tokens.scope_of(Some("Bearer literal-token-0001")),
            Some(Scope::All)
        );
        assert_eq!(tokens.scope_of(None), None);
        // An unset variable, both or neither, a short token: refused.
        let unset = env_of(&[]);
        assert!(super::tokens(&table, &unset).is_err());
        for entry in [
            TokenEntry::default(),
            TokenEntry {
                token: Some("literal-token-0001".to_owned()),
                token_env: Some("UI".to_owned()),
                ..TokenEntry::default()
            },
            TokenEntry {
                token: Some("short".to_owned()),
                ..TokenEntry::default()
            },
        ] {
            let table = ServeTable {
                tokens: vec![entry],
                ..ServeTable::default()
            };
            assert!(super::tokens(&table, &env).is_err());
        }
    }
}
