//! How a chat-completions request becomes one ask of an agent (pure, plain `#[test]`s).
//!
//! The last message is the ask; it must be the user's. What came before depends on the thread:
//! - no thread named: the request runs on a fresh thread, and the earlier messages (system,
//!   developer, user and assistant) are written into the ask as the conversation so far, so a
//!   stateless client that sends the whole conversation each time is understood;
//! - a thread named (`X-Motet-Thread`): the thread holds what came before, and only the last
//!   message is asked (earlier ones are checked, then left out).
//!
//! Tool messages, assistant tool calls, client-side `tools` and content parts other than text
//! are refused: a motet agent's tool calls stay inside the agent.

use motet_directives::ResponseFormat;
use motet_runtime::agent::NEW_THREAD;

use super::error::OpenAiError;
use super::wire::{self, ChatMessage, ChatRequest, Content};

/// The longest thread id a client may name.
pub(crate) const MAX_THREAD_ID: usize = 128;

/// One ask of an agent, as a chat-completions request asks it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ask {
    /// The agent's name.
    pub(crate) agent: String,
    /// The query the agent is asked.
    pub(crate) query: String,
    /// The thread it runs on: [`NEW_THREAD`] for a fresh one.
    pub(crate) thread: String,
    /// Answer as SSE chunks.
    pub(crate) stream: bool,
    /// End a streamed answer with a usage chunk.
    pub(crate) include_usage: bool,
    /// The shape the answer must have.
    pub(crate) response_format: Option<ResponseFormat>,
}

