//! Fault points: the operations where a simulator asks the injector, declared once.
//!
//! A fault rule's filter names operations. When those names were free strings, a typo or
//! a rename in a simulator left a rule that could never fire, and the scenario ran with no
//! faults and passed. So every place that asks the injector is a [`FaultPoint`]: a
//! constant holding the operation's name and the fault kinds that mean something there
//! (a read cannot `write_fail`). Scenarios name the constants; a config whose filter
//! reaches no point, or only points where its kind cannot fire, is refused when the
//! simulation is configured ([`check_filter`]); and a rule that matched nothing over a
//! whole run is reported after it (see `Simulation::try_run` and the sweep table).
//!
//! The built-in simulators' points are in [`BUILTIN`]. A simulator of your own declares
//! its points the same way and registers them (`SimConfig::with_fault_point`), so its
//! filters are checked like the built-in ones.

use std::fmt;

use super::{FaultConfig, FaultConfigError, FaultDomain, FaultKind, OperationFilter};

/// One operation where faults are decided: its dotted name, and the kinds it implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPoint {
    name: &'static str,
    kinds: &'static [FaultKind],
    qualified: bool,
}

impl FaultPoint {
    /// A point named `name` (`"<domain>.<operation>"`) where `kinds` can fire. Every kind
    /// must be of the domain the name starts with (checked when the point is used).
    pub const fn new(name: &'static str, kinds: &'static [FaultKind]) -> Self {
        Self {
            name,
            kinds,
            qualified: false,
        }
    }

    /// A point whose operations may carry a qualifier after the name: `llm.call` is asked
    /// as `llm.call.memory.extract` for a request tagged with that task.
    pub const fn qualified(name: &'static str, kinds: &'static [FaultKind]) -> Self {
        Self {
            name,
            kinds,
            qualified: true,
        }
    }

    /// The operation name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The kinds this point implements.
    pub const fn kinds(&self) -> &'static [FaultKind] {
        self.kinds
    }

    /// Whether operations at this point may carry a qualifier.
    pub const fn is_qualified(&self) -> bool {
        self.qualified
    }

    /// The domain, read from the name's first segment (`None` for a name outside every
    /// domain, which [`check_point`] refuses).
    pub fn domain(&self) -> Option<FaultDomain> {
        let first = self.name.split('.').next()?;
        [
            FaultDomain::Llm,
            FaultDomain::Storage,
            FaultDomain::Network,
            FaultDomain::Clock,
            FaultDomain::Tool,
        ]
        .into_iter()
        .find(|domain| domain.name() == first)
    }

    /// The operation name for `qualifier` (`llm.call.memory.extract`).
    pub fn with_qualifier(&self, qualifier: &str) -> String {
        assert!(self.qualified, "{} takes no qualifier", self.name);
        format!("{}.{qualifier}", self.name)
    }

    /// Whether an operation named by `filter` can be asked at this point.
    pub fn reachable_by(&self, filter: &OperationFilter) -> bool {
        let qualified_prefix = format!("{}.", self.name);
        match filter {
            OperationFilter::Any => true,
            OperationFilter::Exact(name) => {
                name == self.name
                    || (self.qualified
                        && name.len() > qualified_prefix.len()
                        && name.starts_with(&qualified_prefix))
            }
            OperationFilter::Prefix(prefix) => {
                self.name.starts_with(prefix.as_str())
                    || (self.qualified && prefix.starts_with(&qualified_prefix))
            }
        }
    }
}

impl fmt::Display for FaultPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)?;
        if self.qualified {
            f.write_str("[.<qualifier>]")?;
        }
        Ok(())
    }
}

const LLM_KINDS: &[FaultKind] = &[
    FaultKind::LlmTimeout,
    FaultKind::LlmRateLimit,
    FaultKind::LlmContextOverflow,
    FaultKind::LlmInvalidResponse,
    FaultKind::LlmServiceUnavailable,
    FaultKind::LlmStreamCut,
    FaultKind::LlmContentFilter,
    FaultKind::LlmModelNotFound,
    FaultKind::LlmWrongContent,
];

/// A call to SimLLM; a request tagged with a task is asked as `llm.call.<task>`.
pub const LLM_CALL: FaultPoint = FaultPoint::qualified("llm.call", LLM_KINDS);

/// An embeddings request at a simulated server (`crate::network`'s embeddings
/// endpoints): refusals, a server that never answers, and answers of the wrong shape.
pub const LLM_EMBED: FaultPoint = FaultPoint::new(
    "llm.embed",
    &[
        FaultKind::LlmTimeout,
        FaultKind::LlmRateLimit,
        FaultKind::LlmServiceUnavailable,
        FaultKind::LlmEmbeddingWrongDimensions,
        FaultKind::LlmEmbeddingTruncated,
        FaultKind::LlmEmbeddingMissing,
    ],
);

