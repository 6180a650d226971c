//! Wire decoding shared by the provider clients: line framing over a byte stream, SSE
//! events, HTTP error mapping, and the request/response exchange both clients make.
//!
//! Bytes are buffered until a line is complete and only then decoded as UTF-8, so a
//! network chunk that ends inside a multi-byte character, inside `\r\n`, or inside a JSON
//! escape is harmless. Every limit is a typed error, never a panic.

pub mod errors;
pub mod exchange;
pub(crate) mod fields;
pub mod lines;
pub mod reader;
pub mod sse;
pub mod stop_filter;
pub mod tag;
pub mod tools;
