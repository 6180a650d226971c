//! `ApiKey`: an API key that never prints.
//!
//! Built on `secrecy::SecretString` (zeroed on drop, `Debug` redacted); this newtype
//! adds what a config needs and `secrecy` leaves out on purpose: a redacting `Display`,
//! and equality, so configs stay comparable in tests. The key itself is read only
//! through [`ApiKey::expose`], at the one place a client writes its auth header.
//!
//! A key is trimmed of surrounding whitespace when it is made. A key copied from a
//! dashboard or read from a `.env` line often carries a trailing space or newline, and
//! HTTP says what that means: a header field's value does not include its leading or
//! trailing whitespace (RFC 9110, section 5.5), so every server reads the trimmed key,
//! and echoes that one in its 401 ("Incorrect API key provided: ..."). Sending and
//! redacting the trimmed key is sending and redacting the key the server sees; keeping
//! the spaces would only make the redactor miss the echo. A key that is empty once
//! trimmed, or holds a character no header may carry (a line break, a control
//! character), is refused where it is configured ([`ApiKey::parse`]), naming where it
//! came from.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};

use super::patterns::REDACTED;

/// An API key: `Debug` and `Display` print `[REDACTED]`.
#[derive(Clone)]
pub struct ApiKey(SecretString);

/// Why a configured key cannot be used. It never holds the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Nothing but whitespace.
    #[error("the key is empty")]
    Empty,
    /// A character an HTTP header cannot carry, at a character position (counted
    /// after trimming).
    #[error(
        "the key holds a control character (at character {position}), which no HTTP header can carry"
    )]
    ControlCharacter {
        /// Where, in characters from the key's start.
        position: usize,
    },
}

impl ApiKey {
    /// Wraps `key`, trimmed of surrounding whitespace (see the module docs).
    pub fn new(key: impl Into<String>) -> Self {
        let key = key.into();
        let trimmed = key.trim();
        if trimmed.len() == key.len() {
            return Self(SecretString::from(key));
        }
        Self(SecretString::from(trimmed.to_owned()))
    }

    /// A key read from configuration (an environment variable, a file): trimmed, and
    /// refused when empty or when it holds a control character.
    pub fn parse(key: impl Into<String>) -> Result<Self, KeyError> {
        let key = Self::new(key);
        if key.expose().is_empty() {
            return Err(KeyError::Empty);
        }
        if let Some(position) = key.expose().chars().position(char::is_control) {
            return Err(KeyError::ControlCharacter { position });
        }
        Ok(key)
    }

    /// The key itself, for the auth header (and for nothing that is printed).
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self::new(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self::new(key)
    }
}

impl PartialEq for ApiKey {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl Eq for ApiKey {}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({REDACTED})")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_never_prints_but_is_sent_as_given() {
        let key = ApiKey::new("sk-live-1234567890");
        assert_eq!(format!("{key}"), "[REDACTED]");
        assert_eq!(format!("{key:?}"), "ApiKey([REDACTED])");
        assert_eq!(
            format!("{:?}", Some(key.clone())),
            "Some(ApiKey([REDACTED]))"
        );
        assert_eq!(key.expose(), "sk-live-1234567890");
        assert_eq!(key, ApiKey::from("sk-live-1234567890"));
        assert_ne!(key, ApiKey::from("sk-live-other"));
    }

    #[test]
    fn surrounding_whitespace_is_not_part_of_a_key() {
        // What a `.env` line, a dashboard copy or a heredoc leaves around a key.
        for raw in [
            "sk-live-1 ",
            " sk-live-1",
            "sk-live-1\n",
            "sk-live-1\r\n",
            "\tsk-live-1  ",
        ] {
            assert_eq!(ApiKey::new(raw).expose(), "sk-live-1", "{raw:?}");
            assert_eq!(ApiKey::parse(raw).unwrap().expose(), "sk-live-1", "{raw:?}");
        }
    }

    #[test]
    fn a_configured_key_that_no_header_can_carry_is_refused() {
        assert_eq!(ApiKey::parse("  \n").unwrap_err(), KeyError::Empty);
        assert_eq!(ApiKey::parse("").unwrap_err(), KeyError::Empty);
        let error = ApiKey::parse("sk-a\nsk-b").unwrap_err();
        assert_eq!(error, KeyError::ControlCharacter { position: 4 });
        assert!(!error.to_string().contains("sk-"), "{error}");
        // Inner spaces are the key's own: a header carries them.
        assert_eq!(ApiKey::parse("a b").unwrap().expose(), "a b");
    }
}
