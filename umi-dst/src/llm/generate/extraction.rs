//! Entity extraction: the names in the text, typed by simple rules, with seeded
//! confidences, relations between people and organizations, and a `Note_<hash>` entity
//! when the text names nothing.

use sha2::{Digest, Sha256};
use umi_core::constants::{
    ENTITY_CONTENT_BYTES_MAX, ENTITY_NAME_BYTES_MAX, EXTRACTION_ENTITIES_MAX,
};
use umi_core::llm::CompletionRequest;
use umi_core::memory::tasks::{ExtractedEntity, ExtractedRelation, Extraction, extraction_input};
use umi_core::storage::EntityType;

use super::{confidence, cut};
use crate::llm::route::Generated;
use crate::rng::DeterministicRng;

/// Entities one simulated extraction returns at most (fewer than the parser allows).
const SIM_ENTITIES_MAX: usize = 12;
const _: () = assert!(SIM_ENTITIES_MAX <= EXTRACTION_ENTITIES_MAX);

/// Bytes of text a `Note_` entity keeps.
const NOTE_CONTENT_BYTES: usize = 200;
const _: () = assert!(NOTE_CONTENT_BYTES <= ENTITY_CONTENT_BYTES_MAX);

// The word lists below are `match`es, not sorted lists searched: LLVM branches on the
// length and compares fixed sizes inline, where a binary search over `&str`s makes a
// `memcmp` call per probe (`type_of` asks up to four of them about every word of a name).

/// First names that make a name a person's.
fn is_first_name(word: &str) -> bool {
    matches!(
        word,
        "Alice"
            | "Amir"
            | "Bob"
            | "Carol"
            | "Chen"
            | "Dave"
            | "Eve"
            | "Frank"
            | "Grace"
            | "Heidi"
            | "Ingrid"
            | "Ivan"
            | "Judy"
            | "Lars"
            | "Mallory"
            | "Maria"
            | "Niaj"
            | "Olivia"
            | "Peggy"
            | "Priya"
            | "Rupert"
            | "Sybil"
            | "Trent"
            | "Victor"
            | "Walter"
            | "Yuki"
            | "Zoe"
    )
}

/// Words that make a name an organization's.
fn is_org_word(word: &str) -> bool {
    matches!(
        word,
        "Acme"
            | "Anthropic"
            | "Bank"
            | "Corp"
            | "Foundation"
            | "Globex"
            | "Google"
            | "Group"
            | "Inc"
            | "Initech"
            | "Institute"
            | "LLC"
            | "Labs"
            | "Ltd"
            | "Microsoft"
            | "OpenAI"
            | "Team"
            | "University"
    )
}

/// Words that make a name a place's.
fn is_place(word: &str) -> bool {
    matches!(
        word,
        "Africa"
            | "Asia"
            | "Berlin"
            | "Boston"
            | "Europe"
            | "Kyoto"
            | "Lima"
            | "Lisbon"
            | "London"
            | "Madrid"
            | "Nairobi"
            | "Oslo"
            | "Paris"
            | "Seattle"
            | "Sydney"
            | "Tokyo"
            | "Toronto"
            | "York"
    )
}

/// Words that make a name an event's.
fn is_event_word(word: &str) -> bool {
    matches!(
        word,
        "Conference" | "Launch" | "Meeting" | "Retreat" | "Review" | "Summit" | "Workshop"
    )
}

/// Words that start a sentence but name nothing (asked about a capitalized run's words
/// until one is not).
fn is_stopword(word: &str) -> bool {
    matches!(
        word,
        "A" | "After"
            | "Also"
            | "An"
            | "And"
            | "Are"
            | "At"
            | "Before"
            | "But"
            | "Do"
            | "Does"
            | "Friday"
            | "He"
            | "Her"
            | "His"
            | "How"
            | "I"
            | "If"
            | "In"
            | "Is"
            | "It"
            | "Monday"
            | "My"
            | "Note"
            | "On"
            | "Or"
            | "Our"
            | "Please"
            | "Remember"
            | "Saturday"
            | "She"
            | "So"
            | "Sunday"
            | "That"
            | "The"
            | "Their"
            | "Then"
            | "These"
            | "They"
            | "This"
            | "Those"
            | "Thursday"
            | "Today"
            | "Tomorrow"
            | "Tuesday"
            | "Was"
            | "We"
            | "Wednesday"
            | "What"
            | "When"
            | "Where"
            | "Which"
            | "Who"
            | "Why"
            | "Yesterday"
            | "Your"
    )
}

/// A name: the words of one capitalized run, joined by single spaces, and where the run
/// started in the text.
struct Found {
    name: String,
    at: usize,
}

