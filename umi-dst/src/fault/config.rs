//! FaultConfig: how one fault kind fires, validated when it is built.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::FaultKind;

/// Which operations a fault applies to, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OperationFilter {
    /// Every operation of the fault's domain.
    #[default]
    Any,
    /// Exactly this operation name.
    Exact(String),
    /// Every operation whose name starts with this prefix.
    Prefix(String),
}

impl OperationFilter {
    /// Parses `"*"` (any), `"storage.write*"` (prefix) or `"storage.write"` (exact).
    pub fn parse(text: &str) -> Self {
        match text.strip_suffix('*') {
            Some("") => Self::Any,
            Some(prefix) => Self::Prefix(prefix.to_owned()),
            None => Self::Exact(text.to_owned()),
        }
    }

    /// Whether `operation` passes the filter.
    pub fn matches(&self, operation: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(name) => operation == name,
            Self::Prefix(prefix) => operation.starts_with(prefix.as_str()),
        }
    }
}

impl fmt::Display for OperationFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Exact(name) => f.write_str(name),
            Self::Prefix(prefix) => write!(f, "{prefix}*"),
        }
    }
}

/// A fault setting that cannot work, named with the offending value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultConfigError {
    /// The probability is not in `[0, 1]` (or is NaN).
    #[error("fault {kind}: probability {probability} is outside [0, 1]")]
    Probability {
        /// The fault being configured.
        kind: FaultKind,
        /// The rejected probability.
        probability: f64,
    },
    /// `at_operation` counts from 1.
    #[error("fault {kind}: at_operation is 1-based; 0 never matches")]
    AtOperationZero {
        /// The fault being configured.
        kind: FaultKind,
    },
    /// The filter names an operation of another domain, so the fault could never fire.
    #[error(
        "fault {kind}: filter {filter} names no {domain} operation \
         ({domain} operations start with \"{domain}.\")"
    )]
    FilterOutsideDomain {
        /// The fault being configured.
        kind: FaultKind,
        /// The filter that cannot match.
        filter: OperationFilter,
        /// The kind's domain.
        domain: super::FaultDomain,
    },
    /// The filter reaches no fault point where the kind can fire: a typo, a renamed
    /// operation, or a kind the operation does not implement.
    #[error(
        "fault {kind}: filter {filter} names no operation where {kind} can fire \
         (it can fire at: {known})"
    )]
    UnknownOperation {
        /// The fault being configured.
        kind: FaultKind,
        /// The filter that cannot match.
        filter: OperationFilter,
        /// The points that implement the kind.
        known: String,
    },
    /// A fault point's name does not start with a fault domain.
    #[error("fault point {point:?} is not named in a domain (llm., storage., network., clock.)")]
    PointDomain {
        /// The point's name.
        point: &'static str,
    },
    /// A fault point lists a kind of another domain.
    #[error("fault point {point:?} lists {kind}, which belongs to another domain")]
    PointKind {
        /// The point's name.
        point: &'static str,
        /// The kind of another domain.
        kind: FaultKind,
    },
    /// More fault configs than a simulation may hold.
    #[error("{count} fault configs exceed the limit of {limit}")]
    TooMany {
        /// How many were given.
        count: usize,
        /// `FAULT_CONFIGS_MAX`.
        limit: usize,
    },
}

/// How one fault kind fires. Built with [`FaultConfig::new`] (which checks the
/// probability) and the `with_*` methods.
///
/// A fault fires on an operation when all hold: the config is enabled; the operation is
/// in the kind's domain and passes the filter; it is past the first `after_operations`
/// matching operations; it is the `at_operation`-th matching one, if that is set; fewer
/// than `max_injections` have fired, if that is set; and the injector's draw for it falls
/// under `probability`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "FaultConfigSpec", into = "FaultConfigSpec")]
pub struct FaultConfig {
    kind: FaultKind,
    probability: f64,
    filter: OperationFilter,
    max_injections: Option<u64>,
    after_operations: u64,
    at_operation: Option<u64>,
    enabled: bool,
}

impl FaultConfig {
    /// `kind` firing with `probability` on every operation of its domain.
    pub fn new(kind: FaultKind, probability: f64) -> Result<Self, FaultConfigError> {
        if !(0.0..=1.0).contains(&probability) {
            return Err(FaultConfigError::Probability { kind, probability });
        }
        Ok(Self::chance(kind, probability))
    }

