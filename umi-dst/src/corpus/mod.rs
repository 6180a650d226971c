//! The seed corpus: seeds that once failed, kept in `seeds/<name>.seeds` and replayed by
//! every `cargo test`.
//!
//! The format is a line per seed with an optional comment, so the file is its own
//! changelog (docs/adr/0003-seed-corpus.md):
//!
//! ```text
//! # seeds that broke memory_no_data_loss
//! 12345  # correctness: lost write after storage.write_fail
//! 0x2a   # liveness: retry loop without backoff
//! 77 swarm expect=correctness faults=storage.write_fail  # found by a swarm sweep
//! 7/412:9913  # liveness: found by dst explore (a path: seed 7, from step 412 stream 9913)
//! ```
//!
//! A line may hold a path ([`RunPath`]) where a seed goes: it is replayed as that
//! path, in the mode its words say, like a seed.
//!
//! Words between the seed and the comment say what the replay needs and what the seed
//! found ([`SeedMeaning`]).
//!
//! Loading names the file and line of anything it cannot read. A single append
//! ([`SeedCorpus::append_with`]) is atomic and idempotent: the new file is written beside
//! the old, synced, and renamed over it under an exclusive lock, so a process killed
//! mid-write leaves the old file or the new one, never a torn one, and a seed already
//! present is not added twice. A sweep records many seeds through a [`CorpusRecorder`]
//! instead: the file read once, each line appended in one `write` under the same lock,
//! O(1) per seed.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

mod meaning;
mod recorder;

pub use meaning::SeedMeaning;
pub use recorder::CorpusRecorder;

use crate::constants::{CORPUS_COMMENT_BYTES_MAX, CORPUS_LINES_MAX};
use crate::path::{Branch, RunPath};
use crate::seed_text::parse_seed;

/// Characters of an unreadable line quoted in an error.
const PARSE_ERROR_QUOTE_CHARS_MAX: usize = 120;

/// A seed corpus file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorpusError {
    /// A line that is not a seed.
    #[error("{path}:{line}: {reason}: {text:?}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// The line's text.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The file has more lines than `CORPUS_LINES_MAX`.
    #[error("{path}: more than {limit} lines")]
    TooLong {
        /// The file.
        path: PathBuf,
        /// `CORPUS_LINES_MAX`.
        limit: usize,
    },
    /// A name that cannot be a corpus file name.
    #[error("{name:?} is not a corpus name (use letters, digits, '_' and '-')")]
    BadName {
        /// The rejected name.
        name: String,
    },
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// One seed in a corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusEntry {
    /// The seed.
    pub seed: u64,
    /// The branch points of a line that holds a path (empty for a seed).
    pub branches: Vec<Branch>,
    /// The comment after `#`, if any.
    pub comment: Option<String>,
    /// The 1-based line it is on.
    pub line: usize,
    /// Its mode and what it found.
    pub meaning: SeedMeaning,
}

impl CorpusEntry {
    /// The path the line holds (its seed alone for a seed line).
    pub fn path(&self) -> RunPath {
        RunPath {
            seed: self.seed,
            branches: self.branches.clone(),
        }
    }
}

/// What makes two corpus lines the same kept run: the path and its mode (swarm flag and
/// schedule; `SeedMeaning::same_mode`). A seed or path may be kept once per mode.
pub(crate) type ModeKey = (RunPath, bool, Option<Vec<crate::fault::InjectionId>>);

/// The key of `path` kept in `meaning`'s mode.
pub(crate) fn mode_key(path: RunPath, meaning: &SeedMeaning) -> ModeKey {
    (path, meaning.swarm, meaning.only.clone())
}

/// A line's first word: a seed (`12345`, `0x2a`) or a path (`7/412:9913`).
fn parse_seed_or_path(text: &str) -> Result<RunPath, String> {
    if text.contains('/') {
        text.parse()
            .map_err(|error: crate::path::PathError| error.to_string())
    } else {
        parse_seed(text).map(RunPath::from_seed)
    }
}

/// Whether [`SeedCorpus::append`] added the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The seed is new and was written.
    Added,
    /// The seed was already in the file; nothing changed.
    AlreadyPresent,
}

