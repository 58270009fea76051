//! B16 on a real redis-server: three worker processes of `examples/fleet_faults` on one
//! namespace, and faults inflicted around them (the server SIGKILLed, SIGSTOPped, restarted
//! empty or from an older snapshot; junk and forged store contents; a probe-lease holder
//! SIGKILLed mid-probe; a probe longer than its lease; a systemic pause lifted during an
//! outage). Each scenario reads the workers' JSON lines into one timeline with the faults,
//! computes the figures of `tests/common/fleet_faults.rs` (lost transitions, concurrent
//! probes, replayed pauses, replayed opens, extra failures charged, redundant probes,
//! convergence time, the longest healthy call during the fault) and prints them. Every
//! scenario holds the fleet to no lost transition, at most one probe at a time while the
//! store answers, no replayed pause and no failure charged for a tool another worker had
//! opened; each to what it is about besides: no opening applied after it was over, no probe
//! within the cool-down after another worker's failed probe (cool-downs are shared), every
//! worker back to `fetch` CLOSED (or running) within a bound.
//!
//! Run: `cargo test --features redis --test fleet b16 -- --nocapture` prints the figures.
//! Every wait has a deadline; the workers and the server are killed when a test ends, and a
//! failing test prints its timeline.

#![cfg(feature = "redis")]

#[path = "../common/fleet_faults.rs"]
mod fleet_faults;

use std::thread::sleep;
use std::time::Duration;

use fleet_faults::{
    Entry, FleetRun, Settings, State, assert_counts, assert_no_replayed_opens,
    assert_shared_cool_down, converged_closed, converged_running, fetch_state_at, key,
    max_latency_us, now_ms, paused_at, report,
};

/// Opens `fetch` the way a fleet should: its upstream refuses the first worker's calls, the
/// circuit opens there and reaches the others (which then find their upstream down too, but
/// route around it without a call).
fn open_on_the_first(run: &FleetRun) {
    let since = run.set_health(&[0], "down");
    let allowance = run.settings.allowance();
    run.wait_line(0, "opened", since, Duration::from_secs(3), |e| {
        e.str("tool") == Some("fetch") && e.bool("own")
    });
    for i in 1..run.workers.len() {
        run.wait_line(i, "opened", since, allowance * 2, |e| {
            e.str("tool") == Some("fetch")
        });
    }
    let others: Vec<usize> = (1..run.workers.len()).collect();
    run.set_health(&others, "down");
}

fn cool_down_cap(s: &Settings) -> Duration {
    Duration::from_millis(s.cooldown_ms * 2)
}

/// Ends the run and computes, prints and returns what it showed.
fn conclude(
    mut run: FleetRun,
    converge_since: u64,
    fault: (u64, u64),
    running: bool,
) -> (
    FleetRun,
    Vec<Entry>,
    fleet_faults::Figures,
    Option<Duration>,
) {
    let took = run.started.elapsed();
    let entries = run.finish();
    let figures = run.figures(&entries);
    let ids = run.ids();
    let convergence = if running {
        converged_running(&entries, &ids, converge_since)
    } else {
        converged_closed(&entries, &ids, converge_since)
    };
    report(
        &run.name,
        &figures,
        convergence,
        max_latency_us(&entries, fault.0, fault.1),
        took,
    );
    (run, entries, figures, convergence)
}

