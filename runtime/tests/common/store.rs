//! The ThreadStore contract, written once and run against every store: the in-memory, SQLite
//! and PostgreSQL stores' test files include it with `#[path = "common/store.rs"]`.

#![allow(dead_code, reason = "each test file uses some of these")]
#![allow(clippy::unwrap_used, clippy::panic)] // a failed expectation is a failed test

use std::sync::Arc;

use motet_agents::{EntryBody, Env, FixedEnv, NewEntry, Refs, Thread};
use motet_directives::{AssistantMessage, ToolResult, Usage};
use motet_runtime::store::{StoreError, ThreadHeader, ThreadMeta, ThreadStore};

pub(crate) fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

/// A thread of one request: user, assistant (with usage), tool result, final answer.
pub(crate) fn conversation(env: &FixedEnv, id: &str) -> Thread {
    let mut thread = Thread::new(id, env.now_ms()).with_metadata("user", serde_json::json!("u_1"));
    thread.append(
        env,
        NewEntry::user("what is the weather?").with_refs(Refs::request("r1")),
    );
    env.advance_ms(5);
    thread.append(
        env,
        NewEntry::assistant(AssistantMessage::text("let me look"), usage(10, 3)),
    );
    thread.append_all(
        env,
        [NewEntry::tool_result(
            "weather",
            ToolResult::ok("tc_1", "sunny"),
        )],
    );
    env.advance_ms(5);
    thread.append(
        env,
        NewEntry::assistant(AssistantMessage::text("sunny"), usage(20, 4)),
    );
    thread
}

pub(crate) async fn save(store: &dyn ThreadStore, thread: &Thread) -> u64 {
    store.create(&ThreadHeader::of(thread)).await.unwrap();
    store.commit(thread, 0).await.unwrap()
}

pub(crate) fn json(thread: &Thread) -> String {
    serde_json::to_string(thread.to_list()).unwrap()
}

pub(crate) async fn round_trip_keeps_everything(store: &dyn ThreadStore) {
    let env = FixedEnv::new(1_000);
    let thread = conversation(&env, "thread_a");
    assert_eq!(save(store, &thread).await, 4);
    let back = store.load("thread_a").await.unwrap().unwrap();
    assert_eq!(back.to_list(), thread.to_list());
    assert_eq!(json(&back), json(&thread));
    assert_eq!(back.rev(), 4, "the stored rev is the entry count");
    assert!(back.rev() >= thread.rev());
    assert_eq!(back.created_at(), 1_000);
    assert_eq!(back.updated_at(), thread.updated_at());
    assert_eq!(back.metadata(), thread.metadata());
    assert_eq!(back.usage(), usage(30, 7));
    assert_eq!(back.stats(), thread.stats());
    assert!(store.load("thread_missing").await.unwrap().is_none());
}

pub(crate) async fn create_twice_is_refused(store: &dyn ThreadStore) {
    let header = ThreadHeader::new("thread_b", 5);
    store.create(&header).await.unwrap();
    let err = store.create(&header).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::AlreadyExists { thread_id } if thread_id == "thread_b"),
        "{err}"
    );
    let empty = store.load("thread_b").await.unwrap().unwrap();
    assert_eq!((empty.rev(), empty.entry_count()), (0, 0));
}

pub(crate) async fn stale_rev_is_a_conflict_and_writes_nothing(store: &dyn ThreadStore) {
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_c");
    let entries = thread.to_list();
    store.create(&ThreadHeader::of(&thread)).await.unwrap();
    assert_eq!(store.append("thread_c", &entries[..3], 0).await.unwrap(), 3);
    // Another writer, also at rev 3, wants its own entry at seq 3; this one commits first.
    let mut theirs = (*entries[3]).clone();
    theirs.body = EntryBody::Note {
        text: "not this one".into(),
    };
    let theirs = std::sync::Arc::new(theirs);
    assert_eq!(store.append("thread_c", &entries[3..], 3).await.unwrap(), 4);
    let err = store.append("thread_c", &[theirs], 3).await.unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Conflict { thread_id, expected: 3, current: 4 } if thread_id == "thread_c"
        ),
        "{err}"
    );
    let stored = store.load("thread_c").await.unwrap().unwrap();
    assert_eq!(stored.to_list(), entries);
    let mut longer = thread.clone();
    longer.append(&env, NewEntry::user("and tomorrow?"));
    assert_eq!(store.commit(&longer, 4).await.unwrap(), 5);
    assert_eq!(store.append("thread_c", &[], 5).await.unwrap(), 5);
    assert!(matches!(
        store.append("thread_c", &[], 4).await,
        Err(StoreError::Conflict { current: 5, .. })
    ));
}

