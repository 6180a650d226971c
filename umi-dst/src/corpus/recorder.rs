//! Recording many seeds into one corpus file, O(1) per seed.
//!
//! A sweep where most seeds fail records thousands of seeds per second. Re-reading,
//! re-parsing and rewriting the file per seed (what a single [`SeedCorpus::append_with`]
//! does, to be atomic) made recording quadratic: a 0.5 s sweep took 37 s. A recorder is
//! held by the sweep, one per file:
//!
//! - it reads the file once when opened and keeps the seeds present in memory (at most
//!   `CORPUS_LINES_MAX`, the loader's own limit);
//! - each seed is one line appended with a single `write` of the whole line, `\n`
//!   included, to the file opened with `O_APPEND`, under the same exclusive lock file
//!   single appends take. Under the lock the recorder first reads whatever another
//!   process (a second shard recording into the same `seeds/`) appended since, so no
//!   seed is written twice and no two lines interleave;
//! - a write that fails or writes part of the line is cut back to the old length, so a
//!   full disk leaves no torn line;
//! - the file is fsynced every `CORPUS_RECORDER_SYNC_EVERY_APPENDS` appends and when the
//!   recorder is synced or dropped, not per seed.
//!
//! A kill cannot tear a line (one `write` to a regular file), but a power loss between
//! syncs can leave a last line without its `\n`. Such a line that does not parse is
//! repaired when a recorder opens the file: it becomes a comment
//! (`# torn line (a write cut short), kept as a comment: ...`), written atomically, so no
//! text is lost and the file parses again. A last line without `\n` that parses (a
//! hand-edited file) is kept, and the next append starts with the missing `\n`.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{
    AppendOutcome, CorpusError, ModeKey, SeedCorpus, SeedMeaning, format_entry, mode_key,
    replace_atomically, sibling,
};
use crate::constants::{CORPUS_LINES_MAX, CORPUS_RECORDER_SYNC_EVERY_APPENDS};
use crate::path::RunPath;

/// What a torn last line becomes when a recorder repairs the file.
pub(super) const TORN_LINE_COMMENT: &str = "# torn line (a write cut short), kept as a comment: ";

/// Appends seeds to one corpus file, checking duplicates against an index in memory.
#[derive(Debug)]
pub struct CorpusRecorder {
    path: PathBuf,
    lock: File,
    /// The seeds in the file, each with its mode (a seed is kept once per mode).
    seeds: BTreeSet<ModeKey>,
    /// `\n` bytes in the file as last seen.
    newlines: usize,
    /// The file's length as last seen (what this recorder has read up to).
    len_bytes: u64,
    /// Whether the file as last seen is empty or ends with `\n`.
    terminated: bool,
    /// Appends since the last fsync.
    unsynced: usize,
}

