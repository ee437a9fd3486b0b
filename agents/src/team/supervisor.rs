//! [`Supervisor`]: a request routed to the members best placed to answer it — by a function,
//! or by a model's choice (one LLM call offered a `route` tool whose schema lists the members)
//! — and their answers collected into one reply. A model picks one member per request; a
//! function may pick several.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use motet_directives::results::Outcome;
use motet_directives::{
    CallId, Directive, LlmOptions, LlmRequest, LlmStream, Message, ModelRef, ToolChoice, ToolDef,
    Usage,
};
use motet_signals::Signal;
use serde::{Deserialize, Serialize};

use super::ask::Asker;
use super::gather::{Gather, Join, end_round};
use super::step::{Team, handle};
use super::{MemberAnswer, TeamFailed, TeamFailure, joined};
use crate::env::Env;
use crate::error::StrategyError;
use crate::protocol::{AgentRequest, Input};
use crate::strategy::Strategy;

/// The name of the tool a routing model is made to call.
pub const ROUTE_TOOL: &str = "route";

/// A member a supervisor may route to: its agent name, and what it is good at (what a routing
/// model reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
}

impl Member {
    /// The agent `name`, doing `description`.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
        }
    }
}

type RouteFn = Arc<dyn Fn(&AgentRequest, &[Member]) -> Vec<String> + Send + Sync>;

/// How a supervisor picks the members to ask.
#[derive(Clone)]
pub enum Route {
    /// A function of the request and the members: the names to ask.
    Function(RouteFn),
    /// One LLM call on this model, made to call the `route` tool with a member's name.
    Model {
        /// The model.
        model: ModelRef,
        /// Its output limit (a name or two need few tokens).
        max_tokens: u32,
    },
}

impl fmt::Debug for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Function(_) => f.write_str("Route::Function"),
            Self::Model { model, max_tokens } => f
                .debug_struct("Route::Model")
                .field("model", model)
                .field("max_tokens", max_tokens)
                .finish(),
        }
    }
}

type Reduce = Arc<dyn Fn(&[MemberAnswer]) -> String + Send + Sync>;

/// Routes each request to members and collects their answers: by default every member chosen
/// must answer ([`Join::All`]) and the answers are [`joined`].
///
/// # Example
/// ```
/// use motet_agents::team::{Member, Supervisor};
///
/// let team = Supervisor::new([
///     Member::new("math", "arithmetic"),
///     Member::new("geo", "capitals and countries"),
/// ])
/// .route_with(|request, _members| {
///     let math = request.query.chars().any(|c| c.is_ascii_digit());
///     vec![if math { "math" } else { "geo" }.to_owned()]
/// });
/// assert_eq!(team.members().len(), 2);
/// ```
#[derive(Clone)]
pub struct Supervisor {
    members: Vec<Member>,
    route: Route,
    join: Join,
    timeout: Option<Duration>,
    reduce: Reduce,
}

