//! R6: staleness — the four labels of the source document, detected from the indicators (identical
//! output, old timestamps, caching tools, contradictions, no baseline), none on fresh data, and
//! stale data never passed off as fresh.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use agent_circuit_breaker::{
    __private_v0_1::serve_stale,
    CallError, CapabilityMap, Expeditor, PauseReason, Policy, Refusal, SkipReason, ToolSpec,
    clock::{ManualClock, Timestamp},
    expeditor::ToolId,
    freshness::{Dated, Freshness, FreshnessProfile, Labelled, Observation, StaleCache, digest},
    report::ModelNote,
    route::RouteKind,
    toolbox,
};
use common::{T0, clock, expeditor_with, id, seed_map};

/// The source document's label templates (step 6), verbatim; it wraps the CACHED label over two
/// lines inside its quotes.
const SEED_STALE: &str = "[STALE DATA — retrieved at {timestamp}, may not reflect current state]";
const SEED_CACHED: &str = "[CACHED RESULT — Grep returned identical results to previous call;\n filesystem may have changed since]";
const SEED_UNVERIFIED: &str = "[UNVERIFIED — WebSearch result from {date}; current status unknown]";
const SEED_UNKNOWN: &str = "[FRESHNESS UNKNOWN — no baseline for comparison]";

fn live(args: u64, output: u64) -> Observation {
    Observation {
        args,
        output,
        data_time: None,
        live: true,
    }
}

/// The source document's map with WebSearch declared as caching, a manual clock at [`T0`].
fn expeditor() -> (Expeditor, agent_circuit_breaker::clock::ManualClock) {
    let clock = clock();
    let map = CapabilityMap::new()
        .tool(common::grep_spec())
        .tool(common::bash_spec())
        .tool(common::read_spec())
        .tool(common::websearch_spec().caches(true));
    (expeditor_with(map, Policy::default(), &clock), clock)
}

#[test]
fn r6_1_every_label_renders_exactly_as_required() {
    let ts = T0.to_string();
    assert_eq!(ts, "2026-11-30T07:35:03Z");

    let fresh = Freshness::Fresh;
    assert_eq!(fresh.to_string(), "", "fresh data carries no label");
    assert!(!fresh.is_labelled());

    let stale = Freshness::Stale { retrieved_at: T0 };
    assert_eq!(
        stale.to_string(),
        "[STALE DATA — retrieved at 2026-11-30T07:35:03Z, may not reflect current state]"
    );
    assert_eq!(stale.to_string(), SEED_STALE.replace("{timestamp}", &ts));

    let cached = Freshness::Cached {
        tool: "Grep".into(),
        source: "filesystem".into(),
    };
    assert_eq!(
        cached.to_string(),
        "[CACHED RESULT — Grep returned identical results to previous call; filesystem may \
         have changed since]"
    );
    assert_eq!(cached.to_string(), SEED_CACHED.replace(";\n ", "; "));

    let unverified = Freshness::Unverified {
        tool: "WebSearch".into(),
        from: T0,
    };
    assert_eq!(
        unverified.to_string(),
        "[UNVERIFIED — WebSearch result from 2026-11-30; current status unknown]"
    );
    assert_eq!(
        unverified.to_string(),
        SEED_UNVERIFIED.replace("{date}", "2026-11-30")
    );

    let unknown = Freshness::Unknown;
    assert_eq!(
        unknown.to_string(),
        "[FRESHNESS UNKNOWN — no baseline for comparison]"
    );
    assert_eq!(unknown.to_string(), SEED_UNKNOWN);

    for label in [stale, cached, unverified, unknown] {
        assert!(label.is_labelled(), "{label:?}");
    }
}

#[test]
fn r6_1_a_labelled_value_prints_its_label_above_it_and_a_fresh_one_bare() {
    let value = Labelled {
        value: "config.toml",
        freshness: Freshness::Stale { retrieved_at: T0 },
    };
    assert_eq!(
        value.to_string(),
        "[STALE DATA — retrieved at 2026-11-30T07:35:03Z, may not reflect current state]\n\
         config.toml"
    );
    let fresh = Labelled {
        value: "config.toml",
        freshness: Freshness::Fresh,
    };
    assert_eq!(fresh.to_string(), "config.toml");
}

