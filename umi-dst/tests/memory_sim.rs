//! SimStorage and the memory checkers: conformance, each storage fault, memory under
//! LLM and storage faults checked for data loss, and checkers catching planted bugs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use umi_core::env::EnvironmentExt;
use umi_core::memory::{Memory, RecallOptions, RememberOptions};
use umi_core::storage::{InMemoryStorage, Note, Storage, StorageError, WriteBatch, conformance};
use umi_dst::checkers::memory::{
    MemoryModel, check_forgotten_not_recalled, check_memory, check_no_data_loss, forget_live_entity,
};
use umi_dst::doubles::{HookedStorage, WriteHook};
use umi_dst::{
    FaultConfig, FaultKind, SimConfig, SimEnvironment, SimStorage, Simulation, Violation, ensure,
};

fn note(id: &str) -> Note {
    Note {
        id: id.into(),
        text: format!("text of {id}"),
        created_at_ms: 1,
    }
}

/// Stores the note `id` through `storage` (a write the test needs acknowledged).
async fn store_note(storage: &SimStorage, id: &str) -> Result<(), Violation> {
    storage
        .apply(WriteBatch {
            notes: vec![note(id)],
            ..WriteBatch::default()
        })
        .await?;
    Ok(())
}

#[test]
fn sim_storage_passes_conformance() {
    Simulation::new(SimConfig::new(1))
        .try_run(async |sim| {
            conformance::check(&SimStorage::new(&sim))
                .await
                .map_err(Violation::new)
        })
        .unwrap();
}

