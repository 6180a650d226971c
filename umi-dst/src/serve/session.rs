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
use crate::trace::KeptEvent;

/// Distinct requests remembered at most, over every scope; past it the least recently
/// used scope is forgotten, so memory stays bounded in a long-running server.
pub(crate) const OCCURRENCES_MAX: usize = 1_000_000;

/// Log entries kept at most, over every scope; past it the least recently used scope is
/// forgotten (a scope that alone fills it leaves its new entries out, and its trace says
/// how many).
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
    /// stalled, or cut by a fault (`llm.stream_cut`, `network.partial_write`). Acting on
    /// what such a response carried (a tool run with its cut arguments, a later request
    /// built from it, an answer that is its partial text) is the bug the plugins'
    /// cut-stream check finds, from `carried`, `history` and `arrival`.
    pub(crate) cut: bool,
    pub(crate) faults: Vec<String>,
    pub(crate) trace_hash: String,
    /// The run's trace, kept typed and written out as text when the log is read
    /// (`GET /umi/trace`, OTLP): each event's text and kind's name were about a third of
    /// an entry's memory, for every request a session answers (up to `LOG_ENTRIES_MAX`;
    /// issue 41).
    #[serde(serialize_with = "serialize_events")]
    pub(crate) events: Vec<KeptEvent>,
    /// For an MCP `tools/call`: what the call was and did (`super::world::ToolEntry`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool: Option<super::world::ToolEntry>,
    /// The 0-based order in which the server received this scope's requests (model and
    /// MCP alike): the log stays in key order, and this says the order they came in.
    /// Like `carried` and `history`, it goes into no trace hash.
    pub(crate) arrival: u64,
    /// What the response the client received carried (a model entry with a 200).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) carried: Option<super::digest::Carried>,
    /// A digest of the request's conversation (a model entry the format could parse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) history: Option<super::digest::History>,
    /// The agent's clock when it sent the request, µs since the simulated epoch, when it
    /// runs on Umi's clock (`x-umi-clock-us`); in no trace hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) clock_us: Option<u64>,
    /// When the response's parts were sent, in the run's simulated time (`super::clock`);
    /// in no trace hash.
    pub(crate) timing: super::clock::Timing,
}

impl Entry {
    /// The entry of `recorded`, taking its trace (the response needs none of it).
    pub(crate) fn new(key: &Key, path: &str, recorded: &mut Recorded) -> Self {
        Self {
            scope: key.0.clone(),
            seed: key.1,
            endpoint: key.2.clone(),
            path: path.to_owned(),
            request_hash: umi_core::hex::lower(&key.3),
            occurrence: key.4,
            run_seed: recorded.run_seed,
            status: recorded.status,
            end: recorded.end.name(),
            cut: is_cut(recorded),
            faults: recorded.faults.clone(),
            trace_hash: recorded.trace_hash.to_string(),
            events: std::mem::take(&mut recorded.trace),
            tool: recorded.tool.take(),
            arrival: 0,
            carried: None,
            history: None,
            clock_us: None,
            timing: super::clock::Timing::of(recorded),
        }
    }
}

/// The logged events as the trace's events serialize (position, time, kind, text).
fn serialize_events<S: serde::Serializer>(
    events: &[KeptEvent],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(events.iter().map(KeptEvent::event))
}

/// The fault kinds that end a 200's body early without the transport failing.
const CUTTING_FAULTS: [&str; 2] = ["llm.stream_cut", "network.partial_write"];

/// Whether `recorded` is a 200 whose body did not end as a whole answer ends.
pub(crate) fn is_cut(recorded: &Recorded) -> bool {
    let cut_by_fault = recorded.faults.iter().any(|fault| {
        CUTTING_FAULTS
            .iter()
            .any(|kind| fault.split('@').next() == Some(kind))
    });
    recorded.status == Some(200) && (recorded.end != End::Complete || cut_by_fault)
}

/// A request as a scope's occurrence count knows it: seed, endpoint, hash.
type Seen = (u64, String, [u8; 32]);

/// A log entry's key within its scope: seed, endpoint, hash, occurrence.
type Logged = (u64, String, [u8; 32], u64);

/// Requests counted but not yet logged remembered per scope (for their `arrival`): far
/// more than `--concurrency-max` lets be in flight; past it the oldest is forgotten (a
/// request that never got logged, its answer having failed).
const ARRIVALS_PENDING_MAX: usize = 65_536;

