//! `sse`: how fast a streamed response is parsed and assembled, beside the floor of parsing its
//! JSON payloads with serde_json alone.
//!
//! - `fixtures`: every recorded stream of the four dialects (tests/fixtures of motet-providers,
//!   embedded at build time) through the whole offline path — SSE framing, dialect decoder,
//!   block assembler — fed in 1,500-byte reads like a socket; repeated to about 64 MB. MB/s
//!   and SSE events/s.
//! - `serde_floor`: `serde_json::from_slice::<Value>` over the same events' `data:` payloads,
//!   the same number of times: what parsing the JSON alone costs; `serde_floor_ignored` the
//!   same into `IgnoredAny` (validating the JSON, building nothing).
//! - `long_line`: one Chat Completions chunk whose `data:` line is 8 MB of text, delivered in
//!   1,024 reads, through the whole path.
//! - `eventsource_stream_long_line`: the same bytes through eventsource-stream 0.2 (SSE framing
//!   only), the parser the design card first named, and its time at a quarter of the size
//!   (`growth_4x_size`, reads of the same size: 4 for a linear parser, 16 for a quadratic one); see docs/sse.md.

use std::convert::Infallible;
use std::hint::black_box;
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use motet_providers::{Dialect, transcript};

use crate::report::{Report, round2};

macro_rules! fixture {
    ($dialect:expr, $path:literal) => {
        (
            $dialect,
            include_bytes!(concat!("../../../providers/tests/fixtures/", $path)).as_slice(),
        )
    };
}

/// The recordings that assemble into a response (the error and non-stream ones are left out).
const FIXTURES: &[(Dialect, &[u8])] = &[
    fixture!(
        Dialect::OpenAiChat,
        "openai-chat/parallel-tool-calls-gpt-4o.sse"
    ),
    fixture!(Dialect::OpenAiChat, "openai-chat/text-usage-gpt-5.sse"),
    fixture!(Dialect::OpenAiChat, "llama-cpp/chat_parallel_stream.sse"),
    fixture!(Dialect::OpenAiChat, "llama-cpp/chat_auto_text_stream.sse"),
    fixture!(
        Dialect::OpenAiResponses,
        "openai-responses/reasoning-summary-encrypted-function-call-gpt-5.sse"
    ),
    fixture!(
        Dialect::OpenAiResponses,
        "openai-responses/reasoning-summary-encrypted-text-gpt-5.sse"
    ),
    fixture!(
        Dialect::OpenAiResponses,
        "openai-responses/parallel-function-calls-gpt-5.sse"
    ),
    fixture!(
        Dialect::OpenAiResponses,
        "openai-responses/text-gpt-4o-mini.sse"
    ),
    fixture!(
        Dialect::Anthropic,
        "anthropic/parallel-tool-use-sonnet-4.sse"
    ),
    fixture!(
        Dialect::Anthropic,
        "anthropic/thinking-signature-tool-use-sonnet-4.sse"
    ),
    fixture!(
        Dialect::Anthropic,
        "anthropic/thinking-signature-text-sonnet-4.sse"
    ),
    fixture!(Dialect::Anthropic, "llama-cpp/messages_parallel_stream.sse"),
    fixture!(
        Dialect::Gemini,
        "gemini/parallel-function-calls-thought-signature-gemini-3.1-pro.sse"
    ),
    fixture!(
        Dialect::Gemini,
        "gemini/parallel-function-calls-single-chunk-gemini-2.5-flash.sse"
    ),
    fixture!(
        Dialect::Gemini,
        "gemini/thought-part-function-call-gemini-2.5-pro.sse"
    ),
    fixture!(Dialect::Gemini, "gemini/text-usage-gemini-2.0-flash.sse"),
];

const READ: usize = 1_500;
const TARGET_BYTES: usize = 64 << 20;
const LONG_LINE: usize = 8 << 20;
const LONG_READS: usize = 1_024;

fn mb_per_s(bytes: usize, elapsed: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / elapsed.as_secs_f64().max(1e-9)
}

/// The `data:` payloads of a recording (what the serde floor parses).
fn payloads(body: &[u8]) -> Vec<&[u8]> {
    body.split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data:"))
        .map(|d| d.trim_ascii())
        .filter(|d| d.first() == Some(&b'{'))
        .collect()
}

