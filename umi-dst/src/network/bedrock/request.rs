//! A Converse request read as Bedrock reads it: the SigV4 `Authorization` header's shape,
//! the model in the path, and the body's messages, system prompt, inference and tool
//! configuration (BEDROCK-API `Converse`, "Request Syntax") into Umi's request.
//!
//! The signature is checked for shape, not recomputed: `AWS4-HMAC-SHA256
//! Credential=<access key id>/<yyyymmdd>/<region>/bedrock/aws4_request,
//! SignedHeaders=<names, lowercase, sorted, `;`-joined, host and x-amz-date among them>,
//! Signature=<64 lowercase hex>` with an `x-amz-date` of `yyyymmddThhmmssZ` whose date is
//! the scope's (AWS docs, "Create a signed AWS API request", "Elements of an AWS API
//! request signature"). A request without one is refused as Bedrock refuses it
//! (`MissingAuthenticationTokenException`, 403), a malformed one as
//! `IncompleteSignatureException` (400; AWS "Common Errors": IncompleteSignature, "The
//! request signature does not conform to AWS standards", HTTP 400; a Coral service's
//! answer in aws/aws-sdk-go #289 and iann0036/cloud9-sync #10, `statusCode: 400`) whatever
//! key it is signed with: AWS reads the signature's form before it looks its access key
//! id up (a key id with a stray space is answered "not a valid key=value pair", never
//! "The security token included in the request is invalid", in both threads), so the
//! key check defers a signature out of shape to the parser ([`UNREADABLE_SIGNATURE`]).

use serde_json::{Map, Value};
use umi_core::llm::transport::HttpRequest;
use umi_core::llm::{
    CompletionRequest, Message, OutputSchema, ToolCall, ToolChoice, ToolDefinition,
};

use crate::network::format::{Parsed, RequestError};

/// The `param` of a refusal for the request's signature (the responder answers it as an
/// authentication failure, not a body's).
pub(crate) const SIGNATURE_PARAM: &str = "Authorization";

/// The words of a request with no `Authorization` header (AWS's "Missing Authentication
/// Token", the message every AWS REST API answers an unsigned request with).
pub(crate) const MISSING_TOKEN: &str = "Missing Authentication Token";

/// What a request whose `Authorization` is there but out of shape presents to the key
/// check: no access key id (a real one is never empty), which the key check admits so
/// that the parser refuses it as `IncompleteSignatureException` (400), as AWS does
/// before any key lookup (the module docs).
pub(crate) const UNREADABLE_SIGNATURE: &str = "";

/// The largest `Authorization` value read (a signature of many headers is still short).
const AUTHORIZATION_BYTES_MAX: usize = 4 * 1024;

fn refuse(param: Option<&str>, message: impl Into<String>) -> RequestError {
    RequestError {
        param: param.map(str::to_owned),
        message: message.into(),
    }
}

fn bad_signature(message: impl Into<String>) -> RequestError {
    refuse(Some(SIGNATURE_PARAM), message)
}

/// The parts of a SigV4 `Authorization` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature<'a> {
    pub(crate) access_key_id: &'a str,
    pub(crate) date: &'a str,
    pub(crate) region: &'a str,
    pub(crate) signed_headers: Vec<&'a str>,
}

