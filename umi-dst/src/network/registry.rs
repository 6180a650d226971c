//! The registry of wire formats: the one place a [`WireFormat`] is matched to the module
//! that speaks it (`server_format`), and every fact the rest of SimNetwork and `dst
//! serve` reads through it (a format's paths, its client, its embeddings endpoint, a
//! profile's coverage marks). It sits above the formats, which never reach back to it:
//! a format knows only itself and the shared layers below
//! (docs/adr/0009-one-seam-per-wire-format.md; ARCHITECTURE.md, "Layers").

use std::sync::Arc;

use umi_core::env::Env;
use umi_core::llm::transport::Transport;
use umi_core::llm::wire::reader::Decoded;
use umi_core::llm::{Connection, LanguageModel, ModelRef};

use super::clients::ClientOptions;
use super::embed::EmbedWire;
use super::format::ServerFormat;
use super::profile::{Profile, WireFormat};
use super::surface::Surface;

/// The server side of `format`: the registration of every format.
pub(crate) fn server_format(format: WireFormat) -> &'static dyn ServerFormat {
    match format {
        WireFormat::OpenAiChat => &super::chat::ChatFormat,
        WireFormat::Ollama => &super::ollama::OllamaFormat,
        WireFormat::AnthropicMessages => &super::anthropic::AnthropicFormat,
        WireFormat::OpenAiResponses => &super::responses::ResponsesFormat,
        WireFormat::Gemini => &super::gemini::GeminiFormat,
        WireFormat::Bedrock => &super::bedrock::BedrockFormat,
    }
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

    /// A whole (non-streamed) response body read by its client's parser.
    pub fn parse_as_client(
        self,
        body: &str,
    ) -> Result<umi_core::llm::CompletionResponse, umi_core::llm::LlmError> {
        self.surface().parse_as_client(body)
    }

    /// The format whose envelope a server's own error takes when the request reached no
    /// endpoint: OpenAI's, the one most clients read.
    #[cfg_attr(
        not(feature = "serve"),
        allow(dead_code, reason = "read by `dst serve`")
    )]
    pub(crate) const UNROUTED_ENVELOPE: WireFormat = WireFormat::OpenAiChat;

    /// Every format, in registry order (the order `dst serve` lists its default
    /// endpoints in: [`WireFormat::REFERENCE_PROFILES`]).
    pub const ALL: [WireFormat; 6] = [
        WireFormat::OpenAiChat,
        WireFormat::OpenAiResponses,
        WireFormat::AnthropicMessages,
        WireFormat::Ollama,
        WireFormat::Gemini,
        WireFormat::Bedrock,
    ];

    /// Each format's reference provider ([`WireFormat::reference_profile`]), in
    /// registry order: what `dst serve` serves with no `--endpoint`.
    pub const REFERENCE_PROFILES: [Profile; WireFormat::ALL.len()] = {
        let mut profiles = [Profile::OpenAi; WireFormat::ALL.len()];
        let mut at = 0;
        while at < profiles.len() {
            profiles[at] = WireFormat::ALL[at].reference_profile();
            at += 1;
        }
        profiles
    };

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

/// What a profile's server does, each its format's to say (`Surface`): the registry
/// asks the format, the profile's table answers where the format has one per profile.
impl Profile {
    fn surface(self) -> &'static dyn Surface {
        self.format().surface()
    }

    /// The coverage marks of the shapes this profile can send (`Surface::shape_marks`:
    /// the knobs of `ChatShapes::marks`, or the format's own list).
    pub fn shape_marks(self) -> Vec<&'static str> {
        self.surface().shape_marks(self)
    }

    /// Whether its models stream their reasoning, so SimLLM is asked to reason
    /// (`Surface::streams_reasoning`).
    pub fn streams_reasoning(self) -> bool {
        self.surface().streams_reasoning(self)
    }

    /// Whether its server ever answers 429; local servers queue instead
    /// (`Surface::rate_limits`).
    pub fn rate_limits(self) -> bool {
        self.surface().rate_limits(self)
    }

    /// Whether its server sits behind a CDN whose own pages a client may get
    /// (`Surface::behind_cdn`).
    pub fn behind_cdn(self) -> bool {
        self.surface().behind_cdn(self)
    }

    /// Whether its server refuses a model it does not serve (`Surface::checks_model`).
    pub fn checks_model(self) -> bool {
        self.surface().checks_model(self)
    }

    /// Whether the simulated server answers `tool_choice: "required"`, so a workload
    /// may ask for it (`Surface::serves_required_tool_choice`).
    pub fn serves_required_tool_choice(self) -> bool {
        self.surface().serves_required_tool_choice(self)
    }

    /// Whether its server's 404 for a model it does not serve has a public source
    /// (`Surface::model_not_found_sourced`).
    pub fn model_not_found_sourced(self) -> bool {
        self.surface().model_not_found_sourced(self)
    }

    /// The header its clients present `key` in (`None`: its API takes no key).
    pub fn credential(self, key: &str) -> Option<(String, String)> {
        self.surface().credential(self, key)
    }
}

/// The embeddings endpoint of `profile`'s server, if it has one.
pub(crate) fn embed_wire(profile: Profile) -> Option<&'static dyn EmbedWire> {
    if !profile.serves_embeddings() {
        return None;
    }
    profile.format().surface().embeddings()
}

/// Whether `rest` (a path below a server's root) is the embeddings path of a server of
/// `format` whose API is under `api_root` (`/v1`): `dst serve`'s routing.
#[cfg(feature = "serve")]
pub(crate) fn serves(profile: Profile, api_root: &str, rest: &str) -> bool {
    embed_wire(profile).is_some_and(|wire| {
        rest.strip_prefix(api_root)
            .is_some_and(|below| wire.routes(below))
    })
}

/// Whether `path` (a recorded request's path, without its query) ends in `profile`'s
/// embeddings path, whatever the base URL's own path before it.
pub fn ends_in_embeddings(profile: Profile, path: &str) -> bool {
    embed_wire(profile).is_some_and(|wire| {
        path.char_indices()
            .filter(|(_, c)| *c == '/')
            .any(|(at, _)| wire.routes(&path[at..]))
    })
}

/// The client for `profile`'s server at `base_url` (as the endpoint was given it),
/// asking for `model_ref`.
pub fn client_for(
    profile: Profile,
    base_url: &str,
    model_ref: ModelRef,
    options: &ClientOptions,
    transport: Arc<dyn Transport>,
    env: Env,
) -> Arc<dyn LanguageModel> {
    let mut connection = Connection::new(base_url);
    connection.api_key = options.api_key.clone();
    if let Some(timeout) = options.timeout {
        connection = connection.with_timeout(timeout);
    }
    profile
        .format()
        .client(connection, model_ref, options, transport, env)
}

/// A base URL for `profile`'s server on host `host`, as its clients expect it: with
/// `/v1` for the OpenAI formats, without for Ollama's native API and Anthropic's (whose
/// clients add their own paths).
pub fn base_url_for(profile: Profile, host: &str) -> String {
    format!("https://{host}{}", profile.format().api_root())
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
