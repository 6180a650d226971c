//! The house's layering check: no import circle between the modules of a crate.
//!
//! A circle (`memory` uses `storage`, and `storage` uses `memory`) means neither module
//! can be read, tested or moved without the other: the two are one module split across
//! files. The compiler accepts circles inside a crate, so this test looks for them, the
//! way `cargo-modules` or Go's import rule would.
//!
//! # What counts as a use
//!
//! Each library source file is parsed with syn (no line heuristics). Every path its
//! non-test code names (in `use` items, types, expressions, patterns, attributes'
//! arguments are not paths) is resolved to the module it reaches: `crate::a::b`,
//! `super::x`, `self::x`, a child module's name, or a name a `use` brought in. A path to
//! an item a module re-exports (`pub use message::Message` in `llm/mod.rs`) is followed
//! to the module that defines it. Paths inside macro invocations are not seen.
//!
//! # What counts as a circle
//!
//! A use from module `a::x::…` to module `a::y::…` is an edge `x → y` among the children
//! of `a`. A circle is a strongly connected set of two or more children of one parent.
//! A module using its own ancestor (a child using a type its parent's `mod.rs` defines)
//! is not an edge: the parent holds what its children share, and re-exports them.
//!
//! The allow-list is empty and stays empty: a circle is broken by moving what both sides
//! need below both, not by listing it.
//!
//! # The diagram
//!
//! ARCHITECTURE.md's "Layers" section draws each crate's top-level modules in layers, top
//! first. [`the_layer_diagram_matches_the_code`] holds it to the code: every module is
//! drawn once, and every use between two of them goes from a higher line to a lower one.
//! When it fails it prints the layering the code has now, to paste. `umi-dst`'s `network`
//! (a third of its crate) is drawn inside too, as `umi-dst::network`: its children
//! layered as a crate's top-level modules are ([`INNER_DIAGRAMS`]); and
//! [`only_the_registry_names_a_network_format`] holds the rule its bands rest on: of
//! network's modules only the registry names a wire format's module, but for the
//! allowances listed with their reason (a list that only shrinks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use crate::tidy::{is_test_only, rust_files};

/// The crates whose modules may not import in a circle: every library crate and the
/// scenarios' library, by the directory of their `lib.rs`.
pub(crate) const CRATE_SOURCE_DIRS: [&str; 5] = [
    "umi-core/src",
    "umi-dst/src",
    "umi-dst-macros/src",
    "umi-sweep/src",
    "scenarios/src",
];

/// Modules whose children the diagram draws too, as `crate::module` (a module a third of
/// its crate's size, whose inner layering is worth holding as the crates' is).
const INNER_DIAGRAMS: [(&str, &str); 1] = [("umi-dst/src", "network")];

/// `network`'s wire-format modules, each one format's server side behind the seam
/// (`format`, `surface`) below them: the modules the registry's `server_format` names
/// (`&super::<module>::<Format>`), so a format added to the registry is held here with
/// no edit of this file.
fn network_formats(root: &Path) -> Vec<String> {
    let registry = std::fs::read_to_string(root.join("umi-dst/src/network/registry.rs"))
        .expect("umi-dst/src/network/registry.rs is readable");
    let body = registry
        .split_once("pub(crate) fn server_format(")
        .and_then(|(_, rest)| rest.split_once("\n}\n"))
        .map(|(body, _)| body)
        .expect("registry.rs has `server_format`");
    let mut formats: Vec<String> = body
        .split("&super::")
        .skip(1)
        .filter_map(|rest| rest.split_once("::").map(|(module, _)| module.to_owned()))
        .collect();
    formats.sort();
    formats.dedup();
    formats
}

/// The one module of `network` that chooses a format, so the one that names them all
/// (docs/adr/0009-one-seam-per-wire-format.md).
const NETWORK_FORMAT_CHOOSER: &str = "registry";

/// Uses of a format module by another module of `network` that are not the chooser's,
/// each with why. The list only shrinks: an entry the code no longer has fails the test.
const NETWORK_FORMAT_USES_ALLOWED: [(&str, &str, &str); 1] = [(
    "responses",
    "chat",
    "the Responses API is OpenAI's too: it answers with chat's error envelope, key check and model list",
)];

