//! A serving session: how many times each request was seen (the occurrence that goes
//! into its seed), and the log of what every request met, kept in key order so the
//! session's trace hash does not depend on the order requests arrived in.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::answer::Recorded;
use crate::trace::TraceEvent;

/// Distinct requests remembered at most; past it a new request counts as first seen
/// (its occurrence is 0), so memory stays bounded in a long-running server.
pub(crate) const OCCURRENCES_MAX: usize = 1_000_000;

/// Log entries kept at most; past it, requests are answered but not logged (the trace
/// says how many were left out).
pub(crate) const LOG_ENTRIES_MAX: usize = 100_000;

/// What identifies one answer: the seed, the endpoint, the request's hash, which time.
pub(crate) type Key = (u64, String, [u8; 32], u64);

/// One line of the session's log.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Entry {
    pub(crate) seed: u64,
    pub(crate) endpoint: String,
    pub(crate) path: String,
    pub(crate) request_hash: String,
    pub(crate) occurrence: u64,
    pub(crate) run_seed: u64,
    pub(crate) status: Option<u16>,
    pub(crate) end: &'static str,
    pub(crate) faults: Vec<String>,
    pub(crate) trace_hash: String,
    pub(crate) events: Vec<TraceEvent>,
}

impl Entry {
    /// The entry of `recorded`, taking its trace (the response needs none of it).
    pub(crate) fn new(key: &Key, path: &str, recorded: &mut Recorded) -> Self {
        Self {
            seed: key.0,
            endpoint: key.1.clone(),
            path: path.to_owned(),
            request_hash: hex(&key.2),
            occurrence: key.3,
            run_seed: recorded.run_seed,
            status: recorded.status,
            end: recorded.end.name(),
            faults: recorded.faults.clone(),
            trace_hash: recorded.trace_hash.to_string(),
            events: std::mem::take(&mut recorded.trace),
        }
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A request as the occurrence count knows it: seed, endpoint, hash.
type Seen = (u64, String, [u8; 32]);

/// The session's shared state.
#[derive(Debug, Default)]
pub(crate) struct Session {
    occurrences: Mutex<BTreeMap<Seen, u64>>,
    log: Mutex<(BTreeMap<Key, Entry>, u64)>,
}

impl Session {
    /// The occurrence of this request (0 the first time it is seen).
    pub(crate) fn next_occurrence(&self, seed: u64, endpoint: &str, hash: [u8; 32]) -> u64 {
        let mut occurrences = self
            .occurrences
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = (seed, endpoint.to_owned(), hash);
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

    /// The log as JSON lines in key order, then a last line with the session's trace
    /// hash (over every entry's key and trace hash) and how many entries were left out.
    pub(crate) fn trace(&self) -> (String, String) {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::new();
        let mut hasher = Sha256::new();
        hasher.update(b"umi.serve.session.v1");
        for (key, entry) in &log.0 {
            hasher.update(key.0.to_le_bytes());
            hasher.update(key.1.as_bytes());
            hasher.update([0]);
            hasher.update(key.2);
            hasher.update(key.3.to_le_bytes());
            hasher.update(entry.trace_hash.as_bytes());
            out.push_str(&serde_json::to_string(entry).expect("a log entry serializes"));
            out.push('\n');
        }
        let hash = hex(&hasher.finalize());
        out.push_str(&umi_core::canonical_json::to_string(
            &serde_json::json!({"session_trace_hash": hash, "entries": log.0.len(), "left_out": log.1}),
        ));
        out.push('\n');
        (out, hash)
    }
}