#[test]
fn b16_redis_killed_while_fetch_is_down_then_restarted_empty_the_fleet_loses_nothing() {
    let settings = Settings {
        seed: 0xa,
        ..Settings::default()
    };
    let mut run = FleetRun::start("b16_a_kill_restart_empty", settings.clone());
    let all = run.all();
    open_on_the_first(&run);

    let down = run.redis_kill();
    run.wait_store(&all, false, down, Duration::from_secs(2));
    // Long enough for every worker's cool-down to end: each probes on its own breaker.
    sleep(Duration::from_millis(1_500));
    let back = run.redis_restart_empty();
    run.wait_store(&all, true, back, Duration::from_secs(3));
    // What opened meanwhile is written from the workers' queues; then the upstream mends.
    sleep(settings.allowance() * 2);
    let mended = run.set_health(&all, "up");
    let limit = cool_down_cap(&settings) + Duration::from_millis(settings.lease_ms) * 2;
    run.settle_fetch(State::Closed, limit);
    sleep(Duration::from_millis(300));

    let (run, _, figures, convergence) = conclude(run, mended, (down, back), false);
    assert_counts(&run.name, &figures);
    assert_no_replayed_opens(&run.name, &figures);
    assert_shared_cool_down(&run.name, &figures);
    assert!(
        convergence.is_some_and(|c| c <= limit),
        "{}: fetch not CLOSED on every worker within {limit:?} of the upstream mending ({convergence:?})",
        run.name
    );
}

#[test]
fn b16_redis_paused_and_resumed_the_fleet_loses_nothing_and_converges() {
    let settings = Settings {
        seed: 0xb,
        ..Settings::default()
    };
    let mut run = FleetRun::start("b16_b_stop_cont", settings.clone());
    let all = run.all();
    open_on_the_first(&run);

    let down = run.redis_pause();
    run.wait_store(&all, false, down, Duration::from_secs(2));
    sleep(Duration::from_millis(1_500));
    let back = run.redis_resume();
    run.wait_store(&all, true, back, Duration::from_secs(3));
    sleep(settings.allowance() * 2);
    let mended = run.set_health(&all, "up");
    // A lease taken by a command the server ran only on SIGCONT (its client had given up
    // on it) may hold the probe for one lease TTL.
    let limit = cool_down_cap(&settings) + Duration::from_millis(settings.lease_ms) * 2;
    run.settle_fetch(State::Closed, limit);
    sleep(Duration::from_millis(300));

    let (run, _, figures, convergence) = conclude(run, mended, (down, back), false);
    assert_counts(&run.name, &figures);
    assert_no_replayed_opens(&run.name, &figures);
    assert_shared_cool_down(&run.name, &figures);
    assert!(
        convergence.is_some_and(|c| c <= limit),
        "{}: fetch not CLOSED on every worker within {limit:?} of the upstream mending ({convergence:?})",
        run.name
    );
}

#[test]
fn b16_a_restart_from_an_older_snapshot_replays_nothing_that_is_over() {
    let settings = Settings {
        seed: 0xc,
        open_ttl_ms: 8_000,
        cooldown_ms: 400,
        persistent: true,
        ..Settings::default()
    };
    let mut run = FleetRun::start("b16_c_restart_from_snapshot", settings.clone());
    let all = run.all();
    let open_key = key(&run.namespace, "tool:fetch");
    open_on_the_first(&run);
    // The snapshot holds fetch OPEN (w1's key, within its TTL).
    run.redis_save();
    assert!(run.redis.get(&open_key).is_some(), "the open key is saved");

    // The upstream mends and a probe closes fetch for the fleet: the open is over.
    run.set_health(&all, "up");
    run.wait_fetch(
        &all,
        State::Closed,
        cool_down_cap(&settings) + settings.allowance() * 4,
    );
    sleep(Duration::from_millis(300));

    // A crash, and a restart from the last snapshot: the old open key is back.
    let down = run.redis_kill();
    let back = run.redis_restart();
    let restored = run.redis.get(&open_key);
    assert!(
        restored.is_some(),
        "the snapshot's open key came back (restart within its TTL)"
    );
    eprintln!("{}: restored {open_key} = {restored:?}", run.name);
    let limit = cool_down_cap(&settings)
        + Duration::from_millis(settings.lease_ms)
        + settings.allowance() * 4;
    sleep(settings.allowance() * 3);
    run.settle_fetch(State::Closed, limit);

    let (run, entries, figures, convergence) = conclude(run, back, (down, back), false);
    let went_open: Vec<String> = run
        .ids()
        .into_iter()
        .filter(|id| {
            entries.iter().any(|e| {
                e.worker == *id && e.ev == "opened" && e.str("tool") == Some("fetch") && e.t >= back
            })
        })
        .collect();
    eprintln!(
        "{}: workers that went OPEN on the restored key: {went_open:?}",
        run.name
    );
    assert_counts(&run.name, &figures);
    assert_no_replayed_opens(&run.name, &figures);
    assert!(
        convergence.is_some_and(|c| c <= limit),
        "{}: fetch not CLOSED on every worker within {limit:?} of the restart ({convergence:?})",
        run.name
    );
}

