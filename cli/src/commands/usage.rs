//! `motet usage`: the usage ledger's totals by agent, model, UTC day or tenant — calls, tokens,
//! the cached share of input, and cost at the prices of the day each call was made.

use super::out;
use motet::runtime::store::{UsageFilter, UsageGroup, UsageRecord, UsageTotals, group_totals};

use crate::db::Db;
use crate::error::CliError;
use crate::escape;

/// Reads `--since`: a UTC day (`2026-11-01`) or an RFC 3339 time (`2026-11-01T12:00:00Z`),
/// as Unix milliseconds.
///
/// # Errors
/// [`CliError::BadFlag`] for anything else.
pub fn since(text: &str) -> Result<u64, CliError> {
    let bad = || CliError::BadFlag {
        flag: "--since".to_owned(),
        message: format!(
            "`{}` is neither a UTC day (2026-11-01) nor an RFC 3339 time (2026-11-01T12:00:00Z)",
            escape::label(text)
        ),
    };
    let at = if let Ok(time) = text.parse::<jiff::Timestamp>() {
        time
    } else {
        let day: jiff::civil::Date = text.parse().map_err(|_| bad())?;
        day.to_zoned(jiff::tz::TimeZone::UTC)
            .map_err(|_| bad())?
            .timestamp()
    };
    u64::try_from(at.as_millisecond()).map_err(|_| bad())
}

/// Prints the ledger's totals grouped `by`, from `since` (Unix ms) on, as a table or as JSON.
///
/// # Errors
/// [`CliError::Store`] when the store cannot be opened or read.
pub async fn report(
    db: &Db,
    by: UsageGroup,
    since: Option<u64>,
    json: bool,
) -> Result<(), CliError> {
    let filter = UsageFilter {
        since,
        ..UsageFilter::default()
    };
    let records: Vec<UsageRecord> = match db.read().await? {
        Some(store) => store.usage_records(&filter).await?,
        None => Vec::new(),
    };
    let groups = group_totals(&records, by);
    let total = UsageTotals::of(&records);
    if json {
        let value = serde_json::json!({
            "by": by.as_str(),
            "since_ms": since,
            "groups": groups.iter().map(|(key, t)| totals_json(Some(key), t)).collect::<Vec<_>>(),
            "total": totals_json(None, &total),
        });
        return out(&format!("{}\n", escape::json(&value.to_string())));
    }
    if records.is_empty() {
        return out(&format!("no LLM calls recorded in {db}\n"));
    }
    out(&table(by, &groups, &total))
}

fn totals_json(key: Option<&str>, t: &UsageTotals) -> serde_json::Value {
    serde_json::json!({
        "key": key,
        "calls": t.calls,
        "summary_calls": t.summary_calls,
        "input_tokens": t.usage.input_tokens,
        "cache_read_tokens": t.usage.cache_read_tokens,
        "cache_write_tokens": t.usage.cache_write_tokens,
        "output_tokens": t.usage.output_tokens,
        "reasoning_tokens": t.usage.reasoning_tokens,
        "cached_share": t.cached_share(),
        "cost_usd": t.cost.usd(),
        "cost_picodollars": t.cost.picodollars(),
        "unpriced_calls": t.unpriced_calls,
    })
}

/// The table: one row per group and a total row; unpriced calls said below it.
fn table(by: UsageGroup, groups: &[(String, UsageTotals)], total: &UsageTotals) -> String {
    const MAX_WIDTH: usize = 48;
    let keys: Vec<String> = groups
        .iter()
        .map(|(k, _)| escape::label(k).into_owned())
        .collect();
    let head = by.as_str().to_uppercase();
    let width = keys
        .iter()
        .map(String::len)
        .chain([head.len(), "TOTAL".len()])
        .max()
        .unwrap_or(0)
        .min(MAX_WIDTH);
    let row = |key: &str, t: &UsageTotals| {
        format!(
            "{key:<width$}  {:>6}  {:>12}  {:>7}  {:>12}  {:>12}  {:>12}\n",
            t.calls,
            t.usage.input_tokens,
            format!("{:.1}%", t.cached_share() * 100.0),
            t.usage.output_tokens,
            t.usage.reasoning_tokens,
            t.cost.to_string(),
        )
    };
    let mut text = format!(
        "{head:<width$}  {:>6}  {:>12}  {:>7}  {:>12}  {:>12}  {:>12}\n",
        "CALLS", "INPUT", "CACHED", "OUTPUT", "REASONING", "COST"
    );
    for (key, (_, totals)) in keys.iter().zip(groups) {
        text.push_str(&row(key, totals));
    }
    text.push_str(&row("TOTAL", total));
    if total.unpriced_calls > 0 {
        text.push_str(&format!(
            "unpriced calls: {} (their models are not in the price table; counted as $0)\n",
            total.unpriced_calls
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_a_day_or_a_time_and_refuses_the_rest() {
        assert_eq!(since("1970-01-02").ok(), Some(86_400_000));
        assert_eq!(since("1970-01-01T00:00:01Z").ok(), Some(1_000));
        assert!(since("yesterday").is_err());
        assert!(since("1960-01-01").is_err());
    }
}
