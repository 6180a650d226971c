//! Gemini's embeddings, as Google's server reads, refuses and answers them:
//! `POST /v1beta/models/{model}:embedContent` (one content) and
//! `:batchEmbedContents` (`{"requests": [...]}`, what google-genai 3.3.0 calls for every
//! `embed_content` on the Gemini API: googleapis/python-genai `google/genai/models.py`,
//! `_embed_content`).
//!
//! Request: each `EmbedContentRequest` is `{"model": "models/{model}", "content":
//! {"parts": [{"text"}]}, "taskType"?, "title"?, "outputDimensionality"?}`; the parts'
//! texts are one content, embedded as one text (joined with newlines). Answer:
//! `{"embedding": {"values": [...]}}` for `embedContent`, `{"embeddings": [{"values":
//! [...]}]}` in request order for a batch (Gemini API reference, `models.embedContent`,
//! `models.batchEmbedContents`, `ContentEmbedding`). `taskType` and `title` are read and
//! change nothing: the simulated model has one vector per text.
//!
//! Refusals, 400 `INVALID_ARGUMENT` in Google's field-violation form (`* {field}:
//! {words}\n`) unless noted:
//!
//! | case | words, source |
//! | --- | --- |
//! | over 100 requests | `* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch` (langchain-ai/langchainjs #4491; weaviate/weaviate #11277) |
//! | a request without `model` | `* BatchEmbedContentsRequest.requests[i].model: model is not specified` (quoted live in several gateways' notes) |
//! | a `model` without `models/` | `* ...requests[i].model: unexpected model name format` (ditto) |
//! | a part without `text` | `* ...content.parts[j].data: required oneof field 'data' must have one initialized field` (router-for-me/CLIProxyAPI #1292, for generateContent's parts) |
//! | empty text | `EmbedContentRequest.content contains an empty Part.` (lingfengQAQ/webnovel-writer #49), the batch's field named instead |
//! | over the model's input tokens | `The input token count (N) exceeds the maximum number of tokens allowed (M).` ([`crate::network::gemini`]'s words, gemini-cli #4118) |
//! | unknown model | 404 `NOT_FOUND`, `models/X is not found for API version v1beta, or is not supported for embedContent. ...` (feyninc/chonkie #529) |
//!
//! Our own words, in Google's form, where no public source was found: a body that is
//! not JSON, no requests, a request's `model` other than the URL's, an
//! `outputDimensionality` out of range, and requests of one batch asking for different
//! `outputDimensionality` (which the simulator does not serve: one length per answer).

use serde_json::{Value, json};
use umi_core::llm::LlmError;
use umi_core::llm::embed::GEMINI_BATCH_REQUESTS_MAX;
use umi_core::llm::tokens::estimate_text_tokens;

use super::EmbedWire;
use super::request::{Ask, Refuse, bad};
use crate::embed::EmbedModel;
use crate::network::profile::GEMINI_VERSIONS as VERSIONS;

/// Gemini's `:embedContent` and `:batchEmbedContents`.
pub(crate) struct GeminiEmbeddings;

/// The model and whether the call is `:embedContent` (one content), when `path` is one
/// of the two methods under one of the API's versions.
fn call(path: &str) -> Option<(&str, bool)> {
    let rest = VERSIONS.iter().find_map(|v| path.strip_prefix(v))?;
    let (model, method) = rest.rsplit_once(':')?;
    if model.is_empty() || model.contains('/') {
        return None;
    }
    match method {
        "embedContent" => Some((model, true)),
        "batchEmbedContents" => Some((model, false)),
        _ => None,
    }
}

fn violation(field: &str, words: &str) -> Refuse {
    bad(format!("* {field}: {words}\n"), None)
}

