//! Settings: the `motet.toml` file, the environment over it, command-line flags over both.
//!
//! | setting | flag | environment | file key | default |
//! |---|---|---|---|---|
//! | model | `--model` | `MOTET_MODEL` | `model` | chosen from the environment ([`choose_model`]) |
//! | fallback models | — | — | `fallbacks` | none |
//! | store | `--db` | `MOTET_DATABASE_URL` | `db` | `<data dir>/motet/motet.db` |
//! | base URLs | — | `OPENAI_BASE_URL`, … | `[base_urls]` | each provider's own |
//! | API keys | — | `OPENAI_API_KEY`, … | never in the file | — |
//! | context policy | — | — | `context` | `auto` (from the model's window) |
//! | context window | — | — | `context_window` | the model table's, else a local server's `/props` |
//! | tools | — | — | `tools` | `["calculator"]` |
//! | tool choice | `--tool-choice` | — | `tool_choice` | `required` on a local server, else `auto` |
//! | system prompt | — | — | `system_prompt` | none |
//! | request timeout | `--timeout` | — | `timeout_secs` | 120 |
//! | answer length | — | — | `max_tokens` | a quarter of a local server's window, else the provider's |
//! | provider limits | — | `MOTET_CONNECT_TIMEOUT`, … | `[limits]` | [`motet::providers::config`]'s |
//! | MCP servers | — | `${VAR}` in `headers` | `[[mcp]]` | none |
//!
//! `[limits]` holds `connect_timeout`, `first_byte_timeout`, `idle_timeout`, `initial_backoff`
//! and `max_backoff` (seconds, decimals allowed), `max_retries` and `max_response_bytes`; each
//! is below its `MOTET_*` variable (`MOTET_IDLE_TIMEOUT`, …) and has no flag.
//!
//! Each `[[mcp]]` entry is an MCP server whose tools the agent may call ([`McpEntry`],
//! docs/mcp.md): `name`, then `command` (with `args`, `env`, `cwd`) or `url` (with `headers`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use motet::agents::ContextPolicy;
use motet::directives::{ModelRef, ToolChoice};
use motet::mcp::McpServerConfig;
use motet::providers::budget::{Budget, BudgetLevel};
use motet::providers::config::{backoff_secs, response_bytes, timeout_secs};
use motet::providers::limits::Rates;
use motet::providers::{Cost, Price, PriceTable, ProviderKind, ProvidersConfig, Rate, models};
use serde::Deserialize;

use crate::calculator;
use crate::db::Db;
use crate::error::CliError;

/// The file read from the current directory when `--config` is not given.
pub const CONFIG_FILE: &str = "motet.toml";

/// The model a `openai-compat` server gets when none is named (llama.cpp serves whatever it
/// loaded, whatever the name).
pub const LOCAL_MODEL: &str = "openai-compat:local";

/// Each provider's model when its key is the only hint.
const DEFAULT_MODELS: [(ProviderKind, &str); 3] = [
    (ProviderKind::Anthropic, "anthropic:claude-sonnet-4-5"),
    (ProviderKind::OpenAi, "openai:gpt-5.2"),
    (ProviderKind::Gemini, "gemini:gemini-3-pro-preview"),
];

const KINDS: [ProviderKind; 4] = [
    ProviderKind::OpenAi,
    ProviderKind::Anthropic,
    ProviderKind::Gemini,
    ProviderKind::OpenAiCompat,
];

/// The context policy presets the `context` key names.
const PRESETS: &str = "auto, default, short, long or tool-focused";

/// `motet.toml` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `provider:model`.
    pub model: Option<String>,
    /// Models a request falls back to, in order, when the model is overloaded, down, out of
    /// capacity or finds the context too long (`provider:model` each).
    pub fallbacks: Option<Vec<String>>,
    /// The thread store: a SQLite path or a store URL (`postgres://...`).
    pub db: Option<PathBuf>,
    /// A context policy preset.
    pub context: Option<String>,
    /// The model's context window in tokens, for the `auto` preset when neither the model
    /// table nor the server says it.
    pub context_window: Option<u32>,
    /// Built-in tools the agent may call.
    pub tools: Option<Vec<String>>,
    /// Tools whose every call waits for a person's approval.
    pub approve: Option<Vec<String>>,
    /// The agent's system prompt.
    pub system_prompt: Option<String>,
    /// How long one request may take, in seconds.
    pub timeout_secs: Option<u64>,
    /// The output token limit of each LLM call.
    pub max_tokens: Option<u32>,
    /// `auto`, `required`, `none`, or the name of a tool the model must call first.
    pub tool_choice: Option<String>,
    /// Provider base URLs.
    #[serde(default)]
    pub base_urls: BaseUrls,
    /// Timeouts, retries and the response size limit of every LLM call.
    #[serde(default)]
    pub limits: LimitsTable,
    /// `[[mcp]]`: MCP servers whose tools the agent may call.
    #[serde(default)]
    pub mcp: Vec<McpEntry>,
    /// `[prices."provider:model"]`: prices in place of the shipped ones (docs/governance.md).
    #[serde(default)]
    pub prices: std::collections::BTreeMap<String, PriceEntry>,
    /// `[budget.request]`, `[budget.thread]`, `[budget.agent]`: hard and soft budgets.
    #[serde(default)]
    pub budget: BudgetTable,
    /// `[serve]`: what `motet serve` listens on and who may reach it.
    #[serde(default)]
    pub serve: ServeTable,
}

/// The `[serve]` table: `motet serve`'s address, its bearer tokens, CORS.
///
/// ```toml
/// [serve]
/// addr = "0.0.0.0:8420"
/// cors_origins = ["https://console.example"]
/// [[serve.tokens]]
/// token_env = "MOTET_UI_TOKEN"   # or token = "..." (then keep the file private)
/// agents = ["cli"]               # the agents it reaches; every one when left out
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeTable {
    /// Where to listen (`--addr` over it).
    pub addr: Option<String>,
    /// Origins allowed by CORS; none: CORS off.
    #[serde(default)]
    pub cors_origins: Vec<String>,
    /// The bearer tokens accepted (`MOTET_SERVE_TOKEN` is one more, reaching every agent).
    #[serde(default)]
    pub tokens: Vec<TokenEntry>,
}

/// One `[[serve.tokens]]` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// The token itself.
    pub token: Option<String>,
    /// The environment variable holding the token.
    pub token_env: Option<String>,
    /// The agents it reaches; every served agent when `None`.
    pub agents: Option<Vec<String>>,
}

/// One `[prices."provider:model"]` table: USD per million tokens. A cache price left out is the
/// input price; the reasoning price left out is the output price.
///
/// ```toml
/// [prices."openai-compat:my-hosted-llama"]
/// input = 0.20
/// output = 0.60
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceEntry {
    /// Uncached input.
    pub input: f64,
    /// Input read from the provider's cache.
    pub cache_read: Option<f64>,
    /// Input written to the provider's cache.
    pub cache_write: Option<f64>,
    /// Output.
    pub output: f64,
    /// Reasoning output.
    pub reasoning: Option<f64>,
}

