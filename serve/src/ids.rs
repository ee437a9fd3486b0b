//! Ids as paths and clients give them, checked before anything is looked up.

use crate::error::ApiError;

/// A thread id as a path gives it: not empty, no `/`, at most 200 bytes.
pub(crate) fn thread_id(thread: &str) -> Result<&str, ApiError> {
    if thread.is_empty() || thread.len() > 200 || thread.contains('/') || thread.trim() != thread {
        return Err(ApiError::BadRequest(format!(
            "`{}` is not a thread id (1 to 200 bytes, no `/`, no surrounding spaces)",
            thread.chars().take(64).collect::<String>()
        )));
    }
    Ok(thread)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_id_is_checked() {
        assert_eq!(thread_id("t-1"), Ok("t-1"));
        assert!(thread_id("").is_err());
        assert!(thread_id("a/b").is_err());
        assert!(thread_id(" a").is_err());
        assert!(thread_id(&"x".repeat(201)).is_err());
    }
}
