//! `remember`: extract, detect evolutions, write once.

use std::sync::Arc;

use super::Memory;
use super::error::{Degradation, MemoryError};
use super::tasks::{
    EvolutionCandidate, EvolutionSubject, ExtractedEntity, evolution_request, extraction_request,
    parse_evolution, parse_extraction,
};
use crate::constants::{
    ENTITY_CONTENT_BYTES_MAX, EVOLUTION_CANDIDATES_MAX, EVOLUTION_DETECTIONS_MAX,
    MEMORY_TEXT_BYTES_MAX,
};
use crate::env::EnvironmentExt;
use crate::llm::LanguageModel;
use crate::storage::EntityType;
use crate::storage::EvolutionType;
use crate::storage::{Entity, EntityVector, EvolutionLink, Note, StorageError, WriteBatch};

/// What `remember` should do: `RememberOptions::default()` (extraction and evolution
/// detection on), then `with_extraction` and `with_evolution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RememberOptions {
    /// Extract entities with the model (otherwise keep the text as one note entity).
    pub extract: bool,
    /// Detect evolutions against existing entities.
    pub detect_evolution: bool,
}

impl Default for RememberOptions {
    fn default() -> Self {
        Self {
            extract: true,
            detect_evolution: true,
        }
    }
}

impl RememberOptions {
    /// Whether the model extracts entities (otherwise the text is kept as one note
    /// entity).
    pub const fn with_extraction(mut self, extract: bool) -> Self {
        self.extract = extract;
        self
    }

    /// Whether evolutions against existing entities are detected.
    pub const fn with_evolution(mut self, detect_evolution: bool) -> Self {
        self.detect_evolution = detect_evolution;
        self
    }
}

/// What `remember` stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RememberOutcome {
    /// The raw note.
    pub note: Note,
    /// The entities stored.
    pub entities: Vec<Entity>,
    /// The evolution links stored.
    pub evolutions: Vec<EvolutionLink>,
    /// The entity vectors stored (none without an embedder, or when embedding failed).
    pub vectors: Vec<EntityVector>,
    /// What was done instead of failing.
    pub degradations: Vec<Degradation>,
}

/// The records of one `remember`, but its links.
struct Records<'a> {
    note: &'a Note,
    entities: &'a [Entity],
    vectors: &'a [EntityVector],
}

