//! An entry's estimate, the one estimator that reads the thread's entries (the others read
//! only messages, so a policy may name them without reaching the thread).

use super::{TokenEstimator, assistant_parts, media_tokens};
use crate::thread::EntryBody;

/// Estimated tokens of an entry's body rendered as a message (0 for kinds never projected).
pub fn estimate_body(estimator: &dyn TokenEstimator, body: &EntryBody) -> u32 {
    let mut parts: Vec<&str> = Vec::new();
    match body {
        EntryBody::User { content } => {
            let text = content.text();
            return estimator
                .estimate_parts(&[&text])
                .saturating_add(media_tokens(content.media()));
        }
        EntryBody::System { content } => parts.push(content),
        EntryBody::Assistant { message, .. } => assistant_parts(message, &mut parts),
        EntryBody::ToolResult { result, .. } => {
            return estimator
                .estimate_parts(&[&result.tool_use_id, &result.content])
                .saturating_add(media_tokens(&result.attachments));
        }
        EntryBody::Summary { content, .. } => parts.push(content),
        EntryBody::Boundary { .. }
        | EntryBody::Note { .. }
        | EntryBody::Error { .. }
        | EntryBody::Checkpoint { .. }
        | EntryBody::SignalIn { .. }
        | EntryBody::SignalOut { .. } => return 0,
    }
    estimator.estimate_parts(&parts)
}

#[cfg(test)]
mod tests {
    use motet_directives::{
        AssistantBlock, AssistantMessage, Message, ProviderMeta, StopReason, ToolArgs, ToolResult,
    };

    use super::*;
    use crate::estimate::{Heuristic, estimate_message};
    use crate::thread::CallUsage;

    #[test]
    fn assistant_turn_counts_text_args_meta_and_opaque_items() {
        let message = AssistantMessage {
            blocks: vec![
                AssistantBlock::reasoning(
                    "x".repeat(40),
                    Some(ProviderMeta::Anthropic {
                        signature: "s".repeat(40),
                    }),
                ),
                AssistantBlock::tool_use("id", "name", ToolArgs::from_text("{}")),
                AssistantBlock::opaque("openai", "o".repeat(40)),
            ],
            stop_reason: StopReason::ToolUse,
        };
        let body = EntryBody::Assistant {
            message: message.clone(),
            usage: CallUsage::default(),
            basis: None,
        };
        // 40 + 40 + 2 + 4 + 2 + 40 = 128 bytes -> 32 + 10.
        assert_eq!(estimate_body(&Heuristic, &body), 42);
        assert_eq!(
            estimate_message(&Heuristic, &Message::Assistant(message)),
            42
        );
        let results = Message::ToolResults {
            results: vec![ToolResult::ok("abcd", "efgh"), ToolResult::ok("a", "b")],
        };
        assert_eq!(estimate_message(&Heuristic, &results), 12 + 10);
        assert_eq!(
            estimate_body(&Heuristic, &EntryBody::Boundary { from_seq: 3 }),
            0
        );
    }
}
