//! FaultInjector: decides, per operation, whether a fault fires, and keeps the record.
//!
//! Each config ("rule") has its own RNG stream forked from the injector's, and draws
//! exactly one number per operation it matches, eligible or not. So the decision for a
//! rule's k-th matching operation depends only on the seed, the rule and k: adding a
//! rule, or one more operation in another domain, never shifts another rule's decisions.
//!
//! Injections can be *suppressed* by id (rule, ordinal). A suppressed injection still
//! consumes its draw and counts toward `max_injections`, so switching one off leaves the
//! others where they were; schedule minimization (`dst minimize`) relies on that.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::Serialize;
use umi_core::env::chance;

use super::{FaultConfig, FaultConfigError, FaultDomain, FaultKind, FaultPoint};
use crate::constants::{FAULT_CONFIGS_MAX, FAULT_SCHEDULE_ENTRIES_MAX};
use crate::micros::micros_saturating;
use crate::rng::DeterministicRng;
use crate::trace::{FaultEvent, Trace};

/// Identifies one injection: the rule that fired and the ordinal (1-based) of the
/// matching operation it fired on. Stable across replays of the same seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct InjectionId {
    /// Index of the rule in the simulation's fault configs.
    pub rule: u32,
    /// Which matching operation of that rule (1-based).
    pub ordinal: u64,
}

impl std::str::FromStr for InjectionId {
    type Err = String;

    /// Parses `rule:ordinal` (surrounding spaces ignored), as `Display` prints it.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        text.split_once(':')
            .and_then(|(rule, ordinal)| {
                Some(InjectionId {
                    rule: rule.parse().ok()?,
                    ordinal: ordinal.parse().ok()?,
                })
            })
            .ok_or_else(|| format!("{text:?} is not rule:ordinal"))
    }
}

impl fmt::Display for InjectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.rule, self.ordinal)
    }
}

/// One fault that fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Injection {
    /// Which rule and which of its matching operations.
    pub id: InjectionId,
    /// The fault kind.
    pub kind: FaultKind,
    /// The operation it fired on.
    pub operation: String,
    /// Simulated time of the injection, in microseconds.
    pub at_us: u64,
}

/// `     1.250s llm.timeout on llm.complete (0:3)`: the simulated time in seconds,
/// right-aligned in ten columns so a list of injections lines up, the kind, the operation
/// and the id `dst replay --only` takes. The one spelling of an injection in reports,
/// `dst replay` and `dst minimize`.
impl fmt::Display for Injection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>10.3}s {} on {} ({})",
            Duration::from_micros(self.at_us).as_secs_f64(),
            self.kind,
            self.operation,
            self.id
        )
    }
}

/// The stream of rule `index` (of `kind`), forked from the injector's `rng`.
fn rule_rng(rng: &DeterministicRng, index: usize, kind: FaultKind) -> DeterministicRng {
    rng.fork(&format!("rule/{index}/{kind}"))
}

/// Counters, for reports and for statistical tests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FaultStats {
    /// Injections by fault kind.
    pub injected_by_kind: BTreeMap<FaultKind, u64>,
    /// Injections by (fault kind, operation).
    pub injected_by_operation: BTreeMap<(FaultKind, String), u64>,
    /// Operations seen, by name (whether or not anything fired).
    pub operations: BTreeMap<String, u64>,
    /// Injections that were due but suppressed.
    pub suppressed: u64,
}

impl FaultStats {
    /// Total injections.
    pub fn injected_total(&self) -> u64 {
        self.injected_by_kind.values().sum()
    }
}

struct Rule {
    config: FaultConfig,
    /// The rule's stream, forked from the injector's at its first draw (a seed reaches
    /// few of its rules, and a fork is a SHA-256: issue 41). A fork depends only on the
    /// parent's key and the label, never on when it is made, so the draws are the ones
    /// an eager fork gives.
    rng: Option<DeterministicRng>,
    matched: u64,
    fired: u64,
    /// Operations the rule's filter and kind reached, enabled or not (a swarm seed may
    /// switch a rule off; it still proves the rule can fire).
    reached: u64,
}

struct State {
    rules: Vec<Rule>,
    stats: FaultStats,
    schedule: Vec<Injection>,
    /// Parallel to `schedule`: the step of each injection (see
    /// [`FaultInjector::schedule_steps`]).
    schedule_steps: Vec<u64>,
    suppressed: BTreeSet<InjectionId>,
    /// When set, only these injections may happen; every other is suppressed.
    only: Option<BTreeSet<InjectionId>>,
}