/// A call of a simulated tool, asked as `tool.call.<tool name>` (`tool.call.pay`), so a
/// rule can aim at one tool.
pub const TOOL_CALL: FaultPoint = FaultPoint::qualified(
    "tool.call",
    &[
        FaultKind::ToolTimeout,
        FaultKind::ToolErrorResult,
        FaultKind::ToolTransportError,
        FaultKind::ToolMalformedResult,
        FaultKind::ToolSlow,
        FaultKind::ToolEmptyResult,
    ],
);

/// An MCP client's `initialize`, at a simulated MCP server (`crate::mcp`).
pub const MCP_INITIALIZE: FaultPoint = FaultPoint::new(
    "tool.mcp.initialize",
    &[
        FaultKind::McpVersionMismatch,
        FaultKind::McpInternalError,
        FaultKind::McpStreamCut,
        FaultKind::McpNoResponse,
    ],
);

/// Any other request in an MCP session, asked as `tool.mcp.request.<method>`
/// (`tool.mcp.request.tools/call`), so a rule can aim at one method.
pub const MCP_REQUEST: FaultPoint = FaultPoint::qualified(
    "tool.mcp.request",
    &[
        FaultKind::McpSessionExpired,
        FaultKind::McpStreamCut,
        FaultKind::McpInternalError,
        FaultKind::McpToolsChanged,
        FaultKind::McpNoResponse,
    ],
);

/// A batch written to SimStorage (notes, entities, links).
pub const STORAGE_WRITE: FaultPoint = FaultPoint::new(
    "storage.write",
    &[
        FaultKind::StorageWriteFail,
        FaultKind::StorageDiskFull,
        FaultKind::StorageLatency,
        FaultKind::StorageCorruption,
    ],
);

/// A batch with nothing that can rot (only links or deletes): the same operation as
/// [`STORAGE_WRITE`], without `storage.corruption`, which would be counted as injected
/// and change nothing. Not in [`BUILTIN`]: filters name the operation, `storage.write`.
pub const STORAGE_WRITE_UNROTTABLE: FaultPoint = FaultPoint::new(
    "storage.write",
    &[
        FaultKind::StorageWriteFail,
        FaultKind::StorageDiskFull,
        FaultKind::StorageLatency,
    ],
);

/// A batch that deletes entities, asked before its write.
pub const STORAGE_DELETE: FaultPoint =
    FaultPoint::new("storage.delete", &[FaultKind::StorageDeleteFail]);

/// A read of notes, entities or links from SimStorage.
pub const STORAGE_READ: FaultPoint = FaultPoint::new(
    "storage.read",
    &[FaultKind::StorageReadFail, FaultKind::StorageLatency],
);

/// A text search of SimStorage.
pub const STORAGE_SEARCH: FaultPoint = FaultPoint::new(
    "storage.search",
    &[FaultKind::StorageReadFail, FaultKind::StorageLatency],
);

/// A connection SimNetwork opens to a simulated server.
pub const NETWORK_CONNECT: FaultPoint = FaultPoint::new(
    "network.connect",
    &[
        FaultKind::NetworkConnectionRefused,
        FaultKind::NetworkTimeout,
        FaultKind::NetworkSlowFirstByte,
        FaultKind::NetworkProxyError,
    ],
);

/// A response body SimNetwork delivers.
pub const NETWORK_BODY: FaultPoint = FaultPoint::new(
    "network.body",
    &[
        FaultKind::NetworkReset,
        FaultKind::NetworkPartialWrite,
        FaultKind::NetworkTimeout,
    ],
);

/// A read of the simulated wall clock.
pub const CLOCK_READ_WALL: FaultPoint = FaultPoint::new("clock.read_wall", &[FaultKind::ClockJump]);

/// Every point of the built-in simulators.
pub const BUILTIN: &[FaultPoint] = &[
    LLM_CALL,
    TOOL_CALL,
    MCP_INITIALIZE,
    MCP_REQUEST,
    STORAGE_WRITE,
    STORAGE_DELETE,
    STORAGE_READ,
    STORAGE_SEARCH,
    NETWORK_CONNECT,
    NETWORK_BODY,
    CLOCK_READ_WALL,
    LLM_EMBED,
];

/// The arm a simulator's match takes for a kind its point does not list: the injector only
/// returns kinds the point implements, so reaching this is a bug in the harness.
pub fn unreachable_kind(point: &FaultPoint, kind: FaultKind) -> ! {
    unreachable!("the injector returned {kind} at {point}, which does not implement it")
}

