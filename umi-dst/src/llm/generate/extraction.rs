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

// Sorted, for binary search (a test keeps them sorted).
const FIRST_NAMES: &[&str] = &[
    "Alice", "Amir", "Bob", "Carol", "Chen", "Dave", "Eve", "Frank", "Grace", "Heidi", "Ingrid",
    "Ivan", "Judy", "Lars", "Mallory", "Maria", "Niaj", "Olivia", "Peggy", "Priya", "Rupert",
    "Sybil", "Trent", "Victor", "Walter", "Yuki", "Zoe",
];
const ORG_WORDS: &[&str] = &[
    "Acme",
    "Anthropic",
    "Bank",
    "Corp",
    "Foundation",
    "Globex",
    "Google",
    "Group",
    "Inc",
    "Initech",
    "Institute",
    "LLC",
    "Labs",
    "Ltd",
    "Microsoft",
    "OpenAI",
    "Team",
    "University",
];
const PLACES: &[&str] = &[
    "Africa", "Asia", "Berlin", "Boston", "Europe", "Kyoto", "Lima", "Lisbon", "London", "Madrid",
    "Nairobi", "Oslo", "Paris", "Seattle", "Sydney", "Tokyo", "Toronto", "York",
];
const EVENT_WORDS: &[&str] = &[
    "Conference",
    "Launch",
    "Meeting",
    "Retreat",
    "Review",
    "Summit",
    "Workshop",
];
/// Words that start a sentence but name nothing. A `match` rather than a list: LLVM
/// branches on the length and compares fixed sizes inline, where a binary search over
/// `&str`s makes a `memcmp` call per probe (this check runs on every capitalized word).
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

fn listed(list: &[&str], word: &str) -> bool {
    list.binary_search(&word).is_ok()
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
            joined.clear();
            for (index, (_, word)) in run[start..].iter().enumerate() {
                if index > 0 {
                    joined.push(' ');
                }
                joined.push_str(word);
            }
            if joined.len() <= ENTITY_NAME_BYTES_MAX && !found.iter().any(|f| f.name == joined) {
                found.push(Found {
                    name: joined.clone(),
                    at,
                });
            }
        }
        run.clear();
    };
    for raw in text.split_ascii_whitespace() {
        let raw_at = raw.as_ptr() as usize - text.as_ptr() as usize;
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let mut chars = word.chars();
        let capitalized = chars.next().is_some_and(char::is_uppercase) && chars.next().is_some();
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

fn type_of(name: &str, rng: &mut DeterministicRng) -> EntityType {
    if name.split(' ').any(|w| listed(ORG_WORDS, w)) {
        EntityType::Organization
    } else if name
        .split(' ')
        .next()
        .is_some_and(|w| listed(FIRST_NAMES, w))
    {
        EntityType::Person
    } else if name.split(' ').any(|w| listed(PLACES, w)) {
        EntityType::Place
    } else if name.split(' ').any(|w| listed(EVENT_WORDS, w)) {
        EntityType::Event
    } else if rng.bool_with(0.5) {
        EntityType::Project
    } else {
        EntityType::Topic
    }
}

/// The sentence of `text` around byte `at`, trimmed.
fn sentence_at(text: &str, at: usize) -> String {
    let is_end = |c: char| matches!(c, '.' | '!' | '?' | '\n');
    let start = text[..at].rfind(is_end).map_or(0, |i| i + 1);
    let end = text[at..].find(is_end).map_or(text.len(), |i| at + i);
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
        let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
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
    Generated::json(serde_json::to_string(&answer).expect("an extraction always serializes"))
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
    fn word_lists_are_sorted_for_binary_search() {
        for list in [FIRST_NAMES, ORG_WORDS, PLACES, EVENT_WORDS] {
            assert!(list.windows(2).all(|pair| pair[0] < pair[1]), "{list:?}");
        }
    }
}
