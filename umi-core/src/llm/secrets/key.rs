//! `ApiKey`: an API key that never prints.
//!
//! Built on `secrecy::SecretString` (zeroed on drop, `Debug` redacted); this newtype
//! adds what a config needs and `secrecy` leaves out on purpose: a redacting `Display`,
//! and equality, so configs stay comparable in tests. The key itself is read only
//! through [`ApiKey::expose`], at the one place a client writes its auth header.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};

use super::patterns::REDACTED;

/// An API key: `Debug` and `Display` print `[REDACTED]`.
#[derive(Clone)]
pub struct ApiKey(SecretString);

impl ApiKey {
    /// Wraps `key`.
    pub fn new(key: impl Into<String>) -> Self {
        Self(SecretString::from(key.into()))
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
}
