//! Wire decoding shared by the provider clients: line framing over a byte stream, SSE
//! events, and HTTP error mapping.
//!
//! Bytes are buffered until a line is complete and only then decoded as UTF-8, so a
//! network chunk that ends inside a multi-byte character, inside `\r\n`, or inside a JSON
//! escape is harmless. Every limit is a typed error, never a panic.

pub mod errors;
pub mod lines;
pub mod reader;
pub mod sse;
