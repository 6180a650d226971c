//! AWS Signature Version 4 for a request with its body in hand (AWS docs, "Create a
//! signed AWS API request" and "Elements of an AWS API request signature"):
//!
//! 1. the canonical request: method, the URI path with every segment percent-encoded
//!    again (non-S3 services), the sorted query, the signed headers lowercased and
//!    sorted (`name:value\n` each), their names joined by `;`, and the SHA-256 of the
//!    body, in hex;
//! 2. the string to sign: `AWS4-HMAC-SHA256`, the `x-amz-date` timestamp, the scope
//!    (`yyyymmdd/region/service/aws4_request`) and the canonical request's SHA-256;
//! 3. the signing key: HMAC-SHA256 chained over `"AWS4" + secret`, the date, the region,
//!    the service and `aws4_request`; the signature is the string to sign's HMAC under
//!    it, in hex.
//!
//! HMAC (RFC 2104) is written here over the workspace's `sha2`: the lock has no `hmac`
//! crate, and the construction is two hashes. It is checked against RFC 4231's vectors
//! and the whole signature against AWS's published SigV4 test suite
//! (`aws-sig-v4-test-suite`, shipped in botocore as `tests/unit/auth/aws4_testsuite`).

use sha2::{Digest, Sha256};

use crate::llm::error::LlmError;
use crate::llm::secrets::ApiKey;

/// The algorithm's name, first in the string to sign and in `Authorization`.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// SHA-256's block size, which HMAC pads the key to.
const SHA256_BLOCK_BYTES: usize = 64;

/// The credentials a request is signed with. `Debug` shows the access key id only.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id (`AKIA…`), sent in the clear in the credential scope.
    pub access_key_id: String,
    /// The secret access key, never sent.
    pub secret_access_key: ApiKey,
    /// A temporary credential's session token (`x-amz-security-token`), if any.
    pub session_token: Option<ApiKey>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Credentials from one key string, `ACCESS_KEY_ID:SECRET_ACCESS_KEY` or
    /// `ACCESS_KEY_ID:SECRET_ACCESS_KEY:SESSION_TOKEN` (how a provider config's one
    /// `api_key_env` carries an AWS key pair).
    pub fn parse(key: &str) -> Result<Self, LlmError> {
        let mut parts = key.splitn(3, ':');
        let (Some(id), Some(secret)) = (parts.next(), parts.next()) else {
            return Err(LlmError::Auth {
                status: 401,
                message: "a Bedrock key is `ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]`: \
                          the key given has no `:`"
                    .into(),
            });
        };
        if id.is_empty() || secret.is_empty() {
            return Err(LlmError::Auth {
                status: 401,
                message: "a Bedrock key's access key id and secret must not be empty".into(),
            });
        }
        Ok(Self {
            access_key_id: id.to_owned(),
            secret_access_key: ApiKey::new(secret),
            session_token: parts.next().filter(|t| !t.is_empty()).map(ApiKey::new),
        })
    }
}

/// What a signature is scoped to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope<'a> {
    /// The region (`us-east-1`).
    pub region: &'a str,
    /// The service's signing name (`bedrock`).
    pub service: &'a str,
    /// The request's time, `yyyymmddThhmmssZ` (the `x-amz-date` header).
    pub amz_date: &'a str,
}

/// The parts of a request the signature covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signable<'a> {
    /// `GET`, `POST`.
    pub method: &'a str,
    /// The URI path as sent (already percent-encoded once).
    pub path: &'a str,
    /// The query string as sent, without `?` (empty: none).
    pub query: &'a str,
    /// The headers to sign, any case, any order (`host` and `x-amz-date` among them).
    pub headers: &'a [(String, String)],
    /// The body.
    pub body: &'a [u8],
}

