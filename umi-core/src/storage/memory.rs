//! InMemoryStorage: the storage trait in process memory. Fast, not durable; for tests
//! and for memories that need not outlive the process.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use super::records::{Entity, EvolutionLink, Note, SearchHit, WriteBatch, text_fingerprint};
use super::search::SearchIndex;
use super::vectors::{EntityVector, rank_by_cosine, validate_vector};
use super::{Storage, StorageError};
use crate::constants::{LIST_PAGE_MAX, SEARCH_RESULTS_MAX, WRITE_BATCH_RECORDS_MAX};

/// Storage in process memory.
#[derive(Debug, Default)]
pub struct InMemoryStorage {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    next_seq: u64,
    /// id -> (insertion sequence, entity)
    entities: BTreeMap<String, (u64, Entity)>,
    by_seq: BTreeMap<u64, String>,
    index: SearchIndex,
    notes: BTreeMap<String, (u64, Note)>,
    notes_by_text: BTreeMap<u64, BTreeSet<(u64, String)>>,
    links: BTreeMap<String, EvolutionLink>,
    links_by_entity: BTreeMap<String, BTreeSet<String>>,
    /// entity id -> its vector
    vectors: BTreeMap<String, EntityVector>,
}

impl InMemoryStorage {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Checks the batch against the store's rules before anything is changed.
pub(super) fn validate_batch(
    batch: &WriteBatch,
    exists: impl Fn(&str) -> bool,
) -> Result<(), StorageError> {
    if batch.len() > WRITE_BATCH_RECORDS_MAX {
        return Err(StorageError::Invalid {
            reason: format!(
                "batch of {} records, over the limit of {WRITE_BATCH_RECORDS_MAX}",
                batch.len()
            ),
        });
    }
    let present = |id: &String| {
        batch.entities.iter().any(|e| &e.id == id)
            || (!batch.delete_entities.contains(id) && exists(id))
    };
    for vector in &batch.vectors {
        validate_vector(vector)?;
        if !present(&vector.entity_id) {
            return Err(StorageError::Invalid {
                reason: format!(
                    "a vector belongs to entity {:?}, which does not exist",
                    vector.entity_id
                ),
            });
        }
    }
    for link in &batch.links {
        for end in [&link.from_id, &link.to_id] {
            if present(end) {
                continue;
            }
            return Err(StorageError::Invalid {
                reason: format!(
                    "link {} points at entity {end:?}, which does not exist",
                    link.id
                ),
            });
        }
    }
    Ok(())
}

impl State {
    fn delete_entity(&mut self, id: &str) {
        let Some((seq, entity)) = self.entities.remove(id) else {
            return;
        };
        self.by_seq.remove(&seq);
        self.index.remove(seq, &entity.name, &entity.content);
        self.vectors.remove(id);
        for link_id in self.links_by_entity.remove(id).unwrap_or_default() {
            if let Some(link) = self.links.remove(&link_id) {
                let other = if link.from_id == id {
                    &link.to_id
                } else {
                    &link.from_id
                };
                if let Some(set) = self.links_by_entity.get_mut(other) {
                    set.remove(&link_id);
                }
            }
        }
    }

    fn put_entity(&mut self, entity: Entity) {
        let seq = match self.entities.get(&entity.id) {
            Some((seq, old)) => {
                let seq = *seq;
                self.index.remove(seq, &old.name, &old.content);
                seq
            }
            None => {
                self.next_seq += 1;
                self.by_seq.insert(self.next_seq, entity.id.clone());
                self.next_seq
            }
        };
        self.index.insert(seq, &entity.name, &entity.content);
        self.entities.insert(entity.id.clone(), (seq, entity));
    }

    fn put_note(&mut self, note: Note) {
        if self.notes.contains_key(&note.id) {
            return;
        }
        self.next_seq += 1;
        self.notes_by_text
            .entry(text_fingerprint(&note.text))
            .or_default()
            .insert((self.next_seq, note.id.clone()));
        self.notes.insert(note.id.clone(), (self.next_seq, note));
    }

    fn put_link(&mut self, link: EvolutionLink) {
        for end in [&link.from_id, &link.to_id] {
            self.links_by_entity
                .entry(end.clone())
                .or_default()
                .insert(link.id.clone());
        }
        self.links.insert(link.id.clone(), link);
    }
}

#[async_trait]
impl Storage for InMemoryStorage {
    async fn apply(&self, batch: WriteBatch) -> Result<(), StorageError> {
        let mut state = self.lock();
        validate_batch(&batch, |id| state.entities.contains_key(id))?;
        for id in &batch.delete_entities {
            state.delete_entity(id);
        }
        for note in batch.notes {
            state.put_note(note);
        }
        for entity in batch.entities {
            state.put_entity(entity);
        }
        for vector in batch.vectors {
            state.vectors.insert(vector.entity_id.clone(), vector);
        }
        for link in batch.links {
            state.put_link(link);
        }
        Ok(())
    }

