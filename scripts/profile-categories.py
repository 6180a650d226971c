#!/usr/bin/env python3
"""Where a seed's time goes: perf samples sorted into the parts of a run.

Reads `perf script` output (samples with call stacks), writes the folded stacks a flame
graph tool reads (`inferno-flamegraph`, speedscope, or https://www.speedscope.app), and
prints one table row per part of a run. A sample belongs to the part of the frame nearest
its leaf that names one; allocator, hashing and standard-library frames name none, so their
time goes to the part that called them (the `alloc` column says how much of a part's time
was spent allocating).

A second table says whose work each sample is (issue 41: "a seed costs what the agent's
own work costs"): the agent's own (umi-core, the code under test and its production
library, with what it calls: SQLite, serde_json, ...), the harness's (umi-dst, umi-sweep
and the scenarios: simulators, faults, checkers, trace, the sweep; and whatever umi-core
code a simulator or checker called, such as SimLLM counting a prompt's tokens or a
checker reading the agent's store), or neither (start-up, the kernel, a stack perf could
not unwind: only outside a seed's run, since every sample inside one has the run's own
frames under it). The agent's share is the floor no harness work can lower: a scenario
whose agent work alone takes longer than a goal cannot meet it.

The counts of that table go to FOLDED_OUT with `.whose.json` in place of `.folded`, for
scripts/profile-floor.py.

Usage: profile-categories.py PERF_SCRIPT_OUTPUT FOLDED_OUT [LABEL]
"""

import collections
import json
import re
import sys

# (part, pattern): the first pattern matching a frame, read from the leaf up, names the
# sample's part. Order matters only between patterns that can match the same frame.
PARTS = [
    ("SQLite", r"sqlite3|rusqlite|libsqlite3"),
    ("JSON", r"serde_json"),
    ("tracing", r"umi_dst::trace"),
    ("checkers", r"umi_dst::checkers|umi_dst::checksum"),
    ("SimLLM", r"umi_dst::llm|SimLlm"),
    ("SimNetwork (wire encoders)", r"umi_dst::network|umi_dst::serve"),
    ("fault injection", r"umi_dst::fault"),
    ("SimStorage", r"umi_dst::storage|umi_dst::sqlite_disk"),
    ("clients (wire decoders)", r"umi_core::llm::(?!router|registry)|umi_core::wire|umi_core::sse"),
    ("agent code and scenario", r"umi_core|umi_scenarios|umi_dst::tools|umi_dst::mcp|umi_dst::cassette"),
    ("runtime set-up and tear-down", r"tokio::runtime::builder|drop_in_place<tokio::runtime::runtime::Runtime>|SimEnvironment::new|SimEnvironment>::new|umi_dst::environment"),
    ("tokio scheduling and timers", r"tokio::"),
    ("worker pipes", r"umi_sweep::(process_worker|process_pool|wire)"),
    ("sweep bookkeeping", r"umi_sweep|umi_dst::simulation|umi_dst::scenario"),
]
COMPILED = [(part, re.compile(pattern)) for part, pattern in PARTS]
ALLOCATION = re.compile(r"malloc|free|realloc|calloc|sysmalloc|__rust_alloc|__rust_dealloc|__rdl_|alloc::raw_vec|mi_malloc|mi_free|_mi_")
LIBC_MEMORY = re.compile(r"memcpy|memmove|memset|memcmp|unlink_chunk|tcache|_int_|mi_")
FRAMES_PER_STACK_MAX = 4096


# Whose work: the crates of Umi's agent side and of its harness, by their Rust names.
AGENT_CRATES = {"umi_core"}
HARNESS_CRATES = {"umi_dst", "umi_sweep", "umi_scenarios", "dst"}
# Work a harness frame asked for is the harness's, even where umi-core does it: a
# checker reading the agent's store after the run, SimLLM counting a prompt's tokens with
# umi-core's estimator, SimNetwork keying a cassette with umi-core's request key. These
# modules never call back into the agent's own code (the storage wrappers, SimStorage and
# SqliteDisk, forward the agent's calls to its store, so they are not here).
HARNESS_DRIVERS = re.compile(
    r"^<?&?(?:mut )?(?:dyn )?umi_dst::(?:checkers|checksum|llm|network|trace|tools|mcp|cassette|serve|clock|kernel|fault)::"
)
# A sample inside a seed's run (what the sweep's seeds per second measure), not the
# worker's start-up, its pipes or the sweep between runs.
RUN = re.compile(r"umi_sweep::worker::run_checked|umi_dst::simulation::execute::run_seed")
AGENT, HARNESS, RUNTIME = "the agent's own work", "the harness", "runtime and other"
OURS = AGENT_CRATES | HARNESS_CRATES
# A path's crate, after a reference or `dyn`: `&mut umi_core::x::Y` is umi_core's.
PATH_CRATE = re.compile(r"^&?(?:mut )?(?:dyn )?([A-Za-z_]\w*)::")


