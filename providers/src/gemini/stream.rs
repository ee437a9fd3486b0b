//! Gemini `GenerateContentResponse` chunks into [`LlmEvent`]s.
//!
//! Each SSE event is one whole JSON chunk (the SSE decoder handles the CRLF framing). Parts of
//! the first candidate map as follows:
//! - a `thought: true` part is reasoning. Consecutive thought parts form one reasoning block
//!   (key `thought_{n}`); a thought part carrying a `thoughtSignature` closes its block with
//!   `ProviderMeta::Gemini`, and any other part closes an open block without meta.
//! - a `text` part is a `TextDelta`; its `thoughtSignature`, if any, rides on the delta (which
//!   starts a new text block, so the signature stays on the text it came with). A part holding
//!   only a signature (empty or no text) is kept as an empty text delta with the signature:
//!   dropping it would lose continuity data.
//! - a `functionCall` part is a whole call: `ToolCallStart` (with the part's signature, if any)
//!   and `ToolCallComplete` with the arguments exactly as sent. Gemini 3 gives calls an `id`;
//!   for older models ids `call_1`, `call_2`, … are made up, deterministic within the stream.
//! - any other part — `executableCode`, `codeExecutionResult` (the code execution tool, marked
//!   `thought: true` by Gemini 2.5), `inlineData`, kinds added later, or a part that cannot be
//!   read as one of the above — is an `LlmEvent::Opaque` of provider `gemini` holding the part's
//!   JSON exactly as received, in its place among the parts. Its `thoughtSignature` stays inside
//!   it: such a part is never taken for a signature-only part, so the signature is not lent to
//!   the text that follows.
//!
//! `usageMetadata` is repeated on every chunk, cumulative: each change becomes a `Usage` event.
//! Output tokens count the thinking tokens too (`candidatesTokenCount + thoughtsTokenCount`,
//! as `totalTokenCount` does), with the thinking share also reported as reasoning tokens; input
//! tokens are `promptTokenCount` (cached tokens included) plus `toolUsePromptTokenCount`.
//!
//! Gemini has no end sentinel, so [`StreamDecoder::finish`] decides: the last `finishReason`
//! becomes `Done` (`STOP` → `EndTurn`, or `ToolUse` when calls were made; `MAX_TOKENS`; the
//! safety family → `ContentFilter`; anything else verbatim), and a stream that ended without one
//! was truncated. A blocked prompt (`promptFeedback.blockReason`) is
//! [`ProviderError::ContentFiltered`].

use std::collections::{BTreeMap, HashSet};

use motet_directives::{ProviderMeta, StopReason, Usage};
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use crate::decoder::StreamDecoder;
use crate::error::ProviderError;
use crate::event::LlmEvent;
use crate::sse::SseEvent;

use super::PROVIDER;
use super::error::classify_api_error;
use super::wire::{Chunk, MODELED_PART_FIELDS, UsageMetadata, WireFunctionCall, WirePart};

/// Decodes one Gemini stream.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    started: bool,
    failed: bool,
    /// The key of the reasoning block being streamed.
    open_thought: Option<String>,
    thoughts: usize,
    /// Ids handed out to calls so far, to keep them unique.
    call_ids: HashSet<String>,
    last_usage: Option<Usage>,
    finish_reason: Option<String>,
}