/// The heading of ARCHITECTURE.md's section holding the diagram.
const LAYERS_HEADING: &str = "## Layers";

/// Rounds of re-export following a path may take (a guard against a `pub use` loop).
const REEXPORT_HOPS_MAX: usize = 8;

/// A module's path from its crate root, e.g. `["llm", "client"]`.
type ModulePath = Vec<String>;

/// One crate's modules: what each one's non-test code uses, and what it re-exports.
#[derive(Default)]
struct CrateModules {
    /// Every module that has a file.
    modules: BTreeSet<ModulePath>,
    /// The absolute paths each module names, with where (`file:line`).
    uses: BTreeMap<ModulePath, Vec<(Vec<String>, String)>>,
    /// `module → name → absolute path` for each `use` item (`pub` or not), so a path
    /// through an imported or re-exported name resolves to where the name is defined.
    imports: BTreeMap<ModulePath, BTreeMap<String, Vec<String>>>,
    /// Modules declared `#[cfg(test)] mod x;`: test code, left out with what they hold.
    test_only: BTreeSet<ModulePath>,
}

/// An edge between two children of one parent, with the first place it was seen.
type Edges = BTreeMap<(ModulePath, String, String), String>;

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut problems = Vec::new();
    for dir in CRATE_SOURCE_DIRS {
        let modules = read_crate(&root, dir);
        for circle in circles(&edges(&modules)) {
            problems.push(format!("  {dir}: {circle}"));
        }
    }
    assert!(
        problems.is_empty(),
        "import circles between modules (move what both sides need below both; see \
         ARCHITECTURE.md, \"Layers\"):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_layer_diagram_matches_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md"))
        .unwrap_or_else(|error| panic!("ARCHITECTURE.md: {error}"));
    let drawn = diagram(&text);
    let mut problems = Vec::new();
    let mut computed = String::new();
    let crates = CRATE_SOURCE_DIRS.map(|dir| (dir, None));
    let inner = INNER_DIAGRAMS.map(|(dir, module)| (dir, Some(module)));
    for (dir, module) in crates.into_iter().chain(inner) {
        let modules = read_crate(&root, dir);
        let parent: ModulePath = module.map(str::to_string).into_iter().collect();
        let (tops, uses) = children(&modules, &parent);
        if tops.is_empty() {
            continue;
        }
        let name = match module {
            Some(module) => format!("{}::{module}", crate_name(dir)),
            None => crate_name(dir).to_string(),
        };
        computed.push_str(&layering_text(&name, &tops, &uses));
        let layers = drawn.get(&name).cloned().unwrap_or_default();
        problems.extend(layer_problems(&name, &tops, &uses, &layers));
    }
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's \"Layers\" diagram does not match the code:\n{}\n\nThe \
         layering the code has now (each module on the lowest line its uses allow):\n{computed}",
        problems.join("\n")
    );
}

#[test]
fn only_the_registry_names_a_network_format() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let modules = read_crate(&root, "umi-dst/src");
    let (inner, uses) = children(&modules, &["network".to_string()]);
    let formats = network_formats(&root);
    assert!(
        formats.len() >= 2,
        "the registry's `server_format` names too few formats to hold: {formats:?}"
    );
    for format in &formats {
        assert!(inner.contains(format), "network has no module {format}");
    }
    let formats: Vec<&str> = formats.iter().map(String::as_str).collect();
    let problems = format_use_problems(
        &uses,
        &formats,
        NETWORK_FORMAT_CHOOSER,
        &NETWORK_FORMAT_USES_ALLOWED,
    );
    assert!(
        problems.is_empty(),
        "umi-dst's network names a format outside its registry (reach the format through \
         the seam, `format.rs` and `surface.rs`, instead):\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_format_named_outside_the_registry_or_a_stale_allowance_is_refused() {
    let formats = ["chat", "gemini", "responses"];
    let allowed = [("responses", "chat", "OpenAI's family")];
    let uses = |pairs: &[(&str, &str)]| -> BTreeSet<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    let good = uses(&[
        ("registry", "chat"),
        ("registry", "gemini"),
        ("responses", "chat"),
        ("chat", "format"),
        ("answer", "format"),
    ]);
    assert!(format_use_problems(&good, &formats, "registry", &allowed).is_empty());
    let mut leak = good.clone();
    leak.insert(("headers".into(), "gemini".into()));
    let found = format_use_problems(&leak, &formats, "registry", &allowed);
    assert!(
        found.iter().any(|p| p.contains("headers uses gemini")),
        "{found:?}"
    );
    let mut cross = good.clone();
    cross.insert(("gemini".into(), "chat".into()));
    let found = format_use_problems(&cross, &formats, "registry", &allowed);
    assert!(
        found.iter().any(|p| p.contains("gemini uses chat")),
        "{found:?}"
    );
    let mut stale = good;
    stale.remove(&("responses".to_string(), "chat".to_string()));
    let found = format_use_problems(&stale, &formats, "registry", &allowed);
    assert!(found.iter().any(|p| p.contains("no longer")), "{found:?}");
}

