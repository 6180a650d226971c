//! Record checksums: a 128-bit XXH3 over every field of a stored note, entity, entity
//! vector or link.
//!
//! Two users need the same notion of "this record, exactly": SimStorage keeps a checksum
//! beside each record it stores and verifies it on every read (so rot is reported, never
//! returned), and the memory checker keeps the checksum of each record the memory
//! acknowledged and compares it with what is read back (so a storage that silently
//! alters a record is caught). Each field is length-prefixed, so no two different records
//! hash the same bytes.
//!
//! The checksum only has to tell a record from a damaged copy of itself, inside one run:
//! nobody forges a record here, and no checksum is ever printed, hashed into the trace or
//! drawn from, so its function decides nothing a seed means. It was SHA-256 until issue
//! 41: XXH3 (the `xxhash-rust` crate, 128 bits) costs a fraction of it on the short
//! records a seed writes and reads back thousands of times, and SimStorage and the memory
//! checker were spending 5-10% of the memory scenarios' time in SHA-256.

use umi_core::storage::{Entity, EntityVector, EvolutionLink, Note};
use xxhash_rust::xxh3::Xxh3Default;

/// A record's checksum.
pub(crate) type Checksum = [u8; 16];

fn text_fields(hasher: &mut Xxh3Default, fields: &[&str]) {
    for field in fields {
        hasher.update(&(field.len() as u64).to_le_bytes());
        hasher.update(field.as_bytes());
    }
}

/// Every field of `entity`.
pub(crate) fn entity_checksum(entity: &Entity) -> Checksum {
    let mut hasher = Xxh3Default::new();
    let note_id = entity.note_id.as_deref().unwrap_or("");
    text_fields(
        &mut hasher,
        &[
            entity.id.as_str(),
            &entity.name,
            &entity.content,
            entity.entity_type.name(),
            note_id,
        ],
    );
    hasher.update(&entity.confidence.to_bits().to_le_bytes());
    hasher.update(&entity.created_at_ms.to_le_bytes());
    hasher.update(&entity.updated_at_ms.to_le_bytes());
    hasher.digest128().to_le_bytes()
}

/// Every field of `note`.
pub(crate) fn note_checksum(note: &Note) -> Checksum {
    let mut hasher = Xxh3Default::new();
    text_fields(&mut hasher, &[note.id.as_str(), &note.text]);
    hasher.update(&note.created_at_ms.to_le_bytes());
    hasher.digest128().to_le_bytes()
}

/// Every field of `vector`: its entity, its model, and its numbers' bytes (so a vector
/// that reads back with one bit changed has another checksum).
pub(crate) fn vector_checksum(vector: &EntityVector) -> Checksum {
    let mut hasher = Xxh3Default::new();
    text_fields(&mut hasher, &[vector.entity_id.as_str(), &vector.model]);
    hasher.update(&(vector.dimensions() as u64).to_le_bytes());
    hasher.update(&vector.to_bytes());
    hasher.digest128().to_le_bytes()
}

/// Every field of `link`.
pub(crate) fn link_checksum(link: &EvolutionLink) -> Checksum {
    let mut hasher = Xxh3Default::new();
    text_fields(
        &mut hasher,
        &[
            link.id.as_str(),
            &link.from_id,
            &link.to_id,
            link.evolution_type.name(),
            &link.reason,
        ],
    );
    hasher.update(&link.confidence.to_bits().to_le_bytes());
    hasher.update(&link.created_at_ms.to_le_bytes());
    hasher.digest128().to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use umi_core::storage::EntityType;
    use umi_core::storage::EvolutionType;

    fn entity() -> Entity {
        Entity {
            id: "e1".into(),
            name: "Alice".into(),
            entity_type: EntityType::Person,
            content: "joined Acme".into(),
            confidence: 0.9,
            note_id: Some("n1".into()),
            created_at_ms: 1,
            updated_at_ms: 2,
        }
    }

    fn link() -> EvolutionLink {
        EvolutionLink {
            id: "l1".into(),
            from_id: "e2".into(),
            to_id: "e1".into(),
            evolution_type: EvolutionType::Update,
            reason: "moved".into(),
            confidence: 0.5,
            created_at_ms: 3,
        }
    }

    /// Changing any one field changes the checksum.
    #[test]
    fn every_field_counts() {
        let base = entity_checksum(&entity());
        let edits: [fn(&mut Entity); 8] = [
            |e| e.id.push('x'),
            |e| e.name.push('x'),
            |e| e.content.push('x'),
            |e| e.entity_type = EntityType::Place,
            |e| e.note_id = None,
            |e| e.confidence = 0.8,
            |e| e.created_at_ms += 1,
            |e| e.updated_at_ms += 1,
        ];
        for (index, edit) in edits.iter().enumerate() {
            let mut changed = entity();
            edit(&mut changed);
            assert_ne!(entity_checksum(&changed), base, "entity edit {index}");
        }
        let base = link_checksum(&link());
        let edits: [fn(&mut EvolutionLink); 7] = [
            |l| l.id.push('x'),
            |l| l.from_id.push('x'),
            |l| l.to_id.push('x'),
            |l| l.evolution_type = EvolutionType::Contradict,
            |l| l.reason.push('x'),
            |l| l.confidence = 0.6,
            |l| l.created_at_ms += 1,
        ];
        for (index, edit) in edits.iter().enumerate() {
            let mut changed = link();
            edit(&mut changed);
            assert_ne!(link_checksum(&changed), base, "link edit {index}");
        }
        let note = Note {
            id: "n1".into(),
            text: "Alice joined Acme.".into(),
            created_at_ms: 1,
        };
        let mut later = note.clone();
        later.created_at_ms = 2;
        assert_ne!(note_checksum(&note), note_checksum(&later));
    }

    /// Fields are length-prefixed: moving a byte from one field to the next is a change.
    #[test]
    fn field_boundaries_count() {
        let mut moved = entity();
        moved.name = "Alicej".into();
        moved.content = "oined Acme".into();
        assert_ne!(entity_checksum(&moved), entity_checksum(&entity()));
    }
}
