//! Workloads the self-tests run.

use std::collections::BTreeMap;
use std::time::Duration;

use sha2::{Digest, Sha256};
use umi_core::env::EnvironmentExt;
use umi_core::llm::{CompletionRequest, LanguageModel, Message};
use umi_dst::fault::point;
use umi_dst::{FaultKind, SimEnvironment, Violation, ensure};

/// A toy key-value store with a planted bug: when a write fails it still acknowledges
/// the write. A sweep over seeds with `storage.write_fail` on must find it.
pub(crate) struct LossyStore {
    sim: SimEnvironment,
    data: BTreeMap<u64, u64>,
}

impl LossyStore {
    pub(crate) fn new(sim: SimEnvironment) -> Self {
        Self {
            sim,
            data: BTreeMap::new(),
        }
    }

    /// Writes `value` under `key`. The planted bug: a failed write returns `Ok`.
    pub(crate) async fn put(&mut self, key: u64, value: u64) -> Result<(), &'static str> {
        let env = self.sim.env();
        env.sleep(Duration::from_millis(env.random_in_range(
            "store.latency",
            1,
            20,
        )))
        .await;
        if self.sim.fault(&point::STORAGE_WRITE) == Some(FaultKind::StorageWriteFail) {
            env.record("store.write_failed", format_args!("key={key}"));
            return Ok(()); // BUG (planted): the failure is swallowed and the write acknowledged.
        }
        self.data.insert(key, value);
        Ok(())
    }

    pub(crate) fn get(&self, key: u64) -> Option<u64> {
        self.data.get(&key).copied()
    }
}

/// Writes 20 keys and checks every acknowledged write can be read back.
pub(crate) async fn lossy_store_workload(sim: SimEnvironment) -> Result<(), Violation> {
    let mut store = LossyStore::new(sim.clone());
    let mut acknowledged = Vec::new();
    for key in 0..20 {
        let value = sim.env().random_u64("workload.values");
        if store.put(key, value).await.is_ok() {
            acknowledged.push((key, value));
        }
    }
    for (key, value) in acknowledged {
        ensure!(
            store.get(key) == Some(value),
            "acknowledged write of key {key} was lost"
        );
    }
    Ok(())
}

/// A busy run: concurrent tasks sleeping random amounts, drawing from several streams,
/// reading the wall clock, hitting faults and recording events. Its trace hash is what
/// the determinism tests compare.
pub(crate) async fn busy_workload(sim: SimEnvironment) -> Result<(), Violation> {
    let mut tasks = Vec::new();
    for worker in 0..4u64 {
        let sim = sim.clone();
        tasks.push(tokio::spawn(async move {
            let env = sim.env();
            let mut total = 0u64;
            for step in 0..25u64 {
                let wait = env.random_in_range(&format!("worker.{worker}"), 1, 500);
                env.sleep(Duration::from_millis(wait)).await;
                if let Some(kind) = sim.fault(&point::LLM_CALL) {
                    env.record(
                        "worker.fault",
                        format_args!("worker={worker} step={step} {kind}"),
                    );
                }
                total = total.wrapping_add(env.random_u64("shared"));
                if step % 5 == 0 {
                    let prompt =
                        format!("worker {worker} step {step}: what did Alice tell Acme Corp?");
                    let request = CompletionRequest::new(vec![Message::user(prompt)]);
                    let answer = match sim.llm().complete(&request).await {
                        Ok(response) => {
                            format!("{} {}", response.finish_reason.as_str(), response.text)
                        }
                        Err(error) => error.to_string(),
                    };
                    let digest: String = Sha256::digest(answer.as_bytes())[..8]
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    env.record(
                        "worker.llm",
                        format_args!("worker={worker} step={step} answer={digest}"),
                    );
                }
                env.record(
                    "worker.step",
                    format_args!("worker={worker} step={step} wall={}", env.unix_time_ms()),
                );
            }
            total
        }));
    }
    let mut sum = 0u64;
    for task in tasks {
        sum = sum.wrapping_add(task.await?);
    }
    sim.env().record("workload.done", format_args!("sum={sum}"));
    Ok(())
}