/// Makes every fault decision of one run. Shared (`Arc`) by the simulators.
pub struct FaultInjector {
    state: Mutex<State>,
    /// The stream each rule's own is forked from ([`Rule::rng`]).
    rng: DeterministicRng,
    healed: AtomicBool,
    /// Simulated time of the heal, in microseconds (meaningful once `healed` is set).
    healed_at_us: AtomicU64,
    trace: Arc<Trace>,
    clock: crate::clock::SimClock,
    /// The run's step count, when a kernel gave it (for the injections' steps).
    steps: Option<Arc<AtomicU64>>,
}

impl FaultInjector {
    /// An injector for `configs`, drawing from forks of `rng`, recording into `trace`.
    pub fn new(
        configs: Vec<FaultConfig>,
        rng: &DeterministicRng,
        trace: Arc<Trace>,
        clock: crate::clock::SimClock,
    ) -> Result<Self, FaultConfigError> {
        if configs.len() > FAULT_CONFIGS_MAX {
            return Err(FaultConfigError::TooMany {
                count: configs.len(),
                limit: FAULT_CONFIGS_MAX,
            });
        }
        let rules = configs
            .into_iter()
            .map(|config| Rule {
                rng: None,
                config,
                matched: 0,
                fired: 0,
                reached: 0,
            })
            .collect();
        Ok(Self {
            state: Mutex::new(State {
                rules,
                stats: FaultStats::default(),
                schedule: Vec::new(),
                schedule_steps: Vec::new(),
                suppressed: BTreeSet::new(),
                only: None,
            }),
            rng: rng.clone(),
            trace,
            clock,
            healed: AtomicBool::new(false),
            healed_at_us: AtomicU64::new(0),
            steps: None,
        })
    }

    /// Notes each injection's step from the run's step count `steps` (the kernel's).
    pub fn with_step_counter(mut self, steps: Arc<AtomicU64>) -> Self {
        self.steps = Some(steps);
        self
    }

    /// Stops every injection from now on (the "heal" phase: faults end, and the system
    /// must recover and make progress). Recorded in the trace.
    pub fn heal(&self) {
        if !self.healed.swap(true, Ordering::Relaxed) {
            let at_us = micros_saturating(self.clock.now());
            self.healed_at_us.store(at_us, Ordering::Relaxed);
            self.trace.emit(FaultEvent::Heal);
        }
    }

    /// The simulated time of the first [`FaultInjector::heal`], if there was one (what a
    /// liveness check's bound is counted after; see [`crate::eventually`]).
    pub fn healed_at(&self) -> Option<Duration> {
        self.is_healed()
            .then(|| Duration::from_micros(self.healed_at_us.load(Ordering::Relaxed)))
    }

    /// Whether [`FaultInjector::heal`] was called.
    pub fn is_healed(&self) -> bool {
        self.healed.load(Ordering::Relaxed)
    }

    /// Switches off the injections with these ids (they still consume their draws).
    pub fn suppress(&self, ids: impl IntoIterator<Item = InjectionId>) {
        self.lock().suppressed.extend(ids);
    }

    /// Lets only the injections with these ids happen; every other one, including ones
    /// that only appear once earlier faults are gone, is suppressed. Schedule minimization
    /// replays a seed this way.
    pub fn allow_only(&self, ids: impl IntoIterator<Item = InjectionId>) {
        self.lock().only = Some(ids.into_iter().collect());
    }

    /// Decides whether a fault fires at `point`. Returns the kind that fires, if any;
    /// the first matching rule in config order wins. Only rules whose kind the point
    /// implements see the operation (a read cannot `write_fail`).
    pub fn decide(&self, point: &FaultPoint) -> Option<FaultKind> {
        self.decide_operation(point, point.name())
    }

    /// Like [`FaultInjector::decide`], for a qualified point's operation
    /// (`llm.call.<task>`): filters see the qualified name.
    pub fn decide_qualified(&self, point: &FaultPoint, qualifier: &str) -> Option<FaultKind> {
        self.decide_operation(point, &point.with_qualifier(qualifier))
    }

