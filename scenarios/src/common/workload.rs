//! Workload text the memory scenarios store and ask about: short facts about people and
//! places, and questions about them, drawn from the run's streams.

use umi_dst::{DeterministicRng, SimEnvironment};

const PEOPLE: [&str; 8] = [
    "Alice",
    "Bob Smith",
    "Maria",
    "Chen",
    "Priya",
    "Lars",
    "Yuki",
    "Olivia",
];
const PLACES: [&str; 8] = [
    "Acme Corp",
    "Initech",
    "Paris",
    "Oslo",
    "the Berlin Summit",
    "Globex",
    "Kyoto",
    "a café in Lima",
];
const VERBS: [&str; 7] = [
    "joined",
    "left",
    "visited",
    "wrote to",
    "moved to",
    "called",
    "reviewed the plan with",
];

/// `count` short facts about people and places, drawn from `stream`.
pub fn facts(sim: &SimEnvironment, stream: &str, count: usize) -> Vec<String> {
    let mut rng = sim.task_rng(stream);
    (0..count)
        .map(|_| {
            let who = rng.choose(&PEOPLE).copied().unwrap_or("Alice");
            let what = rng.choose(&VERBS).copied().unwrap_or("met");
            let place = rng.choose(&PLACES).copied().unwrap_or("Paris");
            if rng.bool_with(0.2) {
                format!("{what} {place} quietly.")
            } else {
                format!("{who} {what} {place}.")
            }
        })
        .collect()
}

/// A question about one of the people, or (one in four) a bare keyword query.
pub fn question(rng: &mut DeterministicRng) -> String {
    let who = rng.choose(&PEOPLE).copied().unwrap_or("Alice");
    if rng.bool_with(0.25) {
        let place = rng.choose(&PLACES).copied().unwrap_or("Paris");
        return place.to_owned();
    }
    format!("where did {who} go?")
}
