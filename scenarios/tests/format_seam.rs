//! The format seam, checked on the source (docs/adr/0009-one-seam-per-wire-format.md): a
//! wire format is chosen in one registry per crate, and a per-format fact is decided in
//! the format's own module and nowhere else. A `match` on the format or the provider in
//! shared code (with its `_ =>` arm that makes a forgotten format behave as another) is
//! how a new format silently went wrong before; with every per-format fact a required
//! method of the format's own value (`Surface`, `ServerFormat`, `Responder` and
//! `StreamEncoder` in umi-dst, `ClientFormat` in umi-core, none with a default), adding a
//! format is its module per crate plus one registry line each, and the compiler names
//! every fact it must give.
//!
//! Two rules, on library code (test code, `#[cfg(test)]` items and `tests.rs` files, may
//! do as it likes):
//! - a format's variant (`WireFormat::X`, `ProviderKind::X`) is named only in the
//!   registry files, in code and inside macros (`matches!`, `assert!`) alike;
//! - a provider's variant (`Profile::X`, or `Self::X` in an `impl Profile`) is never
//!   *decided on* outside the profile table, the registries and the module of the format
//!   it speaks: no pattern names it (a `match` arm, `if let`, `matches!`), no `==`/`!=`
//!   compares with it. Naming a provider as a value (a constructor's default, a
//!   scenario's choice of providers to sweep) is a choice, not a fact, and passes. Which
//!   module speaks which provider is read from the source itself: `Profile::format` in
//!   the profile table and `server_format` in the registry.
//!
//! Files are parsed with syn. A macro whose arguments are not expressions (`json!`,
//! `vec![x; n]`) is scanned token by token for the format enums' variants only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::tidy::{is_test_only, rust_files};

/// The enums that choose a format, per crate: named only in the registries.
const FORMAT_ENUMS: [&str; 2] = ["WireFormat", "ProviderKind"];

/// The enum of providers: decided on only in its table, the registries and the module
/// of the format each provider speaks.
const PROFILE_ENUM: &str = "Profile";

/// The profile table: where `Profile` and `WireFormat` are defined and a profile's
/// format is mapped (`Profile::format`).
const PROFILE_TABLE: &str = "umi-dst/src/network/profile.rs";

/// The server side's registry: where each `WireFormat` is mapped to its module
/// (`server_format`).
const SERVER_REGISTRY: &str = "umi-dst/src/network/registry.rs";

/// The only files that may name a format's variant: the profile table and the
/// registries (`network/registry.rs` above the formats, `llm/registry.rs` where
/// `ProviderKind` is defined).
const REGISTRY_FILES: [&str; 3] = [
    PROFILE_TABLE,
    SERVER_REGISTRY,
    "umi-core/src/llm/registry.rs",
];

/// Where umi-dst's format modules live (`network/<module>/`, as `server_format` names
/// them).
const SERVER_FORMATS_DIR: &str = "umi-dst/src/network/";

/// The library source trees (and the code users copy).
const SOURCE_DIRS: [&str; 4] = [
    "umi-core/src",
    "umi-dst/src",
    "umi-sweep/src",
    "scenarios/src",
];

#[test]
fn no_library_code_outside_the_registries_names_a_format_or_decides_on_a_provider() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let owners = ProfileOwners::read(&root);
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
            found.extend(leaks(&name, &text, &owners.of_file(&name)));
        }
    }
    assert!(
        found.is_empty(),
        "a format's variant named, or a provider's decided on, outside its registry or its \
         format's module (give the fact to the format's own value: `Surface`/`ServerFormat`/\
         `Responder` in umi-dst, `ClientFormat` in umi-core; a provider's, to its format's \
         method taking the profile):\n{}",
        found.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The check reads which module speaks which provider from the source: if that reading
/// broke (a renamed function, a moved registry), every module would own nothing and the
/// chat module's own decisions would fail the check, or worse, a parse that found
/// nothing would excuse nothing. So: every format maps to a module that exists, and
/// every provider to a format.
#[test]
fn the_check_reads_which_module_speaks_each_provider() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let owners = ProfileOwners::read(&root);
    assert!(owners.modules.len() >= 5, "{:?}", owners.modules);
    for module in owners.modules.values() {
        let dir = root.join(SERVER_FORMATS_DIR).join(module);
        assert!(dir.is_dir(), "{} is not a directory", dir.display());
    }
    let chat = owners.of_file("umi-dst/src/network/chat/surface.rs");
    assert!(
        chat.contains("AzureOpenAi") && chat.contains("Vllm"),
        "{chat:?}"
    );
    assert!(!chat.contains("Ollama"), "{chat:?}");
    assert_eq!(
        owners.of_file("umi-dst/src/network/ollama/mod.rs"),
        BTreeSet::from(["Ollama".to_owned()])
    );
    assert!(owners.of_file("umi-dst/src/network/admit.rs").is_empty());
}

