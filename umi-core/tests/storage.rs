//! Storage: the conformance suite on both backends, and SQLite's handling of files that
//! are not ours, newer schemas, migrations and reopening.

use umi_core::storage::EntityType;
use umi_core::storage::{
    Entity, EntityVector, InMemoryStorage, Note, SCHEMA_VERSION, SqliteStorage, Storage,
    StorageError, UMI_APPLICATION_ID, WriteBatch, conformance,
};

use crate::support::TempDir;

#[tokio::test]
async fn in_memory_passes_conformance() {
    conformance::check(&InMemoryStorage::new()).await.unwrap();
}

#[tokio::test]
async fn sqlite_passes_conformance() {
    let dir = TempDir::new("sqlite-conformance");
    let storage = SqliteStorage::open(dir.file("memory.db")).unwrap();
    conformance::check(&storage).await.unwrap();
    assert_eq!(storage.schema_version().await.unwrap(), SCHEMA_VERSION);
}

fn note(id: &str, text: &str) -> Note {
    Note {
        id: id.into(),
        text: text.into(),
        created_at_ms: 1,
    }
}

#[tokio::test]
async fn sqlite_data_survives_reopening() {
    let dir = TempDir::new("sqlite-reopen");
    let path = dir.file("memory.db");
    {
        let storage = SqliteStorage::open(&path).unwrap();
        storage
            .apply(WriteBatch {
                notes: vec![note("n1", "kept")],
                ..WriteBatch::default()
            })
            .await
            .unwrap();
    }
    let storage = SqliteStorage::open(&path).unwrap();
    assert_eq!(
        storage.get_note("n1").await.unwrap(),
        Some(note("n1", "kept"))
    );
}

#[tokio::test]
async fn sqlite_in_memory_passes_conformance() {
    let storage = SqliteStorage::open_in_memory("umi-core-conformance").unwrap();
    conformance::check(&storage).await.unwrap();
    assert_eq!(storage.schema_version().await.unwrap(), SCHEMA_VERSION);
}

/// A named in-memory database outlives a closed handle while another is open (so
/// close-and-reopen keeps what was committed), and is gone with its last handle.
#[tokio::test]
async fn sqlite_in_memory_survives_reopening_while_held() {
    let name = "umi-core-reopen";
    let held = SqliteStorage::open_in_memory(name).unwrap();
    {
        let storage = SqliteStorage::open_in_memory(name).unwrap();
        storage
            .apply(WriteBatch {
                notes: vec![note("n1", "kept")],
                ..WriteBatch::default()
            })
            .await
            .unwrap();
    }
    let reopened = SqliteStorage::open_in_memory(name).unwrap();
    assert_eq!(
        reopened.get_note("n1").await.unwrap(),
        Some(note("n1", "kept"))
    );
    drop((held, reopened));
    let fresh = SqliteStorage::open_in_memory(name).unwrap();
    assert_eq!(fresh.get_note("n1").await.unwrap(), None);
    let other = SqliteStorage::open_in_memory("umi-core-reopen-other").unwrap();
    assert_eq!(other.count_entities().await.unwrap(), 0);
}

