//! A database started from the image is the freshly migrated database: the same schema,
//! header pragmas and rows, the same rows after the same writes (FTS5's shadow tables
//! included), and the same search results, scores and order.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::executor::block_on;
use rusqlite::Connection;
use rusqlite::types::Value;
use umi_core::storage::conformance;
use umi_core::storage::{
    Entity, EntityType, EntityVector, EvolutionLink, EvolutionType, Note, SCHEMA_VERSION,
    SqliteStorage, Storage, UMI_APPLICATION_ID, WriteBatch,
};

use super::{connect, restore};

/// Databases these tests opened, for unique names (tests run in parallel).
static OPENED: AtomicU64 = AtomicU64::new(0);

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", OPENED.fetch_add(1, Ordering::Relaxed))
}

/// A freshly migrated database, and an idle connection that holds it.
fn fresh() -> (Connection, SqliteStorage) {
    let name = unique("umi-image-test-fresh");
    let storage = SqliteStorage::open_in_memory(&name).unwrap();
    (connect(&name).unwrap(), storage)
}

/// A database copied from the image, opened as `SqliteDisk` opens it.
fn from_image() -> (Connection, SqliteStorage) {
    let name = unique("umi-image-test-copy");
    let disk = restore(&name).unwrap();
    (disk, SqliteStorage::open_in_memory(&name).unwrap())
}

/// What the header says (the change counter and schema cookie aside: SQLite bumps them
/// when it writes pages, and nothing reads them).
fn pragmas(connection: &Connection) -> Vec<(&'static str, Value)> {
    let names = [
        "application_id",
        "user_version",
        "page_size",
        "page_count",
        "freelist_count",
        "encoding",
        "auto_vacuum",
    ];
    names
        .into_iter()
        .map(|name| {
            let value = connection
                .pragma_query_value(None, name, |row| row.get::<_, Value>(0))
                .unwrap();
            (name, value)
        })
        .collect()
}

type Rows = Vec<Vec<Value>>;

