//! Response headers as providers send them (`Date`, request ids, rate-limit headers,
//! Retry-After in each form), the pages a CDN or proxy answers with, and the refusal of
//! a request without the right key (where the key is read is its format's to say).

use std::time::{Duration, UNIX_EPOCH};

use umi_core::llm::LlmError;
use umi_core::llm::transport::HttpRequest;

use super::ids;
use super::profile::Profile;
use super::shapes::{HeaderSet, RetryAfterForm, ShapeMark};
use super::surface::Surface;
use crate::rng::DeterministicRng;

/// `Date`'s form: an IMF-fixdate, whole seconds (RFC 9110 §5.6.7).
pub(crate) fn http_date(unix_ms: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(unix_ms / 1_000))
}

/// The Retry-After headers of a 429 asking for `wait_ms`, in `form`, and the form's
/// mark. An HTTP date has whole seconds: it is rounded up, never asking for less.
pub(crate) fn retry_after(
    form: RetryAfterForm,
    wait_ms: u64,
    server_now_ms: u64,
) -> (Vec<(String, String)>, &'static str) {
    let seconds = wait_ms.div_ceil(1_000).to_string();
    let headers = match form {
        RetryAfterForm::Absent => Vec::new(),
        RetryAfterForm::Seconds => vec![("retry-after".into(), seconds)],
        RetryAfterForm::MsAndSeconds => vec![
            ("retry-after-ms".into(), wait_ms.to_string()),
            ("retry-after".into(), seconds),
        ],
        RetryAfterForm::HttpDate => {
            let at_ms = server_now_ms.saturating_add(wait_ms).div_ceil(1_000) * 1_000;
            vec![("retry-after".into(), http_date(at_ms))]
        }
    };
    (headers, form.mark())
}

/// The headers `set` adds to a response with `status`.
pub(crate) fn profile_headers(
    set: HeaderSet,
    status: u16,
    server_now_ms: u64,
    rng: &mut DeterministicRng,
) -> Vec<(String, String)> {
    let pair = |name: &str, value: String| (name.to_owned(), value);
    match set {
        // ENVOY chat-streaming.yaml; 401 and 404 carry only the request id
        // (chat-unknown-model.yaml).
        HeaderSet::OpenAi => openai_headers(status, rng),
        // ENVOY azure-chat-basic.yaml: UUID ids, no reset headers.
        HeaderSet::Azure => vec![
            pair("apim-request-id", ids::uuid(rng)),
            pair("x-request-id", ids::uuid(rng)),
            pair("x-ratelimit-limit-requests", "100".into()),
            pair("x-ratelimit-limit-tokens", "100000".into()),
            pair(
                "x-ratelimit-remaining-requests",
                (99 - rng.below(20)).to_string(),
            ),
            pair(
                "x-ratelimit-remaining-tokens",
                (99_998 - rng.below(2_000)).to_string(),
            ),
            pair("x-ms-region", "East US 2".into()),
        ],
        // 195440/nof1.ai #29.
        HeaderSet::DeepSeek => vec![pair("x-ds-trace-id", ids::hex(rng, 32))],
        // OR-DOCS streaming (`X-Generation-Id`), limits (`X-RateLimit-*` on its own 429s,
        // the reset a Unix time in ms).
        HeaderSet::OpenRouter => {
            let mut out = vec![pair(
                "x-generation-id",
                format!("gen-{}-{}", server_now_ms / 1_000, ids::alnum(rng, 20)),
            )];
            if status == 429 {
                let next_minute_ms = (server_now_ms / 60_000 + 1) * 60_000;
                out.extend([
                    pair("x-ratelimit-limit", "20".into()),
                    pair("x-ratelimit-remaining", "0".into()),
                    pair("x-ratelimit-reset", next_minute_ms.to_string()),
                ]);
            }
            out
        }
        // LLAMA server-http.cpp: the default `Server` header.
        HeaderSet::LlamaCpp => vec![pair("server", "llama.cpp".into())],
        HeaderSet::Bare => Vec::new(),
    }
}

/// OpenAI's headers: the request id, then (except on a 401 or a 404) the processing
/// time, the API version and the rate-limit counters, drawn.
fn openai_headers(status: u16, rng: &mut DeterministicRng) -> Vec<(String, String)> {
    let pair = |name: &str, value: String| (name.to_owned(), value);
    let mut out = vec![pair("x-request-id", format!("req_{}", ids::hex(rng, 32)))];
    if !matches!(status, 401 | 404) {
        let remaining = 499 - rng.below(50);
        out.extend([
            pair("openai-processing-ms", (50 + rng.below(2_000)).to_string()),
            pair("openai-version", "2020-10-01".into()),
            pair("x-ratelimit-limit-requests", "500".into()),
            pair("x-ratelimit-limit-tokens", "200000".into()),
            pair("x-ratelimit-remaining-requests", remaining.to_string()),
            pair(
                "x-ratelimit-remaining-tokens",
                (199_996 - rng.below(5_000)).to_string(),
            ),
            pair(
                "x-ratelimit-reset-requests",
                format!("{}ms", 1 + rng.below(600)),
            ),
            pair(
                "x-ratelimit-reset-tokens",
                format!("{}ms", 1 + rng.below(30)),
            ),
            pair("server", "cloudflare".into()),
        ]);
    }
    out
}

/// A page a CDN or reverse proxy answers with instead of the provider.
#[derive(Debug, Clone)]
pub(crate) struct ProxyPage {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) server: &'static str,
    pub(crate) body: Vec<u8>,
    pub(crate) mark: &'static str,
}

