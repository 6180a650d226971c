//! CompletionRequest: what a caller asks a model, provider-neutral.

use serde::{Deserialize, Serialize};

use super::error::LlmError;
use super::message::{Message, ToolDefinition};
use crate::constants::{
    PROMPT_BYTES_MAX, REQUEST_MESSAGES_MAX, REQUEST_TOOLS_MAX, STOP_SEQUENCE_BYTES_MAX,
    STOP_SEQUENCES_MAX,
};

/// A request for one completion.
///
/// Build it with [`CompletionRequest::new`] and the `with_*` methods;
/// [`CompletionRequest::validate`] checks it (providers call it before doing any work).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CompletionRequest {
    /// The model to use, as the provider names it; empty means the provider's own.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Most tokens the answer may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Stop sequences: generation ends before the first of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Ask for a JSON object as the answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json_output: bool,
    /// A sampling seed, for providers that honour one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The JSON Schema the answer must follow (structured outputs), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
    /// Whether and which tools the model must call (`None`: the provider's default,
    /// which is `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one answer (`None`: the provider's
    /// default, which is yes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// What the request is for (`memory.extract_entities`): used for routing, tracing and
    /// by simulated models to pick a generator. Never sent to a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// The schema a structured answer must follow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// Its name (OpenAI requires one: letters, digits, `_` and `-`).
    pub name: String,
    /// The JSON Schema.
    #[serde(serialize_with = "crate::canonical_json::serialize")]
    pub schema: serde_json::Value,
    /// Whether the provider must follow it exactly (OpenAI's `strict`).
    pub strict: bool,
}

/// Whether and which tools the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