    fn decide_operation(&self, point: &FaultPoint, operation: &str) -> Option<FaultKind> {
        let (domain, kinds) = point_domain_and_kinds(point);
        if self.healed.load(Ordering::Relaxed) {
            return None;
        }
        let mut state = self.lock();
        let State {
            rules,
            stats,
            schedule,
            schedule_steps,
            suppressed,
            only,
        } = &mut *state;
        count_operation(stats, operation);
        let mut chosen: Option<(InjectionId, FaultKind)> = None;
        for (index, rule) in rules.iter_mut().enumerate() {
            let config = &rule.config;
            if config.kind().domain() != domain
                || !kinds.contains(&config.kind())
                || !config.filter().matches(operation)
            {
                continue;
            }
            rule.reached += 1;
            if !config.enabled() {
                continue;
            }
            rule.matched += 1;
            let draw = rule
                .rng
                .get_or_insert_with(|| rule_rng(&self.rng, index, config.kind()))
                .next_u64();
            let ordinal = rule.matched;
            if !eligible(config, ordinal, rule.fired)
                || !chance(config.probability(), draw)
                || chosen.is_some()
            {
                continue;
            }
            rule.fired += 1;
            let id = InjectionId {
                rule: index as u32,
                ordinal,
            };
            if suppressed.contains(&id) || only.as_ref().is_some_and(|only| !only.contains(&id)) {
                stats.suppressed += 1;
                continue;
            }
            chosen = Some((id, config.kind()));
        }
        let (id, kind) = chosen?;
        let injection = Injection {
            id,
            kind,
            operation: operation.to_owned(),
            at_us: micros_saturating(self.clock.now()),
        };
        let step = self.record_step();
        record_injection(stats, (schedule, schedule_steps), injection, step);
        drop(state);
        self.trace.emit(FaultEvent::Injected {
            kind: kind.name(),
            operation: operation.to_owned(),
            rule: id.rule,
            ordinal: id.ordinal,
        });
        Some(kind)
    }

    /// Whether any enabled rule could fire `kind`.
    pub fn is_configured(&self, kind: FaultKind) -> bool {
        self.lock()
            .rules
            .iter()
            .any(|rule| rule.config.enabled() && rule.config.kind() == kind)
    }

    /// The configs in force, in rule order.
    pub fn configs(&self) -> Vec<FaultConfig> {
        self.lock()
            .rules
            .iter()
            .map(|rule| rule.config.clone())
            .collect()
    }

    /// For each rule, in config order, how many operations it reached (its kind
    /// implemented there and its filter passing), whether or not it was enabled. A rule at
    /// zero after a whole run could not have fired.
    pub fn rule_reach(&self) -> Vec<u64> {
        self.lock().rules.iter().map(|rule| rule.reached).collect()
    }

    /// Counters so far.
    pub fn stats(&self) -> FaultStats {
        self.lock().stats.clone()
    }

    /// Injections so far, of every kind.
    pub fn injected_total(&self) -> u64 {
        self.lock().stats.injected_total()
    }

    /// Every injection so far, in order (up to `FAULT_SCHEDULE_ENTRIES_MAX`).
    pub fn schedule(&self) -> Vec<Injection> {
        self.lock().schedule.clone()
    }

    /// Parallel to [`FaultInjector::schedule`]: the step of each injection, the first
    /// step from which a branch of the run keeps it (the run's steps when it fired, plus
    /// one; see [`RunPath`](crate::RunPath)). 1 for every injection of an injector no kernel gave
    /// its step count.
    pub fn schedule_steps(&self) -> Vec<u64> {
        self.lock().schedule_steps.clone()
    }

    /// The step an injection made now is kept at: the first step from which a branch
    /// keeps it (its draw came after the steps taken so far; see `crate::marks`).
    fn record_step(&self) -> u64 {
        self.steps
            .as_ref()
            .map_or(0, |steps| steps.load(Ordering::Relaxed))
            + 1
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for FaultInjector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("FaultInjector")
            .field(
                "rules",
                &state
                    .rules
                    .iter()
                    .map(|r| r.config.to_string())
                    .collect::<Vec<_>>(),
            )
            .field("injected", &state.stats.injected_total())
            .finish()
    }
}

/// Counts one more `operation` (the key allocated only the first time it is seen).
fn count_operation(stats: &mut FaultStats, operation: &str) {
    match stats.operations.get_mut(operation) {
        Some(count) => *count += 1,
        None => {
            stats.operations.insert(operation.to_owned(), 1);
        }
    }
}

/// Whether a rule may fire on its `ordinal`-th matching operation, having fired `fired`
/// times: past `after_operations`, at `at_operation` if set, under `max_injections`.
fn eligible(config: &FaultConfig, ordinal: u64, fired: u64) -> bool {
    ordinal > config.after_operations()
        && config.at_operation().is_none_or(|at| at == ordinal)
        && config.max_injections().is_none_or(|max| fired < max)
}