#[test]
fn r6_1_labels_round_trip_through_serde() {
    let labels = [
        Freshness::Fresh,
        Freshness::Stale { retrieved_at: T0 },
        Freshness::Cached {
            tool: "Grep".into(),
            source: "filesystem".into(),
        },
        Freshness::Unverified {
            tool: "WebSearch".into(),
            from: T0,
        },
        Freshness::Unknown,
    ];
    for label in labels {
        let json = serde_json::to_string(&label).unwrap();
        let back: Freshness = serde_json::from_str(&json).unwrap();
        assert_eq!(back, label, "{json}");
    }
    assert_eq!(
        serde_json::to_string(&Freshness::Stale { retrieved_at: T0 }).unwrap(),
        r#"{"freshness":"stale","retrieved_at":"2026-11-30T07:35:03.000Z"}"#
    );
}

#[test]
fn r6_2_output_identical_to_the_previous_call_with_the_same_arguments_is_cached() {
    let (expeditor, _clock) = expeditor();
    let grep = id(&expeditor, "Grep");
    let (pattern, other) = (digest("API_KEY"), digest("TODO"));
    let files = digest(&["config.toml"]);
    assert_eq!(
        expeditor.observe(grep, live(pattern, files)),
        Freshness::Fresh
    );
    assert_eq!(
        expeditor.observe(grep, live(pattern, files)),
        Freshness::Cached {
            tool: "Grep".into(),
            source: "the source".into(),
        }
    );
    // Other arguments have their own baseline; the same output for them is fresh.
    assert_eq!(
        expeditor.observe(grep, live(other, files)),
        Freshness::Fresh
    );
    // A changed output is fresh, and becomes the baseline.
    let more = digest(&["config.toml", "src/main.rs"]);
    assert_eq!(
        expeditor.observe(grep, live(pattern, more)),
        Freshness::Fresh
    );
    assert!(matches!(
        expeditor.observe(grep, live(pattern, more)),
        Freshness::Cached { .. }
    ));
    // Baselines are per tool.
    let read = id(&expeditor, "Read");
    assert_eq!(
        expeditor.observe(read, live(pattern, more)),
        Freshness::Fresh
    );

    // With what may change under it declared, the label is the source document's exactly.
    assert!(expeditor.set_freshness_profile(
        grep,
        FreshnessProfile {
            caches: false,
            source: Some("filesystem".into()),
        },
    ));
    assert_eq!(
        expeditor.observe(grep, live(pattern, more)).to_string(),
        SEED_CACHED.replace(";\n ", "; ")
    );
    assert!(!expeditor.set_freshness_profile(ToolId::from_index(99), FreshnessProfile::default()));
}

#[test]
fn r6_2_data_older_than_the_current_cycle_is_stale() {
    let (expeditor, clock) = expeditor();
    let read = id(&expeditor, "Read");
    assert_eq!(expeditor.cycle_started_at(), T0);
    let yesterday = Timestamp::from_secs(T0.as_millis() / 1000 - 86_400);
    let old = Observation {
        data_time: Some(yesterday),
        ..live(1, 1)
    };
    assert_eq!(
        expeditor.observe(read, old),
        Freshness::Stale {
            retrieved_at: yesterday
        }
    );
    assert_eq!(
        expeditor.observe(read, old).to_string(),
        "[STALE DATA — retrieved at 2026-11-29T07:35:03Z, may not reflect current state]"
    );
    // Data from the cycle's own start or later is fresh.
    let current = Observation {
        data_time: Some(T0),
        ..live(2, 1)
    };
    assert_eq!(expeditor.observe(read, current), Freshness::Fresh);

    // A new cycle starts now: what was current in the last one is old in this one.
    clock.advance(Duration::from_secs(3600));
    expeditor.new_cycle();
    assert_eq!(
        expeditor.cycle_started_at(),
        T0.plus(Duration::from_secs(3600))
    );
    let last_cycle = Observation {
        data_time: Some(T0),
        ..live(3, 1)
    };
    assert_eq!(
        expeditor.observe(read, last_cycle),
        Freshness::Stale { retrieved_at: T0 }
    );
}

