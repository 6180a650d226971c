//! The house's tidy check, in the manner of TigerBeetle's `tidy.zig`: no library function
//! of umi-core, umi-dst, umi-dst-macros or umi-sweep, and no function of the scenarios
//! (`scenarios/src`, the code users copy), is longer than [`FUNCTION_LINES_MAX`] lines,
//! except those on [`LONG_FUNCTIONS_ALLOWED`], each with the length it may not exceed.
//!
//! The allow-list only shrinks: a listed function that grew fails, and so does one that
//! is now short enough (take it off the list), or one that no longer exists. Files are
//! parsed with syn (no line heuristics); a function's length is the lines from its
//! signature to its closing brace. Test code (`#[cfg(test)]` modules, `tests/`,
//! `benches/`) is not library code and is not counted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The longest a library function may be, in lines (TIGER_STYLE's hard limit).
const FUNCTION_LINES_MAX: usize = 70;

/// The source trees of the library crates, and the scenarios' (which users copy).
const LIBRARY_SOURCE_DIRS: [&str; 5] = [
    "umi-core/src",
    "umi-dst/src",
    "umi-dst-macros/src",
    "umi-sweep/src",
    "scenarios/src",
];

/// Functions allowed over the limit, `path::function` (the function's name after its
/// file, `Type::method` for a method), with the lines each may have at most. A function
/// split along its steps reads better than an entry here, and the list is empty: its
/// last entry, `TraceKind`'s `Display` (a table, one arm per event), was split by
/// grouping the events into one enum per concern, each with its own exhaustive
/// `Display`, never by a catch-all arm (`_ =>`, which the `wildcard_arms` check refuses).
/// The mechanism stays, with its self-test, for a table that cannot be split.
const LONG_FUNCTIONS_ALLOWED: &[(&str, usize)] = &[];

/// Files the walk may visit at most (a guard against a symlink loop).
const SOURCE_FILES_MAX: usize = 5_000;

/// A function's name as the allow-list spells it, and its length in lines.
type Lengths = BTreeMap<String, usize>;

#[test]
fn library_functions_stay_within_the_line_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut lengths = Lengths::new();
    for dir in LIBRARY_SOURCE_DIRS {
        for file in rust_files(&root.join(dir)) {
            let relative = file.strip_prefix(&root).unwrap_or(&file);
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|error| panic!("{}: {error}", relative.display()));
            let parsed = syn::parse_file(&text)
                .unwrap_or_else(|error| panic!("{}: {error}", relative.display()));
            let mut visitor = FunctionLengths {
                file: relative.display().to_string(),
                owner: None,
                lengths: &mut lengths,
            };
            visitor.visit_file(&parsed);
        }
    }
    let problems = check(&lengths, LONG_FUNCTIONS_ALLOWED);
    assert!(
        problems.is_empty(),
        "library functions over {FUNCTION_LINES_MAX} lines (split them along their steps; \
         TIGER_STYLE):\n{}",
        problems.join("\n")
    );
}

/// What is wrong with `lengths` against `allowed`: functions too long and not listed,
/// listed ones that grew, and listed ones that are short enough or gone.
fn check(lengths: &Lengths, allowed: &[(&str, usize)]) -> Vec<String> {
    let allowed: BTreeMap<&str, usize> = allowed.iter().copied().collect();
    let mut problems = Vec::new();
    for (name, &lines) in lengths {
        match allowed.get(name.as_str()) {
            None if lines > FUNCTION_LINES_MAX => {
                problems.push(format!("  {name}: {lines} lines"));
            }
            Some(&max) if lines > max => {
                problems.push(format!(
                    "  {name}: {lines} lines, grown past its allowed {max}"
                ));
            }
            Some(_) if lines <= FUNCTION_LINES_MAX => problems.push(format!(
                "  {name}: {lines} lines, within the limit now: take it off the allow-list"
            )),
            _ => {}
        }
    }
    for name in allowed.keys() {
        if !lengths.contains_key(*name) {
            problems.push(format!(
                "  {name}: listed but not found: take it off the allow-list"
            ));
        }
    }
    problems
}