impl CorpusRecorder {
    /// Opens the corpus file at `path` (created on the first append), reads it once and
    /// repairs a torn last line. A file that does not parse otherwise is an error and is
    /// left untouched.
    pub fn open(path: &Path) -> Result<Self, CorpusError> {
        let io = |source| CorpusError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io)?;
        }
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(sibling(path, ".lock"))
            .map_err(io)?;
        let mut recorder = Self {
            path: path.to_owned(),
            lock,
            seeds: BTreeSet::new(),
            newlines: 0,
            len_bytes: 0,
            terminated: true,
            unsynced: 0,
        };
        recorder.lock.lock().map_err(io)?;
        let loaded = recorder.reload(true);
        let _ = recorder.lock.unlock();
        loaded?;
        Ok(recorder)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `seed` is in the file in the mode of `meaning` (as of the last append or
    /// open).
    pub fn contains(&self, seed: u64, meaning: &SeedMeaning) -> bool {
        self.seeds
            .contains(&mode_key(RunPath::from_seed(seed), meaning))
    }

    /// Seeds in the file, counted once per mode (as of the last append or open).
    pub fn len(&self) -> usize {
        self.seeds.len()
    }

    /// Whether the file holds no seed (as of the last append or open).
    pub fn is_empty(&self) -> bool {
        self.seeds.is_empty()
    }

    /// Appends `seed` with its words and comment unless the file has it in the same mode
    /// (swarm flag and schedule). A file at
    /// `CORPUS_LINES_MAX` lines takes no more (`CorpusError::TooLong`).
    pub fn record(
        &mut self,
        seed: u64,
        meaning: &SeedMeaning,
        comment: &str,
    ) -> Result<AppendOutcome, CorpusError> {
        if self.contains(seed, meaning) {
            return Ok(AppendOutcome::AlreadyPresent);
        }
        self.lock.lock().map_err(|source| self.io(source))?;
        let outcome = self.record_locked(seed, meaning, comment);
        let _ = self.lock.unlock();
        outcome
    }

    /// Makes every append so far durable (fsync).
    pub fn sync(&mut self) -> Result<(), CorpusError> {
        if self.unsynced == 0 {
            return Ok(());
        }
        let file = File::open(&self.path).map_err(|source| self.io(source))?;
        file.sync_data().map_err(|source| self.io(source))?;
        self.unsynced = 0;
        Ok(())
    }

    fn io(&self, source: std::io::Error) -> CorpusError {
        CorpusError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn lines(&self) -> usize {
        self.newlines + usize::from(!self.terminated)
    }

    fn record_locked(
        &mut self,
        seed: u64,
        meaning: &SeedMeaning,
        comment: &str,
    ) -> Result<AppendOutcome, CorpusError> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&self.path)
            .map_err(|source| self.io(source))?;
        let len = file.metadata().map_err(|source| self.io(source))?.len();
        self.catch_up(&mut file, len)?;
        if self.contains(seed, meaning) {
            return Ok(AppendOutcome::AlreadyPresent);
        }
        if self.lines() >= CORPUS_LINES_MAX {
            return Err(CorpusError::TooLong {
                path: self.path.clone(),
                limit: CORPUS_LINES_MAX,
            });
        }
        let mut line = String::new();
        if !self.terminated {
            line.push('\n');
        }
        line.push_str(&format_entry(seed, meaning, comment));
        // One write of the whole line: appends from other processes never interleave
        // with it, and a kill cannot leave half of it.
        match file.write(line.as_bytes()) {
            Ok(written) if written == line.len() => {}
            outcome => {
                let _ = file.set_len(len); // no torn line left behind
                let source = outcome.err().unwrap_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::WriteZero,
                        "a short write (disk full?); the partial line was removed",
                    )
                });
                return Err(self.io(source));
            }
        }
        self.len_bytes = len + line.len() as u64;
        self.newlines += line.matches('\n').count();
        self.terminated = true;
        self.seeds
            .insert(mode_key(RunPath::from_seed(seed), meaning));
        self.unsynced += 1;
        if self.unsynced >= CORPUS_RECORDER_SYNC_EVERY_APPENDS {
            file.sync_data().map_err(|source| self.io(source))?;
            self.unsynced = 0;
        }
        Ok(AppendOutcome::Added)
    }

    /// Reads what was appended since this recorder last looked (another process's
    /// seeds); a file that shrank or changed otherwise is read again whole.
    fn catch_up(&mut self, file: &mut File, len: u64) -> Result<(), CorpusError> {
        if len == self.len_bytes {
            return Ok(());
        }
        if len > self.len_bytes {
            let mut tail = String::new();
            let read = file
                .seek(SeekFrom::Start(self.len_bytes))
                .and_then(|_| file.read_to_string(&mut tail));
            if read.is_ok()
                && self.terminated
                && let Ok(appended) = SeedCorpus::parse(&self.path, &tail)
            {
                self.seeds.extend(keys(&appended));
                self.newlines += tail.matches('\n').count();
                self.terminated = tail.ends_with('\n');
                self.len_bytes = len;
                return Ok(());
            }
        }
        self.reload(false)
    }

    /// Reads the whole file into the index; with `repair`, a torn last line is first
    /// turned into a comment. The caller holds the lock.
    fn reload(&mut self, repair: bool) -> Result<(), CorpusError> {
        let mut text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(self.io(source)),
        };
        let mut parsed = SeedCorpus::parse(&self.path, &text);
        if repair
            && let Err(CorpusError::Parse { line, .. }) = &parsed
            && let Some(repaired) = repaired_torn_line(&text, *line)
        {
            replace_atomically(&self.path, &repaired).map_err(|source| self.io(source))?;
            text = repaired;
            parsed = SeedCorpus::parse(&self.path, &text);
        }
        self.seeds = keys(&parsed?);
        self.newlines = text.matches('\n').count();
        self.terminated = text.is_empty() || text.ends_with('\n');
        self.len_bytes = text.len() as u64;
        Ok(())
    }
}

impl Drop for CorpusRecorder {
    fn drop(&mut self) {
        let _ = self.sync();
    }
}

fn keys(corpus: &SeedCorpus) -> BTreeSet<ModeKey> {
    corpus
        .entries()
        .iter()
        .map(|entry| mode_key(entry.path(), &entry.meaning))
        .collect()
}

/// `text` with its last line turned into a comment, if that line is the one that failed
/// to parse (`bad_line`, 1-based) and has no `\n`: a write cut short.
pub(super) fn repaired_torn_line(text: &str, bad_line: usize) -> Option<String> {
    if text.is_empty() || text.ends_with('\n') || bad_line != text.lines().count() {
        return None;
    }
    let start = text.rfind('\n').map_or(0, |at| at + 1);
    let torn: String = text[start..]
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    Some(format!("{}{TORN_LINE_COMMENT}{torn}\n", &text[..start]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unterminated_bad_last_line_is_torn() {
        let cases: &[(&str, usize, Option<&str>)] = &[
            (
                "1\n12 swa",
                2,
                Some("1\n# torn line (a write cut short), kept as a comment: 12 swa\n"),
            ),
            (
                "12 sw",
                1,
                Some("# torn line (a write cut short), kept as a comment: 12 sw\n"),
            ),
            ("1\nseven\n", 2, None), // a whole bad line: a person's typo, an error
            ("1\nseven\n2", 2, None), // not the last line
            ("", 1, None),
        ];
        for (text, line, expected) in cases {
            assert_eq!(
                repaired_torn_line(text, *line).as_deref(),
                *expected,
                "{text:?}"
            );
        }
    }
}
