//! Query rewriting: a bare JSON array of one to three variants of the query, as
//! umi-core's parser expects (the old simulator answered with an object).

use umi_core::constants::{MEMORY_QUERY_BYTES_MAX, QUERY_VARIANTS_MAX};
use umi_core::llm::CompletionRequest;
use umi_core::memory::tasks::rewrite_input;

use super::cut;
use crate::llm::route::Generated;
use crate::rng::DeterministicRng;

const SIM_VARIANTS_MAX: usize = 3;
const _: () = assert!(SIM_VARIANTS_MAX <= QUERY_VARIANTS_MAX);

const FILLER: &[&str] = &[
    "what", "where", "who", "when", "how", "why", "which", "is", "are", "was", "were", "do",
    "does", "did", "the", "a", "an", "of", "to", "in", "on", "at", "about", "me", "tell", "can",
    "you", "please", "i", "my",
];

/// The rewrite answer for `request`.
pub(crate) fn generate(request: &CompletionRequest, rng: &mut DeterministicRng) -> Generated {
    let query =
        rewrite_input(request).unwrap_or_else(|| request.last_user_text().unwrap_or("").to_owned());
    let query = cut(query.trim(), MEMORY_QUERY_BYTES_MAX);
    let keywords: Vec<&str> = query
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty() && !FILLER.contains(&w.to_lowercase().as_str()))
        .collect();
    let mut variants: Vec<String> = Vec::new();
    let mut add = |variant: String| {
        let variant = cut(variant.trim(), MEMORY_QUERY_BYTES_MAX).to_owned();
        if !variant.is_empty() && !variants.contains(&variant) && variants.len() < SIM_VARIANTS_MAX
        {
            variants.push(variant);
        }
    };
    add(query.to_owned());
    if !keywords.is_empty() {
        add(keywords.join(" "));
        if rng.bool_with(0.5) {
            let mut shuffled = keywords.clone();
            rng.shuffle(&mut shuffled);
            add(format!("{} details", shuffled.join(" ")));
        }
    }
    if variants.is_empty() {
        variants.push("recent notes".to_owned());
    }
    Generated::json(serde_json::to_string(&variants).expect("strings serialize"))
}