pub(crate) async fn entries_must_continue_the_thread(store: &dyn ThreadStore) {
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_d");
    store.create(&ThreadHeader::of(&thread)).await.unwrap();
    let entries = thread.to_list();
    // A gap: seq 1 where 0 is due.
    let err = store
        .append("thread_d", &entries[1..], 0)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NonContiguous {
                expected: 0,
                found: 1,
                ..
            }
        ),
        "{err}"
    );
    // A duplicate inside the batch.
    let dup = [entries[0].clone(), entries[0].clone()];
    let err = store.append("thread_d", &dup, 0).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NonContiguous {
                expected: 1,
                found: 0,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        store.load("thread_d").await.unwrap().unwrap().entry_count(),
        0
    );
    let err = store
        .append("thread_nope", &entries[..1], 0)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
}

pub(crate) async fn load_after_returns_the_tail(store: &dyn ThreadStore) {
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_e");
    save(store, &thread).await;
    let tail = store.load_after("thread_e", 2).await.unwrap();
    assert_eq!(tail, thread.to_list()[2..].to_vec());
    assert!(store.load_after("thread_e", 4).await.unwrap().is_empty());
    assert_eq!(store.load_after("thread_e", 0).await.unwrap().len(), 4);
    assert!(matches!(
        store.load_after("thread_nope", 0).await,
        Err(StoreError::NotFound { .. })
    ));
}

pub(crate) async fn list_summaries_carry_totals_and_window_marks(store: &dyn ThreadStore) {
    let env = FixedEnv::new(100);
    let mut first = conversation(&env, "thread_f1");
    save(store, &first).await;
    first.append(&env, NewEntry::summary(0, 2, "asked about weather"));
    first.append(&env, NewEntry::boundary(3));
    first.append(&env, NewEntry::user("more"));
    store.commit(&first, 4).await.unwrap();
    let second = Thread::new("thread_f2", 5_000);
    save(store, &second).await;

    let list = store.list().await.unwrap();
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["thread_f1", "thread_f2"]);
    let f1 = &list[0];
    assert_eq!((f1.rev, f1.entry_count), (7, 7));
    assert_eq!(f1.usage, usage(30, 7));
    assert_eq!(f1.latest_summary_seq, Some(4));
    assert_eq!(f1.latest_boundary_seq, Some(5));
    assert_eq!(f1.created_at, 100);
    assert_eq!(f1.updated_at, first.updated_at());
    assert_eq!(f1.estimated_tokens, first.stats().estimated_tokens);
    assert_eq!(f1.metadata["user"], "u_1");
    assert_eq!(list[1].entry_count, 0);
    assert_eq!(store.summary("thread_f1").await.unwrap().as_ref(), Some(f1));
    assert!(store.summary("thread_nope").await.unwrap().is_none());
    let loaded = store.load("thread_f1").await.unwrap().unwrap();
    assert_eq!(loaded.latest_summary().map(|e| e.seq), Some(4));
    assert_eq!(loaded.latest_boundary().map(|e| e.seq), Some(5));
}

