//! An embeddings request as each server reads and refuses it.
//!
//! OpenAI (`POST /embeddings`): `input` a string or an array of strings, `model`,
//! optional `dimensions` and `encoding_format` (`float` or `base64`). An empty string
//! is refused with `'$.input' is invalid. Please check the API reference:
//! https://platform.openai.com/docs/api-reference.` (the message as OpenAI and Azure
//! OpenAI send it, quoted in public issue reports); an input past the model's context
//! with `This model's maximum context length is 8192 tokens, however you requested N
//! tokens (N in your prompt; 0 for the completion). Please reduce your prompt; or
//! completion length.` (ditto); `dimensions` on text-embedding-ada-002 with `This model
//! does not support specifying dimensions.` (chroma-core/chroma's OpenAI embedding
//! tests assert it). Wording we found no public source for (a non-JSON body, a
//! `dimensions` over the model's own) names the field in our own words.
//!
//! Ollama (`POST /api/embed`, ollama/ollama `server/routes.go` `EmbedHandler` at
//! fb30760996871fa9460115c753afd2c60d4ab0f7): `input` a string or an array of strings,
//! anything else `invalid input type`; an empty string alone means no inputs, answered
//! with no vectors; an input past the context is truncated unless `"truncate": false`,
//! then `the input length exceeds the context length`; `dimensions` larger than the
//! model's own is ignored.

use serde_json::Value;
use umi_core::constants::{EMBED_DIMENSIONS_MAX, EMBED_INPUTS_MAX};
use umi_core::llm::LlmError;
use umi_core::llm::tokens::estimate_text_tokens;

use crate::embed::EmbedModel;

/// A request as the server read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ask {
    pub model: String,
    pub inputs: Vec<String>,
    pub dimensions: Option<u32>,
    /// OpenAI's `"encoding_format": "base64"`.
    pub base64: bool,
    /// Ollama's `truncate` (default true).
    pub truncate: bool,
    /// Gemini's `:embedContent`: one content, answered `{"embedding": ...}`.
    pub single: bool,
}

/// A refusal: the error, and the field it names (OpenAI's `param`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refuse {
    pub error: LlmError,
    pub param: Option<&'static str>,
}

pub(super) fn bad(message: impl Into<String>, param: Option<&'static str>) -> Refuse {
    Refuse {
        error: LlmError::BadRequest {
            status: Some(400),
            message: message.into(),
        },
        param,
    }
}

const OPENAI_EMPTY_INPUT: &str = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.";

/// The strings of `input` (a string, or an array of strings); `None` for anything else.
fn inputs_of(input: &Value) -> Option<Vec<String>> {
    match input {
        Value::String(text) => Some(vec![text.clone()]),
        Value::Array(items) => items
            .iter()
            .take(EMBED_INPUTS_MAX + 1)
            .map(|item| item.as_str().map(str::to_owned))
            .collect(),
        _ => None,
    }
}

fn dimensions_of(value: &Value) -> Result<Option<u32>, Refuse> {
    match value.get("dimensions") {
        None | Some(Value::Null) => Ok(None),
        Some(d) => d
            .as_u64()
            .and_then(|d| u32::try_from(d).ok())
            .filter(|d| (1..=EMBED_DIMENSIONS_MAX).contains(d))
            .map(Some)
            .ok_or_else(|| bad(format!("Invalid 'dimensions': {d}."), Some("dimensions"))),
    }
}