/// `bytes`' SHA-256 in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// HMAC-SHA256 of `message` under `key` (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; SHA256_BLOCK_BYTES];
    if key.len() > SHA256_BLOCK_BYTES {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let mut inner = Sha256::new();
    inner.update(pad(0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(pad(0x5c));
    outer.update(inner.finalize());
    let mut out = [0u8; 32];
    out.copy_from_slice(&outer.finalize());
    out
}

/// Lowercase hex of `bytes`.
pub use crate::hex::lower as hex;

/// One path segment or query part percent-encoded as SigV4 wants: every byte but RFC
/// 3986's unreserved characters.
pub fn uri_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The canonical URI: each segment of the path as sent encoded once more (what every
/// service but S3 signs).
fn canonical_uri(path: &str) -> String {
    if path.is_empty() {
        return "/".into();
    }
    path.split('/')
        .map(uri_encode)
        .collect::<Vec<_>>()
        .join("/")
}

/// The canonical query: `name=value` pairs sorted (by name, then value).
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(&str, &str)> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .collect();
    pairs.sort_unstable();
    let encoded: Vec<String> = pairs
        .into_iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    encoded.join("&")
}

/// The canonical headers and the signed headers' names (`content-type;host;x-amz-date`)
/// (AWS docs, "Create a canonical request": names lowercased and sorted; a value's
/// leading and trailing spaces trimmed and its runs of spaces made one; the values of a
/// header sent more than once joined by `,` in the order sent). A value folded over
/// lines (obsolete line folding) has each line trimmed and the lines joined by `,`, as
/// AWS's test suite canonicalises `get-header-value-multiline`.
fn canonical_headers(headers: &[(String, String)]) -> (String, String) {
    let mut named: Vec<(String, String)> = headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), header_value(value)))
        .collect();
    // Stable: repeats keep the order they were sent in (`get-header-key-duplicate`).
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let mut merged: Vec<(String, String)> = Vec::with_capacity(named.len());
    for (name, value) in named {
        match merged.last_mut() {
            Some((last, values)) if *last == name => {
                values.push(',');
                values.push_str(&value);
            }
            _ => merged.push((name, value)),
        }
    }
    let canonical: String = merged
        .iter()
        .map(|(name, value)| format!("{name}:{value}\n"))
        .collect();
    let names: Vec<&str> = merged.iter().map(|(name, _)| name.as_str()).collect();
    (canonical, names.join(";"))
}

/// One header's value as signed: each line trimmed, inner runs of spaces made one, the
/// lines of a folded value joined by `,`.
fn header_value(value: &str) -> String {
    value
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}

/// The `host` a request to `url` is signed with: its authority without user info, and
/// without the port when it is the scheme's default (443 for `https`, 80 for `http`),
/// as HTTP clients send `Host` and as botocore's `SigV4Auth` signs it
/// (`_canonical_host`: `https://h:443` and `https://h` sign the same).
pub fn canonical_host(url: &str) -> &str {
    let (scheme, after_scheme) = url.split_once("://").unwrap_or(("", url));
    let end = after_scheme
        .find(['/', '?', '#'])
        .unwrap_or(after_scheme.len());
    let authority = &after_scheme[..end];
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" => ":443",
        "http" => ":80",
        _ => return host,
    };
    host.strip_suffix(default_port).unwrap_or(host)
}

/// The canonical request of step 1, and the signed headers' names.
pub fn canonical_request(request: &Signable<'_>) -> (String, String) {
    let (headers, signed) = canonical_headers(request.headers);
    let canonical = format!(
        "{}\n{}\n{}\n{headers}\n{signed}\n{}",
        request.method,
        canonical_uri(request.path),
        canonical_query(request.query),
        sha256_hex(request.body),
    );
    (canonical, signed)
}

/// The `Authorization` header's value for `request`, signed with `secret` as
/// `access_key_id` in `scope`.
pub fn authorization(
    request: &Signable<'_>,
    access_key_id: &str,
    secret: &str,
    scope: &Scope<'_>,
) -> String {
    let (canonical, signed) = canonical_request(request);
    let date = scope.amz_date.get(..8).unwrap_or(scope.amz_date);
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "{ALGORITHM}\n{}\n{credential_scope}\n{}",
        scope.amz_date,
        sha256_hex(canonical.as_bytes())
    );
    let key = signing_key(secret, date, scope.region, scope.service);
    let signature = hex(&hmac_sha256(&key, string_to_sign.as_bytes()));
    format!(
        "{ALGORITHM} Credential={access_key_id}/{credential_scope}, SignedHeaders={signed}, Signature={signature}"
    )
}

/// The signing key of step 3.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let k_date = hmac_sha256(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k_region = hmac_sha256(&k_date, region.as_bytes());
    let k_service = hmac_sha256(&k_region, service.as_bytes());
    hmac_sha256(&k_service, b"aws4_request")
}

/// `unix_ms` as `x-amz-date` writes it (`20150830T123600Z`, UTC).
pub fn amz_date(unix_ms: u64) -> String {
    let seconds = unix_ms / 1_000;
    let days = seconds / 86_400;
    let of_day = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests;