impl Decoder {
    /// A decoder for a new stream.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn close_thought(&mut self, meta: Option<ProviderMeta>, out: &mut Vec<LlmEvent>) {
        if let Some(key) = self.open_thought.take() {
            out.push(LlmEvent::ReasoningComplete {
                key,
                text: None,
                meta,
            });
        }
    }

    fn thought(&mut self, part: WirePart, out: &mut Vec<LlmEvent>) {
        let key = match &self.open_thought {
            Some(key) => key.clone(),
            None => {
                self.thoughts += 1;
                let key = format!("thought_{}", self.thoughts);
                out.push(LlmEvent::ReasoningStart { key: key.clone() });
                self.open_thought = Some(key.clone());
                key
            }
        };
        if let Some(text) = part.text.filter(|text| !text.is_empty()) {
            out.push(LlmEvent::ReasoningDelta { key, delta: text });
        }
        if let Some(signature) = part.thought_signature {
            self.close_thought(Some(gemini_meta(signature)), out);
        }
    }

    fn call(&mut self, call: WireFunctionCall, signature: Option<String>, out: &mut Vec<LlmEvent>) {
        let id = self.unique_id(call.id.filter(|id| !id.is_empty()));
        let args = call
            .args
            .map_or_else(|| "{}".to_owned(), |raw| raw.get().to_owned());
        out.push(LlmEvent::ToolCallStart {
            id: id.clone(),
            name: call.name,
            meta: signature.map(gemini_meta),
        });
        out.push(LlmEvent::ToolCallComplete {
            id,
            args: Some(args),
            meta: None,
        });
    }

    /// Gemini's id when it sent one that is still free, `call_{n}` otherwise (a set, not a
    /// list: a scan per call made a stream of many calls cost the square of their number).
    fn unique_id(&mut self, given: Option<String>) -> String {
        let id = match given {
            Some(id) if !self.call_ids.contains(&id) => id,
            _ => {
                let mut n = self.call_ids.len() + 1;
                loop {
                    let candidate = format!("call_{n}");
                    if !self.call_ids.contains(&candidate) {
                        break candidate;
                    }
                    n += 1;
                }
            }
        };
        self.call_ids.insert(id.clone());
        id
    }

    /// One part, in its place: text, a thought, a call or a bare signature when it holds only
    /// fields motet reads, an [`LlmEvent::Opaque`] of the bytes Gemini sent otherwise.
    fn part(&mut self, raw: Box<RawValue>, out: &mut Vec<LlmEvent>) {
        let Some(part) = modeled(&raw) else {
            self.close_thought(None, out);
            out.push(LlmEvent::Opaque {
                provider: PROVIDER.to_owned(),
                item: Box::<str>::from(raw).into_string(),
            });
            return;
        };
        if part.thought == Some(true) {
            self.thought(part, out);
            return;
        }
        self.close_thought(None, out);
        let WirePart {
            text,
            function_call,
            thought_signature,
            ..
        } = part;
        if let Some(call) = function_call {
            self.call(call, thought_signature, out);
            return;
        }
        // Only a part with nothing but (empty) text and a signature gets here — a code part
        // carrying a signature went out opaquely above, its signature inside it — so an empty
        // delta keeps the signature without lending it to the text that follows.
        let text = text.unwrap_or_default();
        if text.is_empty() && thought_signature.is_none() {
            return;
        }
        out.push(LlmEvent::TextDelta {
            delta: text,
            meta: thought_signature.map(gemini_meta),
        });
    }

    fn usage(&mut self, metadata: &UsageMetadata, out: &mut Vec<LlmEvent>) {
        let usage = Usage {
            input_tokens: metadata
                .prompt_token_count
                .saturating_add(metadata.tool_use_prompt_token_count),
            output_tokens: metadata
                .candidates_token_count
                .saturating_add(metadata.thoughts_token_count),
            cache_read_tokens: metadata.cached_content_token_count,
            cache_write_tokens: 0,
            reasoning_tokens: metadata.thoughts_token_count,
        };
        if self.last_usage != Some(usage) {
            self.last_usage = Some(usage);
            out.push(LlmEvent::Usage { usage });
        }
    }

    fn stop_reason(&self, finish_reason: &str) -> StopReason {
        match finish_reason {
            "STOP" if !self.call_ids.is_empty() => StopReason::ToolUse,
            "STOP" => StopReason::EndTurn,
            "MAX_TOKENS" => StopReason::MaxTokens,
            "SAFETY"
            | "RECITATION"
            | "BLOCKLIST"
            | "PROHIBITED_CONTENT"
            | "SPII"
            | "IMAGE_SAFETY"
            | "IMAGE_PROHIBITED_CONTENT" => StopReason::ContentFilter,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

/// The part read as one motet models, or `None` to keep it whole.
///
/// A part holds one kind of data (`text`, `functionCall`, `executableCode`, `inlineData`, …)
/// beside metadata (`thought`, `thoughtSignature`, …). Text and calls are read whatever
/// metadata comes with them — an answer's text never disappears into an opaque block because
/// Gemini added a field to it (a field motet does not know is then not sent back). A part with
/// no data but a signature is a bare signature. Any other data kind, or a part that does not
/// read, is kept whole.
fn modeled(raw: &RawValue) -> Option<WirePart> {
    let fields: BTreeMap<String, IgnoredAny> = serde_json::from_str(raw.get()).ok()?;
    let has = |field: &str| fields.contains_key(field);
    let bare_signature = fields
        .keys()
        .all(|field| MODELED_PART_FIELDS.contains(&field.as_str()));
    if !(has("text") || has("functionCall") || bare_signature) {
        return None;
    }
    serde_json::from_str(raw.get()).ok()
}

fn gemini_meta(thought_signature: String) -> ProviderMeta {
    ProviderMeta::Gemini { thought_signature }
}

impl StreamDecoder for Decoder {
    fn decode(&mut self, event: &SseEvent, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if self.failed || data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| ProviderError::Protocol {
            message: format!("unreadable Gemini chunk: {e}"),
        })?;
        if let Some(error) = &chunk.error {
            self.failed = true;
            return Err(classify_api_error(0, error));
        }
        if !self.started {
            self.started = true;
            out.push(LlmEvent::Started {
                model: chunk.model_version.clone(),
                response_id: chunk.response_id.clone(),
            });
        }
        if let Some(reason) = chunk
            .prompt_feedback
            .as_ref()
            .and_then(|feedback| feedback.block_reason.as_deref())
        {
            self.failed = true;
            let detail = chunk
                .prompt_feedback
                .as_ref()
                .and_then(|feedback| feedback.block_reason_message.as_deref())
                .map(|message| format!(": {message}"))
                .unwrap_or_default();
            return Err(ProviderError::ContentFiltered {
                message: format!("prompt blocked ({reason}){detail}"),
            });
        }
        let Chunk {
            candidates,
            usage_metadata,
            ..
        } = chunk;
        // One candidate is requested; should several come, the first is the answer.
        let candidate = candidates
            .into_iter()
            .min_by_key(|candidate| candidate.index.unwrap_or(0));
        if let Some(candidate) = candidate {
            for part in candidate.content.into_iter().flat_map(|c| c.parts) {
                self.part(part, out);
            }
            if let Some(reason) = candidate.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        if let Some(metadata) = &usage_metadata {
            self.usage(metadata, out);
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), ProviderError> {
        if self.failed {
            return Ok(());
        }
        self.close_thought(None, out);
        let Some(reason) = &self.finish_reason else {
            return Err(ProviderError::StreamTruncated {
                reason: "the Gemini stream ended without a finishReason".to_owned(),
            });
        };
        let stop_reason = self.stop_reason(reason);
        out.push(LlmEvent::Done { stop_reason });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    /// Gemini's framing: `data:` events separated by CRLF blank lines. The real SSE decoder and
    /// re-chunking are exercised by the conformance tests in `tests/`.
    fn sse_events(text: &str) -> Vec<SseEvent> {
        text.split("\r\n\r\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| SseEvent {
                data: block
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(|payload| payload.strip_prefix(' ').unwrap_or(payload))
                    .collect::<Vec<_>>()
                    .join("\n"),
                ..SseEvent::default()
            })
            .collect()
    }

    fn decode_text(text: &str) -> (Vec<LlmEvent>, Result<(), ProviderError>) {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for event in sse_events(text) {
            if let Err(e) = decoder.decode(&event, &mut out) {
                return (out, Err(e));
            }
        }
        let end = decoder.finish(&mut out);
        (out, end)
    }

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{FIXTURES}/gemini/{name}")).unwrap()
    }

    fn chunks(chunks: &[&str]) -> String {
        chunks
            .iter()
            .map(|c| format!("data: {c}\r\n\r\n"))
            .collect()
    }

    fn done(events: &[LlmEvent]) -> Option<&StopReason> {
        events.iter().find_map(|e| match e {
            LlmEvent::Done { stop_reason } => Some(stop_reason),
            _ => None,
        })
    }

    fn last_usage(events: &[LlmEvent]) -> Option<Usage> {
        events.iter().rev().find_map(|e| match e {
            LlmEvent::Usage { usage } => Some(*usage),
            _ => None,
        })
    }

    #[test]
    fn gemini_3_parallel_calls_keep_ids_and_the_single_signature() {
        let text = fixture("parallel-function-calls-thought-signature-gemini-3.1-pro.sse");
        let first: Value = serde_json::from_str(sse_events(&text)[0].data.as_str()).unwrap();
        let signature = first["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
            .as_str()
            .unwrap();
        let (events, end) = decode_text(&text);
        end.unwrap();
        assert_eq!(
            events[0],
            LlmEvent::Started {
                model: Some("gemini-3.1-pro-preview".into()),
                response_id: Some("UwCzaaGdI_aEz7IPqoinwQM".into()),
            }
        );
        let calls: Vec<_> = events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    LlmEvent::ToolCallStart { .. } | LlmEvent::ToolCallComplete { .. }
                )
            })
            .cloned()
            .collect();
        assert_eq!(
            calls,
            [
                LlmEvent::ToolCallStart {
                    id: "8hd01vsf".into(),
                    name: "add".into(),
                    meta: Some(ProviderMeta::Gemini {
                        thought_signature: signature.into()
                    }),
                },
                LlmEvent::ToolCallComplete {
                    id: "8hd01vsf".into(),
                    args: Some(r#"{"a": 2,"b": 3}"#.into()),
                    meta: None
                },
                LlmEvent::ToolCallStart {
                    id: "k0srpqrc".into(),
                    name: "multiply".into(),
                    meta: None
                },
                LlmEvent::ToolCallComplete {
                    id: "k0srpqrc".into(),
                    args: Some(r#"{"b": 3,"a": 2}"#.into()),
                    meta: None
                },
            ]
        );
        // The closing chunk's empty text part carries nothing worth a block.
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, LlmEvent::TextDelta { .. }))
        );
        assert_eq!(
            last_usage(&events),
            Some(Usage {
                input_tokens: 157,
                output_tokens: 32 + 438,
                reasoning_tokens: 438,
                ..Usage::default()
            })
        );
        assert_eq!(done(&events), Some(&StopReason::ToolUse));
    }

    #[test]
    fn gemini_2_calls_without_ids_get_deterministic_ones() {
        let text = fixture("parallel-function-calls-single-chunk-gemini-2.5-flash.sse");
        let (events, end) = decode_text(&text);
        end.unwrap();
        let starts: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ToolCallStart { id, name, meta } => {
                    Some((id.as_str(), name.as_str(), meta.is_some()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            starts,
            [("call_1", "add", true), ("call_2", "multiply", false)]
        );
        assert_eq!(
            decode_text(&text).0,
            events,
            "ids are the same on every decode"
        );
        assert_eq!(done(&events), Some(&StopReason::ToolUse));
    }

    #[test]
    fn thought_part_is_reasoning_then_the_signed_call() {
        let text = fixture("thought-part-function-call-gemini-2.5-pro.sse");
        let (events, end) = decode_text(&text);
        end.unwrap();
        assert_eq!(
            events[1],
            LlmEvent::ReasoningStart {
                key: "thought_1".into()
            }
        );
        assert!(matches!(&events[2], LlmEvent::ReasoningDelta { key, delta }
            if key == "thought_1" && delta.starts_with("**Mapping the Inquiry**")));
        let closes = events.iter().position(|e| {
            *e == LlmEvent::ReasoningComplete {
                key: "thought_1".into(),
                text: None,
                meta: None,
            }
        });
        let call = events.iter().position(|e| matches!(e, LlmEvent::ToolCallStart { name, meta: Some(_), .. } if name == "weather"));
        assert!(
            closes.unwrap() < call.unwrap(),
            "the thought closes before the call starts"
        );
        assert!(events.contains(&LlmEvent::ToolCallComplete {
            id: "call_1".into(),
            args: Some(r#"{"location": "Florence, Italy"}"#.into()),
            meta: None,
        }));
        assert_eq!(
            last_usage(&events),
            Some(Usage {
                input_tokens: 54,
                output_tokens: 14 + 64,
                reasoning_tokens: 64,
                ..Usage::default()
            })
        );
    }

    #[test]
    fn text_usage_replaces_and_stop_ends_the_turn() {
        let text = fixture("text-usage-gemini-2.0-flash.sse");
        let (events, end) = decode_text(&text);
        end.unwrap();
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::TextDelta { delta, meta: None } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "The capital of France is Paris.\n");
        let usages = events
            .iter()
            .filter(|e| matches!(e, LlmEvent::Usage { .. }))
            .count();
        assert_eq!(usages, 2, "repeated identical usage is reported once");
        assert_eq!(
            last_usage(&events),
            Some(Usage {
                input_tokens: 13,
                output_tokens: 8,
                ..Usage::default()
            })
        );
        assert_eq!(done(&events), Some(&StopReason::EndTurn));
    }

    #[test]
    fn finish_reasons_other_than_stop() {
        for (reason, expected) in [
            ("MAX_TOKENS", StopReason::MaxTokens),
            ("SAFETY", StopReason::ContentFilter),
            ("RECITATION", StopReason::ContentFilter),
            ("PROHIBITED_CONTENT", StopReason::ContentFilter),
            ("BLOCKLIST", StopReason::ContentFilter),
            ("SPII", StopReason::ContentFilter),
            (
                "MALFORMED_FUNCTION_CALL",
                StopReason::Other("MALFORMED_FUNCTION_CALL".into()),
            ),
            ("OTHER", StopReason::Other("OTHER".into())),
        ] {
            let text = chunks(&[
                r#"{"candidates":[{"content":{"parts":[{"text":"Partial"}],"role":"model"},"index":0}]}"#,
                &format!(
                    r#"{{"candidates":[{{"content":{{"parts":[],"role":"model"}},"finishReason":"{reason}","index":0}}],"usageMetadata":{{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8}}}}"#
                ),
            ]);
            let (events, end) = decode_text(&text);
            end.unwrap();
            assert_eq!(done(&events), Some(&expected), "{reason}");
        }
    }

    #[test]
    fn a_blocked_prompt_is_content_filtered() {
        let text = chunks(&[
            r#"{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH"}]},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-3-pro-preview"}"#,
        ]);
        let (_, end) = decode_text(&text);
        assert_eq!(
            end,
            Err(ProviderError::ContentFiltered {
                message: "prompt blocked (SAFETY)".into()
            })
        );
    }

    #[test]
    fn signatures_on_text_and_thought_parts_are_kept() {
        let text = chunks(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"Weighing it","thought":true}],"role":"model"}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"","thought":true,"thoughtSignature":"c2lnLXQ="}],"role":"model"}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"Answer "}],"role":"model"}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"done.","thoughtSignature":"c2lnLWE="}],"role":"model"}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"thoughtSignature":"c2lnLWI="}],"role":"model"},"finishReason":"STOP"}]}"#,
        ]);
        let (events, end) = decode_text(&text);
        end.unwrap();
        assert_eq!(
            events[1..],
            [
                LlmEvent::ReasoningStart {
                    key: "thought_1".into()
                },
                LlmEvent::ReasoningDelta {
                    key: "thought_1".into(),
                    delta: "Weighing it".into()
                },
                LlmEvent::ReasoningComplete {
                    key: "thought_1".into(),
                    text: None,
                    meta: Some(ProviderMeta::Gemini {
                        thought_signature: "c2lnLXQ=".into()
                    }),
                },
                LlmEvent::TextDelta {
                    delta: "Answer ".into(),
                    meta: None
                },
                LlmEvent::TextDelta {
                    delta: "done.".into(),
                    meta: Some(ProviderMeta::Gemini {
                        thought_signature: "c2lnLWE=".into()
                    }),
                },
                LlmEvent::TextDelta {
                    delta: String::new(),
                    meta: Some(ProviderMeta::Gemini {
                        thought_signature: "c2lnLWI=".into()
                    }),
                },
                LlmEvent::Done {
                    stop_reason: StopReason::EndTurn
                },
            ]
        );
    }

    #[test]
    fn truncation_errors_and_garbage() {
        let cut =
            chunks(&[r#"{"candidates":[{"content":{"parts":[{"text":"Hal"}],"role":"model"}}]}"#]);
        assert!(matches!(
            decode_text(&cut).1,
            Err(ProviderError::StreamTruncated { .. })
        ));

        let failed = chunks(&[
            r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#,
        ]);
        assert!(matches!(
            decode_text(&failed).1,
            Err(ProviderError::Overloaded { .. })
        ));

        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        let garbage = SseEvent {
            data: "{\"candidates\": [".into(),
            ..SseEvent::default()
        };
        assert!(matches!(
            decoder.decode(&garbage, &mut out),
            Err(ProviderError::Protocol { .. })
        ));
    }

    #[test]
    fn repeated_ids_are_made_unique() {
        let text = chunks(&[
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"a","args":{},"id":"x"}},{"functionCall":{"name":"b","id":"x"}}],"role":"model"},"finishReason":"STOP"}]}"#,
        ]);
        let (events, end) = decode_text(&text);
        end.unwrap();
        let ids: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ToolCallComplete { id, args, .. } => Some((id.as_str(), args.as_deref())),
                _ => None,
            })
            .collect();
        assert_eq!(ids, [("x", Some("{}")), ("call_2", Some("{}"))]);
    }

    #[test]
    fn odd_parts_are_kept_whole_in_place() {
        // Not an object, a known field of the wrong type, a call without a name, and a
        // thought-marked part of an unknown kind: none is read in part, none is dropped.
        let odd = [
            "5",
            r#"{"text": 5}"#,
            r#"{"functionCall": {"args": {}}}"#,
            r#"{"thought": true, "inlineData": {"mimeType": "image/png", "data": "iVBO"}}"#,
        ];
        let text = chunks(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"Think","thought":true}],"role":"model"}}]}"#,
            &format!(
                r#"{{"candidates":[{{"content":{{"parts":[{}],"role":"model"}},"finishReason":"STOP"}}]}}"#,
                odd.join(",")
            ),
        ]);
        let (events, end) = decode_text(&text);
        end.unwrap();
        let after_thought: Vec<_> = events
            .iter()
            .skip_while(|e| !matches!(e, LlmEvent::ReasoningComplete { .. }))
            .skip(1)
            .filter(|e| !matches!(e, LlmEvent::Done { .. }))
            .cloned()
            .collect();
        let expected: Vec<_> = odd
            .iter()
            .map(|item| LlmEvent::Opaque {
                provider: "gemini".into(),
                item: (*item).into(),
            })
            .collect();
        assert_eq!(after_thought, expected);
        assert_eq!(done(&events), Some(&StopReason::EndTurn));
    }

    #[test]
    fn answer_text_with_a_field_motet_does_not_know_is_still_text() {
        let text = chunks(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"Paris","partMetadata":{"k":1}}],"role":"model"},"finishReason":"STOP"}]}"#,
        ]);
        let (events, end) = decode_text(&text);
        end.unwrap();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, LlmEvent::TextDelta { delta, .. } if delta == "Paris")),
            "{events:?}"
        );
        assert!(!events.iter().any(|e| matches!(e, LlmEvent::Opaque { .. })));
    }

    #[test]
    fn cut_or_corrupted_events_never_panic() {
        for name in [
            "parallel-function-calls-thought-signature-gemini-3.1-pro.sse",
            "thought-part-function-call-gemini-2.5-pro.sse",
            "text-usage-gemini-2.0-flash.sse",
            "code-execution-thought-signature-gemini-3-flash.sse",
            "code-execution-thought-parts-gemini-2.5-pro.sse",
        ] {
            let events = sse_events(&fixture(name));
            for cut_event in 0..events.len() {
                let data = &events[cut_event].data;
                let cuts = data
                    .char_indices()
                    .map(|(at, _)| at)
                    .step_by(7)
                    .chain([data.len()]);
                for cut in cuts {
                    let mut decoder = Decoder::new();
                    let mut out = Vec::new();
                    for (at, event) in events.iter().enumerate() {
                        let mut event = event.clone();
                        if at == cut_event {
                            event.data.truncate(cut);
                        }
                        // An error is a fine answer to a cut event; a panic is not.
                        if decoder.decode(&event, &mut out).is_err() {
                            break;
                        }
                    }
                    let _ = decoder.finish(&mut out);
                }
            }
        }
    }
}