#[test]
fn write_faults_write_nothing() {
    for kind in [FaultKind::StorageWriteFail, FaultKind::StorageDiskFull] {
        Simulation::new(
            SimConfig::new(1).with_fault(FaultConfig::always(kind).with_max_injections(1)),
        )
        .try_run(async |sim| {
            let storage = SimStorage::new(&sim);
            let failed = storage
                .apply(WriteBatch {
                    notes: vec![note("n1")],
                    ..WriteBatch::default()
                })
                .await;
            ensure!(
                failed.as_ref().is_err_and(StorageError::is_transient),
                "{kind}: {failed:?}"
            );
            ensure!(
                storage.get_note("n1").await.unwrap().is_none(),
                "{kind}: a failed write wrote"
            );
            ensure!(
                storage.ledger().is_empty(),
                "{kind}: only acknowledged writes are in the ledger"
            );
            store_note(&storage, "n1").await?;
            ensure!(
                storage.ledger().len() == 1,
                "{kind}: the retry is acknowledged"
            );
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn corruption_is_reported_never_returned() {
    Simulation::new(
        SimConfig::new(2)
            .with_fault(FaultConfig::always(FaultKind::StorageCorruption).with_max_injections(1)),
    )
    .try_run(async |sim| {
        let storage = SimStorage::new(&sim);
        store_note(&storage, "n1").await?;
        ensure!(
            storage.corrupted().contains("note:n1"),
            "{:?}",
            storage.corrupted()
        );
        let read = storage.get_note("n1").await;
        ensure!(
            read == Err(StorageError::Corruption {
                what: "note",
                id: "n1".into()
            }),
            "{read:?}"
        );
        let by_text = storage.notes_with_text("text of n1").await;
        ensure!(by_text.is_err(), "every read path checks: {by_text:?}");
        ensure!(
            storage.ledger()[0].corrupted.as_deref() == Some("note:n1"),
            "the ledger says what rotted"
        );
        Ok(())
    })
    .unwrap();
}

#[test]
fn read_delete_and_latency_faults() {
    let faults = [
        FaultConfig::always(FaultKind::StorageReadFail).with_max_injections(1),
        FaultConfig::always(FaultKind::StorageDeleteFail).with_max_injections(1),
    ];
    Simulation::new(SimConfig::new(3))
        .with_faults(faults)
        .try_run(async |sim| {
            let storage = SimStorage::new(&sim);
            store_note(&storage, "n1").await?;
            ensure!(
                matches!(
                    storage.get_note("n1").await,
                    Err(StorageError::ReadFailed { .. })
                ),
                "first read fails"
            );
            ensure!(
                storage.get_note("n1").await.unwrap().is_some(),
                "the next one works"
            );
            let delete = WriteBatch {
                delete_entities: vec!["x".into()],
                ..WriteBatch::default()
            };
            ensure!(
                matches!(
                    storage.apply(delete).await,
                    Err(StorageError::DeleteFailed { .. })
                ),
                "delete fails"
            );
            Ok(())
        })
        .unwrap();
    Simulation::new(SimConfig::new(4).with_fault(FaultConfig::always(FaultKind::StorageLatency)))
        .try_run(async |sim| {
            let storage = SimStorage::new(&sim);
            store_note(&storage, "n1").await?;
            ensure!(
                storage.get_note("n1").await.unwrap().is_some(),
                "slow but successful"
            );
            let took = sim.env().elapsed();
            ensure!(
                took >= Duration::from_millis(10) && took <= Duration::from_millis(4_000),
                "{took:?}"
            );
            Ok(())
        })
        .unwrap();
}

fn texts(sim: &SimEnvironment) -> Vec<String> {
    let mut rng = sim.rng("workload.texts");
    let people = ["Alice", "Bob", "Maria", "Chen", "Priya"];
    let places = ["Acme Corp", "Initech", "Paris", "Oslo", "the Berlin Summit"];
    let verbs = ["joined", "left", "visited", "wrote about", "moved to"];
    (0..12)
        .map(|_| {
            format!(
                "{} {} {}.",
                rng.choose(&people).unwrap(),
                rng.choose(&verbs).unwrap(),
                rng.choose(&places).unwrap()
            )
        })
        .collect()
}

/// The memory under LLM and storage faults: whatever the faults did, after healing,
/// every acknowledged remember is there, nothing forgotten comes back, and every link
/// points at an entity.
#[test]
fn memory_keeps_every_acknowledged_write_under_faults() {
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let degraded = Arc::new(AtomicUsize::new(0));
    let faults = [
        FaultConfig::chance(FaultKind::LlmRateLimit, 0.1),
        FaultConfig::chance(FaultKind::LlmInvalidResponse, 0.1),
        FaultConfig::chance(FaultKind::LlmWrongContent, 0.15),
        FaultConfig::chance(FaultKind::LlmStreamCut, 0.1),
        FaultConfig::chance(FaultKind::LlmTimeout, 0.05),
        FaultConfig::chance(FaultKind::StorageWriteFail, 0.1),
        FaultConfig::chance(FaultKind::StorageReadFail, 0.1),
        FaultConfig::chance(FaultKind::StorageLatency, 0.2),
        FaultConfig::chance(FaultKind::StorageCorruption, 0.03),
        FaultConfig::chance(FaultKind::StorageDeleteFail, 0.2),
    ];
    let (acked, degraded_count) = (acknowledged.clone(), degraded.clone());
    Simulation::from_env()
        .with_faults(faults)
        .with_seeds(0..64)
        .run(move |sim| {
            let (acked, degraded_count) = (acked.clone(), degraded_count.clone());
            async move {
                let storage = Arc::new(SimStorage::new(&sim));
                let memory = Memory::new(storage.clone(), sim.env()).with_llm(sim.llm());
                let mut model = MemoryModel::new();
                let env = sim.env();
                for (step, text) in texts(&sim).iter().enumerate() {
                    if let Ok(outcome) = memory.remember(text, RememberOptions::default()).await {
                        degraded_count.fetch_add(outcome.degradations.len(), Ordering::Relaxed);
                        model.remembered(&outcome);
                    }
                    if step % 3 == 2 {
                        let _ = memory
                            .recall("where did Alice go?", RecallOptions::default())
                            .await;
                    }
                    if step % 4 == 3 {
                        let pick = env.random_in_range("workload.forget", 0, 100) as usize;
                        forget_live_entity(&memory, &mut model, pick).await;
                    }
                }
                acked.fetch_add(model.acknowledged().len(), Ordering::Relaxed);
                sim.faults().heal();
                let queries = ["Alice", "where is Bob?", "Paris"];
                check_memory(&memory, &model, &queries, &storage.corrupted()).await
            }
        });
    let (acknowledged, degraded) = (
        acknowledged.load(Ordering::Relaxed),
        degraded.load(Ordering::Relaxed),
    );
    assert!(
        acknowledged > 64 * 6,
        "most remembers are acknowledged despite faults: {acknowledged}"
    );
    assert!(degraded > 20, "faults forced degradations: {degraded}");
}

/// A planted bug: the third batch is acknowledged without being written.
struct LyingWrites {
    batches: AtomicUsize,
}

#[async_trait]
impl WriteHook for LyingWrites {
    async fn apply(&self, inner: &dyn Storage, batch: WriteBatch) -> Result<(), StorageError> {
        if self.batches.fetch_add(1, Ordering::Relaxed) == 2 {
            return Ok(());
        }
        inner.apply(batch).await
    }
}

#[test]
fn checkers_catch_a_lost_write_and_a_forget_that_did_not() {
    let error = Simulation::new(SimConfig::new(5))
        .try_run(async |sim| {
            let storage = Arc::new(HookedStorage::new(
                InMemoryStorage::new(),
                LyingWrites {
                    batches: AtomicUsize::new(0),
                },
            ));
            let memory = Memory::new(storage.clone(), sim.env()).with_llm(sim.llm());
            let mut model = MemoryModel::new();
            for text in texts(&sim).iter().take(4) {
                model.remembered(
                    &memory
                        .remember(text, RememberOptions::default())
                        .await
                        .unwrap(),
                );
            }
            check_no_data_loss(&memory, &model, &Default::default()).await
        })
        .unwrap_err();
    assert!(error.to_string().contains("lost write"), "{error}");

    let error = Simulation::new(SimConfig::new(6))
        .try_run(async |sim| {
            let memory =
                Memory::new(Arc::new(InMemoryStorage::new()), sim.env()).with_llm(sim.llm());
            let mut model = MemoryModel::new();
            let outcome = memory
                .remember("Alice joined Acme Corp.", RememberOptions::default())
                .await
                .unwrap();
            model.remembered(&outcome);
            // The planted bug: the model believes a forget that never happened.
            model.forgot(&outcome.entities[0].id);
            check_forgotten_not_recalled(&memory, &model, &["Alice"], &Default::default()).await
        })
        .unwrap_err();
    assert!(error.to_string().contains("forgotten entity"), "{error}");
}
