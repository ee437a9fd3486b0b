//! Shaping what a tool returns into what the model reads: size limits and panic messages.

use std::any::Any;

/// Cuts `text` to at most `max_bytes` bytes at a character boundary and appends a marker that
/// tells the model how much it is seeing, e.g. `\n[truncated: 100 of 5000 bytes shown]`.
/// Text within the limit is returned unchanged.
pub(crate) fn truncate(mut text: String, max_bytes: usize) -> String {
    let total = text.len();
    if total <= max_bytes {
        return text;
    }
    let mut cut = max_bytes;
    // A UTF-8 character is at most 4 bytes, so this walks back at most 3 steps.
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!("\n[truncated: {cut} of {total} bytes shown]"));
    text
}

/// The message a panic was raised with, when it is a string (it nearly always is).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&'static str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "(no message)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_within_the_limit_is_unchanged() {
        assert_eq!(truncate("hello".to_owned(), 5), "hello");
        assert_eq!(truncate(String::new(), 0), "");
    }

    #[test]
    fn long_ascii_is_cut_at_the_limit_with_a_marker() {
        let out = truncate("abcdefghij".to_owned(), 4);
        assert_eq!(out, "abcd\n[truncated: 4 of 10 bytes shown]");
    }

    #[test]
    fn a_cut_inside_a_character_moves_back_to_its_start() {
        // "é" is 2 bytes, "€" is 3, "𝄞" is 4: every limit that falls inside one of them must
        // keep the text valid and never show more than the limit.
        let text = "aé€𝄞z";
        for max in 0..text.len() {
            let out = truncate(text.to_owned(), max);
            let (shown, marker) = out.split_once("\n[truncated: ").unwrap();
            assert!(
                shown.len() <= max,
                "limit {max}: showed {} bytes",
                shown.len()
            );
            assert!(text.starts_with(shown));
            assert!(max - shown.len() < 4);
            assert_eq!(
                marker,
                format!("{} of {} bytes shown]", shown.len(), text.len())
            );
        }
    }

    #[test]
    fn panic_payloads_of_both_string_kinds_are_read() {
        let s: Box<dyn Any + Send> = Box::new("static");
        assert_eq!(panic_message(s.as_ref()), "static");
        let s: Box<dyn Any + Send> = Box::new(format!("owned {}", 1));
        assert_eq!(panic_message(s.as_ref()), "owned 1");
        let s: Box<dyn Any + Send> = Box::new(7_u8);
        assert_eq!(panic_message(s.as_ref()), "(no message)");
    }
}
