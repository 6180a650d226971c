//! What a wire format shows besides its answers: where its API lives under a mount
//! point, how it lists its models, the envelope of the errors a server raises itself,
//! the header a client presents its key in, umi-core's client for it and that client's
//! stream decoder. Each format implements [`Surface`] in its own module, so the shared
//! code (SimNetwork, `dst serve`, the split-invariance checker, the cassette tools)
//! never matches on the format: the registry in [`super::format::server_format`] is the
//! one place a format is chosen, and the compiler names every fact a new format must
//! give (docs/adr/0009-one-seam-per-wire-format.md).

use std::sync::Arc;

use serde_json::Value;
use umi_core::env::Env;
use umi_core::llm::transport::Transport;
use umi_core::llm::wire::reader::{Decoded, WireDecoder, decode_reads};
use umi_core::llm::{Connection, LanguageModel, ModelRef};

use super::clients::ClientOptions;
use super::embed::EmbedWire;
use super::format::server_format;
use super::profile::{Profile, WireFormat};

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

    /// Its server's embeddings endpoint, if it has one.
    fn embeddings(&self) -> Option<&'static dyn EmbedWire>;
}

/// `reads` decoded by `decoder` (what [`Surface::decode_as_client`] does for every
/// format, with its own decoder).
pub(crate) fn decode_with(decoder: impl WireDecoder, reads: &[&[u8]]) -> Decoded {
    decode_reads(decoder, reads.iter().copied())
}

impl WireFormat {
    /// Its facts, from the registry.
    pub(crate) fn surface(self) -> &'static dyn Surface {
        server_format(self)
    }

    /// `reads` decoded by its client's stream decoder.
    pub fn decode_as_client(self, reads: &[&[u8]]) -> Decoded {
        self.surface().decode_as_client(reads)
    }

    /// The format whose envelope a server's own error takes when the request reached no
    /// endpoint: OpenAI's, the one most clients read.
    #[cfg_attr(
        not(feature = "serve"),
        allow(dead_code, reason = "read by `dst serve`")
    )]
    pub(crate) const UNROUTED_ENVELOPE: WireFormat = WireFormat::OpenAiChat;

    /// Every format, in registry order.
    pub const ALL: [WireFormat; 5] = [
        WireFormat::OpenAiChat,
        WireFormat::Ollama,
        WireFormat::AnthropicMessages,
        WireFormat::OpenAiResponses,
        WireFormat::Gemini,
    ];

    /// The path of its main operation under its API root (`/chat/completions`).
    pub fn path(self) -> &'static str {
        server_format(self).path()
    }

    /// The root its clients' paths start from under a mount point (`/v1`, or `""`).
    pub fn api_root(self) -> &'static str {
        server_format(self).api_root()
    }

    /// The path of its main operation under a mount point (`/v1/chat/completions`).
    pub fn main_path(self) -> String {
        format!("{}{}", self.api_root(), self.path())
    }

    /// The format whose main operation `path` (a recorded request's path, query and
    /// all) calls: the one whose server routes the path's tail.
    pub fn of_request_path(path: &str) -> Option<WireFormat> {
        let path = path.split('?').next().unwrap_or_default();
        Self::ALL.into_iter().find(|f| f.ends_in_operation(path))
    }

    /// Whether `path` (a recorded request's path, query and all) calls its main
    /// operation, whatever the base URL's own path (see
    /// [`WireFormat::of_request_path`]).
    pub fn is_operation_path(self, path: &str) -> bool {
        self.ends_in_operation(path.split('?').next().unwrap_or_default())
    }

    /// Whether `path` ends in its main operation below its API root, whatever comes
    /// before (Azure's `/openai/deployments/x/chat/completions`, GLM's
    /// `/api/paas/v4/chat/completions`, DeepSeek's `/chat/completions` with no `/v1`).
    fn ends_in_operation(self, path: &str) -> bool {
        path.char_indices()
            .filter(|(_, c)| *c == '/')
            .any(|(at, _)| server_format(self).route(&path[at..], None).is_some())
    }

    /// Whether its server routes `path` (under a mount point, its API root included) to
    /// its main operation (its server format's `route`: Gemini's paths carry
    /// the model and the method).
    pub fn routes(self, path: &str) -> bool {
        path.strip_prefix(self.api_root())
            .is_some_and(|below| server_format(self).route(below, None).is_some())
    }

    /// Where in `path` its main operation's path starts, when its tail is one (what comes
    /// before is a mount point or a base URL's own path).
    pub fn operation_start(self, path: &str) -> Option<usize> {
        path.char_indices()
            .filter(|(_, c)| *c == '/')
            .map(|(at, _)| at)
            .find(|at| self.routes(&path[*at..]))
    }

    /// Whether a request streams when its body does not say.
    pub fn streams_by_default(self) -> bool {
        server_format(self).streams_by_default()
    }

    /// umi-core's client for this format at `connection`, asking for `model_ref`.
    pub fn client(
        self,
        connection: Connection,
        model_ref: ModelRef,
        options: &ClientOptions,
        transport: Arc<dyn Transport>,
        env: Env,
    ) -> Arc<dyn LanguageModel> {
        server_format(self).client(connection, model_ref, options, transport, env)
    }
}

impl Profile {
    /// The header its clients present `key` in (`None`: its API takes no key).
    pub fn credential(self, key: &str) -> Option<(String, String)> {
        server_format(self.format()).credential(self, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_listed_once_and_owns_its_path() {
        for format in WireFormat::ALL {
            assert_eq!(
                WireFormat::ALL.iter().filter(|f| **f == format).count(),
                1,
                "{format:?}"
            );
            let recorded = format!("https://host/mount{}", format.main_path());
            assert_eq!(WireFormat::of_request_path(&recorded), Some(format));
        }
        for profile in Profile::ALL {
            assert!(WireFormat::ALL.contains(&profile.format()), "{profile:?}");
        }
        assert_eq!(WireFormat::of_request_path("/v1/embeddings"), None);
        // Base URLs whose own path is not `/v1` (a regression: these were skipped).
        for recorded in [
            "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
            "/api/paas/v4/chat/completions",
            "/chat/completions",
        ] {
            assert_eq!(
                WireFormat::of_request_path(recorded),
                Some(WireFormat::OpenAiChat),
                "{recorded}"
            );
        }
    }

    #[test]
    fn keys_go_where_each_provider_reads_them() {
        let header = |p: Profile| p.credential("k").map(|(name, _)| name);
        assert_eq!(header(Profile::OpenAi).as_deref(), Some("authorization"));
        assert_eq!(header(Profile::AzureOpenAi).as_deref(), Some("api-key"));
        assert_eq!(header(Profile::Anthropic).as_deref(), Some("x-api-key"));
        assert_eq!(header(Profile::Ollama), None);
        assert_eq!(
            Profile::OpenAi.credential("k").map(|(_, value)| value),
            Some("Bearer k".to_owned())
        );
    }
}
