//! What `dst serve` serves: the session seed, the endpoints (a profile at a path prefix),
//! the models, the faults, the time scale and the server's limits; each value checked,
//! with an error naming the flag and the value.

use std::net::SocketAddr;
use std::sync::Arc;

use super::error::ServeError;
use crate::fault::FaultConfig;
use crate::network::{Profile, WireFormat};

/// Requests in flight at once by default; more get a 503 with Retry-After.
pub const CONCURRENCY_MAX_DEFAULT: usize = 64;

/// The largest request body by default, in bytes; larger ones get a 413.
pub const BODY_BYTES_MAX_DEFAULT: usize = 8 * 1024 * 1024;

/// The largest `--time-scale`: beyond it a stall would hold a connection for days.
pub const TIME_SCALE_MAX: f64 = 100.0;

/// Wall time a client has to send its request (headers and body), in ms.
pub const CLIENT_READ_TIMEOUT_MS: u64 = 30_000;

/// The model a request that names none is answered as, and the one the model lists
/// show when any name is answered.
pub const MODEL_DEFAULT: &str = "umi-sim";

/// An endpoint: a provider's profile (which fixes its wire format) at a path prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSpec {
    /// The provider whose bytes it sends.
    pub profile: Profile,
    /// Where it is mounted: `""` (the root) or `/name`, without a trailing slash.
    pub prefix: String,
}

impl EndpointSpec {
    /// The paths its clients call, under the prefix (`/v1/chat/completions`).
    pub fn api_root(&self) -> &'static str {
        self.profile.format().api_root()
    }

    /// Whether `rest` (a path under the prefix) is a path of this endpoint's format's
    /// main operation, as the format routes it (Gemini's carry the model and method).
    pub fn owns_path(&self, rest: &str) -> bool {
        self.profile.format().routes(rest)
    }

    /// Parses `PROFILE` or `PROFILE@/PREFIX` (`deepseek_chat@/deepseek`).
    pub fn parse(text: &str) -> Result<Self, ServeError> {
        let (name, prefix) = match text.split_once('@') {
            Some((name, prefix)) => (name, prefix),
            None => (text, ""),
        };
        let profile = Profile::from_name(name).ok_or_else(|| ServeError::Flag {
            flag: "--endpoint",
            value: text.to_owned(),
            reason: format!(
                "unknown profile {name:?}; known: {}",
                Profile::ALL.map(Profile::name).join(", ")
            ),
        })?;
        let prefix = prefix.trim_end_matches('/');
        let valid = prefix.is_empty()
            || (prefix.starts_with('/')
                && prefix[1..].split('/').all(|part| {
                    !part.is_empty()
                        && part
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
                }));
        if !valid {
            return Err(ServeError::Flag {
                flag: "--endpoint",
                value: text.to_owned(),
                reason: "a prefix is `/name` (letters, digits, `-`, `_`, `.`)".into(),
            });
        }
        let own = ["/umi", "/seed", "/scope"];
        if own
            .iter()
            .any(|own| prefix == *own || prefix.starts_with(&format!("{own}/")))
        {
            return Err(ServeError::Flag {
                flag: "--endpoint",
                value: text.to_owned(),
                reason: "`/umi`, `/seed` and `/scope` are the server's own paths".into(),
            });
        }
        Ok(Self {
            profile,
            prefix: prefix.to_owned(),
        })
    }
}