impl CompletionRequest {
    /// A request for `messages`.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// Sets the model.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Offers tools.
    pub fn with_tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools;
        self
    }

    /// Caps the answer's tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the stop sequences.
    pub fn with_stop(mut self, stop: Vec<String>) -> Self {
        self.stop = stop;
        self
    }

    /// Asks for a JSON object.
    pub fn with_json_output(mut self) -> Self {
        self.json_output = true;
        self
    }

    /// Asks for an answer in JSON valid under `schema`, named `name`: strict (OpenAI's
    /// `strict: true`) when the schema qualifies for strict mode (every object closed
    /// with `"additionalProperties": false` and every property required), since OpenAI
    /// refuses strict mode for any other schema
    /// ([`crate::llm::structured::strict`]).
    pub fn with_output_schema(
        mut self,
        name: impl Into<String>,
        schema: serde_json::Value,
    ) -> Self {
        // Strict only where a strict provider takes the schema: OpenAI refuses strict mode
        // for a schema that allows extra properties or leaves a property optional.
        let strict = crate::llm::structured::strict::strict_violation(&schema).is_none();
        self.output_schema = Some(OutputSchema {
            name: name.into(),
            schema,
            strict,
        });
        self
    }

    /// Says whether and which tools the model must call.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Says whether the model may call several tools in one answer.
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Sets a sampling seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Tags the request with what it is for.
    pub fn with_task(mut self, task: impl Into<String>) -> Self {
        self.task = Some(task.into());
        self
    }

    /// Bytes of message text in the request.
    pub fn prompt_bytes(&self) -> usize {
        self.messages
            .iter()
            .map(|message| message.text().len())
            .sum()
    }

    /// All message text, joined by newlines: what keyword routing and hashing read.
    pub fn prompt_text(&self) -> String {
        let texts: Vec<&str> = self.messages.iter().map(Message::text).collect();
        texts.join("\n")
    }

    /// The last user message's text, if any.
    pub fn last_user_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find_map(|message| match message {
                Message::User { content } => Some(content.as_str()),
                Message::System { .. } | Message::Assistant { .. } | Message::Tool { .. } => None,
            })
    }

    /// Checks the request against the limits; the error names the offending value.
    pub fn validate(&self) -> Result<(), LlmError> {
        let problem = self
            .messages_problem()
            .or_else(|| self.tools_problem())
            .or_else(|| self.sampling_problem());
        match problem {
            Some(reason) => Err(LlmError::InvalidPrompt { reason }),
            None => Ok(()),
        }
    }

    /// What is wrong with the messages: none, too many, all empty, or too long a prompt.
    fn messages_problem(&self) -> Option<String> {
        if self.messages.is_empty() {
            return Some("the request has no messages (messages: [])".into());
        }
        if self.messages.len() > REQUEST_MESSAGES_MAX {
            return Some(format!(
                "{} messages, over the limit of {REQUEST_MESSAGES_MAX}",
                self.messages.len()
            ));
        }
        let bytes = self.prompt_bytes();
        if bytes == 0 && self.messages.iter().all(|m| m.tool_calls().is_empty()) {
            return Some(format!("all {} message(s) are empty", self.messages.len()));
        }
        if bytes > PROMPT_BYTES_MAX {
            return Some(format!(
                "prompt of {bytes} bytes, over the limit of {PROMPT_BYTES_MAX}"
            ));
        }
        None
    }

    /// What is wrong with the tools: too many, a name empty or defined twice, or a
    /// `tool_choice` that names no offered tool.
    fn tools_problem(&self) -> Option<String> {
        if self.tools.len() > REQUEST_TOOLS_MAX {
            return Some(format!(
                "{} tools, over the limit of {REQUEST_TOOLS_MAX}",
                self.tools.len()
            ));
        }
        for (index, tool) in self.tools.iter().enumerate() {
            if tool.name.is_empty() {
                return Some(format!("tool {index} has an empty name"));
            }
            if self.tools[..index]
                .iter()
                .any(|other| other.name == tool.name)
            {
                return Some(format!("tool name {:?} is defined twice", tool.name));
            }
        }
        match &self.tool_choice {
            Some(ToolChoice::Required) if self.tools.is_empty() => {
                Some("tool_choice is required but no tools are offered".into())
            }
            Some(ToolChoice::Tool(name)) if !self.tools.iter().any(|t| &t.name == name) => Some(
                format!("tool_choice names the tool {name:?}, which is not offered"),
            ),
            Some(
                ToolChoice::Auto | ToolChoice::None | ToolChoice::Required | ToolChoice::Tool(_),
            )
            | None => None,
        }
    }

    /// What is wrong with the sampling settings: stop sequences, temperature, `max_tokens`.
    fn sampling_problem(&self) -> Option<String> {
        if self.stop.len() > STOP_SEQUENCES_MAX {
            return Some(format!(
                "{} stop sequences, over the limit of {STOP_SEQUENCES_MAX}",
                self.stop.len()
            ));
        }
        if let Some(stop) = self.stop.iter().find(|s| s.len() > STOP_SEQUENCE_BYTES_MAX) {
            return Some(format!(
                "stop sequence of {} bytes, over the limit of {STOP_SEQUENCE_BYTES_MAX}",
                stop.len()
            ));
        }
        if let Some(temperature) = self.temperature
            && !(0.0..=2.0).contains(&temperature)
        {
            return Some(format!("temperature {temperature} is outside [0, 2]"));
        }
        if self.max_tokens == Some(0) {
            return Some("max_tokens is 0".into());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_oversized_requests_are_refused_with_the_value() {
        let empty = CompletionRequest::new(vec![]).validate().unwrap_err();
        assert!(empty.to_string().contains("messages: []"), "{empty}");
        let blank = CompletionRequest::new(vec![Message::user("")])
            .validate()
            .unwrap_err();
        assert!(blank.to_string().contains("empty"), "{blank}");
        let huge = CompletionRequest::new(vec![Message::user("x".repeat(PROMPT_BYTES_MAX + 1))]);
        assert!(
            huge.validate()
                .unwrap_err()
                .to_string()
                .contains("1048577 bytes")
        );
        let hot = CompletionRequest::new(vec![Message::user("hi")]).with_temperature(3.5);
        assert!(hot.validate().unwrap_err().to_string().contains("3.5"));
    }

    #[test]
    fn duplicate_tool_names_are_refused() {
        let tool = ToolDefinition::new("search", "", serde_json::json!({"type": "object"}));
        let request =
            CompletionRequest::new(vec![Message::user("q")]).with_tools(vec![tool.clone(), tool]);
        assert!(
            request
                .validate()
                .unwrap_err()
                .to_string()
                .contains("\"search\" is defined twice")
        );
    }

    #[test]
    fn serde_skips_defaults_and_round_trips() {
        let request = CompletionRequest::new(vec![Message::user("hi")]).with_task("memory.recall");
        let text = serde_json::to_string(&request).unwrap();
        assert_eq!(
            text,
            r#"{"messages":[{"role":"user","content":"hi"}],"task":"memory.recall"}"#
        );
        assert_eq!(
            serde_json::from_str::<CompletionRequest>(&text).unwrap(),
            request
        );
        assert_eq!(request.last_user_text(), Some("hi"));
    }
}
