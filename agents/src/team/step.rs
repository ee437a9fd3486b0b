//! The step every team takes alike ([`handle`]): a cancel or a resume ends the open round, a
//! second request while one is open is refused, anything else that starts a request and that a
//! team does not do is refused typed — around what each team does itself ([`Team`]).

use motet_directives::{Directive, Usage};
use motet_signals::Signal;

use super::ask::Asker;
use super::gather::Gather;
use super::{TeamFailed, TeamFailure};
use crate::env::Env;
use crate::error::StrategyError;
use crate::protocol::{AgentRequest, Input, starts_request};

/// A team's own part of a step: what it does with a request, and with the signals the
/// handling every team shares ([`handle`]) leaves to it.
pub(crate) trait Team {
    /// The team's state.
    type State: Clone;

    /// The open request's round, which the shared handling ends on a cancel or a resume.
    fn round(state: &mut Self::State) -> &mut Option<(Asker, Gather)>;

    /// A new request (none was open): its asks.
    fn request(
        &self,
        state: &mut Self::State,
        request: AgentRequest,
        asker: Asker,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError>;

    /// Any other signal: a member's reply, a timeout, an LLM call's outcome.
    fn other(
        &self,
        state: &mut Self::State,
        input: Input<'_>,
        signal: &Signal,
        env: &dyn Env,
    ) -> Result<Vec<Directive>, StrategyError>;

    /// The shared handling ended the round (a cancel, a resume): drop what goes with it.
    fn ended(_state: &mut Self::State) {}
}

/// One step of a team: worked on a copy of the state, so a step that fails leaves it as it
/// was. A cancel, a resume, a second request while one is open and anything a team does not
/// do are handled alike for every team ([`common`]); the rest is the team's.
///
/// # Errors
/// The team's own, or a signal whose data does not fit.
pub(crate) fn handle<T: Team>(
    team: &T,
    state: &mut T::State,
    signal: &Signal,
    env: &dyn Env,
) -> Result<Vec<Directive>, StrategyError> {
    on_copy(state, |next| {
        let input = Input::of(signal)?;
        Ok(match common(T::round(next), &input, signal, env)? {
            Some(out) => {
                if T::round(next).is_none() {
                    T::ended(next);
                }
                out
            }
            None => match input {
                Input::Request(request) => {
                    let asker = Asker::of(signal)?;
                    team.request(next, request, asker, env)?
                }
                other => team.other(next, other, signal, env)?,
            },
        })
    })
}

/// `change` made to a copy of `state`, which replaces it only when the change succeeds: a team
/// step that fails leaves its state as it was.
///
/// # Errors
/// `change`'s.
pub(crate) fn on_copy<S: Clone, T>(
    state: &mut S,
    change: impl FnOnce(&mut S) -> Result<T, StrategyError>,
) -> Result<T, StrategyError> {
    let mut next = state.clone();
    let out = change(&mut next)?;
    *state = next;
    Ok(out)
}

/// What every team does with the protocol's signals other than its own request and the
/// replies it waits for: a cancel or a resume ends the open round (its members cancelled), a
/// second request is refused while one is open, anything that starts a request and that a team
/// does not do is refused typed. `None` for a signal the team handles itself.
fn common(
    open: &mut Option<(Asker, Gather)>,
    input: &Input<'_>,
    signal: &Signal,
    env: &dyn Env,
) -> Result<Option<Vec<Directive>>, StrategyError> {
    let end = |open: &mut Option<(Asker, Gather)>, failure: TeamFailure| {
        let Some((asker, mut gather)) = open.take() else {
            return Ok(Vec::new());
        };
        let mut out = gather.close(&failure.to_string(), env)?;
        out.push(asker.failed(env, TeamFailed::new(failure, gather.usage))?);
        Ok(out)
    };
    match input {
        Input::Request(_) => match open {
            Some((asker, _)) => {
                let failure = TeamFailure::Busy {
                    active_request_id: asker.request_id.clone(),
                };
                let refused =
                    Asker::of(signal)?.failed(env, TeamFailed::new(failure, Usage::default()))?;
                Ok(Some(vec![refused]))
            }
            None => Ok(None),
        },
        Input::Cancel(cancel) => {
            let named = signal.request_id();
            if open
                .as_ref()
                .is_some_and(|(asker, _)| Some(asker.request_id.as_str()) == named)
            {
                let reason = cancel.reason.clone();
                return end(open, TeamFailure::Cancelled { reason }).map(Some);
            }
            Ok(Some(Vec::new()))
        }
        Input::Resume(_) => {
            if open.is_some() {
                return end(open, TeamFailure::Interrupted).map(Some);
            }
            refuse(signal, env)
        }
        Input::Other(_) | Input::Outcome(_) => Ok(None),
        _ if starts_request(signal.signal_type().as_str()) => refuse(signal, env),
        _ => Ok(Some(Vec::new())),
    }
}

/// A failed reply to a request-starting signal a team does not do.
fn refuse(signal: &Signal, env: &dyn Env) -> Result<Option<Vec<Directive>>, StrategyError> {
    if signal.request_id().is_none() {
        return Ok(Some(Vec::new()));
    }
    let failure = TeamFailure::Unsupported {
        signal_type: signal.signal_type().as_str().to_owned(),
    };
    let refused = Asker::of(signal)?.failed(env, TeamFailed::new(failure, Usage::default()))?;
    Ok(Some(vec![refused]))
}
