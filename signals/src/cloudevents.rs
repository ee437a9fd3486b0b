//! CloudEvents 1.0.2 as written, for envelopes that come from elsewhere: the attribute formats
//! the spec requires (RFC 3339 times, RFC 2046 media types, URIs) and the value types an
//! extension may have. Each check names the attribute it rejects.

use jiff::Timestamp;
use serde_json::Value;

use crate::SignalError;

fn invalid(name: &str, reason: impl Into<String>) -> SignalError {
    SignalError::InvalidAttribute {
        name: name.to_owned(),
        reason: reason.into(),
    }
}

/// `time`: an RFC 3339 `date-time` — `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, seconds required,
/// every field in range (a leap second `:60` allowed), `T` and `Z` in either case — read as
/// the instant it names.
///
/// # Errors
/// [`SignalError::InvalidAttribute`] naming `time` and what is wrong.
pub(crate) fn time(text: &str) -> Result<Timestamp, SignalError> {
    let bad = |reason: &str| {
        invalid(
            "time",
            format!("`{text}` is not an RFC 3339 date-time: {reason}"),
        )
    };
    let b = text.as_bytes();
    let digits = |from: usize, to: usize| -> Option<u32> {
        let part = b.get(from..to)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let (Some(_year), Some(month), Some(day)) = (digits(0, 4), digits(5, 7), digits(8, 10)) else {
        return Err(bad("expected the date as YYYY-MM-DD"));
    };
    if !at(4, b'-') || !at(7, b'-') {
        return Err(bad("expected the date as YYYY-MM-DD"));
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(bad("month or day out of range"));
    }
    if !matches!(b.get(10), Some(b'T' | b't')) {
        return Err(bad("expected `T` between date and time"));
    }
    let (Some(hour), Some(minute)) = (digits(11, 13), digits(14, 16)) else {
        return Err(bad("expected the time as HH:MM:SS"));
    };
    if !at(13, b':') || !at(16, b':') {
        return Err(bad("expected the time as HH:MM:SS (seconds are required)"));
    }
    let Some(second) = digits(17, 19) else {
        return Err(bad("expected the time as HH:MM:SS (seconds are required)"));
    };
    if hour > 23 || minute > 59 || second > 60 {
        return Err(bad("hour, minute or second out of range"));
    }
    let mut i = 19;
    if at(i, b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return Err(bad("a `.` must be followed by digits"));
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => {}
        Some(b'+' | b'-') => {
            let (Some(oh), Some(om)) = (digits(i + 1, i + 3), digits(i + 4, i + 6)) else {
                return Err(bad("expected the offset as ±HH:MM"));
            };
            if !at(i + 3, b':') || i + 6 != b.len() {
                return Err(bad("expected the offset as ±HH:MM"));
            }
            if oh > 23 || om > 59 {
                return Err(bad("offset out of range"));
            }
        }
        _ => return Err(bad("expected `Z` or an offset ±HH:MM at the end")),
    }
    text.parse::<Timestamp>().map_err(|e| bad(&e.to_string()))
}

/// RFC 2045 `token` characters: visible ASCII except the tspecials.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?=".contains(&b))
}

/// `datacontenttype`: an RFC 2046 media type, `type/subtype` and `; name=value` parameters
/// (values a token or a quoted string).
///
/// # Errors
/// [`SignalError::InvalidAttribute`] naming `datacontenttype`.
pub(crate) fn media_type(text: &str) -> Result<(), SignalError> {
    let bad = |reason: &str| {
        invalid(
            "datacontenttype",
            format!("`{text}` is not an RFC 2046 media type: {reason}"),
        )
    };
    let mut parts = split_parameters(text).ok_or_else(|| bad("an unterminated quoted string"))?;
    let essence = parts.remove(0);
    let Some((kind, subtype)) = essence.trim().split_once('/') else {
        return Err(bad("expected type/subtype"));
    };
    if !is_token(kind) || !is_token(subtype) {
        return Err(bad("type and subtype must be tokens"));
    }
    for parameter in parts {
        let Some((name, value)) = parameter.trim().split_once('=') else {
            return Err(bad("a parameter must be name=value"));
        };
        let quoted = value.len() >= 2 && value.starts_with('"') && value.ends_with('"');
        if !is_token(name) || !(quoted || is_token(value)) {
            return Err(bad(
                "a parameter's name must be a token, its value a token or quoted",
            ));
        }
    }
    Ok(())
}