#[test]
fn r6_2_every_result_of_a_tool_declared_as_caching_is_unverified() {
    let (expeditor, clock) = expeditor();
    let web = id(&expeditor, "WebSearch");
    assert!(expeditor.is_caching(web));
    assert!(!expeditor.is_caching(id(&expeditor, "Grep")));
    clock.advance(Duration::from_secs(60));
    let now = expeditor.now();
    assert_eq!(
        expeditor.observe(web, live(1, 1)),
        Freshness::Unverified {
            tool: "WebSearch".into(),
            from: now,
        }
    );
    // Also the first result, and also a changed one: the tool's own caching is the doubt.
    assert!(matches!(
        expeditor.observe(web, live(1, 2)),
        Freshness::Unverified { .. }
    ));
    // The date is the data's own when it says one.
    let dated = Observation {
        data_time: Some(now),
        ..live(2, 1)
    };
    assert_eq!(
        expeditor.observe(web, dated).to_string(),
        "[UNVERIFIED — WebSearch result from 2026-11-30; current status unknown]"
    );

    // A tool can be declared caching at run time too.
    let grep = id(&expeditor, "Grep");
    expeditor.set_freshness_profile(
        grep,
        FreshnessProfile {
            caches: true,
            source: None,
        },
    );
    assert!(matches!(
        expeditor.observe(grep, live(1, 1)),
        Freshness::Unverified { .. }
    ));
}

#[test]
fn r6_2_a_contradicted_output_is_stale_from_when_it_was_retrieved() {
    let (expeditor, clock) = expeditor();
    let read = id(&expeditor, "Read");
    let args = digest("config.toml");
    assert_eq!(expeditor.contradict(read, args), None, "nothing seen yet");
    assert_eq!(expeditor.observe(read, live(args, 7)), Freshness::Fresh);
    let retrieved = expeditor.now();

    clock.advance(Duration::from_secs(300));
    assert_eq!(
        expeditor.contradict(read, args),
        Some(Freshness::Stale {
            retrieved_at: retrieved
        })
    );
    // The same output again is still the contradicted one: STALE, not CACHED and never fresh
    // (R6.3), however often it comes back.
    for _ in 0..3 {
        clock.advance(Duration::from_secs(60));
        assert_eq!(
            expeditor.observe(read, live(args, 7)),
            Freshness::Stale {
                retrieved_at: retrieved
            }
        );
    }
    // A new output is fresh again.
    assert_eq!(expeditor.observe(read, live(args, 8)), Freshness::Fresh);
    assert_eq!(
        expeditor.contradict(ToolId::from_index(99), args),
        None,
        "unknown tool"
    );
}

#[test]
fn r6_2_data_with_no_baseline_at_all_is_freshness_unknown() {
    let (expeditor, _clock) = expeditor();
    let read = id(&expeditor, "Read");
    // Not from a live call, no timestamp, nothing to compare with.
    let pasted = Observation {
        live: false,
        ..live(1, 1)
    };
    assert_eq!(expeditor.observe(read, pasted), Freshness::Unknown);
    assert_eq!(
        expeditor.observe(read, pasted),
        Freshness::Cached {
            tool: "Read".into(),
            source: "the source".into(),
        },
        "the first copy is the baseline of the second"
    );
    // A timestamp is a baseline.
    let dated = Observation {
        data_time: Some(T0),
        live: false,
        ..live(2, 1)
    };
    assert_eq!(expeditor.observe(read, dated), Freshness::Fresh);
    // An unknown tool has nothing to compare with either.
    assert_eq!(
        expeditor.observe(ToolId::from_index(99), live(1, 1)),
        Freshness::Unknown
    );
}

#[test]
fn r6_3_stale_wins_over_every_other_label_and_fresh_live_data_carries_none() {
    let (expeditor, _clock) = expeditor();
    let old = Timestamp::from_secs(1);
    // A caching tool's old data: STALE, not merely UNVERIFIED.
    let web = id(&expeditor, "WebSearch");
    let old_page = Observation {
        data_time: Some(old),
        ..live(1, 1)
    };
    assert_eq!(
        expeditor.observe(web, old_page),
        Freshness::Stale { retrieved_at: old }
    );
    // An identical output with an old date: STALE, not merely CACHED.
    let grep = id(&expeditor, "Grep");
    let old_hit = Observation {
        data_time: Some(old),
        ..live(1, 1)
    };
    expeditor.observe(grep, live(1, 1));
    assert_eq!(
        expeditor.observe(grep, old_hit),
        Freshness::Stale { retrieved_at: old }
    );
    // Live, new, with no indicator: no label at all.
    for args in 10..20 {
        let label = expeditor.observe(grep, live(args, args * 7));
        assert_eq!(label, Freshness::Fresh);
        assert_eq!(label.to_string(), "");
    }
}

