//! A SigV4-signed request re-signed for where it now goes. A signature covers the
//! `host` (AWS docs, "Create a canonical request"), so a proxy that forwards a client's
//! request to another host (`dst record` in front of `bedrock-runtime`) must sign it
//! again, or AWS answers `SignatureDoesNotMatch`. The client's choice is kept: the same
//! signed header names, region and service (its `Credential` scope); the proxy's key
//! pair, the time and the new host are what change.

use super::sigv4::{self, Credentials, Scope, Signable};
use crate::llm::transport::HttpRequest;

/// Headers a signature's own parts travel in, replaced on re-signing.
const SIGNATURE_HEADERS: [&str; 3] = ["authorization", "x-amz-date", "x-amz-security-token"];

/// The region, service and signed header names of a SigV4 `Authorization` value
/// (`AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/<service>/aws4_request,
/// SignedHeaders=<names>, Signature=<hex>`), or `None` when it is not one.
fn scope_of(authorization: &str) -> Option<(String, String, Vec<String>)> {
    let rest = authorization.strip_prefix(sigv4::ALGORITHM)?.trim_start();
    let mut scope = None;
    let mut names = None;
    for part in rest.split(',').map(str::trim) {
        match part.split_once('=') {
            Some(("Credential", value)) => {
                let parts: Vec<&str> = value.split('/').collect();
                if let [_, _, region, service, "aws4_request"] = parts.as_slice() {
                    scope = Some(((*region).to_owned(), (*service).to_owned()));
                }
            }
            Some(("SignedHeaders", value)) => {
                names = Some(value.split(';').map(str::to_ascii_lowercase).collect());
            }
            _ => {}
        }
    }
    let ((region, service), names) = (scope?, names?);
    Some((region, service, names))
}