#[test]
fn the_check_sees_a_planted_match() {
    let planted = "fn pick(f: WireFormat) -> u8 { match f { WireFormat::Ollama => 1, _ => 0 } }";
    assert_eq!(shared(planted), ["  planted.rs:1: WireFormat::Ollama"]);
}

#[test]
fn the_check_sees_a_format_inside_a_macro() {
    let planted = "fn pick(f: WireFormat) -> bool {\n matches!(f, WireFormat::Gemini)\n}";
    assert_eq!(shared(planted), ["  planted.rs:2: WireFormat::Gemini"]);
    let planted = "fn pick(f: ProviderKind) { assert!(f != ProviderKind::Ollama, \"no\"); }";
    assert_eq!(shared(planted), ["  planted.rs:1: ProviderKind::Ollama"]);
    // A macro whose arguments are not expressions is scanned token by token.
    let planted = "fn pick() -> Vec<WireFormat> { vec![WireFormat::Gemini; 2] }";
    assert_eq!(shared(planted), ["  planted.rs:1: WireFormat::Gemini"]);
}

#[test]
fn the_check_sees_a_provider_decided_on_in_shared_code() {
    for (planted, leak) in [
        // `matches!`, as the profile table's `streams_reasoning` did.
        (
            "fn f(p: Profile) -> bool { matches!(p, Profile::Ollama | Profile::Gemini) }",
            vec!["Profile::Gemini", "Profile::Ollama"],
        ),
        // A comparison, as admit's model check did.
        (
            "fn f(p: Profile) -> bool { p != Profile::Tgi }",
            vec!["Profile::Tgi"],
        ),
        (
            "fn f(p: Profile) -> bool { &Profile::Tgi == &p }",
            vec!["Profile::Tgi"],
        ),
        // A `match` arm, as wire_shapes' base URLs did.
        (
            "fn f(p: Profile) -> u8 { match (p, true) { (Profile::Anthropic, _) => 1, _ => 0 } }",
            vec!["Profile::Anthropic"],
        ),
        (
            "fn f(p: Profile) -> u8 { if let Profile::Glm = p { 1 } else { 0 } }",
            vec!["Profile::Glm"],
        ),
        // `Self::X` in an `impl Profile` outside the table, as the registry's fallback
        // to Ollama's marks was (the registry may; shared code may not).
        (
            "impl Profile { fn f(self) -> u8 { match self { Self::Ollama => 1, _ => 0 } } }",
            vec!["Profile::Ollama"],
        ),
    ] {
        let expected: Vec<String> = leak
            .iter()
            .map(|variant| format!("  planted.rs:1: {variant}"))
            .collect();
        assert_eq!(shared(planted), expected, "{planted}");
    }
}

#[test]
fn naming_a_provider_as_a_value_or_in_test_code_passes() {
    for planted in [
        "const SWEPT: [Profile; 2] = [Profile::OpenAi, Profile::Ollama];",
        "fn f(url: &str) -> Endpoint { Endpoint { profile: Profile::Anthropic, ..e(url) } }",
        "fn f(p: Profile) -> bool { SWEPT.contains(&p) && p.streams_reasoning() }",
        "#[cfg(test)]\nmod tests { fn f(p: Profile) -> bool { p == Profile::Tgi } }",
        "#[cfg(test)]\nfn f(f: WireFormat) -> bool { f == WireFormat::Gemini }",
    ] {
        assert_eq!(shared(planted), Vec::<String>::new(), "{planted}");
    }
}

#[test]
fn a_format_module_decides_on_its_own_providers_only() {
    let chat: BTreeSet<String> = ["OpenAi", "AzureOpenAi", "Vllm"].map(str::to_owned).into();
    let own = "fn f(p: Profile) -> bool { p == Profile::AzureOpenAi }";
    assert!(leaks("planted.rs", own, &chat).is_empty());
    let other = "fn f(p: Profile) -> bool { p == Profile::AzureOpenAi || p == Profile::Ollama }";
    assert_eq!(
        leaks("planted.rs", other, &chat)
            .into_iter()
            .collect::<Vec<_>>(),
        ["  planted.rs:1: Profile::Ollama"]
    );
}

/// The leaks in `text`, a file of shared code (one that owns no provider).
fn shared(text: &str) -> Vec<String> {
    leaks("planted.rs", text, &BTreeSet::new())
        .into_iter()
        .collect()
}

/// The leaks in the file `name` holding `text`, which may decide on the providers `own`
/// (its format's, for a format's module).
fn leaks(name: &str, text: &str, own: &BTreeSet<String>) -> BTreeSet<String> {
    let parsed = syn::parse_file(text).unwrap_or_else(|error| panic!("{name}: {error}"));
    let mut found = BTreeSet::new();
    Leaks {
        file: name,
        own,
        found: &mut found,
        patterns: 0,
        self_enum: None,
    }
    .visit_file(&parsed);
    found
}

