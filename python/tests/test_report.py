"""What a failing test prints, and that the rerun it prints is the same run.

An inner pytest session (pytester, in a subprocess: the inner tests use the openai SDK) runs tests that fail on purpose; the
outer test reads the `umi` report section: the seed, the faults that fired in that
run, and the rerun command. Running that command reruns that one test on that seed and
gets the same answer.
"""

import re
import shlex

FAILING = """
import openai
import pytest

def ask(umi):
    client = openai.OpenAI(base_url=umi.openai_base_url, api_key="x", max_retries=0)
    return client.chat.completions.create(model="umi-sim", messages=[{"role": "user", "content": "Plan the week."}])

@pytest.mark.umi(seeds=2, faults={"llm.rate_limit": 1.0})
def test_rate_limited(umi):
    with pytest.raises(openai.RateLimitError):
        ask(umi)
    assert False, "failing on purpose"

@pytest.mark.umi(seeds=[11, 12])
def test_answer(umi):
    answer = ask(umi).choices[0].message.content
    print(f"ANSWER[{umi.seed}] {answer!r}")
    assert umi.seed != 12, "failing on purpose"
"""


def sections(output):
    """The `umi` report sections of a run's output, by test id."""
    found = {}
    parts = re.split(r"^_{3,} (test_\S+) _{3,}$", output, flags=re.M)
    for name, body in zip(parts[1::2], parts[2::2]):
        umi = re.search(r"^-{3,} umi -{3,}$\n(.*?)(?=^-{3,} |^={3,}|\Z)", body, re.S | re.M)
        if umi:
            found[name] = umi.group(1)
    return found


def test_a_failure_reports_seed_faults_and_rerun(inner, pytester, monkeypatch):
    pytester.makepyfile(test_inner=FAILING)
    result = inner("-q", "-rN", subprocess=True)
    assert result.ret == 1
    result.assert_outcomes(passed=1, failed=3)
    output = result.stdout.str()
    found = sections(output)
    assert sorted(found) == ["test_answer[seed=12]", "test_rate_limited[seed=1]", "test_rate_limited[seed=2]"], output

    limited = found["test_rate_limited[seed=2]"]
    assert "seed:    2\n" in limited
    assert re.search(r"faults:  1 fired\n  /v1/chat/completions request [0-9a-f]{16} occurrence 0: "
                     r"status 429, end complete, faults llm\.rate_limit@", limited), limited
    assert "server:  dst serve --faults llm.rate_limit=1.0" in limited
    assert "rerun:   UMI_SEED=2 pytest 'test_inner.py::test_rate_limited[seed=2]'" in limited

    answer = found["test_answer[seed=12]"]
    assert "faults:  none fired" in answer
    assert "requests: 1" in answer
    rerun = re.search(r"rerun:   (.*)", answer).group(1)
    assert rerun == "UMI_SEED=12 pytest 'test_inner.py::test_answer[seed=12]'"
    first = re.search(r"ANSWER\[12\] (.*)", output).group(1)

    # The rerun command, as printed: one test, that seed, a fresh server, the same answer.
    env, command, target = shlex.split(rerun)
    assert command == "pytest"
    monkeypatch.setenv(*env.split("=", 1))
    again = inner("-q", target, subprocess=True)
    again.assert_outcomes(failed=1)
    assert re.search(r"ANSWER\[12\] (.*)", again.stdout.str()).group(1) == first
    assert "rerun:   " + rerun in again.stdout.str()


def test_a_passing_run_prints_nothing_of_umi(inner, pytester):
    pytester.makepyfile(test_inner="def test_ok(umi):\n    assert umi.seed >= 0\n")
    result = inner("-q")
    result.assert_outcomes(passed=1)
    assert "rerun:" not in result.stdout.str()


def test_a_cut_stream_passed_off_as_an_answer_fails_with_the_cut_requests(inner, pytester):
    pytester.makepyfile(test_inner="""
        import openai
        import pytest

        @pytest.mark.umi(faults={"llm.stream_cut": 1.0}, seed=3)
        def test_agent(umi):
            client = openai.OpenAI(base_url=umi.openai_base_url, api_key="x", max_retries=0)
            text = ""
            try:
                for chunk in client.chat.completions.create(
                        model="umi-sim", stream=True, messages=[{"role": "user", "content": "Plan the week."}]):
                    text += "".join(c.delta.content or "" for c in chunk.choices)
            except Exception:
                pass  # a careless agent: whatever came is the answer
            if text.strip():
                umi.check_cut_streams(answer=text)
            umi.check_cut_streams(answered=True)  # the text is empty: whatever came was cut
    """)
    result = inner("-q", subprocess=True)
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "ActedOnCut: Umi finding: the run acted on 1 response(s) the server cut" in output
    assert re.search(r"/v1/chat/completions request [0-9a-f]{16} occurrence 0: status 200, end \w+, "
                     r"faults llm\.stream_cut@", output), output
    assert "rerun: UMI_SEED=3 pytest 'test_inner.py::test_agent[seed=3]'" in output
