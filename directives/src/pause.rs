//! A tool call that waits for a person: what it asks ([`Pause`]: an approval before it runs, or
//! a question its tool put instead of a result) and what a person answers ([`Response`]).
//!
//! The runtime sends `tool.paused` ([`ToolPaused`](crate::results::ToolPaused)) instead of a
//! result when a call needs a person; the strategy records the pause, announces it, and resumes
//! the call when an answer arrives (docs/runtime.md, "A person in the loop").

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a paused tool call waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pause {
    /// The call runs only once a person approves it (possibly with edited arguments).
    Approval(Approval),
    /// The tool ran and asked a question instead of answering; the person's answer becomes
    /// the call's result.
    Question {
        /// The question, for the person.
        text: String,
    },
}

impl Pause {
    /// True for an approval.
    pub fn is_approval(&self) -> bool {
        matches!(self, Self::Approval(_))
    }

    /// How long a person has, when the pause has a deadline.
    pub fn deadline(&self) -> Option<Duration> {
        match self {
            Self::Approval(approval) => approval.deadline,
            Self::Question { .. } => None,
        }
    }
}

/// How a call that needs approval is gated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// Why it needs approval, for the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long the person has; unanswered by then, [`on_expiry`](Self::on_expiry) decides.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::directive::opt_millis"
    )]
    pub deadline: Option<Duration>,
    /// What an unanswered approval becomes at its deadline.
    #[serde(default)]
    pub on_expiry: OnExpiry,
}

impl Approval {
    /// An approval with no reason and no deadline.
    pub fn required() -> Self {
        Self::default()
    }

    /// Says why, for the person.
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Gives the person `deadline`; unanswered by then, the call is `on_expiry`.
    pub fn within(mut self, deadline: Duration, on_expiry: OnExpiry) -> Self {
        self.deadline = Some(deadline);
        self.on_expiry = on_expiry;
        self
    }
}

/// What an approval nobody answered in time becomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExpiry {
    /// Rejected: the model reads that nobody approved it in time.
    #[default]
    Reject,
    /// Approved as the model asked.
    Approve,
}

/// A person's answer to a paused call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Response {
    /// Run the call as the model asked.
    Approve,
    /// Run the call with these arguments instead (a JSON object, as JSON text).
    Edit {
        /// The arguments to run it with.
        args: String,
    },
    /// Do not run it; the model reads the reason as the call's error result.
    Reject {
        /// Why, for the model.
        reason: String,
    },
    /// The answer to a tool's question: the call's result.
    Answer {
        /// The answer.
        text: String,
    },
}

impl Response {
    /// True when the response fits `pause`: approve, edit or reject an approval; answer (or
    /// reject) a question.
    pub fn fits(&self, pause: &Pause) -> bool {
        matches!(
            (self, pause),
            (Self::Reject { .. }, _)
                | (Self::Approve | Self::Edit { .. }, Pause::Approval(_))
                | (Self::Answer { .. }, Pause::Question { .. })
        )
    }

    /// The response's kind as written (`approve`, `edit`, `reject`, `answer`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Edit { .. } => "edit",
            Self::Reject { .. } => "reject",
            Self::Answer { .. } => "answer",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_reads_back_as_written() {
        let pauses = [
            Pause::Approval(Approval::required()),
            Pause::Approval(
                Approval::required()
                    .because("deletes files")
                    .within(Duration::from_millis(1500), OnExpiry::Approve),
            ),
            Pause::Question {
                text: "which branch?".into(),
            },
        ];
        for pause in pauses {
            let json = serde_json::to_string(&pause).unwrap_or_default();
            let back: Pause = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert_eq!(back, pause, "{json}");
        }
        let json = serde_json::to_value(Pause::Approval(
            Approval::required().within(Duration::from_secs(2), OnExpiry::Reject),
        ))
        .unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"kind": "approval", "deadline": 2000, "on_expiry": "reject"})
        );
    }

    #[test]
    fn a_response_fits_only_its_kind_of_pause() {
        let approval = Pause::Approval(Approval::required());
        let question = Pause::Question { text: "?".into() };
        let reject = Response::Reject {
            reason: "no".into(),
        };
        let answer = Response::Answer { text: "a".into() };
        let edit = Response::Edit { args: "{}".into() };
        assert!(Response::Approve.fits(&approval) && edit.fits(&approval));
        assert!(reject.fits(&approval) && reject.fits(&question));
        assert!(answer.fits(&question) && !answer.fits(&approval));
        assert!(!Response::Approve.fits(&question) && !edit.fits(&question));
    }
}