/// Each use of a format module in `uses` by a module other than `chooser` and not in
/// `allowed`, and each allowance the code no longer needs.
fn format_use_problems(
    uses: &BTreeSet<(String, String)>,
    formats: &[&str],
    chooser: &str,
    allowed: &[(&str, &str, &str)],
) -> Vec<String> {
    let is_allowed = |from: &str, to: &str| allowed.iter().any(|(a, b, _)| *a == from && *b == to);
    let mut problems: Vec<String> = uses
        .iter()
        .filter(|(from, to)| {
            formats.contains(&to.as_str()) && from != chooser && !is_allowed(from, to)
        })
        .map(|(from, to)| format!("  {from} uses {to}"))
        .collect();
    for (from, to, why) in allowed {
        if !uses.contains(&(from.to_string(), to.to_string())) {
            problems.push(format!(
                "  {from} no longer uses {to}: remove its allowance ({why})"
            ));
        }
    }
    problems
}

#[test]
fn a_diagram_with_a_use_going_up_or_a_module_missing_is_refused() {
    let tops: BTreeSet<String> = ["agent", "memory", "storage"].map(String::from).into();
    let uses: BTreeSet<(String, String)> = [("agent", "memory"), ("memory", "storage")]
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .into();
    let layers = |lines: &[&[&str]]| -> Vec<Vec<String>> {
        lines
            .iter()
            .map(|line| line.iter().map(|m| m.to_string()).collect())
            .collect()
    };
    let good = layers(&[&["agent"], &["memory"], &["storage"]]);
    assert!(layer_problems("c", &tops, &uses, &good).is_empty());
    let upside = layers(&[&["agent"], &["storage"], &["memory"]]);
    let found = layer_problems("c", &tops, &uses, &upside);
    assert!(
        found.iter().any(|p| p.contains("memory uses storage")),
        "{found:?}"
    );
    let same_line = layers(&[&["agent", "memory"], &["storage"]]);
    assert!(!layer_problems("c", &tops, &uses, &same_line).is_empty());
    let missing = layers(&[&["agent"], &["memory"]]);
    let found = layer_problems("c", &tops, &uses, &missing);
    assert!(
        found.iter().any(|p| p.contains("storage is not drawn")),
        "{found:?}"
    );
    let text = "## Layers\n\n```text\nc\n  agent\n  memory  storage\n```\n";
    assert_eq!(
        diagram(text)["c"],
        layers(&[&["agent"], &["memory", "storage"]])
    );
}

/// Modules `a`, `b` (and `b::inner` inline) of a planted crate, each file as text.
fn planted_sources(a: &str, b: &str) -> Vec<(ModulePath, String, String)> {
    vec![
        (vec![], "lib.rs".into(), "mod a; mod b;".into()),
        (vec!["a".into()], "a.rs".into(), a.into()),
        (vec!["b".into()], "b.rs".into(), b.into()),
    ]
}

