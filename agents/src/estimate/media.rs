//! Token figures for what is not text: images, documents and audio in a user message or a
//! tool result. Text is left to the [`TokenEstimator`](super::TokenEstimator); a media part
//! adds a fixed, documented figure that errs high, so a projection's budget is not overrun.
//!
//! | part | tokens | why |
//! |---|---|---|
//! | image | [`IMAGE_TOKENS`] | Anthropic's largest resized image (about 1,600); OpenAI's high detail 1024×1024 is 765, Gemini's is 258 per 768-pixel tile |
//! | PDF | [`PDF_PAGE_TOKENS`] per page | Anthropic bills 1,500–3,000 per page (text plus the page's image); pages are counted from the file's `/Type /Page` objects |
//! | other document, or one at a URL | [`PDF_PAGE_TOKENS`] | one page |
//! | audio | 1 per [`AUDIO_BYTES_PER_TOKEN`] bytes, at least 32 | Gemini counts 32 tokens a second; 16 kHz 16-bit mono WAV is 32,000 bytes a second |

use motet_directives::{MediaSource, Part};

/// Tokens counted for one image, whatever its size.
pub const IMAGE_TOKENS: u32 = 1_600;
/// Tokens counted for one page of a PDF.
pub const PDF_PAGE_TOKENS: u32 = 2_000;
/// Bytes of audio counted as one token.
pub const AUDIO_BYTES_PER_TOKEN: usize = 1_000;

/// Tokens the media parts among `parts` count (text parts count 0: the estimator counts them).
pub fn media_tokens<'a>(parts: impl IntoIterator<Item = &'a Part>) -> u32 {
    parts
        .into_iter()
        .map(part_tokens)
        .fold(0, u32::saturating_add)
}

fn part_tokens(part: &Part) -> u32 {
    match part {
        Part::Text { .. } => 0,
        Part::Image { .. } => IMAGE_TOKENS,
        Part::Document { source, .. } => match source {
            MediaSource::Bytes { data, .. } => {
                PDF_PAGE_TOKENS.saturating_mul(pdf_pages(data.as_bytes()).max(1))
            }
            MediaSource::Url { .. } => PDF_PAGE_TOKENS,
        },
        Part::Audio { source } => {
            let tokens = source.byte_len() / AUDIO_BYTES_PER_TOKEN;
            u32::try_from(tokens).unwrap_or(u32::MAX).max(32)
        }
    }
}

/// Pages of a PDF, counted as its `/Type /Page` objects (not `/Type /Pages`, the page tree);
/// 0 for bytes that are not a PDF or name no page.
fn pdf_pages(bytes: &[u8]) -> u32 {
    if !bytes.starts_with(b"%PDF") {
        return 0;
    }
    let mut pages = 0_u32;
    for needle in [&b"/Type /Page"[..], &b"/Type/Page"[..]] {
        let mut at = 0;
        while let Some(found) = find(&bytes[at..], needle) {
            let end = at + found + needle.len();
            if bytes.get(end) != Some(&b's') {
                pages = pages.saturating_add(1);
            }
            at = end;
        }
    }
    pages
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_counts_its_figure_and_text_counts_nothing() {
        let pdf = b"%PDF-1.4 /Type /Pages /Type /Page x /Type/Page y".to_vec();
        let parts = [
            Part::text("hello"),
            Part::image_url("https://example.com/a.png"),
            Part::image_bytes("image/png", vec![0_u8; 10]),
        ];
        assert_eq!(media_tokens(&parts), 2 * IMAGE_TOKENS);
        assert_eq!(
            media_tokens(&[Part::document_bytes("application/pdf", pdf)]),
            2 * PDF_PAGE_TOKENS
        );
        assert_eq!(
            media_tokens(&[Part::document_bytes("text/plain", &b"hi"[..])]),
            PDF_PAGE_TOKENS
        );
        assert_eq!(
            media_tokens(&[Part::audio_bytes("audio/wav", vec![0_u8; 320_000])]),
            320
        );
        assert_eq!(
            media_tokens(&[Part::audio_bytes("audio/wav", vec![0_u8; 10])]),
            32
        );
    }
}
