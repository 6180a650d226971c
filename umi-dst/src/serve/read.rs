//! Reading a client's request off the connection: its method, its headers, and its body
//! under the size limit (`--body-bytes-max`) and the read deadline. A body that is too
//! large (413), too slow (408) or broken (400) is refused with its status and a message
//! (the caller puts them in the envelope of the endpoint's provider).

use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper::Request;
use hyper::body::Incoming;
use umi_core::llm::transport::HttpRequest;

use super::config::CLIENT_READ_TIMEOUT_MS;

/// `request` read whole (its URL left empty: the caller routed it already), or the
/// status and message refusing a body that could not be read within `body_bytes_max`
/// bytes and the deadline.
pub(super) async fn request(
    request: Request<Incoming>,
    body_bytes_max: usize,
) -> Result<HttpRequest, (u16, String)> {
    let method = match *request.method() {
        hyper::Method::GET => "GET",
        hyper::Method::DELETE => "DELETE",
        hyper::Method::PUT => "PUT",
        _ => "POST",
    };
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    #[allow(clippy::disallowed_methods)] // a real server's read deadline, outside any simulation
    let read = tokio::time::timeout(
        Duration::from_millis(CLIENT_READ_TIMEOUT_MS),
        Limited::new(request.into_body(), body_bytes_max).collect(),
    )
    .await;
    let body = match read {
        Err(_) => {
            return Err((
                408,
                format!("the request body did not arrive within {CLIENT_READ_TIMEOUT_MS} ms"),
            ));
        }
        Ok(Err(error))
            if error
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Err((
                413,
                format!(
                    "the request body is over this server's limit of {body_bytes_max} bytes (--body-bytes-max)"
                ),
            ));
        }
        Ok(Err(error)) => {
            return Err((400, format!("the request body could not be read: {error}")));
        }
        Ok(Ok(collected)) => collected.to_bytes().to_vec(),
    };
    Ok(HttpRequest {
        method,
        url: String::new(),
        headers,
        body,
    })
}