pub(crate) async fn meta_and_delete(store: &dyn ThreadStore) {
    store
        .create(&ThreadHeader::new("thread_g", 0))
        .await
        .unwrap();
    assert_eq!(store.get_meta("thread_g").await.unwrap(), None);
    let meta = ThreadMeta {
        policy: Some(serde_json::json!({"max_input_tokens": 8000})),
        strategy_config_id: Some("react/default".into()),
        ..ThreadMeta::default()
    };
    store.put_meta("thread_g", &meta).await.unwrap();
    assert_eq!(
        store.get_meta("thread_g").await.unwrap(),
        Some(meta.clone())
    );
    assert!(matches!(
        store.put_meta("thread_nope", &meta).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(store.delete("thread_g").await.unwrap());
    assert!(!store.delete("thread_g").await.unwrap());
    assert!(store.load("thread_g").await.unwrap().is_none());
    assert!(matches!(
        store.get_meta("thread_g").await,
        Err(StoreError::NotFound { .. })
    ));
}

/// Two writers on one thread with the same expected rev: exactly one wins, the other sees the
/// winner's rev, and the stored entries are exactly the winner's.
pub(crate) async fn two_writers_one_wins(a: Arc<dyn ThreadStore>, b: Arc<dyn ThreadStore>) {
    for round in 0..20 {
        let id = format!("thread_race_{round}");
        let env = FixedEnv::new(0);
        let base = conversation(&env, &id);
        save(a.as_ref(), &base).await;
        let mut left = base.clone();
        let mut right = base.clone();
        left.append_all(&env, (0..3).map(|i| NewEntry::user(format!("left {i}"))));
        right.append_all(&env, (0..5).map(|i| NewEntry::note(format!("right {i}"))));
        let (ra, rb) = tokio::join!(
            tokio::spawn({
                let a = Arc::clone(&a);
                async move { a.commit(&left, 4).await.map(|rev| (rev, left)) }
            }),
            tokio::spawn({
                let b = Arc::clone(&b);
                async move { b.commit(&right, 4).await.map(|rev| (rev, right)) }
            }),
        );
        let (winner, loser) = match (ra.unwrap(), rb.unwrap()) {
            (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
            (x, y) => panic!("round {round}: expected one winner, got {x:?} and {y:?}"),
        };
        let (rev, thread) = winner;
        match loser {
            StoreError::Conflict {
                expected: 4,
                current,
                ..
            } => assert_eq!(current, rev),
            other => panic!("round {round}: {other}"),
        }
        let stored = a.load(&id).await.unwrap().unwrap();
        assert_eq!(stored.to_list(), thread.to_list(), "round {round}");
        let seqs: Vec<u64> = stored.to_list().iter().map(|e| u64::from(e.seq)).collect();
        assert_eq!(seqs, (0..rev).collect::<Vec<_>>());
    }
}

/// A thread's first write is whole: thread, meta and entries together, or nothing at all.
pub(crate) async fn create_with_is_all_or_nothing(store: &dyn ThreadStore) {
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_h");
    let meta = ThreadMeta {
        strategy_config_id: Some("calc".into()),
        ..ThreadMeta::default()
    };
    let header = ThreadHeader::of(&thread);
    // Entries that do not start at seq 0: refused, and no thread is left behind.
    let err = store
        .create_with(&header, Some(&meta), &thread.to_list()[1..])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NonContiguous { .. }), "{err}");
    assert!(store.load("thread_h").await.unwrap().is_none());
    assert!(store.summary("thread_h").await.unwrap().is_none());

    let rev = store
        .create_with(&header, Some(&meta), thread.to_list())
        .await
        .unwrap();
    assert_eq!(rev, 4);
    assert_eq!(
        json(&store.load("thread_h").await.unwrap().unwrap()),
        json(&thread)
    );
    assert_eq!(
        store.get_meta("thread_h").await.unwrap(),
        Some(meta.clone())
    );
    let summary = store.summary("thread_h").await.unwrap().unwrap();
    assert_eq!((summary.rev, summary.usage.input_tokens), (4, 30));
    // A second first write of the same thread is refused and changes nothing.
    let err = store
        .create_with(&header, None, &thread.to_list()[..1])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists { .. }), "{err}");
    assert_eq!(store.get_meta("thread_h").await.unwrap(), Some(meta));
    assert_eq!(store.summary("thread_h").await.unwrap().unwrap().rev, 4);
}

