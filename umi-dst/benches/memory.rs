//! The memory's throughput and how recall scales.
//!
//! Run with `cargo bench -p umi-dst --bench memory` (part of `make bench`).
//! - `remember` (extraction by a mock model, no evolution detection) and `recall`
//!   (fast path) per operation at 10,000 entities, on SQLite (durable: one fsync'd
//!   transaction per remember) and on SimStorage, against two baselines from the same
//!   run: the same memory on InMemoryStorage, and a raw SQLite transaction inserting one
//!   row with the same pragmas (the floor of a durable write).
//! - recall latency at 1,000, 10,000 and 100,000 entities on SQLite and in memory, each
//!   as a ratio to its own 1,000-entity figure.

#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a bench binary times real work and prints it"
)]

mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use umi_core::env::SystemEnvironment;
use umi_core::llm::CompletionRequest;
use umi_core::memory::tasks::{TASK_EXTRACT_ENTITIES, extraction_input};
use umi_core::memory::{Memory, RecallOptions, RememberOptions, RewriteMode};
use umi_core::storage::EntityType;
use umi_core::storage::{Entity, InMemoryStorage, SqliteStorage, Storage, WriteBatch};
use umi_dst::doubles::{FnLanguageModel, Turn};
use umi_dst::{SimConfig, SimEnvironment, SimStorage};

/// Vocabulary size: each text draws four words from it, so a query word matches about
/// 0.2% of the store (a tiny vocabulary would make every query match a large share of
/// everything, the worst case for any BM25 engine).
const VOCABULARY: usize = 2_000;

fn word(k: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "ri", "mo", "te", "lu", "sa", "no", "vi", "de", "po", "gu", "fe", "zo", "ha", "ji",
        "be",
    ];
    let k = k % VOCABULARY;
    format!(
        "{}{}{}",
        SYLLABLES[k % 16],
        SYLLABLES[(k / 16) % 16],
        SYLLABLES[(k / 256) % 16]
    )
}

fn text(i: usize) -> String {
    let w = |k: usize| word(i.wrapping_mul(2_654_435_761).wrapping_add(k * 40_503) >> 7);
    format!(
        "Person{} talked about the {} {} and the {} {} number {i}.",
        i % 997,
        w(1),
        w(2),
        w(3),
        w(4)
    )
}

fn query(i: usize) -> String {
    format!("{} {}", word(i * 31), word(i * 17 + 5))
}

/// A mock model: extraction returns the text's first word as one person entity.
fn mock_model() -> Arc<FnLanguageModel> {
    Arc::new(FnLanguageModel::new(
        |request: &CompletionRequest, _| match request.task.as_deref() {
            Some(TASK_EXTRACT_ENTITIES) => {
                let text = extraction_input(request).unwrap_or_default();
                let name = text
                    .split_whitespace()
                    .next()
                    .unwrap_or("Someone")
                    .to_owned();
                Turn::text(json!({"entities": [{"name": name, "type": "person", "content": text, "confidence": 0.9}]}).to_string())
            }
            _ => Turn::text("[]"),
        },
    ))
}

fn remember_options() -> RememberOptions {
    RememberOptions::default().with_evolution(false)
}

fn recall_options() -> RecallOptions {
    RecallOptions::default()
        .with_limit(10)
        .with_rewrite(RewriteMode::Never)
}

/// Mean time per remember of `count` texts, and per recall of 200 queries, on `memory`.
fn throughput(
    runtime: &tokio::runtime::Runtime,
    memory: &Memory,
    count: usize,
) -> (Duration, Duration) {
    let start = Instant::now();
    runtime.block_on(async {
        for i in 0..count {
            black_box(memory.remember(&text(i), remember_options()).await.unwrap());
        }
    });
    let remember = start.elapsed() / count as u32;
    let start = Instant::now();
    runtime.block_on(async {
        for i in 0..200 {
            black_box(memory.recall(&query(i), recall_options()).await.unwrap());
        }
    });
    (remember, start.elapsed() / 200)
}

fn entities(from: usize, to: usize) -> Vec<Entity> {
    (from..to)
        .map(|i| Entity {
            id: format!("e{i:08}"),
            name: format!("Person{}", i % 997),
            entity_type: EntityType::Person,
            content: text(i),
            confidence: 0.9,
            note_id: None,
            created_at_ms: 0,
            updated_at_ms: 0,
        })
        .collect()
}