/// `text` split at the `;` outside quoted strings; `None` for an unterminated quote.
fn split_parameters(text: &str) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ';' if !quoted => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if quoted {
        return None;
    }
    parts.push(&text[start..]);
    Some(parts)
}

/// No whitespace or control characters: what no URI or URI reference holds.
fn clean(text: &str) -> bool {
    !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `dataschema`: an absolute URI (RFC 3986: a scheme, `:`, the rest).
///
/// # Errors
/// [`SignalError::InvalidAttribute`] naming `dataschema`.
pub(crate) fn uri(name: &str, text: &str) -> Result<(), SignalError> {
    let scheme = text.split_once(':').map(|(scheme, _)| scheme);
    let valid_scheme = scheme.is_some_and(|s| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if !valid_scheme || !clean(text) {
        return Err(invalid(
            name,
            format!("`{text}` is not an absolute URI (scheme:rest, no spaces)"),
        ));
    }
    Ok(())
}

/// `source`: a URI reference (RFC 3986), which holds no whitespace or control characters.
///
/// # Errors
/// [`SignalError::InvalidAttribute`] naming `source`.
pub(crate) fn uri_reference(name: &str, text: &str) -> Result<(), SignalError> {
    if !clean(text) {
        return Err(invalid(
            name,
            format!("`{text}` is not a URI reference (it holds whitespace or control characters)"),
        ));
    }
    Ok(())
}

/// An extension's value: one of the CloudEvents types as the JSON format writes them — a
/// string, a boolean, or an integer within 32 bits; never an object, an array or a fraction.
///
/// # Errors
/// [`SignalError::InvalidAttribute`] naming the extension.
pub(crate) fn extension_value(name: &str, value: &Value) -> Result<(), SignalError> {
    let fits = match value {
        Value::String(_) | Value::Bool(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        _ => false,
    };
    if !fits {
        return Err(invalid(
            name,
            format!("an extension is a string, a boolean or a 32-bit integer, not {value}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc_3339_as_written() {
        for good in [
            "2024-01-01T00:00:00Z",
            "2024-01-01t00:00:00z",
            "2024-01-01T00:00:00.123456789Z",
            "2024-01-01T00:00:00-00:00",
            "2024-01-01T23:59:59+23:59",
            "2016-12-31T23:59:60Z",
        ] {
            assert!(time(good).is_ok(), "{good}");
        }
        for bad in [
            "2024-01-01T00:00Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00+25:00",
            "2024-01-01T00:00:00+0100",
            "20240101T000000Z",
            "2024-01-01T24:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-02-30T00:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00Zjunk",
            "",
        ] {
            let err = time(bad).unwrap_err();
            assert!(
                matches!(&err, SignalError::InvalidAttribute { name, .. } if name == "time"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn media_types_are_rfc_2046() {
        for good in [
            "application/json",
            "text/html; charset=utf-8",
            "text/plain;charset=\"utf-8\"",
            "application/cloudevents+json",
            "multipart/mixed; boundary=\"a;b\"",
        ] {
            assert!(media_type(good).is_ok(), "{good}");
        }
        for bad in [
            "json",
            "application/",
            "/json",
            "application/json; charset",
            "text/plain; charset=\"utf-8",
            "text /plain",
            "a/b/c",
        ] {
            assert!(media_type(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn uris_and_extension_values() {
        assert!(uri("dataschema", "https://example.com/schema.json").is_ok());
        assert!(uri("dataschema", "urn:motet:x").is_ok());
        for bad in ["schema.json", "1http://x", "http://a b", ":x"] {
            assert!(uri("dataschema", bad).is_err(), "{bad}");
        }
        assert!(uri_reference("source", "/agents/a").is_ok());
        assert!(uri_reference("source", "a\nb").is_err());
        for good in [
            serde_json::json!("x"),
            serde_json::json!(true),
            serde_json::json!(i32::MAX),
        ] {
            assert!(extension_value("e", &good).is_ok(), "{good}");
        }
        for bad in [
            serde_json::json!({"a": 1}),
            serde_json::json!([1]),
            serde_json::json!(1.5),
            serde_json::json!(i64::from(i32::MAX) + 1),
        ] {
            assert!(extension_value("e", &bad).is_err(), "{bad}");
        }
    }
}
