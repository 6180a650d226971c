//! The three tasks' prompts, inputs and parsers.

use super::input::input_block_text;
use super::*;
use crate::llm::CompletionRequest;
use crate::storage::{EntityType, EvolutionType};

fn keywords_route(request: &CompletionRequest, words: [&str; 2]) -> bool {
    let text = request.prompt_text().to_lowercase();
    words.iter().all(|w| text.contains(w))
}

/// The drift the field notes describe, pinned: every prompt carries the words a
/// keyword router looks for, and only its own.
#[test]
fn prompts_carry_their_routing_keywords() {
    let extraction = extraction_request("Alice joined Acme.");
    let rewrite = rewrite_request("where does Alice work?");
    let subject = EvolutionSubject {
        name: "Alice".into(),
        entity_type: EntityType::Person,
        content: "at Acme".into(),
    };
    let evolution = evolution_request(&subject, &[]);
    assert!(keywords_route(&extraction, ["extract", "entit"]));
    assert!(keywords_route(&rewrite, ["rewrite", "query"]));
    assert!(keywords_route(&evolution, ["detect", "evolution"]));
    assert!(!keywords_route(&extraction, ["detect", "evolution"]));
    assert_eq!(extraction.task.as_deref(), Some(TASK_EXTRACT_ENTITIES));
    assert_eq!(rewrite.task.as_deref(), Some(TASK_REWRITE_QUERY));
    assert_eq!(evolution.task.as_deref(), Some(TASK_DETECT_EVOLUTION));
}

/// The prompt is part of what a simulated model hashes: its JSON block keeps the
/// default build's sorted key order even where serde_json's `preserve_order` is on
/// (a struct turned into a `Value` there keeps its field order).
#[test]
fn input_blocks_have_their_keys_sorted() {
    let subject = EvolutionSubject {
        name: "Alice".into(),
        entity_type: EntityType::Person,
        content: "at Acme".into(),
    };
    let candidate = EvolutionCandidate {
        id: "e-1".into(),
        name: "Alice".into(),
        entity_type: EntityType::Person,
        content: "at Initech".into(),
    };
    let request = evolution_request(&subject, &[candidate]);
    let block = input_block_text(&request).unwrap();
    assert_eq!(
        block,
        r#"{"existing_entities":[{"content":"at Initech","id":"e-1","name":"Alice","type":"person"}],"new_entity":{"content":"at Acme","name":"Alice","type":"person"}}"#
    );
}

#[test]
fn inputs_round_trip_through_the_prompt() {
    let awkward = "She said \"hi\"\n```json\n{}\n``` and left.";
    assert_eq!(
        extraction_input(&extraction_request(awkward)).as_deref(),
        Some(awkward)
    );
    assert_eq!(
        rewrite_input(&rewrite_request(awkward)).as_deref(),
        Some(awkward)
    );
    let subject = EvolutionSubject {
        name: "A".into(),
        entity_type: EntityType::Topic,
        content: awkward.into(),
    };
    let candidates = vec![EvolutionCandidate {
        id: "e1".into(),
        name: "B".into(),
        entity_type: EntityType::Note,
        content: "x".into(),
    }];
    assert_eq!(
        evolution_input(&evolution_request(&subject, &candidates)),
        Some((subject, candidates))
    );
}

#[test]
fn extraction_parser_accepts_the_documented_shape_and_fences() {
    let answer = "```json\n{\"entities\": [{\"name\": \"Alice\", \"type\": \"person\", \"content\": \"works at Acme\", \"confidence\": 0.9},\
        {\"name\": \"Acme\", \"type\": \"organization\", \"content\": \"a company\", \"confidence\": 0.8}],\
        \"relations\": [{\"source\": \"Alice\", \"target\": \"Acme\", \"kind\": \"works_at\"}]}\n```";
    let extraction = parse_extraction(answer).unwrap();
    assert_eq!(extraction.entities[1].entity_type, EntityType::Organization);
    assert_eq!(extraction.relations[0].kind, "works_at");
}

#[test]
fn extraction_parser_is_strict() {
    for (answer, expected) in [
        ("not json", "not JSON"),
        ("[]", "expected a JSON object"),
        ("{\"entities\": []}", "0 entities"),
        (
            "{\"entities\": [{\"name\": \"A\", \"type\": \"alien\", \"content\": \"\", \"confidence\": 0.5}]}",
            "wrong shape",
        ),
        (
            "{\"entities\": [{\"name\": \"A\", \"type\": \"person\", \"content\": \"\", \"confidence\": 1.5}]}",
            "outside [0, 1]",
        ),
        (
            "{\"entities\": [{\"name\": \" \", \"type\": \"person\", \"content\": \"\", \"confidence\": 0.5}]}",
            "is empty",
        ),
        (
            "{\"entities\": [{\"name\": \"A\", \"type\": \"person\", \"content\": \"\", \"confidence\": 0.5}], \"relations\": [{\"source\": \"A\", \"target\": \"B\", \"kind\": \"k\"}]}",
            "\"B\"",
        ),
    ] {
        let error = parse_extraction(answer).unwrap_err();
        assert!(error.to_string().contains(expected), "{answer}: {error}");
        assert_eq!(error.task, TASK_EXTRACT_ENTITIES);
    }
}

/// The other half of the drift: the rewrite parser wants a bare array, and refuses
/// the object the old simulator produced.
#[test]
fn rewrite_parser_wants_a_bare_array() {
    assert_eq!(parse_rewrite("[\"a b\", \"c\"]").unwrap(), vec!["a b", "c"]);
    assert!(
        parse_rewrite("{\"queries\": [\"a\"]}")
            .unwrap_err()
            .reason
            .contains("array")
    );
    assert!(parse_rewrite("[]").is_err());
    assert!(parse_rewrite("[\"\"]").is_err());
    assert!(parse_rewrite("[1]").is_err());
    assert!(parse_rewrite("[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]").is_err());
}

#[test]
fn evolution_parser_checks_the_related_id() {
    let candidates = vec![EvolutionCandidate {
        id: "e7".into(),
        name: "Acme".into(),
        entity_type: EntityType::Organization,
        content: String::new(),
    }];
    let ok = parse_evolution("{\"type\": \"update\", \"reason\": \"moved\", \"confidence\": 0.7, \"related_id\": \"e7\"}", &candidates).unwrap();
    assert_eq!(ok.evolution_type, EvolutionType::Update);
    let none = parse_evolution(
        "{\"type\": \"none\", \"reason\": \"\", \"confidence\": 0.2, \"related_id\": null}",
        &candidates,
    )
    .unwrap();
    assert_eq!(none.related_id, None);
    assert!(
        parse_evolution(
            "{\"type\": \"extend\", \"reason\": \"\", \"confidence\": 0.2, \"related_id\": \"e8\"}",
            &candidates
        )
        .unwrap_err()
        .reason
        .contains("\"e8\"")
    );
    assert!(
        parse_evolution(
            "{\"type\": \"extend\", \"reason\": \"\", \"confidence\": 0.2, \"related_id\": null}",
            &candidates
        )
        .is_err()
    );
    assert!(
        parse_evolution(
            "{\"type\": \"none\", \"reason\": \"\", \"confidence\": 0.2, \"related_id\": \"e7\"}",
            &candidates
        )
        .is_err()
    );
}
