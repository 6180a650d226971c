//! Replaying a cassette under the seed: the recording supplies the bytes, the seed
//! supplies everything else.
//!
//! An endpoint given a cassette ([`Endpoint::with_cassette`](super::Endpoint::with_cassette))
//! answers a request with the recorded response whose request matches it
//! ([`umi_core::cassette::key`]): the n-th identical request gets the n-th recorded
//! answer, and past the last one [`PastLast`] decides. The client reads the recorded
//! bytes exactly; the seed decides:
//!
//! - how they are split into reads (the same read plans as every simulated body);
//! - when they arrive ([`ReplayTiming`]: the recorded cadence, scaled, or jittered, all in
//!   simulated time, so a 40-second recorded stream replays in microseconds);
//! - the faults over them. The network's (`network.connect`, `network.body`) apply as to
//!   any answer. The model's (`llm.call`) become what a provider would do instead:
//!   a 429 (with a Retry-After), a 503, a 404 for the model, a context overflow, a
//!   content-filter 400 or a stall then timeout replace the recorded answer in the
//!   provider's own error envelope; a stream cut resets the connection at a seeded byte
//!   inside the recorded body; an invalid response ends the recorded body cleanly at a
//!   seeded byte (a server that crashed after flushing). An answer a fault replaced is
//!   not used up: the retry gets it.
//!
//! A request the cassette does not hold is a miss: a `cassette.miss` trace event names
//! the closest recorded request (same method and path, fewest differing JSON paths) and
//! the paths where they differ; then [`OnMiss`] decides (the provider's 400 envelope by
//! default, SimLLM's seeded answer, or a failed run). [`SimNetwork::cassette_report`]
//! lists the misses and the recorded exchanges the run never asked for.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use umi_core::cassette::redact::path_below;
use umi_core::cassette::{BodyEnd, Cassette, Exchange, IgnoreRules, RequestKey, diff_paths};
use umi_core::llm::LlmError;
use umi_core::llm::transport::{BodyStream, HttpRequest, HttpResponse, TransportError};

use super::format::Responder;
use super::{Served, SimNetwork, reads, whole_body};
use crate::fault::FaultKind;
use crate::fault::LlmKind;
use crate::fault::point::{LLM_CALL, unreachable_kind};
use crate::rng::DeterministicRng;
use crate::rng::streams::request;
use crate::trace::CassetteEvent;

/// How long a replayed `llm.timeout` stalls before the server gives up, in ms.
pub const REPLAY_TIMEOUT_STALL_MS: u64 = 600_000;

/// Most misses a report keeps (the count goes on).
pub const REPLAY_MISSES_KEPT_MAX: usize = 64;

/// The fastest and slowest a jittered replay plays a recorded gap, in permille of it.
pub const REPLAY_JITTER_PERMILLE_RANGE: (u64, u64) = (250, 4_000);

/// What a request the cassette does not hold gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnMiss {
    /// The provider's 400 error envelope, naming the closest recorded request (default).
    #[default]
    Refuse,
    /// The endpoint's model (SimLLM, seeded) answers it.
    Model,
    /// The run fails: a panic naming the request, which the runner reports with its seed.
    FailRun,
}

/// What an identical request past the last recorded one gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PastLast {
    /// The last recorded answer again (default: a retry of a request whose answer was
    /// cut gets it again).
    #[default]
    RepeatLast,
    /// It is a miss.
    Miss,
}

/// When the recorded bytes arrive, in simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplayTiming {
    /// At the recorded offsets (default).
    #[default]
    Recorded,
    /// At the recorded offsets times `permille` / 1000.
    Scaled {
        /// The factor, in thousandths.
        permille: u64,
    },
    /// Each recorded gap times a seeded factor in [`REPLAY_JITTER_PERMILLE_RANGE`].
    Jittered,
    /// All at once, with no delay.
    Instant,
}

/// How an endpoint replays its cassette.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Fields left out when requests are matched (beyond those the recorder redacted).
    pub ignore: IgnoreRules,
    /// What a miss gets.
    pub on_miss: OnMiss,
    /// What a repeat past the last recording gets.
    pub past_last: PastLast,
    /// When the bytes arrive.
    pub timing: ReplayTiming,
}