/// The short nginx-style page Cloudflare (and nginx itself) sends, CRLF-terminated.
fn nginx_page(status: u16, reason: &str, server: &str) -> Vec<u8> {
    format!(
        "<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n<center><h1>{status} {reason}</h1></center>\r\n<hr><center>{server}</center>\r\n</body>\r\n</html>\r\n"
    )
    .into_bytes()
}

/// One of the pages in front of `profile`, chosen by `choice`. Hosted APIs sit behind
/// Cloudflare ([`Profile::behind_cdn`], its format's to say), which answers 502/524 either with JSON of its own
/// (`{"error":{"code":502,"message":"Bad gateway.","param":null,"type":"cf_bad_gateway"}}`)
/// or with its short HTML page (issues quoting api.openai.com); self-hosted servers sit
/// behind nginx, whose 502 and 504 pages have the same form.
pub(crate) fn proxy_page(profile: Profile, choice: u64) -> ProxyPage {
    let hosted = profile.behind_cdn();
    let gateway_timeout = choice % 2 == 1;
    match (hosted, (choice / 2).is_multiple_of(2)) {
        (true, true) => {
            let (status, body) = if gateway_timeout {
                (
                    524,
                    r#"{"error":{"code":524,"message":"Gateway timeout.","param":null,"type":"cf_gateway_timeout"}}"#,
                )
            } else {
                (
                    502,
                    r#"{"error":{"code":502,"message":"Bad gateway.","param":null,"type":"cf_bad_gateway"}}"#,
                )
            };
            ProxyPage {
                status,
                content_type: "application/json",
                server: "cloudflare",
                body: body.as_bytes().to_vec(),
                mark: "wire.shape.proxy.cloudflare_json",
            }
        }
        (true, false) => ProxyPage {
            status: 502,
            content_type: "text/html",
            server: "cloudflare",
            body: nginx_page(502, "Bad Gateway", "cloudflare"),
            mark: "wire.shape.proxy.cloudflare_html",
        },
        (false, _) => {
            let (status, reason) = if gateway_timeout {
                (504, "Gateway Time-out")
            } else {
                (502, "Bad Gateway")
            };
            ProxyPage {
                status,
                content_type: "text/html",
                server: "nginx",
                body: nginx_page(status, reason, "nginx"),
                mark: "wire.shape.proxy.nginx_html",
            }
        }
    }
}

/// The refusal of a request that does not present `key` where `format`'s server reads
/// it ([`Surface::presented_key`]), or `None` when it does.
///
/// The error's `message` is the presented key masked ([`mask_key`]); its `status` is 401
/// for a wrong key and 403 for none at all. Google answers the two apart (a wrong key is
/// `400 INVALID_ARGUMENT` `API_KEY_INVALID`, a missing one `403 PERMISSION_DENIED`
/// "Method doesn't allow unregistered callers", quoted in googleapis/js-genai #898 and
/// PublicAffairs/openai-gemini #92); the other formats answer both with their 401 and
/// read only the kind.
pub(crate) fn key_refusal(
    format: &dyn Surface,
    request: &HttpRequest,
    key: &str,
) -> Option<LlmError> {
    let presented = format.presented_key(request);
    if presented
        .as_deref()
        .is_some_and(|presented| format.admits_key(presented, key))
    {
        return None;
    }
    Some(LlmError::Auth {
        status: if presented.is_some() { 401 } else { 403 },
        message: mask_key(presented.as_deref().unwrap_or_default()),
    })
}

/// A key as OpenAI echoes it in a 401: its start and its last four characters
/// (`sk-PMafP***…E873`, popjane/free_chatgpt_api #3).
pub(crate) fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 12 {
        return "***".to_owned();
    }
    let head: String = chars[..8].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}***{tail}")
}

/// `url` with the value of a `key=` query parameter masked, for traces, captures and
/// logs (`None`: there is none, the URL is fine as it is).
pub(crate) fn redact_url(url: &str) -> Option<String> {
    let (head, query) = url.split_once('?')?;
    if !query.split('&').any(|pair| pair.starts_with("key=")) {
        return None;
    }
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.strip_prefix("key=") {
            Some(key) => format!("key={}", mask_key(key)),
            None => pair.to_owned(),
        })
        .collect();
    Some(format!("{head}?{}", pairs.join("&")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let now = 1_704_067_200_500;
        assert_eq!(
            retry_after(RetryAfterForm::MsAndSeconds, 1_500, now).0,
            vec![
                ("retry-after-ms".to_owned(), "1500".to_owned()),
                ("retry-after".to_owned(), "2".to_owned())
            ]
        );
        // An HTTP date is rounded up to the second, never shorter than asked.
        let (date, _) = retry_after(RetryAfterForm::HttpDate, 1_200, now);
        assert_eq!(date[0].1, "Mon, 01 Jan 2024 00:00:02 GMT");
        assert!(retry_after(RetryAfterForm::Absent, 1_200, now).0.is_empty());
    }

    #[test]
    fn keys_are_masked() {
        assert_eq!(mask_key("sk-PMafPabcdefghE873"), "sk-PMafP***E873");
        assert_eq!(mask_key("short"), "***");
        let page = proxy_page(Profile::OpenAi, 2);
        assert_eq!(page.status, 502);
        assert!(
            String::from_utf8(page.body)
                .unwrap()
                .contains("<center>cloudflare</center>")
        );
    }
}
