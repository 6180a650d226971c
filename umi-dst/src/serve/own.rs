//! What `dst serve` answers itself, without a simulation: the model lists a client asks
//! for before it starts, and its own refusals (an unknown path, a full server, a body it
//! could not read, a bad seed or scope), each in the envelope of the provider whose
//! endpoint the request reached, so a client's own error handling reads them.

use super::config::{EndpointSpec, MODEL_DEFAULT, ServeConfig, format_path, profile_and_prefix};
use super::reply::{Body, full, respond};
use crate::network::WireFormat;
use hyper::Response;

/// An error the server itself raises, in the envelope of `format`'s provider (OpenAI's
/// `{"error": {message, type, param, code}}` when no endpoint was reached).
pub(super) fn own_error(
    format: Option<WireFormat>,
    status: u16,
    message: &str,
    extra: Vec<(String, String)>,
) -> Response<Body> {
    let body = format
        .unwrap_or(WireFormat::UNROUTED_ENVELOPE)
        .surface()
        .own_error(status, message);
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    headers.extend(extra);
    respond(
        status,
        headers,
        full(umi_core::canonical_json::to_string(&body)),
    )
}

/// Where `format` lists its models.
pub(super) fn models_path(format: WireFormat) -> &'static str {
    format.surface().models_path()
}

/// The names listed: the served ones, or `umi-sim` when any name is answered.
fn listed(config: &ServeConfig) -> Vec<String> {
    if config.models.is_empty() {
        vec![MODEL_DEFAULT.to_owned()]
    } else {
        config.models.clone()
    }
}

/// The model list a client asks for before it starts, as `format`'s provider lists it.
pub(super) fn models(config: &ServeConfig, format: WireFormat) -> Response<Body> {
    let body = format.surface().model_list(&listed(config));
    respond(
        200,
        vec![("content-type".into(), "application/json".into())],
        full(umi_core::canonical_json::to_string(&body)),
    )
}

/// The 404 for a path no endpoint serves: the flag that would serve it, when it is a
/// path of a format Umi speaks, and the paths that are served.
pub(super) fn unrouted(config: &ServeConfig, path: &str) -> Response<Body> {
    let known: Vec<String> = config
        .endpoints
        .iter()
        .map(|e| format!("{}{}", e.prefix, format_path(e.profile)))
        .collect();
    let hint = unrouted_hint(config, path);
    let message = format!(
        "no endpoint serves {path}{hint}; served: {}",
        known.join(", ")
    );
    own_error(None, 404, &message, Vec::new())
}

/// What would serve `path`, for a path of a format Umi speaks: the `--endpoint` (at the
/// prefix the path has) when no endpoint of that format is served, or the path that is
/// served when one is (the base URL then has a segment too many or too few: the
/// Anthropic SDK given a base URL ending `/v1` asks for `/v1/v1/messages`); else
/// nothing.
pub(super) fn unrouted_hint(config: &ServeConfig, path: &str) -> String {
    if let Some((profile, prefix)) = profile_and_prefix(path) {
        if let Some(served) = config
            .endpoints
            .iter()
            .find(|e| e.profile.format() == profile.format())
        {
            return format!(
                " (the {} endpoint serves {}{}: check the base URL for a segment too many or too few)",
                served.profile.name(),
                served.prefix,
                format_path(served.profile)
            );
        }
        return if prefix.is_empty() {
            format!(" (serve it with `--endpoint {}`)", profile.name())
        } else {
            format!(" (serve it with `--endpoint {}@{prefix}`)", profile.name())
        };
    }
    String::new()
}

/// The 503 (with `retry-after: 1`) for a request past `--concurrency-max`, in `format`'s
/// envelope (none: the server's own, as for `/mcp`).
pub(super) fn at_capacity(config: &ServeConfig, format: Option<WireFormat>) -> Response<Body> {
    let message = format!(
        "the server is at its limit of {} requests in flight; retry shortly",
        config.concurrency_max
    );
    let retry_after = vec![("retry-after".into(), "1".into())];
    own_error(format, 503, &message, retry_after)
}

/// The 404 for a path under `endpoint`'s prefix that no endpoint there serves: the flag
/// that would serve it, and what is served at that prefix.
pub(super) fn no_such_path(
    config: &ServeConfig,
    endpoint: &EndpointSpec,
    rest: &str,
) -> Response<Body> {
    let prefix = if endpoint.prefix.is_empty() {
        "/"
    } else {
        &endpoint.prefix
    };
    let served: Vec<String> = config
        .endpoints
        .iter()
        .filter(|e| e.prefix == endpoint.prefix)
        .map(|e| format!("{}{}", e.prefix, format_path(e.profile)))
        .collect();
    let hint = unrouted_hint(config, rest);
    let message = format!(
        "no such path {rest} under {prefix}{hint}; served there: {}",
        served.join(", ")
    );
    own_error(Some(endpoint.profile.format()), 404, &message, Vec::new())
}

/// Whether `rest` is the main path of a format other than `endpoint`'s (a Responses
/// request reaching a chat endpoint because no Responses endpoint is mounted there).
pub(super) fn belongs_elsewhere(endpoint: &EndpointSpec, rest: &str) -> bool {
    super::config::profile_serving(rest)
        .is_some_and(|profile| profile.format() != endpoint.profile.format())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unserved_path_names_the_flag_that_serves_it() {
        let only_chat = ServeConfig {
            endpoints: vec![EndpointSpec::parse("openai").unwrap()],
            ..ServeConfig::default()
        };
        let table = [
            (
                &only_chat,
                "/v1/responses",
                " (serve it with `--endpoint openai_responses`)",
            ),
            (
                &only_chat,
                "/v1/messages",
                " (serve it with `--endpoint anthropic`)",
            ),
            (
                &only_chat,
                "/api/chat",
                " (serve it with `--endpoint ollama`)",
            ),
            (
                &only_chat,
                "/deepseek/v1/chat/completions",
                " (the openai endpoint serves /v1/chat/completions: check the base URL for a segment too many or too few)",
            ),
            (
                &only_chat,
                "/claude/v1/messages",
                " (serve it with `--endpoint anthropic@/claude`)",
            ),
            (
                &only_chat,
                "/v1beta/models/gemini-2.5-flash:generateContent",
                " (serve it with `--endpoint gemini`)",
            ),
            (&only_chat, "/v2/whatever", ""),
        ];
        for (config, path, hint) in table {
            assert_eq!(unrouted_hint(config, path), hint, "{path}");
        }
        // The Anthropic SDK given a base URL ending `/v1`, on the default server.
        let defaults = ServeConfig::default();
        assert_eq!(
            unrouted_hint(&defaults, "/v1/v1/messages"),
            " (the anthropic endpoint serves /v1/messages: check the base URL for a segment too many or too few)"
        );
    }
}