    /// `kind` firing with a `probability` written in the code (`0.05`), checked at compile
    /// time where the config is a `const`, else when it is built: a literal outside 0..=1
    /// is a bug in the test, not input to handle. For a probability read at run time, use
    /// [`FaultConfig::new`], which returns an error instead.
    ///
    /// ```
    /// use umi_dst::{FaultConfig, FaultKind};
    /// const TIMEOUTS: FaultConfig = FaultConfig::chance(FaultKind::LlmTimeout, 0.05);
    /// assert_eq!(TIMEOUTS.probability(), 0.05);
    /// ```
    ///
    /// ```compile_fail
    /// use umi_dst::{FaultConfig, FaultKind};
    /// const WRONG: FaultConfig = FaultConfig::chance(FaultKind::LlmTimeout, 5.0);
    /// ```
    #[allow(
        clippy::manual_range_contains,
        reason = "RangeInclusive::contains is not const"
    )]
    pub const fn chance(kind: FaultKind, probability: f64) -> Self {
        assert!(
            probability >= 0.0 && probability <= 1.0,
            "a fault probability is between 0 and 1"
        );
        Self {
            kind,
            probability,
            filter: OperationFilter::Any,
            max_injections: None,
            after_operations: 0,
            at_operation: None,
            enabled: true,
        }
    }

    /// `kind` firing on every matching operation (probability 1).
    pub const fn always(kind: FaultKind) -> Self {
        Self::chance(kind, 1.0)
    }

    /// The same rule with another probability (checked like [`FaultConfig::new`]'s).
    pub fn with_probability(mut self, probability: f64) -> Result<Self, FaultConfigError> {
        if !(0.0..=1.0).contains(&probability) {
            return Err(FaultConfigError::Probability {
                kind: self.kind,
                probability,
            });
        }
        self.probability = probability;
        Ok(self)
    }

    /// Restricts the fault to operations passing `filter` (which must be able to match an
    /// operation of the kind's domain).
    pub fn with_filter(mut self, filter: OperationFilter) -> Result<Self, FaultConfigError> {
        let domain = self.kind.domain();
        let domain_prefix = format!("{domain}.");
        let reachable = match &filter {
            OperationFilter::Any => true,
            OperationFilter::Exact(name) => name.starts_with(&domain_prefix),
            OperationFilter::Prefix(prefix) => {
                prefix.starts_with(&domain_prefix) || domain_prefix.starts_with(prefix.as_str())
            }
        };
        if !reachable {
            return Err(FaultConfigError::FilterOutsideDomain {
                kind: self.kind,
                filter,
                domain,
            });
        }
        self.filter = filter;
        Ok(self)
    }

    /// Restricts the fault to one operation name.
    pub fn on_operation(self, name: &str) -> Result<Self, FaultConfigError> {
        self.with_filter(OperationFilter::Exact(name.to_owned()))
    }

    /// Stops after `count` injections.
    pub fn with_max_injections(mut self, count: u64) -> Self {
        self.max_injections = Some(count);
        self
    }

    /// Lets the first `count` matching operations through untouched.
    pub fn with_after_operations(mut self, count: u64) -> Self {
        self.after_operations = count;
        self
    }

    /// Fires only on the `ordinal`-th matching operation (1-based), still subject to the
    /// probability (use [`FaultConfig::always`] for a certain hit).
    pub fn with_at_operation(mut self, ordinal: u64) -> Result<Self, FaultConfigError> {
        if ordinal == 0 {
            return Err(FaultConfigError::AtOperationZero { kind: self.kind });
        }
        self.at_operation = Some(ordinal);
        Ok(self)
    }

    /// The rule as a run sees it that comes after `earlier` operations the rule matched
    /// in runs before it (`dst serve`'s scope: docs/adr/0020-aimed-faults-over-serve.md):
    /// `#n` becomes `#(n - earlier)`, or off once passed; a warm-up shrinks by `earlier`.
    /// A rule without an ordinal or a warm-up, or `earlier` 0, is returned unchanged.
    pub fn after_earlier(mut self, earlier: u64) -> Self {
        if earlier == 0 {
            return self;
        }
        self.after_operations = self.after_operations.saturating_sub(earlier);
        match self.at_operation {
            Some(ordinal) if ordinal > earlier => self.at_operation = Some(ordinal - earlier),
            Some(_) => self.enabled = false,
            None => {}
        }
        self
    }

    /// Switches the config on or off without removing it.
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// The fault kind.
    pub fn kind(&self) -> FaultKind {
        self.kind
    }
    /// The per-operation probability.
    pub fn probability(&self) -> f64 {
        self.probability
    }
    /// The operation filter.
    pub fn filter(&self) -> &OperationFilter {
        &self.filter
    }
    /// The injection cap, if any.
    pub fn max_injections(&self) -> Option<u64> {
        self.max_injections
    }
    /// Matching operations let through before the fault may fire.
    pub fn after_operations(&self) -> u64 {
        self.after_operations
    }
    /// The one matching operation the fault may fire on, if set.
    pub fn at_operation(&self) -> Option<u64> {
        self.at_operation
    }
    /// Whether the config is on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }
}

impl fmt::Display for FaultConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} p={}", self.kind, self.probability)?;
        if self.filter != OperationFilter::Any {
            write!(f, " on {}", self.filter)?;
        }
        if self.after_operations > 0 {
            write!(f, " after {}", self.after_operations)?;
        }
        if let Some(ordinal) = self.at_operation {
            write!(f, " at #{ordinal}")?;
        }
        if let Some(max) = self.max_injections {
            write!(f, " max {max}")?;
        }
        if !self.enabled {
            f.write_str(" (disabled)")?;
        }
        Ok(())
    }
}

