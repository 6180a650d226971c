//! The storage conformance suite: one check every [`Storage`] backend must pass.
//!
//! Call [`check`] with an empty store from a test of your backend (an async test; any
//! runtime). It writes, reads, searches and deletes, and returns a description of the
//! first rule broken. umi-core runs it on SQLite and in-memory storage; umi-dst runs it
//! on SimStorage. The rules for entity vectors are in its `vectors` module.

use super::{Entity, EvolutionLink, Note, Storage, StorageError, WriteBatch};
use crate::constants::WRITE_BATCH_RECORDS_MAX;
use crate::storage::kinds::{EntityType, EvolutionType};

/// A person entity with fixed confidence and times (shared with the backends' own tests).
pub(crate) fn entity(id: &str, name: &str, content: &str, note: Option<&str>) -> Entity {
    Entity {
        id: id.into(),
        name: name.into(),
        entity_type: EntityType::Person,
        content: content.into(),
        confidence: 0.75,
        note_id: note.map(str::to_owned),
        created_at_ms: 1_000,
        updated_at_ms: 1_000,
    }
}

pub(crate) fn link(id: &str, from: &str, to: &str) -> EvolutionLink {
    EvolutionLink {
        id: id.into(),
        from_id: from.into(),
        to_id: to.into(),
        evolution_type: EvolutionType::Extend,
        reason: "adds detail".into(),
        confidence: 0.5,
        created_at_ms: 2_000,
    }
}

macro_rules! rule {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err(format!($($message)+));
        }
    };
}

fn io(context: &str) -> impl Fn(StorageError) -> String + '_ {
    move |error| format!("{context}: unexpected error {error}")
}

/// The ids of `list_entities(offset, limit)`, in order.
async fn listed_ids(
    storage: &dyn Storage,
    offset: usize,
    limit: usize,
) -> Result<Vec<String>, String> {
    let entities = storage
        .list_entities(offset, limit)
        .await
        .map_err(io("list"))?;
    Ok(entities.into_iter().map(|e| e.id).collect())
}

/// The ids of `search(query, limit)`, best first.
async fn searched_ids(
    storage: &dyn Storage,
    query: &str,
    limit: usize,
) -> Result<Vec<String>, String> {
    let hits = storage.search(query, limit).await.map_err(io("search"))?;
    Ok(hits.into_iter().map(|h| h.entity.id).collect())
}

/// Runs the suite on `storage`, which must start empty: each part below in turn, each
/// starting from the state the one before it left.
pub async fn check(storage: &dyn Storage) -> Result<(), String> {
    check_empty(storage).await?;
    let written = check_one_remember(storage).await?;
    check_lookups(storage, &written).await?;
    check_search(storage).await?;
    check_upsert(storage, &written.alice).await?;
    check_dangling_link(storage).await?;
    check_delete(storage).await?;
    check_limits(storage).await?;
    vectors::check(storage).await
}

/// The records of one remember, as [`check_one_remember`] wrote them.
struct OneRemember {
    note: Note,
    alice: Entity,
    acme: Entity,
}

/// An empty store counts, finds and gets nothing.
async fn check_empty(storage: &dyn Storage) -> Result<(), String> {
    rule!(
        storage.count_entities().await.map_err(io("count"))? == 0,
        "the store must start empty"
    );
    rule!(
        storage
            .get_entity("missing")
            .await
            .map_err(io("get"))?
            .is_none(),
        "a missing entity is None"
    );
    rule!(
        storage
            .get_note("missing")
            .await
            .map_err(io("get note"))?
            .is_none(),
        "a missing note is None"
    );
    rule!(
        searched_ids(storage, "anything", 10).await?.is_empty(),
        "an empty store finds nothing"
    );

    Ok(())
}

