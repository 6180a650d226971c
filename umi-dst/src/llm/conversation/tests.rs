//! What the conversation reader finds in messages and tool results, and how a field is
//! matched to it.

use serde_json::json;

use super::*;

#[test]
fn a_word_is_lowered_as_to_lowercase_lowers_it() {
    let reference = |word: &str| {
        let lower = word.to_lowercase();
        (lower.chars().all(char::is_alphabetic) && !lower.is_empty()).then_some(lower)
    };
    let words = [
        "",
        "Order",
        "ORDER",
        "order",
        "id42",
        "x-y",
        "ÉLAN",
        "İD",
        "ΣΟΦΟΣ",
        "\u{212A}elvin",
        "naïve",
        "12",
        "a",
    ];
    for word in words {
        for spare in [None, Some("leftover text".to_owned())] {
            assert_eq!(lower_word(word, spare), reference(word), "{word}");
        }
    }
}

fn any(_: &Value) -> bool {
    true
}

#[test]
fn ids_amounts_and_emails_come_from_the_user() {
    let messages = [
        Message::system("You are a support agent for ACME-9 orders."),
        Message::user(
            "Hi, refund order ORD-1234 please: $25.00. Mail me at bob@example.com. Thanks, Alice Smith",
        ),
    ];
    let facts = Facts::from_messages(&messages);
    let string = json!({"type": "string"});
    assert_eq!(
        facts.candidates("order_id", &string, any),
        [json!("ORD-1234")]
    );
    assert_eq!(
        facts.candidates("amount", &json!({"type": "number"}), any),
        [json!(25)]
    );
    assert_eq!(
        facts.candidates("email", &string, any),
        [json!("bob@example.com")]
    );
    assert_eq!(
        facts.candidates("customer_name", &string, any),
        [json!("Alice Smith")]
    );
    assert!(facts.candidates("reason", &string, any).is_empty());
    assert!(
        facts
            .candidates("order_id", &json!({"type": "integer"}), any)
            .is_empty(),
        "an id with letters is not an integer"
    );
}

#[test]
fn a_number_after_an_id_noun_is_an_id_and_results_give_keys() {
    let messages = [
        Message::user("Where is order 1234?"),
        Message::tool_result(
            "c1",
            r#"{"order": {"order_id": "A-77", "total": 12.5}}"#,
            true,
        ),
    ];
    let facts = Facts::from_messages(&messages);
    assert_eq!(
        facts.candidates("order_id", &json!({"type": "string"}), any),
        [json!("A-77")],
        "a result key equal to the field's name wins"
    );
    assert_eq!(
        facts.candidates("orderId", &json!({"type": "integer"}), any),
        [json!(1234)]
    );
    assert_eq!(
        facts.candidates("total", &json!({"type": "number"}), any),
        [json!(12.5)]
    );
}

#[test]
fn field_names_split_into_words() {
    assert_eq!(field_words("orderId"), ["order", "id"]);
    assert_eq!(field_words("order_id"), ["order", "id"]);
    assert_eq!(field_words("customer-email"), ["customer", "email"]);
}

/// `from_messages` as it read before the memo: every text read onto the facts so
/// far, in place.
fn from_messages_in_place(messages: &[Message]) -> Vec<Fact> {
    let mut facts = Vec::new();
    for message in messages.iter().rev() {
        match message {
            Message::User { content } => read_text(cut(content), &mut facts),
            // A text result (these tests send no JSON one).
            Message::Tool { content, .. } => read_text(cut(content), &mut facts),
            _ => {}
        }
        if facts.len() >= FACTS_MAX {
            break;
        }
    }
    facts.truncate(FACTS_MAX);
    facts
}

/// Pins the memo of long texts (issue 41): the facts of every conversation are the
/// ones reading each text in place gives, whether the facts before it fill the limit
/// or not, and where a pair of facts (`order 1234`: an id and a number) straddles it.
#[test]
fn a_long_texts_facts_from_the_memo_are_the_facts_read_in_place() {
    let filler = "the full transcript follows. ".repeat(200);
    let facts_text = |count: usize, quoted: bool| {
        let mut text = filler.clone();
        for index in 0..count {
            text.push_str(&format!(
                " then order {} for Alice Smith on 2024-05-{:02}",
                1000 + index,
                1 + index % 28
            ));
            if quoted {
                text.push_str(&format!(" \"note {index}\""));
            }
        }
        text
    };
    let texts = [
        filler.clone(),
        facts_text(3, false),
        facts_text(40, true),
        facts_text(130, false),
        facts_text(300, true),
    ];
    for text in &texts {
        assert!(
            text.len() >= super::super::memo::MEMO_INPUT_BYTES_MIN,
            "a long text"
        );
    }
    let short = "order 77 for Bob Jones".to_owned();
    for first in 0..texts.len() {
        for second in 0..texts.len() {
            for with_short in [false, true] {
                let mut messages = vec![Message::user(texts[first].clone())];
                if with_short {
                    messages.push(Message::user(short.clone()));
                }
                // The second long text as a tool's text result (not JSON).
                messages.push(Message::tool_result("call_1", texts[second].clone(), true));
                // Three times: the memo stores a text the second time it reads it and
                // answers from it the third.
                for round in 0..3 {
                    assert_eq!(
                        Facts::from_messages(&messages).facts,
                        from_messages_in_place(&messages),
                        "texts {first} and {second}, short {with_short}, round {round}"
                    );
                }
            }
        }
    }
}

/// `cut`'s ASCII shortcut gives what counting characters gives, at every length around
/// the limit and with a multi-byte character before, at or after it.
#[test]
fn a_cut_keeps_the_first_characters_whether_or_not_they_are_ascii() {
    fn by_characters(text: &str) -> &str {
        match text.char_indices().nth(MESSAGE_CHARS_MAX) {
            Some((end, _)) => &text[..end],
            None => text,
        }
    }
    for len in [
        0,
        1,
        MESSAGE_CHARS_MAX - 1,
        MESSAGE_CHARS_MAX,
        MESSAGE_CHARS_MAX + 1,
        3 * MESSAGE_CHARS_MAX,
    ] {
        let ascii = "a".repeat(len);
        assert_eq!(cut(&ascii), by_characters(&ascii), "{len} ASCII bytes");
        for at in [0, len / 2, len.saturating_sub(1), len] {
            let mut text = "a".repeat(at);
            text.push('\u{e9}');
            text.push_str(&"b".repeat(len.saturating_sub(at)));
            assert_eq!(
                cut(&text),
                by_characters(&text),
                "{len} characters, é at {at}"
            );
        }
    }
    assert_eq!(
        cut(&"a".repeat(MESSAGE_CHARS_MAX + 5)).len(),
        MESSAGE_CHARS_MAX
    );
}