impl EmbedWire for GeminiEmbeddings {
    fn path(&self) -> &'static str {
        "/v1beta/models/{model}:batchEmbedContents"
    }

    fn routes(&self, path: &str) -> bool {
        call(path).is_some()
    }

    fn parse(&self, path: &str, body: &[u8]) -> Result<Ask, Refuse> {
        let (model, single) = call(path).ok_or_else(|| bad("Not Found", None))?;
        let value: Value = serde_json::from_slice(body)
            .map_err(|error| bad(format!("Invalid JSON payload received. {error}"), None))?;
        let requests = if single {
            vec![("EmbedContentRequest".to_owned(), &value)]
        } else {
            batch_requests(&value)?
        };
        let mut inputs = Vec::with_capacity(requests.len());
        let mut dimensions: Option<Option<u32>> = None;
        for (field, request) in requests {
            check_model(&field, request, model, single)?;
            inputs.push(text_of(&field, request)?);
            let asked = dimensions_of(&field, request)?;
            if dimensions.is_some_and(|first| first != asked) {
                return Err(violation(
                    &format!("{field}.output_dimensionality"),
                    "every request of one batch must ask for the same outputDimensionality (a limit of the simulator)",
                ));
            }
            dimensions = Some(asked);
        }
        Ok(Ask {
            model: model.to_owned(),
            inputs,
            dimensions: dimensions.flatten(),
            base64: false,
            truncate: false,
            single,
        })
    }

    fn asked_model(&self, path: &str, _body: &[u8]) -> String {
        call(path)
            .map(|(model, _)| model.to_owned())
            .unwrap_or_default()
    }

    fn check(&self, ask: &mut Ask, model: &EmbedModel) -> Result<(), Refuse> {
        if let Some(d) = ask.dimensions
            && (d > model.dimensions || !model.shortens)
        {
            return Err(violation(
                "EmbedContentRequest.output_dimensionality",
                &format!(
                    "{d} is not supported by models/{}, whose embeddings have {} dimensions",
                    model.name, model.dimensions
                ),
            ));
        }
        let limit = model.context_tokens;
        match ask
            .inputs
            .iter()
            .map(|t| estimate_text_tokens(t))
            .find(|n| *n > limit)
        {
            Some(n) => Err(Refuse {
                error: LlmError::ContextOverflow {
                    prompt_tokens: Some(n),
                    limit: Some(limit),
                },
                param: None,
            }),
            None => Ok(()),
        }
    }

    fn body(&self, ask: &Ask, vectors: &[Vec<f32>], _: u64, _: u64) -> (Value, &'static str) {
        if ask.single {
            let body = match vectors.first() {
                Some(vector) => json!({"embedding": {"values": vector}}),
                None => json!({}),
            };
            return (body, "wire.shape.embed.gemini.single");
        }
        let embeddings: Vec<Value> = vectors.iter().map(|v| json!({"values": v})).collect();
        (
            json!({ "embeddings": embeddings }),
            "wire.shape.embed.gemini.batch",
        )
    }
}

/// The requests of a batch, each with its field's name.
fn batch_requests(value: &Value) -> Result<Vec<(String, &Value)>, Refuse> {
    let listed = value
        .get("requests")
        .and_then(Value::as_array)
        .filter(|requests| !requests.is_empty())
        .ok_or_else(|| {
            violation(
                "BatchEmbedContentsRequest.requests",
                "requests is not specified",
            )
        })?;
    if listed.len() > GEMINI_BATCH_REQUESTS_MAX {
        return Err(violation(
            "BatchEmbedContentsRequest.requests",
            &format!("at most {GEMINI_BATCH_REQUESTS_MAX} requests can be in one batch"),
        ));
    }
    Ok(listed
        .iter()
        .enumerate()
        .map(|(i, request)| (format!("BatchEmbedContentsRequest.requests[{i}]"), request))
        .collect())
}

/// A request's `model`: required in a batch, `models/{the URL's model}` wherever given.
fn check_model(field: &str, request: &Value, url_model: &str, single: bool) -> Result<(), Refuse> {
    let field = format!("{field}.model");
    let Some(named) = request.get("model").and_then(Value::as_str) else {
        return if single {
            Ok(())
        } else {
            Err(violation(&field, "model is not specified"))
        };
    };
    let Some(id) = named.strip_prefix("models/") else {
        return Err(violation(&field, "unexpected model name format"));
    };
    if id != url_model {
        return Err(violation(
            &field,
            &format!("{named} differs from the model of the request's URL, models/{url_model}"),
        ));
    }
    Ok(())
}

/// The text of a request's content: its parts' texts, joined with newlines.
fn text_of(field: &str, request: &Value) -> Result<String, Refuse> {
    let parts = request
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .filter(|parts| !parts.is_empty())
        .ok_or_else(|| violation(&format!("{field}.content"), "content is not specified"))?;
    let mut texts = Vec::with_capacity(parts.len());
    for (j, part) in parts.iter().enumerate() {
        let Some(text) = part.get("text").and_then(Value::as_str) else {
            return Err(violation(
                &format!("{field}.content.parts[{j}].data"),
                "required oneof field 'data' must have one initialized field",
            ));
        };
        texts.push(text);
    }
    if texts.iter().all(|text| text.is_empty()) {
        return Err(bad(
            format!("{field}.content contains an empty Part."),
            None,
        ));
    }
    Ok(texts.join("\n"))
}

