//! Cron expressions and what a timer owes after downtime: pure, no clock and no time zone
//! database (the caller passes both in).
//!
//! A [`CronExpr`] is the crontab language: five fields (minute, hour, day of month, month, day of
//! week) or six with seconds first, each `*`, `?` (day fields), a number or name, a range `a-b`,
//! a step `*/s`, `a-b/s` or `a/s`, or a list of those; and the macros `@yearly` (`@annually`),
//! `@monthly`, `@weekly`, `@daily` (`@midnight`) and `@hourly`. Months and days of the week take
//! their English three-letter names; Sunday is 0 or 7. As in Vixie cron, when both day fields are
//! restricted (neither starts with `*` nor is `?`) a day matches either of them, otherwise both.
//!
//! Occurrences are local times in a time zone. A local time that a daylight-saving change skips
//! fires as far after the change as it was after the change's start (02:30 fires at 03:30 when
//! clocks jump from 02:00 to 03:00); one that happens twice fires once, the first time.
//!
//! [`due`] decides what a timer fires when it is looked at — on time, late after a restart, or
//! long after its agent was last active — under a [`Misfire`] policy.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest expression accepted, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 256;

/// How far ahead an occurrence is looked for: a year and a leap day's worth of years (a
/// `29 Feb` job waits up to eight years across a century that skips its leap year).
const SEARCH_YEARS: i16 = 9;

/// One of the expression's fields, to say which one was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CronField {
    /// Seconds (0–59), the first of six fields.
    Second,
    /// Minutes (0–59).
    Minute,
    /// Hours (0–23).
    Hour,
    /// Day of the month (1–31).
    DayOfMonth,
    /// Month (1–12 or JAN–DEC).
    Month,
    /// Day of the week (0–7, Sunday 0 or 7, or SUN–SAT).
    DayOfWeek,
}

impl CronField {
    fn name(self) -> &'static str {
        match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::DayOfMonth => "day of month",
            Self::Month => "month",
            Self::DayOfWeek => "day of week",
        }
    }

    /// The smallest and largest value the field takes.
    fn bounds(self) -> (u8, u8) {
        match self {
            Self::Second | Self::Minute => (0, 59),
            Self::Hour => (0, 23),
            Self::DayOfMonth => (1, 31),
            Self::Month => (1, 12),
            Self::DayOfWeek => (0, 7),
        }
    }

    fn names(self) -> &'static [&'static str] {
        match self {
            Self::Month => &[
                "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
            ],
            Self::DayOfWeek => &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
            _ => &[],
        }
    }
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an expression was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// Longer than [`MAX_EXPRESSION_BYTES`].
    #[error("cron expression is {bytes} bytes long; at most {MAX_EXPRESSION_BYTES} are accepted")]
    TooLong {
        /// Its length.
        bytes: usize,
    },
    /// Not five or six fields, nor a known macro.
    #[error(
        "cron expression {expression:?} has {found} fields; expected 5 (minute hour day-of-month month day-of-week), 6 (seconds first) or a macro such as @daily"
    )]
    FieldCount {
        /// The expression.
        expression: String,
        /// How many fields it has.
        found: usize,
    },
    /// A field that does not parse or is out of range.
    #[error("cron expression {expression:?}: {field} field {text:?}: {reason}")]
    Field {
        /// The expression.
        expression: String,
        /// Which field.
        field: CronField,
        /// The field's text.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Parses, but names a day no month has (`0 0 31 2 *`).
    #[error("cron expression {expression:?} never fires: no month it names has the days it names")]
    NeverFires {
        /// The expression.
        expression: String,
    },
}

/// A parsed cron expression; it serializes as the text it was parsed from.
#[derive(Clone, PartialEq, Eq)]
pub struct CronExpr {
    text: String,
    seconds: u64,
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    /// Days of the week, bit 0 Sunday.
    weekdays: u64,
    /// Both day fields are restricted: a day matching either matches.
    either_day: bool,
}

impl fmt::Debug for CronExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CronExpr({:?})", self.text)
    }
}

impl fmt::Display for CronExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for CronExpr {
    type Err = CronError;

    fn from_str(text: &str) -> Result<Self, CronError> {
        CronExpr::parse(text)
    }
}

