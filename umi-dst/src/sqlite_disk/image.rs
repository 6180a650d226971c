//! The migrated image a run's SQLite database starts from: the schema is built and
//! migrated once per worker thread, by the production code (`SqliteStorage`'s header
//! checks, pragmas and migrations), and every run's database is a page-for-page copy of
//! it (SQLite's backup API) instead of running the migrations again.
//!
//! A fresh database and the image hold the same pages (same tables, indexes, triggers,
//! FTS5 shadow tables, `application_id` and `user_version`); only the header's change
//! counter and schema cookie, which SQLite bumps when it writes pages, differ, and nothing
//! Umi reads looks at them. The run's working connection still opens the copy through
//! `SqliteStorage::open_in_memory`, so the header check, the pragmas and the (now empty)
//! migration pass run on every open and reopen, as in production.
//!
//! Why a per-thread template cannot leak between seeds: it is written once, by the
//! migrations, before any run copies it, and only read after that (a backup reads its
//! source); a run writes to its own copy under its own name. What a run sees is the
//! same whichever runs came before it on the thread.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::Connection;
use rusqlite::backup::{Backup, StepResult};
use umi_core::storage::{SqliteStorage, StorageError};

/// Templates built by this process, for unique names.
static TEMPLATES_BUILT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's migrated template, built on first use (see the module docs).
    static TEMPLATE: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

/// The URI of the shared in-memory database `name` (as `SqliteStorage::open_in_memory`
/// opens it).
fn uri(name: &str) -> String {
    format!("file:{name}?mode=memory&cache=shared")
}

fn error(name: &str, error: &rusqlite::Error) -> StorageError {
    StorageError::Database {
        path: uri(name),
        reason: error.to_string(),
    }
}

/// A plain connection to the shared in-memory database `name` (no pragmas, no
/// migrations: it only holds the database open, or copies pages).
pub(crate) fn connect(name: &str) -> Result<Connection, StorageError> {
    Connection::open(uri(name)).map_err(|e| error(name, &e))
}

/// A freshly migrated database, by the production open, held by a plain connection.
fn build_template() -> Result<Connection, StorageError> {
    let name = format!(
        "umi-sim-image-{}",
        TEMPLATES_BUILT.fetch_add(1, Ordering::Relaxed)
    );
    let migrated = SqliteStorage::open_in_memory(&name)?;
    let template = connect(&name)?;
    drop(migrated);
    Ok(template)
}

/// Creates the in-memory database `name` as a copy of the migrated image and returns the
/// connection that holds it (the run's "disk"). `name` must not be open already.
pub(crate) fn restore(name: &str) -> Result<Connection, StorageError> {
    let mut disk = connect(name)?;
    TEMPLATE.with(|cell| {
        let mut slot = cell.borrow_mut();
        let template = match slot.take() {
            Some(template) => template,
            None => build_template()?,
        };
        let copied = copy(&template, &mut disk, name);
        *slot = Some(template);
        copied
    })?;
    Ok(disk)
}

/// Copies every page of `template` into `disk` in one step: no pause between steps (a
/// backup's `run_to_completion` sleeps on the wall clock between them).
fn copy(template: &Connection, disk: &mut Connection, name: &str) -> Result<(), StorageError> {
    let backup = Backup::new(template, disk).map_err(|e| error(name, &e))?;
    match backup.step(-1).map_err(|e| error(name, &e))? {
        StepResult::Done => Ok(()),
        other => Err(StorageError::Database {
            path: uri(name),
            reason: format!("copying the migrated image did not finish: {other:?}"),
        }),
    }
}

#[cfg(test)]
mod tests;
