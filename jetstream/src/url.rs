//! NATS server URLs with credentials in them (`nats://alice:secret@host:4222`,
//! `nats://token@host`): the credentials taken out, to be handed to the client on their own,
//! and the URL shown with them masked.
//!
//! The client logs the server's address (at debug level, `server = ServerAddr(…)`) and errors
//! name it; a URL without credentials is what it gets, so neither can print them. A URL may
//! list several servers, comma-separated, as the client takes it.

use std::fmt;

/// What a URL's user info says: a user and a password, or a token alone.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Credentials {
    /// `user:password@`.
    UserPassword { user: String, password: String },
    /// `token@`.
    Token(String),
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UserPassword { user, .. } => write!(f, "UserPassword({user}, ***)"),
            Self::Token(_) => f.write_str("Token(***)"),
        }
    }
}

/// A URL split into the servers, without user info, and the credentials (those of the first
/// server that has any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitUrl {
    /// The URL with every server's user info removed.
    pub(crate) servers: String,
    /// The credentials it held.
    pub(crate) credentials: Option<Credentials>,
}

/// One server of a URL: `scheme://`, the user info (without its `@`) if any, and the rest.
fn parts(server: &str) -> (&str, Option<&str>, &str) {
    let (scheme, rest) = match server.find("://") {
        Some(at) => server.split_at(at + 3),
        None => ("", server),
    };
    // The user info ends at the last `@` before the path: a password with an unencoded `@`
    // is still taken whole.
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => (scheme, Some(&rest[..at]), &rest[at + 1..]),
        None => (scheme, None, rest),
    }
}

/// Splits `url` into its servers without credentials and the credentials.
pub(crate) fn split(url: &str) -> SplitUrl {
    let mut credentials = None;
    let servers: Vec<String> = url
        .split(',')
        .map(|server| {
            let server = server.trim();
            let (scheme, userinfo, rest) = parts(server);
            if let Some(userinfo) = userinfo.filter(|u| !u.is_empty())
                && credentials.is_none()
            {
                credentials = Some(match userinfo.split_once(':') {
                    Some((user, password)) => Credentials::UserPassword {
                        user: user.to_owned(),
                        password: password.to_owned(),
                    },
                    None => Credentials::Token(userinfo.to_owned()),
                });
            }
            format!("{scheme}{rest}")
        })
        .collect();
    SplitUrl {
        servers: servers.join(","),
        credentials,
    }
}

/// `url` with its secrets masked: `nats://alice:***@host:4222`, `nats://***@host` (a token).
pub fn redact(url: &str) -> String {
    url.split(',')
        .map(|server| {
            let (scheme, userinfo, rest) = parts(server.trim());
            match userinfo {
                Some(userinfo) => match userinfo.split_once(':') {
                    Some((user, _)) => format!("{scheme}{user}:***@{rest}"),
                    None => format!("{scheme}***@{rest}"),
                },
                None => format!("{scheme}{rest}"),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_come_out_and_are_masked() {
        let cases = [
            (
                "nats://alice:s3cr3t@127.0.0.1:4222",
                "nats://127.0.0.1:4222",
                Some(Credentials::UserPassword {
                    user: "alice".into(),
                    password: "s3cr3t".into(),
                }),
                "nats://alice:***@127.0.0.1:4222",
            ),
            (
                "nats://tok3n@host",
                "nats://host",
                Some(Credentials::Token("tok3n".into())),
                "nats://***@host",
            ),
            (
                "nats://a:p@ss@h1:4222, nats://h2:4222",
                "nats://h1:4222,nats://h2:4222",
                Some(Credentials::UserPassword {
                    user: "a".into(),
                    password: "p@ss".into(),
                }),
                "nats://a:***@h1:4222,nats://h2:4222",
            ),
            ("127.0.0.1:4222", "127.0.0.1:4222", None, "127.0.0.1:4222"),
            (
                "nats://host:4222/x@y",
                "nats://host:4222/x@y",
                None,
                "nats://host:4222/x@y",
            ),
        ];
        for (url, servers, credentials, shown) in cases {
            assert_eq!(
                split(url),
                SplitUrl {
                    servers: servers.to_owned(),
                    credentials
                },
                "{url}"
            );
            assert_eq!(redact(url), shown, "{url}");
        }
    }

    #[test]
    fn credentials_debug_without_their_secret() {
        let shown = format!(
            "{:?} {:?}",
            Credentials::UserPassword {
                user: "alice".into(),
                password: "s3cr3t".into()
            },
            Credentials::Token("tok3n".into())
        );
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("tok3n"),
            "{shown}"
        );
    }
}