/// One remember's worth (a note, three entities, a link) is written in one batch and
/// reads back as written, listed in insertion order.
async fn check_one_remember(storage: &dyn Storage) -> Result<OneRemember, String> {
    let note = Note {
        id: "n1".into(),
        text: "Alice joined Acme Corp in Paris; café 東京.".into(),
        created_at_ms: 1_000,
    };
    let alice = entity("e1", "Alice", "Alice joined Acme Corp in Paris", Some("n1"));
    let acme = Entity {
        entity_type: EntityType::Organization,
        ..entity(
            "e2",
            "Acme Corp",
            "a company in Paris where Alice works with many other people on many things",
            Some("n1"),
        )
    };
    let cafe = entity("e3", "Café 東京", "café 東京 is a place", Some("n1"));
    let batch = WriteBatch {
        notes: vec![note.clone()],
        entities: vec![alice.clone(), acme.clone(), cafe.clone()],
        links: vec![link("l1", "e2", "e1")],
        ..WriteBatch::default()
    };
    storage.apply(batch).await.map_err(io("apply"))?;
    rule!(
        storage.count_entities().await.map_err(io("count"))? == 3,
        "three entities after one batch"
    );
    rule!(
        storage.get_entity("e1").await.map_err(io("get"))? == Some(alice.clone()),
        "an entity reads back as written"
    );
    rule!(
        storage.get_note("n1").await.map_err(io("get note"))? == Some(note.clone()),
        "a note reads back as written"
    );
    let listed: Vec<String> = listed_ids(storage, 0, 10).await?;
    rule!(
        listed == ["e1", "e2", "e3"],
        "list is in insertion order: {listed:?}"
    );
    let page: Vec<String> = listed_ids(storage, 1, 1).await?;
    rule!(page == ["e2"], "list honours offset and limit: {page:?}");
    Ok(OneRemember { note, alice, acme })
}

/// Exact lookups by name, by note and by text, and links seen from both ends.
async fn check_lookups(storage: &dyn Storage, written: &OneRemember) -> Result<(), String> {
    rule!(
        storage
            .entities_named("Acme Corp")
            .await
            .map_err(io("named"))?
            == vec![written.acme.clone()],
        "entities_named finds exact names"
    );
    rule!(
        storage
            .entities_named("Acme")
            .await
            .map_err(io("named"))?
            .is_empty(),
        "entities_named is exact"
    );
    rule!(
        storage
            .entities_of_note("n1")
            .await
            .map_err(io("of note"))?
            .len()
            == 3,
        "entities_of_note finds all three"
    );
    rule!(
        storage
            .notes_with_text(&written.note.text)
            .await
            .map_err(io("notes"))?
            == vec![written.note.clone()],
        "notes are found by exact text"
    );
    rule!(
        storage
            .notes_with_text("Alice joined")
            .await
            .map_err(io("notes"))?
            .is_empty(),
        "notes_with_text is exact"
    );
    let from_acme = storage.links_of("e2").await.map_err(io("links"))?;
    let to_alice = storage.links_of("e1").await.map_err(io("links"))?;
    rule!(
        from_acme.len() == 1 && from_acme == to_alice,
        "a link is seen from both ends"
    );
    rule!(
        storage
            .list_links(0, 10)
            .await
            .map_err(io("list links"))?
            .len()
            == 1,
        "list_links lists it"
    );

    Ok(())
}

/// Search ranks best first, is stable, honours its limit, and takes any text as words.
async fn check_search(storage: &dyn Storage) -> Result<(), String> {
    let hits = storage
        .search("Alice Paris", 10)
        .await
        .map_err(io("search"))?;
    let ids: Vec<&str> = hits.iter().map(|h| h.entity.id.as_str()).collect();
    rule!(
        ids.first() == Some(&"e1"),
        "the entity named Alice and about Paris ranks first: {ids:?}"
    );
    rule!(
        ids.contains(&"e2"),
        "an entity mentioning Paris is found: {ids:?}"
    );
    rule!(
        !ids.contains(&"e3"),
        "an entity without either word is not: {ids:?}"
    );
    rule!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "hits are best first"
    );
    let again: Vec<String> = searched_ids(storage, "Alice Paris", 10).await?;
    rule!(again == ids, "the same search gives the same order");
    rule!(
        searched_ids(storage, "Alice Paris", 1).await?.len() == 1,
        "search honours its limit"
    );
    rule!(
        searched_ids(storage, "?! ...", 10).await?.is_empty(),
        "a query without words finds nothing"
    );
    rule!(
        storage.search("\"OR\" NEAR(", 10).await.is_ok(),
        "query syntax characters are not interpreted"
    );
    let unicode = storage.search("東京", 10).await.map_err(io("search"))?;
    rule!(
        unicode.first().map(|h| h.entity.id.as_str()) == Some("e3"),
        "non-Latin terms are searchable"
    );

    Ok(())
}

