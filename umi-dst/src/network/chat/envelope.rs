//! The fields of a chat chunk's envelope before its usage: the stamps (id, created,
//! model, object, system fingerprint) and the choices, in the key order and with the
//! extra keys of each server layout (sources beside each [`Layout`] variant).
//!
//! The order is a wire shape a client's parser may depend on, so each layout writes its
//! own; what comes after the usage (DashScope's late stamps, OpenAI's padding) is
//! [`super::draw::Draw`]'s, as it draws from the response stream.

use crate::network::chat_shapes::Layout;
use crate::network::json::Json;

/// A chunk's stamps, as one response writes them on every chunk.
pub(super) struct Stamps<'a> {
    pub id: &'a str,
    pub created: u64,
    pub model: &'a str,
    /// The `system_fingerprint` as this server writes it (absent, null, empty or a value).
    pub fingerprint: Option<Json>,
    /// The fingerprint's value, for a server that always writes one (TGI).
    pub fingerprint_value: &'a str,
}

const CHUNK_OBJECT: &str = "chat.completion.chunk";

/// The envelope's fields before the usage, in `layout`'s order.
pub(super) fn fields(layout: Layout, stamps: Stamps<'_>, choices: Json) -> Json {
    let parts = Parts {
        id: stamps.id.into(),
        created: stamps.created.into(),
        model: stamps.model.into(),
        object: CHUNK_OBJECT.into(),
        fingerprint: stamps.fingerprint,
        choices,
    };
    match layout {
        Layout::Azure => azure(parts),
        Layout::OpenAi2024 | Layout::DeepSeek | Layout::Vllm | Layout::OllamaV1 => {
            openai(parts, None)
        }
        Layout::OpenAiTiered | Layout::OpenAiTieredNoLogprobs => {
            openai(parts, Some(("service_tier", "default".into())))
        }
        Layout::DashScope => {
            Json::object(vec![("choices", parts.choices), ("object", parts.object)])
        }
        Layout::Glm => Json::object(vec![
            ("id", parts.id),
            ("created", parts.created),
            ("object", parts.object),
            ("model", parts.model),
            ("choices", parts.choices),
        ]),
        Layout::GlmNoObject => Json::object(vec![
            ("id", parts.id),
            ("created", parts.created),
            ("model", parts.model),
            ("choices", parts.choices),
        ]),
        Layout::OpenRouter => open_router(parts),
        Layout::Tgi => tgi(parts, stamps.fingerprint_value),
        Layout::Xinference => Json::object(vec![
            ("id", parts.id),
            ("model", parts.model),
            ("created", parts.created),
            ("object", parts.object),
            ("choices", parts.choices),
        ]),
        Layout::LlamaCpp => llama_cpp(parts),
    }
}

/// The values of an envelope's fields, each written once in a layout's order.
struct Parts {
    id: Json,
    created: Json,
    model: Json,
    object: Json,
    fingerprint: Option<Json>,
    choices: Json,
}

/// Azure writes every key sorted (AZ-LOBE).
fn azure(parts: Parts) -> Json {
    let out = Json::object(vec![
        ("choices", parts.choices),
        ("created", parts.created),
        ("id", parts.id),
        ("model", parts.model),
        ("object", parts.object),
    ]);
    with_fingerprint(out, parts.fingerprint)
}

/// OpenAI's order (and its copies'): `id, object, created, model`, the `extra` field
/// of the tiered layouts (`service_tier`), the fingerprint, `choices`.
fn openai(parts: Parts, extra: Option<(&'static str, Json)>) -> Json {
    let mut out = Json::object(vec![
        ("id", parts.id),
        ("object", parts.object),
        ("created", parts.created),
        ("model", parts.model),
    ]);
    if let Some((key, value)) = extra {
        out.push(key, value);
    }
    with_fingerprint(out, parts.fingerprint).pushed("choices", parts.choices)
}

/// OpenRouter names the upstream `provider` before the choices; the fingerprint last.
fn open_router(parts: Parts) -> Json {
    let out = Json::object(vec![
        ("id", parts.id),
        ("object", parts.object),
        ("created", parts.created),
        ("model", parts.model),
        ("provider", "Umi".into()),
        ("choices", parts.choices),
    ]);
    with_fingerprint(out, parts.fingerprint)
}

/// TGI calls its chunks `text_completion` and always writes its fingerprint.
fn tgi(parts: Parts, fingerprint_value: &str) -> Json {
    Json::object(vec![
        ("id", parts.id),
        ("object", "text_completion".into()),
        ("created", parts.created),
        ("model", parts.model),
        ("system_fingerprint", fingerprint_value.into()),
        ("choices", parts.choices),
    ])
}

/// llama.cpp's `ordered_json`: `choices, created, id, model`, the fingerprint, `object`.
fn llama_cpp(parts: Parts) -> Json {
    let out = Json::object(vec![
        ("choices", parts.choices),
        ("created", parts.created),
        ("id", parts.id),
        ("model", parts.model),
    ]);
    with_fingerprint(out, parts.fingerprint).pushed("object", parts.object)
}

/// `out` with `system_fingerprint` after its keys, when this server writes one.
fn with_fingerprint(out: Json, fingerprint: Option<Json>) -> Json {
    match fingerprint {
        Some(fingerprint) => out.pushed("system_fingerprint", fingerprint),
        None => out,
    }
}
