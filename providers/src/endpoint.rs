//! Where a dialect's request goes and which headers it carries. The key travels in a header
//! for every provider — for Gemini in `x-goog-api-key`, never in the URL, so no URL printed in
//! an error or a log holds it.

use motet_directives::LlmRequest;

use crate::anthropic;
use crate::config::ApiKey;
use crate::dialect::Dialect;

/// A request's URL and headers. The key header is kept apart so it is never printed.
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) auth: Option<(&'static str, String)>,
}

/// The endpoint of `req` in `dialect` at `base` (no trailing slash).
pub(crate) fn endpoint(
    dialect: Dialect,
    base: &str,
    key: Option<&ApiKey>,
    req: &LlmRequest,
) -> Endpoint {
    let mut headers = vec![("accept", "text/event-stream".to_owned())];
    let bearer = || key.map(|k| ("authorization", format!("Bearer {}", k.expose())));
    let (url, auth) = match dialect {
        Dialect::OpenAiChat => (format!("{base}/chat/completions"), bearer()),
        Dialect::OpenAiResponses => (format!("{base}/responses"), bearer()),
        Dialect::Anthropic => {
            headers.extend(anthropic::request::extra_headers(req));
            (
                format!("{base}/v1/messages"),
                key.map(|k| ("x-api-key", k.expose().to_owned())),
            )
        }
        Dialect::Gemini => (
            format!(
                "{base}/v1beta/models/{}:streamGenerateContent?alt=sse",
                req.model.model()
            ),
            key.map(|k| ("x-goog-api-key", k.expose().to_owned())),
        ),
    };
    Endpoint { url, headers, auth }
}
