"""The plugin against a real `dst serve`, through the openai SDK: what a user relies on.

* A seed replays: the same conversation under a fresh scope on the same (used) server,
  and on a fresh server, gets the same text and tool calls, and the same scope hash.
* Streamed equals whole: `stream=True`, the default, `stream=False` and
  `stream_options={"include_usage": True}` get the same answer (no faults).
* `check_cut_streams` keeps its old forms (`answered=`) on the evidence rule, over the
  server's `carried` and `arrival` (the rule itself: test_cut_evidence.py).
* Each SDK reaches its format through the base URL the docs give it (and through
  `umi.headers`), under the run's seed and scope.
* The session's servers: one per set of flags; bad flags are refused with the server's
  own message; every server stops on SIGTERM with exit 0, and one that does not (a
  stand-in binary) fails the session's teardown.
* `python -m umi_dst` runs the binary the plugin finds.
"""

import json
import os
import subprocess
import sys

import anthropic
import ollama
import openai
import pytest

from umi_dst import Server, ServeError, Trace, TruncatedAnswer, Umi

MODEL = "umi-sim"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The forecast for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def client(umi, retries=0):
    return openai.OpenAI(base_url=umi.openai_base_url, api_key="sk-unused", max_retries=retries)


def converse(umi, question="What is the weather in Oslo and in Rome?"):
    """A tool loop; returns every turn as (text, [(tool, arguments)], finish_reason)."""
    sdk = client(umi)
    messages = [{"role": "user", "content": question}]
    turns = []
    for _turn in range(4):
        choice = sdk.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER]).choices[0]
        calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
        turns.append((choice.message.content, calls, choice.finish_reason))
        if not calls:
            break
        messages.append(choice.message.model_dump(exclude_none=True))
        for call in choice.message.tool_calls:
            city = json.loads(call.function.arguments).get("city", "?")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": f"12 C in {city}"})
    return turns


def test_a_seed_replays_under_a_fresh_scope_and_on_a_fresh_server(umi):
    first = converse(umi)
    assert first and first[-1][2] in ("stop", "tool_calls")
    again = umi.new_scope()
    assert again.scope != umi.scope and again.seed == umi.seed
    assert converse(again) == first, "a used server, a fresh scope: the same answers"
    with Server(umi.server.flags) as fresh:
        on_fresh = umi.new_scope(server=fresh)
        assert converse(on_fresh) == first, "a fresh server: the same answers"
        assert on_fresh.trace().hash == umi.trace().hash == again.trace().hash
    # The scope is what counts repeats: the same conversation again in one scope is the
    # next occurrence of each request (a retry meets the next draw), not a replay.
    converse(again)
    occurrences = sorted(entry["occurrence"] for entry in again.trace())
    assert occurrences[: len(first)] == [0] * len(first) and max(occurrences) >= 1
    assert all(entry["scope"] == again.scope and entry["seed"] == umi.seed for entry in again.trace())


def test_each_sdk_reaches_its_format_through_its_base_url(umi):
    """The base URLs of the docs' table, each SDK as its docs configure it."""
    hello = [{"role": "user", "content": "hello"}]
    assert client(umi).chat.completions.create(model=MODEL, messages=hello).choices[0].message.content
    assert client(umi).responses.create(model=MODEL, input="hello").output_text
    claude = anthropic.Anthropic(base_url=umi.anthropic_base_url, api_key="sk-ant-unused", max_retries=0)
    assert claude.messages.create(model=MODEL, max_tokens=256, messages=hello).content[0].text
    assert ollama.Client(host=umi.ollama_base_url).chat(model=MODEL, messages=hello).message.content
    # Headers instead of the path: the same seed and scope.
    by_headers = openai.OpenAI(base_url=f"{umi.server.url}/v1", api_key="x", max_retries=0, default_headers=umi.headers)
    by_headers.chat.completions.create(model=MODEL, messages=hello)
    trace = umi.trace()  # in the server's stable order, not arrival order
    assert sorted((entry["path"], entry["occurrence"]) for entry in trace) == [
        ("/api/chat", 0), ("/v1/chat/completions", 0), ("/v1/chat/completions", 1), ("/v1/messages", 0),
        ("/v1/responses", 0)]
    assert {(entry["seed"], entry["scope"]) for entry in trace} == {(umi.seed, umi.scope)}