/// A request's `outputDimensionality`, when it has one.
fn dimensions_of(field: &str, request: &Value) -> Result<Option<u32>, Refuse> {
    match request.get("outputDimensionality") {
        None | Some(Value::Null) => Ok(None),
        Some(d) => d
            .as_u64()
            .and_then(|d| u32::try_from(d).ok())
            .filter(|d| (1..=umi_core::constants::EMBED_DIMENSIONS_MAX).contains(d))
            .map(Some)
            .ok_or_else(|| {
                violation(
                    &format!("{field}.output_dimensionality"),
                    &format!("{d} is not a valid number of dimensions"),
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::embed_model;

    const BATCH: &str = "/v1beta/models/gemini-embedding-001:batchEmbedContents";

    fn one(model: &str, text: &str) -> Value {
        json!({"model": model, "content": {"parts": [{"text": text}]}})
    }

    fn parse(path: &str, body: &Value) -> Result<Ask, Refuse> {
        GeminiEmbeddings.parse(path, body.to_string().as_bytes())
    }

    fn words(refused: Result<Ask, Refuse>) -> String {
        match refused.map_err(|refuse| refuse.error) {
            Err(LlmError::BadRequest { message, .. }) => message,
            other => panic!("not a 400: {other:?}"),
        }
    }

    #[test]
    fn both_methods_route_under_both_versions_and_nothing_else() {
        assert_eq!(call(BATCH), Some(("gemini-embedding-001", false)));
        assert_eq!(call("/v1/models/m:embedContent"), Some(("m", true)));
        for path in [
            "/v1beta/models/m:generateContent",
            "/v1beta/models/:embedContent",
            "/v1beta/models/a/b:embedContent",
            "/v2/models/m:embedContent",
            "/embeddings",
        ] {
            assert!(!GeminiEmbeddings.routes(path), "{path}");
        }
    }

    #[test]
    fn a_batch_reads_one_text_per_request_and_its_dimensions() {
        let model = "models/gemini-embedding-001";
        let mut first = one(model, "a cat");
        first["outputDimensionality"] = json!(8);
        first["taskType"] = json!("RETRIEVAL_DOCUMENT");
        let mut second =
            json!({"model": model, "content": {"parts": [{"text": "a"}, {"text": "dog"}]}});
        second["outputDimensionality"] = json!(8);
        let ask = parse(BATCH, &json!({"requests": [first, second]})).unwrap();
        assert_eq!(ask.inputs, vec!["a cat", "a\ndog"]);
        assert_eq!((ask.dimensions, ask.single), (Some(8), false));
        let single = parse(
            "/v1beta/models/m:embedContent",
            &json!({"content": {"parts": [{"text": "x"}]}}),
        );
        assert!(single.unwrap().single);
    }

    #[test]
    fn malformed_batches_are_refused_naming_the_field() {
        let model = "models/gemini-embedding-001";
        let cases = [
            (
                json!({"requests": vec![one(model, "t"); 101]}),
                "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch\n",
            ),
            (
                json!({"requests": [one(model, "t"), {"content": {"parts": [{"text": "t"}]}}]}),
                "requests[1].model: model is not specified",
            ),
            (
                json!({"requests": [one("gemini-embedding-001", "t")]}),
                "requests[0].model: unexpected model name format",
            ),
            (
                json!({"requests": [one("models/other", "t")]}),
                "requests[0].model: models/other differs",
            ),
            (
                json!({"requests": [one(model, "")]}),
                "BatchEmbedContentsRequest.requests[0].content contains an empty Part.",
            ),
            (
                json!({"requests": [{"model": model, "content": {"parts": [{}]}}]}),
                "requests[0].content.parts[0].data: required oneof field 'data'",
            ),
            (json!({"requests": []}), "requests is not specified"),
        ];
        for (body, expected) in cases {
            let message = words(parse(BATCH, &body));
            assert!(message.contains(expected), "{message} lacks {expected}");
        }
        assert!(
            words(GeminiEmbeddings.parse(BATCH, b"{"))
                .starts_with("Invalid JSON payload received.")
        );
    }

    #[test]
    fn the_model_limits_are_checked() {
        let model = embed_model("text-embedding-004").unwrap();
        let mut ask = parse(
            BATCH
                .replace("gemini-embedding-001", "text-embedding-004")
                .as_str(),
            &json!({"requests": [one("models/text-embedding-004", &"word ".repeat(3_000))]}),
        )
        .unwrap();
        let refused = GeminiEmbeddings.check(&mut ask, model).unwrap_err();
        assert!(
            matches!(
                refused.error,
                LlmError::ContextOverflow {
                    limit: Some(2_048),
                    ..
                }
            ),
            "{refused:?}"
        );
        ask.inputs = vec!["short".into()];
        ask.dimensions = Some(769);
        assert!(GeminiEmbeddings.check(&mut ask, model).is_err());
        ask.dimensions = Some(768);
        assert!(GeminiEmbeddings.check(&mut ask, model).is_ok());
    }

    #[test]
    fn answers_have_googles_shapes() {
        let mut ask = parse(
            BATCH,
            &json!({"requests": [one("models/gemini-embedding-001", "t")]}),
        )
        .unwrap();
        let vectors = vec![vec![0.5, -0.5]];
        let (body, mark) = GeminiEmbeddings.body(&ask, &vectors, 1, 20);
        assert_eq!(body, json!({"embeddings": [{"values": [0.5, -0.5]}]}));
        assert_eq!(mark, "wire.shape.embed.gemini.batch");
        ask.single = true;
        let (body, mark) = GeminiEmbeddings.body(&ask, &vectors, 1, 20);
        assert_eq!(body, json!({"embedding": {"values": [0.5, -0.5]}}));
        assert_eq!(mark, "wire.shape.embed.gemini.single");
        assert_eq!(GeminiEmbeddings.body(&ask, &[], 1, 20).0, json!({}));
    }
}