#[test]
fn r6_a_stale_cache_keeps_the_last_good_result_per_arguments() {
    let cache = StaleCache::<String>::default();
    assert_eq!(cache.recall(1), None);
    cache.remember(1, "first".into(), T0);
    cache.remember(1, "second".into(), T0.plus(Duration::from_secs(1)));
    assert_eq!(
        cache.recall(1),
        Some(("second".into(), T0.plus(Duration::from_secs(1))))
    );
    // At most 256 kept, the oldest forgotten first.
    for args in 2..=257 {
        cache.remember(args, args.to_string(), T0);
    }
    assert_eq!(cache.recall(1), None);
    assert_eq!(cache.recall(2), Some(("2".into(), T0)));
    assert_eq!(cache.recall(257), Some(("257".into(), T0)));
}

fn refusal(reason: SkipReason) -> Refusal {
    Refusal::new(
        "Grep",
        reason,
        None,
        ModelNote {
            tool: Some("Grep".into()),
            asked_for: None,
            why: "circuit OPEN".into(),
            instead: "ask the user".into(),
            call_id: None,
        },
    )
}

#[test]
fn r6_the_last_good_result_answers_only_refusals_about_the_tools_own_state() {
    let cache = StaleCache::<String>::default();
    cache.remember(digest("API_KEY"), "config.toml".into(), T0);
    for reason in [
        SkipReason::Open,
        SkipReason::ProbeInFlight,
        SkipReason::Unavailable,
    ] {
        let routed =
            serve_stale::<String, std::io::Error>(refusal(reason), &cache, digest("API_KEY"))
                .unwrap_or_else(|e| panic!("{reason:?}: {e}"));
        assert_eq!(routed.value, "config.toml");
        assert_eq!(*routed.freshness(), Freshness::Stale { retrieved_at: T0 });
        let route = routed.route().expect("a stale answer says so");
        assert_eq!(route.kind, RouteKind::Stale);
        assert_eq!(
            route.degradation.as_deref(),
            Some(
                "last good result, retrieved at 2026-11-30T07:35:03Z; may not reflect current \
                 state"
            )
        );
        assert_eq!(
            route.to_string(),
            "Grep circuit OPEN → last good result for the same arguments\n  → Decision: STALE \
             DATA — labelled, not fresh"
        );
    }
    // Never for a pause or a deferred sub-task, nor for arguments never answered.
    for reason in [
        SkipReason::Paused {
            pause: PauseReason::Systemic { category: None },
        },
        SkipReason::Deferred,
        SkipReason::UnknownTool,
    ] {
        let answer =
            serve_stale::<String, std::io::Error>(refusal(reason), &cache, digest("API_KEY"));
        assert!(
            matches!(answer, Err(CallError::Refused(ref r)) if r.reason() == reason),
            "{reason:?}"
        );
    }
    let answer =
        serve_stale::<String, std::io::Error>(refusal(SkipReason::Open), &cache, digest("TODO"));
    assert!(answer.is_err());
}

#[test]
fn r6_2_caching_is_part_of_the_tool_spec() {
    let spec = ToolSpec::new("WebSearch")
        .provides("external information retrieval")
        .fallback("ask the user")
        .caches(true)
        .build();
    assert!(spec.is_caching());
    assert!(!common::grep_spec().build().is_caching());
    let expeditor = expeditor_with(CapabilityMap::new().tool(spec), Policy::default(), &clock());
    assert!(expeditor.is_caching(id(&expeditor, "WebSearch")));
    let plain = expeditor_with(seed_map(), Policy::default(), &clock());
    assert!(!plain.is_caching(id(&plain, "WebSearch")));
}

/// A page with the time its data is from (or none known).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Page {
    body: String,
    modified: Option<Timestamp>,
}

impl Dated for Page {
    fn data_time(&self) -> Option<Timestamp> {
        self.modified
    }
}

/// Tools with no freshness key at all (`freshness`, `caches`, `serve_stale`): a `Dated`
/// output is still dated (R6.3), a plain one is left alone.
struct Pages {
    modified: std::cell::Cell<Option<Timestamp>>,
    fetch_down: std::cell::Cell<bool>,
}