pub(crate) async fn state_commits_with_its_entries_or_not_at_all(store: &dyn ThreadStore) {
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_s");
    let entries = thread.to_list();
    store.create(&ThreadHeader::of(&thread)).await.unwrap();
    assert_eq!(store.load_state("thread_s").await.unwrap(), None);
    let rev = store
        .append_with_state("thread_s", &entries[..2], 0, r#"{"n":1}"#)
        .await
        .unwrap();
    assert_eq!(rev, 2);
    assert_eq!(
        store.load_state("thread_s").await.unwrap().as_deref(),
        Some(r#"{"n":1}"#)
    );
    // A stale writer's entries and state are both refused.
    let err = store
        .append_with_state("thread_s", &entries[..2], 0, r#"{"n":2}"#)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict { current: 2, .. }),
        "{err}"
    );
    assert_eq!(
        store.load_state("thread_s").await.unwrap().as_deref(),
        Some(r#"{"n":1}"#)
    );
    // No entries: only the state changes, and a plain append keeps it.
    assert_eq!(
        store
            .append_with_state("thread_s", &[], 2, r#"{"n":3}"#)
            .await
            .unwrap(),
        2
    );
    store.append("thread_s", &entries[2..3], 2).await.unwrap();
    assert_eq!(
        store.load_state("thread_s").await.unwrap().as_deref(),
        Some(r#"{"n":3}"#)
    );
    assert!(matches!(
        store.load_state("no_such_thread").await,
        Err(StoreError::NotFound { .. })
    ));
}

/// A writer whose claim another writer took over cannot commit, even at the right rev; nothing
/// of its write lands; racing with the new owner it loses whatever the order.
pub(crate) async fn a_stale_epoch_cannot_commit_even_at_the_right_rev(store: &dyn ThreadStore) {
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_fenced");
    let entries = thread.to_list();
    store.create(&ThreadHeader::of(&thread)).await.unwrap();
    assert_eq!(store.epoch("thread_fenced").await.unwrap(), 0);

    let old = store.claim("thread_fenced").await.unwrap();
    assert_eq!(old, 1);
    assert_eq!(
        store
            .append_fenced("thread_fenced", &entries[..2], 0, Some("old"), old)
            .await
            .unwrap(),
        2
    );
    // A new owner takes over; the old one, still at the right rev, is fenced off.
    let new = store.claim("thread_fenced").await.unwrap();
    assert_eq!(new, 2);
    assert_eq!(store.epoch("thread_fenced").await.unwrap(), 2);
    let err = store
        .append_fenced("thread_fenced", &entries[2..], 2, Some("stale"), old)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Fenced { thread_id, epoch: 1, current: 2 } if thread_id == "thread_fenced"
        ),
        "{err}"
    );
    // Nothing of the stale write landed: neither entries nor state.
    assert_eq!(
        store.summary("thread_fenced").await.unwrap().unwrap().rev,
        2
    );
    assert_eq!(
        store.load_state("thread_fenced").await.unwrap().as_deref(),
        Some("old")
    );
    // An empty fenced append checks the epoch too.
    assert!(matches!(
        store
            .append_fenced("thread_fenced", &[], 2, None, old)
            .await,
        Err(StoreError::Fenced { .. })
    ));
    // The new owner commits; a stale rev under the right epoch is still a conflict.
    assert_eq!(
        store
            .append_fenced("thread_fenced", &entries[2..], 2, Some("new"), new)
            .await
            .unwrap(),
        4
    );
    assert!(matches!(
        store
            .append_fenced("thread_fenced", &[], 2, None, new)
            .await,
        Err(StoreError::Conflict { current: 4, .. })
    ));
    let back = store.load("thread_fenced").await.unwrap().unwrap();
    assert_eq!(back.to_list(), entries);
    assert_eq!(
        store.load_state("thread_fenced").await.unwrap().as_deref(),
        Some("new")
    );
    assert!(matches!(
        store.claim("thread_nope").await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.append_fenced("thread_nope", &[], 0, None, 1).await,
        Err(StoreError::NotFound { .. })
    ));

    // Two owners racing: the stale one loses whatever the order, the claimed one wins.
    for round in 0..10 {
        let id = format!("thread_takeover_{round}");
        let base = conversation(&env, &id);
        save(store, &base).await;
        let stale = store.claim(&id).await.unwrap();
        let fresh = store.claim(&id).await.unwrap();
        let mut left = base.clone();
        left.append(&env, NewEntry::note("stale"));
        let mut right = base.clone();
        right.append(&env, NewEntry::note("fresh"));
        let (a, b) = tokio::join!(
            store.append_fenced(&id, &left.to_list()[4..], 4, None, stale),
            store.append_fenced(&id, &right.to_list()[4..], 4, None, fresh),
        );
        assert!(
            matches!(a, Err(StoreError::Fenced { .. })),
            "round {round}: {a:?}"
        );
        assert_eq!(b.unwrap(), 5, "round {round}");
    }
}

/// `thread_ids`: every thread, a page at a time, in the order of ids (not of creation), each
/// page starting after the last id of the one before.
pub(crate) async fn thread_ids_come_a_page_at_a_time(store: &dyn ThreadStore) {
    for (n, id) in ["ids_b", "ids_c", "ids_a"].into_iter().enumerate() {
        save(store, &Thread::new(id, 1_000 + n as u64)).await;
    }
    let mut every: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    every.sort();
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store.thread_ids(after.as_deref(), 2).await.unwrap();
        assert!(page.len() <= 2, "{page:?}");
        let Some(last) = page.last().cloned() else {
            break;
        };
        paged.extend(page);
        after = Some(last);
    }
    assert_eq!(paged, every);
    let after_a = store.thread_ids(Some("ids_a"), 2).await.unwrap();
    assert_eq!(after_a, ["ids_b", "ids_c"]);
    assert!(store.thread_ids(None, 0).await.unwrap().is_empty());
}

pub(crate) async fn whole_suite(store: Arc<dyn ThreadStore>) {
    state_commits_with_its_entries_or_not_at_all(store.as_ref()).await;
    round_trip_keeps_everything(store.as_ref()).await;
    create_twice_is_refused(store.as_ref()).await;
    stale_rev_is_a_conflict_and_writes_nothing(store.as_ref()).await;
    entries_must_continue_the_thread(store.as_ref()).await;
    load_after_returns_the_tail(store.as_ref()).await;
    meta_and_delete(store.as_ref()).await;
    create_with_is_all_or_nothing(store.as_ref()).await;
    a_stale_epoch_cannot_commit_even_at_the_right_rev(store.as_ref()).await;
    two_writers_one_wins(Arc::clone(&store), Arc::clone(&store)).await;
    the_usage_ledger_keeps_every_call_and_sums_it_per_level(store.as_ref()).await;
    timers_are_kept_settled_and_found_by_due_time(store.as_ref()).await;
    a_step_commits_its_timers_with_it_or_not_at_all(store.as_ref()).await;
    a_step_settles_the_firing_it_handled_unless_the_timer_changed(store.as_ref()).await;
    claim_and_load_takes_the_thread_over_and_reads_it(store.as_ref()).await;
}

/// `claim_and_load`: nothing for a thread that does not exist; for one that does, the epoch
/// moved on (an older writer is fenced), the thread as `load` reads it and its state.
pub(crate) async fn claim_and_load_takes_the_thread_over_and_reads_it(store: &dyn ThreadStore) {
    assert!(store.claim_and_load("no_such").await.unwrap().is_none());
    let env = FixedEnv::new(0);
    let thread = conversation(&env, "thread_claimed");
    let entries = thread.to_list();
    store.create(&ThreadHeader::of(&thread)).await.unwrap();
    let before = store.claim("thread_claimed").await.unwrap();
    store
        .append_fenced("thread_claimed", entries, 0, Some(r#"{"n":4}"#), before)
        .await
        .unwrap();
    let claimed = store
        .claim_and_load("thread_claimed")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.epoch, before + 1);
    assert_eq!(store.epoch("thread_claimed").await.unwrap(), claimed.epoch);
    assert_eq!(json(&claimed.thread), json(&thread));
    assert_eq!(claimed.thread.rev(), 4);
    assert_eq!(claimed.state.as_deref(), Some(r#"{"n":4}"#));
    let err = store
        .append_fenced("thread_claimed", &[], 4, None, before)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Fenced { .. }), "{err}");
    store.delete("thread_claimed").await.unwrap();
}

/// `commit_step`: a thread's first write creates it with its meta, entries, state and timers;
/// a stale rev or epoch writes none of the step, its timers included; a step with only timer
/// changes makes them at the thread's rev.
pub(crate) async fn a_step_commits_its_timers_with_it_or_not_at_all(store: &dyn ThreadStore) {
    use motet_runtime::store::{StepCommit, StoredTimer, ThreadKey, TimerWrite};
    use motet_signals::Signal;
    let key = ThreadKey::new("stepper", "t");
    let id = key.store_id();
    let timer = |name: &str, due_ms: u64| StoredTimer {
        key: key.clone(),
        id: name.to_owned(),
        due_ms,
        signal: Signal::builder("timer.rang", "test")
            .with_data(serde_json::json!({ "id": name }))
            .build()
            .unwrap(),
        cron: None,
    };
    let ids = |timers: Vec<StoredTimer>| timers.into_iter().map(|t| t.id).collect::<Vec<_>>();
    let env = FixedEnv::new(0);
    let thread = conversation(&env, &id);
    let entries = thread.to_list();
    let header = ThreadHeader::of(&thread);
    let meta = ThreadMeta {
        key: Some(key.clone()),
        ..ThreadMeta::default()
    };
    let put = |name: &str, due_ms: u64| TimerWrite::Put(timer(name, due_ms));
    let remove = |name: &str| TimerWrite::Remove {
        key: key.clone(),
        id: name.to_owned(),
    };
    let first_timers = [put("a", 2_000), put("b", 1_000)];
    let first = StepCommit {
        thread_id: &id,
        create: Some((&header, &meta)),
        entries: &entries[..2],
        expected_rev: 0,
        state: Some(r#"{"n":1}"#),
        epoch: 0,
        timers: &first_timers,
        lease: None,
    };
    assert_eq!(store.commit_step(&first).await.unwrap(), 2);
    assert_eq!(ids(store.timers_of(&key).await.unwrap()), ["b", "a"]);
    assert_eq!(store.get_meta(&id).await.unwrap(), Some(meta.clone()));
    assert_eq!(
        store.load_state(&id).await.unwrap().as_deref(),
        Some(r#"{"n":1}"#)
    );
    // Created again: refused, and its timers are not written.
    let again_timers = [put("c", 500)];
    let again = StepCommit {
        timers: &again_timers,
        ..first
    };
    let err = store.commit_step(&again).await.unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists { .. }), "{err}");

    // A stale rev, then a stale epoch: nothing of the step lands, its timers included.
    let next_timers = [remove("a"), put("c", 3_000)];
    let stale = StepCommit {
        thread_id: &id,
        create: None,
        entries: &entries[..2],
        expected_rev: 0,
        state: Some(r#"{"n":2}"#),
        epoch: 0,
        timers: &next_timers,
        lease: None,
    };
    let err = store.commit_step(&stale).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    let epoch = store.claim(&id).await.unwrap();
    let fenced = StepCommit {
        entries: &entries[2..],
        expected_rev: 2,
        ..stale
    };
    let err = store.commit_step(&fenced).await.unwrap_err();
    assert!(matches!(err, StoreError::Fenced { .. }), "{err}");
    assert_eq!(ids(store.timers_of(&key).await.unwrap()), ["b", "a"]);
    assert_eq!(store.summary(&id).await.unwrap().unwrap().rev, 2);
    assert_eq!(
        store.load_state(&id).await.unwrap().as_deref(),
        Some(r#"{"n":1}"#)
    );

    // At the thread's rev and epoch: the entries, the state and the timer changes, in order.
    let next = StepCommit { epoch, ..fenced };
    assert_eq!(store.commit_step(&next).await.unwrap(), 4);
    assert_eq!(ids(store.timers_of(&key).await.unwrap()), ["b", "c"]);
    assert_eq!(
        store.load_state(&id).await.unwrap().as_deref(),
        Some(r#"{"n":2}"#)
    );
    // Only timers: made at the rev, the state kept.
    let only_timers = [put("b", 4_000), remove("c"), remove("never-set")];
    let only = StepCommit {
        thread_id: &id,
        create: None,
        entries: &[],
        expected_rev: 4,
        state: None,
        epoch,
        timers: &only_timers,
        lease: None,
    };
    assert_eq!(store.commit_step(&only).await.unwrap(), 4);
    let kept = store.timers_of(&key).await.unwrap();
    assert_eq!(
        kept.iter()
            .map(|t| (t.id.as_str(), t.due_ms))
            .collect::<Vec<_>>(),
        [("b", 4_000)]
    );
    assert_eq!(
        store.load_state(&id).await.unwrap().as_deref(),
        Some(r#"{"n":2}"#)
    );
    store.delete(&id).await.unwrap();
}

/// `commit_step` with a `TimerWrite::Fired`: the firing of a timer still as it fired is
/// settled (a one-shot removed, a cron timer moved on), one set again since is left alone, and
/// a write of the same step after the settling wins.
pub(crate) async fn a_step_settles_the_firing_it_handled_unless_the_timer_changed(
    store: &dyn ThreadStore,
) {
    use motet_runtime::store::{StepCommit, StoredTimer, ThreadKey, TimerWrite};
    use motet_signals::Signal;
    let key = ThreadKey::new("settler", "t");
    let id = key.store_id();
    let timer = |name: &str, due_ms: u64| StoredTimer {
        key: key.clone(),
        id: name.to_owned(),
        due_ms,
        signal: Signal::builder("timer.rang", "test")
            .with_id(format!("sig-{name}"))
            .build()
            .unwrap(),
        cron: None,
    };
    let fired = |name: &str, fired_ms: u64, next_ms: Option<u64>| TimerWrite::Fired {
        key: key.clone(),
        id: name.to_owned(),
        fired_ms,
        signal_id: format!("sig-{name}"),
        next_ms,
    };
    let env = FixedEnv::new(0);
    let thread = conversation(&env, &id);
    let entries = thread.to_list();
    let header = ThreadHeader::of(&thread);
    let meta = ThreadMeta {
        key: Some(key.clone()),
        ..ThreadMeta::default()
    };
    let set = [
        TimerWrite::Put(timer("once", 1_000)),
        TimerWrite::Put(timer("cron", 1_000)),
        TimerWrite::Put(timer("moved", 5_000)),
        TimerWrite::Put(timer("again", 1_000)),
    ];
    let first = StepCommit {
        thread_id: &id,
        create: Some((&header, &meta)),
        entries: &entries[..2],
        expected_rev: 0,
        state: None,
        epoch: 0,
        timers: &set,
        lease: None,
    };
    assert_eq!(store.commit_step(&first).await.unwrap(), 2);
    // `moved` was set again (due 5,000) after the firing at 1,000 began; `again` is set again
    // by the very step that handles its firing.
    let settle = [
        fired("once", 1_000, None),
        fired("cron", 1_000, Some(61_000)),
        fired("moved", 1_000, None),
        fired("again", 1_000, None),
        TimerWrite::Put(timer("again", 9_000)),
    ];
    let step = StepCommit {
        thread_id: &id,
        create: None,
        entries: &entries[2..],
        expected_rev: 2,
        state: Some(r#"{"n":2}"#),
        epoch: 0,
        timers: &settle,
        lease: None,
    };
    assert_eq!(store.commit_step(&step).await.unwrap(), 4);
    let mut left: Vec<(String, u64)> = store
        .timers_of(&key)
        .await
        .unwrap()
        .into_iter()
        .map(|t| (t.id, t.due_ms))
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            ("again".to_owned(), 9_000),
            ("cron".to_owned(), 61_000),
            ("moved".to_owned(), 5_000)
        ]
    );
    store.delete(&id).await.unwrap();
}

/// Timers: kept (replaced under the same key), found by due time for the named agents only,
/// settled only while they are the timer that fired, and gone with their thread.
pub(crate) async fn timers_are_kept_settled_and_found_by_due_time(store: &dyn ThreadStore) {
    use motet_directives::cron::{CronExpr, Misfire};
    use motet_runtime::store::{CronTimer, StoredTimer, ThreadKey, TimerOwners};
    use motet_signals::Signal;
    let timer = |agent: &str, thread: &str, id: &str, due_ms: u64| StoredTimer {
        key: ThreadKey::new(agent, thread),
        id: id.to_owned(),
        due_ms,
        signal: Signal::builder("timer.rang", "test")
            .with_data(serde_json::json!({ "id": id }))
            .build()
            .unwrap(),
        cron: None,
    };
    let a1 = timer("alarm", "t1", "one", 3_000);
    let mut a2 = timer("alarm", "t2", "two", 1_000);
    a2.cron = Some(CronTimer {
        expr: CronExpr::parse("*/5 * * * * *").unwrap(),
        zone: "Europe/Berlin".to_owned(),
        misfire: Misfire::CatchUp(3),
    });
    let other = timer("other", "t1", "one", 500);
    assert!(store.keeps_timers());
    for t in [&a1, &a2, &other] {
        store.put_timer(t).await.unwrap();
    }
    let alarm = TimerOwners {
        agents: vec!["alarm".to_owned()],
        kinds: Vec::new(),
    };
    let due = store.due_timers(0..10_000, &alarm, 10).await.unwrap();
    assert_eq!(
        due,
        [a2.clone(), a1.clone()],
        "soonest first, the named agents' only"
    );
    assert_eq!(
        store.due_timers(0..3_000, &alarm, 10).await.unwrap(),
        [a2.clone()]
    );
    // From its start on: a1 due at 3,000 is in, a2 due at 1,000 is not.
    assert_eq!(
        store.due_timers(1_001..3_001, &alarm, 10).await.unwrap(),
        std::slice::from_ref(&a1)
    );
    assert_eq!(
        store.due_timers(1_000..1_001, &alarm, 10).await.unwrap(),
        [a2.clone()]
    );
    assert_eq!(
        store.due_timers(0..10_000, &alarm, 1).await.unwrap(),
        [a2.clone()]
    );
    let nobody = TimerOwners::default();
    assert!(
        store
            .due_timers(0..10_000, &nobody, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // A virtual kind names every agent `<kind>:<key>`, and no other.
    let v1 = timer("room:7", "default", "v", 2_000);
    let v2 = timer("roomy:7", "default", "v", 2_000);
    store.put_timer(&v1).await.unwrap();
    store.put_timer(&v2).await.unwrap();
    let rooms = TimerOwners {
        agents: Vec::new(),
        kinds: vec!["room".to_owned()],
    };
    assert_eq!(
        store.due_timers(0..10_000, &rooms, 10).await.unwrap(),
        std::slice::from_ref(&v1)
    );
    assert!(store.remove_timer(&v1.key, "v").await.unwrap());
    assert!(store.remove_timer(&v2.key, "v").await.unwrap());

    // Set again under the same key: replaced, and a settling of the old firing changes nothing.
    let old_signal = a1.signal.id().as_str().to_owned();
    let a1_again = timer("alarm", "t1", "one", 4_000);
    store.put_timer(&a1_again).await.unwrap();
    assert!(
        !store
            .timer_fired(&a1.key, "one", 3_000, &old_signal, None)
            .await
            .unwrap()
    );
    assert_eq!(
        store.timers_of(&a1.key).await.unwrap(),
        std::slice::from_ref(&a1_again)
    );
    // The firing of the timer as it is now settles it.
    let new_signal = a1_again.signal.id().as_str().to_owned();
    assert!(
        store
            .timer_fired(&a1.key, "one", 4_000, &new_signal, None)
            .await
            .unwrap()
    );
    assert!(store.timers_of(&a1.key).await.unwrap().is_empty());

    // A cron timer moves on to its next occurrence.
    let cron_signal = a2.signal.id().as_str().to_owned();
    assert!(
        store
            .timer_fired(&a2.key, "two", 1_000, &cron_signal, Some(6_000))
            .await
            .unwrap()
    );
    let moved = store.timers_of(&a2.key).await.unwrap();
    assert_eq!(moved.len(), 1);
    assert_eq!((moved[0].due_ms, &moved[0].cron), (6_000, &a2.cron));

    // Removed by id, then the removal finds nothing.
    assert!(store.remove_timer(&a2.key, "two").await.unwrap());
    assert!(!store.remove_timer(&a2.key, "two").await.unwrap());

    // Deleting a thread deletes its timers.
    let env = FixedEnv::new(1_000);
    let thread = Thread::new(other.key.store_id(), env.now_ms());
    store.create(&ThreadHeader::of(&thread)).await.unwrap();
    store.delete(&other.key.store_id()).await.unwrap();
    let others = TimerOwners {
        agents: vec!["other".to_owned()],
        kinds: Vec::new(),
    };
    assert!(
        store
            .due_timers(0..10_000, &others, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Every field of a usage record reads back as written; filters select by time, request,
/// thread, agent and tenant; the sums count summaries and unpriced calls.
pub(crate) async fn the_usage_ledger_keeps_every_call_and_sums_it_per_level(
    store: &dyn ThreadStore,
) {
    use motet_providers::{CallKind, Cost};
    use motet_runtime::store::{UsageFilter, UsageRecord};
    let record =
        |at: u64, agent: &str, thread: &str, request: Option<&str>, kind, cost: Option<u64>| {
            UsageRecord {
                at,
                agent: agent.to_owned(),
                thread: thread.to_owned(),
                request: request.map(str::to_owned),
                tenant: (agent != "solo").then(|| "acme".to_owned()),
                model: "anthropic:claude-haiku-4-5".to_owned(),
                kind,
                usage: Usage {
                    input_tokens: 1_000,
                    output_tokens: 200,
                    cache_read_tokens: 600,
                    cache_write_tokens: 100,
                    reasoning_tokens: 50,
                },
                cost: cost.map(Cost::from_picodollars),
            }
        };
    let rows = [
        record(10, "a", "main", Some("r1"), CallKind::Turn, Some(3_000)),
        record(11, "a", "main", Some("r1"), CallKind::Summary, Some(1_000)),
        record(12, "a", "other", Some("r2"), CallKind::Turn, None),
        record(13, "b", "main", None, CallKind::Turn, Some(5)),
        record(14, "solo", "main", Some("r3"), CallKind::Turn, Some(7)),
    ];
    for row in &rows {
        store.record_usage(row).await.unwrap();
    }
    assert_eq!(
        store.usage_records(&UsageFilter::all()).await.unwrap(),
        rows
    );
    let request = store
        .usage_totals(&UsageFilter::request("r1"))
        .await
        .unwrap();
    assert_eq!((request.calls, request.summary_calls), (2, 1));
    assert_eq!(request.cost, Cost::from_picodollars(4_000));
    assert_eq!(request.usage.input_tokens, 2_000);
    let thread = store
        .usage_totals(&UsageFilter::thread("a", "main"))
        .await
        .unwrap();
    assert_eq!(thread.calls, 2);
    let agent = store.usage_totals(&UsageFilter::agent("a")).await.unwrap();
    assert_eq!((agent.calls, agent.unpriced_calls), (3, 1));
    let tenant = store
        .usage_totals(&UsageFilter::tenant("acme"))
        .await
        .unwrap();
    assert_eq!(tenant.calls, 4);
    let window = UsageFilter::all().with_since(11).with_before(13);
    assert_eq!(store.usage_records(&window).await.unwrap(), rows[1..3]);
}
