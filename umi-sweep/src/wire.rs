//! What the sweep's parent and its worker processes say to each other: one JSON line
//! per batch of run requests on the worker's stdin (an array, `batch.rs`), one JSON line
//! per run's result on its stdout.
//!
//! Seed code shares the worker's stdout, so a result line carries a prefix no scenario
//! prints (starting with an ASCII record separator), is read from the prefix's last
//! occurrence on its line, and names the run it answers: every other line is ignored.
//! A result carries what the collector folds (verdict, trace hash, faults injected by
//! kind, marks, rule reach), not the trace itself.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use umi_dst::failure_class::FailureClass;
use umi_dst::fault::{FaultKind, FaultStats};
use umi_dst::micros_saturating;
use umi_dst::simulation::SeedRun;
use umi_dst::trace::TraceHash;

/// The prefix of a result line on a worker's stdout. Public for the planted scenario
/// whose seed writes one that is not a result (the harness's own test).
pub const RESULT_PREFIX: &str = "\u{1e}umi-dst-result ";

/// Bytes of one line either side reads: a longer line is skipped (scenario output) or,
/// for a result, replaced by a crash saying so.
pub(crate) const WIRE_LINE_BYTES_MAX: usize = 16 << 20;

/// One run, parent to worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RunRequest {
    /// The run's number in the parent's plan (echoed in the reply).
    pub(crate) index: usize,
    /// The scenario's name.
    pub(crate) scenario: String,
    pub(crate) seed: u64,
    pub(crate) swarm: bool,
    pub(crate) check_determinism: bool,
}

/// One result, worker to parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunReply {
    /// The request's `index`.
    pub(crate) index: usize,
    /// Wall time the run took in the worker.
    pub(crate) wall_us: u64,
    pub(crate) end: ReplyEnd,
}

/// How the run ended in the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum ReplyEnd {
    /// The seed reached its verdict.
    Finished(Box<RunSummary>),
    /// The harness panicked (outside the seed's own guards), with the message.
    Panicked(String),
}

/// The part of a `SeedRun` the collector folds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunSummary {
    pub(crate) seed: u64,
    /// Class name and message.
    pub(crate) failure: Option<(String, String)>,
    /// 64 hex digits.
    pub(crate) trace_hash: String,
    pub(crate) events: u64,
    pub(crate) steps: u64,
    pub(crate) sim_elapsed_us: u64,
    pub(crate) injected_by_kind: Vec<(FaultKind, u64)>,
    pub(crate) faults: Vec<String>,
    pub(crate) marks: BTreeMap<String, u64>,
    pub(crate) rule_reach: Vec<u64>,
    /// What the run spent, without its call-by-call list (the collector folds totals).
    #[serde(default)]
    pub(crate) usage: umi_dst::usage::RunUsage,
}

impl RunSummary {
    pub(crate) fn of(run: &SeedRun) -> Self {
        Self {
            seed: run.seed,
            failure: run
                .failure
                .as_ref()
                .map(|(class, message)| (class.name().to_owned(), message.clone())),
            trace_hash: run.trace_hash.to_string(),
            events: run.events,
            steps: run.steps,
            sim_elapsed_us: micros_saturating(run.sim_elapsed),
            injected_by_kind: run
                .fault_stats
                .injected_by_kind
                .iter()
                .map(|(kind, count)| (*kind, *count))
                .collect(),
            faults: run.faults.clone(),
            marks: run.marks.clone(),
            rule_reach: run.rule_reach.clone(),
            usage: umi_dst::usage::RunUsage {
                calls: Vec::new(),
                ..run.usage.clone()
            },
        }
    }

    /// The run again (without its trace events, injections or swarm draws), or what is
    /// wrong with the summary.
    pub(crate) fn into_run(self) -> Result<SeedRun, String> {
        let trace_hash = parse_hash(&self.trace_hash)
            .ok_or_else(|| format!("a worker sent trace hash {:?}", self.trace_hash))?;
        let failure = match self.failure {
            None => None,
            Some((class, message)) => Some((
                FailureClass::from_name(&class)
                    .ok_or_else(|| format!("a worker sent failure class {class:?}"))?,
                message,
            )),
        };
        Ok(SeedRun {
            seed: self.seed,
            path: umi_dst::RunPath::from_seed(self.seed),
            failure,
            trace_hash,
            events: self.events,
            steps: self.steps,
            sim_elapsed: Duration::from_micros(self.sim_elapsed_us),
            fault_stats: FaultStats {
                injected_by_kind: self.injected_by_kind.into_iter().collect(),
                ..FaultStats::default()
            },
            injections: Vec::new(),
            faults: self.faults,
            swarm: Vec::new(),
            tail: Vec::new(),
            foreign: Vec::new(),
            full_trace: None,
            marks: self.marks,
            rule_reach: self.rule_reach,
            mark_steps: Default::default(),
            watermarks: Default::default(),
            injection_steps: Vec::new(),
            usage: self.usage,
        })
    }
}

fn parse_hash(hex: &str) -> Option<TraceHash> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (byte, pair) in bytes.iter_mut().zip(hex.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(TraceHash(bytes))
}

