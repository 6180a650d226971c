//! Values a tool call can take from the conversation, as a real model does: the order id
//! the user named, the amount they asked for, an email, a name, a key of a prior tool
//! result.
//!
//! [`Facts::from_messages`] reads the user's messages (their words: ids such as
//! `ORD-1234`, `order 1234` or `#1234`, emails, amounts such as `$25.00`, numbers,
//! dates, capitalized names, quoted text) and the tool results (a JSON result's scalar
//! values under their keys, recursively; a text result's words as above). System
//! prompts and the model's own turns are not read.
//!
//! [`Facts::candidates`] matches a field by name and type: a prior result's key equal to
//! the field's name first (`order_id` <- `{"order_id": "A-7"}`); then facts whose hint
//! shares a word with the field's name (`order_id` <- `ORD-1234` or `order 1234`,
//! `amount` <- `$25.00`); then facts of the kind the field's name or format asks for
//! (`email`, `*_id`, `name`, a number). Only values valid under the field's schema are
//! candidates. Whether a field takes one, and which, is drawn by the caller from its
//! own stream (`schema::generate_with`). Reading is bounded ([`FACTS_MAX`]) and uses no
//! floats beyond parsing decimal text, the same on every platform.

use serde_json::{Number, Value};
use umi_core::llm::Message;

mod long_texts;

/// Facts kept from one conversation at most (the latest messages' are kept first).
pub const FACTS_MAX: usize = 256;

/// Characters of one message read at most.
const MESSAGE_CHARS_MAX: usize = 8_192;

/// Depth a JSON tool result is read to.
const JSON_DEPTH_MAX: usize = 6;

/// Longest quoted text or string value kept, in characters.
const TEXT_CHARS_MAX: usize = 80;

/// Words that start a sentence with a capital and name nobody.
const NOT_NAMES: &[&str] = &[
    "I", "Hi", "Hello", "Hey", "Please", "Thanks", "Thank", "Can", "Could", "Would", "What",
    "When", "Where", "Why", "How", "The", "A", "An", "My", "Our", "Your", "It", "This", "That",
    "Yes", "No", "OK", "Ok", "Dear", "Also", "And", "But", "If",
];

/// Currency signs that make a number an amount.
const CURRENCY: &[char] = &['$', '€', '£', '¥'];

/// What a fact looks like, for fields that ask for one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An identifier: letters and digits (`ORD-1234`, `A7`), a number after an id noun
    /// (`order 1234`), a UUID.
    Id,
    /// An email address.
    Email,
    /// A number; `money` when written with a currency sign.
    Number {
        /// Written with a currency sign (`$25.00`).
        money: bool,
    },
    /// A date (`2025-03-14`).
    Date,
    /// A capitalized name (`Alice`, `Alice Smith`, `Oslo`).
    Name,
    /// Quoted text, or a string value of a tool result.
    Text,
}

/// One value seen in the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// Lower-case words hinting at what it is: a result's key (`order_id`), the word
    /// before it (`order` in `order 1234`), an id's letter prefix (`ord`).
    pub hints: Vec<String>,
    /// The key it was found under in a tool result (lower case), if any.
    pub key: Option<String>,
    /// The value.
    pub value: Value,
    /// What it looks like.
    pub kind: Kind,
}

/// The facts of one conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    facts: Vec<Fact>,
}

