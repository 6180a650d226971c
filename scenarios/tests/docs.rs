//! The documents' own indexes, held to what they index: the guide's table of contents to
//! its headings, ARCHITECTURE.md's list of decisions to `docs/adr/`, and every relative
//! path a document cites to a file of this repository.
//!
//! Each index is written by hand (it reads better than a generated one), so each can go
//! stale the day a section is added or renamed; these tests fail then and print the
//! index as it should read, to paste.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The guide, from the repository root.
const GUIDE: &str = "docs/guide.md";

/// The heading of the guide's table of contents (not listed in itself).
const CONTENTS_HEADING: &str = "## Contents";

/// The first cell of ARCHITECTURE.md's "Where things live" row listing the decisions.
const ADR_ROW: &str = "| `docs/adr/` |";

/// The documents whose relative paths must name files of this repository.
pub(super) const CITING_DOCS: [&str; 3] = ["README.md", "ARCHITECTURE.md", "docs"];

/// The most headings the guide may have (a guard on the scan, far above today's count).
const GUIDE_HEADINGS_MAX: usize = 500;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn the_guides_contents_list_every_section_with_a_working_anchor() {
    let guide = read(&root().join(GUIDE));
    let problems = contents_problems(&guide);
    assert!(
        problems.is_empty(),
        "{GUIDE}'s table of contents does not match its headings:\n{}\n\nThe contents as they \
         should read (under \"{CONTENTS_HEADING}\"):\n\n{}",
        problems.join("\n"),
        expected_contents(&guide).join("\n")
    );
}

#[test]
fn a_contents_with_a_missing_stale_or_broken_entry_is_refused() {
    let body = "# T\n\n## Contents\n\n{toc}\n\n## 1. First: a `thing`\n\n```text\n## not a heading\n```\n\n### Sub's part\n\n## 1. First: a `thing`\n";
    let good = "- [1. First: a `thing`](#1-first-a-thing)\n  - [Sub's part](#subs-part)\n- [1. First: a `thing`](#1-first-a-thing-1)";
    let guide = body.replace("{toc}", good);
    assert_eq!(contents_problems(&guide), Vec::<String>::new());
    assert_eq!(expected_contents(&guide).join("\n"), good);

    let missing = body.replace("{toc}", &good.replace("  - [Sub's part](#subs-part)\n", ""));
    let found = contents_problems(&missing);
    assert!(found.iter().any(|p| p.contains("Sub's part")), "{found:?}");

    let stale = body.replace("{toc}", &format!("{good}\n- [Gone](#gone)"));
    let found = contents_problems(&stale);
    assert!(found.iter().any(|p| p.contains("Gone")), "{found:?}");

    let broken = body.replace("{toc}", &good.replace("#subs-part", "#sub-part"));
    let found = contents_problems(&broken);
    assert!(found.iter().any(|p| p.contains("#sub-part")), "{found:?}");

    let flat = body.replace("{toc}", &good.replace("  - [Sub", "- [Sub"));
    assert!(!contents_problems(&flat).is_empty(), "a ### listed as a ##");

    let none = body.replace("## Contents\n\n{toc}\n", "");
    let found = contents_problems(&none);
    assert!(found.iter().any(|p| p.contains("no")), "{found:?}");
}

#[test]
fn anchors_are_githubs() {
    // GitHub's rule: lowercase; drop what is not a letter, digit, `_`, `-` or space;
    // spaces become `-`; a repeat gets `-1`, `-2`.
    for (heading, anchor) in [
        (
            "1. Make the code simulatable",
            "1-make-the-code-simulatable",
        ),
        (
            "The liveness phase: heal, then `eventually`",
            "the-liveness-phase-heal-then-eventually",
        ),
        (
            "For agent owners: cost, budgets and pass^k",
            "for-agent-owners-cost-budgets-and-passk",
        ),
        ("The agent's clock", "the-agents-clock"),
        ("`/umi/trace?format=otlp`", "umitraceformatotlp"),
        (
            "Measured on 2026-11-29 (issue 41)",
            "measured-on-2026-11-29-issue-41",
        ),
        ("umi_dst and Ümlauts", "umi_dst-and-ümlauts"),
    ] {
        assert_eq!(slug(heading), anchor, "{heading}");
    }
}

