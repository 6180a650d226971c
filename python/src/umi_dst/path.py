"""A run's path: a seed and the points where its draws switch to other streams.

The same text as Umi's `RunPath` (docs/adr/0022-paths-and-steering.md): `7` is seed 7
alone; `7/3:9913` is seed 7, and from the 3rd request of the run (its scope's arrival
ordinal, from 1) on, every request's answer is drawn from stream 9913; `7/3:9913/6:55`
branches again from the 6th. `dst serve` takes the text wherever it takes a seed
(`x-umi-seed`, `/seed/7/3:9913/`), so a path with no branches means exactly its seed.
"""

from dataclasses import dataclass

from .run import parse_seed

#: Branches a path holds at most (as the server's).
PATH_BRANCHES_MAX = 64


@dataclass(frozen=True, order=True)
class Branch:
    """From arrival `step` (from 1) on, every request draws from `stream`."""

    step: int
    stream: int


@dataclass(frozen=True, order=True)
class RunPath:
    """A seed and its branches, in increasing step order. `str()` is its text."""

    seed: int
    branches: tuple = ()

    @classmethod
    def from_seed(cls, seed):
        return cls(parse_seed(seed, "seed"))

    @classmethod
    def parse(cls, text, what="path"):
        """`RunPath` of `7`, `7/3:9913`, ...; `ValueError` naming `what` and the bad part."""
        if isinstance(text, RunPath):
            return text
        if isinstance(text, int) and not isinstance(text, bool):
            return cls.from_seed(text)
        if not isinstance(text, str):
            raise ValueError(f"{what}: {text!r} is not a path (SEED[/STEP:STREAM]..., e.g. 7/3:9913)")
        seed_text, *parts = text.strip().split("/")
        path = cls(parse_seed(seed_text, f"{what} {text!r}: the seed"))
        for part in parts:
            step, colon, stream = part.partition(":")
            if not colon:
                raise ValueError(f"{what} {text!r}: branch {part!r} is not STEP:STREAM "
                                 f"(e.g. 3:9913: from the 3rd request on, stream 9913)")
            branch = Branch(parse_seed(step, f"{what} {text!r}: branch {part!r}: the step"),
                            parse_seed(stream, f"{what} {text!r}: branch {part!r}: the stream"))
            path = path.then(branch, f"{what} {text!r}: branch {part!r}")
        return path

    def then(self, branch, what="branch"):
        """This path with `branch` after its last: its step must be past the last one's."""
        if branch.step < 1:
            raise ValueError(f"{what}: a branch's step counts requests from 1")
        if self.branches and branch.step <= self.branches[-1].step:
            raise ValueError(f"{what}: steps must increase (this one follows step {self.branches[-1].step})")
        if len(self.branches) >= PATH_BRANCHES_MAX:
            raise ValueError(f"{what}: a path holds at most {PATH_BRANCHES_MAX} branches")
        return RunPath(self.seed, self.branches + (branch,))

    def is_seed_only(self):
        return not self.branches

    def __str__(self):
        return str(self.seed) + "".join(f"/{b.step}:{b.stream}" for b in self.branches)
