//! Text from models, tools and the store, made safe to print: control characters are shown,
//! not obeyed.
//!
//! A model's answer, a tool result or a thread id may hold terminal control sequences: OSC 52
//! (`ESC ] 52 ; c ; ... BEL`) writes the user's clipboard, OSC 0 sets the window title, CSI
//! sequences move the cursor and recolour or hide text, and bidirectional overrides (U+202E)
//! make text read differently from what it is. Printed raw to a terminal, the terminal obeys
//! them. Like `ls` (which shows control characters in a file name as `?` on a terminal and
//! passes them through to a pipe) the CLI escapes model text on a terminal and writes it
//! exactly into a file or pipe, or with `--raw`; thread ids and error messages are always
//! escaped, since they are labels, not content. An escaped character is shown as Rust writes
//! it, `\u{1b}`.

use std::borrow::Cow;

/// Which characters [`escape`] leaves as they are, besides printable ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Newlines and tabs: the layout of an answer or a message.
    Layout,
    /// Nothing: a label (a thread id) stays on one line.
    Nothing,
}

/// `text` with every character a terminal would obey instead of showing replaced by its
/// escape (`\u{1b}`): C0 controls (except newline and tab with [`Keep::Layout`]), DEL, C1
/// controls and the bidirectional embeddings, overrides and isolates (U+202A..U+202E,
/// U+2066..U+2069). Text without any comes back borrowed.
pub fn escape(text: &str, keep: Keep) -> Cow<'_, str> {
    if !text.chars().any(|c| obeyed(c, keep)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if obeyed(c, keep) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether a terminal acts on `c` rather than showing it.
fn obeyed(c: char, keep: Keep) -> bool {
    match c {
        '\n' | '\t' => keep == Keep::Nothing,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// A thread id or another label: escaped, on one line.
pub fn label(text: &str) -> Cow<'_, str> {
    escape(text, Keep::Nothing)
}

/// An error or status message: escaped, its lines kept.
pub fn message(text: &str) -> Cow<'_, str> {
    escape(text, Keep::Layout)
}

/// JSON text with the characters [`escape`] shows written as JSON escapes (`\u001b`): the same
/// document (a JSON parser reads the same strings back), safe on a terminal. serde_json escapes
/// C0 controls itself, but not DEL, C1 controls or bidirectional overrides; those can only
/// occur inside strings, where `\uXXXX` means the same character.
pub fn json(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| obeyed(c, Keep::Layout)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if obeyed(c, Keep::Layout) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// How model text (answers, stored entries) reaches standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Control characters shown as escapes: standard output is a terminal.
    Escaped,
    /// The exact text: a file or a pipe, or `--raw`.
    Raw,
}

impl Mode {
    /// Escaped on a `terminal` unless `raw` was asked for; exact text otherwise, so
    /// `motet run ... > answer.txt` keeps every byte.
    pub fn choose(terminal: bool, raw: bool) -> Self {
        if terminal && !raw {
            Self::Escaped
        } else {
            Self::Raw
        }
    }

    /// [`Mode::choose`] for this process's standard output.
    pub fn for_stdout(raw: bool) -> Self {
        use std::io::IsTerminal;
        Self::choose(std::io::stdout().is_terminal(), raw)
    }

    /// Model text as this mode prints it: newlines and tabs kept either way.
    pub fn text(self, text: &str) -> Cow<'_, str> {
        match self {
            Self::Escaped => escape(text, Keep::Layout),
            Self::Raw => Cow::Borrowed(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_terminal_would_obey_is_shown() {
        let cases = [
            // OSC 52: write the clipboard.
            ("\x1b]52;c;cm0gLXJm\x07", r"\u{1b}]52;c;cm0gLXJm\u{7}"),
            // OSC 0: the window title, ended by ST.
            ("\x1b]0;pwned\x1b\\", r"\u{1b}]0;pwned\u{1b}\"),
            // CSI: colour, and erase the line.
            ("\x1b[31mred\x1b[2K", r"\u{1b}[31mred\u{1b}[2K"),
            // C1 CSI, DEL, NUL, a carriage return that would overwrite the line.
            (
                "a\u{9b}31mb\u{7f}c\0d\re",
                r"a\u{9b}31mb\u{7f}c\u{0}d\u{d}e",
            ),
            // Bidirectional override and isolate.
            ("x\u{202e}gnp.exe\u{2066}", r"x\u{202e}gnp.exe\u{2066}"),
        ];
        for (raw, shown) in cases {
            assert_eq!(escape(raw, Keep::Layout), shown, "{raw:?}");
            assert_eq!(label(raw), shown, "{raw:?}");
            assert_eq!(Mode::Escaped.text(raw), shown, "{raw:?}");
            assert_eq!(Mode::Raw.text(raw), raw);
        }
    }

    #[test]
    fn layout_is_kept_in_text_and_escaped_in_labels() {
        let text = "line one\n\tline two";
        assert_eq!(message(text), text);
        assert_eq!(label(text), r"line one\u{a}\u{9}line two");
    }

    #[test]
    fn plain_text_comes_back_untouched() {
        for text in [
            "",
            "6 * 7 is 42.",
            "naïve café 日本語 🙂",
            "שלום \u{200f}עולם",
            "a\\u{1b}",
        ] {
            assert!(
                matches!(escape(text, Keep::Nothing), Cow::Borrowed(_)),
                "{text}"
            );
            assert!(matches!(json(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn json_stays_the_same_document() {
        let answer = "hi\x1b]52;c;eA==\x07 \u{9b}2J \u{202e}abc \u{7f}\n";
        let text = serde_json::json!({ "answer": answer }).to_string();
        let safe = json(&text);
        assert!(!safe.chars().any(|c| obeyed(c, Keep::Layout)), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["answer"], answer);
    }

    #[test]
    fn escaped_on_a_terminal_exact_elsewhere() {
        assert_eq!(Mode::choose(true, false), Mode::Escaped);
        assert_eq!(Mode::choose(true, true), Mode::Raw);
        assert_eq!(Mode::choose(false, false), Mode::Raw);
        assert_eq!(Mode::choose(false, true), Mode::Raw);
    }
}
