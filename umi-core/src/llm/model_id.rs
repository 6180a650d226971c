//! [`ModelId`]: a model as configs, routers and their events name it, `provider/model`
//! (`openai/gpt-4o-mini`, `ollama/qwen3:8b`, `openrouter/meta-llama/llama-3-8b`): the
//! provider before the first `/`, the model's own id after it (which may hold more `/`).
//! The one place that spelling is taken apart.

use std::fmt;

/// A `provider/model` id, borrowed from the text it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ModelId<'a> {
    /// The provider's name (`openai`), a key of the router's `providers`.
    pub provider: &'a str,
    /// The model's id at that provider (`gpt-4o-mini`).
    pub model: &'a str,
}

/// A model id that is not `provider/model`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model id {id:?} is not provider/model (like openai/gpt-4o-mini)")]
pub struct ModelIdError {
    /// The id as given.
    pub id: String,
}

impl<'a> ModelId<'a> {
    /// Parses `provider/model`; both parts must be non-empty.
    pub fn parse(id: &'a str) -> Result<Self, ModelIdError> {
        match id.split_once('/') {
            Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
                Ok(Self { provider, model })
            }
            _ => Err(ModelIdError { id: id.to_owned() }),
        }
    }

    /// The provider of `id`, or the whole of `id` when it has no `/` (an id a log or an
    /// event carries, already checked where it was configured).
    pub fn provider_of(id: &str) -> &str {
        id.split_once('/').map_or(id, |(provider, _)| provider)
    }
}

impl fmt::Display for ModelId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_at_the_first_slash_and_refuse_missing_parts() {
        let cases: [(&str, Option<(&str, &str)>); 7] = [
            ("openai/gpt-4o-mini", Some(("openai", "gpt-4o-mini"))),
            ("ollama/qwen3:8b", Some(("ollama", "qwen3:8b"))),
            (
                "openrouter/meta-llama/llama-3",
                Some(("openrouter", "meta-llama/llama-3")),
            ),
            ("gpt-4o", None),
            ("/gpt-4o", None),
            ("openai/", None),
            ("", None),
        ];
        for (id, expected) in cases {
            let parsed = ModelId::parse(id).map(|m| (m.provider, m.model)).ok();
            assert_eq!(parsed, expected, "{id}");
            if let Ok(model_id) = ModelId::parse(id) {
                assert_eq!(model_id.to_string(), id);
            }
        }
        let error = ModelId::parse("gpt-4o").unwrap_err().to_string();
        assert!(
            error.contains("\"gpt-4o\"") && error.contains("provider/model"),
            "{error}"
        );
        assert_eq!(ModelId::provider_of("openai/gpt-4o"), "openai");
        assert_eq!(ModelId::provider_of("bare"), "bare");
    }
}
