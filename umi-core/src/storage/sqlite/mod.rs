//! SqliteStorage: the durable default. One file, WAL journal, FTS5 text search, entity
//! vectors beside their entities ([`vectors`]), a schema version with migrations.
//!
//! The connection lives on a thread of its own; async methods send it jobs and await the
//! answer, so a slow disk never blocks an executor thread. This is a production adapter:
//! simulations use umi-dst's SimStorage, whose behaviour (and faults) the seed controls.
//!
//! Opening is careful with files that are not ours. The first 16 bytes are read before
//! SQLite touches the file; then `application_id` and `user_version` are read, which
//! writes nothing. A file that is not SQLite, a SQLite database of another program, or a
//! Umi database from a newer version is refused with an error naming the path, and is
//! left exactly as it was. Only then are the pragmas set and migrations run, each in its
//! own transaction.
//!
//! Commits use `synchronous=FULL`: an acknowledged `remember` survives a power cut.
//!
//! A batch's entities are written by one INSERT, and a batch that changed the full-text
//! index ends with FTS5's bounded incremental merge, so the index stays in few segments
//! and a search opens few (see `entities.rs`).
//!
//! [`SqliteStorage::open_in_memory`] runs the same schema, migrations and queries on a
//! named in-memory database, on the calling thread: with no disk a query is computation,
//! so tests and simulations (where a thread hop would let paused time run ahead) can run
//! the production SQL with no I/O. The database lives while any connection to it is
//! open, so closing one handle and opening the name again is a close-and-reopen.

use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, params};

use self::schema::{open_connection, prepare_connection};
use self::transaction::WriteTransaction;

use super::memory::{sort_hits, validate_batch};
use super::records::{Entity, EvolutionLink, Note, SearchHit, WriteBatch, text_fingerprint};
use super::search::query_terms;
use super::vectors::EntityVector;
use super::{Storage, StorageError};
use crate::constants::{LIST_PAGE_MAX, SEARCH_RESULTS_MAX, SQLITE_MEMORY_NAME_BYTES_MAX};
use crate::storage::kinds::{EntityType, EvolutionType};

mod entities;
mod schema;
mod transaction;
mod vectors;

/// `PRAGMA application_id` of Umi memory files ("UMI1").
pub const UMI_APPLICATION_ID: i32 = 0x554D_4931;

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = 3;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Storage in a SQLite file (or a named in-memory database).
pub struct SqliteStorage {
    path: PathBuf,
    runner: Runner,
}

/// Where queries run.
enum Runner {
    /// On the connection's own thread (files: a slow disk never blocks an executor).
    Thread {
        jobs: Option<mpsc::Sender<Job>>,
        worker: Option<JoinHandle<()>>,
    },
    /// On the calling thread (in-memory databases: a query is computation).
    Inline(Mutex<Connection>),
}

impl std::fmt::Debug for SqliteStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStorage")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn database_error(path: &Path, error: &rusqlite::Error) -> StorageError {
    if let rusqlite::Error::SqliteFailure(failure, _) = error
        && failure.code == rusqlite::ErrorCode::NotADatabase
    {
        return StorageError::NotOurs {
            path: path.display().to_string(),
            reason: "not a database".into(),
        };
    }
    StorageError::Database {
        path: path.display().to_string(),
        reason: error.to_string(),
    }
}