def type_and_trait(frame):
    """`<Type as Trait>::f`'s two crates (each None without a path), or None for a frame
    of another shape. The ` as ` is the one at the outer bracket's depth, so a type with
    spaces or generics of its own (`<impl Deserialize for X>::__Visitor`) is read whole."""
    if not frame.startswith("<"):
        return None
    depth = 0
    for at, char in enumerate(frame):
        if char == "<":
            depth += 1
        elif char == ">" and frame[at - 1] != "-":  # `->` in a fn type is no bracket
            depth -= 1
            if depth == 0:
                return None
        elif depth == 1 and frame.startswith(" as ", at):
            own = PATH_CRATE.match(frame[1:at])
            trait = PATH_CRATE.match(frame[at + 4 :])
            return (own.group(1) if own else None, trait.group(1) if trait else None)
    return None


def frame_crate(frame):
    """The crate whose code a frame is, or None. `<Type as Trait>::f`: a harness trait's
    impl is the harness's (umi-core cannot implement the harness's traits); else the
    type's crate when it is Umi's; else the trait's (an impl for a foreign type lives with
    the trait). A path is its first segment's. A frame with no path (an inlined call, C,
    the kernel) has none."""
    pair = type_and_trait(frame)
    if pair:
        own, trait = pair
        if trait in HARNESS_CRATES:
            return trait
        if own in OURS:
            return own
        return trait if trait in OURS else None
    path = PATH_CRATE.match(frame)
    return path.group(1) if path else None


def whose_work(frames):
    """The agent's, the harness's or neither's: a harness driver anywhere on the stack
    makes it the harness's; else the Umi frame nearest the leaf decides."""
    if any(HARNESS_DRIVERS.match(frame) for frame in frames):
        return HARNESS
    for frame in reversed(frames):
        crate = frame_crate(frame)
        if crate in AGENT_CRATES:
            return AGENT
        if crate in HARNESS_CRATES:
            return HARNESS
    return RUNTIME


def stacks(path):
    """Yields each sample's frames, root first."""
    frames = []
    with open(path, errors="replace") as lines:
        for line in lines:
            if not line.startswith(("\t", " ")):
                if frames:
                    yield list(reversed(frames))
                frames = []
                continue
            parts = line.strip().split(" ", 1)
            if len(parts) == 2 and len(frames) < FRAMES_PER_STACK_MAX:
                name = re.sub(r"\+0x[0-9a-f]+$", "", parts[1].rsplit(" (", 1)[0])
                frames.append(name.replace(";", ":"))
    if frames:
        yield list(reversed(frames))


def part_of(frames):
    for frame in reversed(frames):
        for part, pattern in COMPILED:
            if pattern.search(frame):
                return part
    # perf cannot unwind out of glibc without its debug information, so a sample in
    # malloc, free or memcpy often has no caller: the allocator's share of the run.
    if ALLOCATION.search(frames[-1]) or LIBC_MEMORY.search(frames[-1]):
        return "allocator, memcpy (caller lost)"
    return "other (kernel, start-up)"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    folded = collections.Counter()
    parts = collections.Counter()
    allocating = collections.Counter()
    owners = collections.Counter()
    in_run = collections.Counter()
    total = 0
    for frames in stacks(sys.argv[1]):
        total += 1
        folded[";".join(frames)] += 1
        part = part_of(frames)
        parts[part] += 1
        owner = whose_work(frames)
        owners[owner] += 1
        if any(RUN.search(frame) for frame in frames):
            in_run[owner] += 1
        if ALLOCATION.search(frames[-1]):
            allocating[part] += 1
    with open(sys.argv[2], "w") as out:
        for stack, count in folded.items():
            out.write(f"{stack} {count}\n")
    label = sys.argv[3] if len(sys.argv) > 3 else sys.argv[1]
    print(f"{label}: {total} samples")
    print(f"  {'part':<32} {'share':>6} {'alloc':>6}")
    for part, count in parts.most_common():
        print(f"  {part:<32} {100 * count / max(total, 1):>5.1f}% {100 * allocating[part] / max(count, 1):>5.0f}%")
    runs = sum(in_run.values())
    print(f"  {'whose work':<32} {'share':>6} {'in runs':>8}")
    for owner in (AGENT, HARNESS, RUNTIME):
        print(f"  {owner:<32} {100 * owners[owner] / max(total, 1):>5.1f}% {100 * in_run[owner] / max(runs, 1):>7.1f}%")
    print(f"  ({runs} samples, {100 * runs / max(total, 1):.0f}%, are inside a seed's run: the time a sweep's seeds/s measures)")
    whose_path = re.sub(r"(\.folded)?$", ".whose.json", sys.argv[2], count=1)
    with open(whose_path, "w") as out:
        json.dump({"scenario": label, "samples": total, "in_run": {o: in_run[o] for o in (AGENT, HARNESS)}}, out)


if __name__ == "__main__":
    main()