/// The seeds of one corpus file, in file order, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SeedCorpus {
    entries: Vec<CorpusEntry>,
}

impl SeedCorpus {
    /// Loads `path`; a missing file is an empty corpus.
    pub fn load(path: &Path) -> Result<Self, CorpusError> {
        match fs::read_to_string(path) {
            Ok(text) => Self::parse(path, &text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(CorpusError::Io {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Parses corpus text; `path` is only used in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, CorpusError> {
        let mut entries: Vec<CorpusEntry> = Vec::new();
        let mut seen = BTreeSet::new();
        let unterminated = !text.is_empty() && !text.ends_with('\n');
        let line_count = text.lines().count();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            if line > CORPUS_LINES_MAX {
                return Err(CorpusError::TooLong {
                    path: path.to_owned(),
                    limit: CORPUS_LINES_MAX,
                });
            }
            let (body, comment) = match raw.split_once('#') {
                Some((body, comment)) => (body.trim(), Some(comment.trim())),
                None => (raw.trim(), None),
            };
            if body.is_empty() {
                continue;
            }
            let (seed_text, words) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
            let parse_error = |reason: String| CorpusError::Parse {
                path: path.to_owned(),
                line,
                text: raw.chars().take(PARSE_ERROR_QUOTE_CHARS_MAX).collect(),
                reason: if unterminated && line == line_count {
                    format!(
                        "{reason} (the last line has no newline: a write cut short? \
                         `dst sweep` turns such a line into a comment)"
                    )
                } else {
                    reason
                },
            };
            let run = parse_seed_or_path(seed_text).map_err(parse_error)?;
            let meaning = SeedMeaning::parse(words).map_err(parse_error)?;
            if !seen.insert(mode_key(run.clone(), &meaning)) {
                continue;
            }
            let comment = comment.filter(|c| !c.is_empty()).map(str::to_owned);
            entries.push(CorpusEntry {
                seed: run.seed,
                branches: run.branches,
                comment,
                line,
                meaning,
            });
        }
        Ok(Self { entries })
    }

    /// The entries, in file order.
    pub fn entries(&self) -> &[CorpusEntry] {
        &self.entries
    }

    /// The seeds, in file order.
    pub fn seeds(&self) -> Vec<u64> {
        self.entries.iter().map(|entry| entry.seed).collect()
    }

    /// Whether `seed` is in the corpus, in any mode.
    pub fn contains(&self, seed: u64) -> bool {
        self.entries.iter().any(|entry| entry.seed == seed)
    }

    /// Whether `seed` is kept in the mode of `meaning` (swarm flag and schedule).
    pub fn contains_in_mode(&self, seed: u64, meaning: &SeedMeaning) -> bool {
        self.contains_path_in_mode(&RunPath::from_seed(seed), meaning)
    }

    /// Whether `path` is kept in the mode of `meaning` (a seed is the path of itself).
    pub fn contains_path_in_mode(&self, path: &RunPath, meaning: &SeedMeaning) -> bool {
        self.entries.iter().any(|entry| {
            entry.seed == path.seed
                && entry.branches == path.branches
                && entry.meaning.same_mode(meaning)
        })
    }

    /// Adds `seed` with `comment` to the file at `path`, atomically and only if absent.
    /// A corrupt existing file is an error and is left untouched.
    pub fn append(path: &Path, seed: u64, comment: &str) -> Result<AppendOutcome, CorpusError> {
        Self::append_with(path, seed, &SeedMeaning::default(), comment)
    }

    /// Like [`SeedCorpus::append`], recording the seed's mode and findings too.
    pub fn append_with(
        path: &Path,
        seed: u64,
        meaning: &SeedMeaning,
        comment: &str,
    ) -> Result<AppendOutcome, CorpusError> {
        Self::append_path(path, &RunPath::from_seed(seed), meaning, comment)
    }

    /// Like [`SeedCorpus::append_with`], for a path (`7/412:9913  # liveness: ...`); a
    /// path without branches is written as its seed.
    pub fn append_path(
        path: &Path,
        run: &RunPath,
        meaning: &SeedMeaning,
        comment: &str,
    ) -> Result<AppendOutcome, CorpusError> {
        let io = |source| CorpusError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io)?;
        }
        let lock_path = sibling(path, ".lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io)?;
        lock.lock().map_err(io)?;

        let existing = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(io(source)),
        };
        if Self::parse(path, &existing)?.contains_path_in_mode(run, meaning) {
            return Ok(AppendOutcome::AlreadyPresent);
        }
        let mut text = existing;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format_path_entry(run, meaning, comment));

        replace_atomically(path, &text).map_err(io)?;
        drop(lock);
        Ok(AppendOutcome::Added)
    }
}

/// Replaces the file at `path` with `text`: written to a temporary file beside it,
/// synced, renamed over it, the directory synced; a process killed at any point leaves
/// the old file or the new one. The caller holds the lock.
pub(crate) fn replace_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let temp_path = sibling(path, &format!(".tmp-{}", std::process::id()));
    let mut temp = File::create(&temp_path)?;
    temp.write_all(text.as_bytes())?;
    temp.sync_all()?;
    drop(temp);
    fs::rename(&temp_path, path)?;
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        // Make the rename itself durable; not every platform can open a directory.
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// One corpus line: the seed, two spaces, and the comment (one line, bounded, anything
/// that looks like a credential redacted: seed files are committed).
pub fn format_line(seed: u64, comment: &str) -> String {
    format_entry(seed, &SeedMeaning::default(), comment)
}

/// One corpus line with the seed's words: `77 swarm expect=crash  # comment`.
pub fn format_entry(seed: u64, meaning: &SeedMeaning, comment: &str) -> String {
    format_path_entry(&RunPath::from_seed(seed), meaning, comment)
}

/// One corpus line for a path: `7/412:9913 expect=liveness  # comment` (a path without
/// branches is its seed's line).
pub fn format_path_entry(seed: &RunPath, meaning: &SeedMeaning, comment: &str) -> String {
    let mut comment: String = umi_core::llm::secrets::redact_patterns(comment)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if comment.len() > CORPUS_COMMENT_BYTES_MAX {
        let mut end = CORPUS_COMMENT_BYTES_MAX;
        while !comment.is_char_boundary(end) {
            end -= 1;
        }
        comment.truncate(end);
    }
    let comment = comment.trim();
    if comment.is_empty() {
        format!("{seed}{meaning}\n")
    } else {
        format!("{seed}{meaning}  # {comment}\n")
    }
}

/// `dir/<name>.seeds`, for a name made of letters, digits, `_` and `-`.
pub fn corpus_path(dir: &Path, name: &str) -> Result<PathBuf, CorpusError> {
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        return Err(CorpusError::BadName {
            name: name.to_owned(),
        });
    }
    Ok(dir.join(format!("{name}.seeds")))
}