#[test]
fn b16_junk_and_forged_store_contents_act_no_longer_than_their_bounds() {
    let settings = Settings {
        seed: 0xd,
        open_ttl_ms: 3_000,
        lease_ms: 1_000,
        cooldown_ms: 400,
        ..Settings::default()
    };
    let run = FleetRun::start("b16_d_junk_and_forged", settings.clone());
    let ns = run.namespace.clone();
    let (open, closed, probe, seen, systemic) = (
        key(&ns, "tool:fetch"),
        key(&ns, "tool:ping"),
        key(&ns, "probe:fetch"),
        key(&ns, "seen:fetch"),
        key(&ns, "systemic"),
    );
    let fetch_opens_since = |entries: &[Entry], since: u64| -> Vec<String> {
        entries
            .iter()
            .filter(|e| e.ev == "opened" && e.str("tool") == Some("fetch") && e.t >= since)
            .map(|e| format!("{} (by {})", e.worker, e.str("by").unwrap_or("?")))
            .collect()
    };

    // Junk: nothing of it acts, nobody stops answering.
    let junk_since = run.mark("junk", serde_json::json!({}));
    let junk: [&[u8]; 5] = [
        &[0xff, 0x00, 0xfe, b'{', 0x80],
        b"null",
        b"[1,2,3]",
        br#"{"v":1}"#,
        br#"{"v":1,"worker":"w-ghost","message":"x","category":"no such category","at_ms":1}"#,
    ];
    for value in junk {
        for k in [&open, &closed, &probe, &seen, &systemic] {
            run.redis.set(k, value);
        }
        sleep(Duration::from_millis(settings.poll_ms * 3));
    }
    for k in [&open, &closed, &probe, &seen, &systemic] {
        run.redis.command(&[b"DEL", k.as_bytes()]);
    }
    sleep(settings.allowance());
    let junk_acted = fetch_opens_since(&run.entries(), junk_since);

    // An open key older than the open TTL, of a worker of the fleet, with no expiry: it is
    // over, whatever the store still holds.
    let past_since = run.mark("past_dated_open", serde_json::json!({}));
    let past = format!(
        r#"{{"v":2,"state":"open","ver":1,"worker":"w2","message":"refused long ago","category":"network","at_ms":{}}}"#,
        past_since - settings.open_ttl_ms * 10
    );
    run.redis.set(&open, past.as_bytes());
    sleep(settings.allowance() * 2);
    let past_acted = fetch_opens_since(&run.entries(), past_since);
    // Whatever it did, it is gone before the next part.
    run.settle_fetch(
        State::Closed,
        cool_down_cap(&settings) + settings.allowance() * 4,
    );
    run.redis
        .command(&[b"DEL", open.as_bytes(), probe.as_bytes()]);

    // Forged: an open key dated ten years ahead by a worker nobody knows, with no expiry,
    // and a stranger's lease of the probe for a day. Bounded, they act for an open TTL and a
    // lease TTL at most: fetch is CLOSED again on every worker within those.
    let forged_since = run.mark("forged_open_and_lease", serde_json::json!({}));
    let future = format!(
        r#"{{"v":2,"state":"open","ver":1,"worker":"w-ghost","message":"forged","category":"network","at_ms":{}}}"#,
        forged_since + 10 * 365 * 86_400_000
    );
    run.redis.set(&open, future.as_bytes());
    run.redis.command(&[
        b"SET",
        probe.as_bytes(),
        b"w-ghost:0000000000000000",
        b"PX",
        b"86400000",
    ]);
    let limit = Duration::from_millis(settings.open_ttl_ms + settings.lease_ms)
        + cool_down_cap(&settings)
        + settings.allowance() * 2;
    let _ = run.try_wait_for(limit, |tl| {
        let now = now_ms();
        tl.iter().any(|e| e.ev == "opened" && e.t >= forged_since)
            && run
                .ids()
                .iter()
                .all(|id| fetch_state_at(tl, id, now) == State::Closed)
    });

    let alive = run.ids();
    let (run, entries, figures, convergence) =
        conclude(run, forged_since, (junk_since, forged_since), false);
    let forged_acted = fetch_opens_since(&entries, forged_since);
    let exited: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.ev == "stderr" || (e.ev == "summary" && e.t < forged_since))
        .collect();
    let paused: Vec<&String> = alive
        .iter()
        .filter(|id| paused_at(&entries, id, forged_since))
        .collect();
    eprintln!(
        "{}: junk acted {junk_acted:?}; the open older than its TTL acted {past_acted:?}; the forged open acted {forged_acted:?}, fetch CLOSED everywhere again after {convergence:?} (bound {limit:?})",
        run.name
    );
    assert!(
        exited.is_empty(),
        "{}: a worker complained or ended: {exited:?}",
        run.name
    );
    assert!(paused.is_empty(), "{}: junk paused {paused:?}", run.name);
    assert!(
        junk_acted.is_empty(),
        "{}: junk opened fetch: {junk_acted:?}",
        run.name
    );
    assert_counts(&run.name, &figures);
    assert!(
        past_acted.is_empty(),
        "{}: an open key older than the open TTL opened fetch on {} worker(s): {past_acted:?}",
        run.name,
        past_acted.len()
    );
    assert!(
        convergence.is_some_and(|c| c <= limit),
        "{}: a forged open key and lease kept fetch from some worker past {limit:?} ({convergence:?}; it opened {forged_acted:?})",
        run.name
    );
}

