//! umi-dst's public surface, held against a golden file: every public module (a `pub mod`
//! whose parents are all public, with its `#[cfg]` and `#[doc(hidden)]`), every `pub use`
//! of a public module (the name it exports and the path it names) and every exported
//! macro, as [`GOLDEN`] lists them. A module made public or private, a re-export added or
//! removed, fails here until the golden file is edited to match: the public surface
//! changes on purpose, in review, never as a side effect (`umi-dst/src/lib.rs` says what
//! is public and why).
//!
//! The second check holds the documents to the same surface: a path `umi_dst::a::b` named
//! in the Markdown documents or in the workspace's sources (comments included) must not
//! pass through a private module (`umi_dst::clock::SimClock` is refused,
//! `umi_dst::SimClock` passes).
//!
//! Sources are parsed with syn (no line heuristics); `#[cfg(test)]` modules are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The golden list, relative to the repository's root.
const GOLDEN: &str = "scenarios/tests/public_surface.txt";

/// umi-dst's source tree, relative to the repository's root.
const SOURCE_DIR: &str = "umi-dst/src";

/// The workspace's source trees whose text may name `umi_dst::` paths.
const SOURCE_TREES: [&str; 7] = [
    "umi-core",
    "umi-dst",
    "umi-dst-macros",
    "umi-sweep",
    "scenarios",
    "examples",
    "python",
];

/// This file, whose self-tests name private paths on purpose.
const SELF: &str = "scenarios/tests/public_surface.rs";

/// Documents beyond [`super::docs::CITING_DOCS`] whose paths are checked.
const MORE_DOCS: [&str; 2] = ["python/README.md", "ts/README.md"];

/// Modules the walk may visit at most (a guard against a cycle of `#[path]`s).
const MODULES_MAX: usize = 2_000;

/// Files the tree walk may visit at most (a guard against a symlink loop).
const FILES_MAX: usize = 20_000;

/// What the walk found: the golden lines, and every module (public or not) by path.
#[derive(Debug, Default)]
struct Surface {
    lines: BTreeSet<String>,
    modules: BTreeMap<Vec<String>, bool>,
    root_names: BTreeSet<String>,
}

/// Reads a source file by its path below the source dir (`lib.rs`, `network/mod.rs`).
type Read<'a> = &'a dyn Fn(&str) -> Option<String>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read_real(relative: &str) -> Option<String> {
    std::fs::read_to_string(root().join(SOURCE_DIR).join(relative)).ok()
}

