//! The bytes-level bridge the adapters share: an `http` request's method and headers as
//! umi-core's [`HttpRequest`] carries them, and an [`HttpResponse`]'s head as an `http`
//! response. One copy, so every adapter hands SimNetwork the same request for the same
//! call and reads its answer the same way.

use umi_core::llm::transport::{HttpRequest, HttpResponse};

/// The method as [`HttpRequest`] names it: the ones SimNetwork serves, anything else
/// (which no chat client sends) as `POST`, which SimNetwork answers as the route's own.
pub(crate) fn method_name(method: &http::Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "DELETE" => "DELETE",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        _ => "POST",
    }
}

/// The headers in order; a value that is not visible ASCII (which SimNetwork never
/// reads) is left out.
pub(crate) fn header_pairs(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect()
}

/// The request a client built, as SimNetwork takes it.
pub(crate) fn request(
    method: &http::Method,
    uri: &impl ToString,
    headers: &http::HeaderMap,
    body: Vec<u8>,
) -> HttpRequest {
    HttpRequest {
        method: method_name(method),
        url: uri.to_string(),
        headers: header_pairs(headers),
        body,
    }
}

/// The status and headers of a simulated response, for the body the adapter attaches.
pub(crate) fn response_head(response: &HttpResponse) -> http::response::Builder {
    response.headers.iter().fold(
        http::Response::builder().status(response.status),
        |builder, (name, value)| builder.header(name.as_str(), value.as_str()),
    )
}
