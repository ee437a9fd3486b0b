//! A strategy of one's own, nothing from ReAct: a kilometres-to-miles converter that asks the
//! model once with one tool on offer, runs the call the model makes, and replies with the
//! tool's output.
//!
//! `cargo run --release --example strategy -- "How many miles is 42 km?"`, with the model in
//! `MOTET_MODEL` as for `examples/agent.rs`: `openai:gpt-5.2` with `OPENAI_API_KEY`, or
//! `openai-compat:local` with `MOTET_OPENAI_COMPAT_BASE_URL=http://127.0.0.1:8089/v1`.
//! tests/strategy.rs drives this very strategy with a scripted model.

use motet::agents::protocol;
use motet::directives::results::Outcome;
use motet::directives::{
    CallId, LlmOptions, LlmRequest, LlmStream, Message, ToolDefs, ToolExec, Usage,
};
use motet::prelude::*;

/// Asks the model once, offering `tools`; answers with what the tool it calls says.
pub(crate) struct Converter {
    pub(crate) model: ModelRef,
    pub(crate) tools: ToolDefs,
}

/// What the running request waits for: the LLM call or tool run with this id.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Waiting {
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
                    Message::system("Convert kilometres to miles with the `convert` tool."),
                    Message::user(request.query),
                ];
                // The tool is the point: the model must call it (a small local model would
                // otherwise answer from memory, and wrongly), and a bound on what it writes
                // keeps a busy or looping server from holding the request to its timeout.
                let request = LlmRequest::new(self.model.clone(), messages)
                    .with_tools(self.tools.clone())
                    .with_tool_choice(ToolChoice::Tool {
                        name: "convert".into(),
                    })
                    .with_options(LlmOptions {
                        max_tokens: Some(256),
                        ..LlmOptions::default()
                    });
                *state = Waiting {
                    call: Some(call_id.clone()),
                    usage: Usage::default(),
                };
                Directive::LlmStream(LlmStream::new(call_id, request))
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
                Directive::ToolExec(ToolExec::new(
                    call_id,
                    call.id,
                    call.name,
                    call.args.clone(),
                ))
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

/// A distance to convert.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Kilometres {
    /// The distance in kilometres.
    pub(crate) km: f64,
}

/// Miles in a kilometre.
pub(crate) const MILES_PER_KM: f64 = 0.621_371;

/// What `convert` answers for `distance`.
pub(crate) fn in_miles(distance: &Kilometres) -> Result<String, ToolError> {
    if !distance.km.is_finite() {
        return Err(ToolError::invalid_args("km must be a finite number"));
    }
    Ok(format!(
        "{} km = {:.2} mi",
        distance.km,
        distance.km * MILES_PER_KM
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _telemetry = motet::telemetry::init()?;
    let model = std::env::var("MOTET_MODEL")
        .map_err(|_| "set MOTET_MODEL, e.g. openai:gpt-5.2 or openai-compat:local")?;
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "How many miles is 42 km?".into());

    let convert = tool_fn(
        "convert",
        "Converts kilometres to miles.",
        |d: Kilometres| async move { in_miles(&d) },
    );
    let tools = ToolSet::builder().tool(convert).build()?;
    let converter = Converter {
        model: model.parse()?,
        tools: tools.definitions(),
    };
    let runtime = Runtime::builder().build()?;
    let agent = runtime
        .spawn(AgentSpec::new("converter", converter).with_tools(tools))
        .await?;
    // `ask` waits 30 s; a small local model on a busy machine can take longer, so this asks
    // with two minutes (`ask_with`; the same options stream deltas or pick a thread).
    let options = AskOptions {
        timeout: std::time::Duration::from_secs(120),
        ..AskOptions::default()
    };
    println!("{}", agent.ask_with(question, options).await?);

    runtime.shutdown().await;
    Ok(())
}