/// The start of `text`, at most `bytes` bytes, cut at a char boundary.
fn cut(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl Memory {
    /// Remembers `text`: see the module docs of [`crate::memory`].
    pub async fn remember(
        &self,
        text: &str,
        options: RememberOptions,
    ) -> Result<RememberOutcome, MemoryError> {
        check_text(text)?;
        let now_ms = self.env.unix_time_ms();
        let note = Note {
            id: self.env.random_id("memory.ids"),
            text: text.to_owned(),
            created_at_ms: now_ms,
        };
        let mut degradations = Vec::new();
        let entities = self
            .entities_of(&note, options, now_ms, &mut degradations)
            .await;
        let mut evolutions = self
            .evolutions_of(&entities, options, now_ms, &mut degradations)
            .await;
        let vectors = self.vectors_of(&entities, &mut degradations).await;
        let records = Records {
            note: &note,
            entities: &entities,
            vectors: &vectors,
        };
        self.store(records, &mut evolutions, &mut degradations)
            .await?;
        self.env.record(
            "memory.remember",
            format_args!(
                "note={} entities={} evolutions={} degraded={}",
                note.id,
                entities.len(),
                evolutions.len(),
                degradations.len()
            ),
        );
        Ok(RememberOutcome {
            note,
            entities,
            evolutions,
            vectors,
            degradations,
        })
    }

    /// The entities `note` yields: those the model extracts, or, when there is no model,
    /// extraction is off or it failed (a degradation), the note itself as one entity.
    async fn entities_of(
        &self,
        note: &Note,
        options: RememberOptions,
        now_ms: u64,
        degradations: &mut Vec<Degradation>,
    ) -> Vec<Entity> {
        let extracted = match (&self.llm, options.extract) {
            (Some(llm), true) => match extract(llm.as_ref(), &note.text).await {
                Ok(entities) => Some(entities),
                Err(error) => {
                    self.env.record(
                        "memory.degraded",
                        format_args!("extraction_failed: {error}"),
                    );
                    self.env.cover("memory.note_after_extraction_failure");
                    degradations.push(Degradation::ExtractionFailed { error });
                    None
                }
            },
            _ => None,
        };
        match extracted {
            Some(found) => found
                .into_iter()
                .map(|e| self.entity(e.name, e.entity_type, e.content, e.confidence, note, now_ms))
                .collect(),
            None => {
                let name = format!("Note_{}", &note.id[..8]);
                let content = cut(&note.text, ENTITY_CONTENT_BYTES_MAX).to_owned();
                vec![self.entity(name, EntityType::Note, content, 1.0, note, now_ms)]
            }
        }
    }

    /// The evolution links the model finds from `entities` (at most
    /// [`EVOLUTION_DETECTIONS_MAX`] detections); a failed detection is skipped (a
    /// degradation).
    async fn evolutions_of(
        &self,
        entities: &[Entity],
        options: RememberOptions,
        now_ms: u64,
        degradations: &mut Vec<Degradation>,
    ) -> Vec<EvolutionLink> {
        let mut evolutions = Vec::new();
        let (Some(llm), true) = (&self.llm, options.detect_evolution) else {
            return evolutions;
        };
        for entity in entities
            .iter()
            .filter(|e| e.entity_type != EntityType::Note)
            .take(EVOLUTION_DETECTIONS_MAX)
        {
            match self.detect(llm, entity, now_ms).await {
                Ok(Some(link)) => {
                    self.env.cover("memory.evolution_linked");
                    evolutions.push(link);
                }
                Ok(None) => {}
                Err(error) => {
                    self.env.record(
                        "memory.degraded",
                        format_args!("evolution_skipped {}: {error}", entity.name),
                    );
                    self.env.cover("memory.evolution_skipped");
                    degradations.push(Degradation::EvolutionSkipped {
                        entity: entity.name.clone(),
                        error,
                    });
                }
            }
        }
        evolutions
    }

    /// Writes the note, its entities and `evolutions` in one batch. When the store
    /// refuses the links (an entity one points at was forgotten meanwhile), the memory is
    /// kept and the links dropped (cleared, a degradation).
    async fn store(
        &self,
        records: Records<'_>,
        evolutions: &mut Vec<EvolutionLink>,
        degradations: &mut Vec<Degradation>,
    ) -> Result<(), MemoryError> {
        let Records {
            note,
            entities,
            vectors,
        } = records;
        let batch = WriteBatch {
            notes: vec![note.clone()],
            entities: entities.to_vec(),
            vectors: vectors.to_vec(),
            links: evolutions.clone(),
            ..WriteBatch::default()
        };
        match self.storage.apply(batch).await {
            Ok(()) => Ok(()),
            Err(StorageError::Invalid { .. }) if !evolutions.is_empty() => {
                let dropped = evolutions.len();
                evolutions.clear();
                let batch = WriteBatch {
                    notes: vec![note.clone()],
                    entities: entities.to_vec(),
                    vectors: vectors.to_vec(),
                    ..WriteBatch::default()
                };
                self.storage.apply(batch).await?;
                self.env.cover("memory.evolution_dropped");
                degradations.push(Degradation::EvolutionDropped { links: dropped });
                Ok(())
            }
            Err(error) => Err(error.into()),
        }
    }

    fn entity(
        &self,
        name: String,
        entity_type: EntityType,
        content: String,
        confidence: f64,
        note: &Note,
        now_ms: u64,
    ) -> Entity {
        Entity {
            id: self.env.random_id("memory.ids"),
            name,
            entity_type,
            content,
            confidence: confidence.clamp(0.0, 1.0),
            note_id: Some(note.id.clone()),
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        }
    }

    /// The evolution of `entity` against related stored entities, if the model sees one.
    async fn detect(
        &self,
        llm: &Arc<dyn LanguageModel>,
        entity: &Entity,
        now_ms: u64,
    ) -> Result<Option<EvolutionLink>, String> {
        let mut related: Vec<Entity> = self
            .storage
            .entities_named(&entity.name)
            .await
            .map_err(|e| e.to_string())?;
        let hits = self
            .storage
            .search(&entity.name, EVOLUTION_CANDIDATES_MAX)
            .await
            .map_err(|e| e.to_string())?;
        for hit in hits {
            if !related.iter().any(|r| r.id == hit.entity.id) {
                related.push(hit.entity);
            }
        }
        related.truncate(EVOLUTION_CANDIDATES_MAX);
        if related.is_empty() {
            return Ok(None);
        }
        let candidates: Vec<EvolutionCandidate> = related
            .into_iter()
            .map(|r| EvolutionCandidate {
                id: r.id,
                name: r.name,
                entity_type: r.entity_type,
                content: r.content,
            })
            .collect();
        let subject = EvolutionSubject {
            name: entity.name.clone(),
            entity_type: entity.entity_type,
            content: entity.content.clone(),
        };
        let response = llm
            .complete(&evolution_request(&subject, &candidates))
            .await
            .map_err(|e| e.to_string())?;
        let detection = parse_evolution(&response.text, &candidates).map_err(|e| e.to_string())?;
        let Some(related_id) = detection
            .related_id
            .filter(|_| detection.evolution_type != EvolutionType::None)
        else {
            return Ok(None);
        };
        Ok(Some(EvolutionLink {
            id: self.env.random_id("memory.ids"),
            from_id: entity.id.clone(),
            to_id: related_id,
            evolution_type: detection.evolution_type,
            reason: detection.reason,
            confidence: detection.confidence,
            created_at_ms: now_ms,
        }))
    }
}

/// The entities of `text`, or why there are none.
async fn extract(llm: &dyn LanguageModel, text: &str) -> Result<Vec<ExtractedEntity>, String> {
    let response = llm
        .complete(&extraction_request(text))
        .await
        .map_err(|e| e.to_string())?;
    parse_extraction(&response.text)
        .map(|extraction| extraction.entities)
        .map_err(|e| e.to_string())
}
/// Whether `remember` may store `text`: some words, within [`MEMORY_TEXT_BYTES_MAX`].
fn check_text(text: &str) -> Result<(), MemoryError> {
    if text.trim().is_empty() {
        return Err(MemoryError::EmptyText);
    }
    if text.len() > MEMORY_TEXT_BYTES_MAX {
        return Err(MemoryError::TextTooLong {
            bytes: text.len(),
            limit: MEMORY_TEXT_BYTES_MAX,
        });
    }
    Ok(())
}
