//! Golden files: one record per line, compared line by line, blessed with `UMI_BLESS=1`.
//! A mismatch names the first differing line with both versions (or, when one file is
//! a prefix of the other, the first line only one of them has), and how many lines
//! differ in all, so a reviewer sees where a change starts and how far it reaches.

use std::path::Path;

/// Lines of a mismatch report quoted at most, per side (a golden line can be long).
const QUOTE_CHARS_MAX: usize = 600;

/// Where `expected` and `actual` first differ, as a report; `None` when they are equal.
pub(crate) fn first_difference(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let was: Vec<&str> = expected.lines().collect();
    let now: Vec<&str> = actual.lines().collect();
    let differing =
        was.iter().zip(&now).filter(|(a, b)| a != b).count() + was.len().abs_diff(now.len());
    let first = was
        .iter()
        .zip(&now)
        .position(|(a, b)| a != b)
        .unwrap_or(was.len().min(now.len()));
    let quote = |line: Option<&&str>| match line {
        None => "(nothing: the file ends before this line)".to_owned(),
        Some(line) if line.chars().count() > QUOTE_CHARS_MAX => {
            let cut: String = line.chars().take(QUOTE_CHARS_MAX).collect();
            format!("{cut}…")
        }
        Some(line) => (*line).to_owned(),
    };
    Some(format!(
        "line {} is the first to differ ({differing} differing line(s); {} lines were, {} are \
         now)\n  was: {}\n  now: {}",
        first + 1,
        was.len(),
        now.len(),
        quote(was.get(first)),
        quote(now.get(first)),
    ))
}

/// Checks `rendered` against the golden file at `path`, or writes it there when
/// `UMI_BLESS=1`. `what` says what changed and how to bless on purpose.
pub(crate) fn check(path: &Path, rendered: &str, what: &str) {
    if std::env::var("UMI_BLESS").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, rendered).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("{}: {error}\n{what}", path.display()));
    if let Some(report) = first_difference(&expected, rendered) {
        panic!("{} changed: {report}\n{what}", path.display());
    }
}

#[test]
fn the_report_names_the_first_difference_also_past_the_end() {
    assert_eq!(first_difference("a\nb\n", "a\nb\n"), None);
    let changed = first_difference("a\nb\nc\n", "a\nB\nC\n").unwrap();
    assert!(
        changed.starts_with("line 2 is the first to differ (2 differing"),
        "{changed}"
    );
    assert!(changed.contains("was: b\n  now: B"), "{changed}");
    // One file a prefix of the other: the first line only the longer one has.
    let longer = first_difference("a\n", "a\nextra\n").unwrap();
    assert!(
        longer.starts_with("line 2 is the first to differ (1 differing"),
        "{longer}"
    );
    assert!(
        longer.contains("was: (nothing: the file ends before this line)"),
        "{longer}"
    );
    assert!(longer.contains("now: extra"), "{longer}");
    let shorter = first_difference("a\nb\n", "a\n").unwrap();
    assert!(shorter.contains("was: b\n  now: (nothing"), "{shorter}");
}
