//! The Responses API's objects: the response (with what it echoes of the request),
//! output items, usage, and events in each era's key order.

use serde_json::{Value, json};
use umi_core::llm::{OutputSchema, TokenUsage, ToolChoice};

use super::Layout;
use crate::network::format::Parsed;
use crate::network::ids;
use crate::network::json::Json;
use crate::rng::DeterministicRng;

/// What a response object echoes of its request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Echo {
    instructions: Option<String>,
    max_output_tokens: Option<u32>,
    tools: Vec<Value>,
    tool_choice: Value,
    format: Value,
    parallel_tool_calls: bool,
    temperature: Option<f32>,
    pub(crate) summary: bool,
}

impl Echo {
    pub(crate) fn of(parsed: &Parsed) -> Self {
        let request = &parsed.request;
        let instructions: Vec<&str> = request
            .messages
            .iter()
            .filter_map(|m| match m {
                umi_core::llm::Message::System { content } => Some(content.as_str()),
                umi_core::llm::Message::User { .. }
                | umi_core::llm::Message::Assistant { .. }
                | umi_core::llm::Message::Tool { .. } => None,
            })
            .collect();
        let tools = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "description": t.description, "name": t.name, "parameters": t.parameters, "strict": false}))
            .collect();
        let tool_choice = match &request.tool_choice {
            None | Some(ToolChoice::Auto) => json!("auto"),
            Some(ToolChoice::None) => json!("none"),
            Some(ToolChoice::Required) => json!("required"),
            Some(ToolChoice::Tool(name)) => json!({"type": "function", "name": name}),
        };
        // PY `test_native_output.yaml`: the schema echoed with `description: null`.
        let format = match &request.output_schema {
            Some(OutputSchema {
                name,
                schema,
                strict,
            }) => {
                json!({"type": "json_schema", "description": null, "name": name, "schema": schema, "strict": strict})
            }
            None if request.json_output => json!({"type": "json_object"}),
            None => json!({"type": "text"}),
        };
        Self {
            instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
            max_output_tokens: request.max_tokens,
            tools,
            tool_choice,
            format,
            parallel_tool_calls: request.parallel_tool_calls.unwrap_or(true),
            temperature: request.temperature,
            summary: parsed.reasoning_requested,
        }
    }
}

/// Ids as the API writes them: a kind, then 50 hex digits sharing the response's first
/// 16 and its creation time (GM: `resp_0b7e83747d2b8444 00 69a31433 ab18…`,
/// `msg_0b7e83747d2b8444 00 69a31434 6ed0…`).
#[derive(Debug, Clone)]
pub(crate) struct Ids {
    prefix: String,
    created_s: u64,
}

impl Ids {
    pub(crate) fn new(rng: &mut DeterministicRng, created_s: u64) -> Self {
        Self {
            prefix: ids::hex(rng, 16),
            created_s,
        }
    }

    pub(crate) fn next(&self, kind: &str, rng: &mut DeterministicRng) -> String {
        format!(
            "{kind}_{}00{:08x}{}",
            self.prefix,
            self.created_s & 0xffff_ffff,
            ids::hex(rng, 24)
        )
    }
}

/// Usage with its details, both required by clients (async-openai's `ResponseUsage`).
pub(crate) fn usage(usage: &TokenUsage) -> Json {
    Json::object(vec![
        ("input_tokens", usage.prompt_tokens.into()),
        (
            "input_tokens_details",
            Json::object(vec![(
                "cached_tokens",
                usage.cached_prompt_tokens.unwrap_or(0).into(),
            )]),
        ),
        ("output_tokens", usage.completion_tokens.into()),
        (
            "output_tokens_details",
            Json::object(vec![(
                "reasoning_tokens",
                usage.reasoning_tokens.unwrap_or(0).into(),
            )]),
        ),
        (
            "total_tokens",
            usage
                .prompt_tokens
                .saturating_add(usage.completion_tokens)
                .into(),
        ),
    ])
}

/// How a response stands.
#[derive(Debug, Clone)]
pub(crate) enum Status {
    InProgress,
    Completed,
    /// With its reason (`max_output_tokens`, `content_filter`).
    Incomplete(&'static str),
    /// With `{code, message}`.
    Failed(Json),
}

/// Everything a response object says.
pub(crate) struct Response<'a> {
    pub(crate) layout: Layout,
    pub(crate) id: &'a str,
    pub(crate) model: &'a str,
    pub(crate) created_s: u64,
    pub(crate) echo: &'a Echo,
    pub(crate) status: Status,
    pub(crate) output: Vec<Json>,
    pub(crate) usage: Option<&'a TokenUsage>,
    /// Whether it is the body of a non-streamed request (GM's carries `billing`).
    pub(crate) whole: bool,
}

