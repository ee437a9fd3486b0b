//! The web console: one page, its script and its stylesheet (serve/console/), built into the
//! binary and served at `/`, `/console.js` and `/console.css`.
//!
//! The three load without a token — they hold no data; every call the page makes to the
//! native API carries the token the person typed, in an `Authorization` header. Each is sent
//! with a Content-Security-Policy that lets the page run its own script and style and talk to
//! its own origin, nothing else: no inline script, no other origin, no frames.

use axum::extract::OriginalUri;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

/// The page.
const PAGE: &str = include_str!("../console/index.html");
/// Its script.
const SCRIPT: &str = include_str!("../console/console.js");
/// Its stylesheet.
const STYLE: &str = include_str!("../console/console.css");

/// What the page may load and reach: its own script, style and API, nothing inline, nothing
/// from elsewhere; it may not be framed, nor post a form anywhere.
pub(crate) const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The console's routes, on any state.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> axum::Router<S> {
    axum::Router::new()
        .route("/", get(page))
        .route(
            "/console.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/console.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}

/// `GET /`: the page, its script and stylesheet named from where it was asked for.
async fn page(OriginalUri(uri): OriginalUri) -> impl IntoResponse {
    asset("text/html; charset=utf-8", page_at(uri.path()))
}

/// The page as served at `path`: its script and stylesheet named under the folder the router
/// is mounted at (`/agents` → `/agents/console.js`), so the console works wherever a program
/// nests the router, with or without a trailing slash. A path with anything but plain URL
/// characters keeps the relative names.
fn page_at(path: &str) -> String {
    let plain = path.starts_with('/')
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-._~%".contains(&b));
    if !plain {
        return PAGE.to_owned();
    }
    let folder = path.trim_end_matches('/');
    PAGE.replace("\"console.", &format!("\"{folder}/console."))
}

/// One of the console's files, as `content_type`, under the policy.
fn asset(content_type: &'static str, body: impl Into<axum::body::Body>) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body.into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page runs nothing the policy would refuse: no inline script or handler, no inline
    /// style, nothing from another origin.
    #[test]
    fn the_page_holds_nothing_inline() {
        let page = PAGE.to_ascii_lowercase();
        for script in page.split("<script").skip(1) {
            let (tag, rest) = script.split_once('>').unwrap_or((script, ""));
            assert!(
                tag.contains("src=\"console.js\""),
                "an inline script: {tag}"
            );
            assert!(rest.trim_start().starts_with("</script>"), "{rest}");
        }
        assert!(page.contains("<script src=\"console.js\""));
        assert!(page.contains("href=\"console.css\""));
        for inline in [
            "<style",
            " style=",
            " onclick=",
            " onload=",
            " onsubmit=",
            "javascript:",
        ] {
            assert!(!page.contains(inline), "the page holds `{inline}`");
        }
        for remote in ["http://", "https://", "//"] {
            assert!(
                !page.contains(&format!("src=\"{remote}"))
                    && !page.contains(&format!("href=\"{remote}")),
                "the page loads from elsewhere"
            );
        }
    }

    /// The script builds no markup from text: what it shows goes in as text, never as HTML.
    #[test]
    fn the_script_never_parses_text_as_markup() {
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!SCRIPT.contains(sink), "the script uses `{sink}`");
        }
        assert!(
            !SCRIPT.contains("console.log"),
            "the script logs (a token could go with it)"
        );
    }

    #[test]
    fn the_page_names_its_files_under_the_mount() {
        assert!(page_at("/").contains(r#"<script src="/console.js" defer>"#));
        assert!(page_at("/").contains(r#"href="/console.css""#));
        assert!(page_at("/agents").contains(r#"<script src="/agents/console.js" defer>"#));
        assert!(page_at("/agents/").contains(r#"href="/agents/console.css""#));
        for odd in ["/a\"b", "/<x>", "no-slash", "/a b", "/a'b"] {
            assert_eq!(page_at(odd), PAGE, "{odd}");
        }
    }

    #[test]
    fn the_policy_allows_nothing_inline_and_nothing_from_elsewhere() {
        assert!(!POLICY.contains("unsafe"));
        assert!(!POLICY.contains('*'));
        assert!(POLICY.starts_with("default-src 'none';"));
        assert!(POLICY.contains("script-src 'self';"));
    }
}
