//! Helpers shared by the integration tests.

use proptest::test_runner::{Config, RngSeed};

/// A proptest config with `cases` cases and a fixed seed (`DST_SEED` when set), so a
/// property failure in CI replays locally with the same inputs.
pub(crate) fn proptest_config(cases: u32) -> Config {
    let seed = std::env::var("DST_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0x0051_D0C5);
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    }
}

/// SplitMix64: a tiny deterministic generator for test-side choices (where to split a
/// fragment), driven by a proptest-generated seed.
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }
}

/// A directory under the system temp dir, removed when dropped.
pub(crate) struct TempDir(pub(crate) std::path::PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        let path = std::env::temp_dir().join(format!("umi-core-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a temp dir");
        Self(path)
    }

    pub(crate) fn file(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Replays one recorded HTTP response (status line, headers, blank line, body), in chunks
/// of `chunk` bytes, and logs the requests it receives.
#[derive(Debug)]
pub(crate) struct FixtureTransport {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    chunk: usize,
    pub(crate) requests: std::sync::Mutex<Vec<umi_core::llm::transport::HttpRequest>>,
}

impl FixtureTransport {
    /// The fixture `tests/fixtures/<provider>/<name>.http`.
    pub(crate) fn load(provider: &str, name: &str, chunk: usize) -> Self {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/{provider}/{name}.http"));
        let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Self::parse(&raw, chunk)
    }

    /// A response from raw HTTP bytes (headers up to the first blank line).
    pub(crate) fn parse(raw: &[u8], chunk: usize) -> Self {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|i| (i, 4))
            .or_else(|| raw.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
        let (head, body) = match split {
            Some((index, gap)) => (&raw[..index], raw[index + gap..].to_vec()),
            None => (raw, Vec::new()),
        };
        let head = String::from_utf8_lossy(head);
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(200);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Self {
            status,
            headers,
            body,
            chunk: chunk.max(1),
            requests: std::sync::Mutex::default(),
        }
    }
}

#[async_trait::async_trait]
impl umi_core::llm::transport::Transport for FixtureTransport {
    async fn send(
        &self,
        request: umi_core::llm::transport::HttpRequest,
    ) -> Result<umi_core::llm::transport::HttpResponse, umi_core::llm::transport::TransportError>
    {
        use futures::StreamExt;
        self.requests.lock().unwrap().push(request);
        let chunks: Vec<Result<Vec<u8>, umi_core::llm::transport::TransportError>> = self
            .body
            .chunks(self.chunk)
            .map(|c| Ok(c.to_vec()))
            .collect();
        Ok(umi_core::llm::transport::HttpResponse {
            status: self.status,
            headers: self.headers.clone(),
            body: futures::stream::iter(chunks).boxed(),
        })
    }
}

/// Runs `body` with a fresh simulated environment (seed 1, paused time, wall clock at
/// the simulation epoch 2024-01-01T00:00:00Z) under the simulation runner's guards.
pub(crate) fn in_sim<T>(body: impl AsyncFnOnce(umi_dst::SimEnvironment) -> T) -> T {
    umi_dst::Simulation::new(umi_dst::SimConfig::new(1)).block_on(body)
}
