//! Shapes every wire format's server has, whatever its body looks like: the comment it
//! sends while it waits, the form of its Retry-After, the headers it adds, and
//! [`ShapeMark`], the coverage-mark name of a shape (`wire.shape.<knob>.<variant>`).
//! Each format's own shapes live beside it (chat completions' in
//! [`super::chat_shapes`]); these are shared, so no format reaches into another's.

/// A comment the server sends while it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeepAlive {
    /// The comment line (`: keep-alive`); `{date}` is replaced by the server's time as
    /// sse-starlette writes it.
    pub comment: &'static str,
    /// Its period in ms; `None`: not documented, drawn per response.
    pub every_ms: Option<u64>,
}

/// The forms of Retry-After a provider's 429 takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryAfterForm {
    /// No Retry-After at all.
    Absent,
    /// `retry-after: <seconds>`.
    Seconds,
    /// `retry-after-ms: <ms>` and `retry-after: <seconds>` (Azure).
    MsAndSeconds,
    /// `retry-after: <HTTP date>`.
    HttpDate,
}

/// The response headers beyond `content-type` and `date`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderSet {
    /// `x-request-id: req_<32 hex>`, `openai-processing-ms`, `openai-version`,
    /// `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`.
    OpenAi,
    /// `x-request-id` and `apim-request-id` (UUIDs), `x-ratelimit-{limit,remaining}-*`.
    Azure,
    /// `x-ds-trace-id: <32 hex>`.
    DeepSeek,
    /// `x-generation-id`.
    OpenRouter,
    /// `server: llama.cpp`.
    LlamaCpp,
    /// Nothing more.
    Bare,
}

/// Coverage-mark names, `wire.shape.<knob>.<variant>`: the wire_shapes scenario requires
/// a default sweep to hit every one a profile allows.
pub(crate) trait ShapeMark: Copy {
    /// The mark.
    fn mark(self) -> &'static str;
}

macro_rules! marks {
    ($ty:ty { $( $pattern:pat => $mark:literal, )* }) => {
        impl ShapeMark for $ty {
            fn mark(self) -> &'static str {
                match self { $( $pattern => concat!("wire.shape.", $mark), )* }
            }
        }
    };
}

pub(crate) use marks;

marks!(RetryAfterForm {
    RetryAfterForm::Absent => "retry_after.absent",
    RetryAfterForm::Seconds => "retry_after.seconds",
    RetryAfterForm::MsAndSeconds => "retry_after.ms_and_seconds",
    RetryAfterForm::HttpDate => "retry_after.http_date",
});