/// Everything `dst serve` needs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeConfig {
    /// The session seed (a request may name its own: `x-umi-seed`, `/seed/{n}/…`).
    pub seed: u64,
    /// The endpoints, each at its own prefix.
    pub endpoints: Vec<EndpointSpec>,
    /// The models served; a request for another gets the provider's "model not found".
    /// Empty (the default): any name is answered, and the lists show [`MODEL_DEFAULT`].
    pub models: Vec<String>,
    /// The faults in force.
    pub faults: Vec<FaultConfig>,
    /// Swarm mode: the seed of each request switches the faults on or off and scales
    /// them.
    pub swarm: bool,
    /// Real seconds per simulated second (0: no waits).
    pub time_scale: f64,
    /// Where to listen.
    pub bind: SocketAddr,
    /// Requests in flight at most.
    pub concurrency_max: usize,
    /// The largest request body, in bytes.
    pub body_bytes_max: usize,
    /// The key clients must present, if any (an `ApiKey`: `Debug` prints `[REDACTED]`).
    pub api_key: Option<umi_core::llm::secrets::ApiKey>,
    /// The simulated MCP server at `/mcp` (`--mcp-tools FILE`; a built-in set by default).
    pub mcp: super::mcp_tools::McpToolsSpec,
    /// A cassette to answer from (`--cassette FILE`): each endpoint replays it, paths
    /// matched below the endpoint's prefix, the n-th identical request in a scope getting
    /// the n-th recorded answer ([`crate::network::replay`]).
    pub cassette: Option<Arc<crate::network::Replay>>,
    /// Origins `/mcp` accepts besides local ones (`--allow-origin`; `*`: every origin).
    /// A request whose `Origin` is neither gets 403, as MCP 2025-11-25 requires
    /// ([`crate::mcp::origin_allowed`]).
    pub allowed_origins: Vec<String>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            endpoints: DEFAULT_PROFILES
                .into_iter()
                .map(|profile| EndpointSpec {
                    profile,
                    prefix: String::new(),
                })
                .collect(),
            models: Vec::new(),
            faults: Vec::new(),
            swarm: false,
            time_scale: 0.0,
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            concurrency_max: CONCURRENCY_MAX_DEFAULT,
            body_bytes_max: BODY_BYTES_MAX_DEFAULT,
            api_key: None,
            mcp: super::mcp_tools::McpToolsSpec::default(),
            cassette: None,
            allowed_origins: Vec::new(),
        }
    }
}

impl ServeConfig {
    /// Checks the config: endpoints whose paths would collide, a time scale out of range,
    /// no models, zero limits, an aimed fault rule that reaches no operation this server
    /// asks (a tool it does not serve, a misspelt MCP method).
    pub fn validate(&self) -> Result<(), ServeError> {
        let flag = |flag: &'static str, value: String, reason: &str| ServeError::Flag {
            flag,
            value,
            reason: reason.to_owned(),
        };
        if self.endpoints.is_empty() {
            return Err(flag("--endpoint", String::new(), "at least one endpoint"));
        }
        if let Err(reason) = self.mcp.check() {
            return Err(flag("--mcp-tools", self.mcp.name.clone(), &reason));
        }
        for (index, endpoint) in self.endpoints.iter().enumerate() {
            let path = |e: &EndpointSpec| format!("{}{}", e.prefix, format_path(e.profile));
            if let Some(other) = self.endpoints[..index]
                .iter()
                .find(|o| path(o) == path(endpoint))
            {
                return Err(flag(
                    "--endpoint",
                    format!("{}{}", endpoint.profile, endpoint.prefix),
                    &format!(
                        "its path {} is taken by {}; mount it elsewhere with `{}@/{}`",
                        path(endpoint),
                        other.profile,
                        endpoint.profile,
                        endpoint.profile
                    ),
                ));
            }
        }
        if !(self.time_scale.is_finite() && (0.0..=TIME_SCALE_MAX).contains(&self.time_scale)) {
            return Err(flag(
                "--time-scale",
                self.time_scale.to_string(),
                &format!("a number from 0 to {TIME_SCALE_MAX}"),
            ));
        }
        if self.models.iter().any(String::is_empty) {
            return Err(flag(
                "--model",
                self.models.join(","),
                "model names are not empty",
            ));
        }
        if self.concurrency_max == 0 {
            return Err(flag("--concurrency-max", "0".into(), "at least 1"));
        }
        if self.body_bytes_max == 0 {
            return Err(flag("--body-bytes-max", "0".into(), "at least 1"));
        }
        let tools: Vec<&str> = self.mcp.tools.iter().map(|t| t.name.as_str()).collect();
        if let Err((rule, reason)) = super::aim::check(&self.faults, &tools) {
            return Err(flag("--faults", rule, &reason));
        }
        if let Some(bad) = self.allowed_origins.iter().find(|o| !is_origin(o)) {
            return Err(flag(
                "--allow-origin",
                bad.clone(),
                "an origin is `scheme://host[:port]` (no path), or `*` for any",
            ));
        }
        Ok(())
    }

    /// The config a request is answered with when its scope (its run) was asked
    /// `earlier` operations before it: each ordinal fault rule moved past what it
    /// matched there (`aim.rs`). `None` when nothing changes.
    pub(crate) fn after_earlier(
        &self,
        earlier: &std::collections::BTreeMap<String, u64>,
    ) -> Option<Arc<ServeConfig>> {
        let faults = super::aim::rules_after(&self.faults, earlier)?;
        Some(Arc::new(ServeConfig {
            faults,
            ..self.clone()
        }))
    }
}

