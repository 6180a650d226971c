//! Types without holes: no `match` in library code ends an enum of the workspace's own
//! with a catch-all arm (`_ =>`, or a plain binding such as `other =>`). A catch-all
//! decides, for every variant added later, what the code does with it, and nobody is
//! asked: `TraceKind`'s `Display` printed `""` for a forgotten variant, and the `""` was
//! hashed into every trace. Listed variants make a new one a compile error at each place
//! that must decide about it.
//!
//! Why a tidy check and not clippy's `wildcard_enum_match_arm`: the lint has the types,
//! but it fires on every foreign enum as well (35 `serde_json::Value`, `toml::Value` and
//! std matches here, where listing `Value`'s six variants says nothing), it cannot be
//! told which crates are "ours", and for a `#[non_exhaustive]` enum of another workspace
//! crate (`LlmError`, `FinishReason`) it asks for the variants *and* a `_`. This check
//! knows the workspace's enums by name (every `enum` the library sources declare) and
//! reads the arms' paths (`Enum::Variant`, `Self::Variant` in an `impl` of the enum),
//! through `|`, `&`, parentheses and `name @ pattern`. It is syntactic: a variant
//! imported bare (`use Enum::*`) is not seen; the house does not import variants bare.
//!
//! A question about one variant (`is it a `SimStart`, and its epoch?`) is not a decision
//! over the variants: it is written `let … else` or `if let`, which this check leaves
//! alone; a `match` is for deciding about every variant, and lists them.
//!
//! The allow-list holds the catch-alls that remain, per file and enum, and only shrinks:
//! a new one fails, and so does a listed count that is now too high. Test code
//! (`#[cfg(test)]` items, `tests/`) may keep its catch-alls: a test's `_ => panic!` is an
//! assertion that fails loudly, not a decision made silently.

use std::collections::BTreeMap;
use std::path::Path;

use syn::visit::Visit;

use crate::tidy::{impl_owner, is_test_only, rust_files};

/// The library source trees (and the code users copy).
const SOURCE_DIRS: [&str; 5] = [
    "umi-core/src",
    "umi-dst/src",
    "umi-dst-macros/src",
    "umi-sweep/src",
    "scenarios/src",
];

/// The catch-all arms left, `file: Enum` with how many; the list only shrinks, and is
/// empty: a new catch-all fails the check (the mechanism stays, with its self-test, for
/// a catch-all that cannot yet be listed away, which must then be argued here).
const CATCH_ALLS_ALLOWED: &[(&str, usize)] = &[];

/// Catch-all arms per `file: Enum`.
type Holes = BTreeMap<String, usize>;

#[test]
fn no_catch_all_arm_on_an_enum_of_the_workspace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut sources = Vec::new();
    for dir in SOURCE_DIRS {
        for file in rust_files(&root.join(dir)) {
            let relative = file.strip_prefix(&root).unwrap_or(&file);
            let name = relative.display().to_string();
            if name.ends_with("/tests.rs") {
                continue; // test code, as `#[cfg(test)] mod tests;` declares it
            }
            let text =
                std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{name}: {error}"));
            let parsed = syn::parse_file(&text).unwrap_or_else(|error| panic!("{name}: {error}"));
            sources.push((name, parsed));
        }
    }
    let enums = own_enums(sources.iter().map(|(name, parsed)| (name.as_str(), parsed)));
    assert!(
        enums.contains_key("TraceKind"),
        "the enum walk found nothing"
    );
    let mut holes = Holes::new();
    for (name, parsed) in &sources {
        find_holes(name, parsed, &enums, &mut holes);
    }
    let problems = check(&holes, CATCH_ALLS_ALLOWED);
    assert!(
        problems.is_empty(),
        "catch-all arms (`_ =>`, `other =>`) on the workspace's own enums: list the variants \
         (a new variant then fails to compile where it must be decided):\n{}",
        problems.join("\n")
    );
}

/// The workspace's enums by name: for a `#[non_exhaustive]` one, the crate (the first
/// directory of its file) outside which the compiler demands a `_` arm.
type Enums = BTreeMap<String, Option<String>>;

