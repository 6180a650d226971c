//! The SQLite store's own unit tests (the shared rules are in `storage::conformance`).

use super::*;
use crate::storage::conformance::{entity, link};
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
                let statement = c.prepare_cached(&SEARCH_SQL).unwrap();
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

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// The segments of the full-text index (each has at least one row in `_idx`).
fn index_segments(storage: &SqliteStorage) -> i64 {
    block_on(storage.call(|c| {
        c.query_row(
            "SELECT count(DISTINCT segid) FROM entities_fts_idx",
            [],
            |row| row.get(0),
        )
        .map_err(|e| database_error(Path::new("test"), &e))
    }))
    .unwrap()
}

/// Pins issue 41's finding: a statement per entity made FTS5 write a segment of its
/// index per entity (it flushes what it holds pending when the next statement opens its
/// savepoint), and every search opens every segment. A batch's entities are one
/// segment.
#[test]
fn a_batch_of_entities_is_one_fts5_segment() {
    let storage = SqliteStorage::open_in_memory("entities-one-segment").unwrap();
    let batch = WriteBatch {
        entities: (0..3)
            .map(|i| entity(&format!("e{i}"), "Alice", "met Bob at Acme in Paris", None))
            .collect(),
        ..WriteBatch::default()
    };
    block_on(storage.apply(batch)).unwrap();
    assert_eq!(index_segments(&storage), 1);
    assert_eq!(block_on(storage.search("paris", 10)).unwrap().len(), 3);
}

/// Pins issue 41's other finding: FTS5's automatic merging counts 64 pages written
/// before it merges, so an index written one small batch at a time kept every batch's
/// segment (15 after 15 batches). The merge each batch ends with keeps fewer than
/// `usermerge` (4) on a level, plus the last batch's: 6 after 15.
#[test]
fn small_batches_leave_few_fts5_segments() {
    let storage = SqliteStorage::open_in_memory("entities-few-segments").unwrap();
    for i in 0..15 {
        let batch = WriteBatch {
            entities: vec![entity(
                &format!("e{i:02}"),
                "Alice",
                "met Bob in Paris",
                None,
            )],
            ..WriteBatch::default()
        };
        block_on(storage.apply(batch)).unwrap();
    }
    let segments = index_segments(&storage);
    assert!(segments <= 6, "{segments} segments after 15 batches");
    assert_eq!(block_on(storage.search("paris", 20)).unwrap().len(), 15);
    let forget = WriteBatch {
        delete_entities: vec!["e03".into()],
        ..WriteBatch::default()
    };
    block_on(storage.apply(forget)).unwrap();
    assert_eq!(block_on(storage.search("paris", 20)).unwrap().len(), 14);
}

/// A batch longer than one statement's rows, with an entity written twice, leaves the
/// rows the in-memory store leaves, in the same order (the batch's), the later write of
/// an id winning.
#[test]
fn a_long_batch_keeps_its_order_and_its_last_write() {
    use crate::storage::InMemoryStorage;
    let rows = 2 * entities::ENTITY_ROWS_PER_STATEMENT_MAX + 3;
    let mut written: Vec<Entity> = (0..rows)
        .map(|i| {
            entity(
                &format!("e{i:02}"),
                &format!("Name{i}"),
                "works at Acme",
                None,
            )
        })
        .collect();
    written.push(entity("e03", "Name3", "moved to Oslo", None));
    written.push(entity("e42", "Late", "written last", None));
    let batch = WriteBatch {
        entities: written,
        ..WriteBatch::default()
    };
    let sqlite = SqliteStorage::open_in_memory("entities-long-batch").unwrap();
    let memory = InMemoryStorage::new();
    block_on(sqlite.apply(batch.clone())).unwrap();
    block_on(memory.apply(batch)).unwrap();
    let listed = block_on(sqlite.list_entities(0, 100)).unwrap();
    assert_eq!(listed, block_on(memory.list_entities(0, 100)).unwrap());
    assert_eq!(listed.len(), rows + 1);
    assert_eq!(listed[3].content, "moved to Oslo");
    assert_eq!(listed[rows].id, "e42");
    let found = block_on(sqlite.search("oslo", 10)).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].entity.id, "e03");
}

/// An id written twice inside one multi-row statement (`[a, b, a', c]`, one statement's
/// rows): the later write wins and the order is the in-memory store's, as when the two
/// writes fall in different statements (the review of issue 41's batching).
#[test]
fn an_id_written_twice_in_one_statement_keeps_its_last_write() {
    use crate::storage::InMemoryStorage;
    const { assert!(entities::ENTITY_ROWS_PER_STATEMENT_MAX >= 4) };
    let batch = WriteBatch {
        entities: vec![
            entity("a", "Ann", "lives in Rome", None),
            entity("b", "Bob", "lives in Lima", None),
            entity("a", "Ann", "moved to Oslo", None),
            entity("c", "Cy", "lives in Kyiv", None),
        ],
        ..WriteBatch::default()
    };
    let sqlite = SqliteStorage::open_in_memory("entities-twice-in-one").unwrap();
    let memory = InMemoryStorage::new();
    block_on(sqlite.apply(batch.clone())).unwrap();
    block_on(memory.apply(batch)).unwrap();
    let listed = block_on(sqlite.list_entities(0, 10)).unwrap();
    assert_eq!(listed, block_on(memory.list_entities(0, 10)).unwrap());
    assert_eq!(listed.len(), 3);
    assert!(block_on(sqlite.search("rome", 10)).unwrap().is_empty());
    let found = block_on(sqlite.search("oslo", 10)).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].entity.id, "a");
}

/// A batch that fails after some of its rows were written (its link's id is taken)
/// writes nothing and leaves no transaction open: the next batch commits. `BEGIN` and
/// `COMMIT` are each one statement prepared once per connection (issue 41: compiling them
/// for every batch cost as much as running them).
#[test]
fn a_failed_batch_writes_nothing_and_leaves_no_transaction_open() {
    let storage = SqliteStorage::open_in_memory("batch-rolled-back").unwrap();
    let first = WriteBatch {
        entities: vec![
            entity("a", "Ann", "lives in Rome", None),
            entity("b", "Bob", "lives in Lima", None),
        ],
        links: vec![link("l1", "a", "b")],
        ..WriteBatch::default()
    };
    block_on(storage.apply(first)).unwrap();
    let taken = WriteBatch {
        entities: vec![entity("c", "Cy", "lives in Kyiv", None)],
        links: vec![link("l1", "c", "a")],
        ..WriteBatch::default()
    };
    assert!(block_on(storage.apply(taken)).is_err());
    assert_eq!(block_on(storage.get_entity("c")).unwrap(), None);
    assert!(block_on(storage.search("kyiv", 10)).unwrap().is_empty());
    let open = block_on(storage.call(|c| Ok(!c.is_autocommit()))).unwrap();
    assert!(!open, "the failed batch left its transaction open");
    let last = WriteBatch {
        entities: vec![entity("d", "Dee", "lives in Oslo", None)],
        ..WriteBatch::default()
    };
    block_on(storage.apply(last)).unwrap();
    assert!(block_on(storage.get_entity("d")).unwrap().is_some());
    let runs = |sql: &'static str| {
        block_on(storage.call(move |c| {
            Ok(c.prepare_cached(sql)
                .unwrap()
                .get_status(StatementStatus::Run))
        }))
        .unwrap()
    };
    assert_eq!(runs("BEGIN DEFERRED"), 3, "three batches began");
    assert_eq!(runs("COMMIT"), 2, "two batches committed");
}