/// Median recall latency over 100 queries once `storage` holds `size` entities.
fn recall_latency(
    runtime: &tokio::runtime::Runtime,
    memory: &Memory,
    storage: &dyn Storage,
    filled: &mut usize,
    size: usize,
) -> Duration {
    runtime.block_on(async {
        while *filled < size {
            let next = (*filled + 1_000).min(size);
            storage
                .apply(WriteBatch {
                    entities: entities(*filled, next),
                    ..WriteBatch::default()
                })
                .await
                .unwrap();
            *filled = next;
        }
    });
    let mut times: Vec<Duration> = (0..100)
        .map(|i| {
            let query = query(i);
            let start = Instant::now();
            runtime.block_on(async {
                black_box(memory.recall(&query, recall_options()).await.unwrap())
            });
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[50]
}

fn main() {
    // A real runtime: the real stores (SQLite on disk) on the system clock, the figures
    // the simulated store's are set beside.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("umi-bench-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let env = Arc::new(SystemEnvironment::new());
    const N: usize = 10_000;
    println!("umi memory: remember and recall per operation at {N} entities");

    let in_memory =
        Memory::new(Arc::new(InMemoryStorage::new()), env.clone()).with_llm(mock_model());
    let (remember_mem, recall_mem) = throughput(&runtime, &in_memory, N);

    let sqlite = Memory::new(
        Arc::new(SqliteStorage::open(dir.join("bench.db")).unwrap()),
        env.clone(),
    )
    .with_llm(mock_model());
    let (remember_sql, recall_sql) = throughput(&runtime, &sqlite, N);

    // The floor of a durable write: one row, one transaction, same pragmas.
    let raw = rusqlite::Connection::open(dir.join("raw.db")).unwrap();
    raw.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (id TEXT PRIMARY KEY, text TEXT NOT NULL);").unwrap();
    let mut i = 0u64;
    let raw_insert = support::measure(200, |_| {
        i += 1;
        raw.execute(
            "INSERT INTO t VALUES (?1, ?2)",
            rusqlite::params![i.to_string(), text(i as usize)],
        )
        .unwrap();
    });

    let sim_runtime = support::sim_runtime();
    let _guard = sim_runtime.enter();
    let sim = SimEnvironment::new(&SimConfig::new(1)).unwrap();
    let simulated = Memory::new(Arc::new(SimStorage::new(&sim)), sim.env()).with_llm(mock_model());
    let (remember_sim, recall_sim) = throughput(&sim_runtime, &simulated, N);

    support::report(
        "remember, SQLite (durable)",
        remember_sql,
        "raw SQLite 1-row durable insert",
        raw_insert,
    );
    support::report(
        "remember, SQLite (durable)",
        remember_sql,
        "remember, InMemoryStorage",
        remember_mem,
    );
    support::report(
        "remember, SimStorage",
        remember_sim,
        "remember, InMemoryStorage",
        remember_mem,
    );
    support::report(
        "recall, SQLite, 10k",
        recall_sql,
        "recall, InMemoryStorage, 10k",
        recall_mem,
    );
    support::report(
        "recall, SimStorage, 10k",
        recall_sim,
        "recall, InMemoryStorage, 10k",
        recall_mem,
    );

    println!("recall latency (median of 100 two-word queries) as the store grows");
    let sql_storage = Arc::new(SqliteStorage::open(dir.join("growth.db")).unwrap());
    let sql_memory = Memory::new(sql_storage.clone(), env.clone());
    let mem_storage = Arc::new(InMemoryStorage::new());
    let mem_memory = Memory::new(mem_storage.clone(), env);
    let (mut sql_filled, mut mem_filled) = (0, 0);
    let sql_base = recall_latency(
        &runtime,
        &sql_memory,
        sql_storage.as_ref(),
        &mut sql_filled,
        1_000,
    );
    let mem_base = recall_latency(
        &runtime,
        &mem_memory,
        mem_storage.as_ref(),
        &mut mem_filled,
        1_000,
    );
    support::report(
        "SQLite, 1,000 entities",
        sql_base,
        "SQLite, 1,000 entities",
        sql_base,
    );
    support::report(
        "in memory, 1,000 entities",
        mem_base,
        "in memory, 1,000 entities",
        mem_base,
    );
    for size in [10_000, 100_000] {
        let sql = recall_latency(
            &runtime,
            &sql_memory,
            sql_storage.as_ref(),
            &mut sql_filled,
            size,
        );
        let mem = recall_latency(
            &runtime,
            &mem_memory,
            mem_storage.as_ref(),
            &mut mem_filled,
            size,
        );
        support::report(
            &format!("SQLite, {size} entities"),
            sql,
            "SQLite, 1,000 entities",
            sql_base,
        );
        support::report(
            &format!("in memory, {size} entities"),
            mem,
            "in memory, 1,000 entities",
            mem_base,
        );
    }
    drop((sqlite, sql_memory, sql_storage));
    let _ = std::fs::remove_dir_all(&dir);
}
