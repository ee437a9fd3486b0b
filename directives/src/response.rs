//! The assembled response: one LLM call's assistant turn and what it cost.

use serde::{Deserialize, Serialize};

use crate::message::AssistantMessage;
use crate::usage::{ModelUsage, Usage};

/// One complete LLM call: the assistant turn and, separately, what it cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmResponse {
    /// The assistant turn.
    pub message: AssistantMessage,
    /// Tokens consumed.
    #[serde(default)]
    pub usage: Usage,
    /// The model that answered, as the provider named it (e.g. a dated snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's response id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// `usage` split by model, when the provider reported that more than one model worked on
    /// the response (the entries sum to `usage`); empty when all of it is `model`'s. Left out
    /// of JSON when empty, so responses stored before it read back unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usage_by_model: Vec<ModelUsage>,
}

impl LlmResponse {
    /// A response with no model name or id.
    pub fn new(message: AssistantMessage, usage: Usage) -> Self {
        Self {
            message,
            usage,
            model: None,
            response_id: None,
            usage_by_model: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_stored_before_usage_by_model_reads_back_and_writes_as_it_was() {
        let stored = serde_json::json!({
            "message": {"blocks": [], "stop_reason": "end_turn"},
            "usage": {"input_tokens": 5, "output_tokens": 1},
            "model": "m"
        });
        let read: LlmResponse =
            serde_json::from_value(stored.clone()).expect("an older response reads");
        assert!(read.usage_by_model.is_empty());
        assert_eq!(serde_json::to_value(&read).ok(), Some(stored));

        let split = LlmResponse {
            usage_by_model: vec![
                ModelUsage {
                    model: "executor".into(),
                    usage: Usage {
                        input_tokens: 3,
                        ..Usage::default()
                    },
                },
                ModelUsage {
                    model: "advisor".into(),
                    usage: Usage {
                        input_tokens: 2,
                        output_tokens: 1,
                        ..Usage::default()
                    },
                },
            ],
            ..read
        };
        let json = serde_json::to_value(&split).expect("serializes");
        assert_eq!(json["usage_by_model"][1]["model"], "advisor");
        assert_eq!(
            serde_json::from_value::<LlmResponse>(json).ok(),
            Some(split)
        );
    }
}