/// Which module of umi-dst speaks which providers, read from the profile table
/// (`Profile::format`) and the registry (`server_format`).
struct ProfileOwners {
    /// A format's variant to its module's directory under [`SERVER_FORMATS_DIR`].
    modules: BTreeMap<String, String>,
    /// A profile's variant to its format's variant.
    formats: BTreeMap<String, String>,
}

impl ProfileOwners {
    fn read(root: &Path) -> Self {
        let parse = |name: &str| {
            let text = std::fs::read_to_string(root.join(name))
                .unwrap_or_else(|error| panic!("{name}: {error}"));
            syn::parse_file(&text).unwrap_or_else(|error| panic!("{name}: {error}"))
        };
        let mut modules = BTreeMap::new();
        for (pattern, body) in arms_of(&parse(SERVER_REGISTRY), "server_format") {
            // `WireFormat::Gemini => &super::gemini::GeminiFormat`.
            let module = body.get(body.len().wrapping_sub(2)).cloned();
            if let (Some(format), Some(module)) = (pattern.into_iter().next(), module) {
                modules.insert(format, module);
            }
        }
        let mut formats = BTreeMap::new();
        for (profiles, body) in arms_of(&parse(PROFILE_TABLE), "format") {
            // `Self::OpenAi | Self::AzureOpenAi => WireFormat::OpenAiChat`.
            if let Some(format) = body.last() {
                for profile in profiles {
                    formats.insert(profile, format.clone());
                }
            }
        }
        assert!(
            !modules.is_empty() && !formats.is_empty(),
            "`server_format` in {SERVER_REGISTRY} or `Profile::format` in {PROFILE_TABLE} \
             no longer reads as a `match` of one variant per arm"
        );
        Self { modules, formats }
    }

    /// The providers the file `name` may decide on: those whose format's module it is
    /// in; none for shared code.
    fn of_file(&self, name: &str) -> BTreeSet<String> {
        let Some(below) = name.strip_prefix(SERVER_FORMATS_DIR) else {
            return BTreeSet::new();
        };
        let Some((dir, _)) = below.split_once('/') else {
            return BTreeSet::new();
        };
        self.formats
            .iter()
            .filter(|(_, format)| self.modules.get(*format).is_some_and(|m| m == dir))
            .map(|(profile, _)| profile.clone())
            .collect()
    }
}

/// The arms of the first `match` in the function (or method) `function` of `file`: the
/// last segments of the paths each pattern names, and the segments of the path its body
/// is (through a `&`).
fn arms_of(file: &syn::File, function: &str) -> Vec<(Vec<String>, Vec<String>)> {
    struct Arms<'a> {
        function: &'a str,
        inside: bool,
        arms: Vec<(Vec<String>, Vec<String>)>,
    }
    impl<'ast> Visit<'ast> for Arms<'_> {
        fn visit_signature(&mut self, signature: &'ast syn::Signature) {
            self.inside = signature.ident == self.function;
        }
        fn visit_expr_match(&mut self, expr: &'ast syn::ExprMatch) {
            if !self.inside || !self.arms.is_empty() {
                return;
            }
            for arm in &expr.arms {
                let mut names = PathNames::default();
                names.visit_pat(&arm.pat);
                let mut body = &*arm.body;
                while let syn::Expr::Reference(reference) = body {
                    body = &reference.expr;
                }
                let segments = match body {
                    syn::Expr::Path(path) => segments(&path.path),
                    _ => Vec::new(),
                };
                self.arms.push((names.0, segments));
            }
        }
    }
    let mut arms = Arms {
        function,
        inside: false,
        arms: Vec::new(),
    };
    arms.visit_file(file);
    arms.arms
}

/// The last segments of the paths in a pattern.
#[derive(Default)]
struct PathNames(Vec<String>);

impl<'ast> Visit<'ast> for PathNames {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(last) = path.segments.last() {
            self.0.push(last.ident.to_string());
        }
    }
}

fn segments(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// Whether `name` reads as an enum variant (`OpenAi`, not `ALL` or `from_name`).
fn is_variant(name: &str) -> bool {
    name.starts_with(char::is_uppercase) && name.chars().any(char::is_lowercase)
}

/// Collects the leaks of one file outside test code.
struct Leaks<'a> {
    file: &'a str,
    /// The providers this file may decide on.
    own: &'a BTreeSet<String>,
    found: &'a mut BTreeSet<String>,
    /// How deep the visit is in patterns (a `match` arm's, `matches!`'s).
    patterns: usize,
    /// The enum whose `impl` the visit is in, so `Self::X` reads as its variant.
    self_enum: Option<String>,
}