/// The crate of a file: its path's first directory (`umi-core`).
fn crate_of(file: &str) -> &str {
    file.split('/').next().unwrap_or(file)
}

/// The tokens of `stream`, groups opened.
fn flatten(stream: proc_macro2::TokenStream) -> Vec<proc_macro2::TokenTree> {
    let mut out = Vec::new();
    for token in stream {
        match token {
            proc_macro2::TokenTree::Group(group) => out.extend(flatten(group.stream())),
            other => out.push(other),
        }
    }
    out
}

/// Every enum declared outside test code, in `(file, parsed)` pairs.
fn own_enums<'a>(files: impl Iterator<Item = (&'a str, &'a syn::File)>) -> Enums {
    struct Walk<'a> {
        file: &'a str,
        enums: Enums,
    }
    impl<'ast> Visit<'ast> for Walk<'_> {
        fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
            if !is_test_only(&module.attrs) {
                syn::visit::visit_item_mod(self, module);
            }
        }
        /// An enum a `macro_rules!` declares (`fault_kinds!` declares `FaultKind`): the
        /// ident after an `enum` token of its body, sealed if `non_exhaustive` came before.
        fn visit_item_macro(&mut self, item: &'ast syn::ItemMacro) {
            let mut sealed = false;
            let mut tokens = flatten(item.mac.tokens.clone()).into_iter().peekable();
            while let Some(token) = tokens.next() {
                match (&token, tokens.peek()) {
                    (proc_macro2::TokenTree::Ident(word), _) if word == "non_exhaustive" => {
                        sealed = true;
                    }
                    (
                        proc_macro2::TokenTree::Ident(word),
                        Some(proc_macro2::TokenTree::Ident(name)),
                    ) if word == "enum" => {
                        let sealed_in = sealed.then(|| crate_of(self.file).to_owned());
                        self.enums.insert(name.to_string(), sealed_in);
                        sealed = false;
                    }
                    _ => {}
                }
            }
        }
        fn visit_item_enum(&mut self, item: &'ast syn::ItemEnum) {
            if !is_test_only(&item.attrs) {
                let sealed_in = item
                    .attrs
                    .iter()
                    .any(|attr| attr.path().is_ident("non_exhaustive"))
                    .then(|| crate_of(self.file).to_owned());
                self.enums.insert(item.ident.to_string(), sealed_in);
            }
        }
    }
    let mut walk = Walk {
        file: "",
        enums: Enums::new(),
    };
    for (file, parsed) in files {
        walk.file = file;
        walk.visit_file(parsed);
    }
    walk.enums
}

/// Adds the catch-all arms of `file`'s library code to `holes`.
fn find_holes(name: &str, file: &syn::File, enums: &Enums, holes: &mut Holes) {
    let mut visitor = CatchAlls {
        file: name,
        enums,
        owner: None,
        holes,
    };
    visitor.visit_file(file);
}

/// Finds `match`es whose arms name an own enum's variants and end in a catch-all.
struct CatchAlls<'a> {
    file: &'a str,
    enums: &'a Enums,
    /// The type of the `impl` being visited (what `Self::` names).
    owner: Option<String>,
    holes: &'a mut Holes,
}

/// The wrappers a match is also read through: `Some(Kind::A) => …, Some(other) => …`
/// leaves the same hole as `Kind::A => …, other => …`. `""` is no wrapper. `Err` is not
/// read through yet: `Err(LlmError::RateLimit { .. }) => retry, Err(other) => …` is how
/// nine places in umi-core and umi-sweep pass every other error on (issue 42 left them
/// for a decision: list them, or keep the pass-on as the one allowed shape).
const WRAPPERS: [&str; 2] = ["", "Some"];

/// The one pattern inside `through(…)` (`Some(p)`), if `pat` is that.
fn inside<'p>(pat: &'p syn::Pat, through: &str) -> Option<&'p syn::Pat> {
    match pat {
        syn::Pat::TupleStruct(item) if item.elems.len() == 1 && item.path.is_ident(through) => {
            item.elems.first()
        }
        _ => None,
    }
}

