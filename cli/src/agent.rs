//! The CLI's agent: one ReAct agent named `cli` over the thread store, and the thread ids
//! users type.

use std::sync::Arc;

use motet::agents::{FailureReason, LlmErrorKind, ReAct, ReActConfig, ReactCompleted, ReactFailed};
use motet::directives::{Approval, ToolChoice};
use motet::mcp::McpClient;
use motet::providers::{Priority, Providers};
use motet::runtime::agent::Answer;
use motet::runtime::agent::{AgentHandle, AgentSpec, AskError, Runtime, RuntimeError};
use motet::runtime::store::{ThreadKey, ThreadStore};
use motet::runtime::tool::ToolSet;

use crate::calculator;
use crate::config::Settings;
use crate::error::CliError;

/// The agent's name: its threads are stored as `cli/<thread>`.
pub const AGENT: &str = "cli";

// Thread ids as users type them. The store keys a thread as `<agent>/<thread>`, and a thread's
// own id may hold a `/` too (`cli/notes/2024`), so one rule gives `/` one meaning everywhere:
// an id with a `/` is the whole store id, an id without one is a thread of the CLI's agent.
// `threads list` shows the short form only where that rule maps it back (`work` for
// `cli/work`, but `cli/notes/2024` whole), so every id it shows works in every command.

/// The thread id as the agent knows it: `cli/default` and `default` are both `default`, and
/// `cli/notes/2024` is `notes/2024`.
///
/// # Errors
/// [`CliError::ThreadId`] for an empty id, and for an id with a `/` that names another agent's
/// thread (`helper/t`, and `notes/2024`, which the store reads as agent `notes`'s): the CLI's
/// agent runs only its own.
pub fn agent_thread(input: &str) -> Result<&str, CliError> {
    let refuse = |reason: String| CliError::ThreadId {
        id: input.to_owned(),
        reason,
    };
    let thread = match (input.split_once('/'), ThreadKey::thread_in(AGENT, input)) {
        (None, _) => input,
        (Some(_), Some(thread)) => thread,
        (Some((agent, _)), None) => {
            return Err(refuse(format!(
                "an id with a `/` is `<agent>/<thread>`, and this one names agent `{agent}`; \
                 the `{AGENT}` agent runs only its own threads (`{AGENT}/{input}` is its \
                 thread `{input}`)"
            )));
        }
    };
    if thread.is_empty() {
        return Err(refuse("a thread id cannot be empty".to_owned()));
    }
    Ok(thread)
}

/// The id in the store: `default` and `cli/default` are `cli/default`; an id with a `/`
/// (`cli/notes/2024`, or `helper/t`, another agent's thread) is kept as it is, so threads
/// other programs wrote can be read too.
pub fn store_id(input: &str) -> String {
    if input.contains('/') {
        input.to_owned()
    } else {
        ThreadKey::store_id_of(AGENT, input)
    }
}

/// What users see for a store id: the CLI's own threads without the `cli/` when [`store_id`]
/// maps the short form back to the same thread, else the store id whole.
pub fn display_id(store_id: &str) -> &str {
    match ThreadKey::thread_in(AGENT, store_id) {
        Some(thread) if !thread.is_empty() && !thread.contains('/') => thread,
        _ => store_id,
    }
}

/// What users see for the agent's thread `thread`: [`display_id`] of its store id.
pub fn shown_thread(thread: &str) -> String {
    display_id(&ThreadKey::store_id_of(AGENT, thread)).to_owned()
}

