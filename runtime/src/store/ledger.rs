//! The usage ledger: one row per LLM call (turns and summaries), with who it was for, the
//! model, its token counts and its price, kept by the store beside the threads; and the sums
//! a budget or `motet usage` reads from it.
//!
//! The stores write rows ([`ThreadStore::record_usage`](super::ThreadStore::record_usage)) and
//! read them back filtered ([`ThreadStore::usage_records`](super::ThreadStore::usage_records));
//! the sums and groupings are computed here, the same for every store.

use std::collections::BTreeMap;

use motet_directives::Usage;
use motet_providers::{CallKind, Cost};

/// One LLM call's usage, as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRecord {
    /// When the call answered (Unix milliseconds).
    pub at: u64,
    /// The agent that made it.
    pub agent: String,
    /// The thread, within the agent.
    pub thread: String,
    /// The request it served, when it served one.
    pub request: Option<String>,
    /// The agent's tenant, when it has one.
    pub tenant: Option<String>,
    /// The model asked for (`provider:model`).
    pub model: String,
    /// A turn or a summary.
    pub kind: CallKind,
    /// What it consumed.
    pub usage: Usage,
    /// What that cost, or `None` when the price table has no price for the model.
    pub cost: Option<Cost>,
}

/// Which rows to read: every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageFilter {
    /// Only calls at or after this time (Unix milliseconds).
    pub since: Option<u64>,
    /// Only calls before this time (Unix milliseconds).
    pub before: Option<u64>,
    /// Only this agent's calls.
    pub agent: Option<String>,
    /// Only calls on this thread (of [`agent`](Self::agent), when given).
    pub thread: Option<String>,
    /// Only calls for this request.
    pub request: Option<String>,
    /// Only calls of this tenant's agents.
    pub tenant: Option<String>,
}

impl UsageFilter {
    /// Every row.
    pub fn all() -> Self {
        Self::default()
    }

    /// One request's calls.
    pub fn request(request: impl Into<String>) -> Self {
        Self {
            request: Some(request.into()),
            ..Self::default()
        }
    }

    /// One thread's calls.
    pub fn thread(agent: impl Into<String>, thread: impl Into<String>) -> Self {
        Self {
            agent: Some(agent.into()),
            thread: Some(thread.into()),
            ..Self::default()
        }
    }

    /// One agent's calls.
    pub fn agent(agent: impl Into<String>) -> Self {
        Self {
            agent: Some(agent.into()),
            ..Self::default()
        }
    }

    /// One tenant's calls.
    pub fn tenant(tenant: impl Into<String>) -> Self {
        Self {
            tenant: Some(tenant.into()),
            ..Self::default()
        }
    }

    /// Only calls at or after `since` (Unix milliseconds).
    pub fn with_since(mut self, since: u64) -> Self {
        self.since = Some(since);
        self
    }

    /// Only calls before `before` (Unix milliseconds).
    pub fn with_before(mut self, before: u64) -> Self {
        self.before = Some(before);
        self
    }

    /// Whether `record` passes the filter (the in-memory stores' query).
    pub fn matches(&self, record: &UsageRecord) -> bool {
        let same = |want: &Option<String>, have: Option<&str>| {
            want.as_deref().is_none_or(|want| Some(want) == have)
        };
        self.since.is_none_or(|since| record.at >= since)
            && self.before.is_none_or(|before| record.at < before)
            && same(&self.agent, Some(&record.agent))
            && same(&self.thread, Some(&record.thread))
            && same(&self.request, record.request.as_deref())
            && same(&self.tenant, record.tenant.as_deref())
    }
}

/// Usage and cost summed over calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageTotals {
    /// How many calls.
    pub calls: u64,
    /// Of those, how many were summaries.
    pub summary_calls: u64,
    /// Their tokens.
    pub usage: Usage,
    /// What the priced ones cost.
    pub cost: Cost,
    /// How many had no price (counted in `usage`, not in `cost`).
    pub unpriced_calls: u64,
}

impl UsageTotals {
    /// Adds one call.
    pub fn add(&mut self, record: &UsageRecord) {
        self.calls += 1;
        if record.kind == CallKind::Summary {
            self.summary_calls += 1;
        }
        self.usage += record.usage;
        match record.cost {
            Some(cost) => self.cost += cost,
            None => self.unpriced_calls += 1,
        }
    }

    /// The totals of `records`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a UsageRecord>) -> Self {
        let mut totals = Self::default();
        for record in records {
            totals.add(record);
        }
        totals
    }

    /// The share of input tokens read from a provider's cache, in `[0, 1]` (0 with no input).
    pub fn cached_share(&self) -> f64 {
        cached_share(&self.usage)
    }
}

/// The share of `usage`'s input tokens read from a provider's cache, in `[0, 1]`.
pub fn cached_share(usage: &Usage) -> f64 {
    if usage.input_tokens == 0 {
        return 0.0;
    }
    usage.cache_read_tokens.min(usage.input_tokens) as f64 / usage.input_tokens as f64
}