/// Capitalized word runs (`Acme Corp`), first occurrence order, without leading
/// stopwords. One pass over the text; punctuation after a word ends its run ("Alice,
/// Bob" are two names).
///
/// The words are the text's between ASCII whitespace, trimmed of what is not
/// alphanumeric at either end, and a word is capitalized when its first character is
/// uppercase and another follows (by Unicode's rules: `names_in_by_characters`, in the
/// tests, is that definition walked a character at a time, and a property test holds the
/// two equal). Most words are ASCII at both ends, and those are looked at a byte at a
/// time.
fn names_in(text: &str) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let mut run: Vec<(usize, &str)> = Vec::new();
    let mut joined = String::new();
    let mut flush = |run: &mut Vec<(usize, &str)>| {
        let start = run
            .iter()
            .position(|(_, word)| !is_stopword(word))
            .unwrap_or(run.len());
        if let Some(&(at, _)) = run.get(start)
            && found.len() < SIM_ENTITIES_MAX
        {
            let name = joined_by_spaces(text, &run[start..], &mut joined);
            // Compared byte by byte in place: names are short, and most pairs differ at
            // their first byte.
            let seen = |f: &Found| f.name.as_bytes().iter().eq(name.as_bytes());
            if name.len() <= ENTITY_NAME_BYTES_MAX && !found.iter().any(seen) {
                found.push(Found {
                    name: name.to_owned(),
                    at,
                });
            }
        }
        run.clear();
    };
    for (raw_at, raw) in words_between_ascii_whitespace(text) {
        let word = trim_to_alphanumeric(raw);
        if is_capitalized(word) {
            let at = raw_at + (word.as_ptr() as usize - raw.as_ptr() as usize);
            run.push((at, word));
        } else if !run.is_empty() {
            flush(&mut run);
        }
        let ends_a_clause = raw
            .as_bytes()
            .last()
            .is_some_and(|byte| matches!(byte, b',' | b'.' | b';' | b':' | b'!' | b'?' | b')'));
        if !run.is_empty() && ends_a_clause {
            flush(&mut run);
        }
    }
    flush(&mut run);
    found
}

/// The words of `run` (each `(offset, word)`, a piece of `text`; at least one) joined by
/// single spaces: the piece of `text` they span when one space is all that parts them
/// there, as it mostly is, else written into `joined`.
fn joined_by_spaces<'a>(
    text: &'a str,
    run: &[(usize, &'a str)],
    joined: &'a mut String,
) -> &'a str {
    let (first_at, _) = run[0];
    let (last_at, last) = run[run.len() - 1];
    let spanned = &text[first_at..last_at + last.len()];
    let words_bytes: usize = run.iter().map(|(_, word)| word.len()).sum();
    // The span holds the words in order and nothing else but its gaps; gaps of one byte
    // each, all spaces, make it the joined name.
    let one_space_each = spanned.len() == words_bytes + run.len() - 1
        && run
            .windows(2)
            .all(|pair| text.as_bytes()[pair[0].0 + pair[0].1.len()] == b' ');
    if one_space_each {
        return spanned;
    }
    joined.clear();
    for (index, (_, word)) in run.iter().enumerate() {
        if index > 0 {
            joined.push(' ');
        }
        joined.push_str(word);
    }
    joined
}

/// The words of `text` between ASCII whitespace, as `split_ascii_whitespace` gives them,
/// each with its byte offset in `text`.
fn words_between_ascii_whitespace(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        if at == bytes.len() {
            return None;
        }
        let start = at;
        while bytes
            .get(at)
            .is_some_and(|byte| !byte.is_ascii_whitespace())
        {
            at += 1;
        }
        // ASCII whitespace is never inside a character: both ends are boundaries.
        Some((start, &text[start..at]))
    })
}

/// `raw` without the characters at either end that are not alphanumeric, as
/// `raw.trim_matches(|c: char| !c.is_alphanumeric())` gives it: the ASCII ones stripped
/// a byte at a time, and the characters' rules asked only when a non-ASCII character is
/// left at an end.
#[inline]
fn trim_to_alphanumeric(raw: &str) -> &str {
    let bytes = raw.as_bytes();
    if bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
    {
        return raw;
    }
    let is_ascii_other = |byte: &u8| byte.is_ascii() && !byte.is_ascii_alphanumeric();
    let start = bytes
        .iter()
        .position(|byte| !is_ascii_other(byte))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|byte| !is_ascii_other(byte))
        .map_or(start, |last| last + 1);
    // ASCII bytes are whole characters: both cuts fall on boundaries.
    let rest = &raw[start..end.max(start)];
    match (rest.as_bytes().first(), rest.as_bytes().last()) {
        (Some(first), Some(last)) if first.is_ascii() && last.is_ascii() => rest,
        _ => rest.trim_matches(|c: char| !c.is_alphanumeric()),
    }
}

