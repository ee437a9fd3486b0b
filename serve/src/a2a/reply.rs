//! What a client's message says (pure, plain `#[test]`s): the text a new task asks, or the
//! answers a message gives to the calls its task waits on.
//!
//! A message on a task in `input-required` answers its waiting calls:
//! - a data part `{"tool_call_id": ..., "action": "approve" | "edit" | "reject" | "answer",
//!   "args": {...}, "reason": "...", "text": "..."}` (or `{"decisions": [...]}` of them, or
//!   without `tool_call_id` for the oldest wait) answers the call it names, as the native API's
//!   waiting route does;
//! - otherwise its text answers the oldest waiting call: a question takes the text as its
//!   answer; an approval is approved by `approve`, `approved`, `yes`, `y`, `ok` or `okay`
//!   (any case, on their own or followed by punctuation and more words: "Yes, go ahead"), and
//!   rejected by anything else — `reject: <reason>` or `no: <reason>` gives the model the
//!   reason, other words are the reason themselves. A gated tool never runs without a clear yes.

use motet_agents::Waiting;
use motet_directives::{Pause, Response};
use serde::Deserialize;

use super::error::A2aError;
use super::wire::{Message, Role};

/// The text a message asks, its parts joined (data parts as their JSON).
///
/// # Errors
/// [`A2aError::ContentTypeNotSupported`] for a file part, [`A2aError::InvalidParams`] for an
/// agent's message or one that says nothing.
pub(crate) fn query_of(message: &Message) -> Result<String, A2aError> {
    if message.role == Role::Agent {
        return Err(A2aError::InvalidParams(
            "the message is the agent's (`ROLE_AGENT`): send the user's".into(),
        ));
    }
    let mut said = Vec::new();
    for part in &message.parts {
        if part.raw.is_some() || part.url.is_some() {
            return Err(A2aError::ContentTypeNotSupported(
                "file parts are not taken: send text or data parts".into(),
            ));
        }
        if let Some(text) = &part.text {
            said.push(text.clone());
        } else if let Some(data) = &part.data {
            said.push(data.to_string());
        }
    }
    let query = said.join("\n");
    if query.trim().is_empty() {
        return Err(A2aError::InvalidParams(
            "the message says nothing: send a text part".into(),
        ));
    }
    Ok(query)
}

/// One decision as a data part spells it (the native API's shape, with the call it answers).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Decision {
    #[serde(default)]
    tool_call_id: Option<String>,
    action: String,
    #[serde(default)]
    args: Option<serde_json::Value>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// Several decisions in one data part.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Decisions {
    decisions: Vec<Decision>,
}

/// The answers `message` gives to `pending` (the task's waiting calls, oldest first): each the
/// call it answers and the response.
///
/// # Errors
/// [`A2aError::InvalidParams`] for a message that answers nothing or a call that does not wait,
/// a decision of an unknown action; as [`query_of`] for its parts.
pub(crate) fn answers(
    message: &Message,
    pending: &[Waiting],
) -> Result<Vec<(String, Response)>, A2aError> {
    let oldest = pending
        .first()
        .ok_or_else(|| A2aError::UnsupportedOperation("the task waits for no input".into()))?;
    let mut decisions = Vec::new();
    for data in message.parts.iter().filter_map(|p| p.data.as_ref()) {
        if let Ok(many) = serde_json::from_value::<Decisions>(data.clone()) {
            decisions.extend(many.decisions);
        } else if let Ok(one) = serde_json::from_value::<Decision>(data.clone()) {
            decisions.push(one);
        }
    }
    if decisions.is_empty() {
        let text = query_of(message)?;
        return Ok(vec![(
            oldest.tool_call_id.clone(),
            from_words(&text, &oldest.pause),
        )]);
    }
    decisions
        .into_iter()
        .map(|decision| {
            let call = decision
                .tool_call_id
                .clone()
                .unwrap_or_else(|| oldest.tool_call_id.clone());
            if !pending.iter().any(|w| w.tool_call_id == call) {
                return Err(A2aError::InvalidParams(format!(
                    "tool call `{call}` does not wait for input"
                )));
            }
            Ok((call, from_decision(decision)?))
        })
        .collect()
}

/// A decision as a response.
fn from_decision(decision: Decision) -> Result<Response, A2aError> {
    match decision.action.as_str() {
        "approve" => Ok(Response::Approve),
        "edit" => match decision.args {
            Some(serde_json::Value::String(args)) => Ok(Response::Edit { args }),
            Some(args) => Ok(Response::Edit {
                args: args.to_string(),
            }),
            None => Err(A2aError::InvalidParams("an `edit` needs `args`".into())),
        },
        "reject" => Ok(Response::Reject {
            reason: decision
                .reason
                .unwrap_or_else(|| "rejected by the A2A client".into()),
        }),
        "answer" => decision
            .text
            .map(|text| Response::Answer { text })
            .ok_or_else(|| A2aError::InvalidParams("an `answer` needs `text`".into())),
        other => Err(A2aError::InvalidParams(format!(
            "`{other}` is not an action: approve, edit, reject or answer"
        ))),
    }
}