/// Checks that `point` is well formed: its name starts with a known domain and every
/// kind it lists belongs to that domain.
pub fn check_point(point: &FaultPoint) -> Result<(), FaultConfigError> {
    let domain = point
        .domain()
        .ok_or(FaultConfigError::PointDomain { point: point.name })?;
    match point.kinds.iter().find(|kind| kind.domain() != domain) {
        Some(&kind) => Err(FaultConfigError::PointKind {
            point: point.name,
            kind,
        }),
        None => Ok(()),
    }
}

/// Checks that `config` can fire at one of `points` at least: its filter reaches a point
/// that implements its kind. The error lists the points where the kind can fire.
pub fn check_filter(config: &FaultConfig, points: &[FaultPoint]) -> Result<(), FaultConfigError> {
    let kind = config.kind();
    let implementing = || points.iter().filter(|p| p.kinds.contains(&kind));
    if implementing().any(|point| point.reachable_by(config.filter())) {
        return Ok(());
    }
    let known: Vec<String> = implementing().map(ToString::to_string).collect();
    Err(FaultConfigError::UnknownOperation {
        kind,
        filter: config.filter().clone(),
        known: if known.is_empty() {
            "none: no simulator implements it".to_owned()
        } else {
            known.join(", ")
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_points_are_well_formed_and_cover_every_kind() {
        for point in BUILTIN {
            assert_eq!(check_point(point), Ok(()), "{point}");
        }
        for kind in FaultKind::ALL {
            assert!(
                BUILTIN.iter().any(|point| point.kinds().contains(kind)),
                "no built-in simulator implements {kind}"
            );
        }
        let mut names: Vec<&str> = BUILTIN.iter().map(FaultPoint::name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BUILTIN.len(), "point names are unique");
    }

    #[test]
    fn filters_reach_points_by_name_qualifier_and_prefix() {
        let table: &[(&str, FaultPoint, bool)] = &[
            ("*", STORAGE_READ, true),
            ("storage.read", STORAGE_READ, true),
            ("storage.reed", STORAGE_READ, false),
            ("storage.r*", STORAGE_READ, true),
            ("storage.read.notes", STORAGE_READ, false),
            ("llm.call", LLM_CALL, true),
            ("llm.call.memory.extract", LLM_CALL, true),
            ("llm.call.", LLM_CALL, false),
            ("llm.call.memory.*", LLM_CALL, true),
            ("llm.c*", LLM_CALL, true),
            ("llm.complete", LLM_CALL, false),
            ("llm.calls*", LLM_CALL, false),
        ];
        for (filter, point, reachable) in table {
            assert_eq!(
                point.reachable_by(&OperationFilter::parse(filter)),
                *reachable,
                "{filter} at {point}"
            );
        }
    }

    #[test]
    fn a_filter_naming_no_point_or_the_wrong_kind_is_refused() {
        let typo = FaultConfig::always(FaultKind::StorageReadFail)
            .on_operation("storage.serch")
            .unwrap();
        let error = check_filter(&typo, BUILTIN).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("storage.serch"), "{text}");
        assert!(
            text.contains("storage.search"),
            "lists the known points: {text}"
        );

        let wrong_kind = FaultConfig::always(FaultKind::StorageWriteFail)
            .on_operation("storage.read")
            .unwrap();
        assert!(check_filter(&wrong_kind, BUILTIN).is_err());

        let good = FaultConfig::always(FaultKind::LlmTimeout)
            .on_operation("llm.call.memory.rewrite_query")
            .unwrap();
        assert_eq!(check_filter(&good, BUILTIN), Ok(()));
    }

    #[test]
    fn a_point_of_your_own_is_checked_and_accepted_once_registered() {
        const COMPLETE: FaultPoint = FaultPoint::new("llm.complete", &[FaultKind::LlmTimeout]);
        const BAD: FaultPoint = FaultPoint::new("llm.bad", &[FaultKind::StorageDiskFull]);
        const NO_DOMAIN: FaultPoint = FaultPoint::new("disk.write", &[]);
        assert_eq!(check_point(&COMPLETE), Ok(()));
        assert!(check_point(&BAD).is_err());
        assert!(check_point(&NO_DOMAIN).is_err());
        let rule = FaultConfig::always(FaultKind::LlmTimeout)
            .on_operation("llm.complete")
            .unwrap();
        assert!(check_filter(&rule, BUILTIN).is_err());
        let mut points = BUILTIN.to_vec();
        points.push(COMPLETE);
        assert_eq!(check_filter(&rule, &points), Ok(()));
    }
}