impl SqliteStorage {
    /// Opens (or creates) the memory database at `path`, migrating it to the current
    /// schema. Refuses, without changing it, a file that is not a Umi database or that a
    /// newer Umi wrote.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        Self::open_at_version(path, SCHEMA_VERSION)
    }

    /// Opens a database migrated only up to `version` (for testing migrations).
    #[doc(hidden)]
    pub fn open_at_version(path: impl AsRef<Path>, version: u32) -> Result<Self, StorageError> {
        assert!(
            (1..=SCHEMA_VERSION).contains(&version),
            "schema version {version} does not exist"
        );
        let path = path.as_ref().to_path_buf();
        let (jobs, receive) = mpsc::channel::<Job>();
        let (opened, wait_open) = mpsc::channel::<Result<(), StorageError>>();
        let worker_path = path.clone();
        #[allow(
            clippy::disallowed_methods,
            reason = "the production SQLite adapter owns its connection on a thread of its own"
        )]
        let worker = std::thread::Builder::new()
            .name("umi-sqlite".into())
            .spawn(move || {
                let mut connection = match open_connection(&worker_path, version) {
                    Ok(connection) => {
                        let _ = opened.send(Ok(()));
                        connection
                    }
                    Err(error) => {
                        let _ = opened.send(Err(error));
                        return;
                    }
                };
                while let Ok(job) = receive.recv() {
                    job(&mut connection);
                }
            })
            .map_err(|error| StorageError::Database {
                path: path.display().to_string(),
                reason: error.to_string(),
            })?;
        let result = wait_open.recv().unwrap_or(Err(StorageError::Closed));
        match result {
            Ok(()) => Ok(Self {
                path,
                runner: Runner::Thread {
                    jobs: Some(jobs),
                    worker: Some(worker),
                },
            }),
            Err(error) => {
                let _ = worker.join();
                Err(error)
            }
        }
    }

    /// Opens (or creates) the in-memory database `name`, shared by every connection of
    /// this process that opens the same name, and migrates it. Queries run on the calling
    /// thread. The database is gone when its last connection closes, so a handle kept
    /// open elsewhere is what makes dropping this one and opening `name` again a
    /// close-and-reopen. `name` is ASCII letters, digits, `-`, `_` and `.`, at most
    /// [`SQLITE_MEMORY_NAME_BYTES_MAX`](crate::constants::SQLITE_MEMORY_NAME_BYTES_MAX) bytes.
    pub fn open_in_memory(name: &str) -> Result<Self, StorageError> {
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if name.is_empty() || name.len() > SQLITE_MEMORY_NAME_BYTES_MAX || !name.chars().all(valid)
        {
            return Err(StorageError::Invalid {
                reason: format!(
                    "in-memory database name {name:?}: use 1 to {SQLITE_MEMORY_NAME_BYTES_MAX} \
                     ASCII letters, digits, '-', '_' or '.'"
                ),
            });
        }
        let path = PathBuf::from(format!("file:{name}?mode=memory&cache=shared"));
        let connection = Connection::open(&path).map_err(|e| database_error(&path, &e))?;
        let connection = prepare_connection(connection, &path, SCHEMA_VERSION)?;
        Ok(Self {
            path,
            runner: Runner::Inline(Mutex::new(connection)),
        })
    }

    /// The database file (for an in-memory database, its URI).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub async fn schema_version(&self) -> Result<u32, StorageError> {
        let path = self.path.clone();
        self.call(move |connection| {
            connection
                .pragma_query_value(None, "user_version", |row| row.get(0))
                .map_err(|e| database_error(&path, &e))
        })
        .await
    }

    async fn call<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let jobs = match &self.runner {
            Runner::Inline(connection) => {
                let mut connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
                return work(&mut connection);
            }
            Runner::Thread { jobs, .. } => jobs,
        };
        let (answer, wait) = tokio::sync::oneshot::channel();
        let jobs = jobs.as_ref().ok_or(StorageError::Closed)?;
        jobs.send(Box::new(move |connection| {
            let _ = answer.send(work(connection));
        }))
        .map_err(|_| StorageError::Closed)?;
        wait.await.map_err(|_| StorageError::Closed)?
    }
}

impl Drop for SqliteStorage {
    /// Closes the channel and waits for the connection to finish its queued jobs and
    /// close, so the file can be reopened at once.
    fn drop(&mut self) {
        if let Runner::Thread { jobs, worker } = &mut self.runner {
            drop(jobs.take());
            if let Some(worker) = worker.take() {
                let _ = worker.join();
            }
        }
    }
}

const ENTITY_COLUMNS: &str = "e.id, e.name, e.entity_type, e.content, e.confidence, e.note_id, e.created_at_ms, e.updated_at_ms";

/// The entity of one id (`?1`); built once, not per call.
static ENTITY_BY_ID_SQL: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.id = ?1"));

fn entity_from(row: &Row<'_>) -> rusqlite::Result<Entity> {
    let type_name: String = row.get(2)?;
    let entity_type = EntityType::from_name(&type_name).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            2,
            rusqlite::types::Type::Text,
            format!("unknown entity type {type_name:?}").into(),
        )
    })?;
    Ok(Entity {
        id: row.get(0)?,
        name: row.get(1)?,
        entity_type,
        content: row.get(3)?,
        confidence: row.get(4)?,
        note_id: row.get(5)?,
        created_at_ms: row.get::<_, i64>(6)? as u64,
        updated_at_ms: row.get::<_, i64>(7)? as u64,
    })
}

fn link_from(row: &Row<'_>) -> rusqlite::Result<EvolutionLink> {
    let type_name: String = row.get(3)?;
    let evolution_type = EvolutionType::from_name(&type_name).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            3,
            rusqlite::types::Type::Text,
            format!("unknown evolution type {type_name:?}").into(),
        )
    })?;
    Ok(EvolutionLink {
        id: row.get(0)?,
        from_id: row.get(1)?,
        to_id: row.get(2)?,
        evolution_type,
        reason: row.get(4)?,
        confidence: row.get(5)?,
        created_at_ms: row.get::<_, i64>(6)? as u64,
    })
}