/// Evicted scope names remembered, so a trace of one can say it was evicted.
const EVICTED_SCOPES_REMEMBERED_MAX: usize = 100_000;

/// One scope's counts and log.
#[derive(Debug, Default)]
struct ScopeState {
    occurrences: BTreeMap<Seen, u64>,
    /// Boxed: an entry is a few hundred bytes, and a B-tree keeps its values in its
    /// nodes, so each insert into a log of many entries moved kilobytes (issue 41).
    log: BTreeMap<Logged, Box<Entry>>,
    /// Entries not logged because this scope alone filled the log.
    left_out: u64,
    /// When it was last used (the store's tick).
    last_used: u64,
    /// The MCP server's sessions in this scope.
    mcp: crate::mcp::Sessions,
    /// How many times this scope's requests were asked at each operation an ordinal
    /// fault rule counts, in arrival order (`aim.rs`; empty when no rule counts).
    aimed: BTreeMap<String, u64>,
    /// The simulated tools' world in this scope (`super::world`).
    tools: super::world::SharedWorld,
    /// How many requests arrived in this scope (the next one's `arrival`).
    arrived: u64,
    /// The arrival of each request counted but not yet logged.
    arrivals: BTreeMap<Logged, u64>,
}

/// Every scope, and which was used least recently.
#[derive(Debug, Default)]
struct Store {
    scopes: BTreeMap<String, ScopeState>,
    /// Last-use tick to scope: the first is the least recently used.
    by_use: BTreeMap<u64, String>,
    tick: u64,
    occurrences_total: usize,
    entries_total: usize,
    evicted: std::collections::VecDeque<String>,
    evicted_total: u64,
}

impl Store {
    /// The state of `scope`, marked as used now.
    fn touch(&mut self, scope: &str) -> &mut ScopeState {
        self.tick += 1;
        let tick = self.tick;
        let state = self.scopes.entry(scope.to_owned()).or_default();
        if state.last_used != 0 {
            self.by_use.remove(&state.last_used);
        }
        state.last_used = tick;
        self.by_use.insert(tick, scope.to_owned());
        state
    }

    /// Forgets the least recently used scope other than `keep`; false when there is none.
    fn evict_one(&mut self, keep: &str) -> bool {
        let Some((&tick, _)) = self.by_use.iter().find(|(_, scope)| scope.as_str() != keep) else {
            return false;
        };
        let scope = self.by_use.remove(&tick).expect("the tick was just found");
        let state = self
            .scopes
            .remove(&scope)
            .expect("every scope in by_use has its state");
        self.occurrences_total -= state.occurrences.len();
        self.entries_total -= state.log.len();
        self.evicted_total += 1;
        if self.evicted.len() == EVICTED_SCOPES_REMEMBERED_MAX {
            self.evicted.pop_front();
        }
        self.evicted.push_back(scope);
        true
    }

    fn forget(&mut self, scope: &str) {
        if let Some(state) = self.scopes.remove(scope) {
            self.by_use.remove(&state.last_used);
            self.occurrences_total -= state.occurrences.len();
            self.entries_total -= state.log.len();
        }
    }
}

/// The session's shared state: per scope, the occurrence counts and the log. Past
/// `OCCURRENCES_MAX` counts or `LOG_ENTRIES_MAX` entries in all, the least recently used
/// scope is forgotten whole (a test run long over); a scope that alone fills a limit
/// counts its new requests as first seen, or leaves them out of its log, and says so.
#[derive(Debug, Default)]
pub(crate) struct Session {
    store: Mutex<Store>,
}

impl Session {
    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The occurrence of this request in `scope` (0 the first time it is seen there),
    /// and its arrival there (0 for the scope's first request).
    pub(crate) fn next_occurrence(
        &self,
        scope: &str,
        seed: u64,
        endpoint: &str,
        hash: [u8; 32],
    ) -> (u64, u64) {
        let mut store = self.store();
        let occurrence = Self::count(&mut store, scope, (seed, endpoint.to_owned(), hash));
        let state = store.touch(scope);
        if state.arrivals.len() >= ARRIVALS_PENDING_MAX {
            state.arrivals.pop_first();
        }
        let arrival = state.arrived;
        state.arrived += 1;
        state
            .arrivals
            .insert((seed, endpoint.to_owned(), hash, occurrence), arrival);
        (occurrence, arrival)
    }

