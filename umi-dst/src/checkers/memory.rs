//! Memory checkers: no data loss, no forgotten entity recalled, no dangling link.
//!
//! "No data loss" means every kind of record the memory acknowledged: the note (found by
//! its exact text), each entity, each evolution link, and each of them exactly as
//! acknowledged (a checksum of every field, kept in [`MemoryModel`], compared with what is
//! read back), so a storage that drops a link or silently alters content is caught, not
//! only one that loses whole writes. An entity acknowledged with a vector (an embedding)
//! keeps it bit for bit (a checksum over its bytes) until the entity is forgotten. The
//! decisions are pure functions ([`entity_verdict`], [`vector_verdict`],
//! [`link_verdict`]) with table tests.

use std::collections::BTreeSet;

use umi_core::constants::{LIST_PAGE_MAX, RECALL_RESULTS_MAX};
use umi_core::memory::{Memory, MemoryError, RecallOptions, RememberOutcome, RewriteMode};
use umi_core::storage::{Entity, EntityVector, EvolutionLink, StorageError};

use crate::checksum::{Checksum, entity_checksum, link_checksum, note_checksum, vector_checksum};
use crate::simulation::Violation;

/// One `remember` the memory acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acknowledged {
    /// The note it stored.
    pub note_id: String,
    /// Exactly the text remembered.
    pub text: String,
    /// The checksum of the note as acknowledged.
    pub note_checksum: Checksum,
    /// The entities it stored, with the checksum of each as acknowledged.
    pub entities: Vec<(String, Checksum)>,
    /// The entity vectors it stored: entity id and the checksum of the vector's bytes.
    pub vectors: Vec<(String, Checksum)>,
    /// The evolution links it stored.
    pub links: Vec<AcknowledgedLink>,
}