/// `http`, signed by its client with SigV4 for another host, signed again with
/// `credentials` at `unix_ms` for its URL's host; `false` (and `http` untouched) when it
/// carries no SigV4 signature to renew.
pub fn resign(http: &mut HttpRequest, credentials: &Credentials, unix_ms: u64) -> bool {
    let Some((region, service, mut names)) = http.header("authorization").and_then(scope_of) else {
        return false;
    };
    http.headers
        .retain(|(name, _)| !SIGNATURE_HEADERS.contains(&name.to_ascii_lowercase().as_str()));
    let amz_date = sigv4::amz_date(unix_ms);
    http.headers.push(("x-amz-date".into(), amz_date.clone()));
    // The new date is always signed, whether the client signed its own `x-amz-date` or
    // dated its request with `Date` (SigV4 takes either; the renewed one is ours).
    if !names.iter().any(|name| name == "x-amz-date") {
        names.push("x-amz-date".into());
    }
    names.retain(|name| name != "x-amz-security-token");
    if let Some(token) = &credentials.session_token {
        http.headers
            .push(("x-amz-security-token".into(), token.expose().to_owned()));
        names.push("x-amz-security-token".into());
    }
    let host = sigv4::canonical_host(&http.url).to_owned();
    let mut signed: Vec<(String, String)> = vec![("host".into(), host)];
    signed.extend(http.headers.iter().filter_map(|(name, value)| {
        let name = name.to_ascii_lowercase();
        (name != "host" && names.contains(&name)).then(|| (name, value.clone()))
    }));
    let (path, query) = super::path_and_query(&http.url);
    let signable = Signable {
        method: http.method,
        path,
        query,
        headers: &signed,
        body: &http.body,
    };
    let scope = Scope {
        region: &region,
        service: &service,
        amz_date: &amz_date,
    };
    let authorization = sigv4::authorization(
        &signable,
        &credentials.access_key_id,
        credentials.secret_access_key.expose(),
        &scope,
    );
    http.headers.push(("authorization".into(), authorization));
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::transport::HttpRequest;

    const PAIR: &str = "AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    /// A converse request as boto3 signs it for a proxy on 127.0.0.1:8090 (the test
    /// of `sigv4`'s `a_converse_post_signs_as_boto3_signs_it`, another host).
    fn from_client() -> HttpRequest {
        HttpRequest {
            method: "POST",
            url: "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse".into(),
            body: br#"{"messages": [{"role": "user", "content": [{"text": "Hi"}]}], "inferenceConfig": {"maxTokens": 64}}"#.to_vec(),
            headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("X-Amz-Date".into(), "20240229T115900Z".into()),
            ("User-Agent".into(), "Boto3/1.44.8".into()),
            (
                "Authorization".into(),
                "AWS4-HMAC-SHA256 Credential=AKIDCLIENT/20240229/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=0000000000000000000000000000000000000000000000000000000000000000".into(),
            ),
            ],
        }
    }

    #[test]
    fn a_forwarded_request_is_signed_for_its_new_host_as_boto3_would_sign_it() {
        let mut http = from_client();
        let credentials = Credentials::parse(PAIR).unwrap();
        // 2024-02-29T12:00:00Z.
        assert!(resign(&mut http, &credentials, 1_709_208_000_000));
        // What boto3 1.44.8 signs for this request sent straight to bedrock-runtime
        // (`sigv4`'s boto3 vector).
        assert_eq!(
            http.header("authorization"),
            Some(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240229/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=fa685657b8343deae1a45fc1541d63c2d531d63981d8d4a35783af319698a020"
            )
        );
        assert_eq!(http.header("x-amz-date"), Some("20240229T120000Z"));
        let dates = http
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("x-amz-date"))
            .count();
        assert_eq!(dates, 1, "the client's date is replaced");
    }

    #[test]
    fn a_request_without_a_sigv4_signature_is_left_as_it_is() {
        let credentials = Credentials::parse(PAIR).unwrap();
        for authorization in [
            None,
            Some("Bearer sk-abc"),
            Some("AWS4-HMAC-SHA256 nonsense"),
        ] {
            let mut http = from_client();
            http.headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
            if let Some(value) = authorization {
                http.headers.push(("Authorization".into(), value.into()));
            }
            let before = http.clone();
            assert!(!resign(&mut http, &credentials, 0), "{authorization:?}");
            assert_eq!(http, before, "{authorization:?}");
        }
    }

    /// A client that dated its request with `Date` signed no `x-amz-date`; the renewed
    /// one is signed all the same (review of issue 42's second stop: it went unsigned).
    #[test]
    fn the_new_date_is_signed_when_the_client_signed_date_instead() {
        let mut http = from_client();
        http.headers.retain(|(n, _)| {
            !n.eq_ignore_ascii_case("x-amz-date") && !n.eq_ignore_ascii_case("authorization")
        });
        http.headers
            .push(("Date".into(), "Thu, 29 Feb 2024 11:59:00 GMT".into()));
        http.headers.push((
            "Authorization".into(),
            "AWS4-HMAC-SHA256 Credential=AKIDCLIENT/20240229/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;date;host, Signature=00".into(),
        ));
        let credentials = Credentials::parse(PAIR).unwrap();
        assert!(resign(&mut http, &credentials, 1_709_208_000_000));
        let authorization = http.header("authorization").unwrap();
        assert!(
            authorization.contains("SignedHeaders=content-type;date;host;x-amz-date,"),
            "{authorization}"
        );
    }

    #[test]
    fn a_session_token_is_sent_and_signed() {
        let mut http = from_client();
        let credentials = Credentials::parse(&format!("{PAIR}:token-1")).unwrap();
        assert!(resign(&mut http, &credentials, 1_709_208_000_000));
        assert_eq!(http.header("x-amz-security-token"), Some("token-1"));
        let authorization = http.header("authorization").unwrap();
        assert!(
            authorization
                .contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,"),
            "{authorization}"
        );
    }
}
