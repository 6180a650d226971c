//! Context trimming after an overflow: drop the oldest turns, keep what must stay.
//!
//! Messages other than system ones are grouped into turns: an assistant message that
//! calls tools together with the tool results that answer it, or any other message on its
//! own. Trimming removes whole turns, oldest first, so a tool call is never separated
//! from its result (providers reject that). System messages, the newest user message
//! (the task the agent is working on) and the newest turn are never removed.

use crate::llm::Message;

/// The turns of `messages`: ranges of indices, oldest first, system messages excluded.
pub(crate) fn turns(messages: &[Message]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut index = 0;
    while index < messages.len() {
        match &messages[index] {
            Message::System { .. } => index += 1,
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                let start = index;
                index += 1;
                while let Some(Message::Tool { tool_call_id, .. }) = messages.get(index) {
                    if !tool_calls.iter().any(|call| &call.id == tool_call_id) {
                        break;
                    }
                    index += 1;
                }
                out.push(start..index);
            }
            Message::User { .. } | Message::Assistant { .. } | Message::Tool { .. } => {
                out.push(index..index + 1);
                index += 1;
            }
        }
    }
    out
}

/// Removes the oldest turns until `fits(messages)` or only the turns that must stay are
/// left (the newest turn, and the one holding the newest user message); always removes
/// at least one. Returns how many messages went, or `None` if nothing could be removed.
pub(crate) fn trim_oldest(
    messages: &mut Vec<Message>,
    fits: impl Fn(&[Message]) -> bool,
) -> Option<usize> {
    let mut removed = 0;
    loop {
        let turns = turns(messages);
        let task = messages
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }));
        let Some(oldest) = turns[..turns.len().saturating_sub(1)]
            .iter()
            .find(|turn| task.is_none_or(|task| !turn.contains(&task)))
            .cloned()
        else {
            break;
        };
        removed += oldest.len();
        messages.drain(oldest);
        if fits(messages) {
            break;
        }
    }
    (removed > 0).then_some(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;
    use serde_json::json;

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("be brief"),
            Message::user("first"),
            Message::assistant_tool_calls(
                "",
                vec![
                    ToolCall::new("a", "t", json!({})),
                    ToolCall::new("b", "t", json!({})),
                ],
            ),
            Message::tool_result("a", "ra", true),
            Message::tool_result("b", "rb", true),
            Message::assistant("answer one"),
            Message::user("second"),
        ]
    }

    #[test]
    fn tool_calls_stay_with_their_results() {
        let groups = turns(&conversation());
        assert_eq!(groups, vec![1..2, 2..5, 5..6, 6..7]);
    }

    #[test]
    fn trimming_keeps_system_and_the_newest_turn() {
        let mut messages = conversation();
        let removed = trim_oldest(&mut messages, |m| m.len() <= 4).unwrap();
        assert_eq!(removed, 4, "the first user turn and the whole tool turn");
        assert_eq!(
            messages,
            vec![
                Message::system("be brief"),
                Message::assistant("answer one"),
                Message::user("second")
            ]
        );
        let mut last = vec![Message::system("s"), Message::user("only")];
        assert_eq!(trim_oldest(&mut last, |_| false), None);
    }

    #[test]
    fn trimming_keeps_the_task_behind_newer_tool_turns() {
        let mut messages = conversation();
        messages.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::new("c", "t", json!({}))],
        ));
        messages.push(Message::tool_result("c", "rc", true));
        let removed = trim_oldest(&mut messages, |_| false).unwrap();
        assert_eq!(
            removed, 5,
            "everything before the task goes, nothing after it"
        );
        assert_eq!(
            messages,
            vec![
                Message::system("be brief"),
                Message::user("second"),
                Message::assistant_tool_calls("", vec![ToolCall::new("c", "t", json!({}))]),
                Message::tool_result("c", "rc", true),
            ]
        );
    }
}