/// One evolution link the memory acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcknowledgedLink {
    /// Its id.
    pub id: String,
    /// The newer entity.
    pub from_id: String,
    /// The older entity.
    pub to_id: String,
    /// The checksum of the link as acknowledged.
    pub checksum: Checksum,
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

    /// Records an acknowledged `remember`: its note, entities and links, each with the
    /// checksum of every field as acknowledged.
    pub fn remembered(&mut self, outcome: &RememberOutcome) {
        self.acknowledged.push(Acknowledged {
            note_id: outcome.note.id.clone(),
            text: outcome.note.text.clone(),
            note_checksum: note_checksum(&outcome.note),
            entities: outcome
                .entities
                .iter()
                .map(|e| (e.id.clone(), entity_checksum(e)))
                .collect(),
            vectors: outcome
                .vectors
                .iter()
                .map(|v| (v.entity_id.clone(), vector_checksum(v)))
                .collect(),
            links: outcome
                .evolutions
                .iter()
                .map(|l| AcknowledgedLink {
                    id: l.id.clone(),
                    from_id: l.from_id.clone(),
                    to_id: l.to_id.clone(),
                    checksum: link_checksum(l),
                })
                .collect(),
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
            .flat_map(|a| a.entities.iter().map(|(id, _)| id))
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

/// Every memory checker in turn, for a run whose faults have healed:
/// [`check_no_data_loss`], [`check_forgotten_not_recalled`] (asking `queries`) and
/// [`check_links_point_to_existing`]. `rotten` are the records the simulation rotted
/// (their damage must be reported, not hidden).
pub async fn check_memory(
    memory: &Memory,
    model: &MemoryModel,
    queries: &[&str],
    rotten: &BTreeSet<String>,
) -> Result<(), Violation> {
    check_no_data_loss(memory, model, rotten).await?;
    check_forgotten_not_recalled(memory, model, queries, rotten).await?;
    check_links_point_to_existing(memory, rotten).await
}

/// Forgets the `pick`-th live entity of `model` (wrapping), recording the forget in
/// `model` when the memory reports it done; whether one was forgotten. A failed forget
/// (a storage fault) is not recorded: the entity may still be there.
pub async fn forget_live_entity(memory: &Memory, model: &mut MemoryModel, pick: usize) -> bool {
    let Some(id) = model.live_entity(pick).map(str::to_owned) else {
        return false;
    };
    let forgotten = memory.forget(&id).await == Ok(true);
    if forgotten {
        model.forgot(&id);
    }
    forgotten
}

/// Every acknowledged `remember` can be found again by its exact text, each of its
/// entities is there unless forgotten, each of its evolution links is there unless an end
/// was forgotten (deleting an entity deletes its links), and every record reads back
/// exactly as acknowledged (its checksum); or its damage was reported as corruption.
pub async fn check_no_data_loss(
    memory: &Memory,
    model: &MemoryModel,
    rotten: &BTreeSet<String>,
) -> Result<(), Violation> {
    for acknowledged in &model.acknowledged {
        check_note(memory, acknowledged, rotten).await?;
        for (id, checksum) in &acknowledged.entities {
            let read = match memory.get(id).await {
                Ok(read) => read,
                Err(error) if reported_rot(&error, rotten)? => continue,
                Err(error) => return Err(Violation::new(format!("reading entity {id}: {error}"))),
            };
            entity_verdict(
                id,
                checksum,
                &acknowledged.note_id,
                model.forgotten.contains(id),
                read.as_ref(),
            )
            .map_err(Violation::new)?;
        }
        for (id, checksum) in &acknowledged.vectors {
            check_vector(memory, model, id, checksum, rotten).await?;
        }
        for link in &acknowledged.links {
            check_link(memory, model, acknowledged, link, rotten).await?;
        }
    }
    Ok(())
}

async fn check_note(
    memory: &Memory,
    acknowledged: &Acknowledged,
    rotten: &BTreeSet<String>,
) -> Result<(), Violation> {
    let notes = match memory.notes_with_text(&acknowledged.text).await {
        Ok(notes) => notes,
        Err(error) if reported_rot(&error, rotten)? => return Ok(()),
        Err(error) => {
            return Err(Violation::new(format!(
                "reading note {}: {error}",
                acknowledged.note_id
            )));
        }
    };
    match notes.iter().find(|n| n.id == acknowledged.note_id) {
        None => Err(Violation::new(format!(
            "lost write: acknowledged note {} ({:?}) cannot be found by its text",
            acknowledged.note_id, acknowledged.text
        ))),
        Some(note) if note_checksum(note) != acknowledged.note_checksum => {
            Err(Violation::new(format!(
                "altered: note {} reads back as {note:?}, not as acknowledged",
                acknowledged.note_id
            )))
        }
        Some(_) => Ok(()),
    }
}

async fn check_vector(
    memory: &Memory,
    model: &MemoryModel,
    entity_id: &str,
    checksum: &Checksum,
    rotten: &BTreeSet<String>,
) -> Result<(), Violation> {
    let read = match memory.storage().get_vector(entity_id).await {
        Ok(read) => read,
        Err(error) => {
            let error = MemoryError::Storage(error);
            if reported_rot(&error, rotten)? {
                return Ok(());
            }
            return Err(Violation::new(format!(
                "reading the vector of entity {entity_id}: {error}"
            )));
        }
    };
    let forgotten = model.forgotten.contains(entity_id);
    vector_verdict(entity_id, checksum, forgotten, read.as_ref()).map_err(Violation::new)
}

async fn check_link(
    memory: &Memory,
    model: &MemoryModel,
    acknowledged: &Acknowledged,
    link: &AcknowledgedLink,
    rotten: &BTreeSet<String>,
) -> Result<(), Violation> {
    let end_forgotten =
        model.forgotten.contains(&link.from_id) || model.forgotten.contains(&link.to_id);
    let read = match memory.storage().links_of(&link.from_id).await {
        Ok(links) => links.into_iter().find(|l| l.id == link.id),
        Err(error) => {
            let error = MemoryError::Storage(error);
            if reported_rot(&error, rotten)? {
                return Ok(());
            }
            return Err(Violation::new(format!(
                "reading links of {}: {error}",
                link.from_id
            )));
        }
    };
    link_verdict(link, &acknowledged.note_id, end_forgotten, read.as_ref()).map_err(Violation::new)
}

/// Whether entity `id`, acknowledged with `checksum` as part of note `note_id`, read
/// back as `read`, is what the memory promised: gone if `forgotten`, else there, exactly.
pub fn entity_verdict(
    id: &str,
    checksum: &Checksum,
    note_id: &str,
    forgotten: bool,
    read: Option<&Entity>,
) -> Result<(), String> {
    match read {
        Some(entity) if forgotten => Err(format!(
            "forgotten entity {id} ({}) is still stored",
            entity.name
        )),
        None if forgotten => Ok(()),
        None => Err(format!("lost write: entity {id} of note {note_id} is gone")),
        Some(entity) if entity.note_id.as_deref() != Some(note_id) => {
            Err(format!("entity {id} lost its note {note_id}"))
        }
        Some(entity) if entity_checksum(entity) != *checksum => Err(format!(
            "altered: entity {id} ({}) reads back with content {:?}, not as acknowledged",
            entity.name, entity.content
        )),
        Some(_) => Ok(()),
    }
}

/// Whether the vector of entity `entity_id`, acknowledged with `checksum`, read back as
/// `read`, is what the memory promised: gone with its entity if `forgotten`, else there,
/// bit for bit.
pub fn vector_verdict(
    entity_id: &str,
    checksum: &Checksum,
    forgotten: bool,
    read: Option<&EntityVector>,
) -> Result<(), String> {
    match read {
        Some(_) if forgotten => Err(format!(
            "the vector of forgotten entity {entity_id} is still stored"
        )),
        None if forgotten => Ok(()),
        None => Err(format!(
            "lost write: the vector of entity {entity_id} is gone"
        )),
        Some(vector) if vector_checksum(vector) != *checksum => Err(format!(
            "altered: the vector of entity {entity_id} reads back with other bytes \
             ({} dimensions, model {:?})",
            vector.dimensions(),
            vector.model
        )),
        Some(_) => Ok(()),
    }
}

/// Whether the acknowledged `link` of note `note_id`, read back as `read`, is what the
/// memory promised: there, exactly, unless an end was forgotten (then it went with it).
pub fn link_verdict(
    link: &AcknowledgedLink,
    note_id: &str,
    end_forgotten: bool,
    read: Option<&EvolutionLink>,
) -> Result<(), String> {
    match read {
        Some(stored) if end_forgotten => Err(format!(
            "link {} outlived its forgotten end ({} -> {})",
            link.id, stored.from_id, stored.to_id
        )),
        None if end_forgotten => Ok(()),
        None => Err(format!(
            "lost write: link {} ({} -> {}) of note {note_id} is gone",
            link.id, link.from_id, link.to_id
        )),
        Some(stored) if link_checksum(stored) != link.checksum => Err(format!(
            "altered: link {} reads back as {stored:?}, not as acknowledged",
            link.id
        )),
        Some(_) => Ok(()),
    }
}

/// `recall` (for each of `queries`) and `list` never return a forgotten entity.
pub async fn check_forgotten_not_recalled(
    memory: &Memory,
    model: &MemoryModel,
    queries: &[&str],
    rotten: &BTreeSet<String>,
) -> Result<(), Violation> {
    let options = RecallOptions::default()
        .with_limit(RECALL_RESULTS_MAX)
        .with_rewrite(RewriteMode::Always);
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

#[cfg(test)]
mod tests {
    use umi_core::storage::EntityType;
    use umi_core::storage::EvolutionType;

    use super::*;

    fn entity(content: &str) -> Entity {
        Entity {
            id: "e1".into(),
            name: "Alice".into(),
            entity_type: EntityType::Person,
            content: content.into(),
            confidence: 0.9,
            note_id: Some("n1".into()),
            created_at_ms: 1,
            updated_at_ms: 1,
        }
    }

    #[test]
    fn entity_verdicts() {
        let acked = entity_checksum(&entity("joined Acme"));
        let same = entity("joined Acme");
        let altered = entity("joined");
        let mut moved = entity("joined Acme");
        moved.note_id = Some("n2".into());
        let cases: [(bool, Option<&Entity>, Option<&str>); 6] = [
            (false, Some(&same), None),
            (true, None, None),
            (true, Some(&same), Some("forgotten entity e1")),
            (false, None, Some("lost write: entity e1")),
            (false, Some(&altered), Some("altered: entity e1")),
            (false, Some(&moved), Some("lost its note n1")),
        ];
        for (forgotten, read, expected) in cases {
            let verdict = entity_verdict("e1", &acked, "n1", forgotten, read);
            match expected {
                None => assert_eq!(verdict, Ok(()), "{forgotten} {read:?}"),
                Some(text) => assert!(
                    verdict.as_ref().is_err_and(|m| m.contains(text)),
                    "{forgotten} {read:?}: {verdict:?}"
                ),
            }
        }
    }

    #[test]
    fn vector_verdicts() {
        let stored = EntityVector {
            entity_id: "e1".into(),
            model: "sim-embed".into(),
            vector: vec![0.6, 0.8, -0.0],
        };
        let acked = vector_checksum(&stored);
        let mut flipped = stored.clone();
        flipped.vector[2] = 0.0; // -0.0 and 0.0 compare equal, but their bits differ
        let mut remodeled = stored.clone();
        remodeled.model = "other".into();
        let mut shortened = stored.clone();
        shortened.vector.pop();
        let cases: [(bool, Option<&EntityVector>, Option<&str>); 7] = [
            (false, Some(&stored), None),
            (true, None, None),
            (
                true,
                Some(&stored),
                Some("forgotten entity e1 is still stored"),
            ),
            (false, None, Some("lost write: the vector of entity e1")),
            (
                false,
                Some(&flipped),
                Some("altered: the vector of entity e1"),
            ),
            (false, Some(&remodeled), Some("altered")),
            (false, Some(&shortened), Some("2 dimensions")),
        ];
        for (forgotten, read, expected) in cases {
            let verdict = vector_verdict("e1", &acked, forgotten, read);
            match expected {
                None => assert_eq!(verdict, Ok(()), "{forgotten} {read:?}"),
                Some(text) => assert!(
                    verdict.as_ref().is_err_and(|m| m.contains(text)),
                    "{forgotten} {read:?}: {verdict:?}"
                ),
            }
        }
    }

    #[test]
    fn link_verdicts() {
        let stored = EvolutionLink {
            id: "l1".into(),
            from_id: "e2".into(),
            to_id: "e1".into(),
            evolution_type: EvolutionType::Update,
            reason: "moved".into(),
            confidence: 0.5,
            created_at_ms: 3,
        };
        let acked = AcknowledgedLink {
            id: "l1".into(),
            from_id: "e2".into(),
            to_id: "e1".into(),
            checksum: link_checksum(&stored),
        };
        let mut altered = stored.clone();
        altered.evolution_type = EvolutionType::Extend;
        let cases: [(bool, Option<&EvolutionLink>, Option<&str>); 5] = [
            (false, Some(&stored), None),
            (true, None, None),
            (true, Some(&stored), Some("outlived its forgotten end")),
            (false, None, Some("lost write: link l1 (e2 -> e1)")),
            (false, Some(&altered), Some("altered: link l1")),
        ];
        for (end_forgotten, read, expected) in cases {
            let verdict = link_verdict(&acked, "n1", end_forgotten, read);
            match expected {
                None => assert_eq!(verdict, Ok(()), "{end_forgotten} {read:?}"),
                Some(text) => assert!(
                    verdict.as_ref().is_err_and(|m| m.contains(text)),
                    "{end_forgotten} {read:?}: {verdict:?}"
                ),
            }
        }
    }
}