/// `value` read as a SigV4 `Authorization` for the `bedrock` service, or the words of
/// what is wrong with it.
pub(crate) fn signature(value: &str) -> Result<Signature<'_>, String> {
    if value.len() > AUTHORIZATION_BYTES_MAX {
        return Err("Authorization header is too long".into());
    }
    let Some(rest) = value.strip_prefix("AWS4-HMAC-SHA256 ") else {
        return Err("Authorization header requires the AWS4-HMAC-SHA256 algorithm".into());
    };
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for (number, part) in rest.split(',').map(str::trim).enumerate() {
        match part.split_once('=') {
            Some(("Credential", v)) => credential = Some(v),
            Some(("SignedHeaders", v)) => signed = Some(v),
            Some(("Signature", v)) => signature = Some(v),
            // aws/aws-sdk-go #289, iann0036/cloud9-sync #10: AWS's words for a part
            // with no `=`. AWS echoes the part and the header; this refusal reaches the
            // trace and reports, and a broken header may hold a secret
            // (`AKID:SECRET`), so it names the part by its place instead.
            None => {
                return Err(format!(
                    "part {} not a valid key=value pair (missing equal-sign) in Authorization header (its text is not echoed: it may hold a credential).",
                    number + 1
                ));
            }
            Some((key, _)) => {
                return Err(format!("Authorization header has an unknown part '{key}='"));
            }
        }
    }
    let (Some(credential), Some(signed), Some(signature)) = (credential, signed, signature) else {
        return Err("Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters".into());
    };
    let scope: Vec<&str> = credential.split('/').collect();
    let [access_key_id, date, region, service, terminator] = scope.as_slice() else {
        return Err(format!(
            "Credential should be scoped to a valid region, not '{credential}'"
        ));
    };
    let date_ok = date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit());
    if access_key_id.is_empty() || !date_ok || region.is_empty() {
        return Err(format!("Credential '{credential}' is malformed"));
    }
    if *service != "bedrock" || *terminator != "aws4_request" {
        return Err(format!(
            "Credential should be scoped to correct service: 'bedrock', not '{credential}'"
        ));
    }
    let is_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if signature.len() != 64 || !signature.bytes().all(is_hex) {
        return Err("Signature must be 64 lowercase hexadecimal characters".into());
    }
    let signed_headers = signed_headers(signed)?;
    Ok(Signature {
        access_key_id,
        date,
        region,
        signed_headers,
    })
}

/// `SignedHeaders`' names: lowercase, sorted, `host` and `x-amz-date` among them.
fn signed_headers(signed: &str) -> Result<Vec<&str>, String> {
    let names: Vec<&str> = signed.split(';').collect();
    let sorted = names.windows(2).all(|w| w[0] < w[1]);
    let lowercase = names
        .iter()
        .all(|h| !h.is_empty() && *h == h.to_ascii_lowercase());
    if !sorted || !lowercase || !["host", "x-amz-date"].iter().all(|h| names.contains(h)) {
        return Err(format!(
            "SignedHeaders '{signed}' must be lowercase, sorted, and sign host and x-amz-date"
        ));
    }
    Ok(names)
}

/// The request's signature checked for shape (its `x-amz-date` included).
pub(crate) fn check_signature(http: &HttpRequest) -> Result<Signature<'_>, RequestError> {
    let Some(value) = http.header("authorization") else {
        return Err(bad_signature(MISSING_TOKEN));
    };
    let signature = signature(value).map_err(bad_signature)?;
    let Some(amz_date) = http.header("x-amz-date") else {
        return Err(bad_signature(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header",
        ));
    };
    // Read as bytes: a header from a user's request may hold any text, and slicing a
    // `str` inside a character would panic.
    let date = amz_date.as_bytes();
    let digits = |bytes: &[u8]| bytes.iter().all(u8::is_ascii_digit);
    let well_formed = date.len() == 16
        && digits(&date[..8])
        && date[8] == b'T'
        && digits(&date[9..15])
        && date[15] == b'Z';
    if !well_formed || &date[..8] != signature.date.as_bytes() {
        return Err(bad_signature(format!(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{}' != '{amz_date}'",
            signature.date
        )));
    }
    Ok(signature)
}

/// What a request presents to the key check: `None` with no `Authorization` (403
/// `MissingAuthenticationTokenException`), the access key id of a signature in shape,
/// or [`UNREADABLE_SIGNATURE`] for one out of shape (the parser's 400).
pub(crate) fn presented_key(http: &HttpRequest) -> Option<&str> {
    http.header("authorization")?;
    Some(check_signature(http).map_or(UNREADABLE_SIGNATURE, |s| s.access_key_id))
}

