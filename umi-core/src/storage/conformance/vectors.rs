//! The conformance rules for entity vectors: a vector round-trips bit for bit, needs its
//! entity, is replaced by a newer one, is deleted with its entity, and search orders by
//! cosine (ties by id) within one model and length.

use super::{entity, io};
use crate::storage::{EntityVector, Storage, StorageError, WriteBatch};

/// The model every vector here is "made" by, but one.
const MODEL: &str = "conformance-embed";

fn vector(entity_id: &str, model: &str, numbers: &[f32]) -> EntityVector {
    EntityVector {
        entity_id: entity_id.into(),
        model: model.into(),
        vector: numbers.to_vec(),
    }
}

fn bits(numbers: &[f32]) -> Vec<u32> {
    numbers.iter().map(|x| x.to_bits()).collect()
}

/// The ids `search_vectors` finds, best first.
async fn nearest(storage: &dyn Storage, model: &str, query: &[f32]) -> Result<Vec<String>, String> {
    let hits = storage
        .search_vectors(model, query, 10)
        .await
        .map_err(io("search vectors"))?;
    Ok(hits.into_iter().map(|h| h.entity.id).collect())
}

/// Runs the vector rules on `storage` (after the other rules; ids `v1`..`v6` are fresh).
pub(super) async fn check(storage: &dyn Storage) -> Result<(), String> {
    check_round_trip(storage).await?;
    check_search(storage).await?;
    check_replace_and_delete(storage).await
}

/// Vectors written with their entities read back bit for bit; an entity without one has
/// none; a vector whose entity does not exist is refused, with its whole batch.
async fn check_round_trip(storage: &dyn Storage) -> Result<(), String> {
    let odd = [0.1_f32, -0.0, 1.0e-40, 0.8];
    let batch = WriteBatch {
        entities: ["v1", "v2", "v3", "v4", "v5", "v6"]
            .iter()
            .map(|id| entity(id, "Vectored", "has a vector", None))
            .collect(),
        vectors: vec![
            vector("v1", MODEL, &[1.0, 0.0, 0.0, 0.0]),
            vector("v2", MODEL, &odd),
            vector("v3", MODEL, &[1.0, 0.0, 0.0, 0.0]),
            vector("v4", "another-model", &[1.0, 0.0, 0.0, 0.0]),
            vector("v5", MODEL, &[1.0, 0.0]),
        ],
        ..WriteBatch::default()
    };
    storage.apply(batch).await.map_err(io("write vectors"))?;
    let read = storage.get_vector("v2").await.map_err(io("get vector"))?;
    rule!(
        read.as_ref().map(|v| (v.model.as_str(), bits(&v.vector))) == Some((MODEL, bits(&odd))),
        "a vector reads back bit for bit with its model, got {read:?}"
    );
    rule!(
        storage
            .get_vector("v6")
            .await
            .map_err(io("get vector"))?
            .is_none(),
        "an entity written without a vector has none"
    );
    let orphan = WriteBatch {
        entities: vec![entity("v7", "Orphan", "never written", None)],
        vectors: vec![vector("nobody", MODEL, &[1.0])],
        ..WriteBatch::default()
    };
    rule!(
        matches!(
            storage.apply(orphan).await,
            Err(StorageError::Invalid { .. })
        ),
        "a vector of an entity that does not exist is refused"
    );
    rule!(
        storage.get_entity("v7").await.map_err(io("get"))?.is_none(),
        "and nothing of its batch is written"
    );
    Ok(())
}

/// Search ranks by cosine, equal scores by id, only vectors of the query's model and
/// length, at most `limit`.
async fn check_search(storage: &dyn Storage) -> Result<(), String> {
    let found = nearest(storage, MODEL, &[1.0, 0.0, 0.0, 0.0]).await?;
    rule!(
        found == ["v1", "v3", "v2"],
        "search_vectors: best first, ties by id, one model and length; got {found:?}"
    );
    let hits = storage
        .search_vectors(MODEL, &[1.0, 0.0, 0.0, 0.0], 1)
        .await
        .map_err(io("search vectors"))?;
    rule!(
        hits.len() == 1 && hits[0].score == 1.0,
        "the limit holds and a hit's score is its cosine, got {hits:?}"
    );
    let other = nearest(storage, "another-model", &[0.0, 1.0, 0.0, 0.0]).await?;
    rule!(
        other == ["v4"],
        "another model's vectors are searched apart, got {other:?}"
    );
    rule!(
        nearest(storage, "unknown-model", &[1.0]).await?.is_empty(),
        "a model with no vectors finds nothing"
    );
    check_search_with_stored(storage).await
}

/// `search_vectors_with_stored` finds what `search_vectors` finds, each hit with the
/// vector `get_vector` reads for it (bit for bit).
async fn check_search_with_stored(storage: &dyn Storage) -> Result<(), String> {
    let query = [1.0, 0.0, 0.0, 0.0];
    let plain = storage
        .search_vectors(MODEL, &query, 10)
        .await
        .map_err(io("search vectors"))?;
    let read = storage
        .search_vectors_with_stored(MODEL, &query, 10)
        .await
        .map_err(io("search vectors with stored"))?;
    let hits: Vec<_> = read.iter().map(|(hit, _)| hit.clone()).collect();
    rule!(
        hits == plain,
        "search_vectors_with_stored found {hits:?}, search_vectors {plain:?}"
    );
    for (hit, vector) in &read {
        let stored = storage
            .get_vector(&hit.entity.id)
            .await
            .map_err(io("get vector"))?;
        let key = |v: &Option<EntityVector>| {
            v.as_ref()
                .map(|v| (v.entity_id.clone(), v.model.clone(), bits(&v.vector)))
        };
        rule!(
            key(vector) == key(&stored),
            "entity {}: search_vectors_with_stored read {vector:?}, get_vector {stored:?}",
            hit.entity.id
        );
    }
    Ok(())
}

/// A newer vector replaces the older; deleting an entity deletes its vector.
async fn check_replace_and_delete(storage: &dyn Storage) -> Result<(), String> {
    storage
        .apply(WriteBatch {
            vectors: vec![vector("v1", MODEL, &[0.0, 0.0, 0.0, 1.0])],
            ..WriteBatch::default()
        })
        .await
        .map_err(io("replace vector"))?;
    let found = nearest(storage, MODEL, &[1.0, 0.0, 0.0, 0.0]).await?;
    rule!(
        found == ["v3", "v2", "v1"],
        "a vector is replaced, got {found:?}"
    );
    storage
        .apply(WriteBatch {
            delete_entities: vec!["v3".into()],
            ..WriteBatch::default()
        })
        .await
        .map_err(io("delete"))?;
    rule!(
        storage
            .get_vector("v3")
            .await
            .map_err(io("get vector"))?
            .is_none(),
        "a deleted entity's vector is gone"
    );
    let found = nearest(storage, MODEL, &[1.0, 0.0, 0.0, 0.0]).await?;
    rule!(found == ["v2", "v1"], "and out of search, got {found:?}");
    Ok(())
}
