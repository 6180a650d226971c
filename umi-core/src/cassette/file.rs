//! The cassette file: a header line, then one exchange per line.
//!
//! ```text
//! {"recorded_by":"dst record 0.1.0","umi_cassette":1,"upstream":"http://127.0.0.1:4000"}
//! {"request":{"body":{"messages":[…],"model":"gpt-4o"},"method":"POST","path":"/v1/chat/completions"},"response":{…}}
//! ```
//!
//! The loading rule: every line must parse, and the load fails on the first that does
//! not, naming the file, the line and the JSON path inside it. Nothing is skipped: a
//! cassette that loads holds every exchange its file holds. A recorder writes each line
//! whole, in one write, once its exchange has ended, so a recorder that dies leaves the
//! lines before it intact; a line that was cut anyway (a full disk) fails the load by
//! name, and deleting it is the repair.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::{
    CASSETTE_EXCHANGES_MAX, CASSETTE_VERSION, Exchange, Header, RESPONSE_BODY_BYTES_MAX,
    RESPONSE_PIECES_MAX,
};

/// Why a cassette could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be opened, read or written.
    #[error("cassette {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file is empty: not even a header.
    #[error("cassette {path}: empty file (a cassette starts with its header line)")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A line is not what a cassette holds there.
    #[error("cassette {path}:{line}: {reason}")]
    Line {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong, with the JSON path where it is.
        reason: String,
    },
    /// The file is of another format version.
    #[error(
        "cassette {path}: format version {found}, and this build reads version {supported} only (record it again with this build)"
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version the file says.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// The file holds more exchanges than a cassette may.
    #[error("cassette {path}: more than {limit} exchanges")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// [`CASSETTE_EXCHANGES_MAX`].
        limit: usize,
    },
}

/// A loaded cassette.
#[derive(Debug, Clone, PartialEq)]
pub struct Cassette {
    /// Its header.
    pub header: Header,
    /// Its exchanges, in file order.
    pub exchanges: Vec<Exchange>,
}

impl Cassette {
    /// An empty cassette with `header`.
    pub fn new(header: Header) -> Self {
        Self {
            header,
            exchanges: Vec::new(),
        }
    }

    /// Reads the cassette at `path`.
    pub fn load(path: &Path) -> Result<Self, CassetteError> {
        let text = std::fs::read_to_string(path).map_err(|source| CassetteError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses cassette `text`; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, CassetteError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or_else(|| CassetteError::Empty {
            path: path.to_owned(),
        })?;
        let header = parse_header(first, path)?;
        let mut exchanges = Vec::new();
        for (index, line) in lines {
            if exchanges.len() == CASSETTE_EXCHANGES_MAX {
                return Err(CassetteError::TooLarge {
                    path: path.to_owned(),
                    limit: CASSETTE_EXCHANGES_MAX,
                });
            }
            let line_error = |reason: String| CassetteError::Line {
                path: path.to_owned(),
                line: index + 1,
                reason,
            };
            let exchange: Exchange = parse_json(line).map_err(line_error)?;
            check_exchange(&exchange).map_err(line_error)?;
            exchanges.push(exchange);
        }
        Ok(Self { header, exchanges })
    }

    /// The cassette as file text: the header line, then one line per exchange.
    pub fn to_text(&self) -> String {
        let mut text = line_of(&self.header);
        for exchange in &self.exchanges {
            text.push_str(&line_of(exchange));
        }
        text
    }

    /// Writes the cassette to `path` (through a temporary file and a rename, so a reader
    /// never sees half of it).
    pub fn save(&self, path: &Path) -> Result<(), CassetteError> {
        let io = |source| CassetteError::Io {
            path: path.to_owned(),
            source,
        };
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        std::fs::write(&partial, self.to_text()).map_err(io)?;
        std::fs::rename(&partial, path).map_err(io)
    }
}

fn parse_header(line: &str, path: &Path) -> Result<Header, CassetteError> {
    let line_error = |reason: String| CassetteError::Line {
        path: path.to_owned(),
        line: 1,
        reason,
    };
    let value: serde_json::Value = serde_json::from_str(line)
        .map_err(|error| line_error(format!("the header is not JSON: {error}")))?;
    let version = value
        .get("umi_cassette")
        .and_then(serde_json::Value::as_u64);
    let Some(version) = version else {
        return Err(line_error(
            "the header has no `umi_cassette` version (is this a cassette?)".into(),
        ));
    };
    if version != u64::from(CASSETTE_VERSION) {
        return Err(CassetteError::Version {
            path: path.to_owned(),
            found: u32::try_from(version).unwrap_or(u32::MAX),
            supported: CASSETTE_VERSION,
        });
    }
    parse_json(line).map_err(line_error)
}

/// `line` as a `T`, or what is wrong and at which JSON path.
fn parse_json<T: serde::de::DeserializeOwned>(line: &str) -> Result<T, String> {
    // Tracking the path costs on every field; it is only needed for the error, so a line
    // that parses is parsed without it (the same value: the same deserializer, no
    // trailing-characters check either way), and one that does not is parsed again
    // with it for the message.
    if let Ok(value) =
        <T as serde::Deserialize>::deserialize(&mut serde_json::Deserializer::from_str(line))
    {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_str(line);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let at = error.path().to_string();
        let inner = error.into_inner();
        if at == "." || at.is_empty() {
            inner.to_string()
        } else {
            format!("at {at}: {inner}")
        }
    })
}