/// What `motet usage` groups totals by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UsageGroup {
    /// The agent's name.
    Agent,
    /// The model (`provider:model`).
    Model,
    /// The UTC day the call answered (`2026-11-28`).
    Day,
    /// The tenant (`-` for agents without one).
    Tenant,
}

impl UsageGroup {
    /// `agent`, `model`, `day` or `tenant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Model => "model",
            Self::Day => "day",
            Self::Tenant => "tenant",
        }
    }

    /// The group `record` falls in.
    pub fn key(self, record: &UsageRecord) -> String {
        match self {
            Self::Agent => record.agent.clone(),
            Self::Model => record.model.clone(),
            Self::Day => utc_day(record.at),
            Self::Tenant => record.tenant.clone().unwrap_or_else(|| "-".to_owned()),
        }
    }
}

impl std::str::FromStr for UsageGroup {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "agent" => Ok(Self::Agent),
            "model" => Ok(Self::Model),
            "day" => Ok(Self::Day),
            "tenant" => Ok(Self::Tenant),
            other => Err(format!(
                "cannot group usage by `{other}` (expected agent, model, day or tenant)"
            )),
        }
    }
}

/// `records` summed per group, in the groups' order (days oldest first).
pub fn group_totals<'a>(
    records: impl IntoIterator<Item = &'a UsageRecord>,
    by: UsageGroup,
) -> Vec<(String, UsageTotals)> {
    let mut groups: BTreeMap<String, UsageTotals> = BTreeMap::new();
    for record in records {
        groups.entry(by.key(record)).or_default().add(record);
    }
    groups.into_iter().collect()
}

/// The UTC calendar day of a Unix-milliseconds time, `YYYY-MM-DD`.
pub fn utc_day(at_ms: u64) -> String {
    let seconds = i64::try_from(at_ms / 1000).unwrap_or(i64::MAX);
    match jiff::Timestamp::from_second(seconds) {
        Ok(time) => time.strftime("%Y-%m-%d").to_string(),
        Err(_) => "-".to_owned(),
    }
}

/// One condition of a ledger query's `WHERE`, for the SQL stores: the column and its operator
/// (`at >=`), and the value to bind.
pub(crate) type Condition = (&'static str, Bind);

/// A value bound to a ledger query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Bind {
    /// An integer column.
    Int(i64),
    /// A text column.
    Text(String),
}

/// The conditions of `filter`, each a column, an operator and a value to bind.
pub(crate) fn conditions(filter: &UsageFilter) -> Result<Vec<Condition>, super::StoreError> {
    let mut out = Vec::new();
    if let Some(since) = filter.since {
        out.push(("at >=", Bind::Int(to_db("since", since)?)));
    }
    if let Some(before) = filter.before {
        out.push(("at <", Bind::Int(to_db("before", before)?)));
    }
    let text = [
        ("agent =", &filter.agent),
        ("thread =", &filter.thread),
        ("request =", &filter.request),
        ("tenant =", &filter.tenant),
    ];
    for (column, value) in text {
        if let Some(value) = value {
            out.push((column, Bind::Text(value.clone())));
        }
    }
    Ok(out)
}

/// The query for the rows that pass `conditions`, oldest first, each value bound at `mark`
/// and its position (`?1` for SQLite, `$1` for PostgreSQL).
pub(crate) fn select(conditions: &[Condition], mark: char) -> String {
    let mut sql = format!("SELECT {COLUMNS} FROM usage_ledger");
    for (position, (condition, _)) in conditions.iter().enumerate() {
        let joint = if position == 0 { " WHERE " } else { " AND " };
        sql.push_str(&format!("{joint}{condition} {mark}{}", position + 1));
    }
    sql.push_str(" ORDER BY at, id");
    sql
}

/// The statement that records one call, its values bound at `mark` and their positions 1 to
/// 13: `at`, agent, thread, request, tenant, model, kind, the five counts, the cost.
pub(crate) fn insert(mark: char) -> String {
    let values: Vec<String> = (1..=13).map(|n| format!("{mark}{n}")).collect();
    format!(
        "INSERT INTO usage_ledger (at, agent, thread, request, tenant, model, kind, \
         input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, \
         cost) VALUES ({})",
        values.join(", ")
    )
}

/// The columns a ledger query selects, in the order [`RawRow`] lists them.
pub(crate) const COLUMNS: &str = "id, at, agent, thread, request, tenant, model, kind, input_tokens, \
                                  output_tokens, cache_read_tokens, cache_write_tokens, \
                                  reasoning_tokens, cost";

/// A ledger row as the SQL stores read it, before its integers are checked.
#[derive(Debug)]
pub(crate) struct RawRow {
    pub(crate) id: i64,
    pub(crate) at: i64,
    pub(crate) agent: String,
    pub(crate) thread: String,
    pub(crate) request: Option<String>,
    pub(crate) tenant: Option<String>,
    pub(crate) model: String,
    pub(crate) kind: String,
    pub(crate) counts: [i64; 5],
    pub(crate) cost: Option<i64>,
}

