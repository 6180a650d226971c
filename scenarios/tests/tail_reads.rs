//! No scenario reads its run's trace tail: a sweep's runs keep none (issue 41: keeping
//! the last events cost each seed a copy of every event, and no sweep report shows them;
//! `dst replay` runs the seed again to show a tail). A scenario's check that read
//! `trace().tail()` would judge a seed one way under `cargo test` and `dst replay`
//! (a tail of 40) and another in a sweep (an empty one).
//!
//! The check reads `scenarios/src` with syn and refuses a call of a method named `tail`
//! on a receiver that is a call of `trace()` (`sim.trace().tail()`, `env.trace().tail()`).

use std::path::Path;

use syn::visit::Visit;

/// The calls of `.trace().tail()` in `file`, as `line N`.
fn tail_reads(file: &syn::File) -> Vec<String> {
    struct Reads(Vec<String>);
    impl<'ast> Visit<'ast> for Reads {
        fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
            let on_trace = matches!(
                &*call.receiver,
                syn::Expr::MethodCall(inner) if inner.method == "trace"
            );
            if call.method == "tail" && on_trace {
                self.0
                    .push(format!("line {}", call.method.span().start().line));
            }
            syn::visit::visit_expr_method_call(self, call);
        }
    }
    let mut reads = Reads(Vec::new());
    reads.visit_file(file);
    reads.0
}

#[test]
fn no_scenario_reads_its_trace_tail() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for file in crate::tidy::rust_files(&root.join("src")) {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        let parsed =
            syn::parse_file(&text).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        for read in tail_reads(&parsed) {
            found.push(format!("{}: {read}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "a scenario reads its trace tail, which a sweep's runs do not keep:\n{}",
        found.join("\n")
    );
}

/// The check both ways: a planted read is found, with its line; a tail of anything
/// else, and the trace's other readers, are not.
#[test]
fn a_planted_tail_read_is_found() {
    let planted: syn::File = syn::parse_str(
        "async fn run(sim: SimEnvironment) {\n    let last = sim.trace().tail();\n}",
    )
    .unwrap();
    assert_eq!(tail_reads(&planted), ["line 2"]);
    let fine: syn::File = syn::parse_str(
        "fn f(sim: &SimEnvironment, q: Queue) { q.tail(); sim.trace().hash(); sim.trace().len(); }",
    )
    .unwrap();
    assert!(tail_reads(&fine).is_empty());
}