/// A runtime over `store` running the `cli` agent as `settings` say.
///
/// # Errors
/// [`CliError::ProviderConfig`] when the providers cannot be set up, [`CliError::Runtime`]
/// when the agent cannot start.
pub async fn start(
    settings: &Settings,
    store: Arc<dyn ThreadStore>,
) -> Result<(Runtime, AgentHandle), CliError> {
    let providers =
        Providers::new(settings.providers.clone()).map_err(|e| CliError::ProviderConfig {
            model: settings.model.to_string(),
            message: e.to_string(),
        })?;
    let providers = Arc::new(providers);
    let mut runtime = Runtime::builder()
        .llm(providers.clone())
        .store(store)
        .prices(settings.prices.clone());
    for (account, rates) in &settings.limits {
        runtime = runtime.llm_limits(account.clone(), *rates);
    }
    for (level, budget) in &settings.budgets {
        runtime = runtime.budget(*level, *budget);
    }
    let runtime = runtime
        .build()
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    let mut builder = ToolSet::builder();
    for name in &settings.tools {
        if name == calculator::NAME {
            builder = builder.tool(calculator::tool());
        }
    }
    // Each MCP server is started (or reached) now, so a broken entry fails before the first
    // question rather than at the model's first call.
    for server in &settings.mcp {
        let client = McpClient::connect(server.config.clone())
            .await
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        let tools = client
            .tools()
            .await
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        if let Some(wanted) = &server.tools
            && let Some(missing) = wanted
                .iter()
                .find(|name| !tools.iter().any(|t| t.remote_name() == name.as_str()))
        {
            return Err(CliError::Runtime(format!(
                "mcp server `{}` has no tool `{missing}`",
                client.name()
            )));
        }
        for tool in tools {
            if server
                .tools
                .as_ref()
                .is_none_or(|wanted| wanted.iter().any(|name| name == tool.remote_name()))
            {
                builder = builder.tool(tool);
            }
        }
    }
    for name in &settings.approve {
        builder = builder.require_approval(
            name.as_str(),
            Approval::required().because("motet.toml's `approve` (or --approve) names it"),
        );
    }
    let tools = Arc::new(
        builder
            .build()
            .map_err(|e| CliError::Runtime(e.to_string()))?,
    );
    if let ToolChoice::Tool { name } = &settings.tool_choice
        && tools.get(name).is_none()
    {
        return Err(CliError::Runtime(format!(
            "tool_choice names `{name}`, which no tool offers (tools: {})",
            tools.names().join(", ")
        )));
    }
    let mut config = ReActConfig::new(settings.model.clone())
        .with_fallbacks(settings.fallbacks.iter().cloned())
        .with_tools(tools.definitions())
        .with_tool_choice(settings.tool_choice.clone());
    if let Some(prompt) = &settings.system_prompt {
        config = config.with_system_prompt(prompt.clone());
    }
    let (policy, max_tokens) = context_for(settings, &providers).await;
    config.options.max_tokens = max_tokens;
    if settings.model.provider() == "openai-compat" {
        // A small local model repeats its tool call until the answer's bound, and writes the
        // chat template's `<tool_response>` tags into its answers as if it were the tool: one
        // call per turn, and an answer ends where it would start to play the tool.
        config.options.parallel_tool_calls = Some(false);
        config.options.stop = vec!["<tool_response>".to_owned(), "</tool_response>".to_owned()];
    }
    if let Some(policy) = policy {
        config = config.with_context_policy(policy);
    }
    let agent = runtime
        .spawn(
            AgentSpec::new(AGENT, ReAct::new(config))
                .with_tools(tools)
                // A person waits for every answer: served before batch agents on a shared
                // account.
                .with_priority(Priority::High),
        )
        .await
        .map_err(runtime_failure)?;
    Ok((runtime, agent))
}

/// The context policy and answer bound the agent runs with. With the `auto` preset the
/// policy follows the model's real window: the file's `context_window`, else what the model
/// table or — for a local server — the server itself reports (llama.cpp gives each slot a
/// share of its context, 2,048 tokens for scripts/local-llm.sh's, far below the 8,000 the
/// default policy assumes: a chat past it failed every later question). A local server's
/// answers are bounded by the policy's reserve unless `max_tokens` says otherwise, so a small
/// model cannot write to the end of its window.
async fn context_for(
    settings: &Settings,
    providers: &Providers,
) -> (Option<motet::agents::ContextPolicy>, Option<u32>) {
    let mut policy = settings.policy.clone();
    if settings.auto_context {
        let window = match settings.context_window {
            Some(window) => Some(window),
            None => providers.context_window(&settings.model).await,
        };
        if let Some(window) = window {
            policy = Some(motet::agents::ContextPolicy::for_context_window(window));
        }
    }
    let local = settings.model.provider() == "openai-compat";
    let max_tokens = settings.max_tokens.or_else(|| {
        local.then(|| {
            policy
                .as_ref()
                .map_or(512, |p| p.reserve_output_tokens.max(64))
        })
    });
    (policy, max_tokens)
}