/// Whether `text` is `*` or an origin as browsers send it: `scheme://host[:port]`.
fn is_origin(text: &str) -> bool {
    if text == "*" {
        return true;
    }
    let Some((scheme, authority)) = text.trim_end_matches('/').split_once("://") else {
        return false;
    };
    !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        && !authority.is_empty()
        && !authority.contains(['/', '?', '#', ' ', '@'])
}

/// The profile whose format's main path `path` ends with (the format's reference
/// profile: `openai`, `openai_responses`, `anthropic`, `ollama`, `gemini`, `bedrock`), if
/// any.
pub fn profile_serving(path: &str) -> Option<Profile> {
    profile_and_prefix(path).map(|(profile, _)| profile)
}

/// The profile whose format's main path `path` ends with, and what comes before that
/// path (the prefix a client's base URL had).
pub(crate) fn profile_and_prefix(path: &str) -> Option<(Profile, &str)> {
    DEFAULT_PROFILES.into_iter().find_map(|profile| {
        let at = profile.format().operation_start(path)?;
        Some((profile, &path[..at]))
    })
}

/// The endpoints served with no `--endpoint`: every format at its standard path, at the
/// root (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`, `/api/chat`,
/// `/v1beta/models/{model}:generateContent`, `/model/{modelId}/converse`):
/// each format's reference profile, in registry order, so a format added to the
/// registry is served here with no other edit.
pub const DEFAULT_PROFILES: [Profile; WireFormat::ALL.len()] = WireFormat::REFERENCE_PROFILES;

/// The path of `profile`'s main operation (`/v1/chat/completions`).
pub fn format_path(profile: Profile) -> String {
    profile.format().main_path()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_key() {
        let config = ServeConfig {
            api_key: Some("sk-serve-secret-5521".into()),
            ..ServeConfig::default()
        };
        let printed = format!("{config:?}");
        assert!(!printed.contains("sk-serve-secret-5521"), "{printed}");
        assert!(printed.contains("[REDACTED]"), "{printed}");
    }

    #[test]
    fn endpoints_parse_and_bad_ones_are_named() {
        assert_eq!(
            EndpointSpec::parse("deepseek_chat@/deepseek/").unwrap(),
            EndpointSpec {
                profile: Profile::DeepSeekChat,
                prefix: "/deepseek".into()
            }
        );
        assert_eq!(EndpointSpec::parse("ollama").unwrap().prefix, "");
        for bad in [
            "gpt",
            "openai@deepseek",
            "openai@/a b",
            "openai@/umi",
            "openai@/scope",
            "openai@/seed/1",
            "openai@//x",
        ] {
            let error = EndpointSpec::parse(bad).unwrap_err().to_string();
            assert!(error.starts_with(&format!("--endpoint {bad:?}")), "{error}");
        }
    }

    #[test]
    fn colliding_endpoints_and_bad_limits_are_refused() {
        let mut config = ServeConfig::default();
        config.validate().unwrap();
        config
            .endpoints
            .push(EndpointSpec::parse("deepseek_chat").unwrap());
        assert_eq!(
            config.endpoints.len(),
            WireFormat::ALL.len() + 1,
            "every format, then DeepSeek"
        );
        let error = config.validate().unwrap_err().to_string();
        assert!(
            error.contains("its path /v1/chat/completions is taken by openai"),
            "{error}"
        );
        let mut config = ServeConfig {
            time_scale: f64::NAN,
            ..ServeConfig::default()
        };
        assert!(
            config
                .validate()
                .unwrap_err()
                .to_string()
                .starts_with("--time-scale")
        );
        config.time_scale = 1.0;
        for bad in ["evil.example", "https://evil.example/path", "https://", ""] {
            config.allowed_origins = vec![bad.to_owned()];
            let error = config.validate().unwrap_err().to_string();
            assert!(error.starts_with("--allow-origin"), "{bad}: {error}");
        }
        config.allowed_origins = vec!["*".into(), "https://app.example:8443/".into()];
        config.validate().unwrap();
        config.concurrency_max = 0;
        assert!(
            config
                .validate()
                .unwrap_err()
                .to_string()
                .starts_with("--concurrency-max")
        );
    }
}
