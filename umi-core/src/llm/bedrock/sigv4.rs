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
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

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
mod tests {
    use super::*;

    /// AWS's test-suite credentials and scope (`aws-sig-v4-test-suite`, every case).
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    const SCOPE: Scope<'static> = Scope {
        region: "us-east-1",
        service: "service",
        amz_date: "20150830T123600Z",
    };

    /// One case of AWS's SigV4 test suite (`aws-sig-v4-test-suite`, 2015-08-30: each
    /// case's `.req` and its published `.authz`), data only.
    struct Vector {
        name: &'static str,
        method: &'static str,
        query: &'static str,
        /// The headers besides `Host` and `X-Amz-Date`, as the `.req` sends them.
        headers: &'static [(&'static str, &'static str)],
        body: &'static str,
        signed_headers: &'static str,
        signature: &'static str,
    }

    /// Table: the suite's cases this signer is held to, GET and POST.
    const VECTORS: [Vector; 12] = [
        Vector {
            name: "get-vanilla",
            method: "GET",
            query: "",
            headers: &[],
            body: "",
            signed_headers: "host;x-amz-date",
            signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        },
        Vector {
            name: "get-vanilla-query-order-key-case",
            method: "GET",
            query: "Param2=value2&Param1=value1",
            headers: &[],
            body: "",
            signed_headers: "host;x-amz-date",
            signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
        },
        Vector {
            name: "get-header-key-duplicate",
            method: "GET",
            query: "",
            headers: &[
                ("My-Header1", "value2"),
                ("My-Header1", "value2"),
                ("My-Header1", "value1"),
            ],
            body: "",
            signed_headers: "host;my-header1;x-amz-date",
            signature: "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
        },
        Vector {
            name: "get-header-value-multiline",
            method: "GET",
            query: "",
            headers: &[("My-Header1", "value1\n  value2\n     value3")],
            body: "",
            signed_headers: "host;my-header1;x-amz-date",
            signature: "ba17b383a53190154eb5fa66a1b836cc297cc0a3d70a5d00705980573d8ff790",
        },
        Vector {
            name: "get-header-value-trim",
            method: "GET",
            query: "",
            headers: &[("My-Header1", " value1"), ("My-Header2", " \"a   b   c\"")],
            body: "",
            signed_headers: "host;my-header1;my-header2;x-amz-date",
            signature: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
        },
        Vector {
            name: "get-header-value-order",
            method: "GET",
            query: "",
            headers: &[
                ("My-Header1", "value4"),
                ("My-Header1", "value1"),
                ("My-Header1", "value3"),
                ("My-Header1", "value2"),
            ],
            body: "",
            signed_headers: "host;my-header1;x-amz-date",
            signature: "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01",
        },
        Vector {
            name: "post-vanilla",
            method: "POST",
            query: "",
            headers: &[],
            body: "",
            signed_headers: "host;x-amz-date",
            signature: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
        },
        Vector {
            name: "post-vanilla-query",
            method: "POST",
            query: "Param1=value1",
            headers: &[],
            body: "",
            signed_headers: "host;x-amz-date",
            signature: "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
        },
        Vector {
            name: "post-header-key-sort",
            method: "POST",
            query: "",
            headers: &[("My-Header1", "value1")],
            body: "",
            signed_headers: "host;my-header1;x-amz-date",
            signature: "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c",
        },
        Vector {
            name: "post-header-value-case",
            method: "POST",
            query: "",
            headers: &[("My-Header1", "VALUE1")],
            body: "",
            signed_headers: "host;my-header1;x-amz-date",
            signature: "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d",
        },
        Vector {
            name: "post-x-www-form-urlencoded",
            method: "POST",
            query: "",
            headers: &[("Content-Type", "application/x-www-form-urlencoded")],
            body: "Param1=value1",
            signed_headers: "content-type;host;x-amz-date",
            signature: "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
        },
        // `post-header-key-case` sends `HOST`/`X-AMZ-DATE`-cased names: the same
        // signature as `post-vanilla`.
        Vector {
            name: "post-header-key-case",
            method: "POST",
            query: "",
            headers: &[],
            body: "",
            signed_headers: "host;x-amz-date",
            signature: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
        },
    ];

    fn signed(vector: &Vector) -> String {
        let host = if vector.name == "post-header-key-case" {
            "HOST"
        } else {
            "Host"
        };
        let mut headers = vec![
            (host.to_owned(), "example.amazonaws.com".to_owned()),
            ("X-Amz-Date".to_owned(), "20150830T123600Z".to_owned()),
        ];
        headers.extend(
            vector
                .headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
        );
        let request = Signable {
            method: vector.method,
            path: "/",
            query: vector.query,
            headers: &headers,
            body: vector.body.as_bytes(),
        };
        authorization(&request, "AKIDEXAMPLE", SECRET, &SCOPE)
    }

    #[test]
    fn the_aws_test_suite_signatures() {
        for vector in &VECTORS {
            assert_eq!(
                signed(vector),
                format!(
                    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders={}, Signature={}",
                    vector.signed_headers, vector.signature
                ),
                "{}",
                vector.name
            );
        }
    }

    #[test]
    fn the_payload_is_hashed_into_the_canonical_request() {
        // `post-x-www-form-urlencoded.creq`: the body's SHA-256 ends the request.
        let headers = vec![
            (
                "Content-Type".to_owned(),
                "application/x-www-form-urlencoded".to_owned(),
            ),
            ("Host".to_owned(), "example.amazonaws.com".to_owned()),
            ("X-Amz-Date".to_owned(), "20150830T123600Z".to_owned()),
        ];
        let request = Signable {
            method: "POST",
            path: "/",
            query: "",
            headers: &headers,
            body: b"Param1=value1",
        };
        let (canonical, signed) = canonical_request(&request);
        assert_eq!(
            canonical,
            "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"
        );
        assert_eq!(signed, "content-type;host;x-amz-date");
        // Another body, another signature.
        let other = Signable {
            body: b"Param1=value2",
            ..request.clone()
        };
        assert_ne!(
            authorization(&request, "AKIDEXAMPLE", SECRET, &SCOPE),
            authorization(&other, "AKIDEXAMPLE", SECRET, &SCOPE)
        );
    }

    #[test]
    fn a_converse_post_signs_as_boto3_signs_it() {
        // boto3 1.44.8's `bedrock-runtime` `converse(modelId=..., messages=[{"role":
        // "user", "content": [{"text": "Hi"}]}], inferenceConfig={"maxTokens": 64})`,
        // its clock held at 2024-02-29T12:00:00Z, the suite's key pair: the request it
        // sent (captured in `before-send`) and the `Authorization` it signed it with.
        let headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "host".to_owned(),
                canonical_host("https://bedrock-runtime.us-east-1.amazonaws.com:443/model")
                    .to_owned(),
            ),
            ("X-Amz-Date".to_owned(), "20240229T120000Z".to_owned()),
        ];
        let body = br#"{"messages": [{"role": "user", "content": [{"text": "Hi"}]}], "inferenceConfig": {"maxTokens": 64}}"#;
        let request = Signable {
            method: "POST",
            path: "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse",
            query: "",
            headers: &headers,
            body,
        };
        let scope = Scope {
            region: "us-east-1",
            service: "bedrock",
            amz_date: "20240229T120000Z",
        };
        assert_eq!(
            authorization(&request, "AKIDEXAMPLE", SECRET, &scope),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240229/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=fa685657b8343deae1a45fc1541d63c2d531d63981d8d4a35783af319698a020"
        );
    }

    #[test]
    fn hosts_sign_without_their_schemes_default_port() {
        // Table: the URL, the host signed (botocore signs `https://h:443` as `https://h`).
        for (url, host) in [
            (
                "https://bedrock-runtime.us-east-1.amazonaws.com",
                "bedrock-runtime.us-east-1.amazonaws.com",
            ),
            (
                "https://bedrock-runtime.us-east-1.amazonaws.com:443/model/x",
                "bedrock-runtime.us-east-1.amazonaws.com",
            ),
            ("http://127.0.0.1:80/model", "127.0.0.1"),
            ("http://127.0.0.1:443/model", "127.0.0.1:443"),
            ("https://h:8443?x=1", "h:8443"),
            ("https://user@h:443/", "h"),
            ("HTTPS://h:443", "h"),
        ] {
            assert_eq!(canonical_host(url), host, "{url}");
        }
    }

    #[test]
    fn the_aws_docs_signing_key_example() {
        // AWS docs, "Examples of how to derive a signing key for Signature Version 4".
        let key = signing_key(SECRET, "20120215", "us-east-1", "iam");
        assert_eq!(
            hex(&key),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
        );
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 (a short key) and 6 (a key longer than the block, hashed first).
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn a_model_id_with_a_colon_is_encoded_twice_in_the_canonical_uri() {
        assert_eq!(
            canonical_uri("/model/anthropic.claude-v2%3A1/converse"),
            "/model/anthropic.claude-v2%253A1/converse"
        );
    }

    #[test]
    fn amz_dates() {
        assert_eq!(amz_date(0), "19700101T000000Z");
        assert_eq!(amz_date(1_440_938_160_000), "20150830T123600Z");
        assert_eq!(amz_date(1_709_208_000_999), "20240229T120000Z");
    }

    #[test]
    fn credentials_parse_or_say_why_not() {
        let credentials = Credentials::parse("AKID:secret/x:token").unwrap();
        assert_eq!(credentials.access_key_id, "AKID");
        assert_eq!(credentials.secret_access_key.expose(), "secret/x");
        assert_eq!(
            credentials.session_token.as_ref().map(ApiKey::expose),
            Some("token")
        );
        assert!(!format!("{credentials:?}").contains("secret/x"));
        for bad in ["no-colon", ":secret", "AKID:"] {
            assert!(
                matches!(Credentials::parse(bad), Err(LlmError::Auth { .. })),
                "{bad}"
            );
        }
    }
}
