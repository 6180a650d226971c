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
use umi_core::llm::transport::Transport;
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
}

/// `reads` decoded by `decoder` (what [`Surface::decode_as_client`] does for every
/// format, with its own decoder).
pub(crate) fn decode_with(decoder: impl WireDecoder, reads: &[&[u8]]) -> Decoded {
    decode_reads(decoder, reads.iter().copied())
}