/// Whether `word`'s first character is uppercase and another follows it.
#[inline]
fn is_capitalized(word: &str) -> bool {
    match word.as_bytes().first() {
        None => false,
        Some(first) if first.is_ascii() => first.is_ascii_uppercase() && word.len() > 1,
        Some(_) => {
            let mut chars = word.chars();
            chars.next().is_some_and(char::is_uppercase) && chars.next().is_some()
        }
    }
}

fn type_of(name: &str, rng: &mut DeterministicRng) -> EntityType {
    if name.split(' ').any(is_org_word) {
        EntityType::Organization
    } else if name.split(' ').next().is_some_and(is_first_name) {
        EntityType::Person
    } else if name.split(' ').any(is_place) {
        EntityType::Place
    } else if name.split(' ').any(is_event_word) {
        EntityType::Event
    } else if rng.bool_with(0.5) {
        EntityType::Project
    } else {
        EntityType::Topic
    }
}

/// The sentence of `text` around byte `at`, trimmed.
fn sentence_at(text: &str, at: usize) -> String {
    // The ends are ASCII, never inside a character: found a byte at a time.
    let is_end = |byte: &u8| matches!(byte, b'.' | b'!' | b'?' | b'\n');
    let bytes = text.as_bytes();
    let start = bytes[..at].iter().rposition(is_end).map_or(0, |i| i + 1);
    let end = bytes[at..]
        .iter()
        .position(is_end)
        .map_or(text.len(), |i| at + i);
    cut(text[start..end].trim(), ENTITY_CONTENT_BYTES_MAX).to_owned()
}

/// The extraction answer for `request`.
pub(crate) fn generate(request: &CompletionRequest, rng: &mut DeterministicRng) -> Generated {
    let text = extraction_input(request)
        .unwrap_or_else(|| request.last_user_text().unwrap_or("").to_owned());
    let mut entities: Vec<ExtractedEntity> = names_in(&text)
        .into_iter()
        .map(|found| ExtractedEntity {
            entity_type: type_of(&found.name, rng),
            content: sentence_at(&text, found.at),
            confidence: confidence(rng, 0.6, 1.0),
            name: found.name,
        })
        .collect();
    if entities.is_empty() {
        let digest = Sha256::digest(text.as_bytes());
        let hash = umi_core::hex::lower(&digest[..4]);
        entities.push(ExtractedEntity {
            name: format!("Note_{hash}"),
            entity_type: EntityType::Note,
            content: cut(&text, NOTE_CONTENT_BYTES).to_owned(),
            confidence: 0.5,
        });
    }
    let mut relations = Vec::new();
    let people: Vec<&ExtractedEntity> = entities
        .iter()
        .filter(|e| e.entity_type == EntityType::Person)
        .collect();
    let orgs: Vec<&ExtractedEntity> = entities
        .iter()
        .filter(|e| e.entity_type == EntityType::Organization)
        .collect();
    for person in &people {
        if let Some(org) = rng.choose(&orgs)
            && rng.bool_with(0.6)
        {
            relations.push(ExtractedRelation {
                source: person.name.clone(),
                target: org.name.clone(),
                kind: "works_at".into(),
            });
        }
    }
    if people.len() >= 2 && rng.bool_with(0.4) {
        relations.push(ExtractedRelation {
            source: people[0].name.clone(),
            target: people[1].name.clone(),
            kind: "knows".into(),
        });
    }
    let answer = Extraction {
        entities,
        relations,
    };
    Generated::json(answer_json(&answer))
}

/// About the bytes of an answer's JSON beyond its strings: keys, quotes, a type and a
/// confidence per entity, keys and quotes per relation, and the object around them. The
/// JSON is written into a buffer this much larger than its strings, so it seldom grows
/// (an escaped character, or an organization's longer type, can still make it).
const ENTITY_JSON_BYTES_OVERHEAD: usize = 64;
const RELATION_JSON_BYTES_OVERHEAD: usize = 48;
const ANSWER_JSON_BYTES_OVERHEAD: usize = 32;

