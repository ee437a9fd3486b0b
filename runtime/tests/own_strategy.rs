//! A strategy of one's own, written against the runtime ↔ strategy protocol alone (nothing from
//! ReAct): it asks the model once with one tool on offer, runs the call the model makes and
//! replies with the tool's output; a failed LLM call is a failed reply. The strategy is the one
//! of `examples/strategy.rs` (an example cannot be imported).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::{Arc, Mutex};

use motet_agents::protocol::{self, AGENT_FAILED};
use motet_agents::{Env, Input, Strategy, StrategyError};
use motet_directives::results::Outcome;
use motet_directives::{
    AssistantBlock, AssistantMessage, CallId, Directive, LlmRequest, LlmResponse, LlmStream,
    Message, ModelRef, ToolArgs, ToolDefs, ToolExec, Usage,
};
use motet_providers::ProviderError;
use motet_runtime::agent::{AgentSpec, AskError, Runtime};
use motet_runtime::testing::{ScriptedModel, stop_for};
use motet_runtime::tool::{ToolError, ToolSet, tool_fn};
use motet_signals::Signal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Asks the model once, offering `tools`; answers with what the tool it calls says.
struct Converter {
    model: ModelRef,
    tools: ToolDefs,
}

/// What the running request waits for: the LLM call or tool run with this id.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Waiting {
    call: Option<CallId>,
    usage: Usage,
}

impl Strategy for Converter {
    type State = Waiting;

    fn init(&self, _env: &dyn Env) -> Waiting {
        Waiting::default()
    }

    fn handle(
        &self,
        state: &mut Waiting,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        let directive = match Input::of(signal)? {
            Input::Request(request) => {
                let call_id = CallId::new(env.fresh_id("call"));
                let messages = vec![
                    Message::system("Convert units with the `convert` tool."),
                    Message::user(request.query),
                ];
                let request =
                    LlmRequest::new(self.model.clone(), messages).with_tools(self.tools.clone());
                *state = Waiting {
                    call: Some(call_id.clone()),
                    usage: Usage::default(),
                };
                Directive::LlmStream(LlmStream { call_id, request })
            }
            // The result of a call the request no longer waits for (it was cancelled).
            Input::Outcome(outcome) if state.call.as_ref() != Some(outcome.call_id()) => {
                return Ok(Vec::new());
            }
            Input::Outcome(Outcome::Llm(result)) => {
                let (message, usage) = (result.response.message, result.response.usage);
                let Some(call) = message.tool_calls().next() else {
                    // The model answered without the tool: its text is the answer.
                    let reply = protocol::completed(signal, env, message.to_string(), usage)?;
                    return Ok(vec![state.end(reply)]);
                };
                let call_id = CallId::new(env.fresh_id("tool"));
                *state = Waiting {
                    call: Some(call_id.clone()),
                    usage,
                };
                Directive::ToolExec(ToolExec {
                    call_id,
                    tool_call_id: call.id.to_owned(),
                    name: call.name.to_owned(),
                    args: call.args.clone(),
                })
            }
            Input::Outcome(Outcome::Tool(done)) if done.result.is_error => {
                state.end(protocol::failed(signal, env, done.result.content)?)
            }
            Input::Outcome(Outcome::Tool(done)) => {
                let reply = protocol::completed(signal, env, done.result.content, state.usage)?;
                state.end(reply)
            }
            Input::Outcome(Outcome::LlmFailed(failure)) => {
                state.end(protocol::failed(signal, env, failure.error.message)?)
            }
            Input::Cancel(cancel) if state.call.is_some() => {
                let why = cancel.reason.unwrap_or_else(|| "cancelled".into());
                state.end(protocol::failed(signal, env, why)?)
            }
            // Every request must be answered, even one this strategy does not serve.
            Input::Summarize(_) | Input::Resume(_) => {
                protocol::failed(signal, env, "the converter keeps no history")?
            }
            _ => return Ok(Vec::new()),
        };
        Ok(vec![directive])
    }
}

impl Waiting {
    /// The request is over: `reply` answers it, and nothing is awaited any more.
    fn end(&mut self, reply: Directive) -> Directive {
        *self = Waiting::default();
        reply
    }
}

/// A length to convert.
#[derive(Deserialize, JsonSchema)]
struct Length {
    value: f64,
    from: String,
    to: String,
}

