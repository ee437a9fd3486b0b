//! Server tool names as motet tool names (`^[a-zA-Z0-9_-]{1,64}$`).

use crate::config::is_name_text;

/// The motet name of the server tool `remote`: the prefix, then the tool's name with each
/// character motet does not allow (a `.`, a `/`, a space, anything not ASCII) replaced by `_`.
///
/// # Errors
/// Why the name cannot be used: empty, or longer than 64 bytes once prefixed.
pub(crate) fn motet_name(prefix: Option<&str>, remote: &str) -> Result<String, String> {
    if remote.is_empty() {
        return Err("the server gave it an empty name".into());
    }
    let mut name = prefix.unwrap_or_default().to_owned();
    if is_name_text(remote) {
        name.push_str(remote);
    } else {
        name.extend(remote.chars().map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        }));
    }
    if name.len() > 64 {
        return Err(format!(
            "`{name}` is {} bytes long; motet tool names are at most 64",
            name.len()
        ));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_mapped() {
        assert_eq!(
            motet_name(Some("fs_"), "read-file"),
            Ok("fs_read-file".into())
        );
        assert_eq!(motet_name(None, "read-file"), Ok("read-file".into()));
        assert_eq!(motet_name(Some("s_"), "a.b/c d"), Ok("s_a_b_c_d".into()));
        assert_eq!(motet_name(Some("s_"), "héllo"), Ok("s_h_llo".into()));
    }

    #[test]
    fn names_that_cannot_fit_are_refused() {
        assert!(motet_name(Some("s_"), "").is_err());
        assert_eq!(motet_name(None, &"a".repeat(64)).map(|n| n.len()), Ok(64));
        assert!(motet_name(Some("s_"), &"a".repeat(63)).is_err());
    }
}
