"""Exploration over `dst serve`: `--umi-path` replays one path, `--umi-explore=N` reruns
a test along paths steered by the server's marks.

The planted agent (`AGENT`, on the real openai SDK) answers questions one at a time over
streamed chat; after a cut stream it retries, and keeps the cut text "to show something
if the service goes down"; a 429 on a later request makes it hand that cut text over as
an answer, which `check_cut_streams` finds. Its bug needs two faults in order, on two
requests: exploration keeps a run that reached a cut and redraws what follows it, blind
seeds redraw everything. Both are counted here on the same test; neither count is
written into the test.
"""

import os
import re
import subprocess

import openai
import pytest

from umi_dst import Server, Umi
from umi_dst.explore import Explorer, coverage_key
from umi_dst.path import PATH_BRANCHES_MAX, Branch, RunPath

AGENT = '''
import openai


class CutStream(Exception):
    def __init__(self, partial):
        super().__init__("the stream ended before its finish_reason")
        self.partial = partial


def ask(client, question):
    """The streamed answer; `CutStream` with what arrived when it did not end whole."""
    text, finished = "", False
    try:
        stream = client.chat.completions.create(
            model="umi-sim", messages=[{"role": "user", "content": question}], stream=True)
        for chunk in stream:
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finished = finished or choice.finish_reason is not None
    except openai.RateLimitError:
        raise
    except openai.APIError:
        finished = False  # the connection broke or the stream did not parse: cut
    if not finished:
        raise CutStream(text)
    return text


def answer_all(client, questions):
    answers, fallback = [], None
    for question in questions:
        try:
            try:
                text = ask(client, question)
            except CutStream as cut:
                fallback = cut.partial  # kept "in case the service goes down"
                text = ask(client, question)
        except openai.RateLimitError:
            text = fallback if fallback is not None else "(busy)"  # the planted bug: a cut text as an answer
        except (CutStream, openai.APIError):
            text = "(unavailable)"
        answers.append(text)
    return answers
'''

QUESTIONS = ["What is the capital of Norway?", "How tall is Mount Everest?", "Who wrote Hamlet?",
             "What is the boiling point of water?", "Name a prime number above 50.",
             "How many legs does a spider have?", "What colour is the sky at noon?"]

PLANTED = f'''
import openai
import pytest

from planted_agent import answer_all

QUESTIONS = {QUESTIONS!r}


@pytest.mark.umi(seeds=1, faults={{"llm.stream_cut": 0.015, "llm.rate_limit": 0.015}})
def test_answers_are_whole(umi):
    client = openai.OpenAI(base_url=umi.openai_base_url, api_key="unused", max_retries=0)
    answers = answer_all(client, QUESTIONS)
    assert all(answer.strip() for answer in answers), answers
    for answer in answers:
        umi.check_cut_streams(answer=answer)
'''

#: How many times fewer reruns exploration must take than blind seeds on the planted bug.
FEWER_TIMES_MIN = 2
RUNS_MAX = 3000


def test_paths_read_print_and_refuse_by_part():
    for text in ["7", "7/3:9913", "7/3:9913/12:55"]:
        assert str(RunPath.parse(text)) == text
    assert str(RunPath.parse("0x10/0x2:1")) == "16/2:1"
    assert RunPath.parse("7").is_seed_only() and not RunPath.parse("7/1:1").is_seed_only()
    for bad, says in [("x", "the seed"), ("7/3", "is not STEP:STREAM"), ("7/0:1", "counts requests from 1"),
                      ("7/3:1/3:2", "steps must increase"), ("7/3:y", "the stream")]:
        with pytest.raises(ValueError, match=re.escape(says)):
            RunPath.parse(bad, "--umi-path")
    full = RunPath(1, tuple(Branch(step, 1) for step in range(1, PATH_BRANCHES_MAX + 1)))
    with pytest.raises(ValueError, match="at most 64"):
        full.then(Branch(PATH_BRANCHES_MAX + 1, 1))


def test_the_explorer_branches_right_after_what_was_new():
    explorer = Explorer(7, explorer_seed=1)
    root, origin = explorer.next_path()
    assert (str(root), origin) == ("7", None)
    marks = [{"name": "shape:200/complete/text", "kind": "shape", "step": 1},
             {"name": "fault:llm.stream_cut@llm.call", "kind": "fault", "step": 3}]
    assert explorer.observe(root, None, marks, arrivals=5) == ["fault:llm.stream_cut@llm.call#3",
                                                               "shape:200/complete/text"]
    path, kept = explorer.next_path()
    # The newest kept run first: the cut at request 3, redrawn from request 4 on.
    assert (path.seed, [b.step for b in path.branches], kept.stone) == (7, [4], True)
    # The same marks again are nothing new, and keep nothing.
    assert explorer.observe(path, kept, marks, arrivals=5) == []
    # A fault first at the last request keeps nothing (nothing follows it to redraw).
    last = [{"name": "fault:llm.rate_limit@llm.call", "kind": "fault", "step": 5}]
    kept_before = len(explorer.corpus)
    assert explorer.observe(root, None, last, arrivals=5) == ["fault:llm.rate_limit@llm.call#5"]
    assert len(explorer.corpus) == kept_before
    assert coverage_key(last[0]) == "fault:llm.rate_limit@llm.call#5"