#[test]
fn the_collector_sees_uses_expressions_macros_and_inline_modules() {
    let chain = "pub fn f() {}";
    // Each way `b` may reach `a`, with `a` using `b` by a `use`: each must be a circle.
    let reaches_a = [
        "use crate::a::f;",
        "pub fn g() { crate::a::f() }",
        "pub fn g() -> String { format!(\"{:?}\", super::a::f()) }",
        "pub fn g() { let _ = vec![crate::a::f()]; }",
        "mod inner { pub fn g() { super::super::a::f() } }",
        "use super::a;\npub fn g() { a::f() }",
    ];
    for b in reaches_a {
        let modules = crate_from_sources(&planted_sources("use crate::b::g;", b));
        assert_eq!(circles(&edges(&modules)).len(), 1, "not seen: {b}");
    }
    let modules = crate_from_sources(&planted_sources("use crate::b::g;", chain));
    assert!(circles(&edges(&modules)).is_empty(), "a chain is no circle");
    // A `super::` in an inline module of `b` reaches `b`, not the crate root.
    let inline = "pub fn g() {}\nmod inner { pub fn h() { super::g() } }";
    let modules = crate_from_sources(&planted_sources(chain, inline));
    assert!(edges(&modules).is_empty(), "{:?}", edges(&modules));
}

#[test]
fn a_modules_children_are_layered_as_a_crates_top_level_is() {
    let sources = vec![
        (vec![], "lib.rs".into(), "mod n; mod m;".into()),
        (
            vec!["m".into()],
            "m.rs".into(),
            "pub fn h() { crate::n::a::f() }".into(),
        ),
        (
            vec!["n".into()],
            "n/mod.rs".into(),
            "mod a; mod b; pub struct Shared;".into(),
        ),
        (
            vec!["n".into(), "a".into()],
            "n/a.rs".into(),
            "pub fn f() {}".into(),
        ),
        (
            vec!["n".into(), "b".into()],
            "n/b.rs".into(),
            "use super::a::f;\npub fn g(_: super::Shared) { f() }".into(),
        ),
    ];
    let modules = crate_from_sources(&sources);
    let (inner, uses) = children(&modules, &["n".to_string()]);
    assert_eq!(inner, ["a", "b"].map(String::from).into());
    // `b` using its parent's `Shared` is no use between siblings; `m` is no child of `n`.
    assert_eq!(uses, [("b".to_string(), "a".to_string())].into());
    let (tops, uses) = top_level(&modules);
    assert_eq!(tops, ["m", "n"].map(String::from).into());
    assert_eq!(uses, [("m".to_string(), "n".to_string())].into());
    let text = "## Layers\n\n```text\nc\n  m\n  n\nc::n\n  b\n  a\n```\n";
    let layers = diagram(text);
    assert!(layer_problems("c::n", &inner, &uses_of(&modules, "n"), &layers["c::n"]).is_empty());
    let upside = diagram(&text.replace("  b\n  a\n", "  a\n  b\n"));
    let found = layer_problems("c::n", &inner, &uses_of(&modules, "n"), &upside["c::n"]);
    assert!(found.iter().any(|p| p.contains("b uses a")), "{found:?}");
}

/// The uses between the children of `parent`.
fn uses_of(modules: &CrateModules, parent: &str) -> BTreeSet<(String, String)> {
    children(modules, &[parent.to_string()]).1
}

#[test]
fn the_collector_finds_the_uses_of_the_real_crates() {
    // A resolver broken so that it sees nothing would pass every check above on the real
    // code; the real crates' top levels use each other dozens of times.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (dir, uses_min) in [
        ("umi-core/src", 15),
        ("umi-dst/src", 60),
        ("umi-sweep/src", 60),
    ] {
        let (_, uses) = top_level(&read_crate(&root, dir));
        assert!(
            uses.len() >= uses_min,
            "{dir}: only {} uses found",
            uses.len()
        );
    }
}

