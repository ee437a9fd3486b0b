//! One `motet` process at a time on a thread: a command that asks on a thread (`run`, each
//! question of `chat`, `resume`) holds an operating-system lock on a file for that thread, beside
//! the store (`<store>.locks/<hash of the thread id>.lock`; for a server store, under this
//! user's cache folder: [`crate::db::Db::lock`]), until its answer is in. A second
//! process asking on the same thread meanwhile is refused at once, before it writes anything —
//! two of them used to answer on one thread together, and the second one's model saw the first
//! one's unanswered question. The lock dies with its process, so a `motet` killed in the middle
//! of a request leaves nothing to clean up: the next command (`resume`) may go on at once.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use crate::error::CliError;

/// A held lock on one thread; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct ThreadLock {
    _file: File,
}

impl ThreadLock {
    /// Takes the lock on `thread` whose lock file is in `folder` (made if missing), without
    /// waiting.
    ///
    /// # Errors
    /// [`CliError::ThreadBusy`] when another process holds it; [`CliError::Io`] when the lock
    /// file cannot be made.
    pub fn acquire(folder: &Path, thread: &str) -> Result<Self, CliError> {
        let path = lock_path(folder, thread);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).map_err(|source| CliError::Io {
                what: if folder.exists() && !folder.is_dir() {
                    format!(
                        "{} is a file, where motet keeps its thread locks (a folder): move it \
                         away",
                        folder.display()
                    )
                } else {
                    format!("cannot create {}", folder.display())
                },
                source,
            })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| CliError::Io {
                what: format!("cannot open {}", path.display()),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(TryLockError::WouldBlock) => Err(CliError::ThreadBusy {
                thread: thread.to_owned(),
            }),
            Err(TryLockError::Error(source)) => Err(CliError::Io {
                what: format!("cannot lock {}", path.display()),
                source,
            }),
        }
    }
}

/// The lock file of `thread`: named by a hash, so any thread id (slashes, control characters,
/// 64 KiB of it) makes a plain file name. FNV-1a, fixed forever, so every version of motet
/// finds the same file.
fn lock_path(folder: &Path, thread: &str) -> PathBuf {
    folder.join(format!("{:016x}.lock", fnv1a(thread.as_bytes())))
}

/// FNV-1a of `bytes` (64 bits).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_thread_is_refused_and_free_again_once_dropped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join("motet.db.locks");
        let held = ThreadLock::acquire(&db, "cli/notes").unwrap_or_else(|e| panic!("{e}"));
        // Another open file description, as another process has: refused.
        assert!(matches!(
            ThreadLock::acquire(&db, "cli/notes"),
            Err(CliError::ThreadBusy { thread }) if thread == "cli/notes"
        ));
        // Other threads are free.
        let other = ThreadLock::acquire(&db, "cli/other");
        assert!(other.is_ok());
        drop(held);
        assert!(ThreadLock::acquire(&db, "cli/notes").is_ok());
    }

    #[test]
    fn a_file_where_the_lock_folder_goes_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("motet.db.locks");
        std::fs::write(&folder, "not a folder").unwrap();
        let Err(error) = ThreadLock::acquire(&folder, "cli/t") else {
            panic!("locked inside a file");
        };
        assert!(
            error
                .to_string()
                .contains("is a file, where motet keeps its thread locks"),
            "{error}"
        );
    }

    #[test]
    fn any_thread_id_makes_a_plain_file_name_in_the_folder() {
        let db = Path::new("/data/motet.db.locks");
        for id in ["cli/a/b", "cli/\u{1b}]0;x\u{7}", &"x".repeat(70_000)] {
            let path = lock_path(db, id);
            assert_eq!(path.parent(), Some(Path::new("/data/motet.db.locks")));
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            assert_eq!(name.len(), 21, "{name}");
        }
        assert_ne!(lock_path(db, "cli/a"), lock_path(db, "cli/b"));
    }
}