    /// Counts one more `seen` in `scope`; its occurrence.
    fn count(store: &mut Store, scope: &str, seen: Seen) -> u64 {
        if let Some(count) = store.touch(scope).occurrences.get_mut(&seen) {
            *count += 1;
            return *count - 1;
        }
        while store.occurrences_total >= OCCURRENCES_MAX {
            if !store.evict_one(scope) {
                return 0;
            }
        }
        store.occurrences_total += 1;
        store.touch(scope).occurrences.insert(seen, 1);
        0
    }

    /// Logs `entry` under `key`, with the arrival its request was counted at.
    pub(crate) fn record(&self, key: Key, mut entry: Entry) {
        let mut store = self.store();
        let (scope, seed, endpoint, hash, occurrence) = key;
        store.touch(&scope);
        while store.entries_total >= LOG_ENTRIES_MAX {
            if !store.evict_one(&scope) {
                let state = store.touch(&scope);
                state.left_out += 1;
                state.arrivals.remove(&(seed, endpoint, hash, occurrence));
                return;
            }
        }
        let state = store.touch(&scope);
        let logged = (seed, endpoint, hash, occurrence);
        entry.arrival = state.arrivals.remove(&logged).unwrap_or(state.arrived);
        let replaced = state.log.insert(logged, Box::new(entry));
        assert!(
            replaced.is_none(),
            "each occurrence of a request is logged once"
        );
        store.entries_total += 1;
    }

    /// The config a request arriving now in `scope`, asked at the operations `asked`,
    /// is answered with: `config` with its ordinal fault rules moved past what they
    /// matched in the scope's earlier requests, counted here by arrival (`aim.rs`);
    /// `None` for `config` itself (no rule counts, or the request is where each starts).
    pub(crate) fn aimed_config(
        &self,
        config: &super::config::ServeConfig,
        scope: &str,
        asked: Vec<String>,
    ) -> Option<std::sync::Arc<super::config::ServeConfig>> {
        if !super::aim::counts(&config.faults) {
            return None;
        }
        let asked = super::aim::counted(&config.faults, asked);
        let earlier = super::aim::count_arrival(&mut self.store().touch(scope).aimed, asked);
        config.after_earlier(&earlier)
    }

    /// The MCP session `id` of `scope` alone, as a table (empty without one).
    pub(crate) fn mcp_sessions(&self, scope: &str, id: Option<&str>) -> crate::mcp::Sessions {
        self.store().touch(scope).mcp.only(id)
    }

    /// The tools' world of `scope`, which its MCP requests take turns with.
    pub(crate) fn tools_world(&self, scope: &str) -> super::world::SharedWorld {
        self.store().touch(scope).tools.clone()
    }

    /// Keeps what one MCP request in `scope` (in session `id`, if any) left in `after`.
    pub(crate) fn merge_mcp(&self, scope: &str, id: Option<&str>, after: &crate::mcp::Sessions) {
        self.store().touch(scope).mcp.merge(id, after);
    }

    /// Forgets the occurrence counts and the log of `scope`, or of every scope
    /// (`POST /umi/reset[?scope=S]`): those requests are answered as by a fresh server.
    pub(crate) fn reset(&self, scope: Option<&str>) {
        let mut store = self.store();
        match scope {
            Some(scope) => store.forget(scope),
            None => *store = Store::default(),
        }
    }

    /// `scope`'s logged entries (every scope's, when none is named), how many entries
    /// were left out of the log, and whether the scope was evicted (`None` for the whole
    /// session), handed to `read` under the store's lock: what `marks.rs` reads.
    pub(crate) fn read_log<T>(
        &self,
        scope: Option<&str>,
        read: impl FnOnce(Vec<&Entry>, u64, Option<bool>) -> T,
    ) -> T {
        let store = self.store();
        let mut left_out = 0;
        let mut logged = Vec::new();
        for (name, state) in &store.scopes {
            if scope.is_some_and(|scope| scope != name) {
                continue;
            }
            left_out += state.left_out;
            logged.extend(state.log.values().map(|entry| &**entry));
        }
        let evicted = scope.map(|scope| store.evicted.iter().any(|e| e == scope));
        read(logged, left_out, evicted)
    }

    /// The trace with no agent spans counted.
    #[cfg(test)]
    pub(crate) fn trace(&self, scope: Option<&str>) -> (String, String) {
        self.trace_with_spans(scope, 0)
    }

