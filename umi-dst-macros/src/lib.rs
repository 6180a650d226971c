//! `#[umi_dst::test]`: a simulation test that reads like `#[tokio::test]`; and
//! `#[umi_dst::scenario]`: a scenario as one declaration that registers itself.
//!
//! ```ignore
//! #[umi_dst::test(seeds = 1..=200, faults = [FaultConfig::chance(FaultKind::LlmTimeout, 0.1)])]
//! async fn retries_are_bounded(sim: SimEnvironment) -> Result<(), Violation> {
//!     let reply = my_agent(&sim).ask("hi").await?;
//!     ensure!(!reply.is_empty(), "an empty reply");
//!     Ok(())
//! }
//! ```
//!
//! expands to a `#[test]` that runs the body through `umi_dst::Simulation::from_env()`
//! (so `DST_SEED`, `DST_PATH`, `DST_SEEDS` and the other `DST_*` variables work as for any simulation
//! test), over the seeds given (default: the environment's range), under the faults
//! given, replaying the seeds kept in `seeds/<corpus>.seeds` (default: the test's name).
//! The expansion uses only umi-dst's public API; this crate holds no runtime code.

mod scenario;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ItemFn, LitStr, Token};

/// Runs an `async fn(SimEnvironment) -> Result<(), Violation>` as a simulation test.
///
/// Arguments, all optional, comma-separated:
/// - `seeds = 1..=200`: the seed range (any `IntoIterator<Item = u64>`; default: the
///   runner's, `umi_dst::constants::SEED_COUNT_DEFAULT` seeds from 1); `DST_SEED`,
///   `DST_PATH`, `DST_SEEDS` and `DST_SEED_START` still win, as for `Simulation::with_seeds`;
/// - `faults = [a, b]`: `FaultConfig`s the run injects;
/// - `budget = Budget::new().tokens_max(5_000)`: what one run may spend; a run over it
///   fails as `budget`, naming the call that pushed it over (`umi_dst::usage::Budget`);
/// - `corpus = "name"`: replay the seeds kept in `seeds/name.seeds` (default: the test
///   function's name; a missing file is an empty corpus).
///
/// Other attributes on the function (`#[ignore]`, doc comments) stay on the test.
#[proc_macro_attribute]
pub fn test(arguments: TokenStream, item: TokenStream) -> TokenStream {
    let arguments = syn::parse_macro_input!(arguments as TestArguments);
    let function = syn::parse_macro_input!(item as ItemFn);
    match expand(&arguments, &function) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// Declares a scenario: a unit struct becomes a `umi_dst::Scenario`, registered, so
/// `umi_dst::scenario::registered()` (what a `dst` binary lists and sweeps) finds it, and,
/// unless it is a canary or runs only when named, a `#[test]` named after the scenario
/// replays its kept seeds (`seeds/<name>.seeds`) and seeds 1 to `replay_seeds`.
///
/// Arguments, comma-separated (`goal` and `run` are required):
/// - `goal = "..."`: what it checks, in one line;
/// - `run = my_run`: the run of one seed, an `async fn(SimEnvironment) -> Result<(),
///   Violation>` (or a closure `|sim| run_with(sim, policy)`);
/// - `name = "..."`: its name (default: the struct's name in snake_case), also its seed
///   file's and its replay test's;
/// - `faults = [FaultConfig::chance(..), ..]`: the faults it runs under (or any
///   expression giving a `Vec<FaultConfig>`);
/// - `marks = ["memory.retry", ..]`: the coverage marks its seeds must hit (or a
///   `&'static [&'static str]` constant);
/// - `steering = [&MARK, ..]`: its steering marks (`umi_core::env::steer::Mark`s);
/// - `budget = expr` (a `umi_dst::usage::Budget`), `prices = expr` (an
///   `Arc<umi_dst::usage::PriceTable>`);
/// - `config = my_config`: a `fn(seed: u64, swarm: bool) -> SimConfig` in place of the
///   config built from the faults, budget and prices (so giving any of those beside it
///   fails to compile: they would be listed but never used);
/// - `canary`: it carries a planted bug a sweep must find; `only_when_named`: it runs
///   only with `--scenario NAME` (neither gets a replay test);
/// - `rank = 3`: its place in the registry's order (lower first, then by name; default
///   after every ranked one);
/// - `replay_seeds = 16`: seeds its replay test runs (default
///   `umi_dst::scenario::REPLAY_SEEDS_DEFAULT`).
///
/// ```ignore
/// #[umi_dst::scenario(
///     goal = "a failed write is never acknowledged",
///     faults = [FaultConfig::chance(FaultKind::StorageWriteFail, 0.1)],
///     marks = ["memory.write_failed"],
///     run = run,
/// )]
/// pub struct NoLostWrites;
///
/// async fn run(sim: SimEnvironment) -> Result<(), Violation> { /* ... */ Ok(()) }
/// ```
#[proc_macro_attribute]
pub fn scenario(arguments: TokenStream, item: TokenStream) -> TokenStream {
    let arguments = syn::parse_macro_input!(arguments as scenario::ScenarioArguments);
    let item = syn::parse_macro_input!(item as syn::ItemStruct);
    match scenario::expand(&arguments, &item) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// The attribute's arguments.
#[derive(Default)]
struct TestArguments {
    seeds: Option<Expr>,
    faults: Option<Expr>,
    budget: Option<Expr>,
    corpus: Option<LitStr>,
}

/// One `name = value` argument.
struct Argument {
    name: syn::Ident,
    value: Expr,
}

impl Parse for Argument {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name: syn::Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let value: Expr = input.parse()?;
        Ok(Self { name, value })
    }
}

impl Parse for TestArguments {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut parsed = Self::default();
        for argument in Punctuated::<Argument, Token![,]>::parse_terminated(input)? {
            let Argument { name, value } = argument;
            let slot_taken = match name.to_string().as_str() {
                "seeds" => parsed.seeds.replace(value).is_some(),
                "budget" => parsed.budget.replace(value).is_some(),
                "faults" => {
                    if !matches!(value, Expr::Array(_)) {
                        return Err(syn::Error::new(
                            value.span(),
                            "`faults` takes a list: `faults = [FaultConfig::always(..), ..]`",
                        ));
                    }
                    parsed.faults.replace(value).is_some()
                }
                "corpus" => {
                    let Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }) = value
                    else {
                        return Err(syn::Error::new(
                            value.span(),
                            "`corpus` takes a name in quotes: `corpus = \"my_test\"` \
                             (for seeds/my_test.seeds)",
                        ));
                    };
                    parsed.corpus.replace(text).is_some()
                }
                other => {
                    return Err(syn::Error::new(
                        name.span(),
                        format!(
                            "unknown argument `{other}`: #[umi_dst::test] takes `seeds`, \
                             `faults`, `budget` and `corpus`"
                        ),
                    ));
                }
            };
            if slot_taken {
                return Err(syn::Error::new(
                    name.span(),
                    format!("`{name}` is given twice"),
                ));
            }
        }
        Ok(parsed)
    }
}

