//! `react`: one ask end to end (LLM call, tool, LLM call) at 1 and 1,000 agents, on each
//! scheduler, and with telemetry on, against the same loop by hand.

#[allow(
    clippy::wildcard_imports,
    reason = "a part of the agents scenarios, sharing their helpers"
)]
use super::*;

async fn react_runtime(agents: usize, requests_per_agent: usize) -> Option<Duration> {
    let tools = tools()?;
    let strategy = react(&tools)?;
    let runtime = Runtime::builder().llm(Arc::new(ZeroModel)).build().ok()?;
    let mut handles = Vec::with_capacity(agents);
    for n in 0..agents {
        let spec = AgentSpec::new(format!("r{n}"), strategy.clone()).with_tools(tools.clone());
        handles.push(runtime.spawn(spec).await.ok()?);
    }
    let start = Instant::now();
    for _ in 0..requests_per_agent {
        let asks = handles.iter().map(|h| h.ask("What is 2 + 3?"));
        for reply in futures::future::join_all(asks).await {
            reply.ok()?;
        }
    }
    let elapsed = start.elapsed();
    runtime.shutdown().await;
    Some(elapsed)
}

/// The same request by hand: strategy, model answers and the tool, called directly; every
/// request in one conversation, or (`fresh`) each in a new one.
pub(super) async fn react_floor(requests: usize, fresh: bool) -> Option<Duration> {
    let mut by_hand = ByHand::new()?;
    let start = Instant::now();
    for n in 0..requests {
        if fresh {
            by_hand.state = by_hand.strategy.init(&by_hand.env);
        }
        by_hand.request(n).await?;
    }
    Some(start.elapsed())
}

/// One conversation run by hand: a ReAct strategy, its state and tools, no runtime.
struct ByHand {
    tools: Arc<ToolSet>,
    strategy: ReAct,
    env: FixedEnv,
    state: ReActState,
}

impl ByHand {
    fn new() -> Option<Self> {
        let tools = tools()?;
        let strategy = react(&tools)?;
        let env = FixedEnv::new(0);
        let state = strategy.init(&env);
        Some(Self {
            tools,
            strategy,
            env,
            state,
        })
    }

    /// Request `n`: the strategy stepped through its two model answers and the tool.
    async fn request(&mut self, n: usize) -> Option<()> {
        let input = Signal::builder(AGENT_REQUEST, "bench")
            .with_id(self.env.fresh_id("sig"))
            .with_request_id(format!("req-{n}"))
            .with_data(AgentRequest {
                attachments: Default::default(),
                query: "What is 2 + 3?".into(),
                context_policy: None,
                response_format: None,
            })
            .build()
            .ok()?;
        let mut inbox = vec![input];
        let mut answers = [tool_turn(n as u64 + 1), answer_turn()].into_iter();
        while let Some(signal) = inbox.pop() {
            let directives = self
                .strategy
                .handle(&mut self.state, &signal, &self.env)
                .ok()?;
            for directive in directives {
                match directive {
                    Directive::LlmStream(call) => {
                        let response = answers.next()?;
                        let events = motet_runtime::testing::events_of(response);
                        let mut asm = motet_providers::BlockAssembler::new();
                        for e in events {
                            asm.push(e).ok()?;
                        }
                        let data = LlmResult {
                            call_id: call.call_id,
                            response: asm.finish().ok()?,
                        };
                        inbox.push(
                            Signal::builder(LLM_RESULT, "bench")
                                .caused_by(&signal)
                                .with_data(data)
                                .build()
                                .ok()?,
                        );
                    }
                    Directive::ToolExec(exec) => {
                        let view = ToolCallView {
                            id: &exec.tool_call_id,
                            name: &exec.name,
                            args: &exec.args,
                        };
                        let result = self.tools.dispatch(view).await;
                        let data = ToolResultSignal::new(exec.call_id, result);
                        inbox.push(
                            Signal::builder(TOOL_RESULT, "bench")
                                .caused_by(&signal)
                                .with_data(data)
                                .build()
                                .ok()?,
                        );
                    }
                    _ => {}
                }
            }
        }
        Some(())
    }
}

/// A bare ractor actor that runs [`ByHand`]'s request for each message: the same work as
/// `floor_loop`, behind the same kind of round trip as an ask (a message in, a reply out) and
/// nothing of motet's — the floor of what any actor doing this work pays on a scheduler.
struct ByHandActor;

