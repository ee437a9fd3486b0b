//! The strategy of examples/strategy.rs — written against the runtime ↔ strategy protocol
//! alone, nothing from ReAct — driven with a scripted model: it asks the model once with one
//! tool on offer, runs the call the model makes and replies with the tool's output; a failed
//! LLM call is a failed reply.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

#[path = "../../examples/strategy.rs"]
#[allow(dead_code, reason = "the example's `main`")]
mod example;

use std::sync::{Arc, Mutex};

use example::{Converter, Kilometres, in_miles};
use motet::agents::protocol::AGENT_FAILED;
use motet::directives::{
    AssistantBlock, AssistantMessage, LlmResponse, Message, ToolArgs, ToolDefs, Usage,
};
use motet::providers::ProviderError;
use motet::runtime::agent::{AgentHandle, AgentSpec, AskError, Runtime};
use motet::runtime::testing::{ScriptedModel, stop_for};
use motet::runtime::tool::{ToolSet, tool_fn};

/// The distance each run of `convert` got.
type Runs = Arc<Mutex<Vec<f64>>>;

/// `convert`, noting each run's arguments in `runs`.
fn converter_tools(runs: Runs) -> ToolSet {
    let convert = tool_fn(
        "convert",
        "Converts kilometres to miles.",
        move |d: Kilometres| {
            runs.lock().unwrap().push(d.km);
            async move { in_miles(&d) }
        },
    );
    ToolSet::builder().tool(convert).build().unwrap()
}

/// A converter agent answering with `model`, and the record of its tool's runs.
async fn spawn_converter(model: &ScriptedModel) -> (Runtime, AgentHandle, ToolDefs, Runs) {
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
    let model = ScriptedModel::new([tool_call("convert", r#"{"km": 42}"#)]);
    let (runtime, agent, definitions, runs) = spawn_converter(&model).await;

    let answer = agent.ask("How many miles is 42 km?").await.unwrap();

    assert_eq!(answer.text, "42 km = 26.10 mi");
    assert_eq!(answer.usage.input_tokens, 10, "the LLM call's usage");
    assert_eq!(
        *runs.lock().unwrap(),
        [42.0],
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
        requests[0].tools[0].parameters["properties"]["km"].is_object(),
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
