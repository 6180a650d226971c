//! A simulation's run as one OTLP trace: the root span `umi.run {scenario}` and, under
//! it, the spans of its trace events ([`super::walk`]), under a resource naming the
//! service (`umi.dst`), the seed and the scenario.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;

use super::error::OtlpError;
use super::ids;
use super::semconv as sc;
use super::spans::{SpanSpec, Spans};
use super::walk::Walk;
use crate::constants::SIM_EPOCH_UNIX_MS_DEFAULT;
use crate::failure_class::FailureClass;
use crate::path::RunPath;
use crate::simulation::SeedRun;
use crate::trace::{RunEvent, TraceEvent, TraceHash, TraceKind};

/// `service.name` of a run exported by `dst replay` or `dst sweep`.
pub const SERVICE_NAME_RUN: &str = "umi.dst";

/// What an export of one run needs.
#[derive(Debug, Clone, Copy)]
pub struct RunExport<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The run: its seed and branch points.
    pub path: &'a RunPath,
    /// How it failed, if it did.
    pub failure: Option<(FailureClass, &'a str)>,
    /// Every event of its trace.
    pub events: &'a [TraceEvent],
    /// The simulated time it covered.
    pub sim_elapsed: Duration,
    /// Its trace hash, when known.
    pub trace_hash: Option<TraceHash>,
}

impl<'a> RunExport<'a> {
    /// The export of `run`, a run of `scenario` made with a full trace
    /// (`SimConfig::trace_full`); refused when the full trace was not kept.
    pub fn of(scenario: &'a str, run: &'a SeedRun) -> Result<Self, OtlpError> {
        let events = run.full_trace.as_deref().ok_or(OtlpError::NoFullTrace {
            events: run.events,
            max: crate::constants::TRACE_EVENTS_FULL_MAX,
        })?;
        Ok(Self {
            scenario,
            path: &run.path,
            failure: run
                .failure
                .as_ref()
                .map(|(class, message)| (*class, message.as_str())),
            events,
            sim_elapsed: run.sim_elapsed,
            trace_hash: Some(run.trace_hash),
        })
    }

    /// The name the trace id is derived from: the scenario, with the path when the run
    /// has branch points (two paths of one seed are two traces).
    fn trace_name(&self) -> String {
        if self.path.is_seed_only() {
            self.scenario.to_owned()
        } else {
            format!("{} {}", self.scenario, self.path)
        }
    }
}

/// The run as an OTLP request: one resource, one scope, the root span first.
pub fn export_run(run: &RunExport<'_>) -> ExportTraceServiceRequest {
    let seed = run.path.seed;
    let epoch_unix_ms = run
        .events
        .iter()
        .find_map(|event| {
            let TraceKind::Run(RunEvent::Start { epoch_ms, .. }) = event.record else {
                return None;
            };
            Some(epoch_ms)
        })
        .unwrap_or(SIM_EPOCH_UNIX_MS_DEFAULT);
    let resource = vec![
        sc::string(sc::SERVICE_NAME, SERVICE_NAME_RUN),
        sc::string(sc::UMI_SEED, seed.to_string()),
        sc::string(sc::UMI_SCENARIO, run.scenario),
    ];
    let mut spans = Spans::new(
        ids::trace_id(seed, &run.trace_name()),
        epoch_unix_ms,
        resource,
    );
    let root = spans.span(SpanSpec {
        parent: None,
        name: format!("umi.run {}", run.scenario),
        kind: SpanKind::Internal,
        start: Duration::ZERO,
        end: run.sim_elapsed,
        attributes: root_attributes(run),
        error: None,
        faults: Vec::new(),
    });
    let mut walk = Walk::new(spans, root);
    for event in run.events {
        walk.event(event);
    }
    let (mut spans, end) = walk.finish(run.sim_elapsed);
    if let Some(root) = root {
        spans.set_end(root, end);
        match run.failure {
            Some((class, message)) => {
                spans.add_attribute(root, sc::string(sc::ERROR_TYPE, class.name()));
                spans.set_status(root, StatusCode::Error, message);
            }
            None => spans.set_status(root, StatusCode::Ok, ""),
        }
        if spans.dropped() > 0 {
            let dropped = spans.dropped();
            spans.add_attribute(root, sc::int(sc::UMI_SPANS_DROPPED, dropped));
        }
    }
    spans.finish()
}

/// The root span's attributes: the run's name, seed, outcome and evidence.
fn root_attributes(run: &RunExport<'_>) -> Vec<opentelemetry_proto::tonic::common::v1::KeyValue> {
    let mut attributes = vec![
        sc::string(sc::UMI_SCENARIO, run.scenario),
        sc::string(sc::UMI_SEED, run.path.seed.to_string()),
        sc::string(
            sc::UMI_RUN_OUTCOME,
            if run.failure.is_some() {
                "failed"
            } else {
                "passed"
            },
        ),
        sc::int(sc::UMI_TRACE_EVENTS, run.events.len() as u64),
    ];
    if !run.path.is_seed_only() {
        attributes.push(sc::string(sc::UMI_PATH, run.path.to_string()));
    }
    if let Some((class, _)) = run.failure {
        attributes.push(sc::string(sc::UMI_FAILURE_CLASS, class.name()));
    }
    if let Some(hash) = run.trace_hash {
        attributes.push(sc::string(sc::UMI_TRACE_HASH, hash.to_string()));
    }
    attributes
}
