//! Entity vectors in SQLite: the `entity_vectors` table (migration 3), one row per
//! entity, its numbers a BLOB of little-endian `f32`s, deleted with its entity by
//! `ON DELETE CASCADE`. Search reads the vectors of one model and length and ranks them
//! in Rust ([`rank_by_cosine`]), so it orders exactly like the other backends.

use std::path::Path;

use rusqlite::{Connection, params};

use super::{ENTITY_BY_ID_SQL, collect_rows, database_error, entity_from, execute_cached};
use crate::storage::StorageError;
use crate::storage::records::SearchHit;
use crate::storage::vectors::{EntityVector, rank_by_cosine, vector_from_bytes};

/// Inserts or replaces `vectors` in the open transaction of `transaction`.
pub(super) fn write_vectors(
    transaction: &Connection,
    path: &Path,
    vectors: &[EntityVector],
) -> Result<(), StorageError> {
    for vector in vectors {
        execute_cached(
            transaction,
                "INSERT INTO entity_vectors (entity_id, model, dimensions, vector) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(entity_id) DO UPDATE SET model = excluded.model,
                     dimensions = excluded.dimensions, vector = excluded.vector",
                params![
                    vector.entity_id,
                    vector.model,
                    vector.dimensions() as i64,
                    vector.to_bytes()
                ],
            )
            .map_err(|e| database_error(path, &e))?;
    }
    Ok(())
}

/// Decodes a stored row; a BLOB whose length disagrees with its dimensions is corrupt.
fn decode(
    entity_id: String,
    model: String,
    dimensions: i64,
    bytes: &[u8],
) -> Result<EntityVector, StorageError> {
    match vector_from_bytes(bytes) {
        Some(vector) if vector.len() as i64 == dimensions => Ok(EntityVector {
            entity_id,
            model,
            vector,
        }),
        _ => Err(StorageError::Corruption {
            what: "vector",
            id: entity_id,
        }),
    }
}

type Row = (String, String, i64, Vec<u8>);

fn row_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

/// The vector of entity `entity_id`.
pub(super) fn get_vector(
    connection: &Connection,
    path: &Path,
    entity_id: &str,
) -> Result<Option<EntityVector>, StorageError> {
    let rows = collect_rows(
        connection,
        path,
        "SELECT entity_id, model, dimensions, vector FROM entity_vectors WHERE entity_id = ?1",
        [entity_id],
        row_of,
    )?;
    rows.into_iter()
        .next()
        .map(|(id, model, dimensions, bytes)| decode(id, model, dimensions, &bytes))
        .transpose()
}

/// The entities nearest `query` among the vectors of `model` and its length, each with
/// its vector (what `get_vector` reads for it: the row's model is `model`, its numbers
/// these). Reads only what ranking needs (the id and the numbers: the model and the length
/// are the query's), decoding each BLOB where SQLite holds it. The rows are put in id
/// order here, not by an `ORDER BY` (which copied every row, numbers and all, through a
/// sorter): the order the ranking and the first corrupt row reported see is the same.
pub(super) fn search_vectors(
    connection: &Connection,
    path: &Path,
    model: &str,
    query: &[f32],
    limit: usize,
) -> Result<Vec<(SearchHit, EntityVector)>, StorageError> {
    let dimensions = query.len();
    let mut rows = collect_rows(
        connection,
        path,
        "SELECT entity_id, vector FROM entity_vectors WHERE model = ?1 AND dimensions = ?2",
        params![model, dimensions as i64],
        |row| {
            let numbers = vector_from_bytes(row.get_ref(1)?.as_blob()?);
            Ok((row.get::<_, String>(0)?, numbers))
        },
    )?;
    // Ids are the table's primary key, so no two are equal: the order is total, and the
    // first vector of the wrong length is reported in id order as before (Rust's string
    // order is SQLite's BINARY collation on UTF-8). An error reading a row itself (a
    // damaged page, a vector that is not a BLOB) now comes in the index's scan order,
    // where the sorter read every row first: a different message, only on a damaged file.
    rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let vectors = rows
        .into_iter()
        .map(|(id, numbers)| match numbers {
            Some(numbers) if numbers.len() == dimensions => Ok((id, numbers)),
            _ => Err(StorageError::Corruption { what: "vector", id }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let candidates = vectors.iter().map(|(id, v)| (id.as_str(), v.as_slice()));
    let ranked = rank_by_cosine(candidates, query, limit);
    let mut hits = Vec::with_capacity(ranked.len());
    for (id, score) in ranked {
        let Ok(at) = vectors.binary_search_by(|(other, _)| other.as_str().cmp(&id)) else {
            continue;
        };
        if let Some(entity) = collect_rows(connection, path, &ENTITY_BY_ID_SQL, [&id], entity_from)?
            .into_iter()
            .next()
        {
            let vector = EntityVector {
                entity_id: id,
                model: model.to_owned(),
                vector: vectors[at].1.clone(),
            };
            hits.push((SearchHit { entity, score }, vector));
        }
    }
    Ok(hits)
}
