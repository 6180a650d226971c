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
    // A real runtime: SQLite is a real store, and umi-core sits below umi-dst's doors.
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