impl CatchAlls<'_> {
    /// The own enum a pattern names a variant of, if any, read `through` a wrapper.
    fn enum_of_through(&self, pat: &syn::Pat, through: &str) -> Option<String> {
        if through.is_empty() {
            return self.enum_of(pat);
        }
        match pat {
            syn::Pat::Or(or) => or
                .cases
                .iter()
                .find_map(|case| self.enum_of_through(case, through)),
            syn::Pat::Paren(paren) => self.enum_of_through(&paren.pat, through),
            _ => inside(pat, through).and_then(|inner| self.enum_of(inner)),
        }
    }

    /// The own enum a pattern names a variant of, read through any wrapper in
    /// [`WRAPPERS`], at any depth.
    fn enum_deep(&self, pat: &syn::Pat) -> Option<String> {
        match pat {
            syn::Pat::Or(or) => or.cases.iter().find_map(|case| self.enum_deep(case)),
            syn::Pat::Paren(paren) => self.enum_deep(&paren.pat),
            _ => WRAPPERS[1..]
                .iter()
                .find_map(|through| inside(pat, through).and_then(|inner| self.enum_deep(inner)))
                .or_else(|| self.enum_of(pat)),
        }
    }

    /// The own enum a pattern names a variant of, if any.
    fn enum_of(&self, pat: &syn::Pat) -> Option<String> {
        let path = match pat {
            syn::Pat::Or(or) => return or.cases.iter().find_map(|case| self.enum_of(case)),
            syn::Pat::Ident(ident) => {
                return ident.subpat.as_ref().and_then(|(_, sub)| self.enum_of(sub));
            }
            syn::Pat::Reference(reference) => return self.enum_of(&reference.pat),
            syn::Pat::Paren(paren) => return self.enum_of(&paren.pat),
            syn::Pat::Path(path) => &path.path,
            syn::Pat::Struct(item) => &item.path,
            syn::Pat::TupleStruct(item) => &item.path,
            _ => return None,
        };
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let named = match segments.as_slice() {
            [.., owner, _variant] if owner == "Self" => self.owner.clone()?,
            [.., owner, _variant] => owner.clone(),
            _ => return None,
        };
        // A `#[non_exhaustive]` enum matched outside its crate must have a `_` arm.
        match self.enums.get(&named)? {
            Some(sealed_in) if sealed_in != crate_of(self.file) => None,
            _ => Some(named),
        }
    }
}

/// Whether an arm takes every value left `through` a wrapper (`Some(_)`, `Some(other)`),
/// unguarded.
fn is_catch_all_through(arm: &syn::Arm, through: &str) -> bool {
    if through.is_empty() {
        return is_catch_all(arm);
    }
    fn takes_all(pat: &syn::Pat, through: &str) -> bool {
        match pat {
            syn::Pat::Or(or) => or.cases.iter().any(|case| takes_all(case, through)),
            syn::Pat::Paren(paren) => takes_all(&paren.pat, through),
            _ => inside(pat, through).is_some_and(is_catch_all_pat),
        }
    }
    arm.guard.is_none() && takes_all(&arm.pat, through)
}

/// Whether an arm takes every value left: `_`, or a plain lower-case binding, unguarded.
fn is_catch_all(arm: &syn::Arm) -> bool {
    arm.guard.is_none() && is_catch_all_pat(&arm.pat)
}

/// Whether a pattern takes every value: `_`, or a plain lower-case binding.
fn is_catch_all_pat(pat: &syn::Pat) -> bool {
    match pat {
        syn::Pat::Wild(_) => true,
        syn::Pat::Ident(ident) => {
            ident.subpat.is_none()
                && ident
                    .ident
                    .to_string()
                    .starts_with(|c: char| c.is_lowercase() || c == '_')
        }
        _ => false,
    }
}

