//! Memory checkers: no data loss, no forgotten entity recalled, no dangling link.

use std::collections::BTreeSet;

use umi_core::constants::{LIST_PAGE_MAX, RECALL_RESULTS_MAX};
use umi_core::memory::{Memory, MemoryError, RecallOptions, RememberOutcome, RewriteMode};
use umi_core::storage::StorageError;

use crate::simulation::Violation;

/// One `remember` the memory acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acknowledged {
    /// The note it stored.
    pub note_id: String,
    /// Exactly the text remembered.
    pub text: String,
    /// The entities it stored.
    pub entity_ids: Vec<String>,
}

/// What the memory acknowledged: the model the checkers compare against.
#[derive(Debug, Clone, Default)]
pub struct MemoryModel {
    acknowledged: Vec<Acknowledged>,
    forgotten: BTreeSet<String>,
}

impl MemoryModel {
    /// An empty model.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an acknowledged `remember`.
    pub fn remembered(&mut self, outcome: &RememberOutcome) {
        self.acknowledged.push(Acknowledged {
            note_id: outcome.note.id.clone(),
            text: outcome.note.text.clone(),
            entity_ids: outcome.entities.iter().map(|e| e.id.clone()).collect(),
        });
    }

    /// Records an acknowledged `forget`.
    pub fn forgot(&mut self, entity_id: &str) {
        self.forgotten.insert(entity_id.to_owned());
    }

    /// The acknowledged remembers, in order.
    pub fn acknowledged(&self) -> &[Acknowledged] {
        &self.acknowledged
    }

    /// The forgotten entity ids.
    pub fn forgotten(&self) -> &BTreeSet<String> {
        &self.forgotten
    }

    /// An entity id that was remembered and not forgotten, by position.
    pub fn live_entity(&self, pick: usize) -> Option<&str> {
        let live: Vec<&str> = self
            .acknowledged
            .iter()
            .flat_map(|a| a.entity_ids.iter())
            .filter(|id| !self.forgotten.contains(*id))
            .map(String::as_str)
            .collect();
        (!live.is_empty()).then(|| live[pick % live.len()])
    }
}

/// Whether `error` is a reported corruption of a record in `rotten` (`kind:id`).
fn reported_rot(error: &MemoryError, rotten: &BTreeSet<String>) -> Result<bool, Violation> {
    match error {
        MemoryError::Storage(StorageError::Corruption { what, id }) => {
            if rotten.contains(&format!("{what}:{id}")) {
                Ok(true)
            } else {
                Err(Violation::new(format!(
                    "corruption reported for {what} {id}, which never rotted"
                )))
            }
        }
        _ => Ok(false),
    }
}

/// Every acknowledged `remember` can be found again by its exact text, and each of its
/// entities is there (unless forgotten), or its damage was reported as corruption.
pub async fn check_no_data_loss(
    memory: &Memory,
    model: &MemoryModel,
    rotten: &BTreeSet<String>,
) -> Result<(), Violation> {
    for acknowledged in &model.acknowledged {
        match memory.notes_with_text(&acknowledged.text).await {
            Ok(notes) => {
                if !notes
                    .iter()
                    .any(|n| n.id == acknowledged.note_id && n.text == acknowledged.text)
                {
                    return Err(Violation::new(format!(
                        "lost write: acknowledged note {} ({:?}) cannot be found by its text",
                        acknowledged.note_id, acknowledged.text
                    )));
                }
            }
            Err(error) if reported_rot(&error, rotten)? => {}
            Err(error) => {
                return Err(Violation::new(format!(
                    "reading note {}: {error}",
                    acknowledged.note_id
                )));
            }
        }
        for id in &acknowledged.entity_ids {
            match memory.get(id).await {
                Ok(Some(entity)) if model.forgotten.contains(id) => {
                    return Err(Violation::new(format!(
                        "forgotten entity {id} ({}) is still stored",
                        entity.name
                    )));
                }
                Ok(Some(entity))
                    if entity.note_id.as_deref() != Some(acknowledged.note_id.as_str()) =>
                {
                    return Err(Violation::new(format!(
                        "entity {id} lost its note {}",
                        acknowledged.note_id
                    )));
                }
                Ok(None) if !model.forgotten.contains(id) => {
                    return Err(Violation::new(format!(
                        "lost write: entity {id} of note {} is gone",
                        acknowledged.note_id
                    )));
                }
                Ok(_) => {}
                Err(error) if reported_rot(&error, rotten)? => {}
                Err(error) => return Err(Violation::new(format!("reading entity {id}: {error}"))),
            }
        }
    }
    Ok(())
}

/// `recall` (for each of `queries`) and `list` never return a forgotten entity.
pub async fn check_forgotten_not_recalled(
    memory: &Memory,
    model: &MemoryModel,
    queries: &[&str],
    rotten: &BTreeSet<String>,
) -> Result<(), Violation> {
    let options = RecallOptions {
        limit: RECALL_RESULTS_MAX,
        rewrite: RewriteMode::Always,
    };
    for query in queries {
        match memory.recall(query, options).await {
            Ok(outcome) => {
                if let Some(hit) = outcome
                    .hits
                    .iter()
                    .find(|h| model.forgotten.contains(&h.entity.id))
                {
                    return Err(Violation::new(format!(
                        "recall({query:?}) returned forgotten entity {} ({})",
                        hit.entity.id, hit.entity.name
                    )));
                }
            }
            Err(error) if reported_rot(&error, rotten)? => {}
            Err(error) => return Err(Violation::new(format!("recall({query:?}): {error}"))),
        }
    }
    let mut offset = 0;
    loop {
        let page = match memory.list(offset, LIST_PAGE_MAX).await {
            Ok(page) => page,
            Err(error) if reported_rot(&error, rotten)? => break,
            Err(error) => return Err(Violation::new(format!("list: {error}"))),
        };
        if let Some(entity) = page.iter().find(|e| model.forgotten.contains(&e.id)) {
            return Err(Violation::new(format!(
                "list returned forgotten entity {}",
                entity.id
            )));
        }
        if page.len() < LIST_PAGE_MAX {
            break;
        }
        offset += page.len();
    }
    Ok(())
}

/// Every evolution link points at entities that exist.
pub async fn check_links_point_to_existing(
    memory: &Memory,
    rotten: &BTreeSet<String>,
) -> Result<(), Violation> {
    let mut offset = 0;
    loop {
        let links = memory
            .storage()
            .list_links(offset, LIST_PAGE_MAX)
            .await
            .map_err(|e| Violation::new(format!("list_links: {e}")))?;
        for link in &links {
            for end in [&link.from_id, &link.to_id] {
                match memory.get(end).await {
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        return Err(Violation::new(format!(
                            "link {} points at missing entity {end}",
                            link.id
                        )));
                    }
                    Err(error) if reported_rot(&error, rotten)? => {}
                    Err(error) => {
                        return Err(Violation::new(format!("reading entity {end}: {error}")));
                    }
                }
            }
        }
        if links.len() < LIST_PAGE_MAX {
            return Ok(());
        }
        offset += links.len();
    }
}