/// The invariants a parsed exchange must hold that serde cannot check.
fn check_exchange(exchange: &Exchange) -> Result<(), String> {
    let response = &exchange.response;
    if !exchange.request.path.starts_with('/') {
        return Err(format!(
            "at request.path: `{}` does not start with `/`",
            exchange.request.path
        ));
    }
    if response.body.is_some() && response.body_base64.is_some() {
        return Err("at response: both `body` and `body_base64`".into());
    }
    if let Some(encoded) = &response.body_base64 {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|error| format!("at response.body_base64: {error}"))?;
    }
    let body_len = response.body_bytes().len();
    if body_len > RESPONSE_BODY_BYTES_MAX {
        return Err(format!(
            "at response.body: {body_len} bytes, more than {RESPONSE_BODY_BYTES_MAX}"
        ));
    }
    if response.pieces.len() > RESPONSE_PIECES_MAX {
        return Err(format!(
            "at response.pieces: more than {RESPONSE_PIECES_MAX} pieces"
        ));
    }
    check_pieces(response, body_len)
}

fn check_pieces(response: &super::RecordedResponse, body_len: usize) -> Result<(), String> {
    let Some(first) = response.pieces.first() else {
        return Ok(());
    };
    if first.offset() != 0 {
        return Err("at response.pieces[0]: the first piece starts at offset 0".into());
    }
    for (index, pair) in response.pieces.windows(2).enumerate() {
        if pair[1].offset() <= pair[0].offset() || pair[1].offset() >= body_len {
            return Err(format!(
                "at response.pieces[{}]: offset {} is not between the previous piece's ({}) and the body's length ({body_len})",
                index + 1,
                pair[1].offset(),
                pair[0].offset()
            ));
        }
        if pair[1].at_ms() < pair[0].at_ms() {
            return Err(format!(
                "at response.pieces[{}]: arrives at {} ms, before the previous piece ({} ms)",
                index + 1,
                pair[1].at_ms(),
                pair[0].at_ms()
            ));
        }
    }
    if body_len == 0 {
        return Err("at response.pieces: pieces of an empty body".into());
    }
    Ok(())
}

/// `value` as one line of JSON with sorted keys, and its newline.
fn line_of<T: serde::Serialize>(value: &T) -> String {
    let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
    let mut line = crate::canonical_json::to_string(&value);
    line.push('\n');
    line
}

/// Appends exchanges to a cassette file, each as one whole line in one write.
#[derive(Debug)]
pub struct CassetteWriter {
    path: PathBuf,
    file: Mutex<File>,
}

