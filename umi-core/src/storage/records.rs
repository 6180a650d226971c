//! The records the memory stores, and the batch that writes them.

use serde::{Deserialize, Serialize};

use super::vectors::EntityVector;
use crate::storage::kinds::{EntityType, EvolutionType};

/// Something the memory knows about: a person, a project, a note...
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// Unique id (random, from the environment).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its type.
    pub entity_type: EntityType,
    /// What is known about it.
    pub content: String,
    /// How confident the extraction was, in [0, 1].
    pub confidence: f64,
    /// The note it was extracted from, if any.
    pub note_id: Option<String>,
    /// When it was created, ms since the Unix epoch (environment clock).
    pub created_at_ms: u64,
    /// When it was last changed.
    pub updated_at_ms: u64,
}

/// The raw text of one `remember` call, kept whatever extraction made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// Unique id.
    pub id: String,
    /// Exactly the text that was remembered.
    pub text: String,
    /// When, ms since the Unix epoch.
    pub created_at_ms: u64,
}

/// How a newer entity relates to an older one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvolutionLink {
    /// Unique id.
    pub id: String,
    /// The newer entity.
    pub from_id: String,
    /// The older entity it relates to.
    pub to_id: String,
    /// The relation.
    pub evolution_type: EvolutionType,
    /// Why, in a sentence.
    pub reason: String,
    /// The model's confidence, in [0, 1].
    pub confidence: f64,
    /// When, ms since the Unix epoch.
    pub created_at_ms: u64,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The entity.
    pub entity: Entity,
    /// Relevance (higher is better; only comparable within one search).
    pub score: f64,
}

/// Writes applied together, all or nothing: deletes, then notes, entities, vectors and
/// links.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WriteBatch {
    /// Entity ids to delete (their links go with them).
    pub delete_entities: Vec<String>,
    /// Notes to insert.
    pub notes: Vec<Note>,
    /// Entities to insert or replace (by id).
    pub entities: Vec<Entity>,
    /// Entity vectors to insert or replace (by entity id); each entity must exist (in the
    /// store or in this batch).
    pub vectors: Vec<EntityVector>,
    /// Links to insert.
    pub links: Vec<EvolutionLink>,
}

impl WriteBatch {
    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.delete_entities.len()
            + self.notes.len()
            + self.entities.len()
            + self.vectors.len()
            + self.links.len()
    }

    /// Whether the batch does nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A 64-bit FNV-1a fingerprint of a note's text, for finding notes by exact text
/// without indexing whole texts (collisions are resolved by comparing the text).
pub fn text_fingerprint(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
