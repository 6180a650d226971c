//! A write batch's transaction, begun and committed through the connection's statement
//! cache.
//!
//! rusqlite's `Transaction` runs `BEGIN` and `COMMIT` with `execute_batch`, which compiles
//! each of them again on every call (about 3,000 instructions each: 0.7% of the
//! `sqlite_no_data_loss` scenario, where every `remember` is a batch). Here both are
//! prepared once per connection, like every other statement the store runs. The rules are
//! rusqlite's: `BEGIN DEFERRED`; a failed batch, or a `COMMIT` that fails, rolls back;
//! and a guard dropped while the transaction is still open (an error or a panic on the
//! way) rolls it back, so the connection is never left inside a transaction.

use rusqlite::Connection;

/// An open write transaction on `connection`; rolled back on drop unless committed.
pub(super) struct WriteTransaction<'c> {
    connection: &'c Connection,
}

impl<'c> WriteTransaction<'c> {
    /// Begins a deferred transaction.
    pub(super) fn begin(connection: &'c Connection) -> rusqlite::Result<Self> {
        connection.prepare_cached("BEGIN DEFERRED")?.execute([])?;
        Ok(Self { connection })
    }

    /// The connection the transaction runs on.
    pub(super) fn connection(&self) -> &'c Connection {
        self.connection
    }

    /// Commits; if `COMMIT` fails, the transaction is rolled back (on drop), as
    /// rusqlite's `Transaction::commit` does.
    pub(super) fn commit(self) -> rusqlite::Result<()> {
        self.connection.prepare_cached("COMMIT")?.execute([])?;
        Ok(())
    }
}

impl Drop for WriteTransaction<'_> {
    fn drop(&mut self) {
        if !self.connection.is_autocommit() {
            let _ = self.connection.execute_batch("ROLLBACK");
        }
    }
}