def test_different_seeds_get_different_answers(umi):
    answers = {converse(umi.new_scope(seed=seed), "Plan the week.")[0][0] for seed in (1, 2, 3)}
    assert len(answers) > 1


def whole(umi, messages, **extra):
    choice = client(umi).chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER], **extra).choices[0]
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []]
    return choice.message.content or "", calls, choice.finish_reason


def streamed(umi, messages, **extra):
    text, calls, finish, usage = "", {}, None, None
    for chunk in client(umi).chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER],
                                                     stream=True, **extra):
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                name, arguments = calls.get(call.index, ("", ""))
                calls[call.index] = (name + (call.function.name or ""), arguments + (call.function.arguments or ""))
            finish = choice.finish_reason or finish
    # Arguments compared as JSON: the same call may escape non-ASCII differently in pieces.
    return (text, [(name, json.loads(arguments)) for name, arguments in (calls[i] for i in sorted(calls))],
            finish), usage


@pytest.mark.umi(seeds=4)
def test_streamed_equals_whole(umi):
    for question in ("Weather in Oslo?", "Summarise the week in one line."):
        messages = [{"role": "user", "content": question}]
        default = whole(umi.new_scope(), messages)
        assert default[2] in ("stop", "tool_calls")
        assert whole(umi.new_scope(), messages, stream=False) == default
        plain, no_usage = streamed(umi.new_scope(), messages)
        assert plain == default, f"streamed {plain} != whole {default}"
        with_usage, usage = streamed(umi.new_scope(), messages, stream_options={"include_usage": True})
        assert with_usage == default
        assert usage is not None and usage.completion_tokens > 0 and no_usage is None


class FakeServer:
    """A server whose trace is given: check_cut_streams' rule, case by case."""

    url = "http://127.0.0.1:9"
    flags = ()

    def __init__(self, entries):
        self.entries = entries

    def trace(self, scope=None):
        return Trace(self.entries, {"entries": len(self.entries), "left_out": 0, "session_trace_hash": "0"})


def entry(request_hash, occurrence, cut, arrival, text="", faults=()):
    return {"endpoint": "openai", "path": "/v1/chat/completions", "request_hash": request_hash,
            "occurrence": occurrence, "arrival": arrival, "status": 200, "end": "reset" if cut else "complete",
            "cut": cut, "faults": list(faults), "carried": {"whole": not cut, "text": text, "tool_calls": []}}


def test_check_cut_streams_old_forms_still_work():
    """`answered=` (the re-send rule's argument) is still accepted: False is a run that
    ended in an error; True, without the text, is a finding when the last model response
    was cut (python/tests/test_cut_evidence.py has the evidence rule itself)."""
    resent = [entry("aa", 0, True, 0, "Sun", ["llm.stream_cut@chat"]), entry("aa", 1, False, 1, "Sunny.")]
    assert Umi(FakeServer(resent), 5).check_cut_streams() == []
    assert Umi(FakeServer(resent), 5).check_cut_streams(answer="Sunny.") == []
    last_cut = [entry("aa", 0, False, 0, "Let me look."), entry("bb", 0, True, 1, "It is sun", ["llm.stream_cut@chat"])]
    run = Umi(FakeServer(last_cut), 5, rerun_command="UMI_SEED=5 pytest t.py::test")
    with pytest.raises(TruncatedAnswer) as raised:
        run.check_cut_streams(answered=True)
    assert [e["request_hash"] for e in raised.value.cut] == ["bb"]
    message = str(raised.value)
    assert "the run acted on 1 response(s) the server cut" in message
    assert "the last model response it received was cut response R (request bb, occurrence 0, arrival 1)" in message
    assert "rerun: UMI_SEED=5 pytest t.py::test" in message
    with pytest.raises(TruncatedAnswer, match="the final answer is the partial text"):
        run.check_cut_streams(answer="It is sunny")
    # A run that ended in an error surfaced the cut: it passes (nothing acted on it).
    assert run.check_cut_streams(answered=False) == []
    assert run.check_cut_streams(False) == []
    with pytest.raises(TypeError, match="a bool"):
        run.check_cut_streams(answered="yes")
    with pytest.raises(ValueError, match="answer= given with answered=False"):
        run.check_cut_streams(answer="x", answered=False)


