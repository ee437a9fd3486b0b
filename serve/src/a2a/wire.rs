//! The A2A 1.0 JSON this server reads and writes: the ProtoJSON form of the protocol's messages
//! (camelCase fields, enums by their proto names), only the fields motet uses.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC 2.0 request, as read before its method is known.
#[derive(Debug, Deserialize)]
pub(crate) struct RpcRequest {
    /// Must be `"2.0"`.
    #[serde(default)]
    pub(crate) jsonrpc: Option<String>,
    /// The request's id (a string, a number, or null), echoed in the answer.
    #[serde(default)]
    pub(crate) id: Value,
    /// The method.
    #[serde(default)]
    pub(crate) method: Option<String>,
    /// Its parameters.
    #[serde(default)]
    pub(crate) params: Option<Value>,
}

/// A task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum TaskState {
    /// Taken, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// Being worked on.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Waits for the client's input (a person's approval or answer).
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// Ended with an answer.
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Ended with a failure.
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Ended by a cancel.
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
}

impl TaskState {
    /// True for the states a task never leaves.
    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub(crate) enum Role {
    /// Not said.
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client.
    #[serde(rename = "ROLE_USER")]
    User,
    /// The agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// One part of a message or an artifact: text, structured data, or a file (bytes or a URL).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Part {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
    /// Structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) data: Option<Value>,
    /// A file's bytes (base64), which motet does not take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) raw: Option<String>,
    /// A file's URL, which motet does not take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
    /// The part's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) media_type: Option<String>,
}

impl Part {
    /// A text part.
    pub(crate) fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A data part.
    pub(crate) fn data(data: Value) -> Self {
        Self {
            data: Some(data),
            media_type: Some("application/json".to_owned()),
            ..Self::default()
        }
    }
}

/// A message, the client's or the agent's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Message {
    /// Its id.
    #[serde(default)]
    pub(crate) message_id: String,
    /// The conversation (a motet thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context_id: Option<String>,
    /// The task it belongs to (a motet run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task_id: Option<String>,
    /// Who wrote it.
    #[serde(default)]
    pub(crate) role: Role,
    /// What it says.
    #[serde(default)]
    pub(crate) parts: Vec<Part>,
}

/// A task's status.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskStatus {
    /// Its state.
    pub(crate) state: TaskState,
    /// What the agent says about it (what it waits for, why it failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<Message>,
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Artifact {
    /// Its id, stable across the chunks that build it.
    pub(crate) artifact_id: String,
    /// Its name.
    pub(crate) name: String,
    /// Its content.
    pub(crate) parts: Vec<Part>,
}

/// A task: a motet run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Task {
    /// Its id (the run's).
    pub(crate) id: String,
    /// Its conversation (the run's thread).
    pub(crate) context_id: String,
    /// Where it is.
    pub(crate) status: TaskStatus,
    /// What it produced.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) artifacts: Vec<Artifact>,
    /// The messages of it kept.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) history: Vec<Message>,
}

/// One event of a stream, or the one answer of `SendMessage` (`task` only).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum StreamResponse {
    /// The task as it stands.
    Task(Task),
    /// Its status changed.
    StatusUpdate(StatusUpdate),
    /// An artifact grew or was replaced.
    ArtifactUpdate(ArtifactUpdate),
}

/// A change of a task's status.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StatusUpdate {
    /// The task.
    pub(crate) task_id: String,
    /// Its conversation.
    pub(crate) context_id: String,
    /// The new status.
    pub(crate) status: TaskStatus,
}

/// A chunk of an artifact.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ArtifactUpdate {
    /// The task.
    pub(crate) task_id: String,
    /// Its conversation.
    pub(crate) context_id: String,
    /// The chunk.
    pub(crate) artifact: Artifact,
    /// True: add to what was sent of this artifact; false: it starts (or starts over) here.
    pub(crate) append: bool,
    /// True on the artifact's last chunk.
    pub(crate) last_chunk: bool,
}

/// The parameters of `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendMessageRequest {
    /// The message.
    pub(crate) message: Message,
    /// How to answer.
    #[serde(default)]
    pub(crate) configuration: SendConfiguration,
}

/// How `SendMessage` answers.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendConfiguration {
    /// Answer at once, without waiting for the task to end or wait for input.
    #[serde(default)]
    pub(crate) return_immediately: bool,
    /// At most this many history messages in the answer.
    #[serde(default)]
    pub(crate) history_length: Option<u32>,
    /// A push notification config, which motet does not take.
    #[serde(default)]
    pub(crate) task_push_notification_config: Option<Value>,
}

/// The parameters of `GetTask`, `CancelTask` and `SubscribeToTask`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskRequest {
    /// The task.
    pub(crate) id: String,
    /// At most this many history messages in the answer (`GetTask`).
    #[serde(default)]
    pub(crate) history_length: Option<u32>,
}
