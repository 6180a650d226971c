//! SigV4 against AWS's published test suite (`aws-sig-v4-test-suite`), RFC 4231's HMAC
//! vectors, AWS's signing-key example and a converse request as boto3 signs it.

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
            canonical_host("https://bedrock-runtime.us-east-1.amazonaws.com:443/model").to_owned(),
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