impl Ask {
    /// The ask `request` makes on `thread` (the `X-Motet-Thread` header's value, if any).
    ///
    /// # Errors
    /// [`OpenAiError::BadRequest`] for a request the endpoint does not take, naming the field.
    pub(crate) fn of(request: ChatRequest, thread: Option<&str>) -> Result<Self, OpenAiError> {
        let thread = match thread {
            None => NEW_THREAD.to_owned(),
            Some(id) => valid_thread(id)?.to_owned(),
        };
        if request.n.is_some_and(|n| n != 1) {
            return Err(OpenAiError::bad(
                "only one choice is served: `n` must be 1",
                Some("n"),
            ));
        }
        if request.tools.as_ref().is_some_and(|t| !t.is_empty())
            || request.functions.as_ref().is_some_and(|f| !f.is_empty())
        {
            let param = if request.functions.is_some() {
                "functions"
            } else {
                "tools"
            };
            return Err(OpenAiError::bad(
                "a motet agent runs its own tools; tools a client runs are not taken",
                Some(param),
            ));
        }
        let response_format = request
            .response_format
            .map(format_of)
            .transpose()?
            .flatten();
        let (last, earlier) = request
            .messages
            .split_last()
            .ok_or_else(|| OpenAiError::bad("`messages` must not be empty", Some("messages")))?;
        let said: Vec<(&'static str, String)> = earlier
            .iter()
            .enumerate()
            .map(|(at, message)| said_by(message, at))
            .collect::<Result<_, _>>()?;
        let at = earlier.len();
        let (role, text) = said_by(last, at)?;
        if role != "user" || text.trim().is_empty() {
            return Err(OpenAiError::bad(
                "the last message must be the user's ask, with text",
                Some(&format!("messages[{at}]")),
            ));
        }
        let query = match thread == NEW_THREAD {
            true => with_conversation(&said, text),
            false => text,
        };
        Ok(Self {
            agent: request.model,
            query,
            thread,
            stream: request.stream.unwrap_or(false),
            include_usage: request.stream_options.is_some_and(|o| o.include_usage),
            response_format,
        })
    }
}

/// `id` when it is a thread id a client may name: 1 to [`MAX_THREAD_ID`] ASCII letters,
/// digits, `.`, `_`, `:` or `-` (a store names a thread `<agent>/<thread>`).
///
/// # Errors
/// [`OpenAiError::BadRequest`] otherwise.
pub(crate) fn valid_thread(id: &str) -> Result<&str, OpenAiError> {
    let fits = !id.is_empty()
        && id.len() <= MAX_THREAD_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'));
    match fits {
        true => Ok(id),
        false => Err(OpenAiError::bad(
            format!(
                "X-Motet-Thread must be 1 to {MAX_THREAD_ID} ASCII letters, digits, '.', '_', ':' or '-'"
            ),
            None,
        )),
    }
}

/// Who said `message` (the `at`th) and its text.
fn said_by(message: &ChatMessage, at: usize) -> Result<(&'static str, String), OpenAiError> {
    let role = match message.role.as_str() {
        "system" | "developer" => "system",
        "user" => "user",
        "assistant" => "assistant",
        "tool" | "function" => {
            return Err(OpenAiError::bad(
                "a motet agent runs its own tools; tool results from a client are not taken",
                Some(&format!("messages[{at}].role")),
            ));
        }
        other => {
            return Err(OpenAiError::bad(
                format!("unknown role `{other}`"),
                Some(&format!("messages[{at}].role")),
            ));
        }
    };
    if message.tool_calls.as_ref().is_some_and(|c| !c.is_empty()) {
        return Err(OpenAiError::bad(
            "a motet agent's tool calls stay inside it; tool calls from a client are not taken",
            Some(&format!("messages[{at}].tool_calls")),
        ));
    }
    let text = match &message.content {
        None => String::new(),
        Some(Content::Text(text)) => text.clone(),
        Some(Content::Parts(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (n, part) in parts.iter().enumerate() {
                match (part.kind.as_str(), &part.text) {
                    ("text", Some(text)) => texts.push(text.as_str()),
                    _ => {
                        return Err(OpenAiError::bad(
                            format!(
                                "only text parts are served (not `{}`), each with its `text`",
                                part.kind
                            ),
                            Some(&format!("messages[{at}].content[{n}]")),
                        ));
                    }
                }
            }
            texts.join("\n")
        }
    };
    Ok((role, text))
}

/// `ask` with the conversation before it written in front, when there was one.
fn with_conversation(said: &[(&'static str, String)], ask: String) -> String {
    let said: Vec<&(&str, String)> = said.iter().filter(|(_, t)| !t.trim().is_empty()).collect();
    if said.is_empty() {
        return ask;
    }
    let mut query = String::from("The conversation so far:\n");
    for (role, text) in said {
        query.push_str(role);
        query.push_str(": ");
        query.push_str(text.trim_end());
        query.push('\n');
    }
    query.push_str("\nThe user now says:\n");
    query.push_str(&ask);
    query
}

/// The answer's shape `format` asks for (`None` for text).
fn format_of(format: wire::ResponseFormat) -> Result<Option<ResponseFormat>, OpenAiError> {
    match format {
        wire::ResponseFormat::Text => Ok(None),
        wire::ResponseFormat::JsonObject => Ok(Some(ResponseFormat::JsonObject)),
        wire::ResponseFormat::JsonSchema { json_schema } => {
            if !motet_directives::is_valid_schema_name(&json_schema.name) {
                return Err(OpenAiError::bad(
                    "a schema's name is 1 to 64 letters, digits, '_' or '-'",
                    Some("response_format.json_schema.name"),
                ));
            }
            let schema = json_schema.schema.ok_or_else(|| {
                OpenAiError::bad(
                    "a json_schema response format needs its `schema`",
                    Some("response_format.json_schema.schema"),
                )
            })?;
            Ok(Some(
                ResponseFormat::json_schema(json_schema.name, schema)
                    .with_strict(json_schema.strict.unwrap_or(false)),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: serde_json::Value) -> ChatRequest {
        serde_json::from_value(body).unwrap_or_else(|e| unreachable!("a request in a test: {e}"))
    }

    fn ask(body: serde_json::Value, thread: Option<&str>) -> Result<Ask, OpenAiError> {
        Ask::of(request(body), thread)
    }

    fn param_of(result: Result<Ask, OpenAiError>) -> Option<String> {
        match result {
            Err(OpenAiError::BadRequest { param, .. }) => param,
            other => Some(format!("not a bad request: {other:?}")),
        }
    }

    #[test]
    fn one_user_message_is_the_ask_on_a_fresh_thread() {
        let ask = ask(
            serde_json::json!({"model": "calc", "messages": [{"role": "user", "content": "2+3?"}]}),
            None,
        );
        assert_eq!(
            ask,
            Ok(Ask {
                agent: "calc".into(),
                query: "2+3?".into(),
                thread: NEW_THREAD.into(),
                stream: false,
                include_usage: false,
                response_format: None,
            })
        );
    }

    #[test]
    fn earlier_messages_become_the_conversation_so_far_on_a_fresh_thread_only() {
        let body = serde_json::json!({"model": "calc", "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "What is 2+3?"}]},
            {"role": "assistant", "content": "5"},
            {"role": "assistant", "content": null},
            {"role": "user", "content": "And times 4?"},
        ]});
        let fresh = ask(body.clone(), None).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            fresh.query,
            "The conversation so far:\nsystem: Be brief.\nuser: What is 2+3?\nassistant: 5\n\n\
             The user now says:\nAnd times 4?"
        );
        assert!(fresh.stream && fresh.include_usage);
        let named = ask(body, Some("t-1")).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            (named.query.as_str(), named.thread.as_str()),
            ("And times 4?", "t-1")
        );
    }

    #[test]
    fn what_the_endpoint_does_not_take_is_refused_naming_the_field() {
        let user = serde_json::json!({"role": "user", "content": "hi"});
        let cases = [
            (
                serde_json::json!({"model": "a", "messages": []}),
                "messages",
            ),
            (
                serde_json::json!({"model": "a", "messages": [{"role": "system", "content": "x"}]}),
                "messages[0]",
            ),
            (
                serde_json::json!({"model": "a", "messages": [{"role": "user", "content": "  "}]}),
                "messages[0]",
            ),
            (
                serde_json::json!({"model": "a", "messages": [{"role": "tool", "content": "4", "tool_call_id": "c"}, user]}),
                "messages[0].role",
            ),
            (
                serde_json::json!({"model": "a", "messages": [{"role": "wizard", "content": "x"}, user]}),
                "messages[0].role",
            ),
            (
                serde_json::json!({"model": "a", "messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}, user]}),
                "messages[0].tool_calls",
            ),
            (
                serde_json::json!({"model": "a", "messages": [{"role": "user", "content": [
                    {"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}]}]}),
                "messages[0].content[1]",
            ),
            (
                serde_json::json!({"model": "a", "n": 2, "messages": [user]}),
                "n",
            ),
            (
                serde_json::json!({"model": "a", "tools": [{"type": "function"}], "messages": [user]}),
                "tools",
            ),
            (
                serde_json::json!({"model": "a", "functions": [{"name": "f"}], "messages": [user]}),
                "functions",
            ),
            (
                serde_json::json!({"model": "a", "messages": [user],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "bad name", "schema": {}}}}),
                "response_format.json_schema.name",
            ),
            (
                serde_json::json!({"model": "a", "messages": [user],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "ok"}}}),
                "response_format.json_schema.schema",
            ),
        ];
        for (body, param) in cases {
            assert_eq!(
                param_of(ask(body.clone(), None)),
                Some(param.to_owned()),
                "{body}"
            );
        }
    }

    #[test]
    fn a_named_thread_must_be_a_plain_id() {
        let body =
            serde_json::json!({"model": "a", "messages": [{"role": "user", "content": "hi"}]});
        for bad in ["", "a/b", "tab\t", &"x".repeat(MAX_THREAD_ID + 1), "ünï"] {
            assert!(
                matches!(
                    ask(body.clone(), Some(bad)),
                    Err(OpenAiError::BadRequest { .. })
                ),
                "{bad:?}"
            );
        }
        for good in ["t1", "chat:42.b_c-d", &"x".repeat(MAX_THREAD_ID)] {
            assert_eq!(
                ask(body.clone(), Some(good)).map(|a| a.thread),
                Ok(good.to_owned())
            );
        }
    }

    #[test]
    fn response_formats_map_onto_motets() {
        let with = |format: serde_json::Value| {
            ask(
                serde_json::json!({"model": "a", "response_format": format,
                    "messages": [{"role": "user", "content": "hi"}]}),
                None,
            )
            .map(|a| a.response_format)
        };
        assert_eq!(with(serde_json::json!({"type": "text"})), Ok(None));
        assert_eq!(
            with(serde_json::json!({"type": "json_object"})),
            Ok(Some(ResponseFormat::JsonObject))
        );
        let schema = serde_json::json!({"type": "object"});
        assert_eq!(
            with(serde_json::json!({"type": "json_schema",
                "json_schema": {"name": "sum", "schema": schema, "strict": true}})),
            Ok(Some(ResponseFormat::json_schema("sum", schema.clone())))
        );
        assert_eq!(
            with(serde_json::json!({"type": "json_schema",
                "json_schema": {"name": "sum", "schema": schema}})),
            Ok(Some(
                ResponseFormat::json_schema("sum", schema).with_strict(false)
            ))
        );
    }
}