#[test]
fn b16_a_lease_holder_killed_mid_probe_hands_the_probe_to_one_other_worker() {
    let settings = Settings {
        seed: 0xe,
        lease_ms: 2_000,
        cooldown_ms: 400,
        ..Settings::default()
    };
    let mut run = FleetRun::start("b16_e_holder_killed", settings.clone());
    let all = run.all();
    open_on_the_first(&run);
    let slow = 1_200;
    let since = run.set_health(&all, &format!("slow {slow}"));
    run.wait_for(
        cool_down_cap(&settings) + settings.allowance() * 4,
        "a probe starts",
        |tl| tl.iter().any(|e| e.ev == "probe_start" && e.t >= since),
    );
    let entries = run.entries();
    let holder = entries
        .iter()
        .find(|e| e.ev == "probe_start" && e.t >= since)
        .map(|e| e.worker.clone())
        .expect("a probe");
    let i = run
        .ids()
        .iter()
        .position(|id| *id == holder)
        .expect("a worker");
    sleep(Duration::from_millis(300));
    let killed = run.kill_worker(i);
    let others: Vec<usize> = all.iter().copied().filter(|&j| j != i).collect();
    let limit = Duration::from_millis(settings.lease_ms + slow)
        + cool_down_cap(&settings)
        + settings.allowance() * 4;
    let _ = run.try_wait_for(limit, |tl| {
        let now = now_ms();
        others
            .iter()
            .all(|&j| fetch_state_at(tl, run.id(j), now) == State::Closed)
    });
    sleep(Duration::from_millis(300));

    let (run, entries, figures, convergence) = conclude(run, killed, (killed, killed), false);
    let next = entries
        .iter()
        .find(|e| e.ev == "probe_start" && e.t > killed)
        .map(|e| (e.worker.clone(), e.t - killed));
    eprintln!(
        "{}: {holder} killed mid-probe; the next probe: {next:?} (ms after the kill)",
        run.name
    );
    assert_counts(&run.name, &figures);
    assert!(
        convergence.is_some_and(|c| c <= limit),
        "{}: fetch not CLOSED on the surviving workers within {limit:?} of the holder's death ({convergence:?})",
        run.name
    );
}