/// The `#[test]` function.
fn expand(arguments: &TestArguments, function: &ItemFn) -> syn::Result<TokenStream2> {
    let signature = &function.sig;
    if signature.asyncness.is_none() {
        return Err(syn::Error::new(
            signature.fn_token.span(),
            "#[umi_dst::test] runs an `async fn(sim: SimEnvironment) -> Result<(), Violation>`",
        ));
    }
    if signature.inputs.len() != 1 || matches!(signature.inputs.first(), Some(FnArg::Receiver(_))) {
        return Err(syn::Error::new(
            signature.inputs.span(),
            "#[umi_dst::test] takes one argument, the run's `SimEnvironment`",
        ));
    }
    if !signature.generics.params.is_empty() {
        return Err(syn::Error::new(
            signature.generics.span(),
            "#[umi_dst::test] functions cannot be generic",
        ));
    }
    let name = &signature.ident;
    let body_name = format_ident!("__umi_dst_body_{}", name);
    let mut body = function.clone();
    body.sig.ident = body_name.clone();
    body.attrs.clear();
    let attributes = &function.attrs;
    let visibility = &function.vis;
    let seeds = arguments.seeds.as_ref().map(|seeds| {
        quote_spanned! {seeds.span()=> let simulation = simulation.with_seeds(#seeds); }
    });
    let faults = arguments.faults.as_ref().map(|faults| {
        quote_spanned! {faults.span()=> let simulation = simulation.with_faults(#faults); }
    });
    let budget = arguments.budget.as_ref().map(|budget| {
        quote_spanned! {budget.span()=> let simulation = simulation.with_budget(#budget); }
    });
    let corpus = match &arguments.corpus {
        Some(corpus) => corpus.value(),
        None => name.to_string(),
    };
    Ok(quote! {
        #(#attributes)*
        #[::core::prelude::v1::test]
        #visibility fn #name() {
            #body
            let simulation = ::umi_dst::Simulation::from_env();
            #seeds
            #faults
            #budget
            let simulation = simulation.with_corpus(
                ::umi_dst::corpus::test_corpus_path(env!("CARGO_MANIFEST_DIR"), #corpus),
            );
            simulation.run(#body_name);
        }
    })
}