impl Serialize for CronExpr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for CronExpr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        CronExpr::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl CronExpr {
    /// Parses `text` (see the module's documentation for the language).
    pub fn parse(text: &str) -> Result<Self, CronError> {
        if text.len() > MAX_EXPRESSION_BYTES {
            return Err(CronError::TooLong { bytes: text.len() });
        }
        let trimmed = text.trim();
        let expanded = match trimmed.to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            _ => trimmed,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let (second, rest) = match fields.len() {
            5 => ("0", &fields[..]),
            6 => (fields[0], &fields[1..]),
            found => {
                return Err(CronError::FieldCount {
                    expression: text.to_owned(),
                    found,
                });
            }
        };
        let field = |kind: CronField, part: &str| parse_field(text, kind, part);
        let mut weekdays = field(CronField::DayOfWeek, rest[4])?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays & !(1 << 7)) | 1;
        }
        let unrestricted = |part: &str| part.starts_with('*') || part == "?";
        let expr = Self {
            text: trimmed.to_owned(),
            seconds: field(CronField::Second, second)?,
            minutes: field(CronField::Minute, rest[0])?,
            hours: field(CronField::Hour, rest[1])?,
            days: field(CronField::DayOfMonth, rest[2])?,
            months: field(CronField::Month, rest[3])?,
            weekdays,
            either_day: !unrestricted(rest[2]) && !unrestricted(rest[4]),
        };
        if !expr.either_day && !unrestricted(rest[2]) && !expr.some_month_has_a_day() {
            return Err(CronError::NeverFires {
                expression: text.to_owned(),
            });
        }
        Ok(expr)
    }

    /// Whether a month the expression names has a day of the month it names (29 February
    /// counts: it comes in leap years).
    fn some_month_has_a_day(&self) -> bool {
        const LONGEST: [u8; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        (1..=12u8).any(|month| {
            self.months & (1 << month) != 0
                && (1..=LONGEST[usize::from(month - 1)]).any(|day| self.days & (1 << day) != 0)
        })
    }

    /// The first occurrence strictly after `after`, in `zone`; `None` only when none comes in
    /// the next nine years (which a parsed expression cannot ask for) or past the end of time.
    pub fn next_after(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        let mut from = zone
            .to_datetime(after)
            .checked_add(jiff::Span::new().seconds(1))
            .ok()?;
        from = from.with().subsec_nanosecond(0).build().ok()?;
        let limit = from.year().saturating_add(SEARCH_YEARS);
        // A local time in the second pass of a repeated hour maps to its first pass, before
        // `after`: such candidates are passed over (an hour's worth at most).
        loop {
            let local = self.next_local(from, limit)?;
            let instant = zone.to_ambiguous_timestamp(local).compatible().ok()?;
            if instant > after {
                return Some(instant);
            }
            from = local.checked_add(jiff::Span::new().seconds(1)).ok()?;
        }
    }

    /// The first local time at or after `from` the fields match, before the year `limit`.
    fn next_local(&self, mut from: DateTime, limit: i16) -> Option<DateTime> {
        loop {
            if from.year() >= limit {
                return None;
            }
            let Some(month) = next_bit(self.months, from.month() as u32) else {
                from = start_of(Date::new(from.year().checked_add(1)?, 1, 1).ok()?);
                continue;
            };
            if month != from.month() as u32 {
                from = start_of(Date::new(from.year(), month as i8, 1).ok()?);
                continue;
            }
            if !self.day_matches(from.date()) {
                from = start_of(from.date().tomorrow().ok()?);
                continue;
            }
            let Some(hour) = next_bit(self.hours, from.hour() as u32) else {
                from = start_of(from.date().tomorrow().ok()?);
                continue;
            };
            if hour != from.hour() as u32 {
                from = at(from.date(), hour, 0, 0)?;
                continue;
            }
            let Some(minute) = next_bit(self.minutes, from.minute() as u32) else {
                from = next_hour(from)?;
                continue;
            };
            if minute != from.minute() as u32 {
                from = at(from.date(), hour, minute, 0)?;
                continue;
            }
            let Some(second) = next_bit(self.seconds, from.second() as u32) else {
                from = next_minute(from)?;
                continue;
            };
            return at(from.date(), hour, minute, second);
        }
    }

    fn day_matches(&self, date: Date) -> bool {
        let by_day = self.days & (1 << date.day()) != 0;
        let by_weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.either_day {
            by_day || by_weekday
        } else {
            by_day && by_weekday
        }
    }
}