@pytest.mark.umi(faults={"llm.stream_cut": 1.0})
def test_check_cut_streams_on_a_cut_stream(umi):
    messages = [{"role": "user", "content": "Weather in Oslo?"}]
    try:
        text = streamed(umi, messages)[0][0]
        answered = True
    except (openai.APIError, openai.APIConnectionError):
        text, answered = "", False
    cut = umi.trace().cut()
    assert len(cut) == 1 and any(f.startswith("llm.stream_cut") for f in cut[0]["faults"])
    assert cut[0]["carried"]["whole"] is False and umi.cut_responses() == cut
    assert umi.check_cut_streams(answered=False) == []
    if answered:  # the SDK handed back what it had: exactly what the check is for
        with pytest.raises(TruncatedAnswer):
            umi.check_cut_streams(answered=True)
        if text.strip():
            with pytest.raises(TruncatedAnswer, match="the final answer is the partial text"):
                umi.check_cut_streams(answer=text)
    assert umi.faults() == cut[0]["faults"]
    # A re-send of the same request (a retry) is the next occurrence, cut as well (p = 1).
    try:
        streamed(umi, messages)
    except (openai.APIError, openai.APIConnectionError):
        pass
    assert len(umi.trace().cut()) == 2
    assert sorted(e["arrival"] for e in umi.trace()) == [0, 1]
    left = umi.unretried_cut_streams()
    assert [(e["request_hash"], e["occurrence"]) for e in left] == [(cut[0]["request_hash"], cut[0]["occurrence"] + 1)]


def test_servers_are_shared_per_flags_and_refuse_bad_flags(umi_servers, umi):
    assert umi_servers.get(()) is umi.server
    assert umi_servers.get(("--time-scale", "0.0")) is not umi.server
    with pytest.raises(ServeError) as raised:
        Server(["--faults", "llm.no_such_fault=0.5"])
    assert "llm.no_such_fault" in str(raised.value) and "exited" in str(raised.value)


def test_a_server_stops_on_sigterm_with_exit_0():
    server = Server([])
    assert server.trace().summary["entries"] == 0
    server.stop()
    assert server.process.returncode == 0
    server.stop()  # once is enough


FAKE_DST = """#!/bin/sh
# A stand-in for dst: {behaviour}
{body}
"""


def fake_dst(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(FAKE_DST.format(behaviour=name, body=body))
    path.chmod(0o755)
    return str(path)


def test_a_server_that_fails_to_start_or_to_stop_cleanly_fails_the_run(inner, pytester, monkeypatch, tmp_path):
    pytester.makepyfile(test_inner="def test_x(umi):\n    assert umi.seed >= 0\n")
    monkeypatch.setenv("UMI_DST", fake_dst(tmp_path, "refuses", 'echo "error: no such fault kind" >&2; exit 2'))
    result = inner("-q")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*umi: `*refuses serve --bind 127.0.0.1:0` exited 2 before listening:*",
                                 "*error: no such fault kind*"])

    stubborn = fake_dst(tmp_path, "exits-3-on-sigterm",
                        'echo "umi serve: listening on http://127.0.0.1:9"\ntrap "exit 3" TERM\n'
                        'while :; do sleep 0.05; done')
    monkeypatch.setenv("UMI_DST", stubborn)
    result = inner("-q")
    result.assert_outcomes(passed=1, errors=1)  # the test passed; the session's teardown did not
    result.stdout.fnmatch_lines(["*ServeError: Server(http://127.0.0.1:9, no flags) exited 3 on SIGTERM (expected 0)*"])


def test_python_m_umi_dst_runs_the_binary_the_plugin_would(tmp_path):
    done = subprocess.run([sys.executable, "-m", "umi_dst", "serve", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "Usage: dst serve" in done.stdout, done.stderr
    missing = dict(os.environ, UMI_DST=str(tmp_path / "none"))
    done = subprocess.run([sys.executable, "-m", "umi_dst", "--help"], capture_output=True, text=True, env=missing)
    assert done.returncode == 127 and "pip install umi-dst" in done.stderr