/// The schema, then every stored table's rows, sorted.
fn dump(connection: &Connection) -> Vec<(String, Rows)> {
    let mut schema = connection
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
        .unwrap();
    let objects: Rows = schema
        .query_map([], |row| (0..4).map(|i| row.get::<_, Value>(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut tables = vec![("sqlite_master".to_owned(), objects.clone())];
    for object in &objects {
        let (Value::Text(kind), Value::Text(name), Value::Text(sql)) =
            (&object[0], &object[1], &object[3])
        else {
            continue;
        };
        if kind != "table" || sql.starts_with("CREATE VIRTUAL TABLE") {
            continue;
        }
        let mut select = connection
            .prepare(&format!("SELECT * FROM \"{name}\""))
            .unwrap();
        let columns = select.column_count();
        let mut rows: Rows = select
            .query_map([], |row| {
                (0..columns).map(|i| row.get::<_, Value>(i)).collect()
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort_by_key(|row| format!("{row:?}"));
        tables.push((name.clone(), rows));
    }
    tables
}

fn entity(id: &str, name: &str, content: &str, note: &str) -> Entity {
    Entity {
        id: id.into(),
        name: name.into(),
        entity_type: EntityType::Person,
        content: content.into(),
        confidence: 0.8,
        note_id: Some(note.into()),
        created_at_ms: 1_000,
        updated_at_ms: 2_000,
    }
}

/// Writes in several transactions (several FTS5 segments), with an update and a delete.
fn batches() -> Vec<WriteBatch> {
    let note = |id: &str, text: &str| Note {
        id: id.into(),
        text: text.into(),
        created_at_ms: 500,
    };
    let vector = |id: &str, seed: f32| EntityVector {
        entity_id: id.into(),
        model: "sim-embed".into(),
        vector: (0..8).map(|i| seed + i as f32 / 8.0).collect(),
    };
    let sentences = [
        ("alice", "Alice", "Alice works at Acme as an engineer"),
        ("bob", "Bob", "Bob lives in Paris and works at Acme"),
        ("carol", "Carol", "Carol likes tea and lives in Oslo"),
        ("dave", "Dave", "Dave is an engineer in Oslo"),
    ];
    let mut batches: Vec<WriteBatch> = sentences
        .iter()
        .enumerate()
        .map(|(i, (id, name, content))| {
            let note_id = format!("note-{i}");
            WriteBatch {
                notes: vec![note(&note_id, content)],
                entities: vec![entity(id, name, content, &note_id)],
                vectors: vec![vector(id, i as f32)],
                ..WriteBatch::default()
            }
        })
        .collect();
    batches.push(WriteBatch {
        entities: vec![entity("bob", "Bob", "Bob moved to Oslo", "note-1")],
        links: vec![EvolutionLink {
            id: "link-1".into(),
            from_id: "bob".into(),
            to_id: "dave".into(),
            evolution_type: EvolutionType::Extend,
            reason: "both in Oslo".into(),
            confidence: 0.5,
            created_at_ms: 3_000,
        }],
        ..WriteBatch::default()
    });
    batches.push(WriteBatch {
        delete_entities: vec!["carol".into()],
        ..WriteBatch::default()
    });
    batches
}

#[test]
fn an_image_started_database_is_a_freshly_migrated_one() {
    let (fresh_disk, fresh) = fresh();
    let (image_disk, image) = from_image();
    assert_eq!(block_on(image.schema_version()).unwrap(), SCHEMA_VERSION);
    assert_eq!(block_on(fresh.schema_version()).unwrap(), SCHEMA_VERSION);
    let header = pragmas(&image_disk);
    assert_eq!(header, pragmas(&fresh_disk));
    assert!(header.contains(&("application_id", Value::Integer(UMI_APPLICATION_ID.into()))));
    let schema = dump(&image_disk);
    assert!(schema.len() > 5, "no tables copied: {schema:?}");
    assert_eq!(schema, dump(&fresh_disk));
}

#[test]
fn the_same_writes_leave_the_same_rows_and_searches() {
    let (fresh_disk, fresh) = fresh();
    let (image_disk, image) = from_image();
    for batch in batches() {
        block_on(fresh.apply(batch.clone())).unwrap();
        block_on(image.apply(batch)).unwrap();
    }
    assert_eq!(dump(&image_disk), dump(&fresh_disk));
    assert_eq!(pragmas(&image_disk), pragmas(&fresh_disk));
    for query in ["Oslo", "engineer Acme", "Alice works", "tea", "Paris"] {
        let expected = block_on(fresh.search(query, 8)).unwrap();
        assert_eq!(
            block_on(image.search(query, 8)).unwrap(),
            expected,
            "{query}"
        );
        let scores = |hits: &[umi_core::storage::SearchHit]| {
            hits.iter().map(|h| h.score.to_bits()).collect::<Vec<_>>()
        };
        let found = block_on(image.search(query, 8)).unwrap();
        assert_eq!(scores(&found), scores(&expected), "{query}");
    }
    assert!(!block_on(image.search("Oslo", 8)).unwrap().is_empty());
    let probe: Vec<f32> = (0..8).map(|i| 1.0 + i as f32 / 8.0).collect();
    assert_eq!(
        block_on(image.search_vectors("sim-embed", &probe, 8)).unwrap(),
        block_on(fresh.search_vectors("sim-embed", &probe, 8)).unwrap()
    );
}

#[test]
fn each_copy_is_its_own_database() {
    let (_first_disk, first) = from_image();
    let (_second_disk, second) = from_image();
    block_on(first.apply(batches().remove(0))).unwrap();
    assert_eq!(block_on(first.count_entities()).unwrap(), 1);
    assert_eq!(block_on(second.count_entities()).unwrap(), 0);
    let (_third_disk, third) = from_image();
    assert_eq!(block_on(third.count_entities()).unwrap(), 0);
}

#[test]
fn an_image_started_database_passes_conformance_and_survives_reopening() {
    let name = unique("umi-image-test-reopen");
    let _disk = restore(&name).unwrap();
    let storage = SqliteStorage::open_in_memory(&name).unwrap();
    block_on(conformance::check(&storage)).unwrap();
    let count = block_on(storage.count_entities()).unwrap();
    drop(storage);
    let reopened = SqliteStorage::open_in_memory(&name).unwrap();
    assert_eq!(block_on(reopened.count_entities()).unwrap(), count);
    assert_eq!(block_on(reopened.schema_version()).unwrap(), SCHEMA_VERSION);
}