/// `[budget.*]`: the budget of each request, each thread and the agent. (The command
/// line's agent carries no tenant label, so it has no tenant budget.)
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetTable {
    /// Each request.
    pub request: Option<BudgetEntry>,
    /// Each thread.
    pub thread: Option<BudgetEntry>,
    /// The agent.
    pub agent: Option<BudgetEntry>,
}

/// One budget: a hard limit in tokens (input plus output), dollars, or both, and a soft step
/// in either or both (passing each multiple of it waits for a person's approval).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetEntry {
    /// Input plus output tokens.
    pub tokens: Option<u64>,
    /// US dollars at the price table's prices.
    pub usd: Option<f64>,
    /// The soft step in tokens.
    pub soft_tokens: Option<u64>,
    /// The soft step in US dollars.
    pub soft_usd: Option<f64>,
}

/// One `[[mcp]]` entry: an MCP server, started as a command (stdio) or reached at a URL
/// (Streamable HTTP).
///
/// ```toml
/// [[mcp]]
/// name = "everything"
/// command = "npx"
/// args = ["-y", "@modelcontextprotocol/server-everything"]
///
/// [[mcp]]
/// name = "search"
/// url = "https://mcp.example.com/mcp"
/// headers = { Authorization = "Bearer ${SEARCH_TOKEN}" }
/// tools = ["web_search"]
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpEntry {
    /// The server's name; its tools are `<name>_<tool>` unless `tool_prefix` says otherwise.
    pub name: String,
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// The endpoint of a Streamable HTTP server.
    pub url: Option<String>,
    /// Headers sent with every HTTP request; `${VAR}` in a value is read from the environment.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// Only these of the server's tools (their names on the server); default: all.
    pub tools: Option<Vec<String>>,
    /// What the tools' names start with (default `<name>_`; `""` keeps the server's names).
    pub tool_prefix: Option<String>,
    /// Seconds to start the server and list its tools (default 30).
    pub connect_timeout: Option<f64>,
}

/// An `[[mcp]]` server as the agent uses it.
#[derive(Debug, Clone)]
pub struct McpSettings {
    /// How to reach it.
    pub config: McpServerConfig,
    /// Only these of its tools (names on the server), when given.
    pub tools: Option<Vec<String>>,
}

/// `[limits]`: how long an LLM call may wait, how often it is retried and how much it may
/// hold, below the environment's `MOTET_*` variables.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsTable {
    /// Seconds to establish a connection (`MOTET_CONNECT_TIMEOUT`).
    pub connect_timeout: Option<f64>,
    /// Seconds until the response headers and first bytes (`MOTET_FIRST_BYTE_TIMEOUT`).
    pub first_byte_timeout: Option<f64>,
    /// Seconds between two reads of a streaming answer (`MOTET_IDLE_TIMEOUT`).
    pub idle_timeout: Option<f64>,
    /// Retries of a call that failed before any content (`MOTET_MAX_RETRIES`).
    pub max_retries: Option<u32>,
    /// Seconds before the first retry, doubled each time (`MOTET_INITIAL_BACKOFF`).
    pub initial_backoff: Option<f64>,
    /// The longest wait between retries, in seconds (`MOTET_MAX_BACKOFF`).
    pub max_backoff: Option<f64>,
    /// Bytes of text, reasoning and tool arguments one answer may hold
    /// (`MOTET_MAX_RESPONSE_BYTES`).
    pub max_response_bytes: Option<u64>,
    /// `[limits.openai]`: the OpenAI account's shared limits.
    pub openai: Option<AccountLimits>,
    /// `[limits.openai-responses]`.
    #[serde(rename = "openai-responses")]
    pub openai_responses: Option<AccountLimits>,
    /// `[limits.anthropic]`.
    pub anthropic: Option<AccountLimits>,
    /// `[limits.gemini]`.
    pub gemini: Option<AccountLimits>,
    /// `[limits.openai-compat]`.
    #[serde(rename = "openai-compat")]
    pub openai_compat: Option<AccountLimits>,
}

/// `[limits.<provider>]`: the provider account's shared limits. Calls past them wait their
/// turn instead of meeting the provider's 429s; limits the provider's headers announce lower
/// these on their own.
///
/// ```toml
/// [limits.openai]
/// requests_per_minute = 500
/// input_tokens_per_minute = 200000
/// output_tokens_per_minute = 50000
/// concurrent = 16
/// ```
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountLimits {
    /// Requests per minute.
    pub requests_per_minute: Option<u64>,
    /// Input tokens per minute.
    pub input_tokens_per_minute: Option<u64>,
    /// Output tokens per minute.
    pub output_tokens_per_minute: Option<u64>,
    /// Input and output tokens together per minute.
    pub tokens_per_minute: Option<u64>,
    /// Calls streaming at once (default 64).
    pub concurrent: Option<u32>,
}

/// `[base_urls]`: where each provider is, below the environment's `*_BASE_URL`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaseUrls {
    /// `openai:` and `openai-responses:` (with `/v1`).
    pub openai: Option<String>,
    /// `anthropic:`.
    pub anthropic: Option<String>,
    /// `gemini:`.
    pub gemini: Option<String>,
    /// `openai-compat:` (with `/v1`).
    #[serde(rename = "openai-compat")]
    pub openai_compat: Option<String>,
}

impl BaseUrls {
    fn get(&self, kind: ProviderKind) -> Option<&String> {
        match kind {
            ProviderKind::OpenAi => self.openai.as_ref(),
            ProviderKind::Anthropic => self.anthropic.as_ref(),
            ProviderKind::Gemini => self.gemini.as_ref(),
            ProviderKind::OpenAiCompat => self.openai_compat.as_ref(),
        }
    }
}

/// The configuration file that was read, if any.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Its path.
    pub path: Option<PathBuf>,
    /// Its contents.
    pub file: FileConfig,
}