/// A cassette, indexed for replay.
#[derive(Debug)]
pub struct Replay {
    cassette: Arc<Cassette>,
    options: ReplayOptions,
    /// The recorded exchanges of each request key, in file order.
    index: BTreeMap<RequestKey, Vec<usize>>,
    /// Each exchange's response body as reads, decoded once (not per request served).
    reads: Vec<Reads>,
    /// The JSON keys of the index that redaction leaves as they are: a live request whose
    /// unredacted key is one of them has that key, and needs no redaction scan.
    unchanged_by_redaction: BTreeSet<RequestKey>,
}

/// A recorded body as reads (each one's bytes and arrival in ms), and its length.
#[derive(Debug)]
struct Reads {
    reads: Vec<(Vec<u8>, u64)>,
    body_len: usize,
}

impl Reads {
    /// `response`'s body, decoded into its reads.
    fn of(response: &umi_core::cassette::RecordedResponse) -> Self {
        let reads = response.reads();
        let body_len = reads.iter().map(|(bytes, _)| bytes.len()).sum();
        Self { reads, body_len }
    }
}

impl Replay {
    /// Indexes `cassette` for replay with `options` (the fields its recorder redacted
    /// are ignored too).
    pub fn new(cassette: Arc<Cassette>, mut options: ReplayOptions) -> Self {
        for field in &cassette.header.redacted_fields {
            options.ignore = options.ignore.with_path(field);
        }
        let mut index: BTreeMap<RequestKey, Vec<usize>> = BTreeMap::new();
        for (at, exchange) in cassette.exchanges.iter().enumerate() {
            let key = RequestKey::of_recorded(&exchange.request, &options.ignore);
            index.entry(key).or_default().push(at);
        }
        let reads = cassette
            .exchanges
            .iter()
            .map(|exchange| Reads::of(&exchange.response))
            .collect();
        let unchanged_by_redaction = index
            .keys()
            .filter(|key| key.is_redaction_fixed_point(&options.ignore))
            .cloned()
            .collect();
        Self {
            cassette,
            options,
            index,
            reads,
            unchanged_by_redaction,
        }
    }

    /// The key of a live request, as [`RequestKey::of_bytes`] makes it: a JSON body
    /// equal, before redaction, to a recorded key that redaction leaves unchanged has
    /// that key (redacting it gives it back), so the redaction scan runs only for others.
    pub fn key_of(&self, method: &str, path: &str, body: &[u8]) -> RequestKey {
        let ignore = &self.options.ignore;
        if let Some(key) = RequestKey::of_json_unredacted(method, path, body, ignore)
            && self.unchanged_by_redaction.contains(&key)
        {
            return key;
        }
        RequestKey::of_bytes(method, path, body, ignore)
    }

    /// The cassette.
    pub fn cassette(&self) -> &Cassette {
        &self.cassette
    }

    /// The options.
    pub fn options(&self) -> &ReplayOptions {
        &self.options
    }

    /// The recorded exchange for `key` when it has been served `served` times before
    /// (`None`: a miss).
    pub fn pick(&self, key: &RequestKey, served: usize) -> Option<usize> {
        let recorded = self.index.get(key)?;
        match recorded.get(served) {
            Some(at) => Some(*at),
            None if self.options.past_last == PastLast::RepeatLast => recorded.last().copied(),
            None => None,
        }
    }

    /// The recorded request closest to a live one: same method and path, fewest JSON
    /// paths apart; its index and those paths.
    pub fn closest(&self, method: &str, path: &str, body: &[u8]) -> Option<(usize, Vec<String>)> {
        let path = umi_core::cassette::key::redact_path(path);
        let live: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let live = umi_core::cassette::key::comparable(&live, &self.options.ignore);
        let mut best: Option<(usize, Vec<String>)> = None;
        for (at, exchange) in self.cassette.exchanges.iter().enumerate() {
            let request = &exchange.request;
            if !request.method.eq_ignore_ascii_case(method) || request.path != path {
                continue;
            }
            let recorded = request.body.clone().unwrap_or_default();
            let recorded = umi_core::cassette::key::comparable(&recorded, &self.options.ignore);
            let paths = diff_paths(&recorded, &live);
            if best
                .as_ref()
                .is_none_or(|(_, fewest)| paths.len() < fewest.len())
            {
                best = Some((at, paths));
            }
        }
        best
    }
}