/// `answer` as compact JSON.
fn answer_json(answer: &Extraction) -> String {
    let entities_bytes: usize = answer
        .entities
        .iter()
        .map(|e| e.name.len() + e.content.len() + ENTITY_JSON_BYTES_OVERHEAD)
        .sum();
    let relations_bytes: usize = answer
        .relations
        .iter()
        .map(|r| r.source.len() + r.target.len() + r.kind.len() + RELATION_JSON_BYTES_OVERHEAD)
        .sum();
    let mut json =
        Vec::with_capacity(entities_bytes + relations_bytes + ANSWER_JSON_BYTES_OVERHEAD);
    serde_json::to_writer(&mut json, answer).expect("an extraction always serializes");
    String::from_utf8(json).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_names_and_drops_stopwords() {
        let text = "Yesterday Alice met Bob at Acme Corp in Paris. The Summit was long.";
        let names: Vec<String> = names_in(text).into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["Alice", "Bob", "Acme Corp", "Paris", "Summit"]);
        assert!(names_in("nothing capitalized here").is_empty());
        let found = names_in(text);
        assert_eq!(&text[found[2].at..found[2].at + 4], "Acme");
        assert_eq!(sentence_at(text, found[4].at), "The Summit was long");
        assert_eq!(
            sentence_at(text, found[0].at),
            "Yesterday Alice met Bob at Acme Corp in Paris"
        );
    }

    #[test]
    fn names_are_typed_by_their_words_in_order() {
        let mut rng = DeterministicRng::new(7);
        for (name, expected) in [
            ("Acme Corp", EntityType::Organization),
            ("Alice Team", EntityType::Organization),
            ("Zoe Smith", EntityType::Person),
            ("Berlin Summit", EntityType::Place),
            ("New York", EntityType::Place),
            ("Launch Review", EntityType::Event),
            ("LLC", EntityType::Organization),
        ] {
            assert_eq!(type_of(name, &mut rng), expected, "{name}");
        }
        // A first name counts only first; a name no list knows is drawn.
        let drawn = type_of("Smith Zoe", &mut rng);
        assert!(
            matches!(drawn, EntityType::Project | EntityType::Topic),
            "{drawn:?}"
        );
    }

    #[test]
    fn words_are_trimmed_and_capitalized_by_characters() {
        assert_eq!(trim_to_alphanumeric("(Paris)."), "Paris");
        assert_eq!(trim_to_alphanumeric("«Zoë»"), "Zoë");
        assert_eq!(trim_to_alphanumeric("—"), "");
        assert_eq!(trim_to_alphanumeric("..."), "");
        assert_eq!(trim_to_alphanumeric("a"), "a");
        assert!(is_capitalized("Ab") && is_capitalized("Éa") && is_capitalized("Ωμ"));
        assert!(!is_capitalized("A") && !is_capitalized("É") && !is_capitalized("ab"));
        assert!(!is_capitalized("") && !is_capitalized("1A") && !is_capitalized("ée"));
    }

    /// What `names_in` finds, defined a character at a time (its first form): the
    /// byte-at-a-time walk must find the same names at the same offsets.
    fn names_in_by_characters(text: &str) -> Vec<(String, usize)> {
        let mut found: Vec<(String, usize)> = Vec::new();
        let mut run: Vec<(usize, &str)> = Vec::new();
        let mut flush = |run: &mut Vec<(usize, &str)>| {
            let start = run
                .iter()
                .position(|(_, word)| !is_stopword(word))
                .unwrap_or(run.len());
            if let Some(&(at, _)) = run.get(start)
                && found.len() < SIM_ENTITIES_MAX
            {
                let words: Vec<&str> = run[start..].iter().map(|(_, word)| *word).collect();
                let joined = words.join(" ");
                if joined.len() <= ENTITY_NAME_BYTES_MAX && !found.iter().any(|f| f.0 == joined) {
                    found.push((joined, at));
                }
            }
            run.clear();
        };
        for raw in text.split_ascii_whitespace() {
            let raw_at = raw.as_ptr() as usize - text.as_ptr() as usize;
            let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
            let mut chars = word.chars();
            let capitalized =
                chars.next().is_some_and(char::is_uppercase) && chars.next().is_some();
            if capitalized {
                let at = raw_at + (word.as_ptr() as usize - raw.as_ptr() as usize);
                run.push((at, word));
            } else if !run.is_empty() {
                flush(&mut run);
            }
            if !run.is_empty() && raw.ends_with([',', '.', ';', ':', '!', '?', ')']) {
                flush(&mut run);
            }
        }
        flush(&mut run);
        found
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 1024,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x4E41),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        /// Words of every kind the walk tells apart: ASCII and not, capitalized and not,
        /// stopwords, punctuation at either end and alone, every ASCII whitespace byte and
        /// the vertical tab (which is not one), and non-ASCII spaces and letters.
        #[test]
        fn the_byte_walk_finds_what_the_character_rules_find(
            text in "(Alice|Bob|Smith|The|Paris|Zoë|Éva|ω|Ωmega|é|東京|a|bob|[A-Z][a-z]{0,6}|[a-z]{1,6}|[0-9]{1,3}|[(«\"'—]|[.,;:!?)»\"'—]|-| |\t|\n|\x0B|\x0C|\r|\u{A0}|\u{2003}){0,60}",
        ) {
            let fast: Vec<(String, usize)> =
                names_in(&text).into_iter().map(|f| (f.name, f.at)).collect();
            proptest::prop_assert_eq!(fast, names_in_by_characters(&text));
        }
    }
}
