"""`make profile`'s sorting of perf samples (scripts/profile-categories.py), table-tested.

Issue 41 judges a seed by what the agent's own work costs, so the profile says whose work
each sample is: the agent's (umi-core and what it calls), the harness's (umi-dst,
umi-sweep, the scenarios, and whatever a checker asked the agent's store for) or the
runtime's (frames of neither). A wrong rule here would move a scenario's floor, so each
rule has a row that fails when it breaks.
"""

import importlib.util
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "profile-categories.py"
_spec = importlib.util.spec_from_file_location("profile_categories", SCRIPT)
categories = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(categories)

AGENT, HARNESS, RUNTIME = categories.AGENT, categories.HARNESS, categories.RUNTIME


@pytest.mark.parametrize(
    ("frame", "crate"),
    [
        # A path names its crate by the first segment.
        ("umi_core::memory::recall::<impl umi_core::memory::Memory>::recall::{{closure}}", "umi_core"),
        ("umi_dst::llm::prepare::prompt_size::{{closure}}", "umi_dst"),
        ("tokio::runtime::time::Driver::park_internal", "tokio"),
        # `<Type as Trait>`: the type's crate when it is Umi's (the simulator's store
        # implementing umi-core's trait is the harness's code) ...
        ("<umi_dst::storage::SimStorage<S> as umi_core::storage::Storage>::apply::{{closure}}", "umi_dst"),
        ("<umi_core::storage::sqlite::SqliteStorage as umi_core::storage::Storage>::search", "umi_core"),
        # ... else the trait's, where an impl for a foreign type lives.
        ("<alloc::sync::Arc<T> as umi_core::llm::provider::LanguageModel>::complete::{{closure}}", "umi_core"),
        # A type of umi-core's with a harness trait: only the harness can implement it.
        ("<umi_core::storage::records::Entity as umi_dst::checkers::Checked>::check", "umi_dst"),
        # The type is read to the ` as ` at the outer depth, spaces and generics included.
        (
            "<umi_core::storage::kinds::_::<impl serde_core::de::Deserialize for umi_core::storage::kinds::EntityType>"
            "::deserialize::__Visitor as serde_core::de::Visitor>::visit_str",
            "umi_core",
        ),
        ("<&mut umi_core::x::Y as core::fmt::Write>::write_str", "umi_core"),
        # A foreign pair is nobody's of ours.
        ("<core::iter::adapters::GenericShunt<I,R> as core::iter::traits::iterator::Iterator>::next", None),
        # C, inlined calls without a path, the kernel: no crate.
        ("sqlite3VdbeExec", None),
        ("query_row<i64, [&(dyn rusqlite::types::to_sql::ToSql): 0]>", None),
        ("asm_exc_page_fault", None),
    ],
)
def test_a_frame_is_the_code_of_its_crate(frame, crate):
    assert categories.frame_crate(frame) == crate


ROOT = ["_start", "umi_sweep::process_worker::serve", "umi_sweep::worker::run_checked"]
RECALL = "umi_core::memory::recall::<impl umi_core::memory::Memory>::recall::{{closure}}"
STORE = "<umi_dst::storage::SimStorage<S> as umi_core::storage::Storage>::search::{{closure}}"
SQLITE = "<umi_core::storage::sqlite::SqliteStorage as umi_core::storage::Storage>::search::{{closure}}"
CHECKER = "umi_dst::checkers::memory::check_memory::{{closure}}"


@pytest.mark.parametrize(
    ("frames", "owner"),
    [
        # SQLite under the agent's recall, through the simulator's store wrapper: the
        # production store nearest the leaf makes it the agent's.
        (ROOT + [RECALL, STORE, SQLITE, "sqlite3_step", "sqlite3VdbeExec"], AGENT),
        # The wrapper's own work (its checksums) under the same recall: the harness's.
        (ROOT + [RECALL, STORE, "umi_dst::storage::SimStorage<S>::verify_entity", "memcmp"], HARNESS),
        # The same SQLite search asked for by a checker after the run: the harness's.
        (ROOT + [CHECKER, STORE, SQLITE, "sqlite3_step"], HARNESS),
        # umi-core code a simulator calls (SimLLM counting a prompt's tokens with the
        # agent's estimator) is the harness's work, not the agent's.
        (
            ROOT
            + [
                RECALL,
                "<umi_dst::llm::SimLlm as umi_core::llm::provider::LanguageModel>::complete::{{closure}}",
                "umi_dst::llm::prepare::prompt_size::{{closure}}",
                "umi_core::llm::tokens::estimate_text_tokens",
            ],
            HARNESS,
        ),
        # The simulated model answering the agent: the harness's.
        (ROOT + [RECALL, "<umi_dst::llm::SimLlm as umi_core::llm::provider::LanguageModel>::complete"], HARNESS),
        # tokio's scheduler with no Umi frame nearer the leaf than the root: the harness's
        # sweep is the nearest Umi frame.
        (ROOT + ["tokio::runtime::scheduler::current_thread::Context::park"], HARNESS),
        # No Umi frame at all (start-up, a stack perf could not unwind): the runtime's.
        (["_start", "_dl_start", "_dl_relocate_object"], RUNTIME),
        (["__memcpy_avx512_unaligned_erms"], RUNTIME),
    ],
)
def test_a_sample_is_the_work_of_whoever_asked_for_it(frames, owner):
    assert categories.whose_work(frames) == owner


FLOOR_SCRIPT = SCRIPT.with_name("profile-floor.py")
_floor_spec = importlib.util.spec_from_file_location("profile_floor", FLOOR_SCRIPT)
floor = importlib.util.module_from_spec(_floor_spec)
_floor_spec.loader.exec_module(floor)


@pytest.mark.parametrize(
    ("agent", "harness", "rate", "share", "us_per_seed", "agent_us", "free_rate"),
    [
        # Half the run the agent's at 1,000 seeds/s: 1,000 µs a seed, 500 of them the
        # agent's, 2,000 seeds/s with a free harness.
        (50, 50, 1000, 0.5, 1000.0, 500.0, 2000.0),
        # A run all the agent's: the harness has nothing left to give.
        (10, 0, 250, 1.0, 4000.0, 4000.0, 250.0),
        # A run all the harness's: no floor from the agent.
        (0, 10, 4000, 0.0, 250.0, 0.0, float("inf")),
    ],
)
def test_the_floor_is_the_agents_share_of_a_seed(agent, harness, rate, share, us_per_seed, agent_us, free_rate):
    got_share, _, got_us, got_agent_us, got_free = floor.floor_row(agent, harness, rate)
    assert (got_share, got_us, got_agent_us, got_free) == pytest.approx((share, us_per_seed, agent_us, free_rate))


def test_a_million_seeds_at_3600_microseconds_is_one_core_hour():
    assert floor.core_hours(1_000_000, 3600.0) == pytest.approx(1.0)
