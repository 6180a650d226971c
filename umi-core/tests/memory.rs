//! The memory with scripted models: extraction, evolution, rewrite, each failure path,
//! forgetting, bad input, and SQLite durability.

use std::sync::Arc;

use serde_json::json;
use umi_core::llm::{CompletionRequest, LlmError};
use umi_core::memory::tasks::{
    TASK_DETECT_EVOLUTION, TASK_EXTRACT_ENTITIES, TASK_REWRITE_QUERY, evolution_input,
    extraction_input,
};
use umi_core::memory::{
    Degradation, Memory, MemoryError, RecallOptions, RememberOptions, RewriteMode,
};
use umi_core::storage::EntityType;
use umi_core::storage::EvolutionType;
use umi_core::storage::InMemoryStorage;
use umi_dst::doubles::{FnLanguageModel, Turn};
use umi_dst::{SimConfig, SimEnvironment, Simulation, Violation, ensure};

use crate::support::TempDir;

/// A model that extracts capitalized words as people, rewrites questions into their
/// capitalized words, and calls every evolution an update of the first candidate.
fn helpful_model() -> FnLanguageModel {
    FnLanguageModel::new(
        |request: &CompletionRequest, _| match request.task.as_deref() {
            Some(TASK_EXTRACT_ENTITIES) => {
                let text = extraction_input(request).unwrap();
                let entities: Vec<_> = text
                .split_whitespace()
                .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
                .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
                .map(|w| json!({"name": w, "type": "person", "content": text.clone(), "confidence": 0.9}))
                .collect();
                Turn::text(json!({"entities": entities}).to_string())
            }
            Some(TASK_DETECT_EVOLUTION) => {
                let (_, candidates) = evolution_input(request).unwrap();
                Turn::text(json!({"type": "update", "reason": "newer", "confidence": 0.8, "related_id": candidates[0].id}).to_string())
            }
            Some(TASK_REWRITE_QUERY) => Turn::text(r#"["Acme", "employer"]"#),
            _ => Turn::text("?"),
        },
    )
}

fn memory(sim: &SimEnvironment, model: FnLanguageModel) -> Memory {
    Memory::new(Arc::new(InMemoryStorage::new()), sim.env()).with_llm(Arc::new(model))
}

#[test]
fn remember_extracts_and_links_evolutions() {
    Simulation::new(SimConfig::new(7)).run(async |sim| {
        let memory = memory(&sim, helpful_model());
        let first = memory
            .remember("Alice works at Initech.", RememberOptions::default())
            .await
            .unwrap();
        ensure!(
            first
                .entities
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                == ["Alice", "Initech"],
            "{:?}",
            first.entities
        );
        ensure!(
            first.evolutions.is_empty() && first.degradations.is_empty(),
            "nothing to evolve from yet"
        );
        let second = memory
            .remember("Alice moved to Acme.", RememberOptions::default())
            .await
            .unwrap();
        let link = second
            .evolutions
            .first()
            .ok_or_else(|| Violation::new("no evolution link"))?;
        ensure!(link.evolution_type == EvolutionType::Update, "{link:?}");
        let alice_then = &first.entities[0];
        let alice_now = &second.entities[0];
        ensure!(
            link.from_id == alice_now.id && link.to_id == alice_then.id,
            "links the new Alice to the old one"
        );
        let stored = memory.storage().links_of(&alice_then.id).await.unwrap();
        ensure!(stored == vec![link.clone()], "the link is stored");
        ensure!(
            memory
                .notes_with_text("Alice moved to Acme.")
                .await
                .unwrap()
                == vec![second.note.clone()],
            "the note is kept"
        );
        Ok(())
    });
}

#[test]
fn failed_extraction_keeps_the_text_as_a_note() {
    let failing = |name: &str| match name {
        "model error" => FnLanguageModel::new(|_, _| {
            Turn::refuse(LlmError::ServiceUnavailable {
                status: Some(503),
                message: "down".into(),
            })
        }),
        "garbage answer" => {
            FnLanguageModel::new(|_, _| Turn::text("sure! here are the entities: Alice"))
        }
        _ => FnLanguageModel::new(|_, _| Turn::text("[\"Alice\"]")),
    };
    for name in ["model error", "garbage answer", "wrong shape"] {
        Simulation::new(SimConfig::new(7)).run(async |sim| {
            let memory = memory(&sim, failing(name));
            let text = "Alice said \"hi\" to Bob.";
            let outcome = memory
                .remember(text, RememberOptions::default())
                .await
                .unwrap();
            ensure!(
                outcome.entities.len() == 1 && outcome.entities[0].entity_type == EntityType::Note,
                "{name}: {:?}",
                outcome.entities
            );
            ensure!(
                outcome.entities[0].content == text,
                "{name}: the note holds the text"
            );
            ensure!(
                matches!(
                    outcome.degradations[..],
                    [Degradation::ExtractionFailed { .. }]
                ),
                "{name}: {:?}",
                outcome.degradations
            );
            ensure!(
                memory.notes_with_text(text).await.unwrap().len() == 1,
                "{name}: nothing the user said is lost"
            );
            let traced = sim
                .trace()
                .tail()
                .iter()
                .any(|e| e.kind == "memory.degraded");
            ensure!(traced, "{name}: the degradation is in the trace");
            Ok(())
        });
    }
}

#[test]
fn failed_evolution_is_skipped_and_recorded() {
    Simulation::new(SimConfig::new(7)).run(async |sim| {
        let model = FnLanguageModel::new(|request, _| match request.task.as_deref() {
            Some(TASK_DETECT_EVOLUTION) => Turn::text(
                "{\"type\": \"update\", \"reason\": \"x\", \"confidence\": 0.5, \"related_id\": \"made-up\"}",
            ),
            _ => helpful_model_answer(request),
        });
        let memory = memory(&sim, model);
        memory
            .remember("Alice codes.", RememberOptions::default())
            .await
            .unwrap();
        let outcome = memory
            .remember("Alice sleeps.", RememberOptions::default())
            .await
            .unwrap();
        ensure!(
            outcome.evolutions.is_empty(),
            "an invalid related_id makes no link"
        );
        ensure!(
            matches!(&outcome.degradations[..], [Degradation::EvolutionSkipped { entity, .. }] if entity == "Alice"),
            "{:?}",
            outcome.degradations
        );
        ensure!(outcome.entities.len() == 1, "the entity is still stored");
        Ok(())
    });
}

fn helpful_model_answer(request: &CompletionRequest) -> Turn {
    let text = extraction_input(request).unwrap_or_default();
    let names: Vec<_> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
        .map(|w| json!({"name": w, "type": "person", "content": text.clone(), "confidence": 0.9}))
        .collect();
    Turn::text(json!({"entities": names}).to_string())
}

#[test]
fn recall_fuses_rewritten_variants() {
    Simulation::new(SimConfig::new(7)).run(async |sim| {
        let memory = memory(&sim, helpful_model());
        memory
            .remember(
                "Alice joined Acme.",
                RememberOptions::default().with_evolution(false),
            )
            .await
            .unwrap();
        memory
            .remember(
                "Bob likes tea.",
                RememberOptions::default().with_evolution(false),
            )
            .await
            .unwrap();
        // "employer" matches nothing; the rewrite adds "Acme", which does.
        let fast = memory
            .recall(
                "employer",
                RecallOptions::default().with_rewrite(RewriteMode::Never),
            )
            .await
            .unwrap();
        ensure!(fast.hits.is_empty() && fast.variants.is_empty(), "{fast:?}");
        let fused = memory
            .recall("who is the employer?", RecallOptions::default())
            .await
            .unwrap();
        ensure!(
            fused.variants == ["Acme", "employer"],
            "{:?}",
            fused.variants
        );
        let names: Vec<&str> = fused.hits.iter().map(|h| h.entity.name.as_str()).collect();
        ensure!(names.first() == Some(&"Acme"), "{names:?}");
        ensure!(!names.contains(&"Bob"), "{names:?}");
        Ok(())
    });
}

#[test]
fn failed_rewrite_falls_back_to_fast_results() {
    Simulation::new(SimConfig::new(7)).run(async |sim| {
        let model = FnLanguageModel::new(|request, _| match request.task.as_deref() {
            Some(TASK_REWRITE_QUERY) => Turn::text("{\"queries\": [\"x\"]}"),
            _ => helpful_model_answer(request),
        });
        let memory = memory(&sim, model);
        memory
            .remember("Alice joined Acme.", RememberOptions::default())
            .await
            .unwrap();
        let outcome = memory
            .recall("where is Alice?", RecallOptions::default())
            .await
            .unwrap();
        ensure!(
            outcome.hits.iter().any(|h| h.entity.name == "Alice"),
            "fast results still come back"
        );
        ensure!(
            matches!(
                outcome.degradations[..],
                [Degradation::RewriteFailed { .. }]
            ),
            "{:?}",
            outcome.degradations
        );
        Ok(())
    });
}

#[test]
fn forgotten_entities_are_never_recalled() {
    Simulation::new(SimConfig::new(7)).run(async |sim| {
        let memory = memory(&sim, helpful_model());
        memory
            .remember("Alice joined Acme.", RememberOptions::default())
            .await
            .unwrap();
        let second = memory
            .remember("Alice left Acme.", RememberOptions::default())
            .await
            .unwrap();
        let alice = &second.entities[0];
        ensure!(memory.forget(&alice.id).await.unwrap(), "it existed");
        ensure!(
            !memory.forget(&alice.id).await.unwrap(),
            "forgetting twice says so"
        );
        let recalled = memory
            .recall(
                "Alice",
                RecallOptions::default()
                    .with_limit(50)
                    .with_rewrite(RewriteMode::Always),
            )
            .await
            .unwrap();
        ensure!(
            recalled.hits.iter().all(|h| h.entity.id != alice.id),
            "a forgotten entity came back"
        );
        ensure!(
            memory
                .storage()
                .links_of(&alice.id)
                .await
                .unwrap()
                .is_empty(),
            "its links are gone"
        );
        ensure!(
            memory.get(&alice.id).await.unwrap().is_none(),
            "get says it is gone"
        );
        Ok(())
    });
}

#[test]
fn bad_input_is_a_typed_error() {
    Simulation::new(SimConfig::new(7)).run(async |sim| {
        let memory = memory(&sim, helpful_model());
        ensure!(
            memory.remember("  ", RememberOptions::default()).await == Err(MemoryError::EmptyText),
            "empty text"
        );
        let long = "x".repeat(umi_core::constants::MEMORY_TEXT_BYTES_MAX + 1);
        ensure!(
            matches!(
                memory.remember(&long, RememberOptions::default()).await,
                Err(MemoryError::TextTooLong { .. })
            ),
            "long text"
        );
        ensure!(
            memory.recall("", RecallOptions::default()).await == Err(MemoryError::EmptyQuery),
            "empty query"
        );
        let long_query = "q".repeat(umi_core::constants::MEMORY_QUERY_BYTES_MAX + 1);
        ensure!(
            matches!(
                memory.recall(&long_query, RecallOptions::default()).await,
                Err(MemoryError::QueryTooLong { .. })
            ),
            "long query"
        );
        let zero = RecallOptions::default().with_limit(0);
        let error = memory.recall("x", zero).await.unwrap_err();
        ensure!(error.to_string().contains("limit 0"), "{error}");
        ensure!(
            matches!(
                memory.list(0, 0).await,
                Err(MemoryError::InvalidOptions { .. })
            ),
            "list limit 0"
        );
        Ok(())
    });
}

#[test]
fn ids_and_timestamps_come_from_the_environment() {
    let outcomes = std::sync::Mutex::new(Vec::new());
    for _ in 0..2 {
        Simulation::new(SimConfig::new(3))
            .try_run(|sim| {
                let outcomes = &outcomes;
                async move {
                    let outcome = memory(&sim, helpful_model())
                        .remember("Alice.", RememberOptions::default())
                        .await
                        .unwrap();
                    outcomes.lock().unwrap().push(outcome);
                    Ok(())
                }
            })
            .unwrap();
    }
    let outcomes = outcomes.into_inner().unwrap();
    assert_eq!(
        outcomes[0], outcomes[1],
        "same seed, same ids and timestamps"
    );
    assert_eq!(
        outcomes[0].note.created_at_ms,
        umi_dst::constants::SIM_EPOCH_UNIX_MS_DEFAULT
    );
}

#[tokio::test]
async fn sqlite_memory_survives_reopening() {
    let dir = TempDir::new("memory-durable");
    let path = dir.file("memory.db");
    let remembered = {
        let memory = Memory::open(&path).unwrap();
        memory
            .remember("Alice's birthday is on 3 May.", RememberOptions::default())
            .await
            .unwrap()
    };
    let memory = Memory::open(&path).unwrap();
    let recalled = memory
        .recall("birthday", RecallOptions::default())
        .await
        .unwrap();
    assert_eq!(recalled.hits.len(), 1);
    assert_eq!(recalled.hits[0].entity, remembered.entities[0]);
    assert_eq!(
        memory
            .notes_with_text("Alice's birthday is on 3 May.")
            .await
            .unwrap(),
        vec![remembered.note]
    );
}

#[test]
fn opening_a_file_that_is_not_a_memory_names_it() {
    let dir = TempDir::new("memory-not-ours");
    let path = dir.file("diary.txt");
    std::fs::write(&path, "dear diary").unwrap();
    let error = Memory::open(&path).unwrap_err();
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "dear diary");
}