impl Facts {
    /// The facts in the user's messages and the tool results of `messages`.
    pub fn from_messages(messages: &[Message]) -> Self {
        let mut facts = Vec::new();
        for message in messages.iter().rev() {
            match message {
                Message::User { content } => read_text_onto(cut(content), &mut facts),
                Message::Tool { content, .. } => {
                    match serde_json::from_str::<Value>(cut(content)) {
                        Ok(value @ (Value::Object(_) | Value::Array(_))) => {
                            read_json(&value, None, 0, &mut facts);
                        }
                        _ => read_text_onto(cut(content), &mut facts),
                    }
                }
                Message::System { .. } | Message::Assistant { .. } => {}
            }
            if facts.len() >= FACTS_MAX {
                break;
            }
        }
        facts.truncate(FACTS_MAX);
        Self { facts }
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    /// The values `field` could take, best matches only (empty when none fits): each
    /// valid under `accepts` (the field's schema, checked by the caller's closure).
    pub fn candidates(
        &self,
        field: &str,
        schema: &Value,
        accepts: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        let words = field_words(field);
        let wants = wanted_kind(&words, schema);
        let mut best = 0;
        let mut out: Vec<Value> = Vec::new();
        for fact in &self.facts {
            let score = score(fact, field, &words, wants);
            if score == 0 || score < best {
                continue;
            }
            let Some(value) = as_type(fact, schema) else {
                continue;
            };
            if !accepts(&value) {
                continue;
            }
            if score > best {
                best = score;
                out.clear();
            }
            if !out.contains(&value) {
                out.push(value);
            }
        }
        out
    }
}

/// `text`'s first [`MESSAGE_CHARS_MAX`] characters. Where they are all ASCII (std checks
/// a word at a time) they are as many bytes; else they are counted a character at a time.
fn cut(text: &str) -> &str {
    let head = &text.as_bytes()[..text.len().min(MESSAGE_CHARS_MAX)];
    if head.is_ascii() {
        // ASCII bytes are whole characters: the cut falls on a boundary.
        return &text[..head.len()];
    }
    match text.char_indices().nth(MESSAGE_CHARS_MAX) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A field name's lower-case words (`orderId`, `order_id`, `order-id` -> order, id).
fn field_words(field: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in field.chars() {
        if !c.is_alphanumeric() {
            words.push(std::mem::take(&mut word));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    words.push(word);
    words.retain(|w| !w.is_empty());
    words
}

/// What kind of fact a field asks for, by its format and its name.
fn wanted_kind(words: &[String], schema: &Value) -> Option<Kind> {
    let has = |w: &[&str]| words.iter().any(|word| w.contains(&word.as_str()));
    match schema.get("format").and_then(Value::as_str) {
        Some("email") => return Some(Kind::Email),
        Some("uuid") => return Some(Kind::Id),
        Some("date" | "date-time") => return Some(Kind::Date),
        _ => {}
    }
    if has(&["email", "mail"]) {
        Some(Kind::Email)
    } else if has(&[
        "amount", "price", "total", "cost", "sum", "refund", "fee", "balance",
    ]) {
        Some(Kind::Number { money: true })
    } else if has(&["id", "number", "code", "ref", "reference", "sku", "no"]) {
        Some(Kind::Id)
    } else if has(&["date", "day", "when"]) {
        Some(Kind::Date)
    } else if has(&[
        "name", "city", "customer", "person", "user", "place", "country",
    ]) {
        Some(Kind::Name)
    } else {
        None
    }
}

/// How well `fact` fits the field: 4 a result key equal to its name, 3 a hint sharing a
/// word with it, 2 the kind its name asks for, 1 a number when the name asks for no
/// kind (a string field does not take it), 0 no fit.
fn score(fact: &Fact, field: &str, words: &[String], wants: Option<Kind>) -> u8 {
    if fact.key.as_deref() == Some(field.to_lowercase().as_str()) {
        return 4;
    }
    let related = |hint: &str, word: &str| {
        hint == word
            || (hint.len() >= 3
                && word.len() >= 3
                && (word.starts_with(hint) || hint.starts_with(word)))
    };
    let kind_fits = match (wants, fact.kind) {
        (Some(Kind::Number { .. }), Kind::Number { .. }) => true,
        (Some(wanted), kind) => wanted == kind,
        (None, _) => false,
    };
    let noun = |w: &String| !matches!(w.as_str(), "id" | "no" | "number" | "code" | "ref");
    let hinted = fact.hints.iter().any(|hint| {
        words
            .iter()
            .filter(|w| noun(w))
            .any(|word| related(hint, word))
    });
    if hinted && (kind_fits || wants.is_none()) {
        3
    } else if kind_fits {
        2
    } else if wants.is_none() && matches!(fact.kind, Kind::Number { .. }) {
        1 // a number for a numeric field the name says nothing about
    } else {
        0
    }
}

/// The fact's value as the schema's type asks (a string field takes an id's text, an
/// integer field an integral number or an all-digit id), or `None`.
fn as_type(fact: &Fact, schema: &Value) -> Option<Value> {
    let types = umi_core::llm::structured::keywords::types_of(schema);
    let allows = |t: &str| types.contains(&t);
    match &fact.value {
        Value::String(text) if allows("string") => Some(Value::String(text.clone())),
        Value::String(text) if allows("integer") && text.chars().all(|c| c.is_ascii_digit()) => {
            text.parse::<i64>().ok().map(|n| Value::Number(n.into()))
        }
        Value::Number(n) if allows("integer") && (n.is_i64() || n.is_u64()) => {
            Some(Value::Number(n.clone()))
        }
        Value::Number(n) if allows("number") => Some(Value::Number(n.clone())),
        Value::Number(n) if allows("string") && fact.kind == Kind::Id => {
            Some(Value::String(n.to_string()))
        }
        Value::Bool(b) if allows("boolean") => Some(Value::Bool(*b)),
        _ => None,
    }
}

/// Facts in a tool result's JSON: every scalar under its key.
fn read_json(value: &Value, key: Option<&str>, depth: usize, facts: &mut Vec<Fact>) {
    if depth > JSON_DEPTH_MAX || facts.len() >= FACTS_MAX {
        return;
    }
    match value {
        Value::Object(map) => {
            for name in umi_core::canonical_json::sorted_keys(map) {
                read_json(&map[name.as_str()], Some(name), depth + 1, facts);
            }
        }
        Value::Array(items) => {
            for item in items {
                read_json(item, key, depth + 1, facts);
            }
        }
        Value::Null => {}
        scalar => {
            let Some(key) = key else { return };
            let lower = key.to_lowercase();
            let kind = match scalar {
                Value::Number(_) => Kind::Number { money: false },
                Value::String(text) if text.contains('@') => Kind::Email,
                Value::String(text) if is_id(text) => Kind::Id,
                _ => Kind::Text,
            };
            if let Value::String(text) = scalar
                && text.chars().count() > TEXT_CHARS_MAX
            {
                return;
            }
            facts.push(Fact {
                hints: field_words(key),
                key: Some(lower),
                value: scalar.clone(),
                kind,
            });
        }
    }
}

/// Letters and digits together (`ORD-1234`, `A7`, a UUID), nothing else but `-`/`_`.
fn is_id(token: &str) -> bool {
    let letters = token.chars().any(|c| c.is_ascii_alphabetic());
    let digits = token.chars().any(|c| c.is_ascii_digit());
    let clean = token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    letters && digits && clean && (2..=64).contains(&token.len())
}

/// The word's characters that can belong to a value (trailing punctuation off).
fn trimmed(word: &str) -> &str {
    word.trim_matches(|c: char| {
        matches!(
            c,
            ',' | ';' | ':' | '!' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '"' | '\''
        )
    })
    .trim_end_matches('.')
}

/// Id nouns: a number after one is an id (`order 1234`, `invoice #7`).
const ID_NOUNS: &[&str] = &[
    "order",
    "invoice",
    "ticket",
    "account",
    "booking",
    "reservation",
    "case",
    "customer",
    "user",
    "item",
    "transaction",
    "payment",
    "shipment",
    "package",
    "id",
    "number",
    "no",
];

/// `read_text(text, facts)`, a long text's facts read once per thread
/// (`long_texts`): what `read_text` adds to `facts` is the start of what it finds
/// in `text` alone, as many as fit under [`FACTS_MAX`] (it reads until `facts` is full;
/// nothing else it does depends on what `facts` holds), and [`Facts::from_messages`]
/// keeps at most that many.
fn read_text_onto(text: &str, facts: &mut Vec<Fact>) {
    if text.len() < super::memo::MEMO_INPUT_BYTES_MIN {
        return read_text(text, facts);
    }
    let alone = long_texts::facts_alone(text);
    let room = FACTS_MAX.saturating_sub(facts.len());
    facts.extend(alone.iter().take(room).cloned());
}

/// Facts in free text: ids, emails, amounts and numbers, dates, names, quoted text.
fn read_text(text: &str, facts: &mut Vec<Fact>) {
    read_quoted(text, facts);
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut previous: Option<String> = None;
    let mut sentence_start = true;
    let mut index = 0;
    while index < words.len() && facts.len() < FACTS_MAX {
        let raw = words[index];
        let word = trimmed(raw);
        // The previous word, as hints; built only for a fact (most words give none).
        let hints = || -> Vec<String> { previous.iter().cloned().collect() };
        index += 1;
        if let Some(fact) = number_fact(word, previous.as_slice()) {
            let id_noun = previous.as_deref().is_some_and(|p| ID_NOUNS.contains(&p));
            if id_noun && let Value::Number(n) = &fact.value {
                facts.push(Fact {
                    hints: hints(),
                    key: None,
                    value: Value::String(n.to_string()),
                    kind: Kind::Id,
                });
            }
            facts.push(fact);
        } else if word.contains('@') && word.contains('.') && !word.starts_with('@') {
            facts.push(Fact {
                hints: vec!["email".into()],
                key: None,
                value: Value::String(word.to_owned()),
                kind: Kind::Email,
            });
        } else if is_date(word) {
            facts.push(Fact {
                hints: hints(),
                key: None,
                value: Value::String(word.to_owned()),
                kind: Kind::Date,
            });
        } else if is_id(word.trim_start_matches('#')) {
            let id = word.trim_start_matches('#');
            let mut id_hints = hints();
            let prefix: String = id.chars().take_while(char::is_ascii_alphabetic).collect();
            if !prefix.is_empty() {
                id_hints.push(prefix.to_lowercase());
            }
            facts.push(Fact {
                hints: id_hints,
                key: None,
                value: Value::String(id.to_owned()),
                kind: Kind::Id,
            });
        } else if is_name(word) && !sentence_start && !NOT_NAMES.contains(&word) {
            let mut name = word.to_owned();
            while index < words.len() && is_name(trimmed(words[index])) {
                name.push(' ');
                name.push_str(trimmed(words[index]));
                index += 1;
            }
            facts.push(Fact {
                hints: hints(),
                key: None,
                value: Value::String(name),
                kind: Kind::Name,
            });
        }
        sentence_start = raw.ends_with(['.', '!', '?']);
        previous = lower_word(word, previous.take());
    }
}

/// `word` in lower case when it is all letters (the next word's hint), else `None`;
/// an ASCII word is lowered into `spare`'s buffer (what `to_lowercase` gives, without
/// a new string per word).
fn lower_word(word: &str, spare: Option<String>) -> Option<String> {
    if word.is_ascii() {
        if word.is_empty() || !word.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
        let mut lower = spare.unwrap_or_default();
        lower.clear();
        lower.push_str(word);
        lower.make_ascii_lowercase();
        return Some(lower);
    }
    let lower = word.to_lowercase();
    (lower.chars().all(char::is_alphabetic) && !lower.is_empty()).then_some(lower)
}

/// `"..."` spans of at most `TEXT_CHARS_MAX` characters.
fn read_quoted(text: &str, facts: &mut Vec<Fact>) {
    let mut parts = text.split('"');
    parts.next();
    while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
        let count = inside.chars().count();
        if count > 0 && count <= TEXT_CHARS_MAX && facts.len() < FACTS_MAX {
            facts.push(Fact {
                hints: Vec::new(),
                key: None,
                value: Value::String(inside.to_owned()),
                kind: Kind::Text,
            });
        }
    }
}

/// A number, with a currency sign or not (`$25.00`, `1,200`, `42`, `-3.5`).
fn number_fact(word: &str, hints: &[String]) -> Option<Fact> {
    // A number has a digit (checked first: most words are not numbers).
    if !word.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let money = word.starts_with(CURRENCY) || word.ends_with(CURRENCY);
    let digits: String = word
        .trim_start_matches(CURRENCY)
        .trim_end_matches(CURRENCY)
        .trim_start_matches('#')
        .chars()
        .filter(|&c| c != ',')
        .collect();
    let body = digits.strip_prefix('-').unwrap_or(&digits);
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let numeric = !whole.is_empty()
        && whole.chars().all(|c| c.is_ascii_digit())
        && fraction.chars().all(|c| c.is_ascii_digit())
        && whole.len() <= 15;
    if !numeric {
        return None;
    }
    let value = if fraction.trim_end_matches('0').is_empty() {
        Number::from(digits.split('.').next()?.parse::<i64>().ok()?)
    } else {
        // Decimal text parses to the same double everywhere (correctly rounded).
        Number::from_f64(digits.parse::<f64>().ok()?)?
    };
    let mut hints = hints.to_vec();
    if money {
        hints.push("amount".into());
    }
    Some(Fact {
        hints,
        key: None,
        value: Value::Number(value),
        kind: Kind::Number { money },
    })
}

fn is_date(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit())
}

fn is_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase)
        && word.chars().count() >= 2
        && chars.all(char::is_lowercase)
}

#[cfg(test)]
mod tests;
