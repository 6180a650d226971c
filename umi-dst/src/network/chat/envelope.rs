//! The fields of a chat chunk's envelope before its usage: the stamps (id, created,
//! model, object, system fingerprint) and the choices, in the key order and with the
//! extra keys of each server layout (sources beside each [`Layout`] variant).
//!
//! The order is a wire shape a client's parser may depend on, so each layout writes its
//! own; what comes after the usage (DashScope's late stamps, OpenAI's padding, drawn with
//! the chunk) is written by [`super::chunk::Chunk`]. The fields are written
//! straight into the chunk's serializer, not built as a tree first (the chunk's module
//! says why).

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::network::chat_shapes::Layout;
use crate::network::json::Json;

/// A chunk's stamps, as one response writes them on every chunk.
pub(super) struct Stamps<'a> {
    pub id: &'a str,
    pub created: u64,
    pub model: &'a str,
    /// The `system_fingerprint` as this server writes it: absent (`None`), `null`
    /// (`Some(None)`) or a text (`Some(Some(""))` for an empty one).
    pub fingerprint: Option<Option<&'a str>>,
    /// The fingerprint's value, for a server that always writes one (TGI).
    pub fingerprint_value: &'a str,
}

const CHUNK_OBJECT: &str = "chat.completion.chunk";

/// The choices of one chunk, and what a server writes just before them (OpenRouter's
/// in-stream `error`).
pub(super) struct Choices<'a, C: Serialize> {
    pub choices: &'a C,
    pub before: Option<(&'static str, &'a Json)>,
}

/// Writes the envelope's fields before the usage into `map`, in `layout`'s order.
pub(super) fn write<M: SerializeMap, C: Serialize>(
    map: &mut M,
    layout: Layout,
    stamps: &Stamps<'_>,
    choices: &Choices<'_, C>,
) -> Result<(), M::Error> {
    match layout {
        Layout::Azure => azure(map, stamps, choices),
        Layout::OpenAi2024 | Layout::DeepSeek | Layout::Vllm | Layout::OllamaV1 => {
            openai(map, stamps, choices, None)
        }
        Layout::OpenAiTiered | Layout::OpenAiTieredNoLogprobs => {
            openai(map, stamps, choices, Some(("service_tier", "default")))
        }
        Layout::DashScope => {
            write_choices(map, choices)?;
            map.serialize_entry("object", CHUNK_OBJECT)
        }
        Layout::Glm => {
            map.serialize_entry("id", stamps.id)?;
            map.serialize_entry("created", &stamps.created)?;
            map.serialize_entry("object", CHUNK_OBJECT)?;
            map.serialize_entry("model", stamps.model)?;
            write_choices(map, choices)
        }
        Layout::GlmNoObject => {
            map.serialize_entry("id", stamps.id)?;
            map.serialize_entry("created", &stamps.created)?;
            map.serialize_entry("model", stamps.model)?;
            write_choices(map, choices)
        }
        Layout::OpenRouter => open_router(map, stamps, choices),
        Layout::Tgi => tgi(map, stamps, choices),
        Layout::Xinference => {
            map.serialize_entry("id", stamps.id)?;
            map.serialize_entry("model", stamps.model)?;
            map.serialize_entry("created", &stamps.created)?;
            map.serialize_entry("object", CHUNK_OBJECT)?;
            write_choices(map, choices)
        }
        Layout::LlamaCpp => llama_cpp(map, stamps, choices),
    }
}

/// `choices`, and what goes just before them.
fn write_choices<M: SerializeMap, C: Serialize>(
    map: &mut M,
    choices: &Choices<'_, C>,
) -> Result<(), M::Error> {
    if let Some((key, value)) = choices.before {
        map.serialize_entry(key, value)?;
    }
    map.serialize_entry("choices", choices.choices)
}

/// `system_fingerprint`, when this server writes one.
fn write_fingerprint<M: SerializeMap>(map: &mut M, stamps: &Stamps<'_>) -> Result<(), M::Error> {
    match stamps.fingerprint {
        Some(fingerprint) => map.serialize_entry("system_fingerprint", &fingerprint),
        None => Ok(()),
    }
}

/// Azure writes every key sorted (AZ-LOBE).
fn azure<M: SerializeMap, C: Serialize>(
    map: &mut M,
    stamps: &Stamps<'_>,
    choices: &Choices<'_, C>,
) -> Result<(), M::Error> {
    write_choices(map, choices)?;
    map.serialize_entry("created", &stamps.created)?;
    map.serialize_entry("id", stamps.id)?;
    map.serialize_entry("model", stamps.model)?;
    map.serialize_entry("object", CHUNK_OBJECT)?;
    write_fingerprint(map, stamps)
}

/// OpenAI's opening stamps, `id, object, created, model`, with `object` as the server
/// names its chunks (OpenAI and its copies, OpenRouter, TGI).
fn openai_stamps<M: SerializeMap>(
    map: &mut M,
    stamps: &Stamps<'_>,
    object: &'static str,
) -> Result<(), M::Error> {
    map.serialize_entry("id", stamps.id)?;
    map.serialize_entry("object", object)?;
    map.serialize_entry("created", &stamps.created)?;
    map.serialize_entry("model", stamps.model)
}

/// OpenAI's order (and its copies'): `id, object, created, model`, the `extra` field
/// of the tiered layouts (`service_tier`), the fingerprint, `choices`.
fn openai<M: SerializeMap, C: Serialize>(
    map: &mut M,
    stamps: &Stamps<'_>,
    choices: &Choices<'_, C>,
    extra: Option<(&'static str, &'static str)>,
) -> Result<(), M::Error> {
    openai_stamps(map, stamps, CHUNK_OBJECT)?;
    if let Some((key, value)) = extra {
        map.serialize_entry(key, value)?;
    }
    write_fingerprint(map, stamps)?;
    write_choices(map, choices)
}

/// OpenRouter names the upstream `provider` before the choices; the fingerprint last.
fn open_router<M: SerializeMap, C: Serialize>(
    map: &mut M,
    stamps: &Stamps<'_>,
    choices: &Choices<'_, C>,
) -> Result<(), M::Error> {
    openai_stamps(map, stamps, CHUNK_OBJECT)?;
    map.serialize_entry("provider", "Umi")?;
    write_choices(map, choices)?;
    write_fingerprint(map, stamps)
}

/// TGI calls its chunks `text_completion` and always writes its fingerprint.
fn tgi<M: SerializeMap, C: Serialize>(
    map: &mut M,
    stamps: &Stamps<'_>,
    choices: &Choices<'_, C>,
) -> Result<(), M::Error> {
    openai_stamps(map, stamps, "text_completion")?;
    map.serialize_entry("system_fingerprint", stamps.fingerprint_value)?;
    write_choices(map, choices)
}

/// llama.cpp's `ordered_json`: `choices, created, id, model`, the fingerprint, `object`.
fn llama_cpp<M: SerializeMap, C: Serialize>(
    map: &mut M,
    stamps: &Stamps<'_>,
    choices: &Choices<'_, C>,
) -> Result<(), M::Error> {
    write_choices(map, choices)?;
    map.serialize_entry("created", &stamps.created)?;
    map.serialize_entry("id", stamps.id)?;
    map.serialize_entry("model", stamps.model)?;
    write_fingerprint(map, stamps)?;
    map.serialize_entry("object", CHUNK_OBJECT)
}