/// `text` with its `%XX` escapes decoded (a model id's `:` comes as `%3A`).
pub(crate) fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[at], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads `http` as Bedrock's Converse does; `model` and `stream` are the path's.
pub(crate) fn parse(http: &HttpRequest, model: &str, stream: bool) -> Result<Parsed, RequestError> {
    check_signature(http)?;
    let value: Value = serde_json::from_slice(&http.body).map_err(|_| {
        refuse(
            None,
            "Malformed input request, please reformat your input and try again.",
        )
    })?;
    let Some(body) = value.as_object() else {
        return Err(refuse(
            None,
            "Malformed input request, please reformat your input and try again.",
        ));
    };
    let mut request = CompletionRequest::new(Vec::new());
    request.model = model.to_owned();
    for block in body
        .get("system")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            request.messages.push(Message::system(text));
        }
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        // BEDROCK-API: `messages` is required (its Smithy validation words).
        return Err(refuse(
            Some("messages"),
            "1 validation error detected: Value null at 'messages' failed to satisfy constraint: Member must not be null",
        ));
    };
    for (position, message) in messages.iter().enumerate() {
        read_message(message, position, &mut request.messages)?;
    }
    read_inference(body, &mut request);
    read_tools(body, &mut request)?;
    read_output(body, &mut request);
    Ok(Parsed {
        request,
        stream,
        include_usage: true,
        reasoning_requested: false,
    })
}

/// One message's blocks into Umi's messages.
fn read_message(
    message: &Value,
    position: usize,
    out: &mut Vec<Message>,
) -> Result<(), RequestError> {
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let blocks = message
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for block in &blocks {
        if let Some(part) = block.get("text").and_then(Value::as_str) {
            text.push(part.to_owned());
        } else if let Some(used) = block.get("toolUse") {
            let field = |n: &str| {
                used.get(n)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let input = used
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Map::new()));
            calls.push(ToolCall::new(field("toolUseId"), field("name"), input));
        } else if let Some(result) = block.get("toolResult") {
            let id = result
                .get("toolUseId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let content: Vec<&str> = result
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect();
            let success = result.get("status").and_then(Value::as_str) != Some("error");
            out.push(Message::tool_result(id, content.join("\n"), success));
        }
    }
    match role {
        "user" if !text.is_empty() => out.push(Message::user(text.join("\n"))),
        "user" => {}
        "assistant" => out.push(Message::assistant_tool_calls(text.join(""), calls)),
        _ => {
            return Err(refuse(
                Some("messages"),
                format!(
                    "1 validation error detected: Value '{role}' at 'messages.{}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]",
                    position + 1
                ),
            ));
        }
    }
    Ok(())
}

/// `inferenceConfig`: `maxTokens`, `temperature`, `stopSequences`.
fn read_inference(body: &Map<String, Value>, request: &mut CompletionRequest) {
    let Some(config) = body.get("inferenceConfig") else {
        return;
    };
    request.max_tokens = config
        .get("maxTokens")
        .and_then(Value::as_u64)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    request.temperature = config
        .get("temperature")
        .and_then(Value::as_f64)
        .map(|t| t as f32);
    request.stop = config
        .get("stopSequences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
}

/// `toolConfig`: tool specs and the choice.
fn read_tools(
    body: &Map<String, Value>,
    request: &mut CompletionRequest,
) -> Result<(), RequestError> {
    let Some(config) = body.get("toolConfig") else {
        return Ok(());
    };
    for tool in config
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(spec) = tool.get("toolSpec") else {
            continue;
        };
        let name = spec.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            return Err(refuse(
                Some("toolConfig"),
                "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
            ));
        }
        let description = spec
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let schema = spec
            .pointer("/inputSchema/json")
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        request
            .tools
            .push(ToolDefinition::new(name, description, schema));
    }
    let choice = config.get("toolChoice");
    request.tool_choice = match choice {
        Some(c) if c.get("any").is_some() => Some(ToolChoice::Required),
        Some(c) if c.get("auto").is_some() => Some(ToolChoice::Auto),
        Some(c) => c
            .pointer("/tool/name")
            .and_then(Value::as_str)
            .map(|name| ToolChoice::Tool(name.to_owned())),
        None => None,
    };
    Ok(())
}

/// `outputConfig.textFormat`: a JSON schema, sent as a string.
fn read_output(body: &Map<String, Value>, request: &mut CompletionRequest) {
    let Some(format) = body
        .get("outputConfig")
        .and_then(|config| config.get("textFormat"))
    else {
        return;
    };
    if format.get("type").and_then(Value::as_str) != Some("json_schema") {
        return;
    }
    let Some(json_schema) = format.pointer("/structure/jsonSchema") else {
        return;
    };
    let schema = match json_schema.get("schema") {
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
        other => other.cloned(),
    };
    if let Some(schema) = schema {
        let name = json_schema
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("response");
        request.output_schema = Some(OutputSchema {
            name: name.to_owned(),
            schema,
            strict: true,
        });
    }
}