/// A request a replay did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CassetteMiss {
    /// `POST /v1/chat/completions`.
    pub request: String,
    /// The closest recorded exchange (its index in the cassette) and where they differ.
    pub closest: Option<(usize, Vec<String>)>,
}

impl std::fmt::Display for CassetteMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no recorded exchange for {}", self.request)?;
        match &self.closest {
            Some((at, paths)) if paths.is_empty() => write!(
                f,
                "; exchange {} (file line {}) matches but was used up",
                at,
                at + 2
            ),
            Some((at, paths)) => write!(
                f,
                "; the closest is exchange {} (file line {}), which differs at {}",
                at,
                at + 2,
                paths.join(", ")
            ),
            None => write!(f, "; none was recorded with that method and path"),
        }
    }
}

/// What one endpoint's replay did in a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CassetteReport {
    /// The requests it did not hold (at most [`REPLAY_MISSES_KEPT_MAX`]).
    pub misses: Vec<CassetteMiss>,
    /// How many misses there were.
    pub miss_count: u64,
    /// The recorded exchanges (indexes) it never served.
    pub leftovers: Vec<usize>,
    /// How many recorded answers it served.
    pub served: u64,
}

/// One endpoint's replay state in a run.
#[derive(Debug, Default)]
pub(super) struct ReplayState {
    served_per_key: BTreeMap<RequestKey, usize>,
    used: BTreeSet<usize>,
    misses: Vec<CassetteMiss>,
    miss_count: u64,
    served: u64,
}

impl ReplayState {
    /// Moves the cursor past exchange `at` (of `exchanges`), served for `key`.
    fn use_up(&mut self, key: RequestKey, at: usize, exchanges: usize) {
        assert!(
            at < exchanges,
            "cassette cursor: exchange {at} of {exchanges}"
        );
        self.check(exchanges);
        *self.served_per_key.entry(key).or_insert(0) += 1;
        self.used.insert(at);
        self.served += 1;
        self.check(exchanges);
    }

    /// The cursor's invariant: every exchange served is counted under its key, one
    /// exchange can be served many times (past the last, `RepeatLast`) but not fewer
    /// than once, and only exchanges of the cassette are used.
    fn check(&self, exchanges: usize) {
        let per_key: usize = self.served_per_key.values().sum();
        assert!(
            per_key as u64 == self.served && self.used.len() as u64 <= self.served,
            "cassette cursor: served {} but {per_key} by key, {} exchanges used",
            self.served,
            self.used.len()
        );
        assert!(
            self.used.last().is_none_or(|last| *last < exchanges),
            "cassette cursor: used {:?} of {exchanges} exchanges",
            self.used.last()
        );
    }
}

/// What a replay decided for a request.
pub(super) enum Replayed {
    /// The response.
    Response(HttpResponse),
    /// A miss the endpoint's model answers.
    ToModel,
}

impl SimNetwork {
    /// What the replay of the endpoint at `base_url` did so far (`None`: it replays no
    /// cassette).
    pub fn cassette_report(&self, base_url: &str) -> Option<CassetteReport> {
        let base_url = base_url.trim_end_matches('/');
        let served = self
            .endpoints
            .iter()
            .find(|served| served.endpoint.base_url == base_url)?;
        let replay = served.endpoint.replay.as_ref()?;
        let states = self.replays.lock().unwrap_or_else(PoisonError::into_inner);
        let empty = ReplayState::default();
        let state = states.get(base_url).unwrap_or(&empty);
        Some(CassetteReport {
            misses: state.misses.clone(),
            miss_count: state.miss_count,
            leftovers: (0..replay.cassette.exchanges.len())
                .filter(|at| !state.used.contains(at))
                .collect(),
            served: state.served,
        })
    }