#[toolbox(policy(threshold = 1, budget = 10, probe_every = 10))]
impl Pages {
    #[tool(
        provides = "fetch a web page",
        alternatives(mirror(method = "fetch the page from a mirror", via = fetch_from_mirror)),
        fallback = "ask the user to paste the page"
    )]
    fn fetch(&self, url: &str) -> std::io::Result<Page> {
        if self.fetch_down.get() {
            return Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        }
        Ok(self.page(url))
    }

    fn fetch_from_mirror(&self, url: &str) -> std::io::Result<Page> {
        self.mirror(url)
    }

    #[tool(
        provides = "a mirror of the web",
        fallback = "ask the user to paste the page"
    )]
    fn mirror(&self, url: &str) -> std::io::Result<Page> {
        Ok(self.page(url))
    }

    #[tool(
        provides = "a page as text",
        fallback = "ask the user to paste the page"
    )]
    fn fetch_text(&self, url: &str) -> std::io::Result<String> {
        Ok(self.page(url).body)
    }

    fn page(&self, url: &str) -> Page {
        Page {
            body: format!("contents of {url}"),
            modified: self.modified.get(),
        }
    }
}

fn pages(modified: Option<Timestamp>) -> (GuardedPages, ManualClock) {
    let clock = clock();
    let pages = Pages {
        modified: std::cell::Cell::new(modified),
        fetch_down: std::cell::Cell::new(false),
    };
    let agent = GuardedPages::with_expeditor(pages, |b| b.clock(clock.clone()));
    (agent, clock)
}

const URL: &str = "https://example.invalid/changelog";

/// R6.3: a `#[tool]` with no freshness key whose `Dated` output is from before the current
/// cycle comes back labelled STALE DATA, as the `Dated` docs promise; it is never presented
/// as fresh.
#[test]
fn r6_3_bare_dated_output_is_labelled_stale() {
    let yesterday = Timestamp::from_millis(T0.as_millis() - 86_400_000);
    let (agent, _clock) = pages(Some(yesterday));
    let routed = agent.fetch(URL).unwrap();
    assert_eq!(
        *routed.freshness(),
        Freshness::Stale {
            retrieved_at: yesterday
        }
    );
    assert_eq!(
        routed.freshness().to_string(),
        "[STALE DATA — retrieved at 2026-11-29T07:35:03Z, may not reflect current state]"
    );
    assert!(routed.route().is_none());

    // A value that came through an alternative's adapter is dated the same way.
    agent.toolbox().fetch_down.set(true);
    assert!(agent.fetch(URL).is_err());
    let routed = agent.fetch(URL).unwrap();
    assert_eq!(
        routed.route().map(|r| (r.kind, r.to.as_deref())),
        Some((RouteKind::Alternative, Some("mirror")))
    );
    assert_eq!(
        *routed.freshness(),
        Freshness::Stale {
            retrieved_at: yesterday
        }
    );
    // And so is the alternative called directly.
    assert!(agent.mirror(URL).unwrap().freshness().is_labelled());
}

/// R6.3: fresh data carries no label: a `Dated` value from the current cycle (also one from
/// the very instant it began), one that does not know its date, and a value that is not
/// `Dated` at all.
#[test]
fn r6_3_a_fresh_dated_output_carries_no_label() {
    for modified in [
        Some(T0),
        Some(Timestamp::from_millis(T0.as_millis() + 10_000)),
        None,
    ] {
        let (agent, _clock) = pages(modified);
        let routed = agent.fetch(URL).unwrap();
        assert_eq!(*routed.freshness(), Freshness::Fresh, "{modified:?}");
        assert_eq!(routed.freshness().to_string(), "");
    }
    let (agent, _clock) = pages(Some(Timestamp::from_secs(0)));
    let routed = agent.fetch_text(URL).unwrap();
    assert_eq!(
        *routed.freshness(),
        Freshness::Fresh,
        "a value that is not Dated is not dated"
    );
}

/// R6.2 / R7.4: "older than the current task" follows the cycle: the same data, fresh in the
/// cycle it was fetched in, is STALE DATA once a new cycle has begun.
#[test]
fn r6_3_a_dated_output_goes_stale_when_a_new_cycle_begins() {
    let (agent, clock) = pages(Some(T0));
    assert_eq!(*agent.fetch(URL).unwrap().freshness(), Freshness::Fresh);
    clock.advance(Duration::from_secs(3600));
    agent.expeditor().new_cycle();
    assert_eq!(
        *agent.fetch(URL).unwrap().freshness(),
        Freshness::Stale { retrieved_at: T0 }
    );
}
