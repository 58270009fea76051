//! Building an expeditor: the map, the policy, the wall clock, the observers and the fleet's
//! store, and every tool registered CLOSED (R2).

use std::fmt;
use std::sync::Arc;

use super::fleet::{FleetLink, FleetStore};
use super::mirror::Mirror;
use super::signal::Signal;
use super::sync::{AtomicU64, CachePadded, Mutex};
use super::{Expeditor, Inner, WeakExpeditor};
use crate::engine::{Changes, Engine, MAX_TOOLS};
use crate::model::capability::{CapabilityMap, MapError, MapErrors};
use crate::model::clock::{SystemClock, WallClock};
use crate::model::event::Observer;
use crate::model::policy::Policy;

/// Builds an [`Expeditor`]: a map, a policy, a wall clock, observers.
pub struct ExpeditorBuilder {
    map: CapabilityMap,
    policy: Policy,
    clock: Arc<dyn WallClock>,
    observers: Vec<Arc<dyn Observer>>,
    fleet: Option<Arc<dyn FleetStore>>,
    jitter_seed: Option<u64>,
}

impl fmt::Debug for ExpeditorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpeditorBuilder")
            .field("map", &self.map)
            .field("policy", &self.policy)
            .field("observers", &self.observers.len())
            .finish_non_exhaustive()
    }
}

impl ExpeditorBuilder {
    /// Sets the policy (default: [`Policy::default`], the source document's 3 / 5 / 3).
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the wall clock (default: [`SystemClock`]).
    #[must_use]
    pub fn clock(mut self, clock: impl WallClock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Shares tool health with a fleet of workers through `store` (B11): circuits opened
    /// here by infrastructure failures are told to the fleet, those the fleet opened are
    /// OPEN here, and a shared circuit's probe is made by one worker at a time. Decisions
    /// stay local: the healthy path never waits on the store.
    #[must_use]
    pub fn fleet(mut self, store: impl FleetStore) -> Self {
        self.fleet = Some(Arc::new(store));
        self
    }

    /// Seeds the jitter of cool-downs (B13), for runs that must repeat exactly. By default
    /// every expeditor draws its own seed, so that the workers of a fleet do not probe in step.
    #[must_use]
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter_seed = Some(seed);
        self
    }

    /// Adds an observer of every [`Event`](crate::event::Event) (B4).
    #[must_use]
    pub fn observer(mut self, observer: impl Observer) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// Validates the map (R1.4) and builds the expeditor; every tool starts CLOSED (R2).
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the map.
    pub fn build(self) -> Result<Expeditor, MapErrors> {
        self.map.validate()?;
        if self.map.tools().len() >= MAX_TOOLS {
            return Err(MapErrors(vec![MapError::TooManyTools { limit: MAX_TOOLS }]));
        }
        Ok(self.build_checked())
    }

    /// Builds from a map already checked (a `#[toolbox]` map is checked at compile time).
    /// Never panics: an alternative naming no tool keeps its place and is never routed to.
    pub(crate) fn build_checked(self) -> Expeditor {
        let mut engine = Engine::new(self.policy, self.clock.now());
        if let Some(store) = &self.fleet {
            engine.enable_fleet(store.name());
            // A fleet worker is a long-running service (B15).
            let now = self.clock.now();
            engine.run_as_service(now, &mut Changes::default());
        }
        engine.seed_jitter(self.jitter_seed.unwrap_or_else(|| {
            use std::hash::{BuildHasher as _, Hasher as _};
            // std's hasher keys are random per process and per call: a seed of its own.
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_usize(std::ptr::from_ref(&engine) as usize);
            hasher.finish()
        }));
        let expeditor = Expeditor {
            inner: Arc::new(Inner {
                mirror: Mirror::new(),
                step: CachePadded(AtomicU64::new(0)),
                engine: CachePadded(Mutex::new(engine)),
                clock: self.clock,
                observers: self.observers.into_boxed_slice(),
                changed: Signal::default(),
                fleet: self.fleet,
            }),
        };
        let specs = self.map.tools().to_vec();
        expeditor.command(|engine, changes, _| engine.register(specs, changes));
        if let Some(store) = &expeditor.inner.fleet {
            store.attach(FleetLink {
                inner: Arc::downgrade(&expeditor.inner),
            });
        }
        expeditor
    }
}

impl Expeditor {
    /// A handle that does not keep this expeditor alive: [`WeakExpeditor::upgrade`] gives it
    /// back while any `Expeditor` handle on it lives.
    pub fn downgrade(&self) -> WeakExpeditor {
        WeakExpeditor {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// An expeditor over `map` with the default policy and the system clock.
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the map (R1.4).
    pub fn new(map: CapabilityMap) -> Result<Self, MapErrors> {
        Expeditor::builder(map).build()
    }

    /// A builder over `map`.
    pub fn builder(map: CapabilityMap) -> ExpeditorBuilder {
        ExpeditorBuilder {
            map,
            policy: Policy::default(),
            clock: Arc::new(SystemClock),
            observers: Vec::new(),
            fleet: None,
            jitter_seed: None,
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.lock().policy()
    }
}
