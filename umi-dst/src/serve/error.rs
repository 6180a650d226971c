//! Why `dst serve` cannot start or serve: a refused flag, an unreadable cassette, an
//! address it cannot bind. Below the config and the MCP tools, which both refuse flags.

use std::net::SocketAddr;

/// Why the server cannot start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A flag's value is refused.
    #[error("{flag} {value:?}: {reason}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// The cassette cannot be loaded.
    #[error(transparent)]
    Cassette(#[from] umi_core::cassette::CassetteError),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS's reason.
        source: std::io::Error,
    },
}
