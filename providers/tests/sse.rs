//! The SSE decoder against the WHATWG event-stream rules, and a property: any way of cutting
//! a stream into reads yields the events of feeding it whole.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet_providers::ProviderError;
use motet_providers::sse::{SseDecoder, SseEvent};
use motet_providers::testing::wire::split_at;
use proptest::prelude::*;

fn decode_chunks(chunks: &[&[u8]]) -> Result<Vec<SseEvent>, ProviderError> {
    decode_capped(chunks, motet_providers::sse::DEFAULT_MAX_EVENT_BYTES)
}

fn decode_capped(chunks: &[&[u8]], cap: usize) -> Result<Vec<SseEvent>, ProviderError> {
    let mut decoder = SseDecoder::with_max_event_bytes(cap);
    let mut out = Vec::new();
    for chunk in chunks {
        decoder.push(chunk, &mut out)?;
    }
    decoder.finish(&mut out)?;
    Ok(out)
}

fn decode(bytes: &[u8]) -> Vec<SseEvent> {
    decode_chunks(&[bytes]).unwrap()
}

fn event(name: &str, data: &str) -> SseEvent {
    SseEvent {
        event: name.into(),
        data: data.into(),
        id: None,
    }
}

#[test]
fn lf_cr_and_crlf_line_ends() {
    for body in [
        "event: a\ndata: 1\n\ndata: 2\n\n",
        "event: a\rdata: 1\r\rdata: 2\r\r",
        "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n",
    ] {
        assert_eq!(
            decode(body.as_bytes()),
            [event("a", "1"), event("", "2")],
            "{body:?}"
        );
    }
}

#[test]
fn a_crlf_split_across_reads_is_one_line_end() {
    let events = decode_chunks(&[b"data: 1\r", b"\n\r", b"\ndata: 2\r\n\r\n"]).unwrap();
    assert_eq!(events, [event("", "1"), event("", "2")]);
    // An empty read between the CR and the LF changes nothing.
    let events = decode_chunks(&[b"data: 1\r", b"", b"\ndata: 2\n\n"]).unwrap();
    assert_eq!(events, [event("", "1\n2")]);
}

#[test]
fn comments_fields_without_colon_and_the_one_leading_space() {
    let body = b": keep-alive\ndata\ndata:  two spaces\nretry: 10\nunknown: x\nid: 7\n\n";
    let events = decode(body);
    assert_eq!(
        events,
        [SseEvent {
            event: String::new(),
            data: "\n two spaces".into(),
            id: Some("7".into()),
        }]
    );
}

#[test]
fn multi_line_data_is_joined_with_newlines_and_empty_events_are_not_dispatched() {
    let events = decode(b"event: only-a-name\n\ndata: a\ndata: b\n\n\n\n");
    assert_eq!(events, [event("", "a\nb")]);
}

#[test]
fn a_byte_order_mark_is_skipped_even_when_split() {
    assert_eq!(decode(b"\xEF\xBB\xBFdata: x\n\n"), [event("", "x")]);
    let events = decode_chunks(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]).unwrap();
    assert_eq!(events, [event("", "x")]);
}

#[test]
fn utf8_split_across_reads_and_invalid_utf8() {
    let text = "data: héllo → 世界\n\n".as_bytes();
    for cut in 1..text.len() {
        let events = decode_chunks(&[&text[..cut], &text[cut..]]).unwrap();
        assert_eq!(events, [event("", "héllo → 世界")], "cut at {cut}");
    }
    let err = decode_chunks(&[b"data: \xFF\xFE\n\n"]).unwrap_err();
    assert!(matches!(err, ProviderError::Protocol { .. }));
}

#[test]
fn the_end_of_the_stream() {
    // A last event whose lines ended but without the blank line is delivered.
    assert_eq!(decode(b"data: last\n"), [event("", "last")]);
    // A line cut off in the middle is not.
    assert_eq!(decode(b"data: 1\n\ndata: cut"), [event("", "1")]);
}

#[test]
fn an_event_over_the_size_cap_is_an_error_not_unbounded_memory() {
    let mut decoder = SseDecoder::with_max_event_bytes(1024);
    let mut out = Vec::new();
    let long = vec![b'x'; 600];
    decoder.push(b"data: ", &mut out).unwrap();
    decoder.push(&long, &mut out).unwrap();
    let err = decoder.push(&long, &mut out).unwrap_err();
    assert!(matches!(err, ProviderError::Protocol { .. }));
    // Across lines of one event too.
    let mut decoder = SseDecoder::with_max_event_bytes(1024);
    let line = [b"data: ".as_slice(), &long, b"\n"].concat();
    decoder.push(&line, &mut out).unwrap();
    assert!(decoder.push(&line, &mut out).is_err());
}

#[test]
fn a_long_line_in_many_reads() {
    let payload = "y".repeat(1 << 20);
    let body = format!("data: {payload}\n\n");
    let chunks: Vec<&[u8]> = body.as_bytes().chunks(1000).collect();
    let events = decode_chunks(&chunks).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data.len(), 1 << 20);
}

fn stream_strategy() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        "[a-z]{0,5}".prop_map(|v| format!("data: {v}")),
        "[a-zé世]{0,3}".prop_map(|v| format!("data:{v}")),
        "[a-z]{1,4}".prop_map(|v| format!("event: {v}")),
        Just(": comment".to_owned()),
        Just(String::new()),
        Just("id: 1".to_owned()),
    ];
    let end = prop_oneof![Just("\n"), Just("\r"), Just("\r\n")];
    proptest::collection::vec((line, end), 0..30).prop_map(|lines| {
        lines
            .into_iter()
            .flat_map(|(l, e)| format!("{l}{e}").into_bytes())
            .collect()
    })
}

#[test]
fn a_line_over_the_cap_is_refused_even_when_it_arrives_in_one_read() {
    let body = format!("event: {}\ndata: x\n\n", "e".repeat(100));
    let whole = decode_capped(&[body.as_bytes()], 64);
    assert!(
        matches!(whole, Err(ProviderError::Protocol { .. })),
        "{whole:?}"
    );
    let (a, b) = body.as_bytes().split_at(20);
    assert_eq!(decode_capped(&[a, b], 64), whole);
}

fn cut<'a>(body: &'a [u8], cuts: &[prop::sample::Index]) -> Vec<&'a [u8]> {
    split_at(body, cuts.iter().map(|i| i.index(body.len() + 1)))
}

proptest! {
    #[test]
    fn any_chunking_gives_the_same_events(
        body in stream_strategy(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let whole = decode_chunks(&[&body]);
        prop_assert_eq!(decode_chunks(&cut(&body, &cuts)), whole);
    }

    /// Under a cap small enough to be hit, whether an event is refused does not depend on how
    /// its bytes were cut into reads either.
    #[test]
    fn any_chunking_gives_the_same_events_or_the_same_refusal_under_a_small_cap(
        body in stream_strategy(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
        cap in 4usize..40,
    ) {
        let whole = decode_capped(&[&body], cap);
        prop_assert_eq!(decode_capped(&cut(&body, &cuts), cap), whole);
    }
}
