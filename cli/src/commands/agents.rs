//! `motet agents list`: the agents the store holds threads of — virtual agents of every kind
//! and named ones — read from the store without activating anyone.

use super::out;
use motet::runtime::store::{AgentQuery, AgentRecord};

use crate::db::Db;
use crate::error::CliError;
use crate::escape;
use crate::render;

/// How many agents one read of the store brings.
const PAGE: usize = 10_000;

/// Prints the stored agents (of virtual kind `kind` only, with `Some`), by name: threads,
/// created, last active; with `count`, only how many; with `json`, one JSON object per line.
///
/// # Errors
/// [`CliError::Store`] when the store cannot be opened or read.
pub async fn list(db: &Db, kind: Option<String>, count: bool, json: bool) -> Result<(), CliError> {
    let Some(store) = db.read().await? else {
        return out(&if count {
            "0\n".to_owned()
        } else {
            format!("no agents in {db}\n")
        });
    };
    let mut query = AgentQuery {
        kind,
        after: None,
        limit: PAGE,
    };
    let mut total = 0usize;
    loop {
        let page = store.agents(&query).await?;
        total += page.len();
        if !count {
            out(&lines(&page, json))?;
        }
        match page.last() {
            Some(last) if page.len() == PAGE => query.after = Some(last.name.clone()),
            _ => break,
        }
    }
    if count {
        out(&format!("{total}\n"))
    } else if total == 0 && !json {
        out(&format!("no agents in {db}\n"))
    } else {
        Ok(())
    }
}

/// One line per agent.
fn lines(page: &[AgentRecord], json: bool) -> String {
    let mut text = String::new();
    for agent in page {
        if json {
            let line = serde_json::json!({
                "name": agent.name,
                "kind": agent.kind_and_key().map(|(kind, _)| kind),
                "key": agent.kind_and_key().map(|(_, key)| key),
                "threads": agent.threads,
                "created_at": render::time(agent.created_at),
                "last_active": render::time(agent.last_active),
            });
            text.push_str(&escape::json(&line.to_string()));
        } else {
            text.push_str(&format!(
                "{} · {} thread{} · created {} · last active {} UTC",
                escape::label(&agent.name),
                agent.threads,
                if agent.threads == 1 { "" } else { "s" },
                render::time(agent.created_at),
                render::time(agent.last_active),
            ));
        }
        text.push('\n');
    }
    text
}