impl Actor for ByHandActor {
    type Msg = (usize, RpcReplyPort<bool>);
    type State = ByHand;
    type Arguments = ();

    async fn pre_start(
        &self,
        _me: ActorRef<Self::Msg>,
        (): (),
    ) -> Result<ByHand, ActorProcessingErr> {
        ByHand::new().ok_or_else(|| "the bench's tools or strategy could not be made".into())
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        (n, reply): Self::Msg,
        by_hand: &mut ByHand,
    ) -> Result<(), ActorProcessingErr> {
        let done = by_hand.request(n).await.is_some();
        let _ = reply.send(done);
        Ok(())
    }
}

/// Runs `task` as a task on a multi-threaded runtime of `workers` workers of its own, built on a
/// thread of its own: asked from a task on the runtime, as a server's handlers ask.
fn on_workers<F, Fut>(workers: usize, task: F) -> Option<Duration>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Option<Duration>> + Send + 'static,
{
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async { tokio::spawn(task()).await.ok().flatten() })
    })
    .join()
    .ok()
    .flatten()
}

/// One round of the loop-in-an-actor floor: a task on a multi-threaded runtime of `workers`
/// workers asks a [`ByHandActor`] `REACT_ONE` times.
fn actor_loop_round(workers: usize) -> Option<Duration> {
    on_workers(workers, || async {
        let (actor, join) = Actor::spawn(None, ByHandActor, ()).await.ok()?;
        let start = Instant::now();
        for n in 0..REACT_ONE {
            if !ractor::call!(actor, |reply| (n, reply)).ok()? {
                return None;
            }
        }
        let elapsed = start.elapsed();
        actor.stop(None);
        join.await.ok()?;
        Some(elapsed)
    })
}

/// One agent on a current-thread runtime of its own, under `dispatch` (the tracing setup).
fn react_traced(dispatch: tracing::Dispatch) -> Option<Duration> {
    std::thread::spawn(move || {
        tracing::dispatcher::with_default(&dispatch, || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            // A warm-up round, then the measured one.
            rt.block_on(react_runtime(1, REACT_ONE / 10))?;
            rt.block_on(react_runtime(1, REACT_ONE))
        })
    })
    .join()
    .ok()
    .flatten()
}

/// The spans of one react request and nothing else: the nine spans motet opens for it (the
/// request, four signals handled, two LLM calls, a tool, an emit), nested the same way, each
/// with six attributes and entered once — the least the tracing stack costs per request, whatever
/// the runtime does.
fn span_floor(dispatch: &tracing::Dispatch) -> Duration {
    tracing::dispatcher::with_default(dispatch, || {
        let one = |n: usize| {
            let root = tracing::info_span!(
                parent: None,
                "invoke_agent",
                otel.name = "invoke_agent bench",
                gen_ai.operation.name = "invoke_agent",
                gen_ai.agent.name = "r0",
                motet.agent.id = "r0",
                motet.thread.id = "default",
                motet.request.id = n,
            );
            let child = |name: &'static str, kind: &'static str| {
                let span = tracing::info_span!(
                    parent: &root,
                    "step",
                    otel.name = name,
                    otel.kind = kind,
                    motet.agent.id = "r0",
                    motet.thread.id = "default",
                    motet.request.id = n,
                    motet.signal.type = name,
                );
                drop(span.enter());
            };
            for (name, kind) in [
                ("handle agent.request", "internal"),
                ("chat gpt-5.2", "client"),
                ("handle llm.result", "internal"),
                ("execute_tool add", "internal"),
                ("handle tool.result", "internal"),
                ("chat gpt-5.2", "client"),
                ("handle llm.result", "internal"),
                ("emit agent.completed", "internal"),
            ] {
                child(name, kind);
            }
            drop(root.enter());
        };
        for n in 0..REACT_ONE / 10 {
            one(n);
        }
        let start = Instant::now();
        for n in 0..REACT_ONE {
            one(n);
        }
        start.elapsed()
    })
}

/// The telemetry variants of `react`, each measured in a process of its own: the runtime's
/// metric instruments bind to the global meter provider on first use, so in one process every
/// variant after `export` would record metrics into its SDK meter, `off` included.
const TRACED: [&str; 5] = ["export", "spans", "off", "floor_export", "floor_spans"];

