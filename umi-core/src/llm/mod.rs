//! The language-model abstraction: types, typed errors, the streaming provider trait,
//! the stream collector, stop sequences and the token estimator.
//!
//! Agent code talks to `Arc<dyn LanguageModel>`. Behind it may be a real client, the
//! router, or (under test) umi-dst's SimLLM or a scripted double; the contract on
//! [`LanguageModel`] is what lets them stand in for each other.

pub mod anthropic;
pub mod bedrock;
pub mod client;
mod collector;
mod connection;
pub mod embed;
mod error;
mod event;
pub mod event_replay;
pub mod gemini;
mod message;
mod model_id;
pub mod ollama;
pub mod openai;
mod provider;
pub mod registry;
mod request;
mod response;
pub mod responses;
pub mod router;
pub mod secrets;
pub mod stop;
pub mod structured;
pub mod tokens;
pub mod transport;
pub mod wire;

pub use collector::StreamCollector;
pub use connection::{Connection, KeyHeader, Timeouts};
pub use embed::{Embedder, EmbeddingRequest, Embeddings};
pub use error::{ERROR_SNIPPET_BYTES_MAX, FailedAttempt, LlmError, LlmErrorKind, snippet};
pub use event::{EventStream, StreamEvent};
pub use message::{Message, ToolCall, ToolDefinition};
pub use model_id::{ModelId, ModelIdError};
pub use provider::LanguageModel;
pub use request::{CompletionRequest, OutputSchema, ToolChoice};
pub use response::{CompletionResponse, FinishReason, ModelRef, TokenUsage};
