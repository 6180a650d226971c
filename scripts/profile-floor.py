#!/usr/bin/env python3
"""The floor a harness cannot go under: each scenario's seed cost if the harness cost nothing.

`make profile` (scripts/profile-seed.sh) leaves, per scenario, how many samples inside a
seed's run were the agent's own work and how many the harness's
(target/profile/<scenario>.whose.json, from scripts/profile-categories.py). With the
scenario's measured seeds per core-second (scenarios/throughput.toml, what `dst size`
sizes a nightly from), the agent's share gives its microseconds per seed, and so the
rate and the nightly's core-hours with a harness that cost nothing (issue 41: "a seed
costs what the agent's own work costs"). A goal below that floor cannot be met by the
harness; only the code under test, or what a seed asks of it, can move it.

Usage: profile-floor.py PROFILE_DIR THROUGHPUT_TOML [SEEDS_PER_SCENARIO]
"""

import json
import pathlib
import sys
import tomllib

AGENT, HARNESS = "the agent's own work", "the harness"
SEEDS_PER_SCENARIO_DEFAULT = 1_000_000
SECONDS_PER_HOUR = 3600


def floor_row(agent_samples, harness_samples, seeds_per_core_second):
    """(agent share of a run, its standard error, µs per seed, the agent's µs per seed,
    seeds per core-second with a free harness) for one scenario."""
    assert seeds_per_core_second > 0, "a measured rate is positive"
    runs = agent_samples + harness_samples
    share = agent_samples / runs if runs else 0.0
    error = (share * (1 - share) / runs) ** 0.5 if runs else 1.0
    us_per_seed = 1e6 / seeds_per_core_second
    agent_us = us_per_seed * share
    free_rate = seeds_per_core_second / share if share else float("inf")
    return share, error, us_per_seed, agent_us, free_rate


def core_hours(seeds, us_per_seed):
    return seeds * us_per_seed / 1e6 / SECONDS_PER_HOUR


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    profile_dir = pathlib.Path(sys.argv[1])
    with open(sys.argv[2], "rb") as table:
        rates = {name: entry["seeds_per_core_second"] for name, entry in tomllib.load(table).items()}
    seeds = int(sys.argv[3]) if len(sys.argv) > 3 else SEEDS_PER_SCENARIO_DEFAULT
    rows = []
    for path in sorted(profile_dir.glob("*.whose.json")):
        counts = json.loads(path.read_text())
        name = counts["scenario"]
        if name not in rates:
            continue  # not in a default sweep (a planted crash, a deep canary)
        in_run = counts["in_run"]
        rows.append((name, in_run[AGENT] + in_run[HARNESS], floor_row(in_run[AGENT], in_run[HARNESS], rates[name])))
    if not rows:
        sys.exit(f"profile-floor: no <scenario>.whose.json in {profile_dir} for a scenario of {sys.argv[2]}")
    print(f"{'scenario':28} {'samples':>7} {'agent share':>13} {'µs/seed':>8} {'agent µs':>9} {'free harness':>13}")
    total = floor = 0.0
    for name, samples, (share, error, us, agent_us, free_rate) in sorted(rows, key=lambda r: -r[2][2]):
        total += core_hours(seeds, us)
        floor += core_hours(seeds, agent_us)
        print(f"{name:28} {samples:>7} {100 * share:6.1f}%±{100 * error:4.1f} {us:8.0f} {agent_us:9.0f} {free_rate:9.0f} s/s")
    print(f"{seeds:,} seeds of each of {len(rows)} scenarios: {total:.2f} core-hours at the table's rates; "
          f"{floor:.2f} of them the agents' own work (the floor with a harness that costs nothing)")
    missing = sorted(set(rates) - {name for name, _, _ in rows})
    if missing:
        print(f"not profiled (left out of both totals): {', '.join(missing)}")


if __name__ == "__main__":
    main()
