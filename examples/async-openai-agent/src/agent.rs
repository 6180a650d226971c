//! The agent, as it ships: a weather assistant on async-openai, streaming each turn,
//! calling its one tool until the model answers. It knows nothing of Umi; the only seam
//! is the async-openai `Client` it is given.

use std::collections::BTreeMap;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{CreateChatCompletionRequest, FinishReason};
use futures::StreamExt;
use serde_json::{Value, json};

/// Model turns per question at most (a model that keeps calling tools is cut off).
pub const TURNS_MAX: usize = 4;

/// The system prompt.
const SYSTEM: &str =
    "You are a weather assistant. Use get_weather for any city you are asked about.";

/// Why a question got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The API failed (after async-openai's own retries).
    #[error("the model API failed: {0}")]
    Api(#[from] OpenAIError),
    /// A turn's stream ended before the model said it was done: its text or its tool
    /// calls may be cut short, so nothing of it is used.
    #[error("turn {turn}: the stream ended before the model finished")]
    Cut {
        /// The turn, from 0.
        turn: usize,
    },
    /// The model stopped for a reason that leaves no usable answer (`length`,
    /// `content_filter`).
    #[error("turn {turn}: the model stopped ({reason})")]
    Stopped {
        /// The turn.
        turn: usize,
        /// The finish reason.
        reason: String,
    },
    /// A tool call's arguments are not the JSON object its schema asks for.
    #[error("turn {turn}: arguments of {name} are not JSON: {reason}")]
    BadArguments {
        /// The turn.
        turn: usize,
        /// The tool.
        name: String,
        /// The parser's words.
        reason: String,
    },
    /// The model finished with nothing to say (providers do this; a broken answer can
    /// too): not an answer to hand a user.
    #[error("turn {turn}: the model finished with an empty answer")]
    Empty {
        /// The turn.
        turn: usize,
    },
    /// Still calling tools after [`TURNS_MAX`] turns.
    #[error("no answer after {TURNS_MAX} turns")]
    TooManyTurns,
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// What the model said last.
    pub text: String,
    /// Model turns taken.
    pub turns: usize,
    /// Tool calls run.
    pub tool_calls: usize,
}

/// The agent.
#[derive(Debug, Clone)]
pub struct WeatherAgent {
    client: Client<OpenAIConfig>,
    model: String,
}

/// What a streamed turn said.
#[derive(Debug, Default)]
struct Turn {
    text: String,
    /// By index: id, name, arguments.
    calls: BTreeMap<u32, (String, String, String)>,
    finish: Option<FinishReason>,
}

/// The tool: a forecast (a real agent would call a weather service here).
pub fn get_weather(arguments: &Value) -> String {
    let city = arguments
        .get("city")
        .and_then(Value::as_str)
        .unwrap_or("somewhere");
    format!("12 C and light rain in {city}")
}

impl WeatherAgent {
    /// An agent asking `model` through `client`.
    pub fn new(client: Client<OpenAIConfig>, model: impl Into<String>) -> Self {
        Self {
            client,
            model: model.into(),
        }
    }

    async fn turn(&self, messages: &[Value]) -> Result<Turn, AgentError> {
        let tool = json!({"type": "function", "function": {"name": "get_weather", "description": "The forecast for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}});
        let request: CreateChatCompletionRequest = serde_json::from_value(json!({
            "model": self.model, "messages": messages, "tools": [tool], "stream": true,
        }))
        .map_err(|error| OpenAIError::InvalidArgument(error.to_string()))?;
        let mut stream = self.client.chat().create_stream(request).await?;
        let mut turn = Turn::default();
        while let Some(chunk) = stream.next().await {
            for choice in chunk?.choices {
                turn.text
                    .push_str(choice.delta.content.as_deref().unwrap_or(""));
                for call in choice.delta.tool_calls.unwrap_or_default() {
                    let entry = turn.calls.entry(call.index).or_default();
                    if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                        entry.0 = id;
                    }
                    if let Some(function) = call.function {
                        entry.1.push_str(function.name.as_deref().unwrap_or(""));
                        entry
                            .2
                            .push_str(function.arguments.as_deref().unwrap_or(""));
                    }
                }
                if choice.finish_reason.is_some() {
                    turn.finish = choice.finish_reason;
                }
            }
        }
        Ok(turn)
    }

    /// Answers `question`, calling the tool as the model asks.
    pub async fn ask(&self, question: &str) -> Result<Answer, AgentError> {
        let mut messages = vec![
            json!({"role": "system", "content": SYSTEM}),
            json!({"role": "user", "content": question}),
        ];
        let mut tool_calls = 0;
        for index in 0..TURNS_MAX {
            let turn = self.turn(&messages).await?;
            match turn.finish {
                // async-openai ends a stream that was cut off as if it were whole: only
                // the finish reason says the model was done (found by the sweep: see
                // the crate's scenario).
                None => return Err(AgentError::Cut { turn: index }),
                // Found by the sweep too: a `stop` with no text was handed back as an
                // answer.
                Some(FinishReason::Stop) if turn.text.trim().is_empty() => {
                    return Err(AgentError::Empty { turn: index });
                }
                Some(FinishReason::Stop) => {
                    return Ok(Answer {
                        text: turn.text,
                        turns: index + 1,
                        tool_calls,
                    });
                }
                Some(FinishReason::ToolCalls | FinishReason::FunctionCall) => {}
                Some(other) => {
                    return Err(AgentError::Stopped {
                        turn: index,
                        reason: format!("{other:?}"),
                    });
                }
            }
            let calls: Vec<Value> = turn
                .calls
                .values()
                .map(|(id, name, arguments)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}))
                .collect();
            messages.push(json!({"role": "assistant", "content": turn.text, "tool_calls": calls}));
            for (id, name, arguments) in turn.calls.values() {
                let parsed: Value =
                    serde_json::from_str(arguments).map_err(|error| AgentError::BadArguments {
                        turn: index,
                        name: name.clone(),
                        reason: error.to_string(),
                    })?;
                messages.push(
                    json!({"role": "tool", "tool_call_id": id, "content": get_weather(&parsed)}),
                );
                tool_calls += 1;
            }
        }
        Err(AgentError::TooManyTurns)
    }
}
