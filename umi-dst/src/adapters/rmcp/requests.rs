//! The three requests of MCP's Streamable HTTP transport as rmcp's
//! `StreamableHttpClient` makes them, over the simulated [`Transport`](umi_core::llm::transport::Transport):
//! POST a message, GET the server's own stream, DELETE the session (2025-11-25,
//! transports). How each answer is read is in `response.rs`.

use std::borrow::Cow;
use std::sync::Arc;

use futures::stream::BoxStream;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    HttpStatusError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use umi_core::llm::secrets::redact_url;
use umi_core::llm::transport::HttpRequest;

use super::client::SimMcpHttpClient;
use super::error::{Error, SimMcpHttpError, client_error};
use super::headers::{
    EVENT_STREAM_MIME_TYPE, Headers, JSON_MIME_TYPE, LAST_EVENT_ID_HEADER, SESSION_HEADER, headers,
};
use super::response::{
    auth_error, json_post_response, media_type_is, post_failure, retry_after, sse_events,
};

impl StreamableHttpClient for SimMcpHttpClient {
    type Error = SimMcpHttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let body = serde_json::to_vec(&message).map_err(|error| {
            client_error(SimMcpHttpError::Serialize {
                reason: error.to_string(),
            })
        })?;
        // 2025-11-25, transports, "sending messages to the server": the client MUST
        // accept both JSON and SSE, and sends the session id it was given.
        let mut own = vec![
            (
                "accept".to_owned(),
                format!("{JSON_MIME_TYPE}, {EVENT_STREAM_MIME_TYPE}"),
            ),
            ("content-type".to_owned(), JSON_MIME_TYPE.to_owned()),
        ];
        let session_was_attached = session_id.is_some();
        if let Some(session) = &session_id {
            own.push((SESSION_HEADER.to_owned(), session.to_string()));
        }
        let request = HttpRequest {
            method: "POST",
            url: uri.to_string(),
            headers: headers(own, auth_header, custom_headers)?,
            body,
        };
        let response = self.send(request).await?;
        if let Some(error) = auth_error(&response) {
            return Err(error);
        }
        let status = response.status;
        if status == 202 || status == 204 {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        // 2025-11-25, transports, session management: 404 to a request with a session
        // id means the session is gone; the client must initialize again.
        if status == 404 && session_was_attached {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !(200..300).contains(&status) {
            return post_failure(&message, session_was_attached, response, limits).await;
        }
        let new_session = response.header(SESSION_HEADER).map(str::to_owned);
        let content_type = response.header("content-type").map(str::to_owned);
        // A notification or response awaits no reply: whatever 2xx body comes is ignored
        // (rmcp's reqwest client treats it as accepted too).
        let awaits_no_response = !matches!(message, JsonRpcMessage::Request(_));
        match content_type.as_deref() {
            Some(ct) if media_type_is(ct, EVENT_STREAM_MIME_TYPE) => {
                Ok(StreamableHttpPostResponse::Sse(
                    sse_events(response.body, limits.max_sse_event_size),
                    new_session,
                ))
            }
            Some(ct) if media_type_is(ct, JSON_MIME_TYPE) => {
                json_post_response(response.body, &limits, new_session, awaits_no_response).await
            }
            _ if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
            _ => Err(StreamableHttpError::UnexpectedContentType(content_type)),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), Error> {
        // 2025-11-25, transports, session management: DELETE with the session id ends
        // it; a server that does not allow it answers 405.
        let own = vec![(SESSION_HEADER.to_owned(), session_id.to_string())];
        let request = HttpRequest {
            method: "DELETE",
            url: uri.to_string(),
            headers: headers(own, auth_header, custom_headers)?,
            body: Vec::new(),
        };
        let response = self.send(request).await?;
        match response.status {
            200..=299 | 405 => Ok(()),
            status => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} to DELETE {}", redact_url(&uri)),
            ))),
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        // 2025-11-25, transports, "listening for messages from the server": a GET that
        // accepts SSE; the server answers with a stream or 405.
        let mut own = vec![(
            "accept".to_owned(),
            format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
        )];
        if let Some(session) = &session_id {
            own.push((SESSION_HEADER.to_owned(), session.to_string()));
        }
        if let Some(id) = last_event_id {
            own.push((LAST_EVENT_ID_HEADER.to_owned(), id));
        }
        let request = HttpRequest {
            method: "GET",
            url: uri.to_string(),
            headers: headers(own, auth_header, custom_headers)?,
            body: Vec::new(),
        };
        let response = self.send(request).await?;
        if response.status == 405 {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(error) = auth_error(&response) {
            return Err(error);
        }
        let status = response.status;
        if status == 429 || (500..600).contains(&status) {
            return Err(StreamableHttpError::HttpStatus(HttpStatusError::new(
                status,
                retry_after(&response),
            )));
        }
        if !(200..300).contains(&status) {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} to GET {}", redact_url(&uri)),
            )));
        }
        match response.header("content-type") {
            Some(ct)
                if media_type_is(ct, EVENT_STREAM_MIME_TYPE)
                    || media_type_is(ct, JSON_MIME_TYPE) =>
            {
                Ok(sse_events(response.body, max_sse_event_size))
            }
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(str::to_owned),
            )),
        }
    }
}
