//! Bearer tokens, each scoped to a set of agents.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{StatusCode, header};

use crate::Shared;

/// Which agents one token reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every served agent.
    All,
    /// Only these, by name.
    Agents(BTreeSet<String>),
}

impl Scope {
    /// Whether this scope reaches the agent named `agent`.
    pub fn allows(&self, agent: &str) -> bool {
        match self {
            Self::All => true,
            Self::Agents(names) => names.contains(agent),
        }
    }
}

/// The tokens a server accepts. With none, it accepts every request (for loopback use only:
/// `motet serve` refuses to listen elsewhere without a token).
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    scopes: BTreeMap<String, Scope>,
}

impl Tokens {
    /// No tokens: every request is let in.
    pub fn open() -> Self {
        Self::default()
    }

    /// Adds `token`, reaching `scope`.
    pub fn with(mut self, token: impl Into<String>, scope: Scope) -> Self {
        self.scopes.insert(token.into(), scope);
        self
    }

    /// Whether no token is required.
    pub fn is_open(&self) -> bool {
        self.scopes.is_empty()
    }

    /// The scope of the `Authorization` header's value, if it names an accepted bearer token.
    pub fn scope_of(&self, authorization: Option<&str>) -> Option<Scope> {
        if self.is_open() {
            return Some(Scope::All);
        }
        let token = authorization?.strip_prefix("Bearer ")?.trim();
        self.scopes.get(token).cloned()
    }
}

/// The caller of one request, once its token is checked: a route that takes a `Caller` refuses a
/// missing or wrong token with a bare 401.
pub(crate) struct Caller(pub(crate) Scope);

impl FromRequestParts<Arc<Shared>> for Caller {
    type Rejection = StatusCode;

    async fn from_request_parts(
        parts: &mut Parts,
        shared: &Arc<Shared>,
    ) -> Result<Self, Self::Rejection> {
        let authorization = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok());
        shared
            .tokens
            .scope_of(authorization)
            .map(Caller)
            .ok_or(StatusCode::UNAUTHORIZED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scoped_token_reaches_only_its_agents() {
        let tokens = Tokens::open().with("t1", Scope::Agents(["calc".to_owned()].into()));
        let scope = tokens.scope_of(Some("Bearer t1"));
        assert_eq!(scope.as_ref().map(|s| s.allows("calc")), Some(true));
        assert_eq!(scope.map(|s| s.allows("other")), Some(false));
        assert_eq!(tokens.scope_of(Some("Bearer t2")), None);
        assert_eq!(tokens.scope_of(None), None);
        assert_eq!(tokens.scope_of(Some("t1")), None);
    }

    #[test]
    fn no_tokens_let_everyone_in() {
        assert_eq!(Tokens::open().scope_of(None), Some(Scope::All));
    }
}