/// A runtime failure as the CLI reports it: the store's as a store error (exit 4).
pub fn runtime_failure(error: RuntimeError) -> CliError {
    match error {
        RuntimeError::Store(failure) => CliError::ThreadStore(failure.to_string()),
        other => CliError::Runtime(other.to_string()),
    }
}

/// The completed reply's data.
///
/// # Errors
/// [`CliError::Request`] when the reply cannot be read.
pub fn completed(reply: &Answer) -> Result<ReactCompleted, CliError> {
    reply
        .signal
        .data_as()
        .map_err(|e| CliError::Request(format!("the reply could not be read: {e}")))
}

/// An ask's failure as the user should read it: a connection failure names the server's URL.
pub fn ask_failure(error: AskError, settings: &Settings) -> CliError {
    match error {
        AskError::Failed { reply } => match reply.data_as::<ReactFailed>() {
            Ok(failed) => reason_failure(&failed.reason, settings),
            Err(_) => CliError::Request(format!("the agent answered {}", reply.signal_type())),
        },
        AskError::Timeout(after) => CliError::Request(format!(
            "no answer within {} s (raise it with --timeout)",
            after.as_secs()
        )),
        AskError::ThreadUnavailable { message, .. } => CliError::ThreadStore(message),
        AskError::Store(failure) => CliError::ThreadStore(failure.to_string()),
        other => CliError::Request(other.to_string()),
    }
}

fn reason_failure(reason: &FailureReason, settings: &Settings) -> CliError {
    if let FailureReason::Llm { error } = reason {
        let connect = error.message.starts_with("connection failed")
            || (error.kind == LlmErrorKind::Timeout && error.message.contains("connect"));
        if connect {
            return CliError::Unreachable {
                url: settings.base_url.clone(),
                message: error.message.clone(),
            };
        }
        return CliError::Request(format!(
            "the model ({} at {}) failed: {}",
            settings.model, settings.base_url, error.message
        ));
    }
    CliError::Request(reason.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_with_and_without_the_agent() {
        for (input, thread) in [
            ("default", "default"),
            ("cli/default", "default"),
            ("client", "client"),
            ("cli/notes/2024", "notes/2024"),
            ("cli/cli/x", "cli/x"),
        ] {
            assert_eq!(agent_thread(input).ok(), Some(thread), "{input}");
        }
        assert_eq!(store_id("default"), "cli/default");
        assert_eq!(store_id("cli/default"), "cli/default");
        assert_eq!(store_id("helper/t"), "helper/t");
        assert_eq!(display_id("cli/work"), "work");
        assert_eq!(display_id("helper/t"), "helper/t");
        assert_eq!(display_id("cli/notes/2024"), "cli/notes/2024");
        assert_eq!(shown_thread("notes/2024"), "cli/notes/2024");
        assert_eq!(shown_thread("work"), "work");
    }

    #[test]
    fn an_id_naming_another_agent_or_nothing_is_refused() {
        for input in ["notes/2024", "helper/t", "/t", "", "cli/"] {
            let Err(CliError::ThreadId { id, reason }) = agent_thread(input) else {
                panic!("{input:?} was accepted");
            };
            assert_eq!(id, input);
            assert!(!reason.is_empty());
        }
    }

    #[test]
    fn every_shown_id_leads_back_to_its_thread() {
        // What `threads list` shows must address the same thread in `threads show`/`delete`,
        // and, for the CLI's own threads, in `run --thread`/`resume`.
        for stored in [
            "cli/work",
            "cli/notes/2024",
            "cli/cli/x",
            "cli/",
            "cli//",
            "helper/t",
            "helper/a/b",
            "/t",
        ] {
            let shown = display_id(stored);
            assert_eq!(store_id(shown), stored, "{stored} shown as {shown}");
            if let Some(thread) = stored.strip_prefix("cli/").filter(|t| !t.is_empty()) {
                assert_eq!(agent_thread(shown).ok(), Some(thread), "{stored}");
                assert_eq!(shown_thread(thread), shown, "{stored}");
            }
        }
    }
}