def _run_planted(server, path):
    run = Umi(server, path.seed, path=path)
    client = openai.OpenAI(base_url=run.openai_base_url, api_key="unused", max_retries=0)
    import importlib.util
    spec = importlib.util.spec_from_loader("planted_agent_direct", loader=None)
    agent = importlib.util.module_from_spec(spec)
    exec(AGENT, agent.__dict__)  # noqa: S102 -- the planted agent's source, defined above
    agent.answer_all(client, QUESTIONS)
    return run.trace()


def test_a_path_replays_exactly_and_a_bare_path_is_its_seed():
    faults = ["--faults", "llm.stream_cut=0.3,llm.rate_limit=0.3"]
    with Server(faults) as server, Server(faults) as fresh:
        path = RunPath.parse("5/3:9913")
        first, again, elsewhere = _run_planted(server, path), _run_planted(server, path), _run_planted(fresh, path)
        assert first.hash == again.hash == elsewhere.hash
        assert [e["run_seed"] for e in first.in_arrival_order()] == [e["run_seed"] for e in elsewhere.in_arrival_order()]
        other = _run_planted(server, RunPath.parse("5/3:9914"))
        assert other.hash != first.hash
        bare = _run_planted(server, RunPath.parse("5"))
        plain = Umi(server, 5)
        client = openai.OpenAI(base_url=plain.openai_base_url, api_key="unused", max_retries=0)
        agent = {}
        exec(AGENT, agent)  # noqa: S102
        agent["answer_all"](client, QUESTIONS)
        assert bare.hash == plain.trace().hash
        # The first two requests are the seed's, whatever the branch draws after them.
        seeds = [e["run_seed"] for e in bare.in_arrival_order()][:2]
        assert [e["run_seed"] for e in first.in_arrival_order()][:2] == seeds
        marks = server.marks(plain.scope)
        assert marks["entries"] == len(plain.trace()) and marks["marks"], marks


def test_path_and_explore_options_are_checked(inner, pytester):
    pytester.makepyfile(test_inner="def test_nothing(umi):\n    pass\n")
    for args, says in [(["--umi-path=7/0:1"], "--umi-path '7/0:1': branch '0:1': a branch's step counts"),
                       (["--umi-path=7", "--umi-seed=7"], "--umi-path and --umi-seed together"),
                       (["--umi-explore=0"], "--umi-explore: '0'; at least 1"),
                       (["--umi-explore=3", "--umi-path=7"], "--umi-explore with a path pin")]:
        result = inner(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (args, result.stderr.str())
        assert says in result.stderr.str(), (args, result.stderr.str())


def test_exploration_finds_the_ordered_bug_in_fewer_reruns_than_blind_seeds(inner, pytester, capsys):
    pytester.makepyfile(planted_agent=AGENT, test_planted=PLANTED)
    blind = inner("-q", "-x", f"--umi-seeds={RUNS_MAX}", "-p", "no:randomly", subprocess=True)
    outcome = blind.parseoutcomes()
    assert outcome.get("failed") == 1, blind.stdout.str()[-2000:]
    blind_runs = outcome.get("passed", 0) + 1

    explored = inner("-q", f"--umi-explore={RUNS_MAX}", subprocess=True)
    output = explored.stdout.str()
    found = re.search(r"test_answers_are_whole\[seed=1\]: failed on run (\d+), path (\S+)", output)
    assert found, output[-3000:]
    explore_runs, path = int(found.group(1)), found.group(2)
    with capsys.disabled():
        print(f"\nplanted cut-then-429 bug: blind seeds {blind_runs} runs, --umi-explore {explore_runs} runs "
              f"(path {path})")
    assert explore_runs * FEWER_TIMES_MIN <= blind_runs, (explore_runs, blind_runs)
    assert f"path:    {path}" in output, output[-3000:]

    # The rerun line, as printed, replays that path and fails the same way.
    rerun = re.search(r"^rerun:   (.*--umi-path=.*)$", output, re.M).group(1)
    assert f"--umi-path={path} " in rerun and "UMI_SEED" not in rerun, rerun
    replayed = subprocess.run(rerun, shell=True, cwd=pytester.path, capture_output=True, text=True,
                              env={**os.environ, "PYTEST_ADDOPTS": "-p no:cacheprovider"})
    assert replayed.returncode == 1, replayed.stdout[-3000:]
    assert f"path:    {path}" in replayed.stdout, replayed.stdout[-3000:]
    # The same finding: the same cut response (request hash, occurrence, arrival), the same text.
    finding = re.search(r"^E\s+(the final answer is the partial text of cut response .*)$", output, re.M)
    assert finding, output[-3000:]
    assert finding.group(1) in replayed.stdout, (finding.group(1), replayed.stdout[-3000:])