#[test]
fn b16_a_probe_longer_than_its_lease_stays_the_only_probe() {
    let settings = Settings {
        seed: 0xf,
        lease_ms: 500,
        cooldown_ms: 400,
        ..Settings::default()
    };
    let run = FleetRun::start("b16_f_probe_outlives_lease", settings.clone());
    let all = run.all();
    open_on_the_first(&run);
    let slow = settings.lease_ms * 3;
    let since = run.set_health(&all, &format!("slow {slow}"));
    let limit =
        Duration::from_millis(slow * 2) + cool_down_cap(&settings) + settings.allowance() * 4;
    let _ = run.try_wait_for(limit, |tl| {
        let now = now_ms();
        tl.iter().any(|e| e.ev == "probe_end" && e.t >= since)
            && run
                .ids()
                .iter()
                .all(|id| fetch_state_at(tl, id, now) == State::Closed)
    });
    sleep(Duration::from_millis(300));

    let (run, _, figures, convergence) = conclude(run, since, (since, since), false);
    assert_counts(&run.name, &figures);
    assert!(
        convergence.is_some_and(|c| c <= limit),
        "{}: fetch not CLOSED on every worker within {limit:?} ({convergence:?})",
        run.name
    );
}

/// Settings for the pauses: a cool-down far longer than the test, so that no pause lifts
/// on trial (B15) and every resumption seen is the one the test caused.
fn pause_settings(seed: u64) -> Settings {
    Settings {
        seed,
        cooldown_ms: 20_000,
        ..Settings::default()
    }
}

#[test]
fn b16_a_pause_lifted_during_an_outage_resumes_the_fleet_when_redis_returns() {
    let settings = pause_settings(0x61);
    let mut run = FleetRun::start("b16_g_pause_lifted_in_outage", settings.clone());
    let all = run.all();
    let allowance = settings.allowance();

    let since = now_ms();
    run.send(0, "systemic");
    run.wait_line(0, "paused", since, Duration::from_secs(2), |e| {
        e.bool("local")
    });
    for i in 1..all.len() {
        run.wait_line(i, "paused", since, allowance * 2, |_| true);
    }

    let down = run.redis_pause();
    run.wait_store(&all, false, down, Duration::from_secs(2));
    run.send(0, "confirm");
    run.wait_line(0, "resumed", down, Duration::from_secs(2), |_| true);
    sleep(Duration::from_millis(300));
    let back = run.redis_resume();
    run.wait_store(&all, true, back, Duration::from_secs(3));
    let limit = allowance * 3;
    let _ = run.try_wait_for(limit, |tl| {
        let now = now_ms();
        run.ids().iter().all(|id| !paused_at(tl, id, now))
    });
    sleep(allowance);

    let (run, entries, figures, convergence) = conclude(run, back, (down, back), true);
    let still: Vec<String> = run
        .ids()
        .into_iter()
        .filter(|id| paused_at(&entries, id, u64::MAX))
        .collect();
    assert_counts(&run.name, &figures);
    assert!(
        convergence.is_some_and(|c| c <= limit),
        "{}: {still:?} still paused {limit:?} after Redis returned, though w1 lifted the pause during the outage",
        run.name
    );
}

#[test]
fn b16_a_pause_raised_and_lifted_during_an_outage_is_not_replayed() {
    let settings = pause_settings(0x62);
    let mut run = FleetRun::start("b16_g_pause_over_before_return", settings.clone());
    let all = run.all();
    let allowance = settings.allowance();

    let down = run.redis_pause();
    run.wait_store(&all, false, down, Duration::from_secs(2));
    run.send(0, "systemic");
    run.wait_line(0, "paused", down, Duration::from_secs(2), |e| {
        e.bool("local")
    });
    run.send(0, "confirm");
    run.wait_line(0, "resumed", down, Duration::from_secs(2), |_| true);
    sleep(Duration::from_millis(300));
    let back = run.redis_resume();
    run.wait_store(&all, true, back, Duration::from_secs(3));
    sleep(allowance * 3);

    let (run, entries, figures, convergence) = conclude(run, back, (down, back), true);
    let paused_after: Vec<String> = entries
        .iter()
        .filter(|e| e.ev == "paused" && e.t >= back)
        .map(|e| e.worker.clone())
        .collect();
    eprintln!(
        "{}: paused after Redis returned: {paused_after:?}",
        run.name
    );
    assert_counts(&run.name, &figures);
    assert!(
        convergence.is_some(),
        "{}: {paused_after:?} paused after Redis returned, for an event that was over",
        run.name
    );
}