/// Runs one telemetry variant here (in a child process started by [`react_tracing`]):
/// returns its time and, for the exporting ones, how many spans reached the receiver.
pub(crate) fn react_child(variant: &str) -> Option<(Duration, u64)> {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    match variant {
        "off" => Some((react_traced(tracing::Dispatch::none())?, 0)),
        "spans" | "floor_spans" => {
            let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
            // The same layer as `export`, with no exporter behind its tracer.
            let spans = tracing::Dispatch::new(tracing_subscriber::registry().with(
                motet_runtime::telemetry::layer(provider.tracer("motet-bench")),
            ));
            let elapsed = if variant == "spans" {
                react_traced(spans)?
            } else {
                span_floor(&spans)
            };
            Some((elapsed, 0))
        }
        "export" | "floor_export" => {
            let receiver_rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .ok()?;
            let receiver = receiver_rt
                .block_on(motet_runtime::testing::otlp::OtlpReceiver::start())
                .ok()?;
            // A queue that holds every span of the run: a full queue drops spans, and dropped
            // spans are spans not exported, which would flatter `export`.
            let (export, guard) = motet_runtime::telemetry::Telemetry::from_vars(|_| None)
                .ok()?
                .with_endpoint(receiver.grpc_endpoint())
                .with_service_name("motet-bench")
                .with_max_queue_size(1 << 18)
                .without_log()
                .into_dispatch()
                .ok()?;
            let elapsed = if variant == "export" {
                react_traced(export)?
            } else {
                span_floor(&export)
            };
            guard.flush().ok()?;
            Some((elapsed, receiver.spans().len() as u64))
        }
        _ => None,
    }
}

/// One variant in a child process of this binary (`motet-bench __react_child <variant>`).
fn react_in_child(variant: &str) -> Option<(Duration, u64)> {
    let output = std::process::Command::new(std::env::current_exe().ok()?)
        .args(["__react_child", variant])
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let mut fields = text.split_whitespace();
    let nanos: u64 = fields.next()?.parse().ok()?;
    let received: u64 = fields.next()?.parse().ok()?;
    Some((Duration::from_nanos(nanos), received))
}