/// Counts `injection` (by kind, by kind and operation) and keeps it in the schedule,
/// up to [`FAULT_SCHEDULE_ENTRIES_MAX`] entries.
fn record_injection(
    stats: &mut FaultStats,
    (schedule, steps): (&mut Vec<Injection>, &mut Vec<u64>),
    injection: Injection,
    step: u64,
) {
    // The schedule is two parallel lists, in the order (and so the steps) the faults
    // were injected: what `dst minimize` replays by injection id.
    assert!(
        schedule.len() == steps.len() && steps.last().is_none_or(|last| *last <= step),
        "fault schedule: {} injections, {} steps, the last at {:?}, the next at {step}",
        schedule.len(),
        steps.len(),
        steps.last()
    );
    let kind = injection.kind;
    *stats.injected_by_kind.entry(kind).or_default() += 1;
    *stats
        .injected_by_operation
        .entry((kind, injection.operation.clone()))
        .or_default() += 1;
    if schedule.len() < FAULT_SCHEDULE_ENTRIES_MAX {
        schedule.push(injection);
        steps.push(step);
    }
    assert!(
        schedule.len() == steps.len() && schedule.len() <= FAULT_SCHEDULE_ENTRIES_MAX,
        "fault schedule: {} injections, {} steps",
        schedule.len(),
        steps.len()
    );
}