/// Where seeds are kept, found from `start` (a crate's directory for its tests, the
/// working directory for `dst sweep`), one rule for the side that records and the side
/// that replays:
/// 1. the `seeds/` directory of the nearest package at or above `start` that keeps a
///    corpus in it (a `*.seeds` file: a crate that keeps its own seeds, as
///    `examples/async-openai-agent` does; a `seeds/` holding anything else, such as a
///    database's seed data, is not a corpus and never shadows the workspace's);
/// 2. else the `seeds/` of the workspace (the nearest ancestor whose `Cargo.toml`
///    declares `[workspace]`);
/// 3. else, in a project that is not a workspace, the `seeds/` of the nearest crate.
///
/// The search stops at the workspace root. The directory need not exist in cases 2 and
/// 3 (recording creates it). `None` outside any cargo project.
pub fn find_seeds_dir(start: &Path) -> Option<PathBuf> {
    let mut nearest_crate = None;
    for dir in start.ancestors() {
        let Ok(manifest) = fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let seeds = dir.join("seeds");
        if keeps_a_corpus(&seeds) || manifest.contains("[workspace]") {
            return Some(seeds);
        }
        nearest_crate.get_or_insert(seeds);
    }
    nearest_crate
}

/// Whether `dir` holds a corpus file (`*.seeds`); entries read at most
/// [`SEEDS_DIR_ENTRIES_READ_MAX`].
fn keeps_a_corpus(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries
        .take(SEEDS_DIR_ENTRIES_READ_MAX)
        .filter_map(Result::ok)
        .any(|entry| entry.path().extension().is_some_and(|ext| ext == "seeds"))
}