/// The smallest set bit of `mask` at or above `from`.
fn next_bit(mask: u64, from: u32) -> Option<u32> {
    if from >= 64 {
        return None;
    }
    let above = mask & (u64::MAX << from);
    (above != 0).then(|| above.trailing_zeros())
}

fn start_of(date: Date) -> DateTime {
    DateTime::from_parts(date, Time::midnight())
}

fn at(date: Date, hour: u32, minute: u32, second: u32) -> Option<DateTime> {
    let time = Time::new(
        i8::try_from(hour).ok()?,
        i8::try_from(minute).ok()?,
        i8::try_from(second).ok()?,
        0,
    )
    .ok()?;
    Some(DateTime::from_parts(date, time))
}

fn next_hour(from: DateTime) -> Option<DateTime> {
    if from.hour() == 23 {
        return Some(start_of(from.date().tomorrow().ok()?));
    }
    at(from.date(), from.hour() as u32 + 1, 0, 0)
}

fn next_minute(from: DateTime) -> Option<DateTime> {
    if from.minute() == 59 {
        return next_hour(from);
    }
    at(from.date(), from.hour() as u32, from.minute() as u32 + 1, 0)
}

/// Parses one field into a bit set of the values it names.
fn parse_field(expression: &str, field: CronField, text: &str) -> Result<u64, CronError> {
    let refuse = |reason: String| CronError::Field {
        expression: expression.to_owned(),
        field,
        text: text.to_owned(),
        reason,
    };
    let (low, high) = field.bounds();
    let mut set = 0u64;
    for item in text.split(',') {
        if item.is_empty() {
            return Err(refuse("an empty item in the list".to_owned()));
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u8 = step
                    .parse()
                    .map_err(|_| refuse(format!("step {step:?} is not a number")))?;
                if step == 0 {
                    return Err(refuse("a step of 0".to_owned()));
                }
                (range, Some(step))
            }
            None => (item, None),
        };
        let (from, to) = if range == "*" || (range == "?" && is_day_field(field)) {
            (
                low,
                if field == CronField::DayOfWeek {
                    6
                } else {
                    high
                },
            )
        } else if let Some((a, b)) = range.split_once('-') {
            (
                value(field, a).map_err(&refuse)?,
                value(field, b).map_err(&refuse)?,
            )
        } else {
            let start = value(field, range).map_err(&refuse)?;
            // `a/s` runs from a to the field's end; a bare value is just itself.
            (start, if step.is_some() { high } else { start })
        };
        if from > to {
            return Err(refuse(format!("the range {from}-{to} runs backwards")));
        }
        let step = step.unwrap_or(1);
        let mut v = from;
        while v <= to {
            set |= 1 << v;
            match v.checked_add(step) {
                Some(next) => v = next,
                None => break,
            }
        }
    }
    Ok(set)
}

fn is_day_field(field: CronField) -> bool {
    matches!(field, CronField::DayOfMonth | CronField::DayOfWeek)
}

/// One value of a field: a number in range or (months, days of the week) a name.
fn value(field: CronField, text: &str) -> Result<u8, String> {
    let (low, high) = field.bounds();
    if let Some(index) = field
        .names()
        .iter()
        .position(|name| name.eq_ignore_ascii_case(text))
    {
        let index = u8::try_from(index).map_err(|_| format!("{text:?} is out of range"))?;
        return Ok(if field == CronField::Month {
            index + 1
        } else {
            index
        });
    }
    let number: u8 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number or a name"))?;
    if number < low || number > high {
        return Err(format!("{number} is outside {low}-{high}"));
    }
    Ok(number)
}

/// What a timer does with occurrences it finds already past when it is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "policy", content = "up_to")]
pub enum Misfire {
    /// Drop them; wait for the next one.
    Skip,
    /// Fire once for all of them (the latest), then wait for the next one.
    #[default]
    FireOnce,
    /// Fire the latest `n` of them, oldest first, then wait for the next one.
    CatchUp(u32),
}

/// What a timer owes now: [`due`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The occurrences to fire now, oldest first: each on time, or missed and kept by the
    /// policy.
    pub fire: Vec<Timestamp>,
    /// How many past occurrences the policy dropped; past [`COUNT_LIMIT`] a lower bound (so
    /// many are not walked one by one).
    pub dropped: u64,
    /// The occurrence to wait for next, after `now`.
    pub next: Option<Timestamp>,
}

/// How many occurrences [`due`] walks through at most to count the dropped ones.
pub const COUNT_LIMIT: u64 = 100_000;

