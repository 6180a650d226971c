//! Conversation messages, tool definitions and tool calls.
//!
//! These are provider-neutral: the OpenAI-compatible and Ollama clients translate them
//! to their wire formats, and every simulated model reads them as they are. Tool-call
//! arguments are JSON values here (the wire formats carry them as strings; the clients
//! parse and serialize at the boundary).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation, tagged by role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The instructions.
        content: String,
    },
    /// What the user said.
    User {
        /// The user's text.
        content: String,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The answer's text (empty when the model only called tools).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        content: String,
        /// The tools the model called, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, tied to it by id.
    Tool {
        /// The id of the [`ToolCall`] this answers.
        tool_call_id: String,
        /// What the tool returned (or its error, when `success` is false).
        content: String,
        /// Whether the tool succeeded.
        success: bool,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    /// An assistant message with tool calls (and optional text).
    pub fn assistant_tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls,
        }
    }

    /// A tool result.
    pub fn tool_result(
        tool_call_id: impl Into<String>,
        content: impl Into<String>,
        success: bool,
    ) -> Self {
        Self::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            success,
        }
    }

    /// The role's name (`system`, `user`, `assistant`, `tool`).
    pub fn role(&self) -> &'static str {
        match self {
            Self::System { .. } => "system",
            Self::User { .. } => "user",
            Self::Assistant { .. } => "assistant",
            Self::Tool { .. } => "tool",
        }
    }

    /// The message's text (a tool result's content; an assistant's text).
    pub fn text(&self) -> &str {
        match self {
            Self::System { content }
            | Self::User { content }
            | Self::Assistant { content, .. }
            | Self::Tool { content, .. } => content,
        }
    }

    /// The tool calls of an assistant message (empty for other roles).
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Self::Assistant { tool_calls, .. } => tool_calls,
            Self::System { .. } | Self::User { .. } | Self::Tool { .. } => &[],
        }
    }
}

/// A tool the model may call: a name, what it does, and a JSON Schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    #[serde(serialize_with = "crate::canonical_json::serialize")]
    pub parameters: Value,
}

impl ToolDefinition {
    /// A tool with `name`, `description` and the JSON Schema `parameters`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// A call the model made to a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id; the tool result refers to it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as parsed JSON.
    #[serde(serialize_with = "crate::canonical_json::serialize")]
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `name` with `arguments`, identified by `id`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_serialize_with_snake_case_role_tags() {
        let call = ToolCall::new("call_1", "get_weather", json!({"city": "Oslo"}));
        let messages = vec![
            Message::system("be brief"),
            Message::user("weather?"),
            Message::assistant_tool_calls("", vec![call]),
            Message::tool_result("call_1", "{\"temp\": 3}", true),
        ];
        let text = serde_json::to_string(&messages).unwrap();
        assert!(
            text.starts_with(r#"[{"role":"system","content":"be brief"}"#),
            "{text}"
        );
        assert!(
            text.contains(r#"{"role":"assistant","tool_calls":[{"id":"call_1""#),
            "{text}"
        );
        assert!(
            text.contains(r#""role":"tool","tool_call_id":"call_1""#),
            "{text}"
        );
        let back: Vec<Message> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, messages);
        assert_eq!(back[2].tool_calls()[0].name, "get_weather");
    }
}
