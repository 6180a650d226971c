//! The SQLite store's own unit tests (the shared rules are in `storage::conformance`).

use super::*;
use crate::storage::conformance::entity;
use rusqlite::StatementStatus;

/// Pins issue 26's finding: without the query planner stability guarantee SQLite
/// re-prepared the search statement on every call (each new MATCH expression bound to
/// it), half of a search's time. Two searches with different expressions must run
/// the one prepared statement, never re-preparing it.
#[test]
fn a_search_reuses_its_prepared_statement() {
    let storage = SqliteStorage::open_in_memory("statements-reused").unwrap();
    let write = |id: &str| WriteBatch {
        entities: vec![entity(id, "Alice", "met Bob at Acme in Paris", None)],
        ..WriteBatch::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        storage.apply(write("e1")).await.unwrap();
        storage.apply(write("e2")).await.unwrap();
        assert_eq!(storage.search("alice paris", 10).await.unwrap().len(), 2);
        assert_eq!(storage.search("bob", 10).await.unwrap().len(), 2);
        let (reprepared, runs) = storage
            .call(|c| {
                let statement = c.prepare_cached(&search_sql()).unwrap();
                Ok((
                    statement.get_status(StatementStatus::RePrepare),
                    statement.get_status(StatementStatus::Run),
                ))
            })
            .await
            .unwrap();
        assert_eq!(runs, 2, "both searches ran the cached statement");
        assert_eq!(reprepared, 0, "a search re-prepared its statement");
    });
}

/// An in-memory database migrated only up to `version`.
fn in_memory_at(name: &str, version: u32) -> SqliteStorage {
    let path = PathBuf::from(format!("file:{name}?mode=memory&cache=shared"));
    let connection = Connection::open(&path).unwrap();
    let connection = prepare_connection(connection, &path, version).unwrap();
    SqliteStorage {
        path,
        runner: Runner::Inline(Mutex::new(connection)),
    }
}

/// Rows in the FTS5 index's `_data` table: its structure, averages and segment pages.
fn fts_rows(storage: &SqliteStorage) -> i64 {
    let Runner::Inline(connection) = &storage.runner else {
        panic!("an in-memory store runs inline");
    };
    let connection = connection.lock().unwrap();
    connection
        .query_row("SELECT count(*) FROM entities_fts_data", [], |row| {
            row.get(0)
        })
        .unwrap()
}

/// Writes in many small transactions (one FTS5 segment each), with updates and deletes.
fn small_transactions() -> Vec<WriteBatch> {
    let words = [
        "alice", "bob", "carol", "acme", "paris", "oslo", "tea", "engineer", "lives", "works",
        "moved", "project",
    ];
    (0..30_usize)
        .map(|i| {
            let content: Vec<&str> = (0..6)
                .map(|k| words[(i * 7 + k * 5) % words.len()])
                .collect();
            let id = format!("e{}", i % 11);
            WriteBatch {
                entities: vec![entity(&id, words[i % 3], &content.join(" "), None)],
                delete_entities: if i % 9 == 8 {
                    vec![format!("e{}", (i + 3) % 11)]
                } else {
                    vec![]
                },
                ..WriteBatch::default()
            }
        })
        .collect()
}

/// Migration 4 (`crisismerge = 3`) keeps fewer FTS5 segments for the same writes, and
/// every search still finds the same entities, in the same order, with the same scores
/// to the bit.
#[test]
fn migration_4_merges_segments_and_searches_the_same() {
    let before = in_memory_at("fts-version-3", 3);
    let after = in_memory_at("fts-version-4", 4);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        for batch in small_transactions() {
            // A batch may delete what is not there: both stores answer alike.
            let old = before.apply(batch.clone()).await.map_err(|e| e.to_string());
            assert_eq!(after.apply(batch).await.map_err(|e| e.to_string()), old);
        }
        let queries = [
            "alice",
            "paris oslo",
            "tea engineer works",
            "moved project acme",
            "bob",
        ];
        for query in queries {
            let old = before.search(query, 8).await.unwrap();
            let new = after.search(query, 8).await.unwrap();
            assert!(!old.is_empty(), "{query} found nothing");
            assert_eq!(new, old, "{query}");
            let bits =
                |hits: &[SearchHit]| hits.iter().map(|h| h.score.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&new), bits(&old), "{query}");
        }
        assert_eq!(after.schema_version().await.unwrap(), 4);
    });
    assert!(
        fts_rows(&after) < fts_rows(&before),
        "segments not merged: {} rows against {}",
        fts_rows(&after),
        fts_rows(&before)
    );
}