/// What a cron timer waiting for the occurrence `pending` owes at `now`: an occurrence at most
/// `grace` old is on time and fires; older ones missed their time and fire as `misfire` says.
pub fn due(
    expr: &CronExpr,
    zone: &TimeZone,
    pending: Timestamp,
    now: Timestamp,
    misfire: Misfire,
    grace: Duration,
) -> Due {
    if pending > now {
        return Due {
            fire: Vec::new(),
            dropped: 0,
            next: Some(pending),
        };
    }
    let grace = jiff::SignedDuration::try_from(grace).unwrap_or(jiff::SignedDuration::MAX);
    let on_time_from = now.checked_sub(grace).unwrap_or(Timestamp::MIN);
    let keep = match misfire {
        Misfire::Skip => 0,
        Misfire::FireOnce => 1,
        Misfire::CatchUp(n) => u64::from(n),
    };
    // The latest `keep` missed occurrences, and the count of all missed ones (bounded).
    let mut missed_kept: std::collections::VecDeque<Timestamp> = std::collections::VecDeque::new();
    let mut missed = 0u64;
    let mut on_time = Vec::new();
    let mut occurrence = Some(pending);
    let mut walked = 0u64;
    while let Some(at) = occurrence.filter(|at| *at <= now) {
        if at >= on_time_from {
            on_time.push(at);
        } else {
            missed += 1;
            if keep > 0 {
                if missed_kept.len() as u64 == keep {
                    missed_kept.pop_front();
                }
                missed_kept.push_back(at);
            }
        }
        walked += 1;
        occurrence = if walked >= COUNT_LIMIT && at < on_time_from {
            // Too many to walk: what is left of the missed ones is found from near the end.
            let tail = latest_before(expr, zone, at, on_time_from, keep);
            // Those walked over are not counted one by one: the count says "at least".
            missed = missed
                .saturating_add(COUNT_LIMIT)
                .saturating_add(tail.len() as u64);
            if !tail.is_empty() {
                missed_kept.clear();
                missed_kept.extend(
                    tail.iter()
                        .copied()
                        .skip(tail.len().saturating_sub(keep as usize)),
                );
            }
            walked = 0;
            tail.last()
                .copied()
                .or(Some(at))
                .and_then(|last| expr.next_after(last, zone))
        } else {
            expr.next_after(at, zone)
        };
    }
    let kept = missed_kept.len() as u64;
    let dropped = missed.saturating_sub(kept);
    let mut fire: Vec<Timestamp> = missed_kept.into_iter().collect();
    fire.extend(on_time);
    Due {
        fire,
        dropped,
        next: occurrence,
    }
}

