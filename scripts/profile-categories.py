#!/usr/bin/env python3
"""Where a seed's time goes: perf samples sorted into the parts of a run.

Reads `perf script` output (samples with call stacks), writes the folded stacks a flame
graph tool reads (`inferno-flamegraph`, speedscope, or https://www.speedscope.app), and
prints one table row per part of a run. A sample belongs to the part of the frame nearest
its leaf that names one; allocator, hashing and standard-library frames name none, so their
time goes to the part that called them (the `alloc` column says how much of a part's time
was spent allocating).

Usage: profile-categories.py PERF_SCRIPT_OUTPUT FOLDED_OUT [LABEL]
"""

import collections
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
    total = 0
    for frames in stacks(sys.argv[1]):
        total += 1
        folded[";".join(frames)] += 1
        part = part_of(frames)
        parts[part] += 1
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


if __name__ == "__main__":
    main()