fn metres(unit: &str) -> Result<f64, ToolError> {
    match unit {
        "m" => Ok(1.0),
        "km" => Ok(1000.0),
        "ft" => Ok(0.3048),
        "mi" => Ok(1609.344),
        other => Err(ToolError::invalid_args(format!("unknown unit `{other}`"))),
    }
}

/// The arguments each run of `convert` got.
type Runs = Arc<Mutex<Vec<(f64, String, String)>>>;

/// `convert`, noting each run's arguments in `runs`.
fn converter_tools(runs: Runs) -> ToolSet {
    let convert = tool_fn("convert", "Converts a length.", move |l: Length| {
        runs.lock()
            .unwrap()
            .push((l.value, l.from.clone(), l.to.clone()));
        async move {
            let result = l.value * metres(&l.from)? / metres(&l.to)?;
            Ok(format!("{} {} = {result:.2} {}", l.value, l.from, l.to))
        }
    });
    ToolSet::builder().tool(convert).build().unwrap()
}

/// A converter agent answering with `model`, and the record of its tool's runs.
async fn spawn_converter(
    model: &ScriptedModel,
) -> (Runtime, motet_runtime::agent::AgentHandle, ToolDefs, Runs) {
    let runs = Runs::default();
    let tools = converter_tools(runs.clone());
    let definitions = tools.definitions();
    let strategy = Converter {
        model: "openai:scripted".parse().unwrap(),
        tools: definitions.clone(),
    };
    let runtime = Runtime::builder().llm(model.clone()).build().unwrap();
    let agent = runtime
        .spawn(AgentSpec::new("converter", strategy).with_tools(tools))
        .await
        .unwrap();
    (runtime, agent, definitions, runs)
}

fn tool_call(name: &str, args: &str) -> Result<LlmResponse, ProviderError> {
    let blocks = vec![AssistantBlock::tool_use(
        "c1",
        name,
        ToolArgs::from_text(args),
    )];
    let stop_reason = stop_for(&blocks);
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        ..Usage::default()
    };
    Ok(LlmResponse::new(
        AssistantMessage {
            blocks,
            stop_reason,
        },
        usage,
    ))
}

#[tokio::test]
async fn the_model_calls_the_offered_tool_and_its_output_is_the_answer() {
    let model = ScriptedModel::new([tool_call(
        "convert",
        r#"{"value": 42, "from": "km", "to": "mi"}"#,
    )]);
    let (runtime, agent, definitions, runs) = spawn_converter(&model).await;

    let answer = agent.ask("How many miles is 42 km?").await.unwrap();

    assert_eq!(answer.text, "42 km = 26.10 mi");
    assert_eq!(answer.usage.input_tokens, 10, "the LLM call's usage");
    assert_eq!(
        *runs.lock().unwrap(),
        [(42.0, "km".to_owned(), "mi".to_owned())],
        "the tool ran once, with the model's arguments"
    );
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        1,
        "one LLM call: the tool's output is the answer"
    );
    assert_eq!(*requests[0].tools, *definitions);
    assert_eq!(requests[0].tools[0].name, "convert");
    assert!(
        requests[0].tools[0].parameters["properties"]["from"].is_object(),
        "the offered definition carries the argument schema: {:?}",
        requests[0].tools[0].parameters
    );
    assert_eq!(
        requests[0].messages.last(),
        Some(&Message::user("How many miles is 42 km?"))
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_failed_llm_call_is_a_failed_reply_that_says_why() {
    let model = ScriptedModel::new([Err(ProviderError::InvalidRequest {
        status: 404,
        message: "no such model: scripted".to_owned(),
    })]);
    let (runtime, agent, _, runs) = spawn_converter(&model).await;

    let error = agent.ask("How many miles is 42 km?").await.unwrap_err();

    let AskError::Failed { reply } = error else {
        panic!("a failed reply, not {error:?}");
    };
    assert_eq!(reply.signal_type().as_str(), AGENT_FAILED);
    let data: serde_json::Value = reply.data_as().unwrap();
    let message = data["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no such model: scripted"),
        "the provider's message reaches the caller: {data}"
    );
    assert!(runs.lock().unwrap().is_empty(), "no tool ran");
    assert_eq!(
        model.requests().len(),
        1,
        "no retry of a request the provider rejected"
    );
    runtime.shutdown().await;
}
