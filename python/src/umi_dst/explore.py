"""`pytest --umi-explore=N`: a test rerun along paths instead of blind seeds.

A blind seed redraws every request of a run; a bug that needs two things in order (a
cut stream on one request, a 429 on a later one) needs both draws to land in the same
run. A path (`umi_dst.path.RunPath`, `7/3:9913`) keeps a run's first requests exactly
and redraws from a given request on, so a run that reached the first thing can be
continued many times from just after it.

The explorer does what Umi's `dst explore` does with a simulation's steps, over a
scope's requests: the coverage is the server's marks for the run's scope (the faults
that fired, the response shapes sent, the tool outcomes: `GET /umi/marks`), a fault
counted at the request it first fired at (a fault kind at a fault point), and a run
that reached something no earlier run did is kept, to be branched right after the
request where it first happened (`step + 1`), each branch drawing from a fresh stream
of a seeded RNG (`random.Random(explorer seed)`, so the same options explore the same
paths). Newest kept runs are branched first (depth first, where the ordered bugs are);
one kept for a fault (a stepping stone) gets `ENERGY_START` branches, one kept for a
shape or outcome alone one, and each gets `ENERGY_BONUS` more each time one of its
branches reaches something new. With every kept run spent, `FRESH_SHARE` of the runs
draw everything afresh (`SEED/1:STREAM`) and the rest branch a stepping stone chosen at
random. The first run is the seed itself; the first failure ends the loop, and its
report names the path and the `--umi-path=` command that replays it exactly.
"""

import random
from dataclasses import dataclass

from .path import PATH_BRANCHES_MAX, Branch, RunPath

#: Branches a newly kept run gets.
ENERGY_START = 4
#: Branches added to a kept run each time one of its branches reaches a new mark.
ENERGY_BONUS = 4
#: Kept runs at most (past it, new ones are not kept).
CORPUS_MAX = 1024
#: With every kept run's energy spent, the share of runs drawn afresh from the first
#: request (the others branch a kept run chosen at random).
FRESH_SHARE = 0.25
#: The largest `--umi-explore` count.
EXPLORE_RUNS_MAX = 100_000


@dataclass
class Kept:
    """A run kept for branching: its path and the request to branch it at."""

    path: RunPath
    at: int
    energy: int
    #: Whether a fault first fired at a fault point in the request it branches after: a
    #: stepping stone (a shape or tool outcome alone keeps a run with less energy).
    stone: bool = False


class Explorer:
    """Chooses the next path to run, from what the earlier runs reached."""

    def __init__(self, seed, explorer_seed):
        self.root = RunPath.from_seed(seed)
        self.rng = random.Random(explorer_seed)
        self.covered = {}  # coverage key -> path text of its first reach
        self.corpus = []
        self.runs = 0

    def _branch(self, kept):
        return kept.path.then(Branch(kept.at, self.rng.getrandbits(64))), kept

    def next_path(self):
        """The next path and the kept run it branches (None for the seed or a fresh draw)."""
        if self.runs == 0:
            return self.root, None
        for kept in reversed(self.corpus):
            if kept.energy > 0:
                kept.energy -= 1
                return self._branch(kept)
        stones = [kept for kept in self.corpus if kept.stone] or self.corpus
        if stones and self.rng.random() >= FRESH_SHARE:
            return self._branch(self.rng.choice(stones))
        return self.root.then(Branch(1, self.rng.getrandbits(64))), None

    def observe(self, path, origin, marks, arrivals):
        """Takes what the run of `path` reached (`marks`, the server's list) in `arrivals`
        requests; returns the coverage keys no earlier run reached."""
        self.runs += 1
        new, stones = {}, set()
        for mark in marks:
            key = coverage_key(mark)
            if key not in self.covered:
                self.covered[key] = str(path)
                new[key] = mark["step"]
                if mark["kind"] == "fault":
                    stones.add(mark["step"])
        if new and origin is not None:
            origin.energy += ENERGY_BONUS
        last = path.branches[-1].step if path.branches else 0
        for step in sorted(set(new.values())):
            at = step + 1
            # Past the last request nothing would change; before the last branch the
            # run replayed its parent, which reached it already.
            if at > arrivals or at <= last or len(path.branches) >= PATH_BRANCHES_MAX:
                continue
            if len(self.corpus) < CORPUS_MAX:
                stone = step in stones
                self.corpus.append(Kept(path, at, ENERGY_START if stone else 1, stone))
        return sorted(new)

    def reached(self):
        """The mark names reached, each once (coverage keys without their request)."""
        return sorted({key.split("#", 1)[0] for key in self.covered})


def coverage_key(mark):
    """What counts as new: a fault kind at a fault point (`fault:KIND@OPERATION#STEP`, the
    request it first fired at), a shape or a tool outcome by name."""
    return f"{mark['name']}#{mark['step']}" if mark["kind"] == "fault" else mark["name"]


def explore_item(item, nextitem, options, keys):
    """Runs `item` along paths until it fails or has run `runs_max` times, then reports
    the deciding run (the failure, else the last run) as the item's result, with an
    `umi explore` section saying how many runs it took and what they reached. Returns
    the summary line for the session's end."""
    runs_max, explorer_seed = options
    path_key, run_key = keys
    # Internal to pytest, as pytest-rerunfailures uses them: one item's setup, call and
    # teardown without logging, so the reruns report once.
    from _pytest.runner import CallInfo, runtestprotocol

    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    explorer, path, origin, reports, run = None, None, None, [], None
    for index in range(1, runs_max + 1):
        item.stash[path_key] = path
        # Tear down only the item between runs: the session's servers stay up.
        reports = runtestprotocol(item, log=False, nextitem=item.parent)
        run = item.stash.get(run_key, None)
        failed = any(report.failed for report in reports)
        if run is None:
            break  # the umi fixture never ran (a setup error): nothing to explore
        if explorer is None:
            explorer = Explorer(run.seed, run.seed if explorer_seed is None else explorer_seed)
            path = explorer.root
        if failed or index == runs_max:
            break
        body = run.server.marks(run.scope)
        explorer.observe(path, origin, body["marks"], body["entries"])
        path, origin = explorer.next_path()
    if explorer is not None:
        section = _summary(explorer, index, runs_max, path, failed, run)
        for report in reports:
            if report.when == "call" or (report.failed and report.when == "setup"):
                report.sections.append(("umi explore", section))
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    # What the runs kept up (the module's, the session's) goes as the next item needs.
    done = CallInfo.from_call(lambda: item.session._setupstate.teardown_exact(nextitem), when="teardown")
    if done.excinfo is not None:
        ihook.pytest_runtest_logreport(report=ihook.pytest_runtest_makereport(item=item, call=done))
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    if explorer is None:
        return f"{item.nodeid}: not explored (the umi fixture did not run)"
    outcome = f"failed on run {index}, path {path}" if failed else f"no failure in {index} runs"
    return f"{item.nodeid}: {outcome} ({len(explorer.covered)} fault points, shapes and tool outcomes reached)"


def _summary(explorer, runs, runs_max, path, failed, run):
    """The `umi explore` section: runs taken, marks reached, and the failing path."""
    lines = [f"runs:    {runs} of {runs_max} (--umi-explore)",
             f"marks:   {', '.join(explorer.reached())} ({len(explorer.covered)} fault points, shapes "
             f"and tool outcomes)",
             f"kept:    {len(explorer.corpus)} runs branched from"]
    if failed:
        lines.append(f"failed:  on run {runs}, path {path}")
        lines.append(f"rerun:   {run.rerun_command}")
    else:
        lines.append("failed:  no run")
    return "\n".join(lines)
