//! The schema, its migrations, and opening a database with care: the header and the
//! pragmas are read before anything is written, and a file that is not ours, or a newer
//! schema, is refused untouched (see the parent module's docs).

use std::io::Read;
use std::path::Path;

use rusqlite::Connection;
use rusqlite::config::DbConfig;

use super::{SCHEMA_VERSION, UMI_APPLICATION_ID, database_error};
use crate::storage::StorageError;

/// Schema migrations: the SQL that takes a database from version `n - 1` to `n`.
const MIGRATIONS: [(u32, &str); 3] = [
    (
        1,
        "CREATE TABLE notes (
            id TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            fingerprint INTEGER NOT NULL,
            created_at_ms INTEGER NOT NULL
        );
        CREATE TABLE entities (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            entity_type TEXT NOT NULL,
            content TEXT NOT NULL,
            confidence REAL NOT NULL,
            note_id TEXT REFERENCES notes(id),
            created_at_ms INTEGER NOT NULL,
            updated_at_ms INTEGER NOT NULL
        );
        CREATE INDEX entities_name ON entities(name);
        CREATE INDEX entities_note ON entities(note_id);
        CREATE VIRTUAL TABLE entities_fts USING fts5(
            name, content, content='entities', content_rowid='seq',
            tokenize='unicode61 remove_diacritics 0'
        );
        CREATE TRIGGER entities_ai AFTER INSERT ON entities BEGIN
            INSERT INTO entities_fts(rowid, name, content) VALUES (new.seq, new.name, new.content);
        END;
        CREATE TRIGGER entities_ad AFTER DELETE ON entities BEGIN
            INSERT INTO entities_fts(entities_fts, rowid, name, content) VALUES ('delete', old.seq, old.name, old.content);
        END;
        CREATE TRIGGER entities_au AFTER UPDATE ON entities BEGIN
            INSERT INTO entities_fts(entities_fts, rowid, name, content) VALUES ('delete', old.seq, old.name, old.content);
            INSERT INTO entities_fts(rowid, name, content) VALUES (new.seq, new.name, new.content);
        END;
        CREATE TABLE links (
            id TEXT PRIMARY KEY,
            from_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            to_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            evolution_type TEXT NOT NULL,
            reason TEXT NOT NULL,
            confidence REAL NOT NULL,
            created_at_ms INTEGER NOT NULL
        );
        CREATE INDEX links_from ON links(from_id);",
    ),
    (
        2,
        "CREATE INDEX notes_fingerprint ON notes(fingerprint);
        CREATE INDEX links_to ON links(to_id);",
    ),
    (
        3,
        "CREATE TABLE entity_vectors (
            entity_id TEXT PRIMARY KEY REFERENCES entities(id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            dimensions INTEGER NOT NULL,
            vector BLOB NOT NULL
        );
        CREATE INDEX entity_vectors_model ON entity_vectors(model, dimensions);",
    ),
];

const _: () = assert!(MIGRATIONS.len() as u32 == SCHEMA_VERSION);

/// Prepared statements kept per connection: every statement the store runs (about 20
/// reads and writes) stays prepared, where rusqlite's default of 16 would evict some.
const STATEMENTS_CACHED_MAX: usize = 32;

/// Opens `path` as described in the module docs.
pub(super) fn open_connection(
    path: &Path,
    version_target: u32,
) -> Result<Connection, StorageError> {
    let shown = path.display().to_string();
    let not_ours = |reason: String| StorageError::NotOurs {
        path: shown.clone(),
        reason,
    };
    match std::fs::File::open(path) {
        Ok(mut file) => {
            let mut header = Vec::with_capacity(16);
            file.by_ref()
                .take(16)
                .read_to_end(&mut header)
                .map_err(|e| not_ours(format!("cannot read it: {e}")))?;
            if !header.is_empty() && header != b"SQLite format 3\0" {
                return Err(not_ours("it is not a SQLite file".into()));
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(StorageError::Database {
                path: shown,
                reason: error.to_string(),
            });
        }
    }
    let connection = Connection::open(path).map_err(|e| database_error(path, &e))?;
    prepare_connection(connection, path, version_target)
}

/// Checks that `connection` holds a Umi database (or nothing), sets the pragmas and
/// migrates it up to `version_target`.
pub(super) fn prepare_connection(
    connection: Connection,
    path: &Path,
    version_target: u32,
) -> Result<Connection, StorageError> {
    let shown = path.display().to_string();
    let not_ours = |reason: String| StorageError::NotOurs {
        path: shown.clone(),
        reason,
    };
    let application_id: i32 = connection
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .map_err(|e| database_error(path, &e))?;
    let version: u32 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|e| database_error(path, &e))?;
    let tables: i64 = connection
        .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
        .map_err(|e| database_error(path, &e))?;
    let fresh = application_id == 0 && tables == 0;
    if !fresh && application_id != UMI_APPLICATION_ID {
        return Err(not_ours(if application_id == 0 {
            format!("it holds {tables} schema object(s) of another program")
        } else {
            format!(
                "its application_id is 0x{application_id:08x}, not Umi's 0x{UMI_APPLICATION_ID:08x}"
            )
        }));
    }
    if version > SCHEMA_VERSION {
        return Err(StorageError::NewerSchema {
            path: shown,
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    configure(&connection, path)?;
    let mut connection = connection;
    for (step, sql) in MIGRATIONS {
        if step <= version || step > version_target {
            continue;
        }
        let transaction = connection
            .transaction()
            .map_err(|e| database_error(path, &e))?;
        transaction
            .execute_batch(sql)
            .map_err(|e| database_error(path, &e))?;
        transaction
            .pragma_update(None, "application_id", UMI_APPLICATION_ID)
            .map_err(|e| database_error(path, &e))?;
        transaction
            .pragma_update(None, "user_version", step)
            .map_err(|e| database_error(path, &e))?;
        transaction.commit().map_err(|e| database_error(path, &e))?;
    }
    Ok(connection)
}

/// The connection's settings: its statement cache, the query planner stability
/// guarantee and the pragmas.
fn configure(connection: &Connection, path: &Path) -> Result<(), StorageError> {
    connection.set_prepared_statement_cache_capacity(STATEMENTS_CACHED_MAX);
    // The query planner stability guarantee: a statement keeps the plan it was prepared
    // with whatever is bound to it. Without it, SQLite re-prepares the search statement on
    // every call (a new MATCH expression may, it supposes, deserve a new plan), which
    // was half of a search's time (87 of 176 µs, measured for issue 26). Results do not
    // depend on the plan: every query orders its rows completely.
    connection
        .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(|e| database_error(path, &e))?;
    connection
        .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;")
        .map_err(|e| database_error(path, &e))?;
    Ok(())
}