    /// The answer of `served`'s cassette to `request`.
    pub(super) async fn replay(
        &self,
        served: &Served,
        replay: &Replay,
        request: &HttpRequest,
        responder: Box<dyn Responder>,
        mut rng: DeterministicRng,
    ) -> Replayed {
        let base_url = &served.endpoint.base_url;
        let path = path_below(&request.url, base_url);
        let key = replay.key_of(request.method, &path, &request.body);
        let served_before = {
            let states = self.replays.lock().unwrap_or_else(PoisonError::into_inner);
            states
                .get(base_url)
                .and_then(|state| state.served_per_key.get(&key).copied())
                .unwrap_or(0)
                .saturating_add(self.replay_offset)
        };
        let Some(at) = replay.pick(&key, served_before) else {
            return self.miss(served, replay, request, &path, responder, &mut rng);
        };
        let fault = self.faults.decide(&LLM_CALL);
        let mut fault_rng = rng.substream(request::REPLAY_FAULT);
        if let Some(error) = replaced_by(fault, &mut fault_rng) {
            self.trace.emit(CassetteEvent::Fault {
                fault: fault.map(FaultKind::name),
                exchange: at,
            });
            if let LlmError::Timeout { after_ms } = error {
                self.clock.sleep(Duration::from_millis(after_ms)).await;
            }
            let (response, _) = self.refusal(served, responder, &error, None, &mut rng);
            return Replayed::Response(response);
        }
        self.use_up(base_url, key, at, replay.cassette.exchanges.len());
        let exchange = &replay.cassette.exchanges[at];
        self.trace.emit(CassetteEvent::Replay {
            exchange: at,
            method: exchange.request.method.clone(),
            path: exchange.request.path.clone(),
            status: exchange.response.status,
            body_bytes: replay.reads[at].body_len,
            end: format!("{:?}", exchange.response.end),
        });
        umi_core::env::Environment::cover(self.env.as_ref(), "cassette.replay");
        let response = self
            .play(
                exchange,
                &replay.reads[at],
                replay.options.timing,
                fault,
                &mut rng,
            )
            .await;
        Replayed::Response(response)
    }

    fn use_up(&self, base_url: &str, key: RequestKey, at: usize, exchanges: usize) {
        let mut states = self.replays.lock().unwrap_or_else(PoisonError::into_inner);
        let state = states.entry(base_url.to_owned()).or_default();
        state.use_up(key, at, exchanges);
    }

    fn miss(
        &self,
        served: &Served,
        replay: &Replay,
        request: &HttpRequest,
        path: &str,
        responder: Box<dyn Responder>,
        rng: &mut DeterministicRng,
    ) -> Replayed {
        let miss = CassetteMiss {
            request: format!(
                "{} {}",
                request.method,
                umi_core::cassette::key::redact_path(path)
            ),
            closest: replay.closest(request.method, path, &request.body),
        };
        self.trace.emit(CassetteEvent::Miss {
            miss: miss.to_string(),
        });
        umi_core::env::Environment::cover(self.env.as_ref(), "cassette.miss");
        {
            let mut states = self.replays.lock().unwrap_or_else(PoisonError::into_inner);
            let state = states.entry(served.endpoint.base_url.clone()).or_default();
            state.miss_count += 1;
            if state.misses.len() < REPLAY_MISSES_KEPT_MAX {
                state.misses.push(miss.clone());
            }
        }
        match replay.options.on_miss {
            OnMiss::Model => Replayed::ToModel,
            OnMiss::FailRun => panic!("cassette miss at {}: {miss}", served.endpoint.base_url),
            OnMiss::Refuse => {
                let error = LlmError::BadRequest {
                    status: Some(400),
                    message: format!("umi cassette: {miss}"),
                };
                let (response, _) = self.refusal(served, responder, &error, None, rng);
                Replayed::Response(response)
            }
        }
    }

