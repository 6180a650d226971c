"""What a failing test prints, and that the rerun it prints is the same run.

An inner pytest session (pytester, in a subprocess: the inner tests use the openai SDK) runs tests that fail on purpose; the
outer test reads the `umi` report section: the seed, the faults that fired in that
run, the rerun command and the picture. Running that command as printed, in a shell
without the session's environment, from the directory the session started in, reruns
that one test on that seed and gets the same answer. The picture (`html:`) is the
scope's page, and its embedded data holds the run's requests and faults.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

from umi_dst.report import pytest_command

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
    assert re.search(r"rerun:   .*UMI_SEED=2 .*pytest -p umi_dst\.plugin 'test_inner\.py::test_rate_limited\[seed=2\]'$",
                     limited, re.M), limited

    answer = found["test_answer[seed=12]"]
    assert "faults:  none fired" in answer
    assert "requests: 1" in answer
    rerun = re.search(r"rerun:   (.*)", answer).group(1)
    assert rerun.endswith("UMI_SEED=12 " + PYTEST + " -p umi_dst.plugin 'test_inner.py::test_answer[seed=12]'"), rerun
    assert rerun.startswith(f"UMI_DST={os.path.abspath(os.environ['UMI_DST'])} PYTHONPATH="), rerun
    first = re.search(r"ANSWER\[12\] (.*)", output).group(1)

    # The rerun command, as printed, in a shell without the session's UMI_DST, PYTHONPATH
    # or UMI_SEED: one test, that seed, a fresh server, the same answer.
    again = shell(rerun, pytester.path)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "1 failed" in again.stdout
    assert re.search(r"ANSWER\[12\] (.*)", again.stdout).group(1) == first
    assert "rerun:   " + rerun in again.stdout


PYTEST = pytest_command()  # `pytest` when it is this interpreter's, else `PYTHON -m pytest`


def shell(line, cwd):
    """`line` run by /bin/sh in `cwd`, with none of the session's Umi settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("UMI_DST", "PYTHONPATH", "UMI_SEED", "UMI_SEEDS", "UMI_SEED_START", "PYTEST_ADDOPTS")}
    return subprocess.run(line, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def inner_from(cwd, *args):
    """An inner pytest session started from `cwd`, loading the plugin with `-p`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parents[1] / "src")
    for name in ("UMI_SEED", "UMI_SEEDS", "UMI_SEED_START", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "umi_dst.plugin", "-p", "no:cacheprovider",
                           "-q", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


ANSWERS = """
import json
import urllib.request

def ask(umi, prompt="Plan the week."):
    body = json.dumps({"model": "umi-sim", "messages": [{"role": "user", "content": prompt}]}).encode()
    request = urllib.request.Request(umi.openai_base_url + "/chat/completions", data=body,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["choices"][0]["message"]["content"]

def test_answer(umi):
    print(f"ANSWER {ask(umi)!r}")
    assert False, "failing on purpose"
"""


def test_the_rerun_line_works_from_the_directory_the_session_started_in(tmp_path):
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "work").mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "tests" / "test_far.py").write_text(ANSWERS)
    first = inner_from(project / "work", "../tests/test_far.py")
    assert first.returncode == 1, first.stdout + first.stderr
    rerun = re.search(r"rerun:   (.*)", first.stdout).group(1)
    assert rerun.endswith(" -p umi_dst.plugin ../tests/test_far.py::test_answer"), rerun
    answer = re.search(r"ANSWER (.*)", first.stdout).group(1)

    again = shell(rerun, project / "work")
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout + again.stderr
    assert re.search(r"ANSWER (.*)", again.stdout).group(1) == answer

    # The line without what it now carries (the old `UMI_SEED=N pytest PATH`) does not
    # rerun the test in that shell: no plugin, no umi fixture.
    seed = re.search(r"UMI_SEED=(\d+)", rerun).group(1)
    old = shell(f"UMI_SEED={seed} {PYTEST} ../tests/test_far.py::test_answer", project / "work")
    assert old.returncode != 0 and "ANSWER" not in old.stdout
    assert "fixture 'umi' not found" in old.stdout, old.stdout


def embedded_trace(page):
    html = pathlib.Path(page).read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="trace">(.*?)</script>', html, re.S)
    assert match, "the page embeds its data"
    return json.loads(match.group(1))


def test_a_failure_writes_a_picture_of_the_run_and_links_it(inner, pytester):
    pytester.makepyfile(test_inner=FAILING)
    result = inner("-q", "-k", "rate_limited", subprocess=True)
    result.assert_outcomes(failed=2)
    found = sections(result.stdout.str())
    limited = found["test_rate_limited[seed=2]"]
    link = re.search(r"^html:    (.*)$", limited, re.M).group(1)
    assert link.startswith(".umi/html/test_inner.py_test_rate_limited_seed_2-") and link.endswith(".html"), link
    page = pytester.path / link
    assert page.is_file()
    saved = pathlib.Path(str(page)[: -len(".html")] + ".trace.jsonl")
    assert saved.is_file()
    data = embedded_trace(page)
    assert data["title"] == "test_inner.py::test_rate_limited[seed=2]"
    assert data["seeds"] == [2] and data["failed"] is True
    requests = data["requests"]
    assert len(requests) == 1 == len(saved.read_text().splitlines()) - 1
    assert requests[0]["path"] == "/v1/chat/completions" and requests[0]["status"] == 429
    assert [f.split("@")[0] for f in requests[0]["faults"]] == ["llm.rate_limit"]
    assert any(event["lane"] == "faults" for event in data["events"])
    assert all(event["request"] == 0 for event in data["events"])
    # One page per failed test, and none for a passing one.
    assert len(list((pytester.path / ".umi" / "html").glob("*.html"))) == 2

    off = inner("-q", "-k", "rate_limited", "--umi-html-dir", "off", subprocess=True)
    assert "html:" not in off.stdout.str()


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
    assert re.search(r"^rerun: .*UMI_SEED=3 .* -p umi_dst\.plugin 'test_inner\.py::test_agent\[seed=3\]'$",
                     output, re.M), output