impl<'ast> Visit<'ast> for CatchAlls<'_> {
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
        let outer = std::mem::replace(&mut self.owner, impl_owner(item));
        syn::visit::visit_item_impl(self, item);
        self.owner = outer;
    }

    fn visit_expr_match(&mut self, expr: &'ast syn::ExprMatch) {
        let mut counted = false;
        for through in WRAPPERS {
            if expr
                .arms
                .iter()
                .any(|arm| is_catch_all_through(arm, through))
                && let Some(named) = expr
                    .arms
                    .iter()
                    .find_map(|arm| self.enum_of_through(&arm.pat, through))
            {
                *self
                    .holes
                    .entry(format!("{}: {named}", self.file))
                    .or_insert(0) += 1;
                counted = true;
            }
        }
        // A top-level `_` beside arms that name an own enum's variants inside a
        // wrapper (`Some(Kind::A) => …, _ => …`) takes every variant left as well. A
        // match on a tuple is a decision table over several values (the breaker's
        // legal transitions, a validation over a kind and an id): its `_` is read as
        // "every other combination", not as a hole in one enum, and is not counted.
        if !counted
            && expr.arms.iter().any(is_catch_all)
            && let Some(named) = expr.arms.iter().find_map(|arm| self.enum_deep(&arm.pat))
        {
            *self
                .holes
                .entry(format!("{}: {named}", self.file))
                .or_insert(0) += 1;
        }
        syn::visit::visit_expr_match(self, expr);
    }
}

/// What is wrong with `holes` against `allowed`: catch-alls not listed or more than
/// listed, and listed counts that are now too high (lower them) or gone.
fn check(holes: &Holes, allowed: &[(&str, usize)]) -> Vec<String> {
    let allowed: BTreeMap<&str, usize> = allowed.iter().copied().collect();
    let mut problems = Vec::new();
    for (place, &count) in holes {
        match allowed.get(place.as_str()) {
            None => problems.push(format!("  {place}: {count} catch-all arm(s)")),
            Some(&max) if count > max => problems.push(format!(
                "  {place}: {count} catch-all arm(s), more than the {max} allowed"
            )),
            Some(&max) if count < max => problems.push(format!(
                "  {place}: {count} catch-all arm(s) now: lower its allowed {max}"
            )),
            Some(_) => {}
        }
    }
    for place in allowed.keys() {
        if !holes.contains_key(*place) {
            problems.push(format!(
                "  {place}: listed but has none: take it off the allow-list"
            ));
        }
    }
    problems
}

/// The holes the check finds in `source` (a made-up file `a.rs`).
fn holes_in(source: &str) -> Holes {
    let parsed = syn::parse_file(source).expect("the planted source parses");
    let enums = own_enums(std::iter::once(("a/a.rs", &parsed)));
    let mut holes = Holes::new();
    find_holes("a/a.rs", &parsed, &enums, &mut holes);
    holes
}

