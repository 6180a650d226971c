"""Umi for Python: `dst serve` (a seeded simulated LLM over real HTTP) under pytest.

`pip install umi-dst` installs the `dst` binary and a pytest plugin (`umi_dst.plugin`,
auto-loaded): a test that takes the `umi` fixture talks to a seeded server through
`umi.openai_base_url` (or `anthropic_base_url`, `ollama_base_url`), and the same seed
gives the same bytes, every time; the test runs on the run's simulated clock
(`on_clock`, `SimClock`). See python/README.md in the Umi repository.
"""

from ._binary import DstNotFound, find_dst
from .clock import SimClock
from .clock_on import on_clock
from .run import (ActedOnCut, EffectFinding, EffectNeverAsked, EffectTwice, TruncatedAnswer, Umi,
                  UnpairedToolResults, derive_seed)
from .server import Server, ServeError, Trace

__all__ = ["ActedOnCut", "DstNotFound", "EffectFinding", "EffectNeverAsked", "EffectTwice", "ServeError", "Server",
           "SimClock", "Trace", "TruncatedAnswer", "Umi", "UnpairedToolResults", "derive_seed", "find_dst", "on_clock"]
