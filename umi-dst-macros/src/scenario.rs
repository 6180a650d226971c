//! `#[umi_dst::scenario]`: a scenario as one declaration on a unit struct. The
//! expansion writes the `Scenario` impl, submits the scenario to umi-dst's registry and,
//! unless it is a canary or runs only when named, writes its corpus replay test.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ItemStruct, LitStr, Token};

/// The declaration's arguments (see the attribute's docs in `lib.rs`).
#[derive(Default)]
pub(crate) struct ScenarioArguments {
    name: Option<LitStr>,
    goal: Option<LitStr>,
    faults: Option<Expr>,
    marks: Option<Expr>,
    steering: Option<Expr>,
    budget: Option<Expr>,
    prices: Option<Expr>,
    config: Option<Expr>,
    run: Option<Expr>,
    rank: Option<Expr>,
    replay_seeds: Option<Expr>,
    canary: bool,
    only_when_named: bool,
}

/// One argument: `name = value`, or a flag (`canary`, `only_when_named`).
struct Argument {
    name: syn::Ident,
    value: Option<Expr>,
}

impl Parse for Argument {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name: syn::Ident = input.parse()?;
        if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            let value: Expr = input.parse()?;
            return Ok(Self {
                name,
                value: Some(value),
            });
        }
        Ok(Self { name, value: None })
    }
}

/// The arguments the attribute takes, for its error messages.
const ARGUMENTS: &str = "`goal`, `run`, `name`, `faults`, `marks`, `steering`, `budget`, \
                         `prices`, `config`, `rank`, `replay_seeds`, `canary` and \
                         `only_when_named`";

/// `value` as a string literal, or an error naming `what`.
fn literal(value: Expr, what: &str) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(text),
            ..
        }) => Ok(text),
        other => Err(syn::Error::new(
            other.span(),
            format!("`{what}` takes text in quotes"),
        )),
    }
}

impl Parse for ScenarioArguments {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut parsed = Self::default();
        for Argument { name, value } in Punctuated::<Argument, Token![,]>::parse_terminated(input)?
        {
            let key = name.to_string();
            let taken = match (key.as_str(), value) {
                ("canary", None) => std::mem::replace(&mut parsed.canary, true),
                ("only_when_named", None) => std::mem::replace(&mut parsed.only_when_named, true),
                ("name", Some(value)) => parsed.name.replace(literal(value, "name")?).is_some(),
                ("goal", Some(value)) => parsed.goal.replace(literal(value, "goal")?).is_some(),
                ("faults", Some(value)) => parsed.faults.replace(value).is_some(),
                ("marks", Some(value)) => parsed.marks.replace(value).is_some(),
                ("steering", Some(value)) => parsed.steering.replace(value).is_some(),
                ("budget", Some(value)) => parsed.budget.replace(value).is_some(),
                ("prices", Some(value)) => parsed.prices.replace(value).is_some(),
                ("config", Some(value)) => parsed.config.replace(value).is_some(),
                ("run", Some(value)) => parsed.run.replace(value).is_some(),
                ("rank", Some(value)) => parsed.rank.replace(value).is_some(),
                ("replay_seeds", Some(value)) => parsed.replay_seeds.replace(value).is_some(),
                ("canary" | "only_when_named", Some(value)) => {
                    return Err(syn::Error::new(
                        value.span(),
                        format!("`{key}` is a flag: write `{key}`, without a value"),
                    ));
                }
                (_, None) if is_known(&key) => {
                    return Err(syn::Error::new(
                        name.span(),
                        format!("`{key}` takes a value: `{key} = ..`"),
                    ));
                }
                (other, _) => {
                    return Err(syn::Error::new(
                        name.span(),
                        format!(
                            "unknown argument `{other}`: #[umi_dst::scenario] takes {ARGUMENTS}"
                        ),
                    ));
                }
            };
            if taken {
                return Err(syn::Error::new(
                    name.span(),
                    format!("`{key}` is given twice"),
                ));
            }
        }
        if let Some(config) = &parsed.config
            && let Some(beside) = config_overrides(&parsed)
        {
            return Err(syn::Error::new(
                config.span(),
                format!(
                    "`config` builds the whole `SimConfig`, so `{beside}` beside it would be shown \
                     by `dst list` but never used: put it in the config function"
                ),
            ));
        }
        Ok(parsed)
    }
}

