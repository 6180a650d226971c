//! Secrets: the API key type every client config holds, and the redactor every text
//! leaving a client passes through.
//!
//! A key is sent to its server and to nothing else. [`ApiKey`] keeps it out of `Debug`
//! and `Display` (and zeroes it on drop, through `secrecy`); [`Redactor`] removes it, and
//! anything that looks like a credential, from the text a client hands back (error
//! messages and bodies, connection errors naming the URL), because a server may echo
//! the key in a 401, a header dump or an in-stream error. The redaction runs once, at
//! the client seam (`WireClient`), where the client knows its secrets; the router,
//! traces, logs, reports and seed comments only ever see redacted errors.

mod key;
mod patterns;
mod redactor;

pub use key::{ApiKey, KeyError};
pub use patterns::{
    REDACTED, changed_by_redaction, is_secret_header, redact_headers, redact_patterns, redact_url,
    redaction_if_changed,
};
pub use redactor::Redactor;
