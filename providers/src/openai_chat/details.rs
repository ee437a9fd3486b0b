//! OpenRouter's `reasoning_details`, gathered over one stream.
//!
//! Each chunk's `delta.reasoning_details` is a list of fragments, each naming the detail it
//! belongs to by `index`: `reasoning.text` (text, and a provider `signature`, often in a later
//! fragment of its own after an empty one), `reasoning.summary` (summary text) and
//! `reasoning.encrypted` (opaque `data`, with an `id`). The fragments of one index merge into
//! one detail: `text` and `summary` are appended, any other field takes the last value that is
//! not `null` or `""` (an empty `signature` announced first must not erase the real one, nor
//! the real one be doubled). The merged details go back to the server on the next request, in
//! `index` order, as it asks for them: whole and unchanged.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Fields whose fragments are pieces of one text.
const APPENDED: [&str; 2] = ["text", "summary"];

/// The merged details of one stream.
#[derive(Debug, Default)]
pub(super) struct Details {
    /// Details in the order their index first appeared.
    merged: Vec<Map<String, Value>>,
    /// Position in `merged` by `index`.
    by_index: HashMap<u64, usize>,
    /// The bytes held, counted as fragments arrive.
    held: usize,
}

impl Details {
    /// Merges one delta's fragments; those that are not objects are skipped (nothing could be
    /// sent back for them). Returns the visible reasoning text they carry (`text`, `summary`).
    pub(super) fn merge(&mut self, fragments: Vec<Value>) -> String {
        let mut visible = String::new();
        for fragment in fragments {
            let Value::Object(fragment) = fragment else {
                tracing::debug!("a reasoning_details entry that is not an object was skipped");
                continue;
            };
            let index = fragment.get("index").and_then(Value::as_u64);
            let position = match index.and_then(|i| self.by_index.get(&i)) {
                Some(&position) => position,
                None => {
                    self.merged.push(Map::new());
                    let position = self.merged.len() - 1;
                    if let Some(index) = index {
                        self.by_index.insert(index, position);
                    }
                    position
                }
            };
            let Some(detail) = self.merged.get_mut(position) else {
                continue;
            };
            for (field, value) in fragment {
                self.held = self.held.saturating_add(field.len() + value_bytes(&value));
                let appended = APPENDED.contains(&field.as_str());
                match (detail.get_mut(&field), value) {
                    (Some(Value::String(text)), Value::String(more)) if appended => {
                        visible.push_str(&more);
                        text.push_str(&more);
                    }
                    (Some(_), Value::Null) => {}
                    (Some(_), Value::String(empty)) if empty.is_empty() => {}
                    (_, value) => {
                        if appended && let Value::String(text) = &value {
                            visible.push_str(text);
                        }
                        detail.insert(field, value);
                    }
                }
            }
        }
        visible
    }

    /// Whether no detail arrived.
    pub(super) fn is_empty(&self) -> bool {
        self.merged.is_empty()
    }

    /// What the details hold, for the response limit.
    pub(super) fn held_bytes(&self) -> usize {
        self.held
    }

    /// The merged details as JSON texts, in `index` order (those without one last, in arrival
    /// order).
    pub(super) fn take(&mut self) -> Vec<String> {
        let mut merged: Vec<(Option<u64>, Map<String, Value>)> = std::mem::take(&mut self.merged)
            .into_iter()
            .map(|detail| (detail.get("index").and_then(Value::as_u64), detail))
            .collect();
        merged.sort_by_key(|(index, _)| index.unwrap_or(u64::MAX));
        self.by_index.clear();
        self.held = 0;
        merged
            .into_iter()
            .map(|(_, detail)| Value::Object(detail).to_string())
            .collect()
    }
}

/// The bytes a JSON value takes, roughly: its strings and keys, and a few for the rest.
fn value_bytes(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(value_bytes).sum::<usize>() + 2,
        Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| k.len() + value_bytes(v))
            .sum::<usize>()
            .saturating_add(2),
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Details;

    #[test]
    fn fragments_of_one_index_merge_and_an_empty_signature_does_not_erase_the_real_one() {
        let mut details = Details::default();
        let mut visible = String::new();
        for fragments in [
            json!([{"type": "reasoning.text", "text": "", "signature": "", "format": "anthropic-claude-v1", "index": 0}]),
            json!([{"type": "reasoning.text", "text": "Two and ", "format": "anthropic-claude-v1", "index": 0}]),
            json!([{"type": "reasoning.text", "text": "two.", "format": "anthropic-claude-v1", "index": 0}]),
            json!([{"type": "reasoning.text", "signature": "c2ln", "format": "anthropic-claude-v1", "index": 0}]),
            json!([{"type": "reasoning.encrypted", "data": "ZW5j", "id": "rs_1", "format": "openai-responses-v1", "index": 1}, 7]),
        ] {
            let Ok(fragments) = serde_json::from_value(fragments) else {
                panic!("a list");
            };
            visible.push_str(&details.merge(fragments));
        }
        assert_eq!(visible, "Two and two.");
        let merged: Vec<serde_json::Value> = details
            .take()
            .iter()
            .filter_map(|text| serde_json::from_str(text).ok())
            .collect();
        assert_eq!(
            merged,
            [
                json!({"type": "reasoning.text", "text": "Two and two.", "signature": "c2ln", "format": "anthropic-claude-v1", "index": 0}),
                json!({"type": "reasoning.encrypted", "data": "ZW5j", "id": "rs_1", "format": "openai-responses-v1", "index": 1}),
            ]
        );
        assert!(details.is_empty());
    }
}
