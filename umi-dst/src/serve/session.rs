//! A serving session: how many times each request was seen in its scope (the occurrence
//! that goes into its seed), and the log of what every request met, kept in key order so
//! the session's trace hash does not depend on the order requests arrived in. A scope
//! (`x-umi-scope`, `/scope/{name}/`) only counts repeats: its name goes into no seed and
//! no hash, so a test run under a fresh scope replays on a used server as on a fresh one
//! (`address.rs`).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::answer::{End, Recorded};
use crate::trace::TraceEvent;

/// Distinct requests remembered at most; past it a new request counts as first seen
/// (its occurrence is 0), so memory stays bounded in a long-running server.
pub(crate) const OCCURRENCES_MAX: usize = 1_000_000;

/// Log entries kept at most; past it, requests are answered but not logged (the trace
/// says how many were left out).
pub(crate) const LOG_ENTRIES_MAX: usize = 100_000;

/// What identifies one answer: the scope, the seed, the endpoint, the request's hash,
/// which time.
pub(crate) type Key = (String, u64, String, [u8; 32], u64);

/// One line of the session's log.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Entry {
    pub(crate) seed: u64,
    pub(crate) scope: String,
    pub(crate) endpoint: String,
    pub(crate) path: String,
    pub(crate) request_hash: String,
    pub(crate) occurrence: u64,
    pub(crate) run_seed: u64,
    pub(crate) status: Option<u16>,
    pub(crate) end: &'static str,
    /// Whether a 200's body ended short of the format's end of a whole answer: reset,
    /// stalled, or cut by a fault (`llm.stream_cut`, `network.partial_write`). A client
    /// must re-send such a request or fail; returning what it got as an answer is the
    /// bug the plugins' cut-stream check finds.
    pub(crate) cut: bool,
    pub(crate) faults: Vec<String>,
    pub(crate) trace_hash: String,
    pub(crate) events: Vec<TraceEvent>,
}

impl Entry {
    /// The entry of `recorded`, taking its trace (the response needs none of it).
    pub(crate) fn new(key: &Key, path: &str, recorded: &mut Recorded) -> Self {
        Self {
            scope: key.0.clone(),
            seed: key.1,
            endpoint: key.2.clone(),
            path: path.to_owned(),
            request_hash: hex(&key.3),
            occurrence: key.4,
            run_seed: recorded.run_seed,
            status: recorded.status,
            end: recorded.end.name(),
            cut: is_cut(recorded),
            faults: recorded.faults.clone(),
            trace_hash: recorded.trace_hash.to_string(),
            events: std::mem::take(&mut recorded.trace),
        }
    }
}

/// The fault kinds that end a 200's body early without the transport failing.
const CUTTING_FAULTS: [&str; 2] = ["llm.stream_cut", "network.partial_write"];

/// Whether `recorded` is a 200 whose body did not end as a whole answer ends.
fn is_cut(recorded: &Recorded) -> bool {
    let cut_by_fault = recorded.faults.iter().any(|fault| {
        CUTTING_FAULTS
            .iter()
            .any(|kind| fault.split('@').next() == Some(kind))
    });
    recorded.status == Some(200) && (recorded.end != End::Complete || cut_by_fault)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A request as the occurrence count knows it: scope, seed, endpoint, hash.
type Seen = (String, u64, String, [u8; 32]);

/// The session's shared state.
#[derive(Debug, Default)]
pub(crate) struct Session {
    occurrences: Mutex<BTreeMap<Seen, u64>>,
    log: Mutex<(BTreeMap<Key, Entry>, u64)>,
}

impl Session {
    /// The occurrence of this request in `scope` (0 the first time it is seen there).
    pub(crate) fn next_occurrence(
        &self,
        scope: &str,
        seed: u64,
        endpoint: &str,
        hash: [u8; 32],
    ) -> u64 {
        let mut occurrences = self
            .occurrences
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = (scope.to_owned(), seed, endpoint.to_owned(), hash);
        if let Some(count) = occurrences.get_mut(&key) {
            *count += 1;
            return *count - 1;
        }
        if occurrences.len() < OCCURRENCES_MAX {
            occurrences.insert(key, 1);
        }
        0
    }

    pub(crate) fn record(&self, key: Key, entry: Entry) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if log.0.len() < LOG_ENTRIES_MAX {
            log.0.insert(key, entry);
        } else {
            log.1 += 1;
        }
    }

    /// Forgets every occurrence count and the log (`POST /umi/reset`): the server
    /// answers as if freshly started with the same flags.
    pub(crate) fn reset(&self) {
        self.occurrences
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        *self.log.lock().unwrap_or_else(PoisonError::into_inner) = (BTreeMap::new(), 0);
    }

    /// The log as JSON lines in key order (only `scope`'s entries, when one is named),
    /// then a last line with the trace hash of those entries (over each entry's seed,
    /// endpoint, request hash, occurrence and trace hash: never the scope's name, so two
    /// runs of one test under two scopes hash alike when they got the same answers) and
    /// how many entries were left out of the log.
    pub(crate) fn trace(&self, scope: Option<&str>) -> (String, String) {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::new();
        let mut hasher = Sha256::new();
        hasher.update(b"umi.serve.session.v1");
        let mut entries = 0;
        for (key, entry) in &log.0 {
            if scope.is_some_and(|scope| scope != key.0) {
                continue;
            }
            entries += 1;
            hasher.update(key.1.to_le_bytes());
            hasher.update(key.2.as_bytes());
            hasher.update([0]);
            hasher.update(key.3);
            hasher.update(key.4.to_le_bytes());
            hasher.update(entry.trace_hash.as_bytes());
            out.push_str(&serde_json::to_string(entry).expect("a log entry serializes"));
            out.push('\n');
        }
        let hash = hex(&hasher.finalize());
        out.push_str(&umi_core::canonical_json::to_string(
            &serde_json::json!({"session_trace_hash": hash, "entries": entries, "left_out": log.1}),
        ));
        out.push('\n');
        (out, hash)
    }
}
