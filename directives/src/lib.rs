//! Directives and the provider-agnostic LLM vocabulary.
//!
//! A strategy never performs IO: it returns [`Directive`]s, descriptions of work for the runtime
//! (stream an LLM call, run a tool, summarize, emit a signal, spawn or stop a child, schedule,
//! stop). Each directive carries the ids its result signal echoes, so the strategy can correlate
//! results and ignore stale ones. Everything here is plain data: serializable, comparable, and
//! replayable from a log.
//!
//! The LLM vocabulary is seed 004's ordered transcript: an [`AssistantMessage`] is an ordered list
//! of [`AssistantBlock`]s (text, reasoning, tool use), each with optional [`ProviderMeta`] — the
//! continuity data (thinking signatures, reasoning ids and encrypted content, thought signatures)
//! a provider needs to see again, byte for byte, when the conversation resumes.
//!
//! # Layout
//! - `message` — [`Message`], [`AssistantMessage`], [`AssistantBlock`], [`ProviderMeta`],
//!   [`ToolCallIter`].
//! - `content` — what a user message or a tool result carries besides text: [`UserContent`],
//!   [`Part`] (text, image, document, audio), [`MediaSource`] and the shared bytes, [`Blob`].
//! - `tool` — [`ToolArgs`], [`ToolCallView`], [`ToolResult`], [`ToolDef`], [`ToolChoice`].
//! - `usage` — [`Usage`], [`ModelUsage`], [`StopReason`].
//! - `response` — [`LlmResponse`]: an assistant turn and its usage.
//! - `request` — [`LlmRequest`], [`LlmOptions`], [`ModelRef`].
//! - `response_format` — structured output: [`ResponseFormat`] (a JSON Schema the answer must
//!   match) and its check, [`ResponseFormat::decode`], failing with [`AnswerError`].
//! - `hosted` — [`HostedTool`] (web search, code execution, remote MCP servers) and [`Secret`].
//! - `directive` — [`Directive`] and one payload struct per variant.
//! - `pause` — a call that waits for a person: [`Pause`] ([`Approval`] or a question) and the
//!   [`Response`] that resumes it.
//! - [`budget`] — the budget levels and measures, and a [`budget::SoftLimit`] a call reached
//!   (reported on `llm.failed`, approved on the next [`LlmStream`]).
//! - [`results`] — what comes back: the result signal of each directive, typed, and
//!   [`results::Outcome`] to decode one.
//! - [`cron`] — cron expressions ([`cron::CronExpr`]) and what a timer owes after downtime
//!   ([`cron::due`] under a [`cron::Misfire`] policy): pure, the clock and time zone passed in.
//! - `error` — [`DirectiveError`].
//!
//! # Example
//! ```
//! use motet_directives::{AssistantBlock, AssistantMessage, StopReason, ToolArgs};
//!
//! let turn = AssistantMessage {
//!     blocks: vec![
//!         AssistantBlock::text("Let me add those."),
//!         AssistantBlock::tool_use("call_1", "add", ToolArgs::from_text(r#"{"a":2,"b":2}"#)),
//!     ],
//!     stop_reason: StopReason::ToolUse,
//! };
//! #[derive(serde::Deserialize)]
//! struct Add { a: i64, b: i64 }
//! let call = turn.tool_calls().next().unwrap();
//! let args: Add = call.parse_args().unwrap();
//! assert_eq!((call.name, args.a + args.b), ("add", 4));
//! ```

pub mod budget;
mod content;
pub mod cron;
mod directive;
mod error;
mod hosted;
mod message;
mod pause;
mod request;
mod response;
mod response_format;
pub mod results;
mod tool;
mod usage;

/// Shared text in one word (a reference-counted string): call ids and a thread entry's refs.
pub use arcstr::ArcStr;
pub use content::{Attachments, Blob, MediaSource, Part, PartKind, UserContent};
pub use directive::{
    CallId, CancelSchedule, ChildSpec, Cron, Directive, Emit, EmitTarget, LlmStream, Reply,
    ReplyStatus, Schedule, ScheduleId, Spawn, Stop, StopChild, Summarize, ToolExec,
};
pub use error::DirectiveError;
pub use hosted::{HostedTool, McpApproval, McpServer, Secret, UserLocation, WebSearch};
pub use message::ToolCallIter;
pub use message::{AssistantBlock, AssistantMessage, Message, ProviderMeta};
pub use pause::{Approval, OnExpiry, Pause, Response};
pub use request::{CacheTtl, LlmOptions, LlmRequest, ModelRef, PromptCache, ReasoningEffort};
pub use response::LlmResponse;
pub use response_format::{AnswerError, ResponseFormat, is_valid_schema_name};
pub use tool::{ToolArgs, ToolCallView, ToolChoice, ToolDef, ToolDefs, ToolResult};
pub use usage::{ModelUsage, StopReason, Usage};