#[test]
fn the_guide_names_every_canary() {
    let guide = read(&root().join(GUIDE));
    let canaries: Vec<&'static str> = umi_scenarios::with_planted()
        .iter()
        .filter(|scenario| scenario.is_canary())
        .map(|scenario| scenario.name())
        .collect();
    assert!(
        canaries.len() >= 9,
        "only {} canaries found",
        canaries.len()
    );
    let missing = unnamed(&guide, &canaries);
    assert!(
        missing.is_empty(),
        "{GUIDE} does not name the canaries {missing:?} (section 5 lists them)"
    );
}

#[test]
fn a_canary_the_guide_does_not_name_is_found() {
    let guide = "Umi has two: `canary` and `canary_lost_link`; `canary_x2` is not `canary_x`.";
    assert!(unnamed(guide, &["canary", "canary_lost_link"]).is_empty());
    assert_eq!(
        unnamed(guide, &["canary", "canary_x", "canary_new"]),
        ["canary_new"]
    );
    assert_eq!(unnamed(guide, &["canary_lost"]), ["canary_lost"]);
}

/// The names of `names` the guide never writes as code (`` `name` ``).
fn unnamed<'a>(guide: &str, names: &[&'a str]) -> Vec<&'a str> {
    names
        .iter()
        .copied()
        .filter(|name| !guide.contains(&format!("`{name}`")))
        .collect()
}

#[test]
fn architecture_lists_every_decision_record() {
    let root = root();
    let recorded = adr_numbers(&root.join("docs/adr"));
    assert!(recorded.len() >= 27, "only {} ADRs found", recorded.len());
    let architecture = read(&root.join("ARCHITECTURE.md"));
    let problems = adr_list_problems(&architecture, &recorded);
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's `docs/adr/` row does not list docs/adr/:\n{}",
        problems.join("\n")
    );
}

#[test]
fn an_adr_list_missing_one_or_naming_none_is_refused() {
    let recorded: BTreeSet<String> = ["0001", "0002"].map(String::from).into();
    let row = |list: &str| format!("| where | what |\n{ADR_ROW} decisions: {list} |\n");
    assert!(adr_list_problems(&row("a (0001), b (0002)"), &recorded).is_empty());
    let found = adr_list_problems(&row("a (0001)"), &recorded);
    assert!(found.iter().any(|p| p.contains("0002")), "{found:?}");
    let found = adr_list_problems(&row("a (0001), b (0002), c (0003)"), &recorded);
    assert!(found.iter().any(|p| p.contains("0003")), "{found:?}");
    assert!(!adr_list_problems("no row", &recorded).is_empty());
}