    async fn get_entity(&self, id: &str) -> Result<Option<Entity>, StorageError> {
        Ok(self.lock().entities.get(id).map(|(_, e)| e.clone()))
    }

    async fn list_entities(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Entity>, StorageError> {
        let state = self.lock();
        Ok(state
            .by_seq
            .values()
            .skip(offset)
            .take(limit.min(LIST_PAGE_MAX))
            .map(|id| state.entities[id].1.clone())
            .collect())
    }

    async fn count_entities(&self) -> Result<u64, StorageError> {
        Ok(self.lock().entities.len() as u64)
    }

    async fn entities_named(&self, name: &str) -> Result<Vec<Entity>, StorageError> {
        let state = self.lock();
        Ok(state
            .by_seq
            .values()
            .map(|id| &state.entities[id].1)
            .filter(|e| e.name == name)
            .cloned()
            .collect())
    }

    async fn entities_of_note(&self, note_id: &str) -> Result<Vec<Entity>, StorageError> {
        let state = self.lock();
        Ok(state
            .by_seq
            .values()
            .map(|id| &state.entities[id].1)
            .filter(|e| e.note_id.as_deref() == Some(note_id))
            .cloned()
            .collect())
    }

    async fn get_note(&self, id: &str) -> Result<Option<Note>, StorageError> {
        Ok(self.lock().notes.get(id).map(|(_, n)| n.clone()))
    }

    async fn notes_with_text(&self, text: &str) -> Result<Vec<Note>, StorageError> {
        let state = self.lock();
        let Some(candidates) = state.notes_by_text.get(&text_fingerprint(text)) else {
            return Ok(Vec::new());
        };
        Ok(candidates
            .iter()
            .map(|(_, id)| &state.notes[id].1)
            .filter(|n| n.text == text)
            .cloned()
            .collect())
    }

    async fn links_of(&self, entity_id: &str) -> Result<Vec<EvolutionLink>, StorageError> {
        let state = self.lock();
        let ids = state
            .links_by_entity
            .get(entity_id)
            .cloned()
            .unwrap_or_default();
        Ok(ids.iter().map(|id| state.links[id].clone()).collect())
    }

    async fn list_links(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<EvolutionLink>, StorageError> {
        let state = self.lock();
        Ok(state
            .links
            .values()
            .skip(offset)
            .take(limit.min(LIST_PAGE_MAX))
            .cloned()
            .collect())
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, StorageError> {
        let state = self.lock();
        let limit = limit.min(SEARCH_RESULTS_MAX);
        // Rank by (score, id) without cloning anything, keep the best `limit`, and only
        // then clone those entities.
        let mut ranked: Vec<(f64, &str)> = state
            .index
            .scores(query)
            .into_iter()
            .map(|(seq, score)| (score, state.by_seq[&seq].as_str()))
            .collect();
        let order =
            |a: &(f64, &str), b: &(f64, &str)| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1));
        if ranked.len() > limit && limit > 0 {
            ranked.select_nth_unstable_by(limit - 1, order);
        }
        ranked.truncate(limit);
        ranked.sort_unstable_by(order);
        Ok(ranked
            .into_iter()
            .map(|(score, id)| SearchHit {
                entity: state.entities[id].1.clone(),
                score,
            })
            .collect())
    }

    async fn get_vector(&self, entity_id: &str) -> Result<Option<EntityVector>, StorageError> {
        Ok(self.lock().vectors.get(entity_id).cloned())
    }

    async fn search_vectors(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StorageError> {
        let state = self.lock();
        let candidates = state
            .vectors
            .values()
            .filter(|v| v.model == model)
            .map(|v| (v.entity_id.as_str(), v.vector.as_slice()));
        let ranked = rank_by_cosine(candidates, query, limit.min(SEARCH_RESULTS_MAX));
        Ok(ranked
            .into_iter()
            .map(|(id, score)| SearchHit {
                entity: state.entities[&id].1.clone(),
                score,
            })
            .collect())
    }
}

/// Best score first; equal scores by entity id, so the order is total.
pub(super) fn sort_hits(hits: &mut [SearchHit]) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.entity.id.cmp(&b.entity.id))
    });
}