#[test]
fn a_bad_in_memory_name_is_refused() {
    for name in ["", "a/b", "x?mode=rwc", "a b", &"n".repeat(129)] {
        let error = SqliteStorage::open_in_memory(name).unwrap_err();
        assert!(
            matches!(&error, StorageError::Invalid { reason } if reason.contains("in-memory database name")),
            "{name:?}: {error}"
        );
    }
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_untouched() {
    let dir = TempDir::new("sqlite-garbage");
    let path = dir.file("notes.txt");
    let content = b"these are my notes, not a database\n".repeat(100);
    std::fs::write(&path, &content).unwrap();
    let error = SqliteStorage::open(&path).unwrap_err();
    assert!(matches!(error, StorageError::NotOurs { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("not a SQLite file"),
        "{message}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        content,
        "the file must be left exactly as it was"
    );
    assert!(!dir.file("notes.txt-wal").exists() && !dir.file("notes.txt-shm").exists());
}

#[test]
fn another_programs_database_is_refused_and_untouched() {
    let dir = TempDir::new("sqlite-foreign");
    let path = dir.file("app.db");
    {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "CREATE TABLE orders (id INTEGER PRIMARY KEY); INSERT INTO orders VALUES (1);",
            )
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let error = SqliteStorage::open(&path).unwrap_err();
    assert!(error.to_string().contains("another program"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), before);

    let other = dir.file("other.db");
    {
        let connection = rusqlite::Connection::open(&other).unwrap();
        connection
            .pragma_update(None, "application_id", 0x1234_5678)
            .unwrap();
    }
    let error = SqliteStorage::open(&other).unwrap_err();
    assert!(error.to_string().contains("0x12345678"), "{error}");
}

/// A file's own schema is parsed when it is opened, before it is refused as another
/// program's: an expression nested 100,000 deep in a CHECK constraint is an error
/// (SQLite's expression depth limit), never a stack overflow that ends the process. Pins
/// the build flags in `.cargo/config.toml`: `SQLITE_MAX_EXPR_DEPTH=0` (no limit) made
/// this abort the test binary.
#[test]
fn a_schema_nested_too_deep_is_refused_not_a_crash() {
    let dir = TempDir::new("sqlite-deep");
    let path = dir.file("deep.db");
    {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute_batch("CREATE TABLE t (x CHECK (x));")
            .unwrap();
        let deep = format!("CREATE TABLE t (x CHECK (x{}))", "+1".repeat(100_000));
        connection
            .execute_batch("PRAGMA writable_schema = ON;")
            .unwrap();
        connection
            .execute("UPDATE sqlite_master SET sql = ?1 WHERE name = 't'", [deep])
            .unwrap();
    }
    let error = SqliteStorage::open(&path).unwrap_err();
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
}

#[test]
fn a_newer_schema_is_refused_naming_both_versions() {
    let dir = TempDir::new("sqlite-newer");
    let path = dir.file("memory.db");
    drop(SqliteStorage::open(&path).unwrap());
    {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection.pragma_update(None, "user_version", 99).unwrap();
    }
    let error = SqliteStorage::open(&path).unwrap_err();
    assert_eq!(
        error,
        StorageError::NewerSchema {
            path: path.display().to_string(),
            found: 99,
            supported: SCHEMA_VERSION
        }
    );
    assert!(
        error.to_string().contains("99") && error.to_string().contains(&SCHEMA_VERSION.to_string())
    );
}

#[tokio::test]
async fn an_older_schema_is_migrated_keeping_its_data() {
    let dir = TempDir::new("sqlite-migrate");
    let path = dir.file("memory.db");
    {
        let old = SqliteStorage::open_at_version(&path, 1).unwrap();
        assert_eq!(old.schema_version().await.unwrap(), 1);
        old.apply(WriteBatch {
            notes: vec![note("n1", "from v1")],
            ..WriteBatch::default()
        })
        .await
        .unwrap();
    }
    let storage = SqliteStorage::open(&path).unwrap();
    assert_eq!(storage.schema_version().await.unwrap(), SCHEMA_VERSION);
    assert_eq!(
        storage.notes_with_text("from v1").await.unwrap(),
        vec![note("n1", "from v1")]
    );
    let connection = rusqlite::Connection::open(&path).unwrap();
    let indexes: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('notes_fingerprint', 'links_to')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexes, 2, "migration 2 ran");
    let vectors: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('entity_vectors', 'entity_vectors_model')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(vectors, 2, "migration 3 ran");
    let app: i32 = connection
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    assert_eq!(app, UMI_APPLICATION_ID);
}

#[tokio::test]
async fn a_version_2_entity_gets_a_vector_after_migration_3() {
    let dir = TempDir::new("sqlite-migrate-vectors");
    let path = dir.file("memory.db");
    let entity = Entity {
        id: "e1".into(),
        name: "Alice".into(),
        entity_type: EntityType::Person,
        content: "joined Acme".into(),
        confidence: 0.5,
        note_id: None,
        created_at_ms: 1,
        updated_at_ms: 1,
    };
    {
        let old = SqliteStorage::open_at_version(&path, 2).unwrap();
        old.apply(WriteBatch {
            entities: vec![entity.clone()],
            ..WriteBatch::default()
        })
        .await
        .unwrap();
    }
    let storage = SqliteStorage::open(&path).unwrap();
    assert_eq!(storage.schema_version().await.unwrap(), 3);
    assert_eq!(storage.get_vector("e1").await.unwrap(), None);
    let vector = EntityVector {
        entity_id: "e1".into(),
        model: "m".into(),
        vector: vec![0.25, -0.0, 1.0e-40],
    };
    storage
        .apply(WriteBatch {
            vectors: vec![vector.clone()],
            ..WriteBatch::default()
        })
        .await
        .unwrap();
    drop(storage);
    let reopened = SqliteStorage::open(&path).unwrap();
    let read = reopened.get_vector("e1").await.unwrap().unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&read.vector), bits(&vector.vector));
    assert_eq!(reopened.get_entity("e1").await.unwrap(), Some(entity));
}