/// The words a client answered `pause` with, as a response.
fn from_words(text: &str, pause: &Pause) -> Response {
    let text = text.trim();
    if let Pause::Question { .. } = pause {
        return Response::Answer {
            text: text.to_owned(),
        };
    }
    let (first, rest) = first_word(text);
    match first.as_str() {
        "approve" | "approved" | "yes" | "y" | "ok" | "okay" => Response::Approve,
        "reject" | "rejected" | "no" | "n" | "deny" | "denied" => Response::Reject {
            reason: match rest.trim() {
                "" => "rejected by the A2A client".to_owned(),
                reason => reason.to_owned(),
            },
        },
        _ => Response::Reject {
            reason: text.to_owned(),
        },
    }
}

/// The first word of `text`, lowercase, and what follows it past its punctuation.
fn first_word(text: &str) -> (String, &str) {
    let end = text
        .find(|c: char| !c.is_alphanumeric())
        .unwrap_or(text.len());
    let (word, rest) = text.split_at(end);
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace());
    (word.to_lowercase(), rest)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

    use super::*;
    use crate::a2a::wire::Part;
    use motet_directives::{Approval, ToolArgs};
    use serde_json::json;

    fn wait(call: &str, pause: Pause) -> Waiting {
        Waiting {
            agent: String::new(),
            thread: String::new(),
            request_id: "r1".into(),
            tool_call_id: call.into(),
            tool: "rm".into(),
            args: ToolArgs::from_text("{}"),
            pause,
            since_ms: 0,
            deadline_ms: None,
        }
    }

    fn said(parts: Vec<Part>) -> Message {
        Message {
            role: Role::User,
            parts,
            ..Message::default()
        }
    }

    fn approval() -> Pause {
        Pause::Approval(Approval::required())
    }

    #[test]
    fn words_approve_only_when_they_clearly_say_yes() {
        let cases = [
            ("approve", Response::Approve),
            ("Yes, go ahead.", Response::Approve),
            ("OK", Response::Approve),
            (
                "yesterday's file, please",
                Response::Reject {
                    reason: "yesterday's file, please".into(),
                },
            ),
            (
                "reject: keep it",
                Response::Reject {
                    reason: "keep it".into(),
                },
            ),
            (
                "No",
                Response::Reject {
                    reason: "rejected by the A2A client".into(),
                },
            ),
            (
                "delete /tmp/b instead",
                Response::Reject {
                    reason: "delete /tmp/b instead".into(),
                },
            ),
        ];
        for (text, expected) in cases {
            let message = said(vec![Part::text(text)]);
            let got = answers(&message, &[wait("c1", approval())]).unwrap();
            assert_eq!(got, vec![("c1".to_owned(), expected)], "{text}");
        }
    }

    #[test]
    fn text_answers_a_question_and_only_the_oldest_wait() {
        let pending = [
            wait(
                "c1",
                Pause::Question {
                    text: "which?".into(),
                },
            ),
            wait("c2", approval()),
        ];
        let got = answers(&said(vec![Part::text("/tmp/a")]), &pending).unwrap();
        assert_eq!(
            got,
            vec![(
                "c1".to_owned(),
                Response::Answer {
                    text: "/tmp/a".into()
                }
            )]
        );
    }

    #[test]
    fn data_parts_answer_the_calls_they_name() {
        let pending = [wait("c1", approval()), wait("c2", approval())];
        let message = said(vec![Part::data(json!({"decisions": [
            {"tool_call_id": "c2", "action": "edit", "args": {"path": "/tmp/b"}},
            {"tool_call_id": "c1", "action": "reject", "reason": "no"},
        ]}))]);
        let got = answers(&message, &pending).unwrap();
        assert_eq!(
            got,
            vec![
                (
                    "c2".to_owned(),
                    Response::Edit {
                        args: r#"{"path":"/tmp/b"}"#.into()
                    }
                ),
                (
                    "c1".to_owned(),
                    Response::Reject {
                        reason: "no".into()
                    }
                ),
            ]
        );
        let unknown = said(vec![Part::data(
            json!({"tool_call_id": "c9", "action": "approve"}),
        )]);
        assert!(matches!(
            answers(&unknown, &pending),
            Err(A2aError::InvalidParams(_))
        ));
        let bad = said(vec![Part::data(json!({"action": "maybe"}))]);
        assert!(matches!(
            answers(&bad, &pending),
            Err(A2aError::InvalidParams(_))
        ));
    }

    #[test]
    fn a_message_must_say_something_the_agent_takes() {
        assert!(matches!(
            query_of(&said(vec![])),
            Err(A2aError::InvalidParams(_))
        ));
        let file = said(vec![Part {
            url: Some("https://x/y.png".into()),
            ..Part::default()
        }]);
        assert!(matches!(
            query_of(&file),
            Err(A2aError::ContentTypeNotSupported(_))
        ));
        let agent = Message {
            role: Role::Agent,
            ..said(vec![Part::text("hi")])
        };
        assert!(matches!(query_of(&agent), Err(A2aError::InvalidParams(_))));
        let both = said(vec![Part::text("sum"), Part::data(json!({"a": 1}))]);
        assert_eq!(query_of(&both).unwrap(), "sum\n{\"a\":1}");
        assert!(matches!(
            answers(&said(vec![Part::text("yes")]), &[]),
            Err(A2aError::UnsupportedOperation(_))
        ));
    }
}
