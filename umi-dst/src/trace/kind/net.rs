//! SimNetwork's events: a request, a server's refusal or error page, a cut body, an
//! embeddings answer.

use std::fmt;

use super::Hex4;

/// An event of the simulated network (`net.*`).
#[derive(Debug, Clone, PartialEq)]
pub enum NetEvent {
    /// `net.request`: a request reached the simulated network.
    Request {
        /// The HTTP method.
        method: String,
        /// The URL (a key in it masked).
        url: String,
        /// Who serves it: the endpoint's profile, or `mcp`.
        served_by: &'static str,
        /// The first bytes of the hash of what the response depends on (the URL and the
        /// body); `None` where it is not traced (MCP).
        body: Option<[u8; 4]>,
    },
    /// `net.bad_request`: a server refused a request it could not parse.
    BadRequest {
        /// The server's message.
        message: String,
    },
    /// `net.model_not_found`: a request named a model the endpoint does not serve.
    ModelNotFound {
        /// The endpoint.
        base_url: String,
        /// The model asked for.
        asked: String,
        /// The model served.
        served: String,
    },
    /// `net.proxy`: a proxy's error page instead of the server's answer.
    Proxy {
        /// The page's status.
        status: u16,
        /// The page's coverage mark.
        mark: &'static str,
    },
    /// `net.refuse`: a server answered with an error.
    Refuse {
        /// The endpoint's profile.
        profile: &'static str,
        /// The status.
        status: u16,
        /// The error's kind.
        error: &'static str,
    },
    /// `net.cut`: a response body cut (a `network.body` fault).
    Cut {
        /// The fault kind's name.
        fault: &'static str,
        /// Bytes passed before the cut.
        after_bytes: u64,
    },
    /// `net.down`: a request to an endpoint that is down.
    Down {
        /// The endpoint.
        base_url: String,
    },
    /// `net.embed`: an embeddings request served.
    Embed {
        /// The model.
        model: String,
        /// How many inputs.
        inputs: usize,
        /// The vectors' dimensions.
        dimensions: u32,
    },
    /// `net.embed_fault`: an embeddings answer bent by a fault.
    EmbedFault {
        /// The fault kind's name.
        fault: &'static str,
        /// Which vector.
        vector: usize,
    },
}

impl NetEvent {
    /// The dotted kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Request { .. } => "net.request",
            Self::BadRequest { .. } => "net.bad_request",
            Self::ModelNotFound { .. } => "net.model_not_found",
            Self::Proxy { .. } => "net.proxy",
            Self::Refuse { .. } => "net.refuse",
            Self::Cut { .. } => "net.cut",
            Self::Down { .. } => "net.down",
            Self::Embed { .. } => "net.embed",
            Self::EmbedFault { .. } => "net.embed_fault",
        }
    }

    /// The detail where it is a field as it is.
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            Self::BadRequest { message: text } | Self::Down { base_url: text } => Some(text),
            Self::Request { .. }
            | Self::ModelNotFound { .. }
            | Self::Proxy { .. }
            | Self::Refuse { .. }
            | Self::Cut { .. }
            | Self::Embed { .. }
            | Self::EmbedFault { .. } => None,
        }
    }
}

impl fmt::Display for NetEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Request {
                method,
                url,
                served_by,
                body,
            } => {
                write!(f, "{method} {url} ({served_by})")?;
                match body {
                    Some(body) => write!(f, " body={}", Hex4(body)),
                    None => Ok(()),
                }
            }
            Self::BadRequest { message: text } | Self::Down { base_url: text } => f.write_str(text),
            Self::ModelNotFound {
                base_url,
                asked,
                served,
            } => write!(
                f,
                "{base_url} asked for {asked:?}; this endpoint serves {served:?}"
            ),
            Self::Proxy { status, mark } => write!(f, "{status} {mark}"),
            Self::Refuse {
                profile,
                status,
                error,
            } => write!(f, "{profile} {status} {error}"),
            Self::Cut { fault, after_bytes } => write!(f, "{fault} after {after_bytes} bytes"),
            Self::Embed {
                model,
                inputs,
                dimensions,
            } => write!(f, "{model} {inputs} inputs, {dimensions} dimensions"),
            Self::EmbedFault { fault, vector } => write!(f, "{fault} vector {vector}"),
        }
    }
}
