//! [`LocalLink`]: the link inside one process — addresses in a shared map, frames on tokio
//! channels. For the runtime's logic tests, and for several runtimes embedded in one process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::{mpsc, watch};

use super::{
    FrameSource, Frames, Handler, Link, LinkError, Listening, Replier, ReplySink, check_address,
    listener_stopped,
};

/// How many frames a call holds before the callee's `send` waits for the caller to read.
const QUEUED_FRAMES: usize = 64;

/// The link inside one process. Clones share the addresses: hand one clone to each runtime.
///
/// Its semantics are [`NatsLink`]'s (`motet_jetstream`): [`LinkError::NoListener`] at once,
/// [`LinkError::Broken`] when a replier is dropped unfinished, and [`LinkError::TooLarge`]
/// past the limit set with [`LocalLink::with_max_frame`]. No node can go silent inside one
/// process, so it sends no keep-alives and never reports [`LinkError::Silent`].
///
/// [`NatsLink`]: https://docs.rs/motet-jetstream
#[derive(Clone, Default)]
pub struct LocalLink {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    listeners: Mutex<HashMap<String, Listener>>,
    next_listener: AtomicU64,
    max_frame: Option<usize>,
}

struct Listener {
    id: u64,
    handler: Arc<dyn Handler>,
    /// Dropped with the listener's [`Listening`]: the handlers racing it end.
    stopped: watch::Receiver<()>,
}

impl std::fmt::Debug for LocalLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let addresses: Vec<String> = self.listeners().keys().cloned().collect();
        f.debug_struct("LocalLink")
            .field("addresses", &addresses)
            .field("max_frame", &self.inner.max_frame)
            .finish()
    }
}

impl LocalLink {
    /// A link with no listeners and no size limit.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A new link (not sharing this one's addresses) whose requests, tells and frames are at
    /// most `max` bytes: for tests of what a transport with a limit does.
    #[must_use]
    pub fn with_max_frame(max: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                max_frame: Some(max),
                ..Inner::default()
            }),
        }
    }

    fn listeners(&self) -> std::sync::MutexGuard<'_, HashMap<String, Listener>> {
        // The map stays consistent whatever a panicking holder did: every change is one call.
        self.inner
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn check_size(&self, size: usize) -> Result<(), LinkError> {
        match self.inner.max_frame {
            Some(max) if size > max => Err(LinkError::TooLarge { size, max }),
            _ => Ok(()),
        }
    }

    /// The handler at `to` and its stop signal.
    fn find(&self, to: &str) -> Option<(Arc<dyn Handler>, watch::Receiver<()>)> {
        self.listeners()
            .get(to)
            .map(|l| (l.handler.clone(), l.stopped.clone()))
    }
}

/// What goes from a local replier to its caller.
enum Event {
    Frame(Bytes),
    Finished,
}

struct LocalFrames {
    to: String,
    events: mpsc::Receiver<Event>,
}

#[async_trait]
impl FrameSource for LocalFrames {
    async fn next(&mut self) -> Option<Result<Bytes, LinkError>> {
        match self.events.recv().await {
            Some(Event::Frame(frame)) => Some(Ok(frame)),
            Some(Event::Finished) => None,
            // Every sender gone without `Finished`: the replier was dropped unfinished.
            None => Some(Err(LinkError::Broken {
                to: self.to.clone(),
            })),
        }
    }
}

struct LocalSink {
    events: mpsc::Sender<Event>,
    max_frame: Option<usize>,
}

#[async_trait]
impl ReplySink for LocalSink {
    async fn send(&mut self, frame: Bytes) -> Result<(), LinkError> {
        if let Some(max) = self.max_frame
            && frame.len() > max
        {
            return Err(LinkError::TooLarge {
                size: frame.len(),
                max,
            });
        }
        // A caller that stopped listening is not the callee's error (as on NATS, where the
        // callee cannot know): the frame goes nowhere.
        let _ = self.events.send(Event::Frame(frame)).await;
        Ok(())
    }

    async fn finish(self: Box<Self>) -> Result<(), LinkError> {
        let _ = self.events.send(Event::Finished).await;
        Ok(())
    }
}