    /// The log as JSON lines in key order (only `scope`'s entries, when one is named),
    /// then a last line with the trace hash of those entries (over each entry's seed,
    /// endpoint, request hash, occurrence and trace hash: never the scope's name, so two
    /// runs of one test under two scopes hash alike when they got the same answers), how
    /// many entries were left out of the log, and whether the scope was evicted (or how
    /// many scopes were, for the whole session).
    /// The summary line also says how many spans the agent sent in the scope
    /// (`agent_spans`: `POST /v1/traces`, `agent_spans.rs`; in no hash).
    pub(crate) fn trace_with_spans(
        &self,
        scope: Option<&str>,
        agent_spans: usize,
    ) -> (String, String) {
        let store = self.store();
        let mut out = String::new();
        let mut hasher = Sha256::new();
        hasher.update(b"umi.serve.session.v1");
        let (mut entries, mut left_out) = (0, 0);
        for (name, state) in &store.scopes {
            if scope.is_some_and(|scope| scope != name) {
                continue;
            }
            left_out += state.left_out;
            for (key, entry) in &state.log {
                entries += 1;
                hasher.update(key.0.to_le_bytes());
                hasher.update(key.1.as_bytes());
                hasher.update([0]);
                hasher.update(key.2);
                hasher.update(key.3.to_le_bytes());
                hasher.update(entry.trace_hash.as_bytes());
                out.push_str(&serde_json::to_string(entry).expect("a log entry serializes"));
                out.push('\n');
            }
        }
        let hash = umi_core::hex::lower(&hasher.finalize());
        let mut summary = serde_json::json!({"session_trace_hash": hash, "entries": entries, "left_out": left_out, "agent_spans": agent_spans});
        match scope {
            Some(scope) => summary["evicted"] = store.evicted.iter().any(|e| e == scope).into(),
            None => summary["scopes_evicted"] = store.evicted_total.into(),
        }
        out.push_str(&umi_core::canonical_json::to_string(&summary));
        out.push('\n');
        (out, hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{TraceEvent, TraceKind};

    /// The log keeps a run's trace typed and writes its text when read: what it writes
    /// hashes to the run's own trace hash (position, time, kind and text, event for
    /// event), for a real served request. A logged event that lost its index or wrote
    /// another text would fail here.
    #[test]
    fn a_logged_trace_reads_as_the_run_recorded_it() {
        let config = super::super::config::ServeConfig::default();
        let request = umi_core::llm::transport::HttpRequest {
            method: "POST",
            url: String::new(),
            headers: Vec::new(),
            body: br#"{"model":"umi-sim","messages":[{"role":"user","content":"hi"}]}"#.to_vec(),
        };
        let path = "/v1/chat/completions";
        let mut recorded =
            super::super::answer::answer(&config, &config.endpoints[0], 7, 0, path, request);
        assert!(recorded.trace.len() > 3, "{:?}", recorded.trace);
        let run_hash = recorded.trace_hash;
        let key: Key = (String::new(), 1, "openai".into(), [0; 32], 0);
        let entry = Entry::new(&key, path, &mut recorded);
        let logged: Vec<TraceEvent> = serde_json::from_value::<Vec<serde_json::Value>>(
            serde_json::to_value(&entry).expect("an entry serializes")["events"].clone(),
        )
        .expect("the log's events are a list")
        .iter()
        .map(|event| {
            let kind = event["kind"].as_str().expect("a kind").to_owned();
            TraceEvent::new(
                event["index"].as_u64().expect("an index"),
                std::time::Duration::from_micros(event["at"].as_u64().expect("a time")),
                TraceKind::Named {
                    kind: Box::leak(kind.into_boxed_str()),
                    detail: event["detail"].as_str().expect("a text").to_owned(),
                },
            )
        })
        .collect();
        assert_eq!(logged.len(), entry.events.len());
        assert_eq!(crate::trace::hash_of(&logged), run_hash);
        // An event recorded by name with a text over the trace's cut reads back cut, as
        // the trace hashed it.
        let long = "x".repeat(crate::constants::TRACE_DETAIL_BYTES_MAX * 2);
        let named = TraceEvent::new(
            3,
            std::time::Duration::from_millis(5),
            TraceKind::Named {
                kind: "agent.note",
                detail: long,
            },
        );
        let read_back = KeptEvent {
            index: named.index,
            at: named.at,
            record: named.record.clone(),
        }
        .event();
        assert_eq!(read_back, named);
        assert_eq!(read_back.detail.len(), named.detail.len());
        assert!(named.detail.len() <= crate::constants::TRACE_DETAIL_BYTES_MAX);
    }

    fn entry(scope: &str, occurrence: u64) -> Entry {
        Entry {
            seed: 1,
            scope: scope.to_owned(),
            endpoint: "openai".into(),
            path: "/v1/chat/completions".into(),
            request_hash: String::new(),
            occurrence,
            run_seed: 0,
            status: Some(200),
            end: "complete",
            cut: false,
            faults: Vec::new(),
            trace_hash: "t".into(),
            events: Vec::new(),
            tool: None,
            arrival: 0,
            carried: None,
            history: None,
            clock_us: None,
            timing: crate::serve::clock::Timing::ZERO,
        }
    }

    #[test]
    fn repeats_count_per_scope_and_a_reset_of_one_scope_spares_the_others() {
        let session = Session::default();
        let count = |scope: &str| session.next_occurrence(scope, 1, "openai", [7; 32]).0;
        assert_eq!(
            (count("a"), count("a"), count("b"), count("a")),
            (0, 1, 0, 2)
        );
        session.reset(Some("a"));
        assert_eq!((count("a"), count("b")), (0, 1));
        session.reset(None);
        assert_eq!(count("b"), 0);
    }

    #[test]
    fn a_full_store_forgets_the_least_recently_used_scope_and_says_so() {
        let session = Session::default();
        for occurrence in 0..LOG_ENTRIES_MAX as u64 {
            session.record(
                ("old".into(), 1, "openai".into(), [1; 32], occurrence),
                entry("old", occurrence),
            );
        }
        session.record(
            ("new".into(), 1, "openai".into(), [1; 32], 0),
            entry("new", 0),
        );
        let (text, _) = session.trace(Some("old"));
        assert!(text.contains("\"evicted\":true"), "{text}");
        let (text, _) = session.trace(Some("new"));
        assert!(
            text.contains("\"entries\":1") && text.contains("\"evicted\":false"),
            "{text}"
        );
        // A scope that alone fills the log says what it left out.
        for occurrence in 1..LOG_ENTRIES_MAX as u64 {
            session.record(
                ("new".into(), 1, "openai".into(), [1; 32], occurrence),
                entry("new", occurrence),
            );
        }
        session.record(
            ("new".into(), 1, "openai".into(), [2; 32], 0),
            entry("new", 0),
        );
        let (text, _) = session.trace(Some("new"));
        assert!(text.contains("\"left_out\":1"), "{text}");
    }

    #[test]
    fn arrivals_count_a_scope_s_requests_in_order_and_go_into_no_hash() {
        let session = Session::default();
        let arrive = |scope: &str, hash: u8| {
            let (occurrence, _) = session.next_occurrence(scope, 1, "openai", [hash; 32]);
            (
                scope.to_owned(),
                1,
                "openai".to_owned(),
                [hash; 32],
                occurrence,
            )
        };
        let (b, a, other, b_again) = (
            arrive("s", 2),
            arrive("s", 1),
            arrive("t", 1),
            arrive("s", 2),
        );
        // Logged out of order: each keeps the arrival its request was counted at.
        for key in [a.clone(), b_again.clone(), other, b.clone()] {
            session.record(key.clone(), entry(&key.0, key.4));
        }
        let (text, hash) = session.trace(Some("s"));
        let arrivals: Vec<u64> = text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter_map(|value| value.get("arrival").and_then(serde_json::Value::as_u64))
            .collect();
        // Key order: hash [1; 32] first, then [2; 32] at occurrences 0 and 1.
        assert_eq!(arrivals, vec![1, 0, 2]);
        // The same log with other arrivals, carried and history hashes alike.
        let plain = Session::default();
        for key in [a, b, b_again] {
            let mut logged = entry(&key.0, key.4);
            logged.carried = Some(super::super::digest::Carried {
                whole: false,
                text: "cut".into(),
                tool_calls: Vec::new(),
            });
            plain.record(key, logged);
        }
        let (other_text, other_hash) = plain.trace(Some("s"));
        assert_ne!(text, other_text);
        assert_eq!(hash, other_hash);
    }
}