/// Entries of a `seeds/` directory [`find_seeds_dir`] reads to decide whether it holds a
/// corpus (a directory of thousands of unrelated files is not read whole).
const SEEDS_DIR_ENTRIES_READ_MAX: usize = 4_096;

/// The corpus file of a test named `name` in the crate at `manifest_dir`:
/// `<seeds dir>/<name>.seeds`, the seeds dir found as [`find_seeds_dir`] finds it (the
/// crate's own `seeds/` if it has one, else the workspace's). What `#[umi_dst::test]`
/// replays.
pub fn test_corpus_path(manifest_dir: &str, name: &str) -> PathBuf {
    find_seeds_dir(Path::new(manifest_dir))
        .unwrap_or_else(|| PathBuf::from("seeds"))
        .join(format!("{name}.seeds"))
}

pub(crate) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("umi-corpus-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn parses_seeds_comments_and_blank_lines() {
        let text = "# header\n\n12345  # correctness: lost write\n0x2a\n12345 # again\n";
        let corpus = SeedCorpus::parse(Path::new("x.seeds"), text).unwrap();
        assert_eq!(corpus.seeds(), [12345, 42]);
        assert_eq!(
            corpus.entries()[0].comment.as_deref(),
            Some("correctness: lost write")
        );
        assert_eq!(corpus.entries()[1].line, 4);
    }

    #[test]
    fn a_bad_line_is_named_by_path_and_line() {
        let error =
            SeedCorpus::parse(Path::new("seeds/demo.seeds"), "1\n2\nseven # x\n").unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("seeds/demo.seeds:3: is not a seed"),
            "{message}"
        );
        assert!(message.contains("seven"));
    }

    #[test]
    fn append_adds_once_and_keeps_existing_lines() {
        let dir = temp_dir("append");
        let path = corpus_path(&dir, "demo").unwrap();
        fs::write(&path, "# kept\n7  # old").unwrap();
        assert_eq!(
            SeedCorpus::append(&path, 9, "crash: boom\nsecond line").unwrap(),
            AppendOutcome::Added
        );
        assert_eq!(
            SeedCorpus::append(&path, 9, "again").unwrap(),
            AppendOutcome::AlreadyPresent
        );
        assert_eq!(
            SeedCorpus::append(&path, 7, "again").unwrap(),
            AppendOutcome::AlreadyPresent
        );
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text, "# kept\n7  # old\n9  # crash: boom second line\n");
        assert_eq!(SeedCorpus::load(&path).unwrap().seeds(), [7, 9]);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn append_refuses_to_touch_a_corrupt_file() {
        let dir = temp_dir("corrupt");
        let path = dir.join("bad.seeds");
        fs::write(&path, "1\nnot-a-seed\n").unwrap();
        assert!(matches!(
            SeedCorpus::append(&path, 2, ""),
            Err(CorpusError::Parse { line: 2, .. })
        ));
        assert_eq!(fs::read_to_string(&path).unwrap(), "1\nnot-a-seed\n");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_file_is_empty_and_names_are_checked() {
        assert_eq!(
            SeedCorpus::load(Path::new("/nonexistent/x.seeds")).unwrap(),
            SeedCorpus::default()
        );
        assert!(corpus_path(Path::new("seeds"), "../etc").is_err());
        assert!(corpus_path(Path::new("seeds"), "memory_no_data_loss").is_ok());
    }

    #[test]
    fn seed_words_are_kept_and_bad_ones_named_by_line() {
        let text = "7 swarm expect=crash faults=llm.timeout  # found in swarm\n8\n";
        let corpus = SeedCorpus::parse(Path::new("s.seeds"), text).unwrap();
        assert!(corpus.entries()[0].meaning.swarm);
        assert_eq!(
            corpus.entries()[0].comment.as_deref(),
            Some("found in swarm")
        );
        assert!(corpus.entries()[1].meaning.is_default_mode());
        let error = SeedCorpus::parse(Path::new("s.seeds"), "1\n9 swrm\n").unwrap_err();
        assert!(error.to_string().starts_with("s.seeds:2: "), "{error}");
        assert!(error.to_string().contains("swrm"), "{error}");
        let long = format!("1 {}\n", "x".repeat(10_000));
        let error = SeedCorpus::parse(Path::new("s.seeds"), &long).unwrap_err();
        assert!(
            error.to_string().len() < 600,
            "a bounded quote: {}",
            error.to_string().len()
        );
    }

    #[test]
    fn comments_never_hold_what_looks_like_a_credential() {
        let line = format_line(
            9,
            "correctness: auth: Authorization: Bearer sk-proj-0a1b2c3d4e5f from https://u:pw99@h/?key=AIza123",
        );
        assert_eq!(
            line,
            "9  # correctness: auth: Authorization: Bearer [REDACTED] from https://u:[REDACTED]@h/?key=[REDACTED]\n"
        );
    }

    #[test]
    fn append_with_writes_the_words_and_load_reads_them_back() {
        let dir = temp_dir("words");
        let path = corpus_path(&dir, "demo").unwrap();
        let meaning = SeedMeaning::parse("swarm expect=liveness").unwrap();
        SeedCorpus::append_with(&path, 3, &meaning, "liveness: hang").unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "3 swarm expect=liveness  # liveness: hang\n"
        );
        assert_eq!(
            SeedCorpus::load(&path).unwrap().entries()[0].meaning,
            meaning
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn seeds_go_to_the_workspace_or_else_the_nearest_crate() {
        let root = temp_dir("find");
        let krate = root.join("app");
        fs::create_dir_all(krate.join("src")).unwrap();
        fs::write(krate.join("Cargo.toml"), "[package]\nname = \"app\"\n").unwrap();
        assert_eq!(
            find_seeds_dir(&krate.join("src")),
            Some(krate.join("seeds"))
        );
        fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"app\"]\n",
        )
        .unwrap();
        assert_eq!(find_seeds_dir(&krate.join("src")), Some(root.join("seeds")));
        fs::remove_dir_all(root).unwrap();
    }

    /// A crate that keeps its own `seeds/` is found from inside it (its tests, a sweep
    /// run in it); from the workspace root, or from a member without one, the
    /// workspace's is. Before, a sweep run inside such a crate recorded into the
    /// workspace's `seeds/` while the crate's replay tests read its own.
    #[test]
    fn a_crate_with_its_own_seeds_keeps_them() {
        let root = temp_dir("own");
        let own = root.join("agent");
        let plain = root.join("core");
        for krate in [&own, &plain] {
            fs::create_dir_all(krate.join("src")).unwrap();
            fs::write(krate.join("Cargo.toml"), "[package]\n").unwrap();
        }
        fs::write(root.join("Cargo.toml"), "[workspace]\n").unwrap();
        // A member's `seeds/` with no corpus in it (a database's seed data) is not a
        // corpus: it never shadows the workspace's, where the kept seeds are.
        fs::create_dir_all(own.join("seeds")).unwrap();
        fs::create_dir_all(plain.join("seeds")).unwrap();
        fs::write(plain.join("seeds").join("users.sql"), "insert ...\n").unwrap();
        assert_eq!(find_seeds_dir(&own.join("src")), Some(root.join("seeds")));
        fs::write(own.join("seeds").join("retries.seeds"), "7\n").unwrap();
        let cases = [
            (own.join("src"), own.join("seeds")),
            (own.clone(), own.join("seeds")),
            (plain.join("src"), root.join("seeds")),
            (root.clone(), root.join("seeds")),
        ];
        for (start, expected) in cases {
            assert_eq!(find_seeds_dir(&start), Some(expected), "from {start:?}");
        }
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn comments_are_one_bounded_line() {
        let line = format_line(1, &"x".repeat(1000));
        assert!(line.len() <= CORPUS_COMMENT_BYTES_MAX + 8);
        assert_eq!(line.matches('\n').count(), 1);
        assert_eq!(format_line(5, "  "), "5\n");
    }
}
