//! Writing a batch's entities, and keeping the full-text index in few segments.
//!
//! The triggers index each entity in FTS5, which keeps what a transaction indexes pending
//! in memory and writes it out as a new segment of the index when the next statement of
//! the transaction opens its savepoint (FTS5's `xSavepoint` flushes), or at commit. Every
//! search opens every segment of every term it looks up (twice: bm25 counts each term's
//! documents with a second lookup), so a search costs about as many segment lookups as the
//! index has segments. Two things keep that number small:
//!
//! - A batch's entities are written by one INSERT statement of up to
//!   [`ENTITY_ROWS_PER_STATEMENT_MAX`] rows, not one statement per entity (which wrote one
//!   segment per entity).
//! - A batch that changed the index ends with FTS5's own incremental `merge` command, at
//!   most [`INDEX_MERGE_PAGES_MAX`] pages of work: a level of the index holding
//!   `usermerge` (default 4) segments is merged into one on the next level. FTS5's
//!   automatic merging counts work in units of 64 pages written, so an index written a
//!   few small batches at a time (a memory's usual load) otherwise grew to 16 segments on
//!   a level before its emergency merge. The bounded page budget keeps each write's extra
//!   work bounded in a large index (a big merge advances a little per batch).
//!
//! Neither changes a row or a result: the rows, their `seq` (assigned in batch order, as
//! before), what a search finds and its bm25 scores are the same, because FTS5 combines
//! the segments of a term on every read; how the index is split into segments changes
//! how much a read opens, not what it reads. Neither changes the schema or the index's
//! configuration (issue 41; ADR 0027 explains why those stay).
//!
//! The INSERT always has room for [`ENTITY_ROWS_PER_STATEMENT_MAX`] rows (one prepared
//! statement, kept in the connection's cache); rows past the batch's last entity are NULL
//! and filtered out.

use std::path::Path;
use std::sync::LazyLock;

use rusqlite::Connection;
use rusqlite::types::Null;

use super::database_error;
use crate::storage::StorageError;
use crate::storage::records::Entity;

/// Entities one INSERT statement writes.
pub(super) const ENTITY_ROWS_PER_STATEMENT_MAX: usize = 4;

/// Pages of merge work a batch that changed the full-text index may do.
pub(super) const INDEX_MERGE_PAGES_MAX: i64 = 16;

/// Parameters per entity row (the columns written).
const ENTITY_PARAMETERS: usize = 8;

/// The upsert of up to [`ENTITY_ROWS_PER_STATEMENT_MAX`] entities, in the order of their
/// rows (an `INSERT ... SELECT` inserts rows in the order the `SELECT` yields them, and
/// a `VALUES` list yields them as written).
static UPSERT_SQL: LazyLock<String> = LazyLock::new(|| {
    let rows = (0..ENTITY_ROWS_PER_STATEMENT_MAX)
        .map(|row| {
            let first = row * ENTITY_PARAMETERS + 1;
            let parameters = (first..first + ENTITY_PARAMETERS)
                .map(|index| format!("?{index}"))
                .collect::<Vec<_>>();
            format!("({})", parameters.join(", "))
        })
        .collect::<Vec<_>>();
    format!(
        "INSERT INTO entities (id, name, entity_type, content, confidence, note_id, created_at_ms, updated_at_ms)
         SELECT column1, column2, column3, column4, column5, column6, column7, column8
         FROM (VALUES {}) WHERE column1 IS NOT NULL
         ON CONFLICT(id) DO UPDATE SET name = excluded.name, entity_type = excluded.entity_type,
             content = excluded.content, confidence = excluded.confidence, note_id = excluded.note_id,
             created_at_ms = excluded.created_at_ms, updated_at_ms = excluded.updated_at_ms",
        rows.join(", ")
    )
});

/// Inserts or updates `entities` in the open transaction of `transaction`, in order.
pub(super) fn write_entities(
    transaction: &Connection,
    path: &Path,
    entities: &[Entity],
) -> Result<(), StorageError> {
    let db = |e: rusqlite::Error| database_error(path, &e);
    for chunk in entities.chunks(ENTITY_ROWS_PER_STATEMENT_MAX) {
        let mut statement = transaction.prepare_cached(&UPSERT_SQL).map_err(db)?;
        for row in 0..ENTITY_ROWS_PER_STATEMENT_MAX {
            let first = row * ENTITY_PARAMETERS + 1;
            match chunk.get(row) {
                Some(entity) => bind_entity(&mut statement, first, entity).map_err(db)?,
                None => {
                    for index in first..first + ENTITY_PARAMETERS {
                        statement.raw_bind_parameter(index, Null).map_err(db)?;
                    }
                }
            }
        }
        statement.raw_execute().map_err(db)?;
    }
    Ok(())
}

/// Binds `entity`'s columns to the parameters from `first` on.
fn bind_entity(
    statement: &mut rusqlite::Statement<'_>,
    first: usize,
    entity: &Entity,
) -> rusqlite::Result<()> {
    statement.raw_bind_parameter(first, &entity.id)?;
    statement.raw_bind_parameter(first + 1, &entity.name)?;
    statement.raw_bind_parameter(first + 2, entity.entity_type.name())?;
    statement.raw_bind_parameter(first + 3, &entity.content)?;
    statement.raw_bind_parameter(first + 4, entity.confidence)?;
    statement.raw_bind_parameter(first + 5, &entity.note_id)?;
    statement.raw_bind_parameter(first + 6, entity.created_at_ms as i64)?;
    statement.raw_bind_parameter(first + 7, entity.updated_at_ms as i64)
}

/// FTS5's incremental merge, at most [`INDEX_MERGE_PAGES_MAX`] pages (see the module
/// docs): run at the end of a batch that wrote or deleted entities.
pub(super) fn merge_index(transaction: &Connection, path: &Path) -> Result<(), StorageError> {
    transaction
        .prepare_cached("INSERT INTO entities_fts(entities_fts, rank) VALUES ('merge', ?1)")
        .and_then(|mut statement| statement.execute([INDEX_MERGE_PAGES_MAX]))
        .map(|_| ())
        .map_err(|e| database_error(path, &e))
}