/// The figures count what they say, on a timeline written by hand: the harness is held to
/// its word before the fleet is held to it.
#[test]
fn b16_the_figures_count_what_they_say() {
    let e = |t: u64, worker: &str, ev: &str, v: serde_json::Value| Entry {
        t,
        worker: worker.into(),
        ev: ev.into(),
        v,
    };
    let fetch = |by: &str, own: bool| serde_json::json!({"tool": "fetch", "by": by, "own": own});
    let entries = vec![
        e(0, "harness", "fleet_ready", serde_json::json!({})),
        // w1 opens fetch; w3 sees it, w2 never does.
        e(1_000, "w1", "opened", fetch("w1", true)),
        e(1_100, "w3", "opened", fetch("w1", false)),
        // w3 is charged a failure of it long after it was shared.
        e(
            1_900,
            "w3",
            "call",
            serde_json::json!({"tool": "fetch", "probe": false, "charged": true}),
        ),
        // Two probes at once; a third within the cool-down after the first failed.
        e(2_000, "w1", "probe_start", serde_json::json!({})),
        e(2_300, "w2", "probe_start", serde_json::json!({})),
        e(2_400, "w2", "probe_end", serde_json::json!({"ok": true})),
        e(2_600, "w1", "probe_end", serde_json::json!({"ok": false})),
        e(2_700, "w3", "probe_start", serde_json::json!({})),
        e(2_710, "w3", "probe_end", serde_json::json!({"ok": false})),
        // w1's systemic event: w3 pauses for it in time, w2 after w1 had resumed.
        e(
            3_000,
            "w1",
            "paused",
            serde_json::json!({"reason": "systemic", "tools": ["a", "b"], "local": true}),
        ),
        e(
            3_050,
            "w3",
            "paused",
            serde_json::json!({"reason": "systemic", "tools": ["a", "b"], "local": false}),
        ),
        e(
            3_100,
            "w1",
            "resumed",
            serde_json::json!({"reason": "confirmed"}),
        ),
        e(
            3_200,
            "w2",
            "paused",
            serde_json::json!({"reason": "systemic", "tools": ["a", "b"], "local": false}),
        ),
        // w3's probe closes fetch; w2 then applies w1's opening, which was over.
        e(3_500, "w3", "closed", fetch("w3", true)),
        e(4_500, "w2", "opened", fetch("w1", false)),
        e(5_000, "harness", "quit", serde_json::json!({})),
    ];
    let ids = ["w1", "w2", "w3"].map(String::from);
    let f = fleet_faults::figures(&entries, &Settings::default(), &ids);
    assert_eq!(f.lost_transitions.len(), 1, "{:?}", f.lost_transitions);
    assert!(f.lost_transitions[0].contains("never reached w2"));
    assert_eq!((f.concurrent_probes, f.probes), (2, 3));
    assert_eq!(f.redundant_probes.len(), 1, "{:?}", f.redundant_probes);
    assert_eq!(f.replayed_pauses.len(), 1, "{:?}", f.replayed_pauses);
    assert!(f.replayed_pauses[0].starts_with("w2 paused"));
    assert_eq!(f.replayed_opens.len(), 1, "{:?}", f.replayed_opens);
    assert_eq!(f.extra_charged.len(), 1, "{:?}", f.extra_charged);
    assert!(f.extra_charged[0].starts_with("w3 charged"));
}