#[test]
fn every_relative_path_a_document_cites_is_a_file_of_the_repository() {
    let root = root();
    let mut problems = Vec::new();
    for place in CITING_DOCS {
        for file in markdown_files(&root.join(place)) {
            let text = read(&file);
            let dir = file.parent().unwrap_or(&root);
            for cited in relative_paths(&text) {
                if !dir.join(&cited).exists() {
                    let name = file
                        .strip_prefix(&root)
                        .unwrap_or(&file)
                        .display()
                        .to_string();
                    problems.push(format!("  {name}: `{cited}` is not a file here"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "documents cite paths that are not in the repository (name the thing instead):\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_relative_path_is_found_in_links_and_code() {
    let text = "see [the guide](../guide.md#x), `../shared/seeds/002_x`, `../../a` and \
                [out](https://example.com/a) and `/v1/chat` and [here](#anchor)";
    assert_eq!(
        relative_paths(text),
        ["../guide.md", "../shared/seeds/002_x", "../../a"]
    );
}

/// The guide's `##` and `###` headings outside code blocks (its title, `####` and the
/// contents' own heading aside), with their levels.
fn headings(guide: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_code = false;
    for line in guide.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || line == CONTENTS_HEADING {
            continue;
        }
        let level = line.chars().take_while(|c| *c == '#').count();
        if (2..=3).contains(&level) && line[level..].starts_with(' ') {
            found.push((level, line[level + 1..].trim().to_string()));
        }
        assert!(
            found.len() <= GUIDE_HEADINGS_MAX,
            "past {GUIDE_HEADINGS_MAX} headings"
        );
    }
    found
}

/// A heading's anchor as GitHub makes it (before a repeat's `-N`).
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The contents the guide's headings call for, one line per heading.
fn expected_contents(guide: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    headings(guide)
        .into_iter()
        .map(|(level, text)| {
            let base = slug(&text);
            let repeats = seen.iter().filter(|s| **s == base).count();
            seen.push(base.clone());
            let anchor = if repeats == 0 {
                base
            } else {
                format!("{base}-{repeats}")
            };
            let indent = if level == 3 { "  " } else { "" };
            format!("{indent}- [{text}](#{anchor})")
        })
        .collect()
}

/// The list under the guide's contents heading, as written.
fn written_contents(guide: &str) -> Option<Vec<String>> {
    let (_, after) = guide.split_once(&format!("{CONTENTS_HEADING}\n"))?;
    Some(
        after
            .lines()
            .skip_while(|line| line.trim().is_empty())
            .take_while(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .map(str::to_string)
            .collect(),
    )
}

/// What is wrong with the guide's contents: a heading not listed (or listed with another
/// anchor or depth), an entry for no heading.
fn contents_problems(guide: &str) -> Vec<String> {
    let Some(written) = written_contents(guide) else {
        return vec![format!("  there is no \"{CONTENTS_HEADING}\" section")];
    };
    let expected = expected_contents(guide);
    let mut problems = Vec::new();
    for line in &expected {
        if !written.contains(line) {
            problems.push(format!("  not listed: {}", line.trim_start()));
        }
    }
    for line in &written {
        if !expected.contains(line) {
            problems.push(format!(
                "  no such heading, anchor or depth: {}",
                line.trim_start()
            ));
        }
    }
    if problems.is_empty() && written != expected {
        problems.push("  the entries are not in the headings' order".to_string());
    }
    problems
}

/// The numbers of the decision records in `dir` (`0001` of `0001-determinism.md`).
fn adr_numbers(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .filter_map(|name| {
            let number = name.split('-').next()?.to_string();
            (number.len() == 4 && number.chars().all(|c| c.is_ascii_digit())).then_some(number)
        })
        .collect()
}

/// What ARCHITECTURE.md's decisions row leaves out of `recorded`, or names that is not.
fn adr_list_problems(architecture: &str, recorded: &BTreeSet<String>) -> Vec<String> {
    let Some(row) = architecture.lines().find(|line| line.starts_with(ADR_ROW)) else {
        return vec![format!("  no row starts with {ADR_ROW}")];
    };
    let listed: BTreeSet<String> = row
        .split('(')
        .skip(1)
        .filter_map(|part| part.get(..5))
        .filter(|part| part.ends_with(')') && part[..4].chars().all(|c| c.is_ascii_digit()))
        .map(|part| part[..4].to_string())
        .collect();
    let mut problems: Vec<String> = recorded
        .difference(&listed)
        .map(|number| format!("  ADR {number} is not listed"))
        .collect();
    problems.extend(
        listed
            .difference(recorded)
            .map(|number| format!("  ({number}) is listed but docs/adr/ has no {number}-*.md")),
    );
    problems
}

/// The Markdown files at `place` (a file, or a folder searched to any depth).
pub(super) fn markdown_files(place: &Path) -> Vec<PathBuf> {
    if place.is_file() {
        return vec![place.to_path_buf()];
    }
    let mut found = Vec::new();
    let mut pending = vec![place.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The relative paths `text` cites: Markdown link targets that are neither URLs nor
/// anchors (the anchor cut off), and code spans that start with `../`.
fn relative_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (index, _) in text.match_indices("](") {
        let target = &text[index + 2..];
        let target = &target[..target.find(')').unwrap_or(target.len())];
        let path = target.split('#').next().unwrap_or_default();
        if !path.is_empty() && !path.contains("://") && !path.starts_with("mailto:") {
            found.push((index, path.to_string()));
        }
    }
    for (index, _) in text.match_indices("`../") {
        let span = &text[index + 1..];
        let span = &span[..span.find('`').unwrap_or(span.len())];
        found.push((index, span.to_string()));
    }
    found.sort();
    found.into_iter().map(|(_, path)| path).collect()
}
