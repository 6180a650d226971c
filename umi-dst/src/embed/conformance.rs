//! The conformance rules for embedders: what every [`Embedder`] must do, checked against
//! the simulation (the embedder is a real client over SimNetwork, or any other that
//! serves [`crate::embed`]'s models).
//!
//! 1. **Order**: the vectors of `[a, b, c]` are those of `[c, b, a]`, reversed.
//! 2. **Same text, same vector**: a text's vector alone is its vector in a batch, and
//!    the one [`embed_text`] computes (the model is a function of model, text and
//!    dimensions).
//! 3. **Dimensions**: asked for `d`, every vector has `d` numbers, of unit length.
//! 4. **Typed errors**: a request with no inputs is `InvalidPrompt` before any network;
//!    a model the server does not have is `ModelNotFound`.

use umi_core::llm::LlmError;
use umi_core::llm::embed::{Embedder, EmbeddingRequest};

use super::embed_text;

/// Texts the rules embed: plain, punctuated, non-ASCII, and a repeated word.
pub const CONFORMANCE_TEXTS: [&str; 4] = [
    "the cat sat on the mat",
    "Quarterly revenue grew 12% in Europe!",
    "東京 café au lait",
    "echo echo echo",
];

/// Dimensions the rules ask for.
pub const CONFORMANCE_DIMENSIONS: [u32; 3] = [1, 16, 64];

/// A broken rule: which, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("embedder conformance, {rule}: {detail}")]
pub struct EmbedViolation {
    /// The rule (`order`, `same_text`, `dimensions`, `typed_errors`).
    pub rule: &'static str,
    /// What was seen.
    pub detail: String,
}

fn violation(rule: &'static str, detail: String) -> EmbedViolation {
    EmbedViolation { rule, detail }
}

async fn vectors(
    embedder: &dyn Embedder,
    model: &str,
    texts: &[&str],
    dimensions: Option<u32>,
) -> Result<Vec<Vec<f32>>, EmbedViolation> {
    let mut request = EmbeddingRequest::new(model, texts.iter().map(|t| (*t).to_owned()).collect());
    request.dimensions = dimensions;
    embedder
        .embed(&request)
        .await
        .map(|out| out.vectors)
        .map_err(|error| violation("success", format!("{texts:?} at {dimensions:?}: {error}")))
}

/// Checks `embedder`, asking for `model` (one of [`super::EMBED_MODELS`]), against the
/// rules of the module docs. Run it where no fault is configured.
pub async fn check_embedder(embedder: &dyn Embedder, model: &str) -> Result<(), EmbedViolation> {
    let forward = vectors(embedder, model, &CONFORMANCE_TEXTS, None).await?;
    let mut reversed_texts = CONFORMANCE_TEXTS;
    reversed_texts.reverse();
    let mut backward = vectors(embedder, model, &reversed_texts, None).await?;
    backward.reverse();
    if forward != backward {
        return Err(violation(
            "order",
            "a reversed batch is not reversed vectors".into(),
        ));
    }
    let native = forward.first().map_or(0, Vec::len) as u32;
    for (text, batched) in CONFORMANCE_TEXTS.iter().zip(&forward) {
        let alone = vectors(embedder, model, &[*text], None).await?;
        if alone.first() != Some(batched) || *batched != embed_text(model, text, native) {
            return Err(violation("same_text", format!("{text:?} differs")));
        }
    }
    for d in CONFORMANCE_DIMENSIONS {
        for vector in vectors(embedder, model, &CONFORMANCE_TEXTS, Some(d)).await? {
            let norm: f64 = vector.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
            if vector.len() != d as usize || (norm - 1.0).abs() > 1e-4 {
                return Err(violation(
                    "dimensions",
                    format!("asked {d}: {} numbers, squared norm {norm}", vector.len()),
                ));
            }
        }
    }
    check_errors(embedder, model).await
}

async fn check_errors(embedder: &dyn Embedder, model: &str) -> Result<(), EmbedViolation> {
    let empty = embedder
        .embed(&EmbeddingRequest::new(model, Vec::new()))
        .await;
    if !matches!(empty, Err(LlmError::InvalidPrompt { .. })) {
        return Err(violation("typed_errors", format!("no inputs: {empty:?}")));
    }
    let unknown = EmbeddingRequest::new("no-such-embedder", vec!["x".into()]);
    let outcome = embedder.embed(&unknown).await;
    if !matches!(outcome, Err(LlmError::ModelNotFound { .. })) {
        return Err(violation(
            "typed_errors",
            format!("unknown model: {outcome:?}"),
        ));
    }
    Ok(())
}