/// The first argument a `config` function would silently override (`faults`, `budget`,
/// `prices`: what the trait's default `config` builds from), if one is given.
fn config_overrides(parsed: &ScenarioArguments) -> Option<&'static str> {
    [
        ("faults", parsed.faults.is_some()),
        ("budget", parsed.budget.is_some()),
        ("prices", parsed.prices.is_some()),
    ]
    .into_iter()
    .find_map(|(name, given)| given.then_some(name))
}

/// `UpperCamel` as `snake_case`: the default name of a scenario struct.
fn snake_case(ident: &str) -> String {
    let mut name = String::with_capacity(ident.len() + 4);
    for (index, c) in ident.chars().enumerate() {
        if c.is_uppercase() {
            if index > 0 {
                name.push('_');
            }
            name.extend(c.to_lowercase());
        } else {
            name.push(c);
        }
    }
    name
}

/// A list argument: an array literal `[a, b]` becomes `&[a, b]`; any other expression
/// (a constant slice) is used as it is.
fn slice(value: &Expr) -> TokenStream2 {
    match value {
        Expr::Array(array) => quote! { &#array },
        other => quote! { #other },
    }
}

/// The `Scenario` methods the arguments give (the trait's defaults for the rest).
fn methods(arguments: &ScenarioArguments, name: &str, goal: &LitStr) -> TokenStream2 {
    let faults = arguments.faults.as_ref().map(|faults| {
        let faults = match faults {
            Expr::Array(array) => quote! { ::std::vec::Vec::from(#array) },
            other => quote! { #other },
        };
        quote! {
            fn faults(&self) -> ::std::vec::Vec<::umi_dst::FaultConfig> { #faults }
        }
    });
    let marks = arguments.marks.as_ref().map(|marks| {
        let marks = slice(marks);
        quote! { fn marks(&self) -> &'static [&'static str] { #marks } }
    });
    let steering = arguments.steering.as_ref().map(|steering| {
        let steering = slice(steering);
        quote! {
            fn steering(&self) -> &'static [&'static ::umi_dst::prelude::Mark] { #steering }
        }
    });
    let canary = arguments
        .canary
        .then(|| quote! { fn is_canary(&self) -> bool { true } });
    let only_when_named = arguments
        .only_when_named
        .then(|| quote! { fn only_when_named(&self) -> bool { true } });
    let budget = arguments.budget.as_ref().map(|budget| {
        quote! { fn budget(&self) -> ::umi_dst::usage::Budget { #budget } }
    });
    let prices = arguments.prices.as_ref().map(|prices| {
        quote! {
            fn prices(&self) -> ::std::option::Option<
                ::std::sync::Arc<::umi_dst::usage::PriceTable>,
            > {
                ::std::option::Option::Some(#prices)
            }
        }
    });
    let config = arguments.config.as_ref().map(|config| {
        quote! {
            fn config(&self, seed: u64, swarm: bool) -> ::umi_dst::SimConfig {
                (#config)(seed, swarm)
            }
        }
    });
    quote! {
        fn name(&self) -> &'static str { #name }
        fn goal(&self) -> &'static str { #goal }
        #faults
        #marks
        #steering
        #canary
        #only_when_named
        #budget
        #prices
        #config
    }
}

/// The replay test of a scenario that is neither a canary nor run only when named: its
/// kept seeds and its default range, named after it.
fn replay_test(
    arguments: &ScenarioArguments,
    ident: &syn::Ident,
    name: &str,
    test_ident: &syn::Ident,
) -> Option<TokenStream2> {
    if arguments.canary || arguments.only_when_named {
        return None;
    }
    let seeds = arguments.replay_seeds.as_ref().map_or_else(
        || quote! { ::umi_dst::scenario::REPLAY_SEEDS_DEFAULT },
        |seeds| quote! { #seeds },
    );
    let doc = format!(
        "Scenario `{name}`: the seeds kept in `seeds/{name}.seeds`, then its default range."
    );
    Some(quote! {
        #[doc = #doc]
        #[cfg(test)]
        #[::core::prelude::v1::test]
        fn #test_ident() {
            ::umi_dst::scenario::replay_declared(&#ident, env!("CARGO_MANIFEST_DIR"), #seeds);
        }
    })
}

/// The scenario's entry in the registry: its rank and where it is declared (the
/// attribute's module, file and line, what a duplicate name's error names).
fn registration(arguments: &ScenarioArguments, ident: &syn::Ident) -> TokenStream2 {
    let rank = arguments.rank.as_ref().map_or_else(
        || quote! { ::umi_dst::scenario::RANK_DEFAULT },
        |rank| quote! { #rank },
    );
    quote! {
        ::umi_dst::__private::inventory::submit! {
            ::umi_dst::scenario::Registration {
                rank: #rank,
                scenario: &#ident,
                at: ::umi_dst::scenario::DeclaredAt {
                    module: ::core::module_path!(),
                    file: ::core::file!(),
                    line: ::core::line!(),
                },
            }
        }
    }
}

/// The struct, its `Scenario` impl, its registration and its replay test.
pub(crate) fn expand(
    arguments: &ScenarioArguments,
    item: &ItemStruct,
) -> syn::Result<TokenStream2> {
    if !matches!(item.fields, syn::Fields::Unit) || !item.generics.params.is_empty() {
        return Err(syn::Error::new(
            item.span(),
            "#[umi_dst::scenario] declares a unit struct: `pub struct MyScenario;`",
        ));
    }
    let Some(goal) = &arguments.goal else {
        return Err(syn::Error::new(
            item.ident.span(),
            "a scenario says what it checks: `goal = \"...\"`",
        ));
    };
    let Some(run) = &arguments.run else {
        return Err(syn::Error::new(
            item.ident.span(),
            "a scenario names its run: `run = my_run` (an `async fn(SimEnvironment) -> \
             Result<(), Violation>`) or `run = |sim| ..`",
        ));
    };
    let ident = &item.ident;
    let name = arguments
        .name
        .as_ref()
        .map_or_else(|| snake_case(&ident.to_string()), LitStr::value);
    let test_ident = syn::parse_str::<syn::Ident>(&name).map_err(|_| {
        syn::Error::new(
            item.ident.span(),
            format!("the scenario's name `{name}` must be a Rust identifier (its test's name)"),
        )
    })?;
    let methods = methods(arguments, &name, goal);
    let replay = replay_test(arguments, ident, &name, &test_ident);
    let registration = registration(arguments, ident);
    Ok(quote! {
        #item

        impl ::umi_dst::Scenario for #ident {
            #methods

            fn run(
                &self,
                sim: ::umi_dst::SimEnvironment,
            ) -> ::umi_dst::__private::LocalBoxFuture<
                'static,
                ::std::result::Result<(), ::umi_dst::Violation>,
            > {
                ::std::boxed::Box::pin((#run)(sim))
            }
        }

        #registration

        #replay
    })
}

/// Whether `key` is an argument that takes a value.
fn is_known(key: &str) -> bool {
    matches!(
        key,
        "name"
            | "goal"
            | "faults"
            | "marks"
            | "steering"
            | "budget"
            | "prices"
            | "config"
            | "run"
            | "rank"
            | "replay_seeds"
    )
}

#[cfg(test)]
mod tests {
    use super::ScenarioArguments;

    /// Arguments the parser refuses, each with the words its error must hold; and the
    /// same shapes it accepts (the review's case: `config` beside `faults` was taken, and
    /// the faults shown by `dst list` were never injected).
    #[test]
    fn config_beside_what_it_replaces_is_refused() {
        let refused = [
            (
                "goal = \"g\", run = r, config = c, faults = []",
                "`faults` beside it",
            ),
            (
                "goal = \"g\", run = r, budget = b, config = c",
                "`budget` beside it",
            ),
            (
                "goal = \"g\", run = r, config = c, prices = p",
                "`prices` beside it",
            ),
            (
                "goal = \"g\", run = r, goal = \"h\"",
                "`goal` is given twice",
            ),
        ];
        for (arguments, words) in refused {
            let error = syn::parse_str::<ScenarioArguments>(arguments)
                .err()
                .unwrap_or_else(|| panic!("accepted: {arguments}"));
            assert!(error.to_string().contains(words), "{arguments}: {error}");
        }
        for accepted in [
            "goal = \"g\", run = r, config = c, marks = [\"m\"], canary",
            "goal = \"g\", run = r, faults = [], budget = b, prices = p",
        ] {
            syn::parse_str::<ScenarioArguments>(accepted)
                .unwrap_or_else(|error| panic!("refused {accepted}: {error}"));
        }
    }
}
