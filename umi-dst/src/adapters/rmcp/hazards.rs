//! What rmcp does with time and randomness, and so what the determinism check says of a
//! run that uses it ([`CLIENT`]). Read from rmcp 3.11's source, on the client's path
//! (`serve_client`, `Peer`'s requests, the Streamable HTTP worker and its SSE reader):
//! - **its timers are tokio's**: the reconnect backoff (`ExponentialBackoff`, 1 s
//!   doubling, no jitter), the 5 s control-request, session-recovery and session-cleanup
//!   timeouts, the 50 ms drain after a response all use `tokio::time`, which a simulation
//!   pauses: they are simulated time, and deterministic;
//! - **request ids** count from 0 per connection (`AtomicU32RequestIdProvider`), so
//!   they are the same in every run; no UUIDs or `rand` on the client path (the
//!   features that bring them are off);
//! - **unbiased selects**: its service loop, its HTTP worker loop and its SSE readers
//!   use `tokio::select!` without `biased;`, so when two of their events are ready at
//!   once the order comes from tokio's per-runtime RNG, which tokio seeds from OS
//!   randomness. A sequential client rarely has two ready together; a run with many
//!   requests in flight may order their handling differently run to run;
//! - **the wall clock** measures the client's response cache TTLs
//!   (`std::time::Instant::now` in `Peer::cached_response` and `list_all_*`): nothing is
//!   cached unless the server sends `ttlMs` (Umi's does not) or the client sets a
//!   default TTL, but with either, whether a repeated list reaches the server depends on
//!   real time;
//! - **hash order**: rmcp keeps custom headers in a `HashMap` (the adapter sends them
//!   sorted by name, so the bytes do not change) and the requests awaiting a stream
//!   response in a `HashSet`, whose order decides which request hears of a session's
//!   re-initialization first.

/// rmcp as the determinism check knows it (see above): a client built over
/// this adapter notes it in the run, and a divergence names these hazards where they fit.
pub static CLIENT: crate::adapters::foreign::ForeignClient =
    crate::adapters::foreign::ForeignClient {
        name: "rmcp 3.11",
        hazards: &[
            crate::adapters::foreign::Hazard {
                source: "tokio::select! without `biased;` in rmcp's service loop, its Streamable \
                     HTTP worker and its SSE readers: two events ready at once are taken in \
                     an order from tokio's runtime RNG, seeded from OS randomness",
                effect: crate::adapters::foreign::Effect::Order,
            },
            crate::adapters::foreign::Hazard {
                source: "the requests awaiting a stream response are kept in a hash set: after a session \
                     is re-initialized, rmcp fails them in hash order",
                effect: crate::adapters::foreign::Effect::Order,
            },
            crate::adapters::foreign::Hazard {
                source: "the client's response cache (Peer::cached_response, list_all_*) measures \
                     TTLs with std::time::Instant::now: with a server ttlMs or a default TTL, \
                     whether a repeated list reaches the server depends on the wall clock",
                effect: crate::adapters::foreign::Effect::Timing,
            },
        ],
    };
