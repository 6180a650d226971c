//! Property tests of the StreamCollector: every fragmentation of a valid stream
//! reassembles to the same response; every broken stream gives its typed error.

use proptest::prelude::*;
use serde_json::{Value, json};
use umi_core::llm::{
    CompletionResponse, FinishReason, LlmError, StreamCollector, StreamEvent, TokenUsage, ToolCall,
};

use crate::support::{SplitMix, proptest_config};

/// JSON values with awkward strings: quotes, backslashes, control characters, accents,
/// CJK and astral-plane emoji (surrogate pairs when escaped).
fn json_value() -> impl Strategy<Value = Value> {
    let text = prop::string::string_regex("[a-z\"\\\\\n\té東😀 ]{0,12}").unwrap();
    let leaf = prop_oneof![
        text.prop_map(Value::String),
        any::<i32>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn arguments() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z_]{1,8}", json_value(), 0..4)
        .prop_map(|map| Value::Object(map.into_iter().collect()))
}

fn finish_reason() -> impl Strategy<Value = FinishReason> {
    prop_oneof![
        Just(FinishReason::Stop),
        Just(FinishReason::Length),
        Just(FinishReason::ToolCalls),
        Just(FinishReason::ContentFilter),
    ]
}

fn response() -> impl Strategy<Value = CompletionResponse> {
    (
        "\\PC{0,40}",
        prop::collection::vec(("[a-z_]{1,10}", arguments()), 0..4),
        finish_reason(),
        prop::option::of((any::<u16>(), any::<u16>())),
    )
        .prop_map(|(text, calls, finish_reason, counts)| CompletionResponse {
            text,
            tool_calls: calls
                .into_iter()
                .enumerate()
                .map(|(i, (name, arguments))| ToolCall::new(format!("call-{i}"), name, arguments))
                .collect(),
            reasoning: None,
            finish_reason,
            usage: counts
                .map(|(prompt, completion)| TokenUsage::new(prompt.into(), completion.into())),
            model: "m".into(),
        })
}

/// JSON text with every non-ASCII character written as a `\u` escape (surrogate pairs
/// for the astral plane), as some providers send it.
fn ascii_escaped(value: &Value) -> String {
    let mut out = String::new();
    for c in value.to_string().chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Splits `text` into 1 to 5 pieces at random char boundaries.
fn split(text: &str, rng: &mut SplitMix) -> Vec<String> {
    let boundaries: Vec<usize> = (1..text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    let mut cuts: Vec<usize> = (0..rng.below(5))
        .filter_map(|_| boundaries.get(rng.below(boundaries.len())).copied())
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([text.len()]) {
        pieces.push(text[start..cut].to_owned());
        start = cut;
    }
    pieces
}

/// A random valid stream for `response`: text and calls split and interleaved, id and
/// name in the first delta only (sometimes repeated), arguments raw or `\u`-escaped,
/// usage before, inside or after Done.
fn fragment(response: &CompletionResponse, rng: &mut SplitMix) -> Vec<StreamEvent> {
    let mut queues: Vec<Vec<StreamEvent>> = Vec::new();
    queues.push(
        split(&response.text, rng)
            .into_iter()
            .filter(|t| !t.is_empty())
            .map(StreamEvent::text)
            .collect(),
    );
    for (index, call) in response.tool_calls.iter().enumerate() {
        let text = if rng.below(2) == 0 {
            call.arguments.to_string()
        } else {
            ascii_escaped(&call.arguments)
        };
        let mut events = Vec::new();
        for (n, piece) in split(&text, rng).into_iter().enumerate() {
            let repeat_header = n == 0 || rng.below(4) == 0;
            events.push(StreamEvent::ToolCallDelta {
                index: index as u32,
                id: repeat_header.then(|| call.id.clone()),
                name: repeat_header.then(|| call.name.clone()),
                arguments_fragment: Some(piece),
            });
        }
        queues.push(events);
    }
    let mut events = Vec::new();
    let text_first = rng.below(2) == 0;
    if text_first {
        events.append(&mut queues[0]);
    }
    while queues.iter().any(|q| !q.is_empty()) {
        let live: Vec<usize> = (0..queues.len())
            .filter(|&i| !queues[i].is_empty())
            .collect();
        let pick = live[rng.below(live.len())];
        events.push(queues[pick].remove(0));
    }
    let finish = response.finish_reason.clone();
    let Some(usage) = response.usage else {
        // Absent usage stays absent: no usage event anywhere.
        events.push(StreamEvent::done(finish, None));
        return events;
    };
    let usage_event = StreamEvent::Usage { usage };
    match rng.below(3) {
        0 => {
            events.push(usage_event);
            events.push(StreamEvent::done(finish, None));
        }
        1 => events.push(StreamEvent::done(finish, Some(usage))),
        _ => {
            events.push(StreamEvent::done(finish, None));
            events.push(usage_event);
        }
    }
    events
}

fn collect(events: &[StreamEvent]) -> Result<CompletionResponse, LlmError> {
    let mut collector = StreamCollector::new("m");
    for event in events {
        collector.push(event.clone())?;
    }
    collector.finish()
}

proptest! {
    #![proptest_config(proptest_config(512))]

    #[test]
    fn any_fragmentation_reassembles_the_response(response in response(), seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let events = fragment(&response, &mut rng);
        prop_assert_eq!(collect(&events), Ok(response.clone()));
        // A second, different fragmentation of the same response agrees.
        let again = fragment(&response, &mut rng);
        prop_assert_eq!(collect(&again), Ok(response));
    }

    #[test]
    fn a_cut_stream_is_truncated_or_empty(response in response(), seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let events = fragment(&response, &mut rng);
        let done_at = events.iter().position(StreamEvent::is_done).unwrap();
        let keep = rng.below(done_at + 1);
        let expected = if keep == 0 { LlmError::EmptyStream } else { LlmError::StreamTruncated { events_received: keep as u64 } };
        prop_assert_eq!(collect(&events[..keep]), Err(expected));
    }

    #[test]
    fn cut_arguments_are_a_json_error_naming_the_call(response in response(), seed in any::<u64>()) {
        prop_assume!(!response.tool_calls.is_empty());
        let mut rng = SplitMix(seed);
        let victim = rng.below(response.tool_calls.len());
        let full = response.tool_calls[victim].arguments.to_string();
        // Dropping the closing brace leaves JSON that cannot parse.
        let mut events: Vec<StreamEvent> = fragment(&response, &mut rng)
            .into_iter()
            .filter(|e| !matches!(e, StreamEvent::ToolCallDelta { index, .. } if *index as usize == victim))
            .collect();
        events.insert(0, StreamEvent::ToolCallDelta {
            index: victim as u32,
            id: Some("v".into()),
            name: Some("victim".into()),
            arguments_fragment: Some(full[..full.len() - 1].to_owned()),
        });
        let error = collect(&events).unwrap_err();
        prop_assert!(matches!(error, LlmError::Json { .. }), "{error}");
        let expected = format!("tool call {victim} (victim)");
        prop_assert!(error.to_string().contains(&expected), "{error}");
    }

    #[test]
    fn an_index_over_the_limit_is_refused(index in 64u32..10_000, response in response()) {
        let mut events = vec![StreamEvent::ToolCallDelta { index, id: Some("x".into()), name: Some("t".into()), arguments_fragment: None }];
        events.push(StreamEvent::done(response.finish_reason, None));
        let error = collect(&events).unwrap_err();
        prop_assert_eq!(error, LlmError::TooManyToolCalls { calls: index + 1, limit: 64 });
    }
}
