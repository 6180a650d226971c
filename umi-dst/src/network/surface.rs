//! What a wire format shows besides its answers: where its API lives under a mount
//! point, how it lists its models, the envelope of the errors a server raises itself,
//! the header a client presents its key in, umi-core's client for it and that client's
//! stream decoder. Each format implements [`Surface`] in its own module, so the shared
//! code (SimNetwork, `dst serve`, the split-invariance checker, the cassette tools)
//! never matches on the format: the registry in [`super::registry`] is the
//! one place a format is chosen, and the compiler names every fact a new format must
//! give (docs/adr/0009-one-seam-per-wire-format.md).

use std::sync::Arc;

use serde_json::Value;
use umi_core::env::Env;
use umi_core::llm::transport::{HttpRequest, Transport};
use umi_core::llm::wire::reader::{Decoded, WireDecoder, decode_reads};
use umi_core::llm::{CompletionResponse, Connection, LanguageModel, LlmError, ModelRef};

use super::clients::ClientOptions;
use super::embed::EmbedWire;
use super::profile::Profile;

/// A format's facts beyond request and response. No method has a default: a new
/// format states each.
#[cfg_attr(
    not(feature = "serve"),
    allow(dead_code, reason = "read by `dst serve`")
)]
pub(crate) trait Surface: Send + Sync {
    /// The root its clients' paths start from under an endpoint's mount point (`/v1`
    /// for the OpenAI formats, whose base URLs end there; `""` for Ollama's and
    /// Anthropic's, whose clients add the whole path).
    fn api_root(&self) -> &'static str;

    /// Where its server lists its models, under the mount point (`/v1/models`).
    fn models_path(&self) -> &'static str;

    /// The model list its server answers with, naming `names`.
    fn model_list(&self, names: &[String]) -> Value;

    /// The request header that marks one of its own clients when a models path is
    /// shared with another format (`anthropic-version`); `None` when its clients send
    /// none.
    fn listing_header(&self) -> Option<&'static str>;

    /// The body of an error its server raises itself (an unknown path, a full server),
    /// in its envelope.
    fn own_error(&self, status: u16, message: &str) -> Value;

    /// The header a client of `profile` presents `key` in (`None`: its API takes no
    /// key).
    fn credential(&self, profile: Profile, key: &str) -> Option<(String, String)>;

    /// Whether a request streams when its body does not say (Ollama's native API
    /// streams unless told not to).
    fn streams_by_default(&self) -> bool;

    /// umi-core's client for this format, set up as a user of `options` would.
    fn client(
        &self,
        connection: Connection,
        model_ref: ModelRef,
        options: &ClientOptions,
        transport: Arc<dyn Transport>,
        env: Env,
    ) -> Arc<dyn LanguageModel>;

    /// `reads` decoded by its client's stream decoder.
    fn decode_as_client(&self, reads: &[&[u8]]) -> Decoded;

    /// A whole (non-streamed) response body read by its client's parser.
    fn parse_as_client(&self, body: &str) -> Result<CompletionResponse, LlmError>;

    /// Its server's embeddings endpoint, if it has one.
    fn embeddings(&self) -> Option<&'static dyn EmbedWire>;

    /// The coverage marks of every shape `profile`'s server (one of this format's
    /// profiles) can send: what a sweep must meet (`wire_shapes` checks it does). Its
    /// source is the format's own list of marks (`ChatShapes::marks` for a chat
    /// profile's table, the format module's `*_MARKS` otherwise).
    fn shape_marks(&self, profile: Profile) -> Vec<&'static str>;

    /// Whether `profile`'s models stream their reasoning to a request that does not ask
    /// for it specially, so SimLLM is asked to reason. Source: the provider's docs or
    /// recorded streams (Claude shows its thinking only to a request that enables it;
    /// the Responses API a summary only to a request that asks for one, which Umi's
    /// client can).
    fn streams_reasoning(&self, profile: Profile) -> bool;

    /// Whether `profile`'s server ever answers 429 (local servers queue instead).
    /// Source: the provider's rate-limit docs, or the server's code.
    fn rate_limits(&self, profile: Profile) -> bool;

    /// The key a request presents to this format's server, from the headers (or query)
    /// where that server reads it (`Authorization: Bearer` and Azure's `api-key`;
    /// Anthropic's `x-api-key`; Gemini's `x-goog-api-key` or `?key=`), `None` when it
    /// presents none there. Source: the provider's authentication docs.
    fn presented_key(&self, request: &HttpRequest) -> Option<String>;

    /// Whether `presented` ([`Surface::presented_key`]'s) is the endpoint's `key`: the
    /// key itself, for a format whose requests carry it; its access key id, for one that
    /// signs with it and sends only the signature (SigV4 carries no secret). Source: the
    /// provider's authentication docs.
    fn admits_key(&self, presented: &str, key: &str) -> bool;

    /// Whether `profile`'s server is hosted behind a CDN (Cloudflare) whose own pages a
    /// client may get instead of the provider's (`false`: behind nginx, the self-hosted
    /// servers' and the formats whose CDN pages no source shows). Source: a captured
    /// `server:` header or a quoted page.
    fn behind_cdn(&self, profile: Profile) -> bool;

    /// Whether `profile`'s server refuses a request naming a model it does not serve
    /// (`false`: it serves its one model whatever the request names, as llama.cpp and
    /// TGI do). Source: the server's code or the provider's error reference.
    fn checks_model(&self, profile: Profile) -> bool;

    /// Whether this simulator serves `profile`'s answer to `tool_choice: "required"`
    /// (TGI 2.0 answers it through a grammar in a shape of its own, which is not
    /// simulated: such a request is refused), so a workload may ask for it.
    fn serves_required_tool_choice(&self, profile: Profile) -> bool;

    /// Whether the body `profile`'s server answers a request for a model it does not
    /// serve has a public source, so a sweep may ask for a retired model there and
    /// require the client to type it model-not-found (where none was found, the body
    /// stands in and is not held to that). Source: a captured 404.
    fn model_not_found_sourced(&self, profile: Profile) -> bool;
}

/// The key of a request in `Authorization: Bearer <key>`, the header most formats read
/// it from (what [`Surface::presented_key`] returns for them, among others).
pub(crate) fn bearer(request: &HttpRequest) -> Option<&str> {
    request
        .header("authorization")
        .and_then(|value| value.strip_prefix("Bearer "))
}

/// `reads` decoded by `decoder` (what [`Surface::decode_as_client`] does for every
/// format, with its own decoder).
pub(crate) fn decode_with(decoder: impl WireDecoder, reads: &[&[u8]]) -> Decoded {
    decode_reads(decoder, reads.iter().copied())
}