fn fixtures() -> Vec<Report> {
    let total: usize = FIXTURES.iter().map(|(_, body)| body.len()).sum();
    let rounds = TARGET_BYTES.div_ceil(total);
    let events: usize = FIXTURES
        .iter()
        .map(|(_, body)| payloads(body).len())
        .sum::<usize>()
        * rounds;
    let bytes = total * rounds;
    // Warm up, and check every recording assembles.
    for (dialect, body) in FIXTURES {
        if transcript::assemble(*dialect, body).is_err() {
            return Vec::new();
        }
    }
    let start = Instant::now();
    for _ in 0..rounds {
        for (dialect, body) in FIXTURES {
            let _ = black_box(transcript::assemble_chunked(*dialect, body.chunks(READ)));
        }
    }
    let ours = start.elapsed();

    let all_payloads: Vec<&[u8]> = FIXTURES.iter().flat_map(|(_, b)| payloads(b)).collect();
    let payload_bytes: usize = all_payloads.iter().map(|p| p.len()).sum::<usize>() * rounds;
    let start = Instant::now();
    for _ in 0..rounds {
        for p in &all_payloads {
            let _ = black_box(serde_json::from_slice::<serde_json::Value>(p));
        }
    }
    let floor = start.elapsed();
    let start = Instant::now();
    for _ in 0..rounds {
        for p in &all_payloads {
            let _ = black_box(serde_json::from_slice::<serde::de::IgnoredAny>(p));
        }
    }
    let floor_ignored = start.elapsed();
    vec![
        Report::new("sse", "fixtures", events as u64, ours)
            .with("mb_per_s", round2(mb_per_s(bytes, ours)))
            .with("events_per_s", (events as f64 / ours.as_secs_f64()).round())
            .with("bytes", bytes as u64)
            .with(
                "vs_serde_floor",
                round2(ours.as_secs_f64() / floor.as_secs_f64()),
            ),
        Report::new("sse", "serde_floor", events as u64, floor)
            .with("mb_per_s", round2(mb_per_s(payload_bytes, floor)))
            .with(
                "events_per_s",
                (events as f64 / floor.as_secs_f64()).round(),
            )
            .with("bytes", payload_bytes as u64),
        Report::new("sse", "serde_floor_ignored", events as u64, floor_ignored)
            .with("mb_per_s", round2(mb_per_s(payload_bytes, floor_ignored)))
            .with(
                "events_per_s",
                (events as f64 / floor_ignored.as_secs_f64()).round(),
            )
            .with("bytes", payload_bytes as u64),
    ]
}

/// One Chat Completions chunk whose content is `size` bytes of text, then the end of the turn.
fn long_line(size: usize) -> Vec<u8> {
    let text = "abcdefgh".repeat(size / 8);
    let chunk = serde_json::json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let end = serde_json::json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    format!("data: {chunk}\n\ndata: {end}\n\ndata: [DONE]\n\n").into_bytes()
}

fn long_lines() -> Vec<Report> {
    let body = long_line(LONG_LINE);
    let read = body.len().div_ceil(LONG_READS);
    let start = Instant::now();
    let ok = transcript::assemble_chunked(Dialect::OpenAiChat, body.chunks(read)).is_ok();
    let ours = start.elapsed();

    let (parsed, theirs) = eventsource_stream(&body, LONG_READS);
    // A quarter of the size in reads of the same size (a quarter as many): a linear parser
    // takes a quarter of the time, one that rescans its buffer on every read a sixteenth.
    let quarter = long_line(LONG_LINE / 4);
    let (_, theirs_quarter) = eventsource_stream(&quarter, LONG_READS / 4);
    vec![
        Report::new("sse", "long_line", 1, ours)
            .with("mb_per_s", round2(mb_per_s(body.len(), ours)))
            .with("bytes", body.len() as u64)
            .with("reads", LONG_READS as u64)
            .with("assembled", ok),
        Report::new("sse", "eventsource_stream_long_line", 1, theirs)
            .with("mb_per_s", round2(mb_per_s(body.len(), theirs)))
            .with("bytes", body.len() as u64)
            .with("reads", LONG_READS as u64)
            .with("events", parsed as u64)
            .with("vs_ours", round2(theirs.as_secs_f64() / ours.as_secs_f64()))
            .with("ms_at_2mb", round2(theirs_quarter.as_secs_f64() * 1000.0))
            .with(
                "growth_4x_size",
                round2(theirs.as_secs_f64() / theirs_quarter.as_secs_f64()),
            ),
    ]
}

/// The events eventsource-stream finds in `body` delivered in `reads` pieces, and the time.
fn eventsource_stream(body: &[u8], reads: usize) -> (usize, Duration) {
    let chunks: Vec<Result<bytes::Bytes, Infallible>> = body
        .chunks(body.len().div_ceil(reads))
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let start = Instant::now();
    let parsed = futures::executor::block_on(
        futures::stream::iter(chunks)
            .eventsource()
            .filter_map(|e| async move { e.ok() })
            .count(),
    );
    (parsed, start.elapsed())
}

/// Parse + assemble throughput, and the long-line worst case, beside their floors.
pub(crate) fn run() -> Vec<Report> {
    let mut reports = fixtures();
    reports.extend(long_lines());
    reports
}
