//! Canary `canary_cassette_drift`: `cassette_agent`'s workload with a planted bug that
//! only a retry shows: a transport that stamps the attempt number into the body of a
//! request it has sent before (`"metadata": {"attempt": 2}`), as a hand-rolled retry
//! wrapper might. A fault-free run never resends, so it matches the cassette; the first
//! 429 or cut turn makes the agent's retry leave the recorded conversation, and
//! invariant 1 of `cassette_agent` (no request misses the cassette) must catch it, with
//! the miss naming `$.metadata` as the path where the request parted from the
//! recording. `dst minimize` shrinks a failing seed's faults to the one that caused the
//! retry.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use umi_core::llm::transport::{HttpRequest, HttpResponse, Transport, TransportError};

use crate::cassette_agent::{CassetteAgent, run_over};

/// The canary.
#[umi_dst::scenario(
    goal = "a retry that changes its request is caught as a miss of the recorded conversation",
    faults = CassetteAgent.faults(),
    marks = ["cassette.replay", "cassette.miss"],
    canary,
    run = |sim| run_over(sim, |inner| Arc::new(AttemptStamping::new(inner))),
    rank = 220,
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CanaryCassetteDrift;

/// The planted bug: a request sent again carries its attempt number in its body.
#[derive(Debug)]
struct AttemptStamping {
    inner: Arc<dyn Transport>,
    /// Times each body was sent, by its bytes.
    sent: Mutex<BTreeMap<Vec<u8>, u64>>,
}

impl AttemptStamping {
    fn new(inner: Arc<dyn Transport>) -> Self {
        Self {
            inner,
            sent: Mutex::new(BTreeMap::new()),
        }
    }
}

#[async_trait]
impl Transport for AttemptStamping {
    async fn send(&self, mut request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let attempt = {
            let mut sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
            let count = sent.entry(request.body.clone()).or_insert(0);
            *count += 1;
            *count
        };
        if attempt > 1
            && let Ok(mut body) = serde_json::from_slice::<serde_json::Value>(&request.body)
        {
            body["metadata"] = serde_json::json!({"attempt": attempt});
            request.body = umi_core::canonical_json::to_vec(&body);
        }
        self.inner.send(request).await
    }
}