impl fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervisor")
            .field("members", &self.members)
            .field("route", &self.route)
            .field("join", &self.join)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    /// A supervisor over `members` that sends every request to all of them (until told how to
    /// route).
    pub fn new(members: impl IntoIterator<Item = Member>) -> Self {
        Self {
            members: members.into_iter().collect(),
            route: Route::Function(Arc::new(|_, members| {
                members.iter().map(|m| m.name.clone()).collect()
            })),
            join: Join::All,
            timeout: None,
            reduce: Arc::new(joined),
        }
    }

    /// Routes with a function of the request and the members (names not among the members
    /// are dropped).
    pub fn route_with(
        mut self,
        route: impl Fn(&AgentRequest, &[Member]) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.route = Route::Function(Arc::new(route));
        self
    }

    /// Routes by a model's choice: one call on `model` with at most `max_tokens` of output.
    pub fn route_by_model(mut self, model: ModelRef, max_tokens: u32) -> Self {
        self.route = Route::Model { model, max_tokens };
        self
    }

    /// The rule for how many of the chosen members must answer.
    pub fn with_join(mut self, join: Join) -> Self {
        self.join = join;
        self
    }

    /// How long each member has to answer.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Joins the answers into the team's answer.
    pub fn with_reduce(
        mut self,
        reduce: impl Fn(&[MemberAnswer]) -> String + Send + Sync + 'static,
    ) -> Self {
        self.reduce = Arc::new(reduce);
        self
    }

    /// The members.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The routing call for `query` on `model`: the members listed, the `route` tool forced.
    pub fn routing_request(&self, model: &ModelRef, max_tokens: u32, query: &str) -> LlmRequest {
        let names: Vec<&str> = self.members.iter().map(|m| m.name.as_str()).collect();
        let listed: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("- {}: {}", m.name, m.description))
            .collect();
        let system = format!(
            "You route a request to the team members best placed to answer it. The members:\n{}\n\
             Call `{ROUTE_TOOL}` with the name of the member to ask.",
            listed.join("\n")
        );
        let parameters = serde_json::json!({
            "type": "object",
            "properties": {
                "members": {
                    "type": "array",
                    "items": { "type": "string", "enum": names },
                    "minItems": 1,
                    "maxItems": names.len(),
                }
            },
            "required": ["members"],
        });
        let tool = ToolDef::new(
            ROUTE_TOOL,
            "Sends the request to these members.",
            parameters,
        );
        // One call of the tool: a small model allowed several repeats it until its tokens
        // run out.
        let options = LlmOptions {
            max_tokens: Some(max_tokens),
            parallel_tool_calls: Some(false),
            ..LlmOptions::default()
        };
        LlmRequest::new(
            model.clone(),
            vec![Message::system(system), Message::user(query)],
        )
        .with_tools(Arc::from(vec![tool]))
        .with_tool_choice(ToolChoice::Tool {
            name: ROUTE_TOOL.to_owned(),
        })
        .with_options(options)
    }

    /// The known members among `names`, each once, in the members' order.
    fn chosen(&self, names: &[String]) -> Vec<String> {
        self.members
            .iter()
            .filter(|m| names.iter().any(|n| n.trim() == m.name))
            .map(|m| m.name.clone())
            .collect()
    }
}

/// The routing call in flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Routing {
    call_id: CallId,
    request: AgentRequest,
}

/// A [`Supervisor`]'s state: the open request — being routed, or its members asked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SupervisorState {
    open: Option<(Asker, Gather)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    routing: Option<Routing>,
    /// The routing call's usage.
    #[serde(default)]
    usage: Usage,
}

/// The strings in a tool call's arguments, in order: a small model does not always keep to
/// the schema's field (`members: [..]` for `member`), and any member it names is its choice.
fn strings_in(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) => into.push(text.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings_in(v, into)),
        serde_json::Value::Object(fields) => fields.values().for_each(|v| strings_in(v, into)),
        _ => {}
    }
}

impl Strategy for Supervisor {
    type State = SupervisorState;

    fn init(&self, _env: &dyn Env) -> SupervisorState {
        SupervisorState::default()
    }

    fn model(&self) -> Option<&ModelRef> {
        match &self.route {
            Route::Model { model, .. } => Some(model),
            Route::Function(_) => None,
        }
    }

    fn handle(
        &self,
        state: &mut SupervisorState,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        handle(self, state, signal, env)
    }
}

impl Team for Supervisor {
    type State = SupervisorState;

    fn round(state: &mut SupervisorState) -> &mut Option<(Asker, Gather)> {
        &mut state.open
    }

    fn ended(state: &mut SupervisorState) {
        state.routing = None;
    }

