//! A JSON-RPC body read into one A2A call, or the error that answers it (pure, plain
//! `#[test]`s): JSON-RPC 2.0 only, no batches; A2A 1.0's method names; `A2A-Version` 1.x.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::A2aError;
use super::wire::{RpcRequest, SendMessageRequest, TaskRequest};

/// One call an A2A client makes.
#[derive(Debug)]
pub(crate) enum Call {
    /// `SendMessage`.
    Send(SendMessageRequest),
    /// `SendStreamingMessage`.
    Stream(SendMessageRequest),
    /// `GetTask`.
    Get(TaskRequest),
    /// `CancelTask`.
    Cancel(TaskRequest),
    /// `SubscribeToTask`.
    Subscribe(TaskRequest),
}

/// The request `body` makes, with its id; or its id and the error that answers it. `version`
/// is the `A2A-Version` the client sent (none: 0.3, which is not served).
pub(crate) fn decode(
    body: &[u8],
    version: Option<&str>,
) -> Result<(Value, Call), (Value, A2aError)> {
    let json: Value =
        serde_json::from_slice(body).map_err(|e| (Value::Null, A2aError::Parse(e.to_string())))?;
    if json.is_array() {
        return Err((
            Value::Null,
            A2aError::InvalidRequest("batch requests are not served".into()),
        ));
    }
    let request: RpcRequest = serde_json::from_value(json).map_err(|e| {
        (
            Value::Null,
            A2aError::InvalidRequest(format!("not a JSON-RPC request: {e}")),
        )
    })?;
    let id = match &request.id {
        id @ (Value::String(_) | Value::Number(_) | Value::Null) => id.clone(),
        _ => {
            return Err((
                Value::Null,
                A2aError::InvalidRequest("the id must be a string, a number or null".into()),
            ));
        }
    };
    if request.jsonrpc.as_deref() != Some("2.0") {
        return Err((
            id,
            A2aError::InvalidRequest("`jsonrpc` must be \"2.0\"".into()),
        ));
    }
    let Some(method) = request.method else {
        return Err((id, A2aError::InvalidRequest("no `method`".into())));
    };
    let params = request.params.unwrap_or(Value::Object(Default::default()));
    let call = match method.as_str() {
        "SendMessage" => params_of(params).map(Call::Send),
        "SendStreamingMessage" => params_of(params).map(Call::Stream),
        "GetTask" => params_of(params).map(Call::Get),
        "CancelTask" => params_of(params).map(Call::Cancel),
        "SubscribeToTask" => params_of(params).map(Call::Subscribe),
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => Err(A2aError::PushNotificationNotSupported),
        "ListTasks" | "GetExtendedAgentCard" => Err(A2aError::UnsupportedOperation(format!(
            "`{method}` is not served"
        ))),
        _ => Err(A2aError::MethodNotFound(method.chars().take(64).collect())),
    };
    let call = call.map_err(|e| (id.clone(), e))?;
    check_version(version).map_err(|e| (id.clone(), e))?;
    Ok((id, call))
}

/// The method's parameters as `T`.
fn params_of<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    serde_json::from_value(params).map_err(|e| A2aError::InvalidParams(e.to_string()))
}

/// Whether the client's `A2A-Version` is one this server speaks (1.x; none means 0.3).
fn check_version(version: Option<&str>) -> Result<(), A2aError> {
    let version = version
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("0.3");
    match version.split('.').next() {
        Some("1") => Ok(()),
        _ => Err(A2aError::VersionNotSupported(
            version.chars().take(16).collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

    use super::*;
    use serde_json::json;

    fn code(body: &str, version: Option<&str>) -> (Value, i64) {
        let (id, error) = decode(body.as_bytes(), version).unwrap_err();
        (id, error.code())
    }

    #[test]
    fn a2a_1_0_methods_are_read_with_their_params() {
        let body = json!({"jsonrpc": "2.0", "id": "x1", "method": "SendMessage", "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"returnImmediately": true}}});
        let (id, call) = decode(body.to_string().as_bytes(), Some("1.0")).unwrap();
        assert_eq!(id, "x1");
        let Call::Send(send) = call else {
            panic!("{call:?}")
        };
        assert!(send.configuration.return_immediately);
        assert_eq!(send.message.parts[0].text.as_deref(), Some("hi"));
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask",
                          "params": {"id": "t1", "historyLength": 2}});
        let (_, call) = decode(body.to_string().as_bytes(), Some("1.0")).unwrap();
        assert!(
            matches!(call, Call::Get(TaskRequest { ref id, history_length: Some(2) }) if id == "t1")
        );
    }

    #[test]
    fn each_malformed_request_has_its_json_rpc_code() {
        assert_eq!(code("{", Some("1.0")), (Value::Null, -32700));
        assert_eq!(code("[]", Some("1.0")).1, -32600);
        assert_eq!(
            code(
                r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#,
                Some("1.0")
            ),
            (json!(1), -32600)
        );
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#,
                Some("1.0")
            )
            .1,
            -32600
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#, Some("1.0")).1, -32600);
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":1,"method":"message/send"}"#,
                Some("1.0")
            )
            .1,
            -32601
        );
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}"#,
                Some("1.0")
            )
            .1,
            -32602
        );
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks"}"#,
                Some("1.0")
            )
            .1,
            -32004
        );
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig"}"#,
                Some("1.0")
            )
            .1,
            -32003
        );
    }

    #[test]
    fn only_version_1_is_served_and_none_means_0_3() {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#;
        assert!(decode(body.as_bytes(), Some("1.0")).is_ok());
        assert!(decode(body.as_bytes(), Some("1.1")).is_ok());
        assert_eq!(code(body, None).1, -32009);
        assert_eq!(code(body, Some("0.3")).1, -32009);
        assert_eq!(code(body, Some(" ")).1, -32009);
    }
}