/// An upsert replaces the entity, keeps its place in order and reindexes it.
async fn check_upsert(storage: &dyn Storage, alice: &Entity) -> Result<(), String> {
    let renamed = Entity {
        content: "Alice now lives in Oslo".into(),
        updated_at_ms: 3_000,
        ..alice.clone()
    };
    storage
        .apply(WriteBatch {
            entities: vec![renamed.clone()],
            ..WriteBatch::default()
        })
        .await
        .map_err(io("upsert"))?;
    rule!(
        storage.get_entity("e1").await.map_err(io("get"))? == Some(renamed),
        "an upsert replaces the entity"
    );
    let listed: Vec<String> = listed_ids(storage, 0, 10).await?;
    rule!(
        listed == ["e1", "e2", "e3"],
        "an upsert keeps insertion order: {listed:?}"
    );
    let oslo: Vec<String> = searched_ids(storage, "Oslo", 10).await?;
    rule!(oslo == ["e1"], "new content is searchable: {oslo:?}");
    let joined: Vec<String> = searched_ids(storage, "joined", 10).await?;
    rule!(joined.is_empty(), "old content is not: {joined:?}");

    Ok(())
}

/// A dangling link refuses the whole batch, naming the missing entity.
async fn check_dangling_link(storage: &dyn Storage) -> Result<(), String> {
    let dangling = WriteBatch {
        notes: vec![Note {
            id: "n2".into(),
            text: "orphan".into(),
            created_at_ms: 4_000,
        }],
        links: vec![link("l2", "e1", "nope")],
        ..WriteBatch::default()
    };
    match storage.apply(dangling).await {
        Err(StorageError::Invalid { reason }) => rule!(
            reason.contains("nope"),
            "the error names the missing entity: {reason}"
        ),
        other => {
            return Err(format!(
                "a dangling link must be refused as Invalid, got {other:?}"
            ));
        }
    }
    rule!(
        storage
            .get_note("n2")
            .await
            .map_err(io("get note"))?
            .is_none(),
        "a refused batch writes nothing"
    );

    Ok(())
}

/// A delete cascades to links and leaves the index; the note stays.
async fn check_delete(storage: &dyn Storage) -> Result<(), String> {
    storage
        .apply(WriteBatch {
            delete_entities: vec!["e1".into()],
            ..WriteBatch::default()
        })
        .await
        .map_err(io("delete"))?;
    rule!(
        storage.get_entity("e1").await.map_err(io("get"))?.is_none(),
        "a deleted entity is gone"
    );
    rule!(
        storage
            .links_of("e2")
            .await
            .map_err(io("links"))?
            .is_empty(),
        "its links are gone"
    );
    rule!(
        storage
            .list_links(0, 10)
            .await
            .map_err(io("list links"))?
            .is_empty(),
        "from list_links too"
    );
    rule!(
        searched_ids(storage, "Oslo", 10).await?.is_empty(),
        "and from search"
    );
    rule!(
        storage.count_entities().await.map_err(io("count"))? == 2,
        "the count drops"
    );
    rule!(
        storage
            .get_note("n1")
            .await
            .map_err(io("get note"))?
            .is_some(),
        "the note it came from stays"
    );

    Ok(())
}

/// An oversized batch is refused.
async fn check_limits(storage: &dyn Storage) -> Result<(), String> {
    let huge = WriteBatch {
        delete_entities: vec!["x".into(); WRITE_BATCH_RECORDS_MAX + 1],
        ..WriteBatch::default()
    };
    rule!(
        matches!(storage.apply(huge).await, Err(StorageError::Invalid { .. })),
        "an oversized batch is refused"
    );
    Ok(())
}

mod vectors;