impl Loaded {
    /// Reads `explicit` (which must exist), else `./motet.toml` when there is one.
    ///
    /// # Errors
    /// [`CliError::ConfigFile`] when the file cannot be read or parsed.
    pub fn read(explicit: Option<&Path>) -> Result<Self, CliError> {
        let path = match explicit {
            Some(path) => path.to_path_buf(),
            None => {
                let local = PathBuf::from(CONFIG_FILE);
                if !local.exists() {
                    return Ok(Self::default());
                }
                local
            }
        };
        let bytes =
            crate::input::read_capped(&path, crate::input::MAX_CONFIG_BYTES).map_err(|e| {
                CliError::ConfigFile {
                    path: path.clone(),
                    message: format!("cannot read it: {e}"),
                }
            })?;
        let text = String::from_utf8(bytes).map_err(|_| CliError::ConfigFile {
            path: path.clone(),
            message: "cannot read it: it is not UTF-8 text".to_owned(),
        })?;
        let file = toml::from_str::<FileConfig>(&text).map_err(|e| CliError::ConfigFile {
            path: path.clone(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        Ok(Self {
            path: Some(path),
            file,
        })
    }

    fn key_error(&self, key: &str, message: impl std::fmt::Display) -> CliError {
        CliError::ConfigFile {
            path: self.path.clone().unwrap_or_else(|| CONFIG_FILE.into()),
            message: format!("key `{key}`: {message}"),
        }
    }

    /// The thread store: `--db`, else `MOTET_DATABASE_URL` (through `env`), else the file's
    /// `db`, else `<data dir>/motet/motet.db` (its folder made by the first command that writes,
    /// never by one that reads: [`Db::default_file`]). Each is a SQLite path or a store URL
    /// ([`crate::db`]).
    ///
    /// # Errors
    /// [`CliError::BadFlag`], [`CliError::Environment`] or [`CliError::ConfigFile`] for a
    /// setting that names no store.
    pub fn db(
        &self,
        flag: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Db, CliError> {
        let config = self.path.as_deref().unwrap_or(Path::new(CONFIG_FILE));
        let file = self.file.db.as_deref().map(|db| (db, config));
        if let Some(db) = crate::db::chosen(flag, env, file)? {
            return Ok(db);
        }
        let dir = dirs::data_dir()
            .unwrap_or_else(|| PathBuf::from("."))
            .join("motet");
        Ok(Db::default_file(dir.join("motet.db")))
    }

    /// Everything an agent needs, with `env` standing for the process environment.
    ///
    /// # Errors
    /// [`CliError::UnknownModel`], [`CliError::ProviderConfig`] (no key or URL for the chosen
    /// provider), [`CliError::NoModel`], [`CliError::ConfigFile`] for a bad value in the file,
    /// [`CliError::BadFlag`] for a bad flag.
    pub fn settings(
        &self,
        flags: &Flags,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, CliError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let providers = self.providers(&var)?;
        let (input, source_name) = if let Some(model) = flags.model.as_deref() {
            (model.to_owned(), "--model".to_owned())
        } else if let Some(model) = var("MOTET_MODEL") {
            (model, "MOTET_MODEL".to_owned())
        } else if let Some(model) = &self.file.model {
            let file = self.path.as_deref().unwrap_or(Path::new(CONFIG_FILE));
            (model.clone(), format!("key `model` of {}", file.display()))
        } else {
            (
                choose_model(&providers)
                    .ok_or(CliError::NoModel)?
                    .to_owned(),
                "the environment".to_owned(),
            )
        };
        let unknown = |reason: String| CliError::UnknownModel {
            input: input.clone(),
            source_name: source_name.clone(),
            reason,
        };
        let model: ModelRef = input
            .parse()
            .map_err(|_| unknown("expected provider:model, e.g. openai-compat:smollm2".into()))?;
        let kind = ProviderKind::from_provider(model.provider()).map_err(|e| {
            unknown(
                e.to_string()
                    .trim_start_matches("configuration error: ")
                    .to_owned(),
            )
        })?;
        let (base_url, _) = providers
            .resolve(kind)
            .map_err(|e| CliError::ProviderConfig {
                model: model.to_string(),
                message: e
                    .to_string()
                    .trim_start_matches("configuration error: ")
                    .to_owned(),
            })?;
        self.check_base_urls()?;
        let fallbacks = self.fallbacks(&providers)?;
        let policy = self.policy(&model)?;
        let tools = self
            .file
            .tools
            .clone()
            .unwrap_or_else(|| vec![calculator::NAME.to_owned()]);
        if let Some(bad) = tools.iter().find(|t| t.as_str() != calculator::NAME) {
            return Err(self.key_error(
                "tools",
                format!("unknown tool `{bad}` (built in: {})", calculator::NAME),
            ));
        }
        let mcp = self.mcp()?;
        let approve = if flags.approve.is_empty() {
            self.file.approve.clone().unwrap_or_default()
        } else {
            flags.approve.clone()
        };
        if let Some(bad) = approve
            .iter()
            .find(|t| !tools.contains(t) && !mcp_may_offer(t, &mcp))
        {
            let message = format!(
                "`{bad}` is not one of the agent's tools ({})",
                tools.join(", ")
            );
            return Err(if flags.approve.is_empty() {
                self.key_error("approve", message)
            } else {
                CliError::BadFlag {
                    flag: "--approve".to_owned(),
                    message,
                }
            });
        }
        let tool_choice = match (&flags.tool_choice, &self.file.tool_choice) {
            (Some(flag), _) => {
                tool_choice(flag, &tools, &mcp).map_err(|message| CliError::BadFlag {
                    flag: "--tool-choice".to_owned(),
                    message,
                })?
            }
            (None, Some(key)) => tool_choice(key, &tools, &mcp)
                .map_err(|message| self.key_error("tool_choice", message))?,
            // A small local model answers arithmetic from memory, wrongly, rather than call
            // the tool it has: its first call must call one (the next is free to answer).
            (None, None) if model.provider() == "openai-compat" && !tools.is_empty() => {
                ToolChoice::Required
            }
            (None, None) => ToolChoice::Auto,
        };
        if flags.timeout == Some(0) {
            return Err(CliError::BadFlag {
                flag: "--timeout".to_owned(),
                message: "must be at least 1 (seconds)".to_owned(),
            });
        }
        if self.file.timeout_secs == Some(0) {
            return Err(self.key_error("timeout_secs", "must be at least 1"));
        }
        let timeout_secs = flags.timeout.or(self.file.timeout_secs).unwrap_or(120);
        if self.file.max_tokens == Some(0) {
            return Err(self.key_error("max_tokens", "must be at least 1"));
        }
        if self.file.context_window.is_some_and(|w| w < 256) {
            return Err(self.key_error("context_window", "must be at least 256 (tokens)"));
        }
        let limits = self.account_limits()?;
        let prices = self.prices()?;
        let budgets = self.budgets()?;
        Ok(Settings {
            prices,
            budgets,
            model,
            fallbacks,
            base_url,
            providers,
            limits,
            policy,
            tools,
            approve,
            mcp,
            tool_choice,
            system_prompt: self.file.system_prompt.clone(),
            timeout: Duration::from_secs(timeout_secs),
            max_tokens: self.file.max_tokens,
            context_window: self.file.context_window,
            auto_context: self.file.context.as_deref().is_none_or(|c| c == "auto"),
        })
    }

    /// The `fallbacks` models, checked: each a `provider:model` whose provider is configured.
    fn fallbacks(&self, providers: &ProvidersConfig) -> Result<Vec<ModelRef>, CliError> {
        let mut models = Vec::new();
        for text in self.file.fallbacks.iter().flatten() {
            let fail =
                |message: String| self.key_error("fallbacks", format!("`{text}`: {message}"));
            let model: ModelRef = text.parse().map_err(|_| {
                fail("expected provider:model, e.g. anthropic:claude-sonnet-4-5".into())
            })?;
            let configured = ProviderKind::from_provider(model.provider())
                .and_then(|kind| providers.resolve(kind));
            if let Err(error) = configured {
                let message = error.to_string();
                return Err(fail(
                    message
                        .trim_start_matches("configuration error: ")
                        .to_owned(),
                ));
            }
            models.push(model);
        }
        Ok(models)
    }

    /// The shipped price table with the file's `[prices."provider:model"]` in place of the
    /// shipped prices.
    fn prices(&self) -> Result<PriceTable, CliError> {
        let mut table = PriceTable::builtin();
        for (model, entry) in &self.file.prices {
            let key = format!("prices.\"{model}\"");
            if model.parse::<ModelRef>().is_err() {
                return Err(self.key_error(&key, "name a model as `provider:model`"));
            }
            let rate = |name: &str, usd: f64| {
                Rate::per_million_usd(usd).ok_or_else(|| {
                    self.key_error(
                        &format!("{key}.{name}"),
                        "must be a price in dollars per million tokens, 0 or more",
                    )
                })
            };
            let input = rate("input", entry.input)?;
            let output = rate("output", entry.output)?;
            table.set_price(
                model.clone(),
                Price {
                    input,
                    cache_read: rate("cache_read", entry.cache_read.unwrap_or(entry.input))?,
                    cache_write: rate("cache_write", entry.cache_write.unwrap_or(entry.input))?,
                    output,
                    reasoning: rate("reasoning", entry.reasoning.unwrap_or(entry.output))?,
                },
            );
        }
        Ok(table)
    }

    /// The file's `[budget.*]` tables, checked.
    fn budgets(&self) -> Result<Vec<(BudgetLevel, Budget)>, CliError> {
        let table = &self.file.budget;
        let mut budgets = Vec::new();
        for (level, entry) in [
            (BudgetLevel::Request, &table.request),
            (BudgetLevel::Thread, &table.thread),
            (BudgetLevel::Agent, &table.agent),
        ] {
            let Some(entry) = entry else { continue };
            let key = format!("budget.{level}");
            let mut budget = Budget::UNLIMITED;
            if let Some(tokens) = entry.tokens {
                budget = budget.with_tokens(tokens);
            }
            if let Some(usd) = entry.usd {
                let cost = Cost::from_usd(usd).ok_or_else(|| {
                    self.key_error(
                        &format!("{key}.usd"),
                        "must be an amount in dollars, 0 or more",
                    )
                })?;
                budget = budget.with_cost(cost);
            }
            if let Some(tokens) = entry.soft_tokens {
                if tokens == 0 {
                    return Err(self.key_error(
                        &format!("{key}.soft_tokens"),
                        "must be a number of tokens, 1 or more",
                    ));
                }
                budget = budget.with_soft_tokens(tokens);
            }
            if let Some(usd) = entry.soft_usd {
                let cost = Cost::from_usd(usd)
                    .filter(|c| *c > Cost::ZERO)
                    .ok_or_else(|| {
                        self.key_error(
                            &format!("{key}.soft_usd"),
                            "must be an amount in dollars, more than 0",
                        )
                    })?;
                budget = budget.with_soft_cost(cost);
            }
            if !budget.is_limited() {
                return Err(
                    self.key_error(&key, "give `tokens`, `usd`, `soft_tokens` or `soft_usd`")
                );
            }
            budgets.push((level, budget));
        }
        Ok(budgets)
    }

    /// The `[[mcp]]` servers, checked: a unique valid name, and a command or a URL.
    fn mcp(&self) -> Result<Vec<McpSettings>, CliError> {
        let mut servers: Vec<McpSettings> = Vec::with_capacity(self.file.mcp.len());
        for entry in &self.file.mcp {
            let fail =
                |message: String| self.key_error("mcp", format!("`{}`: {message}", entry.name));
            let mut config = match (&entry.command, &entry.url) {
                (Some(command), None) => {
                    if !entry.headers.is_empty() {
                        return Err(fail("`headers` are for `url` servers".into()));
                    }
                    let mut config =
                        McpServerConfig::stdio(&entry.name, command).args(entry.args.clone());
                    for (key, value) in &entry.env {
                        config = config.env(key, value);
                    }
                    if let Some(cwd) = &entry.cwd {
                        config = config.cwd(cwd);
                    }
                    config
                }
                (None, Some(url)) => {
                    if !entry.args.is_empty() || !entry.env.is_empty() || entry.cwd.is_some() {
                        return Err(fail(
                            "`args`, `env` and `cwd` are for `command` servers".into(),
                        ));
                    }
                    let mut config = McpServerConfig::http(&entry.name, url);
                    for (key, value) in &entry.headers {
                        config = config.header(key, value);
                    }
                    config
                }
                _ => return Err(fail("give exactly one of `command` and `url`".into())),
            };
            match entry.tool_prefix.as_deref() {
                Some("") => config = config.without_tool_prefix(),
                Some(prefix) => config = config.with_tool_prefix(prefix),
                None => {}
            }
            if let Some(secs) = entry.connect_timeout {
                let limit = Duration::try_from_secs_f64(secs)
                    .ok()
                    .filter(|limit| !limit.is_zero())
                    .ok_or_else(|| {
                        fail("`connect_timeout` must be a positive number of seconds".into())
                    })?;
                config = config.with_connect_timeout(limit);
            }
            config.validate().map_err(|e| {
                fail(
                    e.to_string()
                        .trim_start_matches(&format!("mcp server `{}`: ", entry.name))
                        .to_owned(),
                )
            })?;
            if servers.iter().any(|s| s.config.name() == entry.name) {
                return Err(fail("two servers have this name".into()));
            }
            servers.push(McpSettings {
                config,
                tools: entry.tools.clone(),
            });
        }
        Ok(servers)
    }

    /// The file's base URLs and limits, the environment's URLs, keys and limits over them,
    /// and for `openai-compat` the local server (`MOTET_LOCAL_LLM_URL` + `/v1`) when nothing
    /// else names one.
    fn providers(&self, var: &dyn Fn(&str) -> Option<String>) -> Result<ProvidersConfig, CliError> {
        let mut config = self.limits(ProvidersConfig::new())?;
        for kind in KINDS {
            if let Some(url) = self.file.base_urls.get(kind) {
                config = config.with_base_url(kind, url.clone());
            }
        }
        let mut config = config.with_vars(var).map_err(|e| CliError::Environment {
            message: e
                .to_string()
                .trim_start_matches("configuration error: ")
                .to_owned(),
        })?;
        if config
            .settings(ProviderKind::OpenAiCompat)
            .base_url
            .is_none()
            && let Some(local) = var("MOTET_LOCAL_LLM_URL")
        {
            let base = format!("{}/v1", local.trim_end_matches('/'));
            config = config.with_base_url(ProviderKind::OpenAiCompat, base);
        }
        Ok(config)
    }

    /// `config` with the file's `[limits]`, each checked as its variable is.
    fn limits(&self, mut config: ProvidersConfig) -> Result<ProvidersConfig, CliError> {
        let table = &self.file.limits;
        let timeouts = [
            (
                "limits.connect_timeout",
                table.connect_timeout,
                &mut config.timeouts.connect,
            ),
            (
                "limits.first_byte_timeout",
                table.first_byte_timeout,
                &mut config.timeouts.first_byte,
            ),
            (
                "limits.idle_timeout",
                table.idle_timeout,
                &mut config.timeouts.idle,
            ),
        ];
        for (key, seconds, field) in timeouts {
            if let Some(seconds) = seconds {
                *field = timeout_secs(seconds).map_err(|why| self.key_error(key, why))?;
            }
        }
        let backoffs = [
            (
                "limits.initial_backoff",
                table.initial_backoff,
                &mut config.retry.initial_backoff,
            ),
            (
                "limits.max_backoff",
                table.max_backoff,
                &mut config.retry.max_backoff,
            ),
        ];
        for (key, seconds, field) in backoffs {
            if let Some(seconds) = seconds {
                *field = backoff_secs(seconds).map_err(|why| self.key_error(key, why))?;
            }
        }
        if let Some(retries) = table.max_retries {
            config.retry.max_retries = retries;
        }
        if let Some(bytes) = table.max_response_bytes {
            config.limits.max_response_bytes = response_bytes(bytes)
                .map_err(|why| self.key_error("limits.max_response_bytes", why))?;
        }
        Ok(config)
    }

    /// The `[limits.<provider>]` tables as the runtime takes them, each value checked.
    fn account_limits(&self) -> Result<Vec<(String, Rates)>, CliError> {
        let table = &self.file.limits;
        let accounts = [
            ("openai", table.openai),
            ("openai-responses", table.openai_responses),
            ("anthropic", table.anthropic),
            ("gemini", table.gemini),
            ("openai-compat", table.openai_compat),
        ];
        let mut limits = Vec::new();
        for (provider, account) in accounts {
            let Some(account) = account else { continue };
            let mut rates = Rates::unlimited();
            let per_minute = [
                ("requests_per_minute", account.requests_per_minute),
                ("input_tokens_per_minute", account.input_tokens_per_minute),
                ("output_tokens_per_minute", account.output_tokens_per_minute),
                ("tokens_per_minute", account.tokens_per_minute),
            ];
            for (key, value) in per_minute {
                if value == Some(0) {
                    return Err(self.key_error(
                        &format!("limits.{provider}.{key}"),
                        "must be at least 1 (leave it out for no limit)",
                    ));
                }
            }
            rates.requests_per_minute = account.requests_per_minute;
            rates.input_tokens_per_minute = account.input_tokens_per_minute;
            rates.output_tokens_per_minute = account.output_tokens_per_minute;
            rates.tokens_per_minute = account.tokens_per_minute;
            if let Some(concurrent) = account.concurrent {
                if concurrent == 0 {
                    return Err(self.key_error(
                        &format!("limits.{provider}.concurrent"),
                        "must be at least 1",
                    ));
                }
                rates = rates.with_concurrent(concurrent);
            }
            limits.push((provider.to_owned(), rates));
        }
        Ok(limits)
    }

    /// Every `[base_urls]` entry must be an `http://` or `https://` URL with a host: a typo
    /// is said at load, naming the key, not later as a connection failure.
    fn check_base_urls(&self) -> Result<(), CliError> {
        let urls = &self.file.base_urls;
        let entries = [
            ("base_urls.openai", &urls.openai),
            ("base_urls.anthropic", &urls.anthropic),
            ("base_urls.gemini", &urls.gemini),
            ("base_urls.openai-compat", &urls.openai_compat),
        ];
        for (key, url) in entries {
            let Some(url) = url else { continue };
            let host = url
                .strip_prefix("https://")
                .or_else(|| url.strip_prefix("http://"))
                .and_then(|rest| rest.split(['/', '?', '#']).next())
                .filter(|host| !host.is_empty() && !host.contains(char::is_whitespace));
            if host.is_none() {
                return Err(self.key_error(
                    key,
                    format!("`{url}` is not an http:// or https:// URL with a host"),
                ));
            }
        }
        Ok(())
    }

    fn policy(&self, model: &ModelRef) -> Result<Option<ContextPolicy>, CliError> {
        let preset = self.file.context.as_deref().unwrap_or("auto");
        Ok(Some(match preset {
            "auto" => ContextPolicy::for_model(model, &|m: &ModelRef| {
                models::capabilities(m).map(|c| c.context_window)
            }),
            "default" => ContextPolicy::new(),
            "short" => ContextPolicy::short_context(),
            "long" => ContextPolicy::long_context(),
            "tool-focused" => ContextPolicy::tool_focused(),
            other => {
                return Err(self.key_error(
                    "context",
                    format!("unknown preset `{other}` (expected {PRESETS})"),
                ));
            }
        }))
    }
}

/// The settings given as command-line flags (over the environment and the file).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--model`.
    pub model: Option<String>,
    /// `--timeout`, in seconds.
    pub timeout: Option<u64>,
    /// `--tool-choice`.
    pub tool_choice: Option<String>,
    /// `--approve`: tools whose calls wait for approval (over the file's `approve`).
    pub approve: Vec<String>,
}

/// A tool choice as written: `auto`, `required`, `none`, or the name of one of `tools` (the
/// model must call that tool first). After the model's first tool call the agent goes back to
/// `auto`, so it can answer.
///
/// A name an `[[mcp]]` server may offer (it starts with the server's prefix, or the server has
/// none) is accepted here; whether the server offers it is known once it is connected
/// (`agent::start` checks).
/// Whether one of the `mcp` servers may offer a tool called `name` (its prefix fits; what the
/// server really offers is known once it is connected).
fn mcp_may_offer(name: &str, mcp: &[McpSettings]) -> bool {
    mcp.iter().any(|server| {
        server
            .config
            .tool_prefix()
            .is_none_or(|prefix| name.len() > prefix.len() && name.starts_with(prefix))
    })
}

fn tool_choice(text: &str, tools: &[String], mcp: &[McpSettings]) -> Result<ToolChoice, String> {
    let maybe_mcp = |name: &str| mcp_may_offer(name, mcp);
    match text.trim() {
        "auto" => Ok(ToolChoice::Auto),
        "required" => Ok(ToolChoice::Required),
        "none" => Ok(ToolChoice::None),
        name if tools.iter().any(|t| t == name) || maybe_mcp(name) => Ok(ToolChoice::Tool {
            name: name.to_owned(),
        }),
        other => {
            let mut expected = vec!["auto", "required", "none"];
            expected.extend(tools.iter().map(String::as_str));
            Err(format!(
                "`{other}` is not a tool choice (expected {})",
                expected.join(", ")
            ))
        }
    }
}

/// The model when none was named: the first provider with an API key in the environment
/// (Anthropic, OpenAI, Gemini), else an OpenAI-compatible server when one is configured.
pub fn choose_model(providers: &ProvidersConfig) -> Option<&'static str> {
    DEFAULT_MODELS
        .iter()
        .find(|(kind, _)| providers.settings(*kind).api_key.is_some())
        .map(|(_, model)| *model)
        .or_else(|| {
            providers
                .settings(ProviderKind::OpenAiCompat)
                .base_url
                .as_ref()
                .map(|_| LOCAL_MODEL)
        })
}

/// The ports a local OpenAI-compatible server is looked for on when `MOTET_LOCAL_LLM_URL` is
/// not set: scripts/local-llm.sh's, then llama.cpp's own default.
pub const LOCAL_PORTS: [u16; 2] = [8089, 8080];

/// The local server's URL (`http://127.0.0.1:PORT`) when one answers `GET /health` with 200 on
/// one of [`LOCAL_PORTS`] of this machine — what the swarm example finds by itself, the CLI
/// finds too. Waits at most about a second in all.
pub fn find_local_server() -> Option<String> {
    use std::io::{Read, Write};
    LOCAL_PORTS.into_iter().find_map(|port| {
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut stream =
            std::net::TcpStream::connect_timeout(&address, Duration::from_millis(200)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .ok()?;
        stream
            .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .ok()?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).ok()?;
        (head.starts_with(b"HTTP/1.") && &head[9..12] == b"200")
            .then(|| format!("http://127.0.0.1:{port}"))
    })
}

/// What an agent is built from.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The model every call uses.
    pub model: ModelRef,
    /// The models a request falls back to, in order.
    pub fallbacks: Vec<ModelRef>,
    /// Where its provider is (for messages about an unreachable server).
    pub base_url: String,
    /// Keys and URLs.
    pub providers: ProvidersConfig,
    /// Each provider account's shared limits (`[limits.<provider>]`).
    pub limits: Vec<(String, Rates)>,
    /// The agent's context policy.
    pub policy: Option<ContextPolicy>,
    /// Enabled built-in tools.
    pub tools: Vec<String>,
    /// The tools whose every call waits for a person's approval.
    pub approve: Vec<String>,
    /// MCP servers whose tools the agent may call.
    pub mcp: Vec<McpSettings>,
    /// Whether the model must call a tool (a named one) before it answers.
    pub tool_choice: ToolChoice,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// How long one request may take.
    pub timeout: Duration,
    /// The output token limit of each LLM call (`None`: the provider's, or for a local
    /// server a quarter of its window).
    pub max_tokens: Option<u32>,
    /// The model's context window as the file gives it (`context_window`).
    pub context_window: Option<u32>,
    /// Whether the context policy follows the model's window (the `auto` preset): then the
    /// window a local server reports replaces the default when the model is not a known one.
    pub auto_context: bool,
    /// The prices calls are costed at: the shipped ones and the file's `[prices]`.
    pub prices: PriceTable,
    /// The file's budgets (`[budget.*]`), hard and soft.
    pub budgets: Vec<(BudgetLevel, Budget)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn model(name: &str) -> Flags {
        Flags {
            model: Some(name.to_owned()),
            ..Flags::default()
        }
    }

    fn loaded(text: &str) -> Loaded {
        Loaded {
            path: Some("motet.toml".into()),
            file: toml::from_str(text).unwrap(),
        }
    }

    #[test]
    fn mcp_entries_become_server_configs() {
        let vars = [("MOTET_OPENAI_COMPAT_BASE_URL", "http://h/v1")];
        let file = loaded(
            r#"
            [[mcp]]
            name = "files"
            command = "npx"
            args = ["-y", "server-filesystem", "/tmp"]
            env = { DEBUG = "1" }
            tools = ["read_file"]

            [[mcp]]
            name = "search"
            url = "https://mcp.example.com/mcp"
            headers = { Authorization = "Bearer ${TOKEN}" }
            tool_prefix = ""
            connect_timeout = 2.5
            "#,
        );
        let s = file
            .settings(&model("openai-compat:m"), &env(&vars))
            .unwrap();
        assert_eq!(s.mcp.len(), 2);
        let files = &s.mcp[0];
        assert_eq!(files.tools.as_deref(), Some(&["read_file".to_owned()][..]));
        assert_eq!(files.config.tool_prefix(), Some("files_"));
        let motet::mcp::McpTransport::Stdio(stdio) = files.config.transport() else {
            panic!("files is a stdio server");
        };
        assert_eq!(stdio.command, "npx");
        assert_eq!(stdio.args, ["-y", "server-filesystem", "/tmp"]);
        assert_eq!(stdio.env, [("DEBUG".to_owned(), "1".to_owned())]);
        let search = &s.mcp[1];
        assert_eq!(search.config.tool_prefix(), None);
        assert_eq!(search.config.connect_timeout(), Duration::from_millis(2500));
        let motet::mcp::McpTransport::Http(http) = search.config.transport() else {
            panic!("search is an http server");
        };
        assert_eq!(
            http.headers,
            [("Authorization".to_owned(), "Bearer ${TOKEN}".to_owned())]
        );
    }

    #[test]
    fn fallbacks_are_models_whose_providers_are_configured() {
        let vars = [
            ("MOTET_OPENAI_COMPAT_BASE_URL", "http://h/v1"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
        ];
        let s = loaded(r#"fallbacks = ["anthropic:claude-sonnet-4-5", "openai-compat:small"]"#)
            .settings(&model("openai-compat:m"), &env(&vars))
            .unwrap();
        let names: Vec<String> = s.fallbacks.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["anthropic:claude-sonnet-4-5", "openai-compat:small"]
        );
        for (text, reason) in [
            (r#"fallbacks = ["claude"]"#, "expected provider:model"),
            (r#"fallbacks = ["nobody:m"]"#, "nobody"),
            (
                r#"fallbacks = ["gemini:gemini-2.5-flash"]"#,
                "GEMINI_API_KEY",
            ),
        ] {
            let err = loaded(text)
                .settings(&model("openai-compat:m"), &env(&vars))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("key `fallbacks`") && err.contains(reason),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn tool_choice_may_name_a_tool_an_mcp_server_may_offer() {
        let vars = [("MOTET_OPENAI_COMPAT_BASE_URL", "http://h/v1")];
        let file = "tools = []\n[[mcp]]\nname = \"fs\"\ncommand = \"x\"\n";
        let s = loaded(&format!("tool_choice = \"fs_read\"\n{file}"))
            .settings(&model("openai-compat:m"), &env(&vars))
            .unwrap();
        assert_eq!(
            s.tool_choice,
            ToolChoice::Tool {
                name: "fs_read".into()
            }
        );
        for other in ["fs_", "other_read"] {
            let err = loaded(&format!("tool_choice = \"{other}\"\n{file}"))
                .settings(&model("openai-compat:m"), &env(&vars))
                .unwrap_err();
            assert!(err.to_string().contains("tool_choice"), "{err}");
        }
    }

    #[test]
    fn bad_mcp_entries_are_refused_with_the_reason() {
        let vars = [("MOTET_OPENAI_COMPAT_BASE_URL", "http://h/v1")];
        for (text, reason) in [
            ("[[mcp]]\nname = \"a\"", "exactly one of"),
            (
                "[[mcp]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h\"",
                "exactly one of",
            ),
            ("[[mcp]]\nname = \"a b\"\ncommand = \"x\"", "name must be"),
            ("[[mcp]]\nname = \"a\"\nurl = \"ftp://h\"", "http://"),
            (
                "[[mcp]]\nname = \"a\"\ncommand = \"x\"\nheaders = { A = \"b\" }",
                "`headers` are for",
            ),
            (
                "[[mcp]]\nname = \"a\"\ncommand = \"x\"\n[[mcp]]\nname = \"a\"\ncommand = \"y\"",
                "two servers",
            ),
            (
                "[[mcp]]\nname = \"a\"\ncommand = \"x\"\nconnect_timeout = 0",
                "connect_timeout",
            ),
        ] {
            let err = loaded(text)
                .settings(&model("openai-compat:m"), &env(&vars))
                .unwrap_err()
                .to_string();
            assert!(err.contains("mcp") && err.contains(reason), "{text}: {err}");
        }
    }

    #[test]
    fn flag_beats_environment_beats_file() {
        let file = loaded("model = \"openai-compat:from-file\"");
        let vars = [
            ("MOTET_MODEL", "openai-compat:from-env"),
            ("MOTET_OPENAI_COMPAT_BASE_URL", "http://h/v1"),
        ];
        let s = file
            .settings(&model("openai-compat:flag"), &env(&vars))
            .unwrap();
        assert_eq!(s.model.to_string(), "openai-compat:flag");
        let s = file.settings(&Flags::default(), &env(&vars)).unwrap();
        assert_eq!(s.model.to_string(), "openai-compat:from-env");
        let s = file.settings(&Flags::default(), &env(&vars[1..])).unwrap();
        assert_eq!(s.model.to_string(), "openai-compat:from-file");
    }

    #[test]
    fn picks_a_keyed_provider_then_the_local_server() {
        let none = Loaded::default();
        let s = none
            .settings(&Flags::default(), &env(&[("OPENAI_API_KEY", "sk-x")]))
            .unwrap();
        assert_eq!(s.model.to_string(), "openai:gpt-5.2");
        let s = none
            .settings(
                &Flags::default(),
                &env(&[("MOTET_LOCAL_LLM_URL", "http://127.0.0.1:8089/")]),
            )
            .unwrap();
        assert_eq!(s.model.to_string(), LOCAL_MODEL);
        assert_eq!(s.base_url, "http://127.0.0.1:8089/v1");
        assert!(matches!(
            none.settings(&Flags::default(), &env(&[])),
            Err(CliError::NoModel)
        ));
    }

    #[test]
    fn environment_urls_beat_the_file() {
        let file = loaded("[base_urls]\nopenai-compat = \"http://file/v1\"");
        let s = file.settings(&model("openai-compat:m"), &env(&[])).unwrap();
        assert_eq!(s.base_url, "http://file/v1");
        let s = file
            .settings(
                &model("openai-compat:m"),
                &env(&[("MOTET_OPENAI_COMPAT_BASE_URL", "http://env/v1")]),
            )
            .unwrap();
        assert_eq!(s.base_url, "http://env/v1");
    }

    #[test]
    fn bad_values_name_the_key_and_the_file() {
        let vars = [("MOTET_LOCAL_LLM_URL", "http://h")];
        let err = loaded("context = \"huge\"")
            .settings(&Flags::default(), &env(&vars))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("motet.toml") && err.contains("`context`"),
            "{err}"
        );
        let err = loaded("tools = [\"shell\"]")
            .settings(&Flags::default(), &env(&vars))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`tools`") && err.contains("shell"), "{err}");
        let err = loaded("model = \"nocolon\"")
            .settings(&Flags::default(), &env(&vars))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`model`") && err.contains("nocolon"), "{err}");
        assert!(toml::from_str::<FileConfig>("modle = \"x\"").is_err());
    }

    #[test]
    fn a_missing_key_names_the_variable() {
        let err = Loaded::default()
            .settings(&model("anthropic:claude-sonnet-4-5"), &env(&[]))
            .unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
        let err = Loaded::default()
            .settings(&model("mystery:model"), &env(&[]))
            .unwrap_err();
        assert!(matches!(err, CliError::UnknownModel { .. }), "{err}");
    }

    #[test]
    fn tool_choice_from_the_flag_over_the_file() {
        let vars = [("MOTET_LOCAL_LLM_URL", "http://h")];
        // A local model's first call must call a tool; a hosted one decides for itself.
        let local = Loaded::default()
            .settings(&Flags::default(), &env(&vars))
            .unwrap();
        assert_eq!(local.tool_choice, ToolChoice::Required);
        let hosted = Loaded::default()
            .settings(&Flags::default(), &env(&[("OPENAI_API_KEY", "sk-test")]))
            .unwrap();
        assert_eq!(hosted.tool_choice, ToolChoice::Auto);
        let no_tools = loaded("tools = []")
            .settings(&Flags::default(), &env(&vars))
            .unwrap();
        assert_eq!(no_tools.tool_choice, ToolChoice::Auto);
        let file = loaded("tool_choice = \"auto\"");
        let s = file.settings(&Flags::default(), &env(&vars)).unwrap();
        assert_eq!(s.tool_choice, ToolChoice::Auto);
        let file = loaded("tool_choice = \"required\"");
        let s = file.settings(&Flags::default(), &env(&vars)).unwrap();
        assert_eq!(s.tool_choice, ToolChoice::Required);
        let flag = Flags {
            tool_choice: Some("calculator".to_owned()),
            ..Flags::default()
        };
        let s = file.settings(&flag, &env(&vars)).unwrap();
        assert_eq!(
            s.tool_choice,
            ToolChoice::Tool {
                name: "calculator".into()
            }
        );

        let bad = Flags {
            tool_choice: Some("shell".to_owned()),
            ..Flags::default()
        };
        let err = file.settings(&bad, &env(&vars)).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let text = err.to_string();
        assert!(
            text.contains("--tool-choice") && text.contains("`shell`"),
            "{text}"
        );
        assert!(
            text.contains("required") && text.contains("calculator"),
            "{text}"
        );
        let err = loaded("tool_choice = \"always\"")
            .settings(&Flags::default(), &env(&vars))
            .unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert!(err.to_string().contains("`tool_choice`"), "{err}");
        // A named tool must be enabled.
        let err = loaded("tools = []\ntool_choice = \"calculator\"")
            .settings(&Flags::default(), &env(&vars))
            .unwrap_err();
        assert!(err.to_string().contains("`calculator`"), "{err}");
    }

    #[test]
    fn limits_from_the_file_below_the_environment() {
        let vars = [("MOTET_LOCAL_LLM_URL", "http://h")];
        let defaults = Loaded::default()
            .settings(&Flags::default(), &env(&vars))
            .unwrap()
            .providers;
        assert_eq!(defaults.timeouts, ProvidersConfig::new().timeouts);
        assert_eq!(defaults.retry, ProvidersConfig::new().retry);
        assert_eq!(defaults.limits, ProvidersConfig::new().limits);

        let file = loaded(
            "[limits]\nconnect_timeout = 3\nfirst_byte_timeout = 45\nidle_timeout = 2.5\n\
             max_retries = 0\ninitial_backoff = 0.25\nmax_backoff = 4\nmax_response_bytes = 1000\n",
        );
        let p = file
            .settings(&Flags::default(), &env(&vars))
            .unwrap()
            .providers;
        assert_eq!(p.timeouts.connect, Duration::from_secs(3));
        assert_eq!(p.timeouts.first_byte, Duration::from_secs(45));
        assert_eq!(p.timeouts.idle, Duration::from_millis(2500));
        assert_eq!(p.retry.max_retries, 0);
        assert_eq!(p.retry.initial_backoff, Duration::from_millis(250));
        assert_eq!(p.retry.max_backoff, Duration::from_secs(4));
        assert_eq!(p.limits.max_response_bytes, 1000);

        let over = [
            ("MOTET_LOCAL_LLM_URL", "http://h"),
            ("MOTET_IDLE_TIMEOUT", "7"),
            ("MOTET_MAX_RETRIES", "5"),
        ];
        let p = file
            .settings(&Flags::default(), &env(&over))
            .unwrap()
            .providers;
        assert_eq!(
            p.timeouts.idle,
            Duration::from_secs(7),
            "the environment wins"
        );
        assert_eq!(p.retry.max_retries, 5, "the environment wins");
        assert_eq!(
            p.limits.max_response_bytes, 1000,
            "the file's, not overridden"
        );
    }

    #[test]
    fn a_bad_limit_names_its_key_or_its_variable() {
        let vars = [("MOTET_LOCAL_LLM_URL", "http://h")];
        for (text, key) in [
            (
                "[limits]\nidle_timeout = 0",
                "`limits.idle_timeout`: must be more than 0",
            ),
            (
                "[limits]\nconnect_timeout = -2.5",
                "`limits.connect_timeout`",
            ),
            ("[limits]\nmax_backoff = -1", "`limits.max_backoff`"),
            (
                "[limits]\nmax_response_bytes = 0",
                "`limits.max_response_bytes`",
            ),
        ] {
            let err = loaded(text)
                .settings(&Flags::default(), &env(&vars))
                .unwrap_err();
            assert_eq!(err.exit_code(), 3, "{text}");
            let err = err.to_string();
            assert!(
                err.contains("motet.toml") && err.contains(key),
                "{text}: {err}"
            );
        }
        assert!(toml::from_str::<FileConfig>("[limits]\nidle = 3").is_err());
        assert!(toml::from_str::<FileConfig>("[limits]\nmax_retries = -1").is_err());

        let bad = [
            ("MOTET_LOCAL_LLM_URL", "http://h"),
            ("MOTET_MAX_RETRIES", "lots"),
        ];
        let err = Loaded::default()
            .settings(&Flags::default(), &env(&bad))
            .unwrap_err();
        assert!(matches!(err, CliError::Environment { .. }), "{err:?}");
        assert_eq!(err.exit_code(), 3);
        assert_eq!(
            err.to_string(),
            "environment: MOTET_MAX_RETRIES=`lots`: not a whole number of retries (like 2, or 0 for none)"
        );
    }

    #[test]
    fn provider_accounts_get_their_shared_limits() {
        let vars = [("MOTET_LOCAL_LLM_URL", "http://h")];
        let none = Loaded::default()
            .settings(&Flags::default(), &env(&vars))
            .unwrap();
        assert!(
            none.limits.is_empty(),
            "nothing configured: the runtime's defaults"
        );
        let file = loaded(
            "[limits]\nmax_retries = 1\n\n[limits.openai]\nrequests_per_minute = 500\n\
             input_tokens_per_minute = 200000\noutput_tokens_per_minute = 50000\nconcurrent = 16\n\n\
             [limits.openai-compat]\ntokens_per_minute = 9000\n",
        );
        let limits = file
            .settings(&Flags::default(), &env(&vars))
            .unwrap()
            .limits;
        let openai = Rates::unlimited()
            .with_requests_per_minute(500)
            .with_input_tokens_per_minute(200_000)
            .with_output_tokens_per_minute(50_000)
            .with_concurrent(16);
        let compat = Rates::unlimited().with_tokens_per_minute(9000);
        assert_eq!(
            limits,
            vec![
                ("openai".to_owned(), openai),
                ("openai-compat".to_owned(), compat)
            ]
        );
    }

    #[test]
    fn a_bad_account_limit_is_a_config_error_naming_its_key() {
        let vars = [("MOTET_LOCAL_LLM_URL", "http://h")];
        for (text, key) in [
            (
                "[limits.openai]\nrequests_per_minute = 0",
                "`limits.openai.requests_per_minute`: must be at least 1",
            ),
            (
                "[limits.anthropic]\nconcurrent = 0",
                "`limits.anthropic.concurrent`: must be at least 1",
            ),
        ] {
            let err = loaded(text)
                .settings(&Flags::default(), &env(&vars))
                .unwrap_err();
            assert_eq!(err.exit_code(), 3, "{text}");
            let err = err.to_string();
            assert!(err.contains(key), "{text}: {err}");
        }
        for text in [
            "[limits.openai]\nrequests_per_hour = 5",
            "[limits.openai]\nrequests_per_minute = -5",
            "[limits.openai]\nconcurrent = \"many\"",
            "[limits.mistral]\nrequests_per_minute = 5",
        ] {
            // `Loaded::read` turns a parse failure into `CliError::ConfigFile`.
            assert!(toml::from_str::<FileConfig>(text).is_err(), "{text}");
        }
    }
}