/// Every `.rs` file under `dir`, sorted.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut pending = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(dir) = pending.pop() {
        let entries =
            std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
        for entry in entries {
            let path = entry.unwrap_or_else(|error| panic!("{error}")).path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
            assert!(
                files.len() + pending.len() <= SOURCE_FILES_MAX,
                "more than {SOURCE_FILES_MAX} source files under {}",
                dir.display()
            );
        }
    }
    files.sort();
    files
}

/// Collects the length of every function outside test modules.
struct FunctionLengths<'a> {
    /// The file, relative to the workspace.
    file: String,
    /// The type of the `impl` or trait being visited.
    owner: Option<String>,
    lengths: &'a mut Lengths,
}

impl FunctionLengths<'_> {
    fn record(&mut self, name: &syn::Ident, span: proc_macro2::Span) {
        let lines = span.end().line - span.start().line + 1;
        let name = match &self.owner {
            Some(owner) => format!("{}::{owner}::{name}", self.file),
            None => format!("{}::{name}", self.file),
        };
        // Two functions of one name in one file (in different `cfg`s, or nested
        // modules): the longer one counts.
        let entry = self.lengths.entry(name).or_insert(0);
        *entry = (*entry).max(lines);
    }
}

/// The name of the type an `impl` block is for (`Foo` of `impl Trait for a::Foo<T>`),
/// `None` for a type that is not a path (a reference, a tuple).
pub(crate) fn impl_owner(item: &syn::ItemImpl) -> Option<String> {
    match &*item.self_ty {
        syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// Whether `attrs` hold `#[cfg(test)]`.
pub(crate) fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

impl<'ast> Visit<'ast> for FunctionLengths<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_test_only(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        if is_test_only(&function.attrs) {
            return;
        }
        self.record(&function.sig.ident, syn::spanned::Spanned::span(function));
        syn::visit::visit_item_fn(self, function);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test_only(&item.attrs) {
            return;
        }
        let outer = std::mem::replace(&mut self.owner, impl_owner(item));
        syn::visit::visit_item_impl(self, item);
        self.owner = outer;
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        let outer = self.owner.replace(item.ident.to_string());
        syn::visit::visit_item_trait(self, item);
        self.owner = outer;
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        if is_test_only(&function.attrs) {
            return;
        }
        self.record(&function.sig.ident, syn::spanned::Spanned::span(function));
        syn::visit::visit_impl_item_fn(self, function);
    }

    fn visit_trait_item_fn(&mut self, function: &'ast syn::TraitItemFn) {
        if function.default.is_some() {
            self.record(&function.sig.ident, syn::spanned::Spanned::span(function));
        }
        syn::visit::visit_trait_item_fn(self, function);
    }
}

/// The check itself, on made-up lengths: each way the allow-list can be wrong.
#[test]
fn the_allow_list_only_shrinks() {
    let lengths: Lengths = [("a.rs::long", 90), ("a.rs::fine", 70), ("a.rs::listed", 80)]
        .into_iter()
        .map(|(name, lines)| (name.to_owned(), lines))
        .collect();
    assert_eq!(
        check(&lengths, &[("a.rs::listed", 80)]),
        ["  a.rs::long: 90 lines"]
    );
    let problems = check(
        &lengths,
        &[
            ("a.rs::long", 90),
            ("a.rs::listed", 79),
            ("a.rs::fine", 75),
            ("a.rs::gone", 99),
        ],
    );
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("a.rs::fine: 70 lines, within the limit"));
    assert!(problems[1].contains("a.rs::listed: 80 lines, grown past its allowed 79"));
    assert!(problems[2].contains("a.rs::gone: listed but not found"));
}