impl RawRow {
    /// The record, or [`StoreError::Ledger`](super::StoreError::Ledger) for a negative value.
    pub(crate) fn decode(self) -> Result<UsageRecord, super::StoreError> {
        let id = self.id;
        let count = |name: &str, value: i64| {
            u64::try_from(value).map_err(|_| super::StoreError::Ledger {
                row: id,
                reason: format!("{name} is negative ({value})"),
            })
        };
        let [input, output, cache_read, cache_write, reasoning] = self.counts;
        Ok(UsageRecord {
            at: count("at", self.at)?,
            agent: self.agent,
            thread: self.thread,
            request: self.request,
            tenant: self.tenant,
            model: self.model,
            kind: kind_of(&self.kind),
            usage: Usage {
                input_tokens: count("input_tokens", input)?,
                output_tokens: count("output_tokens", output)?,
                cache_read_tokens: count("cache_read_tokens", cache_read)?,
                cache_write_tokens: count("cache_write_tokens", cache_write)?,
                reasoning_tokens: count("reasoning_tokens", reasoning)?,
            },
            cost: self
                .cost
                .map(|c| count("cost", c).map(Cost::from_picodollars))
                .transpose()?,
        })
    }
}

/// A record's integers as the SQL stores hold them (`at`, the five counts, the cost), or
/// [`StoreError::Ledger`](super::StoreError::Ledger) for one above `i64::MAX`.
pub(crate) fn integers(record: &UsageRecord) -> Result<([i64; 6], Option<i64>), super::StoreError> {
    let u = &record.usage;
    Ok((
        [
            to_db("at", record.at)?,
            to_db("input_tokens", u.input_tokens)?,
            to_db("output_tokens", u.output_tokens)?,
            to_db("cache_read_tokens", u.cache_read_tokens)?,
            to_db("cache_write_tokens", u.cache_write_tokens)?,
            to_db("reasoning_tokens", u.reasoning_tokens)?,
        ],
        record
            .cost
            .map(|c| to_db("cost", c.picodollars()))
            .transpose()?,
    ))
}

fn to_db(name: &str, value: u64) -> Result<i64, super::StoreError> {
    i64::try_from(value).map_err(|_| super::StoreError::Ledger {
        row: 0,
        reason: format!("{name} {value} is above the largest storable integer"),
    })
}

/// The kind as stored (`turn`, `summary`), and back (anything else reads as a turn).
pub(crate) fn kind_of(text: &str) -> CallKind {
    match text {
        "summary" => CallKind::Summary,
        _ => CallKind::Turn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(agent: &str, at: u64, kind: CallKind, cost: Option<u64>) -> UsageRecord {
        UsageRecord {
            at,
            agent: agent.to_owned(),
            thread: "main".to_owned(),
            request: Some("r1".to_owned()),
            tenant: None,
            model: "openai:gpt-5.2".to_owned(),
            kind,
            usage: Usage {
                input_tokens: 100,
                output_tokens: 10,
                cache_read_tokens: 25,
                ..Usage::default()
            },
            cost: cost.map(Cost::from_picodollars),
        }
    }

    #[test]
    fn totals_count_summaries_and_unpriced_calls_apart() {
        let records = [
            record("a", 0, CallKind::Turn, Some(5)),
            record("a", 1, CallKind::Summary, Some(7)),
            record("b", 2, CallKind::Turn, None),
        ];
        let totals = UsageTotals::of(&records);
        assert_eq!(totals.calls, 3);
        assert_eq!(totals.summary_calls, 1);
        assert_eq!(totals.unpriced_calls, 1);
        assert_eq!(totals.cost, Cost::from_picodollars(12));
        assert_eq!(totals.usage.input_tokens, 300);
        assert!((totals.cached_share() - 0.25).abs() < 1e-9);
    }

    #[test]
    fn groups_by_agent_and_by_utc_day() {
        let day = 86_400_000;
        let records = [
            record("b", 0, CallKind::Turn, Some(1)),
            record("a", day + 5, CallKind::Turn, Some(2)),
            record("a", day + 6, CallKind::Turn, Some(3)),
        ];
        let by_agent = group_totals(&records, UsageGroup::Agent);
        assert_eq!(by_agent.len(), 2);
        assert_eq!(by_agent[0].0, "a");
        assert_eq!(by_agent[0].1.cost, Cost::from_picodollars(5));
        let by_day = group_totals(&records, UsageGroup::Day);
        let days: Vec<&str> = by_day.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(days, ["1970-01-01", "1970-01-02"]);
        assert_eq!("tenant".parse::<UsageGroup>(), Ok(UsageGroup::Tenant));
        assert!("week".parse::<UsageGroup>().is_err());
    }

    #[test]
    fn a_filter_matches_on_every_condition_given() {
        let one = record("a", 10, CallKind::Turn, None);
        assert!(UsageFilter::all().matches(&one));
        assert!(UsageFilter::thread("a", "main").matches(&one));
        assert!(!UsageFilter::thread("a", "other").matches(&one));
        assert!(UsageFilter::request("r1").with_since(10).matches(&one));
        assert!(!UsageFilter::request("r1").with_before(10).matches(&one));
        assert!(!UsageFilter::tenant("t").matches(&one));
    }
}