/// The check, on planted sources: each kind of catch-all on an own enum is found; listed
/// variants, foreign enums and test code pass.
#[test]
fn a_planted_catch_all_is_found() {
    let shape = "enum Shape { Dot, Line(u8), Box { side: u8 } }";
    let found = |body: &str| holes_in(&format!("{shape}\n{body}"));
    let one = Holes::from([("a/a.rs: Shape".to_owned(), 1)]);
    assert_eq!(
        found("fn f(s: Shape) -> u8 { match s { Shape::Dot => 1, _ => 0 } }"),
        one
    );
    assert_eq!(
        found(
            "fn f(s: &Shape) -> u8 { match s { Shape::Line(n) | Shape::Box { side: n } => *n, other => 0 } }"
        ),
        one
    );
    assert_eq!(
        found("impl Shape { fn f(&self) -> u8 { match self { Self::Box { .. } => 1, _ => 0 } } }"),
        one
    );
    assert_eq!(
        found("fn f(s: Shape) -> u8 { match s { n @ Shape::Line(_) => 1, _ => 0 } }"),
        one
    );
    // Through `Some`: the same hole, one level down.
    for wrapped in [
        "fn f(s: Option<Shape>) -> u8 { match s { Some(Shape::Dot) => 1, Some(other) => 0, None => 2 } }",
        "fn f(s: Option<Shape>) -> u8 { match s { None => 2, Some(Shape::Dot) => 1, Some(_) => 0 } }",
        "fn f(s: Option<Shape>) -> u8 { match s { Some(Shape::Dot) => 1, Some(_) | None => 0 } }",
        "fn f(s: Option<Shape>) -> u8 { match s { Some(Shape::Dot) => 1, _ => 0 } }",
        "fn f(s: Option<Option<Shape>>) -> u8 { match s { Some(Some(Shape::Dot)) => 1, _ => 0 } }",
    ] {
        assert_eq!(found(wrapped), one, "{wrapped}");
    }
    // A `#[non_exhaustive]` enum is one in its own crate, and needs its `_` outside it.
    let sealed = "#[non_exhaustive] enum Sealed { A, B }";
    let in_crate =
        format!("{sealed} fn f(s: Sealed) -> u8 {{ match s {{ Sealed::A => 1, _ => 0 }} }}");
    assert_eq!(
        holes_in(&in_crate),
        Holes::from([("a/a.rs: Sealed".to_owned(), 1)])
    );
    let declared = syn::parse_file(sealed).unwrap();
    let user =
        syn::parse_file("fn f(s: Sealed) -> u8 { match s { Sealed::A => 1, _ => 0 } }").unwrap();
    let enums = own_enums([("a/a.rs", &declared), ("b/b.rs", &user)].into_iter());
    let mut holes = Holes::new();
    find_holes("b/b.rs", &user, &enums, &mut holes);
    assert_eq!(holes, Holes::new(), "another crate must keep its `_`");
    // Listed variants, a guarded arm, a foreign enum and test code are not holes.
    for fine in [
        "fn f(s: Shape) -> u8 { match s { Shape::Dot => 1, Shape::Line(_) | Shape::Box { .. } => 0 } }",
        "fn f(s: Shape) -> u8 { match s { Shape::Line(n) if n > 2 => 1, Shape::Dot | Shape::Line(_) | Shape::Box { .. } => 0 } }",
        "fn f(v: serde_json::Value) -> u8 { match v { Value::Null => 1, _ => 0 } }",
        "fn f(v: Option<u8>) -> u8 { match v { Some(1) => 1, _ => 0 } }",
        "fn f(s: Option<Shape>) -> u8 { match s { Some(Shape::Dot) => 1, Some(Shape::Line(_) | Shape::Box { .. }) | None => 0 } }",
        "fn f(s: Result<u8, Shape>) -> u8 { match s { Ok(n) => n, Err(Shape::Dot | Shape::Line(_) | Shape::Box { .. }) => 0 } }",
        "fn f(s: Option<Shape>) -> u8 { match s { Some(shape) => g(shape), None => 0 } }",
        "#[cfg(test)] mod tests { fn f(s: Shape) -> u8 { match s { Shape::Dot => 1, _ => 0 } } }",
        // A tuple is a decision table over several values: its `_` is every other
        // combination (see `visit_expr_match`).
        "fn f(s: Shape, b: bool) -> u8 { match (s, b) { (Shape::Dot, true) => 1, _ => 0 } }",
    ] {
        assert_eq!(found(fine), Holes::new(), "{fine}");
    }
}

/// The allow-list, on made-up counts: each way it can be wrong.
#[test]
fn the_catch_all_list_only_shrinks() {
    let holes = Holes::from([
        ("a.rs: A".to_owned(), 1),
        ("b.rs: B".to_owned(), 2),
        ("c.rs: C".to_owned(), 1),
    ]);
    let problems = check(&holes, &[("b.rs: B", 1), ("c.rs: C", 2), ("d.rs: D", 1)]);
    assert_eq!(problems.len(), 4, "{problems:?}");
    assert!(problems[0].contains("a.rs: A: 1 catch-all"));
    assert!(problems[1].contains("more than the 1 allowed"));
    assert!(problems[2].contains("lower its allowed 2"));
    assert!(problems[3].contains("d.rs: D: listed but has none"));
    assert!(check(&holes, &[("a.rs: A", 1), ("b.rs: B", 2), ("c.rs: C", 1)]).is_empty());
}
