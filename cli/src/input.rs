//! Reading what a user hands the CLI — a file, or standard input for `-` — with a size limit,
//! so `--config /dev/zero` or `transcript -` fed without end is refused instead of filling
//! memory.

use std::io::Read;
use std::path::Path;

use motet::directives::Part;

use crate::error::CliError;

/// The most `motet.toml` may hold.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The most a recorded stream for `motet transcript` may hold.
pub const MAX_TRANSCRIPT_BYTES: u64 = 256 << 20;
/// The most a question read from standard input (`motet run -`) may hold.
pub const MAX_QUESTION_BYTES: u64 = 16 << 20;

/// The most one `--image` or `--file` may hold: what the strictest provider takes in one
/// request once it is base64 (Gemini's 20 MB of inline data). A provider that takes less for
/// one part (Anthropic's 5 MB an image) says so before anything is sent.
pub const MAX_ATTACHMENT_BYTES: u64 = 15 << 20;

/// Why an input could not be read.
#[derive(Debug)]
pub enum InputError {
    /// Reading failed.
    Io(std::io::Error),
    /// It holds more than the limit (in bytes).
    TooLarge(u64),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::TooLarge(limit) => write!(f, "it holds more than {limit} bytes"),
        }
    }
}

/// The bytes of `path` (standard input for `-`), at most `limit` of them.
///
/// # Errors
/// [`InputError::Io`] when reading fails, [`InputError::TooLarge`] past `limit`.
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    let read = if path == Path::new("-") {
        std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|file| file.take(limit + 1).read_to_end(&mut bytes))
    };
    read.map_err(InputError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge(limit));
    }
    Ok(bytes)
}

/// The question `motet run` was given: the argument itself, or standard input for `-`.
///
/// # Errors
/// [`CliError::Io`] when standard input cannot be read, is too large or is not UTF-8.
pub fn question(argument: &str) -> Result<String, CliError> {
    if argument != "-" {
        return Ok(argument.to_owned());
    }
    let what = || "cannot read the question from standard input".to_owned();
    let bytes = read_capped(Path::new("-"), MAX_QUESTION_BYTES).map_err(|e| CliError::Io {
        what: what(),
        source: std::io::Error::other(e.to_string()),
    })?;
    String::from_utf8(bytes).map_err(|_| CliError::Io {
        what: what(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"),
    })
}

/// What the CLI was asked to attach: `--image` takes images only, `--file` anything it can
/// name (an image, a PDF or plain-text document, WAV or MP3 audio).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachAs {
    /// `--image`.
    Image,
    /// `--file`.
    File,
}

impl AttachAs {
    fn flag(self) -> &'static str {
        match self {
            Self::Image => "--image",
            Self::File => "--file",
        }
    }
}

/// The file at `path` as a part for the question: its media type from its first bytes (PNG,
/// JPEG, GIF, WebP, PDF, WAV, MP3), else from its extension (`.txt` as plain text), and read
/// whole, at most [`MAX_ATTACHMENT_BYTES`].
///
/// # Errors
/// [`CliError::BadFlag`] naming the flag when the file cannot be read, is too large, or is of
/// a type the CLI cannot name (or, for `--image`, is not an image).
pub fn attachment(path: &Path, like: AttachAs) -> Result<Part, CliError> {
    let flag = like.flag();
    let bad = |message: String| CliError::BadFlag {
        flag: flag.to_owned(),
        message,
    };
    let shown = path.display();
    let bytes = read_capped(path, MAX_ATTACHMENT_BYTES).map_err(|e| match e {
        InputError::TooLarge(limit) => bad(format!("{shown} holds more than {limit} bytes")),
        InputError::Io(e) => bad(format!("cannot read {shown}: {e}")),
    })?;
    let media_type = sniff(&bytes)
        .or_else(|| by_extension(path))
        .ok_or_else(|| {
            bad(format!(
                "cannot tell what {shown} is (PNG, JPEG, GIF, WebP, PDF, plain text, WAV or MP3)"
            ))
        })?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned());
    match (like, media_type.split('/').next()) {
        (_, Some("image")) => Ok(Part::image_bytes(media_type, bytes)),
        (AttachAs::Image, _) => Err(bad(format!("{shown} is {media_type}, not an image"))),
        (AttachAs::File, Some("audio")) => Ok(Part::audio_bytes(media_type, bytes)),
        (AttachAs::File, _) => {
            let part = Part::document_bytes(media_type, bytes);
            Ok(match name {
                Some(name) => part.with_name(name),
                None => part,
            })
        }
    }
}

/// The media type the first bytes of a file say it has.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let riff = |kind: &[u8]| bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(kind);
    Some(if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        "image/jpeg"
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        "image/gif"
    } else if riff(b"WEBP") {
        "image/webp"
    } else if riff(b"WAVE") {
        "audio/wav"
    } else if bytes.starts_with(b"%PDF-") {
        "application/pdf"
    } else if bytes.starts_with(b"ID3")
        || matches!(bytes, [0xff, second, ..] if second & 0xe0 == 0xe0)
    {
        "audio/mpeg"
    } else {
        return None;
    })
}

/// The media type a file's extension names, for files whose first bytes say nothing.
fn by_extension(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" | "md" => "text/plain",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use motet::directives::{MediaSource, PartKind};

    fn file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    fn media_type(part: &Part) -> &str {
        part.source()
            .and_then(MediaSource::media_type)
            .unwrap_or("")
    }

    #[test]
    fn the_first_bytes_name_the_type_whatever_the_extension() {
        let table: [(&[u8], &str, PartKind); 6] = [
            (b"\x89PNG\r\n\x1a\n....", "image/png", PartKind::Image),
            (b"\xff\xd8\xff\xe0", "image/jpeg", PartKind::Image),
            (b"RIFF\0\0\0\0WEBPVP8 ", "image/webp", PartKind::Image),
            (b"%PDF-1.7", "application/pdf", PartKind::Document),
            (b"RIFF\0\0\0\0WAVEfmt ", "audio/wav", PartKind::Audio),
            (b"ID3\x04", "audio/mpeg", PartKind::Audio),
        ];
        for (bytes, expected, kind) in table {
            let (_dir, path) = file("upload.bin", bytes);
            let part = attachment(&path, AttachAs::File).unwrap();
            assert_eq!((media_type(&part), part.kind()), (expected, kind));
        }
        let (_dir, path) = file("notes.txt", b"plain words");
        let part = attachment(&path, AttachAs::File).unwrap();
        assert_eq!(media_type(&part), "text/plain");
        assert!(matches!(part, Part::Document { name: Some(ref n), .. } if n == "notes.txt"));
    }

    #[test]
    fn an_unknown_type_a_pdf_as_an_image_and_a_missing_file_are_errors_naming_the_flag() {
        let (_dir, unknown) = file("data.bin", b"\0\x01\x02");
        let (_dir2, pdf) = file("a.pdf", b"%PDF-1.4");
        for (path, like, says) in [
            (unknown.as_path(), AttachAs::File, "cannot tell what"),
            (pdf.as_path(), AttachAs::Image, "not an image"),
            (
                Path::new("/no/such/file.png"),
                AttachAs::Image,
                "cannot read",
            ),
        ] {
            match attachment(path, like) {
                Err(CliError::BadFlag { flag, message }) => {
                    assert_eq!(flag, like.flag());
                    assert!(message.contains(says), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_file_past_the_limit_is_refused_without_reading_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.png");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_ATTACHMENT_BYTES + 1).unwrap();
        match attachment(&path, AttachAs::Image) {
            Err(CliError::BadFlag { message, .. }) => {
                assert!(message.contains("more than"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