/// The missed occurrences in (`after`, `before`) nearest `before`, at least `keep` of them when
/// there are that many, found by looking back from `before` in widening windows.
fn latest_before(
    expr: &CronExpr,
    zone: &TimeZone,
    after: Timestamp,
    before: Timestamp,
    keep: u64,
) -> Vec<Timestamp> {
    let mut window = jiff::SignedDuration::from_secs(60);
    loop {
        let start = before
            .checked_sub(window)
            .unwrap_or(Timestamp::MIN)
            .max(after);
        let mut found = Vec::new();
        let mut at = expr.next_after(start, zone);
        while let Some(t) = at.filter(|t| *t < before) {
            found.push(t);
            if found.len() as u64 > COUNT_LIMIT {
                break;
            }
            at = expr.next_after(t, zone);
        }
        if found.len() as u64 >= keep.max(1) || start == after {
            return found;
        }
        window = window.checked_mul(8).unwrap_or(jiff::SignedDuration::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> Timestamp {
        text.parse().unwrap_or_else(|e| unreachable!("{text}: {e}"))
    }

    fn cron(text: &str) -> CronExpr {
        CronExpr::parse(text).unwrap_or_else(|e| unreachable!("{text}: {e}"))
    }

    fn berlin() -> TimeZone {
        TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap_or_else(|e| unreachable!("{e}"))
    }

    fn following(expr: &str, zone: &TimeZone, from: &str, n: usize) -> Vec<String> {
        let expr = cron(expr);
        let mut at = utc(from);
        (0..n)
            .map(|_| {
                at = expr
                    .next_after(at, zone)
                    .unwrap_or_else(|| unreachable!("no next"));
                at.to_zoned(zone.clone()).strftime("%F %T %Z").to_string()
            })
            .collect()
    }

    #[test]
    fn every_fifteen_minutes() {
        assert_eq!(
            following("*/15 * * * *", &TimeZone::UTC, "2026-11-28T10:07:00Z", 3),
            [
                "2026-11-28 10:15:00 UTC",
                "2026-11-28 10:30:00 UTC",
                "2026-11-28 10:45:00 UTC"
            ]
        );
    }

    #[test]
    fn an_occurrence_exactly_at_after_is_not_next() {
        assert_eq!(
            following("0 * * * *", &TimeZone::UTC, "2026-11-28T10:00:00Z", 1),
            ["2026-11-28 11:00:00 UTC"]
        );
    }

    #[test]
    fn seconds_field_and_carries_across_a_year() {
        assert_eq!(
            following(
                "30 59 23 31 12 *",
                &TimeZone::UTC,
                "2026-06-01T00:00:00Z",
                2
            ),
            ["2026-12-31 23:59:30 UTC", "2027-12-31 23:59:30 UTC"]
        );
    }

    #[test]
    fn names_ranges_and_lists() {
        // Weekdays at 09:00 and 17:30 in March and October.
        let e = "0 30 9,17 * MAR,oct MON-FRI";
        assert!(CronExpr::parse(e).is_ok());
        assert_eq!(
            following(
                "0 9 * jan-feb mon-fri",
                &TimeZone::UTC,
                "2027-01-01T12:00:00Z",
                2
            ),
            // 1 January 2027 is a Friday, past 09:00; the next weekday is Monday the 4th.
            ["2027-01-04 09:00:00 UTC", "2027-01-05 09:00:00 UTC"]
        );
    }

    #[test]
    fn sunday_is_zero_or_seven() {
        assert_eq!(cron("0 0 * * 7"), {
            let mut zero = cron("0 0 * * 0");
            zero.text = "0 0 * * 7".to_owned();
            zero
        });
    }

    #[test]
    fn both_day_fields_restricted_match_either() {
        // The 13th, or any Friday (Vixie cron's rule).
        assert_eq!(
            following("0 0 13 * FRI", &TimeZone::UTC, "2026-11-01T00:00:00Z", 3),
            [
                "2026-11-06 00:00:00 UTC",
                "2026-11-13 00:00:00 UTC",
                "2026-11-20 00:00:00 UTC"
            ]
        );
        // A starred day field makes it "both": every day of November that is a Friday.
        assert_eq!(
            following("0 0 */1 11 FRI", &TimeZone::UTC, "2026-11-07T00:00:00Z", 1),
            ["2026-11-13 00:00:00 UTC"]
        );
    }

    #[test]
    fn leap_day_waits_for_its_year() {
        assert_eq!(
            following("0 0 29 2 *", &TimeZone::UTC, "2097-01-01T00:00:00Z", 1),
            // 2100 is no leap year.
            ["2104-02-29 00:00:00 UTC"]
        );
    }

    #[test]
    fn macros() {
        assert_eq!(
            cron("@daily").next_after(utc("2026-11-28T10:00:00Z"), &TimeZone::UTC),
            Some(utc("2026-11-29T00:00:00Z"))
        );
        assert_eq!(
            cron("@hourly").next_after(utc("2026-11-28T10:00:00Z"), &TimeZone::UTC),
            Some(utc("2026-11-28T11:00:00Z"))
        );
        assert_eq!(
            cron("@weekly").next_after(utc("2026-11-28T10:00:00Z"), &TimeZone::UTC),
            Some(utc("2026-11-29T00:00:00Z"))
        );
        assert_eq!(
            cron("@yearly").next_after(utc("2026-11-28T10:00:00Z"), &TimeZone::UTC),
            Some(utc("2027-01-01T00:00:00Z"))
        );
    }

    #[test]
    fn a_skipped_local_time_fires_after_the_change_once() {
        // Berlin jumps from 02:00 to 03:00 on 29 March 2026.
        assert_eq!(
            following("0 30 2 * * *", &berlin(), "2026-03-28T12:00:00Z", 2),
            ["2026-03-29 03:30:00 CEST", "2026-03-30 02:30:00 CEST"]
        );
        assert_eq!(
            following("0 0,30 2-3 * * *", &berlin(), "2026-03-29T00:00:00Z", 3),
            [
                "2026-03-29 03:00:00 CEST",
                "2026-03-29 03:30:00 CEST",
                "2026-03-30 02:00:00 CEST"
            ]
        );
    }

    #[test]
    fn a_repeated_local_time_fires_once() {
        // Berlin goes back from 03:00 CEST to 02:00 CET on 25 October 2026.
        assert_eq!(
            following("0 30 2 * * *", &berlin(), "2026-10-24T12:00:00Z", 2),
            ["2026-10-25 02:30:00 CEST", "2026-10-26 02:30:00 CET"]
        );
        // Looked at from inside the second pass, the next is after it.
        assert_eq!(
            following("0 */30 * * * *", &berlin(), "2026-10-25T01:10:00Z", 2),
            ["2026-10-25 03:00:00 CET", "2026-10-25 03:30:00 CET"]
        );
    }

    #[test]
    fn refusals_are_typed() {
        let field = |e: &str| match CronExpr::parse(e) {
            Err(CronError::Field { field, .. }) => Some(field),
            _ => None,
        };
        assert_eq!(field("60 * * * *"), Some(CronField::Minute));
        assert_eq!(field("* 24 * * *"), Some(CronField::Hour));
        assert_eq!(field("* * 0 * *"), Some(CronField::DayOfMonth));
        assert_eq!(field("* * * 13 *"), Some(CronField::Month));
        assert_eq!(field("* * * * 8"), Some(CronField::DayOfWeek));
        assert_eq!(field("*/0 * * * *"), Some(CronField::Minute));
        assert_eq!(field("5-1 * * * *"), Some(CronField::Minute));
        assert_eq!(field("1,,2 * * * *"), Some(CronField::Minute));
        assert_eq!(field("? * * * *"), Some(CronField::Minute));
        assert_eq!(field("* * * FOO *"), Some(CronField::Month));
        assert!(matches!(
            CronExpr::parse("* * *"),
            Err(CronError::FieldCount { found: 3, .. })
        ));
        assert!(matches!(
            CronExpr::parse(""),
            Err(CronError::FieldCount { found: 0, .. })
        ));
        assert!(matches!(
            CronExpr::parse("0 0 31 2,4 *"),
            Err(CronError::NeverFires { .. })
        ));
        assert!(matches!(
            CronExpr::parse(&"*".repeat(300)),
            Err(CronError::TooLong { bytes: 300 })
        ));
        // 31 February never comes, but with a weekday named as well it fires on that weekday.
        assert!(CronExpr::parse("0 0 31 2 MON").is_ok());
    }

    #[test]
    fn serializes_as_its_text() {
        let e = cron("*/5 9-17 * * mon-fri");
        let json = serde_json::to_string(&e).unwrap_or_default();
        assert_eq!(json, "\"*/5 9-17 * * mon-fri\"");
        let back: CronExpr = serde_json::from_str(&json).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(back, e);
        assert!(serde_json::from_str::<CronExpr>("\"61 * * * *\"").is_err());
    }

    fn minutely() -> CronExpr {
        cron("* * * * *")
    }

    #[test]
    fn an_occurrence_within_grace_fires_and_the_next_is_after_now() {
        let due = due(
            &minutely(),
            &TimeZone::UTC,
            utc("2026-11-28T10:00:00Z"),
            utc("2026-11-28T10:00:00.040Z"),
            Misfire::Skip,
            Duration::from_secs(1),
        );
        assert_eq!(due.fire, [utc("2026-11-28T10:00:00Z")]);
        assert_eq!(due.dropped, 0);
        assert_eq!(due.next, Some(utc("2026-11-28T10:01:00Z")));
    }

    #[test]
    fn nothing_is_due_before_the_pending_occurrence() {
        let due = due(
            &minutely(),
            &TimeZone::UTC,
            utc("2026-11-28T10:00:00Z"),
            utc("2026-11-28T09:59:59Z"),
            Misfire::CatchUp(3),
            Duration::from_secs(1),
        );
        assert!(due.fire.is_empty());
        assert_eq!(due.next, Some(utc("2026-11-28T10:00:00Z")));
    }

    #[test]
    fn each_misfire_policy_after_ten_missed_minutes() {
        // Down from 10:00 to 10:09:30: 10:00 through 10:09 were missed.
        let run = |misfire| {
            due(
                &minutely(),
                &TimeZone::UTC,
                utc("2026-11-28T10:00:00Z"),
                utc("2026-11-28T10:09:30Z"),
                misfire,
                Duration::from_secs(1),
            )
        };
        let skip = run(Misfire::Skip);
        assert_eq!((skip.fire.len(), skip.dropped), (0, 10));
        let once = run(Misfire::FireOnce);
        assert_eq!(once.fire, [utc("2026-11-28T10:09:00Z")]);
        assert_eq!(once.dropped, 9);
        let three = run(Misfire::CatchUp(3));
        assert_eq!(
            three.fire,
            [
                utc("2026-11-28T10:07:00Z"),
                utc("2026-11-28T10:08:00Z"),
                utc("2026-11-28T10:09:00Z")
            ]
        );
        assert_eq!(three.dropped, 7);
        let all = run(Misfire::CatchUp(50));
        assert_eq!((all.fire.len(), all.dropped), (10, 0));
        for policy in [skip, once, three, all] {
            assert_eq!(policy.next, Some(utc("2026-11-28T10:10:00Z")));
        }
    }

    #[test]
    fn a_missed_occurrence_and_an_on_time_one_both_fire_in_order() {
        let due = due(
            &cron("*/30 * * * * *"),
            &TimeZone::UTC,
            utc("2026-11-28T10:00:00Z"),
            utc("2026-11-28T10:00:30.5Z"),
            Misfire::FireOnce,
            Duration::from_secs(1),
        );
        assert_eq!(
            due.fire,
            [utc("2026-11-28T10:00:00Z"), utc("2026-11-28T10:00:30Z")]
        );
        assert_eq!(due.next, Some(utc("2026-11-28T10:01:00Z")));
    }

    #[test]
    fn years_of_downtime_of_a_secondly_timer_stay_bounded() {
        let due = due(
            &cron("* * * * * *"),
            &TimeZone::UTC,
            utc("2020-01-01T00:00:00Z"),
            utc("2026-11-28T10:00:00Z"),
            Misfire::CatchUp(2),
            Duration::ZERO,
        );
        assert_eq!(
            due.fire,
            [
                utc("2026-11-28T09:59:58Z"),
                utc("2026-11-28T09:59:59Z"),
                utc("2026-11-28T10:00:00Z")
            ]
        );
        assert!(due.dropped >= COUNT_LIMIT);
        assert_eq!(due.next, Some(utc("2026-11-28T10:00:01Z")));
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    /// A field drawn from the shapes the language has.
    fn field(low: u8, high: u8) -> impl Strategy<Value = String> {
        prop_oneof![
            Just("*".to_owned()),
            (low..=high).prop_map(|v| v.to_string()),
            (low..=high, low..=high).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
            (1u8..=7).prop_map(|s| format!("*/{s}")),
            (low..=high, low..=high).prop_map(|(a, b)| format!("{a},{b}")),
        ]
    }

    /// Whether the minute starting at `t` (UTC) matches, by the definition, field by field.
    fn matches(expr: &CronExpr, t: DateTime) -> bool {
        expr.minutes & (1 << t.minute()) != 0
            && expr.hours & (1 << t.hour()) != 0
            && expr.months & (1 << t.month()) != 0
            && expr.day_matches(t.date())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// In UTC, the next occurrence is a matching minute and no minute between is one.
        #[test]
        fn next_is_the_first_matching_minute(
            minute in field(0, 59), hour in field(0, 23), day in field(1, 28),
            weekday in field(0, 6), start in 0i64..(4 * 365 * 86_400),
        ) {
            let text = format!("{minute} {hour} {day} * {weekday}");
            let expr = CronExpr::parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let after = Timestamp::from_second(1_767_225_600 + start)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let next = expr.next_after(after, &TimeZone::UTC);
            let next = next.ok_or_else(|| TestCaseError::fail("no next"))?;
            prop_assert!(next > after);
            let local = TimeZone::UTC.to_datetime(next);
            prop_assert_eq!(local.second(), 0);
            prop_assert!(matches(&expr, local), "{} at {}", text, local);
            // No matching minute between (walk at most 40 days of minutes).
            let mut t = TimeZone::UTC.to_datetime(after);
            t = t.with().second(0).subsec_nanosecond(0).build().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let minute_step = jiff::Span::new().minutes(1);
            for _ in 0..(40 * 1440) {
                t = t.checked_add(minute_step).map_err(|e| TestCaseError::fail(e.to_string()))?;
                if t >= local {
                    break;
                }
                prop_assert!(!matches(&expr, t), "{} skipped {} (next said {})", text, t, local);
            }
        }
    }
}