/// `react` with tracing off, with spans recorded by OpenTelemetry but not exported, and with
/// the batch exporter sending over gRPC to a local OTLP receiver, beside the same nine spans
/// alone (the floors); each run in a fresh process, variants alternating, medians of 3 rounds.
fn react_tracing() -> Vec<Report> {
    let mut rounds: [Vec<Duration>; 5] = Default::default();
    let mut received = [0u64; 5];
    for _ in 0..3 {
        for (n, variant) in TRACED.into_iter().enumerate() {
            let Some((elapsed, spans)) = react_in_child(variant) else {
                eprintln!("motet-bench: the react variant `{variant}` failed");
                return Vec::new();
            };
            rounds[n].push(elapsed);
            received[n] += spans;
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let [mut e, mut s, mut o, mut fe, mut fs] = rounds;
    let (export_t, spans_t, off_t) = (median(&mut e), median(&mut s), median(&mut o));
    let (floor_export, floor_spans) = (median(&mut fe), median(&mut fs));
    let ratio = |t: Duration| round2(t.as_secs_f64() / off_t.as_secs_f64());
    let per = |d: Duration| round2(d.as_secs_f64() * 1e6 / REACT_ONE as f64);
    let share_of_off =
        |t: Duration| round2((t.as_secs_f64() - spans_t.as_secs_f64()) / off_t.as_secs_f64());
    // Warm-up and measured requests, 9 spans each, 3 rounds.
    let sent = (3 * (REACT_ONE + REACT_ONE / 10) * 9) as u64;
    vec![
        Report::new("react", "off", REACT_ONE as u64, off_t).with("us_per_request", per(off_t)),
        Report::new("react", "spans", REACT_ONE as u64, spans_t)
            .with("us_per_request", per(spans_t))
            .with("ratio_to_off", ratio(spans_t)),
        Report::new("react", "export", REACT_ONE as u64, export_t)
            .with("us_per_request", per(export_t))
            .with("ratio_to_off", ratio(export_t))
            // What exporting adds to `spans`, as a share of `off`.
            .with("export_over_spans_vs_off", share_of_off(export_t))
            .with("spans_sent", sent)
            .with("spans_received", received[0]),
        // The spans alone, added to `off`: the least `spans` and `export` could cost.
        Report::new("react", "floor_spans_only", REACT_ONE as u64, floor_spans)
            .with("us_per_request", per(floor_spans))
            .with("ratio_to_off", ratio(off_t + floor_spans)),
        Report::new("react", "floor_export_only", REACT_ONE as u64, floor_export)
            .with("us_per_request", per(floor_export))
            .with("ratio_to_off", ratio(off_t + floor_export))
            .with("spans_received", received[3]),
    ]
}

/// The hand-off floor: a task asking a bare ractor actor `REACT_ONE` times (`call`, a reply
/// port), on a multi-threaded runtime of `workers` workers of its own. A motet request on
/// which all work is done at once is one such round trip (the ask and its reply), so the
/// difference between 2 workers and 1 here is what tokio's second worker costs any actor
/// round trip, whatever the actor does.
fn handoff_floor(workers: usize) -> Option<Duration> {
    on_workers(workers, || async {
        let tools = tools()?;
        let strategy = react(&tools)?;
        let state = strategy.init_for_thread(&FixedEnv::new(0), "bare");
        let (bare, join) = Actor::spawn(None, Bare, state).await.ok()?;
        for _ in 0..REACT_ONE / 10 {
            bare.call(BareMsg::Ping, None).await.ok()?;
        }
        let start = Instant::now();
        for _ in 0..REACT_ONE {
            bare.call(BareMsg::Ping, None).await.ok()?;
        }
        let elapsed = start.elapsed();
        stop_all(vec![(bare, join)]).await;
        Some(elapsed)
    })
}

/// Rounds of `motet` and `one_worker`, alternating: enough that the median of each stands
/// above this 2-core machine's hiccups (with 5, single runs of the ratio ranged 1.15-1.26).
const ROUNDS: usize = 9;

/// The median of `rounds`, or `None` when any failed.
fn median(rounds: Vec<Option<Duration>>) -> Option<Duration> {
    let mut rounds: Vec<Duration> = rounds.into_iter().collect::<Option<_>>()?;
    rounds.sort_unstable();
    rounds.get(rounds.len() / 2).copied()
}

/// One round of `one_worker`: the multi-threaded scheduler with one worker, asked from a task
/// on it — the same code as `motet` without a second worker to take the next task of the
/// chain.
fn one_worker_round() -> Option<Duration> {
    on_workers(1, || react_runtime(1, REACT_ONE))
}

async fn react_bench() -> Vec<Report> {
    // The asker as a task on the runtime, as a server's request handler is; then from the
    // thread that entered the runtime (`block_on`, as `#[tokio::main]` code is), where every ask
    // and every reply crosses between that thread and a worker.
    //
    // `motet` and `one_worker` are compared as a ratio, and this machine's pace drifts within
    // a run: they are measured in alternating rounds and compared by their medians.
    let mut ones = Vec::with_capacity(ROUNDS);
    let mut one_workers = Vec::with_capacity(ROUNDS);
    let mut loops_2 = Vec::with_capacity(ROUNDS);
    let mut loops_1 = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        loops_2.push(actor_loop_round(2));
        loops_1.push(actor_loop_round(1));
        ones.push(
            tokio::spawn(react_runtime(1, REACT_ONE))
                .await
                .ok()
                .flatten(),
        );
        one_workers.push(one_worker_round());
    }
    let one = median(ones);
    let one_worker = median(one_workers);
    let (Some(loop_2), Some(loop_1)) = (median(loops_2), median(loops_1)) else {
        return Vec::new();
    };
    let floor_ratio = round2(loop_2.as_secs_f64() / loop_1.as_secs_f64());
    let from_main = react_runtime(1, REACT_ONE).await;
    let current = std::thread::spawn(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()
            .and_then(|rt| rt.block_on(react_runtime(1, REACT_ONE)))
    })
    .join()
    .ok()
    .flatten();
    let many = react_runtime(REACT_MANY, 2).await;
    let floor = tokio::spawn(react_floor(REACT_ONE, false))
        .await
        .ok()
        .flatten();
    let floor_fresh = tokio::spawn(react_floor(REACT_ONE, true))
        .await
        .ok()
        .flatten();
    let (Some(handoff_1), Some(handoff_2)) = (handoff_floor(1), handoff_floor(2)) else {
        return Vec::new();
    };
    let (
        Some(one),
        Some(from_main),
        Some(many),
        Some(floor),
        Some(floor_fresh),
        Some(current),
        Some(one_worker),
    ) = (
        one,
        from_main,
        many,
        floor,
        floor_fresh,
        current,
        one_worker,
    )
    else {
        return Vec::new();
    };
    let per = |d: Duration, n: usize| d.as_secs_f64() * 1e6 / n as f64;
    let one_us = per(one, REACT_ONE);
    let floor_us = per(floor, REACT_ONE);
    vec![
        Report::new("react", "motet", REACT_ONE as u64, one)
            .with("us_per_request", round2(one_us))
            // Two LLM round trips per request.
            .with(
                "us_over_floor_per_llm_call",
                round2((one_us - floor_us) / 2.0),
            ),
        Report::new("react", "from_main", REACT_ONE as u64, from_main)
            .with("us_per_request", round2(per(from_main, REACT_ONE)))
            .with(
                "us_over_floor_per_llm_call",
                round2((per(from_main, REACT_ONE) - floor_us) / 2.0),
            ),
        Report::new("react", "current_thread", REACT_ONE as u64, current)
            .with("us_per_request", round2(per(current, REACT_ONE)))
            .with(
                "us_over_floor_per_llm_call",
                round2((per(current, REACT_ONE) - floor_us) / 2.0),
            ),
        Report::new("react", "one_worker", REACT_ONE as u64, one_worker)
            .with("us_per_request", round2(per(one_worker, REACT_ONE)))
            .with(
                "us_over_floor_per_llm_call",
                round2((per(one_worker, REACT_ONE) - floor_us) / 2.0),
            ),
        // `motet` against `one_worker`, medians of alternating rounds.
        Report::new("react", "two_workers_vs_one", REACT_ONE as u64, one)
            .with("rounds", ROUNDS as u64)
            .with(
                "ratio",
                round2(one.as_secs_f64() / one_worker.as_secs_f64()),
            )
            .with(
                "us_added_per_request",
                round2(per(one, REACT_ONE) - per(one_worker, REACT_ONE)),
            )
            // The same ratio for a bare actor doing the work by hand: the scheduler's share.
            .with("floor_ratio", floor_ratio),
        // The same work by hand in a bare actor, asked the same way: what the second worker
        // costs any actor whose round trip takes this long, motet or not.
        Report::new(
            "react",
            "floor_actor_loop_1_worker",
            REACT_ONE as u64,
            loop_1,
        )
        .with("us_per_request", round2(per(loop_1, REACT_ONE))),
        Report::new(
            "react",
            "floor_actor_loop_2_workers",
            REACT_ONE as u64,
            loop_2,
        )
        .with("us_per_request", round2(per(loop_2, REACT_ONE)))
        .with("rounds", ROUNDS as u64)
        .with("ratio", floor_ratio)
        .with(
            "us_added_per_request",
            round2(per(loop_2, REACT_ONE) - per(loop_1, REACT_ONE)),
        ),
        Report::new(
            "react",
            "floor_handoff_1_worker",
            REACT_ONE as u64,
            handoff_1,
        )
        .with("us_per_request", round2(per(handoff_1, REACT_ONE))),
        Report::new(
            "react",
            "floor_handoff_2_workers",
            REACT_ONE as u64,
            handoff_2,
        )
        .with("us_per_request", round2(per(handoff_2, REACT_ONE)))
        .with(
            "us_added_per_request",
            round2(per(handoff_2, REACT_ONE) - per(handoff_1, REACT_ONE)),
        ),
        Report::new("react", "agents_1000", (REACT_MANY * 2) as u64, many)
            .with("us_per_request", round2(per(many, REACT_MANY * 2))),
        Report::new("react", "floor_loop", REACT_ONE as u64, floor)
            .with("us_per_request", round2(floor_us)),
        // The same loop with each request in a new conversation: a request late in a long
        // conversation should cost what one in a short one does (a pass over the whole thread
        // per request once made this ratio 4-5).
        Report::new(
            "react",
            "floor_loop_new_thread",
            REACT_ONE as u64,
            floor_fresh,
        )
        .with("us_per_request", round2(per(floor_fresh, REACT_ONE)))
        .with(
            "same_over_new",
            round2(floor.as_secs_f64() / floor_fresh.as_secs_f64()),
        ),
    ]
}

/// `react`.
pub(crate) fn run_react() -> Vec<Report> {
    let mut reports = react_tracing();
    reports.extend(block_on(react_bench()));
    reports
}