/// The result line for `reply` (prefix, JSON, newline).
pub(crate) fn reply_line(reply: &RunReply) -> String {
    let json = serde_json::to_string(reply).unwrap_or_else(|error| {
        // Every field serializes; this is only reachable through a serde bug.
        format!(
            "{{\"index\":{},\"wall_us\":0,\"end\":{{\"Panicked\":\"cannot encode the result: {error}\"}}}}",
            reply.index
        )
    });
    format!("{RESULT_PREFIX}{json}\n")
}

/// The reply a stdout line carries, if it is a result line (`Err` when it has the
/// prefix but not a reply after it).
pub(crate) fn parse_reply_line(line: &str) -> Option<Result<RunReply, String>> {
    let at = line.rfind(RESULT_PREFIX)?;
    let json = line[at + RESULT_PREFIX.len()..].trim_end();
    Some(
        serde_json::from_str(json)
            .map_err(|error| format!("a worker sent a result line that is not a result ({error})")),
    )
}

/// Reads one line (newline included) into `line`, keeping at most `max` bytes of it
/// (the rest of a longer line is read and dropped). Returns how the line ended.
pub(crate) fn read_line_bounded(
    reader: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineEnd> {
    line.clear();
    let mut cut = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(if line.is_empty() && !cut {
                LineEnd::Eof
            } else {
                LineEnd::Cut
            });
        }
        let newline = available.iter().position(|byte| *byte == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        if line.len() + take <= max {
            line.extend_from_slice(&available[..take]);
        } else {
            cut = true;
        }
        reader.consume(take);
        if newline.is_some() {
            return Ok(if cut {
                LineEnd::TooLong
            } else {
                LineEnd::Complete
            });
        }
    }
}

/// How [`read_line_bounded`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineEnd {
    /// A whole line, its newline included.
    Complete,
    /// A line longer than the bound (what was kept is only its start).
    TooLong,
    /// The stream ended inside a line, with no newline (what was kept is its start, at
    /// most the bound): a writer that died mid-line, or a last line left unfinished.
    Cut,
    /// The end of the stream, no line.
    Eof,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> RunSummary {
        RunSummary {
            seed: 7,
            failure: Some(("correctness".into(), "lost write\nof note 3".into())),
            trace_hash: "ab".repeat(32),
            events: 10,
            steps: 20,
            sim_elapsed_us: 1_500_000,
            injected_by_kind: vec![(FaultKind::ALL[0], 2)],
            faults: vec!["a rule".into()],
            marks: BTreeMap::from([("mark".into(), 3)]),
            rule_reach: vec![4],
            usage: umi_dst::usage::RunUsage {
                model_calls: 3,
                retries: 1,
                task_class: Some("billing".into()),
                models: BTreeMap::from([(
                    "m".into(),
                    umi_dst::usage::TokenCounts {
                        input: 10,
                        ..Default::default()
                    },
                )]),
                ..Default::default()
            },
        }
    }

    #[test]
    fn a_result_survives_the_pipe_and_the_scenario_output_around_it() {
        let reply = RunReply {
            index: 12,
            wall_us: 5,
            end: ReplyEnd::Finished(Box::new(summary())),
        };
        let line = reply_line(&reply);
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        // A scenario's unfinished `print!` before the result does not hide it.
        let noisy = format!("partial output{line}");
        assert_eq!(parse_reply_line(&noisy), Some(Ok(reply.clone())));
        assert_eq!(parse_reply_line("a scenario's own line"), None);
        assert!(matches!(
            parse_reply_line(&format!("{RESULT_PREFIX}{{not json")),
            Some(Err(_))
        ));
        let ReplyEnd::Finished(summary) = reply.end else {
            unreachable!()
        };
        let run = summary.clone().into_run().unwrap();
        assert_eq!(run.trace_hash.to_string(), summary.trace_hash);
        assert_eq!(
            run.failure,
            Some((FailureClass::Correctness, "lost write\nof note 3".into()))
        );
        assert_eq!(RunSummary::of(&run), *summary);
    }

    #[test]
    fn lines_are_read_within_their_bound() {
        let mut input = std::io::Cursor::new(b"short\nfar too long a line\nlast".to_vec());
        let mut line = Vec::new();
        let mut read = |line: &mut Vec<u8>| read_line_bounded(&mut input, line, 8).unwrap();
        assert_eq!(read(&mut line), LineEnd::Complete);
        assert_eq!(line, b"short\n");
        assert_eq!(read(&mut line), LineEnd::TooLong);
        assert!(line.len() <= 8);
        assert_eq!(read(&mut line), LineEnd::Cut);
        assert_eq!(line, b"last");
        assert_eq!(read(&mut line), LineEnd::Eof);
        let mut input = std::io::Cursor::new(b"a line cut and too long".to_vec());
        assert_eq!(
            read_line_bounded(&mut input, &mut line, 8).unwrap(),
            LineEnd::Cut
        );
    }

    #[test]
    fn a_bad_hash_or_class_is_refused() {
        let bad_hash = RunSummary {
            trace_hash: "zz".into(),
            ..summary()
        };
        assert!(bad_hash.into_run().unwrap_err().contains("trace hash"));
        let bad_class = RunSummary {
            failure: Some(("weird".into(), String::new())),
            ..summary()
        };
        assert!(bad_class.into_run().unwrap_err().contains("failure class"));
    }
}