#[test]
fn the_check_finds_a_planted_circle_and_passes_a_chain() {
    let mut modules = CrateModules::default();
    for name in ["a", "b", "c"] {
        modules.modules.insert(vec![name.to_string()]);
    }
    let use_of = |target: &[&str]| {
        let path = target.iter().map(|s| s.to_string()).collect();
        vec![(path, "planted.rs:1".to_string())]
    };
    modules
        .uses
        .insert(vec!["a".into()], use_of(&["b", "Thing"]));
    modules
        .uses
        .insert(vec!["b".into()], use_of(&["c", "Other"]));
    assert!(circles(&edges(&modules)).is_empty(), "a → b → c is a chain");

    modules
        .uses
        .insert(vec!["c".into()], use_of(&["a", "First"]));
    let found = circles(&edges(&modules));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("a → b") && found[0].contains("c → a"),
        "{found:?}"
    );
}

#[test]
fn a_reexport_is_followed_to_the_module_that_defines_the_name() {
    let mut modules = CrateModules::default();
    for path in [vec!["llm"], vec!["llm", "message"], vec!["memory"]] {
        modules
            .modules
            .insert(path.iter().map(|s| s.to_string()).collect());
    }
    let reexport = BTreeMap::from([(
        "Message".to_string(),
        vec!["llm".into(), "message".into(), "Message".into()],
    )]);
    modules.imports.insert(vec!["llm".into()], reexport);
    let path = vec!["llm".to_string(), "Message".to_string()];
    assert_eq!(
        module_of(&modules, &path),
        vec!["llm".to_string(), "message".to_string()]
    );
}

/// A crate's name as the diagram writes it: its directory (`umi-core`).
fn crate_name(dir: &str) -> &str {
    dir.split('/').next().unwrap_or(dir)
}

/// The crate's top-level modules and the uses between them.
fn top_level(modules: &CrateModules) -> (BTreeSet<String>, BTreeSet<(String, String)>) {
    children(modules, &[])
}

/// The children of `parent` (the crate root when empty) and the uses between them.
fn children(
    modules: &CrateModules,
    parent: &[String],
) -> (BTreeSet<String>, BTreeSet<(String, String)>) {
    let tops = modules
        .modules
        .iter()
        .filter(|module| module.len() == parent.len() + 1 && module.starts_with(parent))
        .map(|module| module[parent.len()].clone())
        .collect();
    let uses = edges(modules)
        .into_keys()
        .filter(|(from_parent, _, _)| from_parent == parent)
        .map(|(_, from, to)| (from, to))
        .collect();
    (tops, uses)
}