    /// The recorded response, its bytes arriving on `timing` in simulated time, split
    /// into seeded reads, under the body faults (`llm.stream_cut`, `llm.invalid_response`
    /// and `network.body`).
    async fn play(
        &self,
        exchange: &Exchange,
        decoded: &Reads,
        timing: ReplayTiming,
        fault: Option<FaultKind>,
        rng: &mut DeterministicRng,
    ) -> HttpResponse {
        let recorded = &exchange.response;
        let mut timing_rng = rng.substream(request::REPLAY_TIMING);
        let gaps = gaps_ms(recorded.headers_ms, &decoded.reads, timing, &mut timing_rng);
        self.clock
            .sleep(Duration::from_millis(gaps.headers_ms))
            .await;
        let body_len = decoded.body_len;
        let reads = decoded.reads.clone();
        let body = timed_body(reads, gaps.read_ms, recorded.end, self.clock.clone());
        let body = match (fault, replay_cut_as(fault)) {
            (Some(kind), Some(as_network)) => {
                let left = rng
                    .substream(request::REPLAY_CUT)
                    .range_inclusive(0, body_len.saturating_sub(1) as u64);
                self.trace.emit(CassetteEvent::Cut {
                    fault: kind.name(),
                    after_bytes: left,
                });
                reads::cut(body, left as usize, as_network)
            }
            (_, None) | (None, Some(_)) => body,
        };
        let body = reads::split(body, rng.substream(request::READS), &self.env);
        HttpResponse {
            status: recorded.status,
            headers: recorded.headers.clone(),
            body: self.body_faults(body),
        }
    }
}

/// A fault that replaces the recorded answer, as the error the server answers with.
fn replaced_by(fault: Option<FaultKind>, rng: &mut DeterministicRng) -> Option<LlmError> {
    use crate::llm::{FAULT_RETRY_AFTER_MS_MAX, FAULT_RETRY_AFTER_MS_MIN};
    let kind = fault?;
    match kind.llm() {
        // A recording's content is what was recorded: `llm.wrong_content` leaves it as it
        // is over a cassette (documented in docs/guide.md); the cut ones apply in `play`.
        Some(LlmKind::StreamCut | LlmKind::InvalidResponse | LlmKind::WrongContent) => None,
        Some(LlmKind::Timeout) => Some(LlmError::Timeout {
            after_ms: REPLAY_TIMEOUT_STALL_MS,
        }),
        Some(LlmKind::RateLimit) => Some(LlmError::RateLimit {
            retry_after_ms: Some(
                rng.range_inclusive(FAULT_RETRY_AFTER_MS_MIN, FAULT_RETRY_AFTER_MS_MAX),
            ),
        }),
        Some(LlmKind::ServiceUnavailable) => Some(LlmError::ServiceUnavailable {
            status: Some(503),
            message: "the model is overloaded (simulated over a cassette)".into(),
        }),
        Some(LlmKind::ContextOverflow) => Some(LlmError::ContextOverflow {
            prompt_tokens: None,
            limit: None,
        }),
        Some(LlmKind::ContentFilter) => Some(LlmError::BadRequest {
            status: Some(400),
            message: "the prompt was filtered (content filter, simulated over a cassette)".into(),
        }),
        Some(LlmKind::ModelNotFound) => Some(LlmError::ModelNotFound {
            status: Some(404),
            message: "the model does not exist (simulated over a cassette)".into(),
        }),
        // The embeddings' kinds, and other domains': not drawn at `llm.call`.
        Some(
            LlmKind::EmbeddingWrongDimensions
            | LlmKind::EmbeddingTruncated
            | LlmKind::EmbeddingMissing,
        )
        | None => unreachable_kind(&LLM_CALL, kind),
    }
}

/// When the headers and each read arrive, in ms after the request.
struct Gaps {
    headers_ms: u64,
    /// The wait before each read, after the one before it (or the headers).
    read_ms: Vec<u64>,
}

/// The recorded offsets (the headers' and each of `reads`') as `timing` plays them (a
/// scaled time is scaled from the request, not gap by gap, so rounding never adds up).
fn gaps_ms(
    recorded_headers_ms: u64,
    reads: &[(Vec<u8>, u64)],
    timing: ReplayTiming,
    rng: &mut DeterministicRng,
) -> Gaps {
    let at = |ms: u64| -> u64 {
        match timing {
            ReplayTiming::Recorded | ReplayTiming::Jittered => ms,
            ReplayTiming::Instant => 0,
            ReplayTiming::Scaled { permille } => ms.saturating_mul(permille) / 1_000,
        }
    };
    let mut jitter = |gap_ms: u64| -> u64 {
        if timing != ReplayTiming::Jittered {
            return gap_ms;
        }
        let (low, high) = REPLAY_JITTER_PERMILLE_RANGE;
        gap_ms.saturating_mul(rng.range_inclusive(low, high)) / 1_000
    };
    let headers_ms = jitter(at(recorded_headers_ms));
    let mut before = recorded_headers_ms;
    let read_ms = reads
        .iter()
        .map(|(_, at_ms)| {
            let at_ms = (*at_ms).max(before);
            let gap = at(at_ms) - at(before);
            before = at_ms;
            jitter(gap)
        })
        .collect();
    Gaps {
        headers_ms,
        read_ms,
    }
}

