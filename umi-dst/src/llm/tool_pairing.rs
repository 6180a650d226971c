//! The pairing of tool calls and results in a conversation: every call an assistant
//! turn made gets exactly one result before the next turn. SimLLM checks every request
//! it gets with [`unpaired_tool_results`] and keeps what it found; the oracle over what
//! it kept is [`crate::checkers::tool_results`].

use std::collections::BTreeMap;

use umi_core::llm::Message;

/// What is wrong with the pairing of tool calls and results in `messages`, if anything:
/// a call of an assistant turn with no result after it (before the next turn), a call
/// with two, or a result for a call that turn did not make.
pub(super) fn unpaired_tool_results(messages: &[Message]) -> Option<String> {
    let mut index = 0;
    while index < messages.len() {
        let Message::Assistant { tool_calls, .. } = &messages[index] else {
            if let Message::Tool { tool_call_id, .. } = &messages[index] {
                return Some(format!(
                    "message {index}: a result for call {tool_call_id:?} follows no turn that made it"
                ));
            }
            index += 1;
            continue;
        };
        let mut results: BTreeMap<&str, u32> = tool_calls
            .iter()
            .map(|call| (call.id.as_str(), 0))
            .collect();
        let turn = index;
        index += 1;
        while let Some(Message::Tool { tool_call_id, .. }) = messages.get(index) {
            match results.get_mut(tool_call_id.as_str()) {
                Some(count) => *count += 1,
                None => {
                    return Some(format!(
                        "message {index}: a result for call {tool_call_id:?}, which turn {turn} did not make"
                    ));
                }
            }
            index += 1;
        }
        if let Some((id, count)) = results.iter().find(|(_, count)| **count != 1) {
            return Some(format!(
                "turn {turn}: call {id:?} has {count} results (the model must get exactly one)"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use umi_core::llm::ToolCall;

    use super::*;

    fn turn(ids: &[&str]) -> Message {
        Message::Assistant {
            content: String::new(),
            tool_calls: ids
                .iter()
                .map(|id| ToolCall::new(*id, "pay", serde_json::json!({})))
                .collect(),
        }
    }

    fn result(id: &str) -> Message {
        Message::tool_result(id, "ok", true)
    }

    #[test]
    fn each_call_needs_exactly_one_result() {
        let user = Message::user("pay");
        let fine = [
            user.clone(),
            turn(&["a", "b"]),
            result("b"),
            result("a"),
            Message::user("thanks"),
        ];
        assert_eq!(unpaired_tool_results(&fine), None);
        let missing = [
            user.clone(),
            turn(&["a", "b"]),
            result("a"),
            Message::user("and?"),
        ];
        assert!(
            unpaired_tool_results(&missing)
                .unwrap()
                .contains("\"b\" has 0 results")
        );
        let twice = [user.clone(), turn(&["a"]), result("a"), result("a")];
        assert!(
            unpaired_tool_results(&twice)
                .unwrap()
                .contains("\"a\" has 2 results")
        );
        let stranger = [user.clone(), turn(&["a"]), result("a"), result("z")];
        assert!(
            unpaired_tool_results(&stranger)
                .unwrap()
                .contains("did not make")
        );
        let orphan = [user.clone(), result("a")];
        assert!(
            unpaired_tool_results(&orphan)
                .unwrap()
                .contains("follows no turn")
        );
        // A request may not end on calls without their results either: providers refuse it.
        let pending = [user, turn(&["a"])];
        assert!(
            unpaired_tool_results(&pending)
                .unwrap()
                .contains("\"a\" has 0 results")
        );
    }
}