fn note_from(row: &Row<'_>) -> rusqlite::Result<Note> {
    Ok(Note {
        id: row.get(0)?,
        text: row.get(1)?,
        created_at_ms: row.get::<_, i64>(2)? as u64,
    })
}

fn apply_batch(
    connection: &Connection,
    path: &Path,
    batch: &WriteBatch,
) -> Result<(), StorageError> {
    let db = |e: rusqlite::Error| database_error(path, &e);
    let transaction = WriteTransaction::begin(connection).map_err(db)?;
    {
        let transaction = transaction.connection();
        let exists = |id: &str| {
            transaction
                .prepare_cached("SELECT 1 FROM entities WHERE id = ?1")
                .and_then(|mut statement| statement.query_row([id], |_| Ok(())).optional())
                .map(|found| found.is_some())
                .unwrap_or(false)
        };
        validate_batch(batch, exists)?;
        for id in &batch.delete_entities {
            transaction
                .prepare_cached("DELETE FROM entities WHERE id = ?1")
                .and_then(|mut statement| statement.execute([id]))
                .map_err(db)?;
        }
        for note in &batch.notes {
            execute_cached(
                transaction,
                    "INSERT OR IGNORE INTO notes (id, text, fingerprint, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
                    params![note.id, note.text, text_fingerprint(&note.text) as i64, note.created_at_ms as i64],
                )
                .map_err(db)?;
        }
        entities::write_entities(transaction, path, &batch.entities)?;
        vectors::write_vectors(transaction, path, &batch.vectors)?;
        write_links(transaction, path, &batch.links)?;
        if !batch.entities.is_empty() || !batch.delete_entities.is_empty() {
            entities::merge_index(transaction, path)?;
        }
    }
    transaction.commit().map_err(db)
}

/// Inserts `links` in the open transaction of `transaction`.
fn write_links(
    transaction: &Connection,
    path: &Path,
    links: &[EvolutionLink],
) -> Result<(), StorageError> {
    for link in links {
        execute_cached(
            transaction,
                "INSERT INTO links (id, from_id, to_id, evolution_type, reason, confidence, created_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    link.id,
                    link.from_id,
                    link.to_id,
                    link.evolution_type.name(),
                    link.reason,
                    link.confidence,
                    link.created_at_ms as i64
                ],
            )
            .map_err(|e| database_error(path, &e))?;
    }
    Ok(())
}

/// The full-text search: entities matching an FTS5 expression (`?1`), best first.
static SEARCH_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {ENTITY_COLUMNS}, bm25(entities_fts, 2.0, 1.0) AS rank
         FROM entities_fts JOIN entities e ON e.seq = entities_fts.rowid
         WHERE entities_fts MATCH ?1 ORDER BY rank, e.id LIMIT ?2"
    )
});

/// A page of entities in insertion order (`?1` rows from `?2`).
static LIST_ENTITIES_SQL: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {ENTITY_COLUMNS} FROM entities e ORDER BY e.seq LIMIT ?1 OFFSET ?2")
});

/// The entities named `?1`, in insertion order.
static ENTITIES_NAMED_SQL: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.name = ?1 ORDER BY e.seq")
});

/// The entities of note `?1`, in insertion order.
static ENTITIES_OF_NOTE_SQL: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.note_id = ?1 ORDER BY e.seq")
});

/// Runs `sql` with `parameters` through the connection's statement cache: a write
/// statement is prepared once per connection, not once per row written.
fn execute_cached(
    connection: &Connection,
    sql: &str,
    parameters: impl rusqlite::Params,
) -> rusqlite::Result<usize> {
    connection.prepare_cached(sql)?.execute(parameters)
}