impl Leaks<'_> {
    /// The enum and variant `path` names, `Self` read as the `impl`'s enum.
    fn variant_of(&self, path: &syn::Path) -> Option<(String, String)> {
        let names = segments(path);
        let [.., owner, last] = names.as_slice() else {
            return None;
        };
        let owner = match (owner.as_str(), &self.self_enum) {
            ("Self", Some(enum_name)) => enum_name.clone(),
            _ => owner.clone(),
        };
        is_variant(last).then(|| (owner, last.clone()))
    }

    fn record(&mut self, span: proc_macro2::Span, owner: &str, variant: &str) {
        let line = span.start().line;
        self.found
            .insert(format!("  {}:{line}: {owner}::{variant}", self.file));
    }

    /// Records `path` if it names a provider this file may not decide on.
    fn decided(&mut self, path: &syn::Path) {
        if let Some((owner, variant)) = self.variant_of(path)
            && owner == PROFILE_ENUM
            && !self.own.contains(&variant)
        {
            self.record(path.span(), &owner, &variant);
        }
    }

    /// A comparison's operand, when it is a path (through parentheses and `&`).
    fn compared(&mut self, mut operand: &syn::Expr) {
        loop {
            match operand {
                syn::Expr::Paren(inner) => operand = &inner.expr,
                syn::Expr::Reference(inner) => operand = &inner.expr,
                syn::Expr::Group(inner) => operand = &inner.expr,
                syn::Expr::Path(path) => return self.decided(&path.path),
                _ => return,
            }
        }
    }

    /// `matches!(expr, pattern)`'s arguments, visited as code.
    fn visit_matches(&mut self, tokens: TokenStream) -> syn::Result<()> {
        let (expr, pattern, guard) = (|input: ParseStream<'_>| {
            let expr: syn::Expr = input.parse()?;
            input.parse::<syn::Token![,]>()?;
            let pattern = syn::Pat::parse_multi_with_leading_vert(input)?;
            let guard = match input.parse::<Option<syn::Token![if]>>()? {
                Some(_) => Some(input.parse::<syn::Expr>()?),
                None => None,
            };
            input.parse::<Option<syn::Token![,]>>()?;
            Ok((expr, pattern, guard))
        })
        .parse2(tokens)?;
        self.visit_expr(&expr);
        self.visit_pat(&pattern);
        if let Some(guard) = &guard {
            self.visit_expr(guard);
        }
        Ok(())
    }

    /// The format enums' variants in `tokens`, for a macro whose arguments are not
    /// expressions.
    fn scan(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (at, tree) in trees.iter().enumerate() {
            match tree {
                TokenTree::Group(group) => self.scan(group.stream()),
                TokenTree::Ident(owner) if FORMAT_ENUMS.contains(&owner.to_string().as_str()) => {
                    if let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(variant)),
                    ) = (trees.get(at + 1), trees.get(at + 2), trees.get(at + 3))
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                        && is_variant(&variant.to_string())
                    {
                        self.record(variant.span(), &owner.to_string(), &variant.to_string());
                    }
                }
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Leaks<'_> {
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

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test_only(&item.attrs) {
            return;
        }
        let outer = self.self_enum.take();
        if let syn::Type::Path(path) = &*item.self_ty
            && let Some(last) = path.path.segments.last()
            && (FORMAT_ENUMS.contains(&last.ident.to_string().as_str())
                || last.ident == PROFILE_ENUM)
        {
            self.self_enum = Some(last.ident.to_string());
        }
        syn::visit::visit_item_impl(self, item);
        self.self_enum = outer;
    }

    fn visit_pat(&mut self, pattern: &'ast syn::Pat) {
        self.patterns += 1;
        syn::visit::visit_pat(self, pattern);
        self.patterns -= 1;
    }

    fn visit_expr_binary(&mut self, expr: &'ast syn::ExprBinary) {
        if matches!(expr.op, syn::BinOp::Eq(_) | syn::BinOp::Ne(_)) {
            self.compared(&expr.left);
            self.compared(&expr.right);
        }
        syn::visit::visit_expr_binary(self, expr);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let tokens = mac.tokens.clone();
        if mac.path.is_ident("matches") && self.visit_matches(tokens.clone()).is_ok() {
            return;
        }
        match Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated.parse2(tokens.clone()) {
            Ok(arguments) => arguments
                .iter()
                .for_each(|argument| self.visit_expr(argument)),
            Err(_) => self.scan(tokens),
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some((owner, variant)) = self.variant_of(path) {
            if FORMAT_ENUMS.contains(&owner.as_str()) {
                self.record(path.span(), &owner, &variant);
            } else if self.patterns > 0 {
                self.decided(path);
            }
        }
        syn::visit::visit_path(self, path);
    }
}