#[test]
fn umi_dsts_public_surface_is_the_golden_one() {
    let found = surface(&read_real);
    let golden = std::fs::read_to_string(root().join(GOLDEN))
        .unwrap_or_else(|error| panic!("{GOLDEN}: {error}"));
    let problems = differences(&found.lines, &golden);
    assert!(
        problems.is_empty(),
        "umi-dst's public surface is not {GOLDEN}'s. If the change is deliberate, edit the \
         golden file (and say why in umi-dst/src/lib.rs); if not, make the item private \
         again:\n{}\n\nThe surface as it is now:\n{}",
        problems.join("\n"),
        found.lines.iter().cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn a_planted_public_module_or_reexport_fails_the_golden_check() {
    let golden = std::fs::read_to_string(root().join(GOLDEN)).expect("golden file");
    let planted = |relative: &str| match relative {
        "lib.rs" => read_real("lib.rs").map(|lib| format!("{lib}\npub mod planted_extra;\n")),
        "planted_extra.rs" => Some("pub struct Extra;".to_owned()),
        other => read_real(other),
    };
    let problems = differences(&surface(&planted).lines, &golden);
    assert_eq!(problems, ["  added:   mod umi_dst::planted_extra"]);

    let reexport = |relative: &str| match relative {
        "network/mod.rs" => read_real(relative).map(|m| format!("{m}\npub use reads::pieces;\n")),
        other => read_real(other),
    };
    let problems = differences(&surface(&reexport).lines, &golden);
    assert_eq!(
        problems,
        ["  added:   use umi_dst::network::pieces = reads::pieces"]
    );

    let privatized = |relative: &str| match relative {
        "lib.rs" => read_real("lib.rs")
            .map(|lib| lib.replace("pub mod failure_class;", "mod failure_class;")),
        other => read_real(other),
    };
    let problems = differences(&surface(&privatized).lines, &golden);
    assert_eq!(problems, ["  removed: mod umi_dst::failure_class"]);
}

#[test]
fn the_walk_sees_modules_reexports_macros_and_their_attributes() {
    let files: BTreeMap<&str, &str> = [
        (
            "lib.rs",
            "pub mod a; mod b; pub(crate) mod c;\n\
             pub use b::{X, Y as Z, deep::*};\n\
             #[cfg(feature = \"f\")] pub mod d;\n\
             #[doc(hidden)] pub mod e { pub use inventory; }\n\
             #[cfg(test)] mod tests;\n\
             #[macro_export] macro_rules! m { () => {} }\n\
             macro_rules! local { () => {} }",
        ),
        (
            "a.rs",
            "pub mod inner; mod hidden; pub(crate) use hidden::W;",
        ),
        ("a/inner.rs", "pub use super::hidden::V;"),
        ("a/hidden/mod.rs", "pub mod under_private; pub use x::Q;"),
        ("a/hidden/under_private.rs", ""),
        ("b/mod.rs", "pub mod deep;"),
        ("b/deep.rs", ""),
        ("c.rs", ""),
        ("d.rs", "pub mod only_with_f;"),
        ("d/only_with_f.rs", ""),
    ]
    .into_iter()
    .collect();
    let read = |relative: &str| files.get(relative).map(|text| (*text).to_owned());
    let found = surface(&read);
    let expected = [
        "macro umi_dst::m",
        "mod umi_dst::a",
        "mod umi_dst::a::inner",
        "mod umi_dst::d #[cfg(feature = \"f\")]",
        "mod umi_dst::d::only_with_f #[cfg(feature = \"f\")]",
        "mod umi_dst::e #[doc(hidden)]",
        "use umi_dst::* = b::deep::*",
        "use umi_dst::X = b::X",
        "use umi_dst::Z = b::Y",
        "use umi_dst::a::inner::V = super::hidden::V",
        "use umi_dst::e::inventory = inventory #[doc(hidden)]",
    ];
    assert_eq!(
        found.lines.iter().map(String::as_str).collect::<Vec<_>>(),
        expected
    );
    let private: Vec<String> = found
        .modules
        .iter()
        .filter(|(_, public)| !**public)
        .map(|(path, _)| path.join("::"))
        .collect();
    assert_eq!(
        private,
        ["a::hidden", "a::hidden::under_private", "b", "b::deep", "c"]
    );
}

#[test]
fn every_umi_dst_path_the_documents_and_sources_name_is_public() {
    let surface = surface(&read_real);
    let root = root();
    let mut files: Vec<PathBuf> = super::docs::CITING_DOCS
        .iter()
        .chain(MORE_DOCS.iter())
        .flat_map(|place| super::docs::markdown_files(&root.join(place)))
        .collect();
    for tree in SOURCE_TREES {
        files.extend(text_files(&root.join(tree)));
    }
    let mut problems = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let name = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        if name == SELF {
            continue;
        }
        for path in private_paths(&text, &surface) {
            problems.push(format!("  {name}: `{path}` goes through a private module"));
        }
    }
    assert!(
        problems.is_empty(),
        "paths that name a private module of umi-dst (name the public path: the root \
         re-export or the public module):\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_path_through_a_private_or_gone_module_is_refused_and_a_public_one_passes() {
    let surface = surface(&read_real);
    let text = "`umi_dst::SimClock`, `umi_dst::network::Profile`, \
                umi_dst::network::profile::WireFormat, umi_dst::prelude::*, \
                `umi_dst::clock::SimClock` and umi_dst::network::reads::ReadPlan; \
                `umi_dst::scenario!` and umi_dst::doubles::HookedStorage, \
                `umi_dst::test`, `umi_dst::ensure!`, `umi_dst::eventually`, \
                `umi_dst::planted::HookedStorage` (moved)";
    assert_eq!(
        private_paths(text, &surface),
        [
            "umi_dst::clock::SimClock",
            "umi_dst::network::reads::ReadPlan",
            "umi_dst::planted::HookedStorage",
        ]
    );
}

/// The paths `umi_dst::a::b..` in `text` that pass through a module the walk found
/// private, or whose first segment is lower case and neither a module nor a name the
/// root exports (a module that moved or went away: `umi_dst::planted`).
fn private_paths(text: &str, surface: &Surface) -> Vec<String> {
    let mut found = Vec::new();
    for (index, _) in text.match_indices("umi_dst::") {
        let preceded = text[..index]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if preceded {
            continue;
        }
        let rest = &text[index + "umi_dst::".len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let segments: Vec<String> = rest[..end]
            .split("::")
            .take_while(|segment| !segment.is_empty())
            .map(str::to_owned)
            .collect();
        let private =
            (1..=segments.len()).any(|len| surface.modules.get(&segments[..len]) == Some(&false));
        let unknown = segments.first().is_some_and(|first| {
            first.starts_with(|c: char| c.is_ascii_lowercase())
                && !surface.modules.contains_key(&segments[..1])
                && !surface.root_names.contains(first)
        });
        if private || unknown {
            found.push(format!("umi_dst::{}", segments.join("::")));
        }
    }
    found
}

/// The lines of `found` missing from `golden` and the golden lines not found.
fn differences(found: &BTreeSet<String>, golden: &str) -> Vec<String> {
    let golden: BTreeSet<String> = golden
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let added = found
        .difference(&golden)
        .map(|line| format!("  added:   {line}"));
    let removed = golden
        .difference(found)
        .map(|line| format!("  removed: {line}"));
    added.chain(removed).collect()
}

/// umi-dst's surface, read through `read` from `lib.rs` on.
fn surface(read: Read<'_>) -> Surface {
    let mut surface = Surface::default();
    let lib = read("lib.rs").expect("lib.rs");
    let parsed = syn::parse_file(&lib).unwrap_or_else(|error| panic!("lib.rs: {error}"));
    let root = Place {
        path: Vec::new(),
        dir: String::new(),
        public: true,
        attributes: Vec::new(),
    };
    walk(&parsed.items, &root, read, &mut surface);
    surface
}

/// Where the walk is: a module's path, the directory its child files are in, whether
/// it is public, and the attributes it inherits (`#[cfg]`, `#[doc(hidden)]`).
struct Place {
    path: Vec<String>,
    dir: String,
    public: bool,
    attributes: Vec<String>,
}

impl Place {
    fn shown(&self, name: &str) -> String {
        let mut path = vec!["umi_dst".to_owned()];
        path.extend(self.path.iter().cloned());
        path.push(name.to_owned());
        path.join("::")
    }

    fn suffix(&self) -> String {
        self.attributes
            .iter()
            .map(|attribute| format!(" {attribute}"))
            .collect()
    }
}

fn walk(items: &[syn::Item], place: &Place, read: Read<'_>, surface: &mut Surface) {
    assert!(
        surface.modules.len() < MODULES_MAX,
        "more than {MODULES_MAX} modules"
    );
    for item in items {
        match item {
            syn::Item::Mod(module) => walk_module(module, place, read, surface),
            syn::Item::Use(used) if place.public && is_pub(&used.vis) => {
                let mut leaves = Vec::new();
                use_leaves(&used.tree, "", &mut leaves);
                let mut suffix = place.suffix();
                for attribute in kept_attributes(&used.attrs) {
                    suffix.push_str(&format!(" {attribute}"));
                }
                for (name, source) in leaves {
                    if place.path.is_empty() {
                        surface.root_names.insert(name.clone());
                    }
                    let line = format!("use {} = {source}{suffix}", place.shown(&name));
                    surface.lines.insert(line);
                }
            }
            syn::Item::Macro(mac) if is_exported(&mac.attrs) => {
                if let Some(name) = &mac.ident {
                    surface.root_names.insert(name.to_string());
                    surface.lines.insert(format!("macro umi_dst::{name}"));
                }
            }
            _ => {}
        }
    }
}

fn walk_module(module: &syn::ItemMod, place: &Place, read: Read<'_>, surface: &mut Surface) {
    if is_test_only(&module.attrs) {
        return;
    }
    let name = module.ident.to_string();
    let public = place.public && is_pub(&module.vis);
    let mut attributes = place.attributes.clone();
    attributes.extend(kept_attributes(&module.attrs));
    let mut path = place.path.clone();
    path.push(name.clone());
    surface.modules.insert(path.clone(), public);
    let child = Place {
        path,
        dir: format!("{}{name}/", place.dir),
        public,
        attributes,
    };
    if public {
        surface
            .lines
            .insert(format!("mod {}{}", place.shown(&name), child.suffix()));
    }
    if let Some((_, items)) = &module.content {
        walk(items, &child, read, surface);
        return;
    }
    let as_file = format!("{}{name}.rs", place.dir);
    let as_dir = format!("{}{name}/mod.rs", place.dir);
    let text = read(&as_file)
        .or_else(|| read(&as_dir))
        .unwrap_or_else(|| panic!("module {name}: neither {as_file} nor {as_dir}"));
    let parsed = syn::parse_file(&text).unwrap_or_else(|error| panic!("{as_file}: {error}"));
    walk(&parsed.items, &child, read, surface);
}

/// Each name a use tree brings in, with the path it names (`*` for a glob).
fn use_leaves(tree: &syn::UseTree, prefix: &str, out: &mut Vec<(String, String)>) {
    match tree {
        syn::UseTree::Path(path) => {
            use_leaves(&path.tree, &format!("{prefix}{}::", path.ident), out);
        }
        syn::UseTree::Name(name) => {
            out.push((name.ident.to_string(), format!("{prefix}{}", name.ident)));
        }
        syn::UseTree::Rename(rename) => out.push((
            rename.rename.to_string(),
            format!("{prefix}{}", rename.ident),
        )),
        syn::UseTree::Glob(_) => out.push(("*".to_owned(), format!("{prefix}*"))),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                use_leaves(tree, prefix, out);
            }
        }
    }
}

fn is_pub(visibility: &syn::Visibility) -> bool {
    matches!(visibility, syn::Visibility::Public(_))
}

fn is_exported(attributes: &[syn::Attribute]) -> bool {
    attributes
        .iter()
        .any(|attribute| attribute.path().is_ident("macro_export"))
}

fn is_test_only(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("cfg")
            && attribute
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// The attributes that change what the surface is: `#[cfg(..)]` and `#[doc(hidden)]`,
/// as written (tokens as proc-macro2 prints them).
fn kept_attributes(attributes: &[syn::Attribute]) -> Vec<String> {
    attributes
        .iter()
        .filter_map(|attribute| match &attribute.meta {
            syn::Meta::List(list) if list.path.is_ident("cfg") => {
                Some(format!("#[cfg({})]", list.tokens))
            }
            syn::Meta::List(list) if list.path.is_ident("doc") => {
                (list.tokens.to_string() == "hidden").then(|| "#[doc(hidden)]".to_owned())
            }
            _ => None,
        })
        .collect()
}

/// The text files below `dir` a path may be named in (`.rs`, `.md`, `.py`, `.toml`),
/// outside `target/` and `node_modules/`.
fn text_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    let mut visited = 0;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            visited += 1;
            assert!(
                visited < FILES_MAX,
                "more than {FILES_MAX} files below {}",
                dir.display()
            );
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "target" && name != "node_modules" && name != ".venv" {
                    pending.push(path);
                }
            } else if path
                .extension()
                .is_some_and(|ext| ext == "rs" || ext == "md" || ext == "py" || ext == "toml")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
