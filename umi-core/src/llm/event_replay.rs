//! A whole response replayed as stream events, for servers that answer a streaming
//! request with one JSON body.

use futures::StreamExt;

use super::event::{EventStream, StreamEvent};
use super::response::CompletionResponse;

/// The events that collect back into `response`.
pub fn replay(response: CompletionResponse) -> EventStream {
    let mut events = Vec::new();
    if let Some(reasoning) = response.reasoning.filter(|r| !r.is_empty()) {
        events.push(StreamEvent::ReasoningDelta { text: reasoning });
    }
    if !response.text.is_empty() {
        events.push(StreamEvent::TextDelta {
            text: response.text,
        });
    }
    for (index, call) in response.tool_calls.into_iter().enumerate() {
        events.push(StreamEvent::ToolCallDelta {
            index: index as u32,
            id: Some(call.id),
            name: Some(call.name),
            arguments_fragment: Some(crate::canonical_json::to_string(&call.arguments)),
        });
    }
    events.push(StreamEvent::done(response.finish_reason, response.usage));
    futures::stream::iter(events.into_iter().map(Ok)).boxed()
}