impl Response<'_> {
    /// The object, in GM's (2026) or the 2025 captures' field set.
    pub(crate) fn to_json(&self) -> Json {
        let y2026 = self.layout == Layout::Y2026;
        let (status, error, incomplete) = status_fields(&self.status);
        let ended = !matches!(self.status, Status::InProgress);
        let mut out = Json::object(vec![
            ("id", self.id.into()),
            ("object", "response".into()),
            ("created_at", self.created_s.into()),
            ("status", status.into()),
            ("background", false.into()),
        ]);
        if y2026 && self.whole {
            out.push("billing", Json::object(vec![("payer", "developer".into())]));
        }
        if y2026 {
            out.push("completed_at", ended.then_some(self.created_s + 1));
        }
        out.push("error", error);
        if y2026 {
            out.push("frequency_penalty", Json::from(json!(0.0)));
        }
        out.push("incomplete_details", incomplete);
        out.push("instructions", self.echo.instructions.clone());
        out.push("max_output_tokens", self.echo.max_output_tokens);
        out.push("max_tool_calls", Json::null());
        out.push("model", self.model);
        out.push("output", Json::Array(self.output.clone()));
        out.push("parallel_tool_calls", self.echo.parallel_tool_calls);
        if y2026 {
            out.push("presence_penalty", Json::from(json!(0.0)));
        }
        out.push("previous_response_id", Json::null());
        out.push("prompt_cache_key", Json::null());
        out.push("prompt_cache_retention", Json::null());
        let summary = if self.echo.summary {
            Json::from("detailed")
        } else {
            Json::null()
        };
        out.push(
            "reasoning",
            Json::object(vec![("effort", Json::null()), ("summary", summary)]),
        );
        out.push("safety_identifier", Json::null());
        // `auto` while it runs, `default` once done (GM, V-RSN).
        out.push("service_tier", if ended { "default" } else { "auto" });
        out.push("store", true);
        let temperature = f64::from(self.echo.temperature.unwrap_or(1.0));
        out.push("temperature", Json::from(json!(temperature)));
        out.push(
            "text",
            Json::object(vec![
                ("format", self.echo.format.clone().into()),
                ("verbosity", "medium".into()),
            ]),
        );
        out.push("tool_choice", Json::from(self.echo.tool_choice.clone()));
        out.push("tools", Json::from(Value::Array(self.echo.tools.clone())));
        out.push("top_logprobs", 0u32);
        out.push("top_p", Json::from(json!(1.0)));
        out.push("truncation", "disabled");
        out.push("usage", self.usage.map(usage));
        out.push("user", Json::null());
        out.push("metadata", Json::from(json!({})));
        out
    }
}

/// A status as the object writes it: its name, `error` and `incomplete_details`.
fn status_fields(status: &Status) -> (&'static str, Json, Json) {
    match status {
        Status::InProgress => ("in_progress", Json::null(), Json::null()),
        Status::Completed => ("completed", Json::null(), Json::null()),
        Status::Incomplete(reason) => (
            "incomplete",
            Json::null(),
            Json::object(vec![("reason", (*reason).into())]),
        ),
        Status::Failed(error) => ("failed", error.clone(), Json::null()),
    }
}

/// An `output_text` part (`logprobs: []` in every live capture).
pub(crate) fn text_part(text: &str) -> Json {
    Json::object(vec![
        ("type", "output_text".into()),
        ("annotations", Json::Array(Vec::new())),
        ("logprobs", Json::Array(Vec::new())),
        ("text", text.into()),
    ])
}

/// A message item: `content: []` while it is added, its one part when done.
pub(crate) fn message_item(id: &str, status: &str, text: Option<&str>) -> Json {
    Json::object(vec![
        ("id", id.into()),
        ("type", "message".into()),
        ("status", status.into()),
        (
            "content",
            Json::Array(text.map(text_part).into_iter().collect()),
        ),
        ("role", "assistant".into()),
    ])
}

/// A function call item (V-RSN order: `id, type, status, arguments, call_id, name`).
pub(crate) fn call_item(
    id: &str,
    status: &str,
    arguments: &str,
    call_id: &str,
    name: &str,
) -> Json {
    Json::object(vec![
        ("id", id.into()),
        ("type", "function_call".into()),
        ("status", status.into()),
        ("arguments", arguments.into()),
        ("call_id", call_id.into()),
        ("name", name.into()),
    ])
}

/// A reasoning item: no `status` (V-RSN, PY-WS); its summary once done.
pub(crate) fn reasoning_item(id: &str, summary: Option<&str>) -> Json {
    let parts = summary
        .map(|text| Json::object(vec![("type", "summary_text".into()), ("text", text.into())]));
    Json::object(vec![
        ("id", id.into()),
        ("type", "reasoning".into()),
        ("summary", Json::Array(parts.into_iter().collect())),
    ])
}

/// An event's data: `type` first, then `sequence_number` and the fields in the spec's
/// order (2025 captures), or every other key sorted (2026 captures).
pub(crate) fn event(
    layout: Layout,
    kind: &'static str,
    sequence: u64,
    fields: Vec<(&'static str, Json)>,
) -> Json {
    let mut out = vec![("type", Json::from(kind))];
    match layout {
        Layout::Y2025 => {
            out.push(("sequence_number", sequence.into()));
            out.extend(fields);
        }
        Layout::Y2026 => {
            let mut rest = fields;
            rest.push(("sequence_number", sequence.into()));
            rest.sort_by(|a, b| a.0.cmp(b.0));
            out.extend(rest);
        }
    }
    Json::object(out)
}

/// Padding that evens out delta sizes (`obfuscation`, on deltas only; GM: `Hello` gets
/// 11 characters, ` World` 10, V-RSN `{"` 14).
pub(crate) fn obfuscation(delta: &str, rng: &mut DeterministicRng) -> String {
    let len = 16 - delta.chars().count() % 16;
    ids::alnum(rng, len % 16)
}