#[async_trait]
impl Link for LocalLink {
    async fn call(&self, to: &str, request: Bytes) -> Result<Frames, LinkError> {
        check_address(to)?;
        self.check_size(request.len())?;
        let (handler, stopped) = self
            .find(to)
            .ok_or_else(|| LinkError::NoListener { to: to.to_owned() })?;
        let (events, received) = mpsc::channel(QUEUED_FRAMES);
        let replier = Replier::new(LocalSink {
            events,
            max_frame: self.inner.max_frame,
        });
        tokio::spawn(async move {
            tokio::select! {
                () = handler.call(request, replier) => {}
                () = listener_stopped(stopped) => {}
            }
        });
        Ok(Frames::new(LocalFrames {
            to: to.to_owned(),
            events: received,
        }))
    }

    async fn tell(&self, to: &str, message: Bytes) -> Result<(), LinkError> {
        check_address(to)?;
        self.check_size(message.len())?;
        if let Some((handler, stopped)) = self.find(to) {
            tokio::spawn(async move {
                tokio::select! {
                    () = handler.tell(message) => {}
                    () = listener_stopped(stopped) => {}
                }
            });
        }
        Ok(())
    }

    async fn listen(
        &self,
        address: &str,
        handler: Arc<dyn Handler>,
    ) -> Result<Listening, LinkError> {
        check_address(address)?;
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        let (stop, stopped) = watch::channel(());
        {
            let mut listeners = self.listeners();
            if listeners.contains_key(address) {
                return Err(LinkError::AddressInUse {
                    address: address.to_owned(),
                });
            }
            listeners.insert(
                address.to_owned(),
                Listener {
                    id,
                    handler,
                    stopped,
                },
            );
        }
        let link = self.clone();
        let key = address.to_owned();
        Ok(Listening::new(address, move || {
            let mut listeners = link.listeners();
            // Only this listener's entry: the address may have been taken again since.
            if listeners.get(&key).is_some_and(|l| l.id == id) {
                listeners.remove(&key);
            }
            drop(stop);
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Answers a call `n` with frames `0..n`, then finishes; `drop` drops the replier after
    /// one frame; `hang` holds it until the listener stops. Tells go to `told`.
    struct Script {
        told: mpsc::UnboundedSender<Bytes>,
    }

    #[async_trait]
    impl Handler for Script {
        async fn call(&self, request: Bytes, mut replier: Replier) {
            match &request[..] {
                b"drop" => {
                    let _ = replier.send("one").await;
                }
                b"hang" => {
                    let _ = replier.send("one").await;
                    std::future::pending::<()>().await;
                }
                count => {
                    let n: usize = std::str::from_utf8(count)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    for i in 0..n {
                        if replier.send(i.to_string()).await.is_err() {
                            return;
                        }
                    }
                    let _ = replier.finish().await;
                }
            }
        }

        async fn tell(&self, message: Bytes) {
            let _ = self.told.send(message);
        }
    }

    fn script() -> (Arc<dyn Handler>, mpsc::UnboundedReceiver<Bytes>) {
        let (told, heard) = mpsc::unbounded_channel();
        (Arc::new(Script { told }), heard)
    }

    async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
        match tokio::time::timeout(Duration::from_secs(5), future).await {
            Ok(value) => value,
            Err(_) => panic!("nothing within 5 s"),
        }
    }

    #[tokio::test]
    async fn frames_arrive_in_order_then_end() {
        let link = LocalLink::new();
        let (handler, _heard) = script();
        let _listening = link.listen("node-b", handler).await.unwrap();
        let frames = link.call("node-b", Bytes::from("200")).await.unwrap();
        let frames = within(frames.collect()).await.unwrap();
        let expected: Vec<Bytes> = (0..200).map(|i| Bytes::from(i.to_string())).collect();
        assert_eq!(frames, expected);
    }

    #[tokio::test]
    async fn no_listener_fails_at_once() {
        let link = LocalLink::new();
        let err = link.call("node-x", Bytes::new()).await.unwrap_err();
        assert_eq!(
            err,
            LinkError::NoListener {
                to: "node-x".into()
            }
        );
    }

    #[tokio::test]
    async fn a_dropped_replier_breaks_the_call() {
        let link = LocalLink::new();
        let (handler, _heard) = script();
        let _listening = link.listen("node-b", handler).await.unwrap();
        let mut frames = link.call("node-b", Bytes::from("drop")).await.unwrap();
        assert_eq!(within(frames.next()).await, Some(Ok(Bytes::from("one"))));
        assert_eq!(
            within(frames.next()).await,
            Some(Err(LinkError::Broken {
                to: "node-b".into()
            }))
        );
        assert_eq!(frames.next().await, None, "an ended call stays ended");
    }

    #[tokio::test]
    async fn dropping_listening_ends_its_calls_and_frees_the_address() {
        let link = LocalLink::new();
        let (handler, _heard) = script();
        let listening = link.listen("node-b", handler.clone()).await.unwrap();
        assert!(matches!(
            link.listen("node-b", handler.clone()).await,
            Err(LinkError::AddressInUse { .. })
        ));
        let mut frames = link.call("node-b", Bytes::from("hang")).await.unwrap();
        assert_eq!(within(frames.next()).await, Some(Ok(Bytes::from("one"))));
        drop(listening);
        assert_eq!(
            within(frames.next()).await,
            Some(Err(LinkError::Broken {
                to: "node-b".into()
            }))
        );
        assert!(matches!(
            link.call("node-b", Bytes::new()).await,
            Err(LinkError::NoListener { .. })
        ));
        let _again = link.listen("node-b", handler).await.unwrap();
        assert!(link.call("node-b", Bytes::from("1")).await.is_ok());
    }

    #[tokio::test]
    async fn an_old_listening_does_not_remove_a_new_listener() {
        let link = LocalLink::new();
        let (handler, _heard) = script();
        let first = link.listen("node-b", handler.clone()).await.unwrap();
        drop(first);
        let _second = link.listen("node-b", handler).await.unwrap();
        let frames = link.call("node-b", Bytes::from("2")).await.unwrap();
        assert_eq!(within(frames.collect()).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn tells_reach_the_handler_and_need_no_listener() {
        let link = LocalLink::new();
        let (handler, mut heard) = script();
        let _listening = link.listen("node-b", handler).await.unwrap();
        link.tell("node-b", Bytes::from("cancel r1")).await.unwrap();
        assert_eq!(within(heard.recv()).await, Some(Bytes::from("cancel r1")));
        assert_eq!(link.tell("node-x", Bytes::from("lost")).await, Ok(()));
    }

    #[tokio::test]
    async fn sizes_over_the_limit_are_refused() {
        let link = LocalLink::with_max_frame(4);
        struct Big(mpsc::UnboundedSender<Result<(), LinkError>>);
        #[async_trait]
        impl Handler for Big {
            async fn call(&self, _request: Bytes, mut replier: Replier) {
                let _ = self.0.send(replier.send("12345").await);
                let _ = self.0.send(replier.send("1234").await);
                let _ = replier.finish().await;
            }
        }
        let (sent, mut results) = mpsc::unbounded_channel();
        let _listening = link.listen("node-b", Arc::new(Big(sent))).await.unwrap();
        assert_eq!(
            link.call("node-b", Bytes::from("12345")).await.unwrap_err(),
            LinkError::TooLarge { size: 5, max: 4 }
        );
        let frames = link.call("node-b", Bytes::from("1234")).await.unwrap();
        assert_eq!(
            within(results.recv()).await,
            Some(Err(LinkError::TooLarge { size: 5, max: 4 }))
        );
        assert_eq!(within(results.recv()).await, Some(Ok(())));
        assert_eq!(
            within(frames.collect()).await.unwrap(),
            vec![Bytes::from("1234")]
        );
    }

    #[tokio::test]
    async fn bad_addresses_are_refused_everywhere() {
        let link = LocalLink::new();
        let (handler, _heard) = script();
        assert!(matches!(
            link.listen("a b", handler).await,
            Err(LinkError::BadAddress { .. })
        ));
        assert!(matches!(
            link.call("a.*", Bytes::new()).await,
            Err(LinkError::BadAddress { .. })
        ));
        assert!(matches!(
            link.tell(">", Bytes::new()).await,
            Err(LinkError::BadAddress { .. })
        ));
    }

    #[test]
    fn is_object_safe_and_shareable() {
        let link: Arc<dyn Link> = Arc::new(LocalLink::new());
        let clone = link.clone();
        assert!(format!("{clone:?}").contains("LocalLink"));
    }
}