/// The serialized form; every deserialized config goes through the same checks as the
/// builder.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultConfigSpec {
    kind: FaultKind,
    probability: f64,
    #[serde(default)]
    filter: OperationFilter,
    #[serde(default)]
    max_injections: Option<u64>,
    #[serde(default)]
    after_operations: u64,
    #[serde(default)]
    at_operation: Option<u64>,
    #[serde(default = "default_enabled")]
    enabled: bool,
}

fn default_enabled() -> bool {
    true
}

impl TryFrom<FaultConfigSpec> for FaultConfig {
    type Error = FaultConfigError;

    fn try_from(spec: FaultConfigSpec) -> Result<Self, Self::Error> {
        let mut config = FaultConfig::new(spec.kind, spec.probability)?
            .with_filter(spec.filter)?
            .with_after_operations(spec.after_operations)
            .with_enabled(spec.enabled);
        if let Some(max) = spec.max_injections {
            config = config.with_max_injections(max);
        }
        if let Some(ordinal) = spec.at_operation {
            config = config.with_at_operation(ordinal)?;
        }
        Ok(config)
    }
}

impl From<FaultConfig> for FaultConfigSpec {
    fn from(config: FaultConfig) -> Self {
        Self {
            kind: config.kind,
            probability: config.probability,
            filter: config.filter,
            max_injections: config.max_injections,
            after_operations: config.after_operations,
            at_operation: config.at_operation,
            enabled: config.enabled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probability_outside_unit_interval_is_rejected() {
        for bad in [-0.1, 1.01, f64::NAN, f64::INFINITY] {
            let error = FaultConfig::new(FaultKind::LlmTimeout, bad).unwrap_err();
            assert!(
                matches!(error, FaultConfigError::Probability { .. }),
                "{bad}"
            );
            assert!(error.to_string().contains("llm.timeout"));
        }
        assert!(FaultConfig::new(FaultKind::LlmTimeout, 0.0).is_ok());
        assert!(FaultConfig::new(FaultKind::LlmTimeout, 1.0).is_ok());
    }

    #[test]
    fn filter_must_reach_the_domain() {
        let storage = FaultConfig::always(FaultKind::StorageWriteFail);
        assert!(storage.clone().on_operation("storage.put_entity").is_ok());
        assert!(
            storage
                .clone()
                .with_filter(OperationFilter::parse("stor*"))
                .is_ok()
        );
        let error = storage.on_operation("llm.complete").unwrap_err();
        assert!(error.to_string().contains("llm.complete"), "{error}");
    }

    #[test]
    fn filters_parse_and_match() {
        assert_eq!(OperationFilter::parse("*"), OperationFilter::Any);
        let prefix = OperationFilter::parse("storage.write*");
        assert!(prefix.matches("storage.write_entity"));
        assert!(!prefix.matches("storage.read"));
        let exact = OperationFilter::parse("storage.write");
        assert!(exact.matches("storage.write"));
        assert!(!exact.matches("storage.write_entity"));
    }

    #[test]
    fn a_rule_after_earlier_operations_keeps_its_place_in_the_count() {
        let second = FaultConfig::always(FaultKind::LlmRateLimit)
            .with_at_operation(2)
            .unwrap();
        assert_eq!(second.clone().after_earlier(0), second);
        assert_eq!(second.clone().after_earlier(1).at_operation(), Some(1));
        assert!(second.clone().after_earlier(1).enabled());
        assert!(!second.clone().after_earlier(2).enabled());
        let warm = FaultConfig::always(FaultKind::LlmTimeout).with_after_operations(3);
        assert_eq!(warm.clone().after_earlier(1).after_operations(), 2);
        assert_eq!(warm.after_earlier(9).after_operations(), 0);
        let plain = FaultConfig::always(FaultKind::LlmTimeout);
        assert_eq!(plain.clone().after_earlier(5), plain);
    }

    #[test]
    fn serde_goes_through_validation() {
        let good =
            r#"{"kind":"storage.latency","probability":0.5,"filter":{"prefix":"storage.r"}}"#;
        let config: FaultConfig = serde_json::from_str(good).unwrap();
        assert_eq!(
            config.filter(),
            &OperationFilter::Prefix("storage.r".into())
        );
        assert_eq!(
            serde_json::from_str::<FaultConfig>(&serde_json::to_string(&config).unwrap()).unwrap(),
            config
        );

        let bad = r#"{"kind":"storage.latency","probability":2}"#;
        let error = serde_json::from_str::<FaultConfig>(bad).unwrap_err();
        assert!(error.to_string().contains("outside [0, 1]"), "{error}");
        let unknown = r#"{"kind":"storage.latency","probability":0.1,"probabilty":1}"#;
        assert!(serde_json::from_str::<FaultConfig>(unknown).is_err());
        assert!(
            FaultConfig::always(FaultKind::ClockJump)
                .with_at_operation(0)
                .is_err()
        );
    }
}
