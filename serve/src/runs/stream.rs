//! One subscriber's SSE stream of a run: a small task reads the run's log from the
//! subscriber's position and hands the events to the response body through a short queue. The
//! run never waits for it: a subscriber that takes nothing for [`StreamLimits::stall`] is let go
//! — its task ends and its slot is freed; nothing more is read for it, and what its queue holds
//! (at most [`QUEUE`] events) goes when its connection does. It may come back with
//! `Last-Event-ID`.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use tokio::sync::{mpsc, watch};

use super::admit::{Refusal, admit};
use super::log::{Cursor, Send};
use super::{Run, Runs};

/// Events read from the log at once.
const PAGE: usize = 64;

/// Events queued between a subscriber's task and its response body: what a stalled
/// subscriber's connection still holds once it is let go.
const QUEUE: usize = 16;

/// The SSE stream of `run` for a subscriber that has seen every event up to `after`, or why
/// it is refused. `closing` ends it when the server shuts down (the subscriber resumes
/// elsewhere, or later, with `Last-Event-ID`).
pub(crate) fn subscribe(
    runs: &Arc<Runs>,
    run: Arc<Run>,
    after: u64,
    closing: watch::Receiver<bool>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>> + use<>>, Refusal> {
    let slot = Slot::take(runs, &run)?;
    let limits = runs.limits.streams;
    let (tx, mut rx) = mpsc::channel::<Event>(QUEUE);
    tokio::spawn(pump(run, Cursor::after(after), tx, slot, closing));
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|e| e.map(Ok)));
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(limits.keep_alive)))
}

/// Reads the log into `tx` until the run ends, the subscriber leaves or stalls, or the server
/// closes.
async fn pump(
    run: Arc<Run>,
    mut cursor: Cursor,
    tx: mpsc::Sender<Event>,
    slot: Slot,
    mut closing: watch::Receiver<bool>,
) {
    let limits = slot.runs.limits.streams;
    let mut changed = run.changed.subscribe();
    loop {
        changed.mark_unchanged();
        let replay = run.since(cursor.after, PAGE);
        let finished = replay.finished;
        let sent = cursor.take(replay);
        let idle = sent.is_empty();
        for send in sent {
            let event = match send {
                Send::Gap(gap) => Event::default().event("gap").data(format!(
                    r#"{{"after":{},"through":{}}}"#,
                    gap.after, gap.through
                )),
                Send::Event(logged) => Event::default()
                    .id(logged.id.to_string())
                    .event(logged.name)
                    .data(logged.data.as_ref()),
            };
            match tx.send_timeout(event, limits.stall).await {
                Ok(()) => {}
                Err(mpsc::error::SendTimeoutError::Timeout(_)) => {
                    tracing::debug!(run = %run.id, at = cursor.after, "a stalled subscriber was let go");
                    return;
                }
                Err(_) => return,
            }
        }
        if finished {
            return;
        }
        if idle {
            tokio::select! {
                result = changed.changed() => if result.is_err() { return },
                _ = closing.wait_for(|closing| *closing) => {
                    let _ = tx.try_send(Event::default().event("shutdown").data("{}"));
                    return;
                }
                () = tx.closed() => return,
            }
        }
    }
}

/// One subscriber's place in the bounds: taken when it is let in, given back when its task
/// ends.
pub(crate) struct Slot {
    runs: Arc<Runs>,
    run: Arc<Run>,
}

impl Slot {
    /// A place for one more subscriber of `run`, or why there is none.
    pub(crate) fn take(runs: &Arc<Runs>, run: &Arc<Run>) -> Result<Self, Refusal> {
        let total = runs.streams.fetch_add(1, Ordering::SeqCst);
        let of_run = run.streams.fetch_add(1, Ordering::SeqCst);
        let slot = Self {
            runs: Arc::clone(runs),
            run: Arc::clone(run),
        };
        // Dropping the slot gives both counts back.
        admit(of_run, total, &runs.limits.streams).map(|()| slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.runs.streams.fetch_sub(1, Ordering::SeqCst);
        self.run.streams.fetch_sub(1, Ordering::SeqCst);
    }
}