    fn request(
        &self,
        state: &mut SupervisorState,
        request: AgentRequest,
        asker: Asker,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        state.usage = Usage::default();
        state.open = Some((asker, Gather::new(self.join, self.timeout)));
        match &self.route {
            Route::Function(route) => {
                let names = self.chosen(&route(&request, &self.members));
                self.dispatch(state, &request, &names, env)
            }
            Route::Model { model, max_tokens } => {
                let call_id = CallId::new(env.fresh_id("call"));
                let call = self.routing_request(model, *max_tokens, &request.query);
                state.routing = Some(Routing {
                    call_id: call_id.clone(),
                    request,
                });
                Ok(vec![Directive::LlmStream(LlmStream::new(call_id, call))])
            }
        }
    }

    fn other(
        &self,
        state: &mut SupervisorState,
        input: Input<'_>,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        match input {
            Input::Outcome(outcome) => {
                let Some(routing) = state.routing.take_if(|r| &r.call_id == outcome.call_id())
                else {
                    return Ok(Vec::new());
                };
                match outcome {
                    Outcome::Llm(result) => {
                        state.usage += result.response.usage;
                        let names = self.named(&result.response.message);
                        self.dispatch(state, &routing.request, &names, env)
                    }
                    Outcome::LlmFailed(failed) => self.fail(
                        state,
                        TeamFailure::NoRoute {
                            message: format!("the routing call failed: {}", failed.error),
                        },
                        env,
                    ),
                    _ => Ok(Vec::new()),
                }
            }
            Input::Other(_) if state.routing.is_none() => {
                let Some((asker, gather)) = state.open.as_mut() else {
                    return Ok(Vec::new());
                };
                let Some(mut out) = gather.take(signal, env)? else {
                    return Ok(Vec::new());
                };
                if let Some(end) = end_round(asker, gather, state.usage, &*self.reduce, env)? {
                    out.extend(end);
                    state.open = None;
                }
                Ok(out)
            }
            _ => Ok(Vec::new()),
        }
    }
}

impl Supervisor {
    /// The members the routing model's answer names: the first one its `route` call's
    /// arguments name, else every member its text names.
    fn named(&self, message: &motet_directives::AssistantMessage) -> Vec<String> {
        let mut said = Vec::new();
        for call in message.tool_calls().filter(|c| c.name == ROUTE_TOOL) {
            if let Ok(args) = call.args.parse::<serde_json::Value>() {
                strings_in(&args, &mut said);
            }
        }
        // The first member named is the one asked.
        let mut names: Vec<String> = said
            .into_iter()
            .find(|name| self.members.iter().any(|m| m.name == name.trim()))
            .into_iter()
            .collect();
        if names.is_empty() {
            // A model that answered in words: the members it names.
            let text: String = message.text_blocks().collect();
            names = self
                .members
                .iter()
                .filter(|m| text.contains(m.name.as_str()))
                .map(|m| m.name.clone())
                .collect();
        }
        self.chosen(&names)
    }

    /// Asks the members `names` the request's query.
    fn dispatch(
        &self,
        state: &mut SupervisorState,
        request: &AgentRequest,
        names: &[String],
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        if names.is_empty() {
            let failure = TeamFailure::NoRoute {
                message: "no member was chosen".to_owned(),
            };
            return self.fail(state, failure, env);
        }
        let Some((asker, gather)) = state.open.as_mut() else {
            return Ok(Vec::new());
        };
        let data = serde_json::json!({ "query": request.query });
        let mut out = Vec::new();
        for (k, name) in names.iter().enumerate() {
            let id = format!("{}.{k}", asker.request_id);
            out.extend(gather.ask(name, id, &data, env)?);
        }
        Ok(out)
    }

    fn fail(
        &self,
        state: &mut SupervisorState,
        failure: TeamFailure,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError> {
        state.routing = None;
        let Some((asker, mut gather)) = state.open.take() else {
            return Ok(Vec::new());
        };
        let mut out = gather.close(&failure.to_string(), env)?;
        out.push(asker.failed(env, TeamFailed::new(failure, state.usage))?);
        Ok(out)
    }
}