/// An OpenAI `/embeddings` body.
pub(super) fn parse_openai(body: &[u8]) -> Result<Ask, Refuse> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| bad("We could not parse the JSON body of your request.", None))?;
    let model = value.get("model").and_then(Value::as_str).unwrap_or("");
    if model.is_empty() {
        return Err(bad("you must provide a model parameter", Some("model")));
    }
    let input = value
        .get("input")
        .ok_or_else(|| bad("Missing required parameter: 'input'.", Some("input")))?;
    let inputs = inputs_of(input).ok_or_else(|| bad(OPENAI_EMPTY_INPUT, Some("input")))?;
    if inputs.is_empty() || inputs.iter().any(String::is_empty) {
        return Err(bad(OPENAI_EMPTY_INPUT, Some("input")));
    }
    if inputs.len() > EMBED_INPUTS_MAX {
        return Err(bad(
            format!(
                "Invalid 'input': array too long. Expected an array with maximum length {EMBED_INPUTS_MAX}."
            ),
            Some("input"),
        ));
    }
    let base64 = match value.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(bad(
                format!(
                    "Invalid value for 'encoding_format': '{other}'. Supported values are: 'float' and 'base64'."
                ),
                Some("encoding_format"),
            ));
        }
    };
    Ok(Ask {
        model: model.to_owned(),
        inputs,
        dimensions: dimensions_of(&value)?,
        base64,
        truncate: false,
        single: false,
    })
}

/// What OpenAI refuses of a request `model` would otherwise answer.
pub(super) fn check_openai(ask: &Ask, model: &EmbedModel) -> Result<(), Refuse> {
    if let Some(d) = ask.dimensions {
        if !model.shortens {
            return Err(bad(
                "This model does not support specifying dimensions.",
                Some("dimensions"),
            ));
        }
        if d > model.dimensions {
            return Err(bad(
                format!(
                    "Invalid 'dimensions': {d}. This model's embeddings have at most {} dimensions.",
                    model.dimensions
                ),
                Some("dimensions"),
            ));
        }
    }
    let limit = model.context_tokens;
    match ask
        .inputs
        .iter()
        .map(|t| estimate_text_tokens(t))
        .find(|n| *n > limit)
    {
        Some(n) => Err(bad(
            format!(
                "This model's maximum context length is {limit} tokens, however you requested {n} tokens ({n} in your prompt; 0 for the completion). Please reduce your prompt; or completion length."
            ),
            None,
        )),
        None => Ok(()),
    }
}

/// An Ollama `/api/embed` body.
pub(super) fn parse_ollama(body: &[u8]) -> Result<Ask, Refuse> {
    let value: Value =
        serde_json::from_slice(body).map_err(|error| bad(error.to_string(), None))?;
    let model = value.get("model").and_then(Value::as_str).unwrap_or("");
    let inputs = match value.get("input") {
        None | Some(Value::Null) => Vec::new(),
        // A lone empty string is no input at all.
        Some(Value::String(text)) if text.is_empty() => Vec::new(),
        Some(input) => inputs_of(input).ok_or_else(|| bad("invalid input type", None))?,
    };
    if inputs.len() > EMBED_INPUTS_MAX {
        return Err(bad("invalid input type", None));
    }
    let dimensions = value
        .get("dimensions")
        .and_then(Value::as_u64)
        .and_then(|d| u32::try_from(d).ok())
        .filter(|d| *d > 0);
    Ok(Ask {
        model: model.to_owned(),
        inputs,
        dimensions,
        base64: false,
        truncate: value.get("truncate").and_then(Value::as_bool) != Some(false),
        single: false,
    })
}

/// What Ollama refuses of a request `model` would otherwise answer; the inputs it
/// truncates to the model's context (at the byte the token estimate reaches it).
pub(super) fn check_ollama(ask: &mut Ask, model: &EmbedModel) -> Result<(), Refuse> {
    let limit = model.context_tokens;
    for text in &mut ask.inputs {
        if estimate_text_tokens(text) <= limit {
            continue;
        }
        if !ask.truncate {
            return Err(bad("the input length exceeds the context length", None));
        }
        let mut cut = (limit as usize)
            .saturating_mul(umi_core::constants::TOKEN_ESTIMATE_ASCII_BYTES_PER_TOKEN)
            .min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    // Ollama ignores dimensions larger than the model's own.
    if ask.dimensions.is_some_and(|d| d > model.dimensions) {
        ask.dimensions = None;
    }
    Ok(())
}
