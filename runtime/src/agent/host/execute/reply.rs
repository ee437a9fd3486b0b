//! `Reply`: the end of a request — its asker answered, its record and span closed — and the
//! reply published on the bus (and the durable bus) for whoever waits there.

use motet_directives::Reply;

use crate::agent::host::outbox::Outgoing;
use crate::agent::host::tracked::{Ending, Job, Tracked};
use crate::agent::signals::traced;
use crate::agent::trace;

/// Ends the request `reply` answers and publishes it.
pub(super) fn reply(job: &Job<'_>, tracked: &mut Tracked, reply: Reply) {
    let here = job.here;
    let span = trace::directive_span(
        "reply",
        reply.signal.signal_type().as_str(),
        job.parent.clone(),
    );
    let _inside = span.enter();
    let signal = traced(reply.signal, &span);
    match signal.request_id() {
        Some(request) => {
            let ending = Ending::Replied {
                status: reply.status,
                reply: &signal,
            };
            tracked.end_request(here, request, ending);
        }
        None => {
            tracing::warn!(agent = %here.agent, signal = %signal.signal_type().as_str(), "a reply without a request id answers nobody; it is only published");
        }
    }
    here.core.bus.publish(&signal);
    here.core.publish_durable(&signal, Outgoing::Reply);
}