/// `point`'s domain and the kinds it may fire, asserting that every kind is of that
/// domain (a point declared across domains is a bug in its declaration).
fn point_domain_and_kinds(point: &FaultPoint) -> (FaultDomain, &'static [FaultKind]) {
    let domain = point
        .domain()
        .unwrap_or_else(|| panic!("fault point {point} is not named in a domain"));
    let kinds = point.kinds();
    assert!(
        kinds.iter().all(|kind| kind.domain() == domain),
        "fault point {point} lists a kind outside {domain}"
    );
    (domain, kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn injection() -> Injection {
        Injection {
            id: InjectionId {
                rule: 0,
                ordinal: 1,
            },
            kind: FaultKind::LlmTimeout,
            operation: "llm.complete".into(),
            at_us: 0,
        }
    }

    /// A planted schedule whose steps run backwards (an injection noted at step 5 after
    /// one at step 9) trips the precondition: `dst minimize` reads the steps in order.
    #[test]
    #[should_panic(expected = "fault schedule: 1 injections, 1 steps, the last at Some(9)")]
    fn a_schedule_out_of_step_order_trips_the_precondition() {
        let mut stats = FaultStats::default();
        let (mut schedule, mut steps) = (Vec::new(), Vec::new());
        record_injection(&mut stats, (&mut schedule, &mut steps), injection(), 9);
        record_injection(&mut stats, (&mut schedule, &mut steps), injection(), 5);
    }

    /// Lists out of step with each other trip it too.
    #[test]
    #[should_panic(expected = "fault schedule: 1 injections, 0 steps")]
    fn lists_of_different_lengths_trip_the_precondition() {
        let mut stats = FaultStats::default();
        let (mut schedule, mut steps) = (vec![injection()], Vec::new());
        record_injection(&mut stats, (&mut schedule, &mut steps), injection(), 1);
    }

    #[test]
    fn an_injection_reads_as_one_aligned_line() {
        let injection = Injection {
            id: InjectionId {
                rule: 0,
                ordinal: 3,
            },
            kind: FaultKind::LlmTimeout,
            operation: "llm.complete".into(),
            at_us: 1_250_400,
        };
        assert_eq!(
            injection.to_string(),
            "     1.250s llm.timeout on llm.complete (0:3)"
        );
    }
    use crate::clock::SimClock;
    use crate::fault::point::{STORAGE_READ, STORAGE_WRITE};

    /// A point of a simulator of the test's own, where every LLM kind can fire.
    const COMPLETE: FaultPoint = FaultPoint::new(
        "llm.complete",
        &[FaultKind::LlmTimeout, FaultKind::LlmRateLimit],
    );

    fn with_injector<T>(
        configs: Vec<FaultConfig>,
        seed: u64,
        body: impl FnOnce(&FaultInjector) -> T,
    ) -> T {
        let runtime = crate::clock::tests::paused_runtime();
        let _guard = runtime.enter();
        let clock = SimClock::new(0);
        let trace = Arc::new(Trace::new(clock.clone(), 8, false));
        let injector =
            FaultInjector::new(configs, &DeterministicRng::new(seed), trace, clock).unwrap();
        body(&injector)
    }

    #[test]
    fn a_fault_fires_only_in_its_own_domain() {
        let configs = vec![FaultConfig::always(FaultKind::StorageWriteFail)];
        with_injector(configs, 1, |injector| {
            for _ in 0..100 {
                assert_eq!(injector.decide(&COMPLETE), None);
            }
            assert_eq!(
                injector.decide(&STORAGE_WRITE),
                Some(FaultKind::StorageWriteFail)
            );
        });
    }

    #[test]
    fn filters_caps_warmup_and_ordinals() {
        let configs = vec![
            FaultConfig::always(FaultKind::StorageReadFail)
                .on_operation("storage.read")
                .unwrap()
                .with_after_operations(2)
                .with_max_injections(2),
            FaultConfig::always(FaultKind::LlmTimeout)
                .with_at_operation(3)
                .unwrap(),
        ];
        with_injector(configs, 2, |injector| {
            let reads: Vec<_> = (0..6).map(|_| injector.decide(&STORAGE_READ)).collect();
            let hit = Some(FaultKind::StorageReadFail);
            assert_eq!(reads, [None, None, hit, hit, None, None]);
            assert_eq!(injector.decide(&STORAGE_WRITE), None);
            let calls: Vec<_> = (0..5).map(|_| injector.decide(&COMPLETE)).collect();
            assert_eq!(calls, [None, None, Some(FaultKind::LlmTimeout), None, None]);
            let stats = injector.stats();
            assert_eq!(stats.injected_total(), 3);
            assert_eq!(stats.operations["storage.read"], 6);
            assert_eq!(injector.schedule().len(), 3);
        });
    }

    #[test]
    fn kinds_scope_rules_to_operations_and_heal_stops_everything() {
        let configs = vec![
            FaultConfig::always(FaultKind::StorageReadFail),
            FaultConfig::always(FaultKind::StorageWriteFail),
        ];
        with_injector(configs, 5, |injector| {
            assert_eq!(
                injector.decide(&STORAGE_WRITE),
                Some(FaultKind::StorageWriteFail)
            );
            let stats = injector.stats();
            assert_eq!(
                stats.injected_by_kind.get(&FaultKind::StorageReadFail),
                None,
                "the read rule never saw the write"
            );
            assert_eq!(injector.healed_at(), None);
            injector.heal();
            assert!(injector.is_healed());
            assert_eq!(injector.healed_at(), Some(Duration::ZERO));
            assert_eq!(injector.decide(&STORAGE_WRITE), None);
        });
    }

    #[test]
    fn disabled_configs_never_fire() {
        let configs = vec![FaultConfig::always(FaultKind::LlmTimeout).with_enabled(false)];
        with_injector(configs, 3, |injector| {
            assert!((0..50).all(|_| injector.decide(&COMPLETE).is_none()));
            assert!(!injector.is_configured(FaultKind::LlmTimeout));
        });
    }

    #[test]
    fn decisions_do_not_shift_with_other_domains_traffic() {
        let configs = || {
            vec![
                FaultConfig::chance(FaultKind::LlmRateLimit, 0.3),
                FaultConfig::chance(FaultKind::StorageWriteFail, 0.3),
            ]
        };
        let llm_only = with_injector(configs(), 9, |injector| {
            (0..200)
                .map(|_| injector.decide(&COMPLETE))
                .collect::<Vec<_>>()
        });
        let interleaved = with_injector(configs(), 9, |injector| {
            (0..200)
                .map(|i| {
                    for _ in 0..(i % 3) {
                        injector.decide(&STORAGE_WRITE);
                    }
                    injector.decide(&COMPLETE)
                })
                .collect::<Vec<_>>()
        });
        assert_eq!(llm_only, interleaved);
    }

    #[test]
    fn suppressing_one_injection_keeps_the_others() {
        let configs = || vec![FaultConfig::chance(FaultKind::LlmTimeout, 0.2)];
        let full = with_injector(configs(), 4, |injector| {
            for _ in 0..100 {
                injector.decide(&COMPLETE);
            }
            injector.schedule()
        });
        assert!(
            full.len() >= 3,
            "seed 4 injects several faults: {}",
            full.len()
        );
        let dropped = full[1].id;
        let reduced = with_injector(configs(), 4, |injector| {
            injector.suppress([dropped]);
            for _ in 0..100 {
                injector.decide(&COMPLETE);
            }
            (injector.schedule(), injector.stats().suppressed)
        });
        let expected: Vec<_> = full.iter().filter(|i| i.id != dropped).cloned().collect();
        assert_eq!(reduced, (expected, 1));
    }
}