/// The recorded reads, each after its wait, ending as the recording did.
fn timed_body(
    reads: Vec<(Vec<u8>, u64)>,
    waits_ms: Vec<u64>,
    end: BodyEnd,
    clock: crate::clock::SimClock,
) -> BodyStream {
    assert_eq!(reads.len(), waits_ms.len(), "one wait per recorded read");
    if reads.len() == 1 && waits_ms[0] == 0 && matches!(end, BodyEnd::Clean | BodyEnd::Dropped) {
        return whole_body(
            reads
                .into_iter()
                .next()
                .map(|(bytes, _)| bytes)
                .unwrap_or_default(),
        );
    }
    let items = reads
        .into_iter()
        .zip(waits_ms)
        .map(|((bytes, _), wait)| (bytes, wait));
    let played = futures::stream::iter(items).then(move |(bytes, wait_ms)| {
        let clock = clock.clone();
        async move {
            if wait_ms > 0 {
                clock.sleep(Duration::from_millis(wait_ms)).await;
            }
            Ok::<_, TransportError>(bytes)
        }
    });
    let ending: BodyStream = match end {
        BodyEnd::Clean | BodyEnd::Dropped => futures::stream::empty().boxed(),
        BodyEnd::Reset => futures::stream::iter([Err(TransportError::Reset {
            reason: "connection reset (as recorded)".into(),
        })])
        .boxed(),
        BodyEnd::Timeout => futures::stream::pending().boxed(),
    };
    played.chain(ending).boxed()
}

/// The network fault a replayed stream's cut stands for under `fault`: `llm.stream_cut`
/// a reset, `llm.invalid_response` a partial write; `None` for every other kind (they act
/// elsewhere, or not on a replayed body), each LLM kind listed so a new one is decided.
fn replay_cut_as(fault: Option<FaultKind>) -> Option<FaultKind> {
    match fault.and_then(FaultKind::llm) {
        Some(LlmKind::StreamCut) => Some(FaultKind::NetworkReset),
        Some(LlmKind::InvalidResponse) => Some(FaultKind::NetworkPartialWrite),
        Some(
            LlmKind::Timeout
            | LlmKind::RateLimit
            | LlmKind::ContextOverflow
            | LlmKind::ServiceUnavailable
            | LlmKind::ContentFilter
            | LlmKind::ModelNotFound
            | LlmKind::EmbeddingWrongDimensions
            | LlmKind::EmbeddingTruncated
            | LlmKind::EmbeddingMissing
            | LlmKind::WrongContent,
        )
        | None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str) -> RequestKey {
        RequestKey {
            method: "POST".into(),
            path: path.into(),
            body: String::new(),
        }
    }

    #[test]
    fn the_cursor_counts_each_exchange_served_under_its_key() {
        let mut state = ReplayState::default();
        state.use_up(key("/a"), 0, 2);
        state.use_up(key("/a"), 1, 2);
        state.use_up(key("/a"), 1, 2); // past the last, repeated
        assert_eq!(state.served, 3);
        assert_eq!(state.served_per_key[&key("/a")], 3);
        assert_eq!(state.used.len(), 2);
    }

    /// A planted cursor whose total and per-key counts disagree trips the invariant.
    #[test]
    #[should_panic(expected = "cassette cursor: served 2 but 1 by key")]
    fn counts_that_disagree_trip_the_invariant() {
        let mut state = ReplayState::default();
        state.use_up(key("/a"), 0, 2);
        state.served = 2;
        state.use_up(key("/a"), 1, 2);
    }

    /// An exchange past the cassette's end trips the precondition.
    #[test]
    #[should_panic(expected = "cassette cursor: exchange 2 of 2")]
    fn an_exchange_past_the_end_trips_the_precondition() {
        ReplayState::default().use_up(key("/a"), 2, 2);
    }
}