/// The diagram in ARCHITECTURE.md: per crate, its layers, top first. The section's first
/// `text` block holds it: a crate's name on a line of its own, then a line per layer,
/// indented, its modules separated by spaces.
fn diagram(text: &str) -> BTreeMap<String, Vec<Vec<String>>> {
    let section = text.split_once(LAYERS_HEADING).map_or("", |(_, rest)| rest);
    let block = section
        .split_once("```text\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map_or("", |(block, _)| block);
    let mut drawn: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in block.lines().filter(|line| !line.trim().is_empty()) {
        if !line.starts_with(' ') {
            let name = line
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
            drawn.entry(name.clone()).or_default();
            current = Some(name);
        } else if let Some(name) = &current {
            let layer = line.split_whitespace().map(str::to_string).collect();
            drawn.entry(name.clone()).or_default().push(layer);
        }
    }
    drawn
}

/// What is wrong with `layers` (top first) as a drawing of `tops` and `uses`.
fn layer_problems(
    name: &str,
    tops: &BTreeSet<String>,
    uses: &BTreeSet<(String, String)>,
    layers: &[Vec<String>],
) -> Vec<String> {
    let mut line_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for (line, layer) in layers.iter().enumerate() {
        for module in layer {
            if line_of.insert(module, line).is_some() {
                problems.push(format!("  {name}: {module} is drawn twice"));
            }
            if !tops.contains(module) {
                problems.push(format!("  {name}: {module} is drawn but is no module"));
            }
        }
    }
    for module in tops {
        if !line_of.contains_key(module.as_str()) {
            problems.push(format!("  {name}: {module} is not drawn"));
        }
    }
    for (from, to) in uses {
        if let (Some(&above), Some(&below)) = (line_of.get(from.as_str()), line_of.get(to.as_str()))
            && above >= below
        {
            problems.push(format!(
                "  {name}: {from} uses {to} but is not drawn above it"
            ));
        }
    }
    problems
}

/// The layering `uses` allows, top first, each module on the lowest line it can be (its
/// height is the longest chain of uses below it), as the diagram writes it.
fn layering_text(name: &str, tops: &BTreeSet<String>, uses: &BTreeSet<(String, String)>) -> String {
    let mut height: BTreeMap<&str, usize> = tops.iter().map(|m| (m.as_str(), 0)).collect();
    // Longest path by relaxation; a graph without circles settles in `tops.len()` rounds.
    for _ in 0..tops.len() {
        for (from, to) in uses {
            let above = height.get(to.as_str()).copied().unwrap_or(0) + 1;
            if let Some(h) = height.get_mut(from.as_str()) {
                *h = (*h).max(above);
            }
        }
    }
    let top = height.values().copied().max().unwrap_or(0);
    let mut out = format!("{name}\n");
    for level in (0..=top).rev() {
        let layer: Vec<&str> = height
            .iter()
            .filter(|(_, h)| **h == level)
            .map(|(m, _)| *m)
            .collect();
        out.push_str(&format!("  {}\n", layer.join("  ")));
    }
    out
}

/// Parses every file of the crate whose `lib.rs` is in `dir` (binaries under `bin/` are
/// crates of their own and are left out).
fn read_crate(root: &Path, dir: &str) -> CrateModules {
    let source = root.join(dir);
    let mut sources = Vec::new();
    for file in rust_files(&source) {
        let Some(module) = module_of_file(&source, &file) else {
            continue;
        };
        let relative = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{relative}: {error}"));
        sources.push((module, relative, text));
    }
    crate_from_sources(&sources)
}

/// A crate's modules from `(module, file name, text)` for each of its files.
fn crate_from_sources(sources: &[(ModulePath, String, String)]) -> CrateModules {
    let mut modules = CrateModules::default();
    let known: BTreeSet<ModulePath> = sources
        .iter()
        .map(|(module, _, _)| module.clone())
        .collect();
    for (module, file, text) in sources {
        let parsed = syn::parse_file(text).unwrap_or_else(|error| panic!("{file}: {error}"));
        let mut collector = PathCollector {
            known: &known,
            module: module.clone(),
            inline: Vec::new(),
            file: file.clone(),
            paths: Vec::new(),
            imports: BTreeMap::new(),
            test_children: Vec::new(),
        };
        collector.visit_file(&parsed);
        for child in collector.test_children {
            modules
                .test_only
                .insert([module.as_slice(), &[child]].concat());
        }
        modules.modules.insert(module.clone());
        modules.uses.insert(module.clone(), collector.paths);
        modules.imports.insert(module.clone(), collector.imports);
    }
    let test_only = modules.test_only.clone();
    let is_test = |module: &ModulePath| test_only.iter().any(|test| module.starts_with(test));
    modules.modules.retain(|module| !is_test(module));
    modules.uses.retain(|module, _| !is_test(module));
    modules.imports.retain(|module, _| !is_test(module));
    modules
}

/// The module a source file holds: `lib.rs` is the root, `a/mod.rs` and `a.rs` are `a`,
/// `a/b.rs` is `a::b`. `None` for a binary's file.
fn module_of_file(source: &Path, file: &Path) -> Option<ModulePath> {
    let relative: PathBuf = file.strip_prefix(source).ok()?.to_path_buf();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if parts
        .first()
        .is_some_and(|first| first == "bin" || first == "main.rs")
    {
        return None;
    }
    let last = parts.pop()?;
    match last.as_str() {
        "lib.rs" | "mod.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_string()),
    }
    Some(parts)
}

/// Every edge between two children of one parent, from each module's uses.
fn edges(modules: &CrateModules) -> Edges {
    let mut edges = Edges::new();
    for (from, uses) in &modules.uses {
        for (path, place) in uses {
            let to = module_of(modules, path);
            let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            // A module and its ancestors or descendants: not an edge (see the header).
            if shared == from.len() || shared == to.len() {
                continue;
            }
            let key = (
                from[..shared].to_vec(),
                from[shared].clone(),
                to[shared].clone(),
            );
            edges.entry(key).or_insert_with(|| place.clone());
        }
    }
    edges
}

/// The deepest module `path` reaches, following re-exports.
fn module_of(modules: &CrateModules, path: &[String]) -> ModulePath {
    let mut path = path.to_vec();
    for _ in 0..REEXPORT_HOPS_MAX {
        let depth = (0..=path.len())
            .rev()
            .find(|&depth| modules.modules.contains(&path[..depth]))
            .unwrap_or(0);
        let module = path[..depth].to_vec();
        let followed = path.get(depth).and_then(|name| {
            modules
                .imports
                .get(&module)
                .and_then(|imports| imports.get(name))
        });
        match followed {
            // A name imported from where the path already is (`use super::X` in an
            // inline module of the file that defines `X`) leads nowhere new.
            Some(target) if !path.starts_with(target) => {
                let mut next = target.clone();
                next.extend(path[depth + 1..].iter().cloned());
                path = next;
            }
            _ => return module,
        }
    }
    panic!(
        "re-exports of {} go round more than {REEXPORT_HOPS_MAX} times",
        path.join("::")
    )
}

/// Each circle among the children of one parent, as `parent: a → b (file:line), …`.
fn circles(edges: &Edges) -> Vec<String> {
    let mut by_parent: BTreeMap<&ModulePath, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (parent, from, to) in edges.keys() {
        by_parent
            .entry(parent)
            .or_default()
            .entry(from)
            .or_default()
            .insert(to);
    }
    let mut found = Vec::new();
    for (parent, graph) in by_parent {
        for component in strongly_connected(&graph) {
            let mut described = Vec::new();
            for ((edge_parent, from, to), place) in edges {
                if edge_parent == parent
                    && component.contains(from.as_str())
                    && component.contains(to.as_str())
                {
                    described.push(format!("{from} → {to} ({place})"));
                }
            }
            let name = if parent.is_empty() {
                "crate".to_string()
            } else {
                parent.join("::")
            };
            found.push(format!("{name}: {}", described.join(", ")));
        }
    }
    found
}

/// The strongly connected sets of two or more nodes of `graph` (a node's reach is
/// computed by search; the graphs are a few dozen nodes, so no Tarjan is needed).
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<BTreeSet<&'a str>> {
    let reach = |start: &'a str| {
        let mut seen = BTreeSet::new();
        let mut pending = vec![start];
        while let Some(node) = pending.pop() {
            for &next in graph.get(node).into_iter().flatten() {
                if seen.insert(next) {
                    pending.push(next);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&str, BTreeSet<&str>> =
        graph.keys().map(|&node| (node, reach(node))).collect();
    let mut components: Vec<BTreeSet<&str>> = Vec::new();
    for (&node, reached) in &reaches {
        if !reached.contains(node) || components.iter().any(|c| c.contains(node)) {
            continue;
        }
        let component: BTreeSet<&str> = reached
            .iter()
            .copied()
            .filter(|other| reaches.get(other).is_some_and(|back| back.contains(node)))
            .collect();
        components.push(component);
    }
    components
}

/// Collects the paths one file's non-test code names, made absolute.
struct PathCollector<'a> {
    /// Every module of the crate (to tell a child module's name from another crate's).
    known: &'a BTreeSet<ModulePath>,
    /// The file's module.
    module: ModulePath,
    /// The inline modules (`mod x { .. }`) being visited, outermost first: `super::` and
    /// `self::` inside one are relative to it, not to the file's module.
    inline: Vec<String>,
    file: String,
    paths: Vec<(Vec<String>, String)>,
    /// Names `use` items bring in, to their absolute paths.
    imports: BTreeMap<String, Vec<String>>,
    /// Child modules declared `#[cfg(test)] mod x;` in this file.
    test_children: Vec<String>,
}

impl PathCollector<'_> {
    /// `segments` from this module, made absolute; `None` for another crate's path or a
    /// name this module defines.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let here = [self.module.as_slice(), &self.inline].concat();
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some([here.as_slice(), rest].concat()),
            "super" => {
                let mut base = here.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                Some([base.as_slice(), rest].concat())
            }
            name => match self.imports.get(name) {
                Some(target) => Some([target.as_slice(), rest].concat()),
                // A child module's name (`mod x;` then `x::Y`); anything else is another
                // crate's path, or an item of this module, and no edge.
                None => {
                    let child = [here.as_slice(), &segments[..1]].concat();
                    self.known
                        .contains(&child)
                        .then(|| [here.as_slice(), segments].concat())
                }
            },
        }
    }

    fn record(&mut self, segments: &[String], span: proc_macro2::Span) {
        if let Some(path) = self.absolute(segments) {
            let place = format!("{}:{}", self.file, span.start().line);
            self.paths.push((path, place));
        }
    }

    /// Records each path a `use` tree names and the names it brings in.
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => self.use_name(prefix, &name.ident, &name.ident),
            syn::UseTree::Rename(rename) => self.use_name(prefix, &rename.ident, &rename.rename),
            syn::UseTree::Glob(glob) => {
                let span = glob.star_token.spans[0];
                let prefix = prefix.clone();
                self.record(&prefix, span);
            }
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    /// Records every `a::b(::c)*` in a macro's tokens (`format!("{}", super::b::f())`,
    /// `json!`, `assert!`): a macro's arguments need not parse as Rust, so its tokens are
    /// scanned, and groups inside them too.
    fn macro_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let mut segments: Vec<String> = Vec::new();
        let mut span = proc_macro2::Span::call_site();
        let mut colons = 0;
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Ident(ident) if segments.is_empty() || colons == 2 => {
                    if segments.is_empty() {
                        span = ident.span();
                    }
                    segments.push(ident.to_string());
                    colons = 0;
                    continue;
                }
                proc_macro2::TokenTree::Punct(punct)
                    if punct.as_char() == ':' && !segments.is_empty() && colons < 2 =>
                {
                    colons += 1;
                    continue;
                }
                proc_macro2::TokenTree::Group(group) => {
                    self.flush_macro_path(&mut segments, span);
                    self.macro_tokens(group.stream());
                }
                proc_macro2::TokenTree::Ident(ident) => {
                    self.flush_macro_path(&mut segments, span);
                    span = ident.span();
                    segments.push(ident.to_string());
                }
                _ => self.flush_macro_path(&mut segments, span),
            }
            colons = 0;
        }
        self.flush_macro_path(&mut segments, span);
    }

    fn flush_macro_path(&mut self, segments: &mut Vec<String>, span: proc_macro2::Span) {
        if segments.len() > 1 {
            let path = std::mem::take(segments);
            self.record(&path, span);
        }
        segments.clear();
    }

    fn use_name(&mut self, prefix: &[String], ident: &syn::Ident, alias: &syn::Ident) {
        let mut segments = prefix.to_vec();
        if ident != "self" {
            segments.push(ident.to_string());
        }
        let Some(absolute) = self.absolute(&segments) else {
            return;
        };
        let local = if alias == "self" {
            segments.last().cloned().unwrap_or_default()
        } else {
            alias.to_string()
        };
        self.record(&segments, ident.span());
        self.imports.insert(local, absolute);
    }
}

impl<'ast> Visit<'ast> for PathCollector<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_test_only(&module.attrs) {
            let inline = module.content.is_some();
            // An inline module has its own names: its `use`s neither leak out nor
            // count as the file's re-exports.
            let outer = inline.then(|| {
                self.inline.push(module.ident.to_string());
                std::mem::take(&mut self.imports)
            });
            syn::visit::visit_item_mod(self, module);
            if let Some(outer) = outer {
                self.inline.pop();
                self.imports = outer;
            }
        } else if module.content.is_none() {
            self.test_children.push(module.ident.to_string());
        }
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        if !is_test_only(&function.attrs) {
            syn::visit::visit_item_fn(self, function);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if !is_test_only(&item.attrs) {
            syn::visit::visit_item_impl(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if is_test_only(&item.attrs) {
            return;
        }
        let mut prefix = Vec::new();
        if item.leading_colon.is_none() {
            self.use_tree(&mut prefix, &item.tree);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.macro_tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.record(&segments, syn::spanned::Spanned::span(path));
        }
        syn::visit::visit_path(self, path);
    }
}