impl CassetteWriter {
    /// Creates (or truncates) the cassette at `path` and writes `header`.
    pub fn create(path: &Path, header: &Header) -> Result<Self, CassetteError> {
        let io = |source| CassetteError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = File::create(path).map_err(io)?;
        file.write_all(line_of(header).as_bytes()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(Self {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    /// Opens the cassette at `path` to add exchanges after the ones it has (its header
    /// must be of this version); creates it with `header` if it does not exist.
    pub fn append_to(path: &Path, header: &Header) -> Result<Self, CassetteError> {
        if !path.exists() {
            return Self::create(path, header);
        }
        Cassette::load(path)?;
        let io = |source| CassetteError::Io {
            path: path.to_owned(),
            source,
        };
        let ends_in_newline = std::fs::read(path).map_err(io)?.last() == Some(&b'\n');
        let mut file = OpenOptions::new().append(true).open(path).map_err(io)?;
        if !ends_in_newline {
            // A hand-edited last line without its newline: the next line must not join it.
            file.write_all(b"\n").map_err(io)?;
        }
        Ok(Self {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `exchange` as one line, written whole.
    pub fn append(&self, exchange: &Exchange) -> Result<(), CassetteError> {
        let line = line_of(exchange);
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|source| CassetteError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"recorded_by":"test","umi_cassette":1}"#;

    fn exchange_line(pieces: &str) -> String {
        format!(
            r#"{{"request":{{"method":"POST","path":"/v1/chat/completions","body":{{"model":"m"}}}},"response":{{"status":200,"headers_ms":3,"body":"hello","pieces":{pieces},"end":"clean"}}}}"#
        )
    }

    #[test]
    fn a_cassette_round_trips_through_its_text() {
        let text = format!("{HEADER}\n{}\n", exchange_line("[[0,3],[2,9]]"));
        let cassette = Cassette::parse(&text, Path::new("c.jsonl")).unwrap();
        assert_eq!(cassette.exchanges.len(), 1);
        let reads = cassette.exchanges[0].response.reads();
        assert_eq!(reads, vec![(b"he".to_vec(), 3), (b"llo".to_vec(), 9)]);
        let again = Cassette::parse(&cassette.to_text(), Path::new("c.jsonl")).unwrap();
        assert_eq!(again, cassette);
    }

    #[test]
    fn bad_lines_are_named_by_file_line_and_path() {
        let table: &[(&str, &str)] = &[
            ("[[1,3]]", "cassette c.jsonl:2: at response.pieces[0]"),
            (
                "[[0,3],[9,4]]",
                "cassette c.jsonl:2: at response.pieces[1]: offset 9",
            ),
            (
                "[[0,3],[2,1]]",
                "cassette c.jsonl:2: at response.pieces[1]: arrives at 1 ms",
            ),
            (
                "\"x\"",
                "cassette c.jsonl:2: at response.pieces: invalid type",
            ),
        ];
        for (pieces, expected) in table {
            let text = format!("{HEADER}\n{}\n", exchange_line(pieces));
            let error = Cassette::parse(&text, Path::new("c.jsonl")).unwrap_err();
            assert!(error.to_string().starts_with(expected), "{pieces}: {error}");
        }
        let cut = exchange_line("[]");
        let text = format!("{HEADER}\n{}\n{}\n", cut, &cut[..40]);
        let error = Cassette::parse(&text, Path::new("c.jsonl")).unwrap_err();
        assert!(
            error.to_string().starts_with("cassette c.jsonl:3: "),
            "{error}"
        );
    }

    #[test]
    fn appending_to_a_file_without_a_final_newline_keeps_the_lines_apart() {
        let path = std::env::temp_dir().join(format!("umi-append-{}.jsonl", std::process::id()));
        let first = exchange_line("[]");
        std::fs::write(&path, format!("{HEADER}\n{first}")).unwrap();
        let header: Header = serde_json::from_str(HEADER).unwrap();
        let writer = CassetteWriter::append_to(&path, &header).unwrap();
        let exchange = Cassette::load(&path).unwrap().exchanges.remove(0);
        writer.append(&exchange).unwrap();
        let loaded = Cassette::load(&path).unwrap();
        assert_eq!(loaded.exchanges.len(), 2);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn another_version_is_refused_with_the_version_needed() {
        let text = r#"{"recorded_by":"future","umi_cassette":7}"#;
        let error = Cassette::parse(text, Path::new("c.jsonl")).unwrap_err();
        assert!(matches!(
            error,
            CassetteError::Version {
                found: 7,
                supported: CASSETTE_VERSION,
                ..
            }
        ));
        assert!(
            error.to_string().contains("reads version 1 only"),
            "{error}"
        );
        let error = Cassette::parse("", Path::new("c.jsonl")).unwrap_err();
        assert!(matches!(error, CassetteError::Empty { .. }));
    }
}