fn collect_rows<T>(
    connection: &Connection,
    path: &Path,
    sql: &str,
    parameters: impl rusqlite::Params,
    map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StorageError> {
    let mut statement = connection
        .prepare_cached(sql)
        .map_err(|e| database_error(path, &e))?;
    let rows = statement
        .query_map(parameters, map)
        .map_err(|e| database_error(path, &e))?;
    rows.collect::<Result<Vec<T>, _>>()
        .map_err(|e| database_error(path, &e))
}

#[async_trait]
impl Storage for SqliteStorage {
    async fn apply(&self, batch: WriteBatch) -> Result<(), StorageError> {
        let path = self.path.clone();
        self.call(move |connection| apply_batch(connection, &path, &batch))
            .await
    }

    async fn get_entity(&self, id: &str) -> Result<Option<Entity>, StorageError> {
        let (path, id) = (self.path.clone(), id.to_owned());
        self.call(move |c| {
            Ok(
                collect_rows(c, &path, &ENTITY_BY_ID_SQL, [id], entity_from)?
                    .into_iter()
                    .next(),
            )
        })
        .await
    }

    async fn list_entities(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Entity>, StorageError> {
        let path = self.path.clone();
        let limit = limit.min(LIST_PAGE_MAX) as i64;
        self.call(move |c| {
            collect_rows(
                c,
                &path,
                &LIST_ENTITIES_SQL,
                params![limit, offset as i64],
                entity_from,
            )
        })
        .await
    }

    async fn count_entities(&self) -> Result<u64, StorageError> {
        let path = self.path.clone();
        self.call(move |c| {
            c.query_row("SELECT count(*) FROM entities", [], |row| {
                row.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|e| database_error(&path, &e))
        })
        .await
    }

    async fn entities_named(&self, name: &str) -> Result<Vec<Entity>, StorageError> {
        let (path, name) = (self.path.clone(), name.to_owned());
        self.call(move |c| collect_rows(c, &path, &ENTITIES_NAMED_SQL, [name], entity_from))
            .await
    }

    async fn entities_of_note(&self, note_id: &str) -> Result<Vec<Entity>, StorageError> {
        let (path, note_id) = (self.path.clone(), note_id.to_owned());
        self.call(move |c| collect_rows(c, &path, &ENTITIES_OF_NOTE_SQL, [note_id], entity_from))
            .await
    }

    async fn get_note(&self, id: &str) -> Result<Option<Note>, StorageError> {
        let (path, id) = (self.path.clone(), id.to_owned());
        self.call(move |c| {
            Ok(collect_rows(
                c,
                &path,
                "SELECT id, text, created_at_ms FROM notes WHERE id = ?1",
                [id],
                note_from,
            )?
            .into_iter()
            .next())
        })
        .await
    }

    async fn notes_with_text(&self, text: &str) -> Result<Vec<Note>, StorageError> {
        let (path, text) = (self.path.clone(), text.to_owned());
        self.call(move |c| {
            collect_rows(
                c,
                &path,
                "SELECT id, text, created_at_ms FROM notes WHERE fingerprint = ?1 AND text = ?2 ORDER BY rowid",
                params![text_fingerprint(&text) as i64, text],
                note_from,
            )
        })
        .await
    }

    async fn links_of(&self, entity_id: &str) -> Result<Vec<EvolutionLink>, StorageError> {
        let (path, id) = (self.path.clone(), entity_id.to_owned());
        self.call(move |c| {
            collect_rows(
                c,
                &path,
                "SELECT id, from_id, to_id, evolution_type, reason, confidence, created_at_ms FROM links
                 WHERE from_id = ?1 OR to_id = ?1 ORDER BY id",
                [id],
                link_from,
            )
        })
        .await
    }

    async fn list_links(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<EvolutionLink>, StorageError> {
        let path = self.path.clone();
        let limit = limit.min(LIST_PAGE_MAX) as i64;
        self.call(move |c| {
            collect_rows(
                c,
                &path,
                "SELECT id, from_id, to_id, evolution_type, reason, confidence, created_at_ms FROM links
                 ORDER BY id LIMIT ?1 OFFSET ?2",
                params![limit, offset as i64],
                link_from,
            )
        })
        .await
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, StorageError> {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        // Terms are letters and digits only, so quoting each makes a safe FTS5 query.
        let expression = terms
            .iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(" OR ");
        let path = self.path.clone();
        let limit = limit.min(SEARCH_RESULTS_MAX) as i64;
        self.call(move |c| {
            let mut hits =
                collect_rows(c, &path, &SEARCH_SQL, params![expression, limit], |row| {
                    Ok(SearchHit {
                        entity: entity_from(row)?,
                        score: -row.get::<_, f64>(8)?,
                    })
                })?;
            sort_hits(&mut hits);
            Ok(hits)
        })
        .await
    }

    async fn get_vector(&self, entity_id: &str) -> Result<Option<EntityVector>, StorageError> {
        let (path, id) = (self.path.clone(), entity_id.to_owned());
        self.call(move |c| vectors::get_vector(c, &path, &id)).await
    }

    async fn search_vectors(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StorageError> {
        let hits = self.search_vectors_with_stored(model, query, limit).await?;
        Ok(hits.into_iter().map(|(hit, _)| hit).collect())
    }

    async fn search_vectors_with_stored(
        &self,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(SearchHit, Option<EntityVector>)>, StorageError> {
        let (path, model, query) = (self.path.clone(), model.to_owned(), query.to_vec());
        let limit = limit.min(SEARCH_RESULTS_MAX);
        let hits = self
            .call(move |c| vectors::search_vectors(c, &path, &model, &query, limit))
            .await?;
        Ok(hits
            .into_iter()
            .map(|(hit, vector)| (hit, Some(vector)))
            .collect())
    }
}

#[cfg(test)]
mod tests;
