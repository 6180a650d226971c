//! The format seam, checked on the source (docs/adr/0009-one-seam-per-wire-format.md): a
//! wire format is chosen in one registry per crate, and nowhere else does library code
//! name a format's variant. A `match` on the format in shared code (with its `_ =>` arm
//! that makes a forgotten format behave as another) is how a new format silently went
//! wrong before; with every per-format fact a method of the format's own value, adding a
//! format is its module plus one registry line per crate, and the compiler names every
//! fact it must give (`Surface` and `ServerFormat` in umi-dst, `ClientFormat` in
//! umi-core have no defaults for them).
//!
//! Files are parsed with syn; test code (`#[cfg(test)]` items, `tests.rs` files) may
//! name variants freely.

use std::collections::BTreeSet;
use std::path::Path;

use syn::visit::Visit;

use crate::tidy::{is_test_only, rust_files};

/// The enums that choose a format, per crate.
const FORMAT_ENUMS: [&str; 2] = ["WireFormat", "ProviderKind"];

/// The only files that may name a format's variant: where each enum is defined and
/// mapped (a profile's format), and the registries (`network/registry.rs` above the
/// formats, `llm/registry.rs` where `ProviderKind` is defined).
const REGISTRY_FILES: [&str; 3] = [
    "umi-dst/src/network/profile.rs",
    "umi-dst/src/network/registry.rs",
    "umi-core/src/llm/registry.rs",
];

/// The library source trees (and the code users copy).
const SOURCE_DIRS: [&str; 4] = [
    "umi-core/src",
    "umi-dst/src",
    "umi-sweep/src",
    "scenarios/src",
];

#[test]
fn no_library_code_outside_the_registries_names_a_format() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = BTreeSet::new();
    for dir in SOURCE_DIRS {
        for file in rust_files(&root.join(dir)) {
            let relative = file.strip_prefix(&root).unwrap_or(&file);
            let name = relative.display().to_string();
            if REGISTRY_FILES.contains(&name.as_str()) || name.ends_with("/tests.rs") {
                continue;
            }
            let text =
                std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{name}: {error}"));
            let parsed = syn::parse_file(&text).unwrap_or_else(|error| panic!("{name}: {error}"));
            let mut visitor = VariantNames {
                file: &name,
                found: &mut found,
            };
            visitor.visit_file(&parsed);
        }
    }
    assert!(
        found.is_empty(),
        "a format's variant named outside its registry (give the fact to the format's \
         own value: `Surface`/`ServerFormat` in umi-dst, `ClientFormat` in umi-core):\n{}",
        found.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_check_sees_a_planted_match() {
    let planted = "fn pick(f: WireFormat) -> u8 { match f { WireFormat::Ollama => 1, _ => 0 } }";
    let parsed = syn::parse_file(planted).expect("the planted code parses");
    let mut found = BTreeSet::new();
    VariantNames {
        file: "planted.rs",
        found: &mut found,
    }
    .visit_file(&parsed);
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        ["  planted.rs:1: WireFormat::Ollama"]
    );
}

/// Collects `Enum::Variant` paths of the format enums outside test code.
struct VariantNames<'a> {
    file: &'a str,
    found: &'a mut BTreeSet<String>,
}

impl<'ast> Visit<'ast> for VariantNames<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_test_only(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        if !is_test_only(&function.attrs) {
            syn::visit::visit_item_fn(self, function);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if let [.., owner, last] = segments.as_slice()
            && FORMAT_ENUMS.contains(&owner.as_str())
            && last.chars().any(char::is_lowercase)
            && last.starts_with(char::is_uppercase)
        {
            let line = syn::spanned::Spanned::span(path).start().line;
            self.found
                .insert(format!("  {}:{line}: {owner}::{last}", self.file));
        }
        syn::visit::visit_path(self, path);
    }
}
