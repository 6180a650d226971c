"""Planted agents for the cut oracle (issue 39, item 1), through the real openai SDK
against `dst serve`, each proven both ways:

* agents that act on a cut response must fail `check_cut_streams`: one runs a tool with
  the cut call's arguments and then fails (the old re-send rule passed it: the run "ended
  in an error"); one completes the cut JSON with a partial-JSON parser, runs it, tells the
  model the result and answers;
* agents that recover must pass: one retries the whole run after a cut, one falls back
  to another model; both answer from complete responses (the old rule flagged the
  fallback: its cut request was never re-sent).

Which seed cuts a tool call depends on SimLLM's draws, which change (SCHEMA.md): each test
searches seeds 1..SEEDS_SEARCHED for the first that qualifies, and asserts one does. Every
test also records what the OLD check (`unretried_cut_streams` + `answered`) said.
"""

import json

import httpx
import openai
import pydantic_core
import pytest

from umi_dst import ActedOnCut, Server, Trace, TruncatedAnswer, UnpairedToolResults, Umi
from umi_dst.evidence import arguments_fit, complete_partial_json

MODEL = "umi-sim"
FALLBACK_MODEL = "umi-sim-fallback"
SEEDS_SEARCHED = 60
TURNS_MAX = 4
RUN_RETRIES_MAX = 8
REFUND = {
    "type": "function",
    "function": {
        "name": "issue_refund",
        "description": "Refund an order.",
        "parameters": {"type": "object",
                       "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                       "required": ["order_id", "amount"]},
    },
}
QUESTION = [{"role": "user", "content": "Refund order A-17 (216 EUR) and tell me when it is done."}]


class AgentFailed(Exception):
    """A planted agent's own failure, after what it did."""


def sdk(umi):
    return openai.OpenAI(base_url=umi.openai_base_url, api_key="sk-unused", max_retries=0)


def stream_turn(umi, messages, model=MODEL, first=True):
    """One streamed turn as a naive agent reads it: (text, [(id, name, arguments)],
    finish_reason); the finish reason is None when the stream ended early or broke."""
    text, calls, finish = "", {}, None
    choice = "required" if first else "auto"
    try:
        for chunk in sdk(umi).chat.completions.create(model=model, messages=messages, tools=[REFUND],
                                                     tool_choice=choice, stream=True):
            for delta_choice in chunk.choices:
                text += delta_choice.delta.content or ""
                for call in delta_choice.delta.tool_calls or []:
                    call_id, name, arguments = calls.get(call.index, (None, "", ""))
                    calls[call.index] = (call_id or call.id, name + (call.function.name or ""),
                                         arguments + (call.function.arguments or ""))
                finish = delta_choice.finish_reason or finish
    except (openai.APIError, httpx.HTTPError):
        finish = None
    return text, [calls[i] for i in sorted(calls)], finish


def whole_turn(umi, messages, model, first):
    """One non-streamed turn: (text, [(id, name, arguments)], finish_reason)."""
    choice = sdk(umi).chat.completions.create(model=model, messages=messages, tools=[REFUND],
                                              tool_choice="required" if first else "auto").choices[0]
    calls = [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    return choice.message.content or "", calls, choice.finish_reason


def partial_json(text):
    """A framework's partial-JSON parser: pydantic-core's (what pydantic-ai streams with),
    which completes cut JSON (`{"amount": 21` -> `{"amount": 21}`)."""
    try:
        value = pydantic_core.from_json(text or "{}", allow_partial="trailing-strings")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def assistant_turn(text, calls):
    return {"role": "assistant", "content": text or None,
            "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                           for i, n, a in calls]}


def refund(umi, call_id, name, arguments):
    """The agent's own tool: reported to the checks, as a user's test would."""
    umi.report_tool_call(name, arguments, call_id=call_id)
    return f"refunded {arguments.get('amount', '?')} for {arguments.get('order_id', '?')}"


# ---- the planted agents ----

def runs_cut_arguments_then_fails(umi):
    """Runs every call of the first turn, even one whose stream was cut (its arguments
    parsed or `{}`), then fails."""
    _text, calls, _finish = stream_turn(umi, QUESTION)
    for call_id, name, arguments in calls:
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = {}
        refund(umi, call_id, name, parsed)
    raise AgentFailed("the agent failed after the refund")


def completes_cut_json(umi):
    """Repairs cut argument JSON, runs it, tells the model and answers what comes."""
    messages = list(QUESTION)
    text, calls, _finish = stream_turn(umi, messages)
    results = [(call_id, refund(umi, call_id, name, partial_json(arguments)))
               for call_id, name, arguments in calls]
    messages.append(assistant_turn(text, calls))
    messages += [{"role": "tool", "tool_call_id": call_id, "content": out} for call_id, out in results]
    text, _calls, _finish = stream_turn(umi, messages, first=False)
    return text


def conversation(umi, turn):
    """A tool loop over `turn` (a function of messages and first); None when a turn was
    cut (finish reason None), else the final text."""
    messages = list(QUESTION)
    for index in range(TURNS_MAX):
        text, calls, finish = turn(messages, index == 0)
        if finish is None:
            return None
        if not calls:
            return text
        messages.append(assistant_turn(text, calls))
        for call_id, name, arguments in calls:
            out = refund(umi, call_id, name, json.loads(arguments))
            messages.append({"role": "tool", "tool_call_id": call_id, "content": out})
    return text


def retries_the_whole_run(umi):
    """After a cut, starts the whole run again; answers from complete responses only."""
    for _attempt in range(RUN_RETRIES_MAX):
        answer = conversation(umi, lambda messages, first: stream_turn(umi, messages, first=first))
        if answer is not None:
            return answer
    raise AgentFailed("every attempt was cut")


def falls_back_to_another_model(umi):
    """After a cut, asks the fallback model (whole, not streamed) for that turn."""
    def turn(messages, first):
        text, calls, finish = stream_turn(umi, messages, first=first)
        if finish is None:
            try:
                return whole_turn(umi, messages, FALLBACK_MODEL, first)
            except openai.APIError as error:
                raise AgentFailed(f"the fallback failed too: {error}") from error
        return text, calls, finish
    answer = conversation(umi, turn)
    if answer is None:
        raise AgentFailed("the fallback was cut too")
    return answer


# ---- the search and the old rule ----

def old_verdict(run, answered):
    """What the OLD check (re-send rule) said: True when it raised."""
    return bool(run.unretried_cut_streams()) and answered


def carried_cut_call(run):
    """Whether a cut model response of `run` carried an `issue_refund` call."""
    return any(call.get("name") == "issue_refund"
               for entry in run.cut_responses() for call in (entry.get("carried") or {}).get("tool_calls", []))


def first_qualifying(umi, agent, qualifies):
    """Runs `agent` on seeds 1..SEEDS_SEARCHED (each under a fresh scope); the first run
    that qualifies, with its outcome: (run, answer or None, error or None)."""
    for seed in range(1, SEEDS_SEARCHED + 1):
        run = umi.new_scope(seed=seed)
        try:
            answer, error = agent(run), None
        except AgentFailed as failed:
            answer, error = None, failed
        if qualifies(run, answer):
            return run, answer, error
    pytest.fail(f"no seed in 1..{SEEDS_SEARCHED} qualifies for {agent.__name__}")


@pytest.mark.umi(seed=1, faults={"llm.stream_cut": 1.0})
def test_an_agent_that_runs_cut_arguments_and_then_fails_is_found(umi):
    run, _answer, error = first_qualifying(umi, runs_cut_arguments_then_fails,
                                           lambda run, _answer: carried_cut_call(run))
    assert isinstance(error, AgentFailed)
    assert not old_verdict(run, answered=False), "the old rule passed it: the run ended in an error"
    with pytest.raises(ActedOnCut) as raised:
        run.check_cut_streams(answered=False)
    kinds = {finding.kind for finding in raised.value.findings}
    assert "tool_reported" in kinds, raised.value
    assert "tool `issue_refund` ran (reported by the test) with the" in str(raised.value)
    assert isinstance(raised.value, TruncatedAnswer) and raised.value.cut
    assert all(entry["cut"] and entry["endpoint"] != "mcp" for entry in raised.value.cut)


@pytest.mark.umi(seed=1, faults={"llm.stream_cut": 1.0})
def test_an_agent_that_completes_cut_json_and_runs_it_is_found(umi):
    def qualifies(run, _answer):
        # A call cut inside its arguments, which the repair completed.
        return any(call.get("name") == "issue_refund" and call.get("arguments")
                   and complete_partial_json(call["arguments"]) not in (None, {})
                   and not _parses(call["arguments"])
                   for entry in run.cut_responses() for call in entry["carried"]["tool_calls"])
    run, answer, _error = first_qualifying(umi, completes_cut_json, qualifies)
    with pytest.raises(ActedOnCut) as raised:
        run.check_cut_streams(answer=answer)
    kinds = {finding.kind for finding in raised.value.findings}
    # The tool ran with the completed arguments; the next request carried the turn and its result.
    assert {"tool_reported", "history_call", "tool_result"} <= kinds, raised.value
    assert "with the call id of a call from cut response R" in str(raised.value)
    # Without the call id, the completed arguments alone are evidence.
    source = next(e for e in run.cut_responses()
                  if any(c.get("name") == "issue_refund" and c.get("arguments") for c in e["carried"]["tool_calls"]))
    bare = Umi(FakeServer([source]), run.seed)
    bare.tool_calls_reported = [dict(call, call_id=None) for call in run.tool_calls_reported]
    with pytest.raises(ActedOnCut, match="with the arguments of a call from cut response R"):
        bare.check_cut_streams(answered=False)


def _parses(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


@pytest.mark.umi(seed=1, faults={"llm.stream_cut": 0.5})
def test_an_agent_that_retries_the_whole_run_after_a_cut_passes(umi):
    def qualifies(run, answer):
        return answer is not None and run.cut_responses()
    run, answer, _error = first_qualifying(umi, retries_the_whole_run, qualifies)
    assert run.check_cut_streams(answer=answer) == []
    assert run.check_cut_streams(answered=True) == []
    assert run.check_tool_results() == []
    # The buggy twin on the same trace: handing over the cut's text is found.
    cut_text = next((e["carried"]["text"] for e in run.cut_responses() if e["carried"]["text"].strip()), None)
    if cut_text:
        with pytest.raises(ActedOnCut, match="the final answer is the partial text of cut response R"):
            run.check_cut_streams(answer=cut_text)


@pytest.mark.umi(seed=1, faults={"llm.stream_cut": 0.5})
def test_an_agent_that_falls_back_to_another_model_passes(umi):
    def qualifies(run, answer):
        return answer is not None and run.cut_responses()
    run, answer, _error = first_qualifying(umi, falls_back_to_another_model, qualifies)
    assert old_verdict(run, answered=True), "the old rule flagged it: the cut request was never re-sent"
    assert run.check_cut_streams(answer=answer) == []
    assert run.check_cut_streams(answered=True) == []
    assert run.check_tool_results() == []


# ---- the rule, case by case, on given traces ----

class FakeServer:
    url = "http://127.0.0.1:9"
    flags = ()

    def __init__(self, entries):
        self.entries = entries

    def trace(self, scope=None):
        return Trace(self.entries, {"entries": len(self.entries), "left_out": 0, "session_trace_hash": "0"})


def model(arrival, carried, history=None, cut=None, request_hash="aa"):
    cut = (not carried["whole"]) if cut is None else cut
    return {"endpoint": "openai", "path": "/v1/chat/completions", "request_hash": request_hash + str(arrival),
            "occurrence": 0, "status": 200, "end": "complete", "cut": cut, "faults": [], "arrival": arrival,
            "carried": carried, "history": history or {"assistant": [], "tool_results": []}}


def carried(text="", calls=(), whole=True):
    return {"whole": whole, "text": text,
            "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls]}


def test_partial_json_is_completed_as_a_partial_parser_would():
    assert complete_partial_json("") == {} and complete_partial_json("{") == {}
    assert complete_partial_json('{"amount": 21') == {"amount": 21}
    assert complete_partial_json('{"order_id": "item notes dra') == {"order_id": "item notes dra"}
    assert complete_partial_json('{"a": 1, "b": tr') == {"a": 1}
    assert arguments_fit('{"amount": 21', {"amount": 216})
    assert not arguments_fit('{"amount": 21', {"amount": 2})
    assert arguments_fit('{"order_id": "item notes dra', {"order_id": "item notes draft", "amount": 1})
    assert not arguments_fit('{"order_id": "B', {"order_id": "A-17"})
    assert arguments_fit("", {})


def test_evidence_a_whole_response_explains_is_not_counted():
    cut_call = carried(calls=[("c1", "issue_refund", '{"amount": 21')], whole=False)
    retry = carried(calls=[("c2", "issue_refund", '{"amount":216,"order_id":"A-17"}')])
    entries = [model(0, cut_call), model(1, retry)]
    run = Umi(FakeServer(entries), 5)
    # The retry's call ran: explained by the whole response, though it fits the cut text.
    run.report_tool_call("issue_refund", {"amount": 216, "order_id": "A-17"}, call_id="c2")
    assert run.check_cut_streams(answered=False) == []
    # The cut call ran (a partial-JSON parser completed it): found, by arguments.
    run.report_tool_call("issue_refund", '{"amount": 216}')
    with pytest.raises(ActedOnCut, match="with the arguments of a call from cut response R"):
        run.check_cut_streams(answered=False)


def test_history_and_answer_evidence_and_mcp_cuts_apart():
    cut_text = carried(text="Your refund of 216 EUR is on its w", whole=False)
    later = model(2, carried(text="Done."), history={
        "assistant": [{"text": "Your refund of 216 EUR is on its w", "tool_calls": []}], "tool_results": []})
    mcp_cut = {"endpoint": "mcp", "path": "/mcp", "request_hash": "mm", "occurrence": 0, "status": 200,
               "end": "reset", "cut": True, "faults": ["tool.mcp_stream_cut@tools/call"], "arrival": 1, "events": []}
    run = Umi(FakeServer([model(0, cut_text), mcp_cut, later]), 5)
    with pytest.raises(ActedOnCut) as raised:
        run.check_cut_streams(answer="Done.")
    assert [f.kind for f in raised.value.findings] == ["history_text"]
    assert "arrival 2" in str(raised.value) and "arrival 0" in str(raised.value)
    # An MCP cut alone is never a cut model stream.
    only_mcp = Umi(FakeServer([mcp_cut, model(2, carried(text="Done."))]), 5)
    assert only_mcp.check_cut_streams(answer="Done.") == [] and only_mcp.cut_responses() == []
    # The answer: the cut's partial text, or containing it when long enough.
    lone = Umi(FakeServer([model(0, cut_text)]), 5)
    for answer in ("Your refund of 216 EUR is on its w", "Note: Your refund of 216 EUR is on its w..."):
        with pytest.raises(ActedOnCut, match="the final answer is the partial text"):
            lone.check_cut_streams(answer=answer)
    assert lone.check_cut_streams(answer="Sorry, try again later.") == []
    # answered=True without the text: the last model response being cut is the finding.
    with pytest.raises(ActedOnCut, match="the last model response it received was cut response R"):
        lone.check_cut_streams(answered=True)
    assert lone.check_cut_streams(False) == []  # the old positional form: the run failed


def test_tool_results_are_paired_with_calls_in_every_request():
    turn = {"text": "", "tool_calls": [{"id": "c1", "name": "issue_refund", "arguments": "{}"}]}
    fine = model(1, carried(text="ok"), history={"assistant": [turn], "tool_results": [{"call_id": "c1"}]})
    assert Umi(FakeServer([fine]), 5).check_tool_results() == []
    twice = model(1, carried(text="ok"), history={"assistant": [turn],
                                                  "tool_results": [{"call_id": "c1"}, {"call_id": "c1"}]})
    stranger = model(2, carried(text="ok"), history={"assistant": [turn],
                                                     "tool_results": [{"call_id": "c1"}, {"call_id": "zz"}]})
    with pytest.raises(UnpairedToolResults) as raised:
        Umi(FakeServer([twice, stranger]), 5).check_tool_results()
    problems = raised.value.problems
    assert any("has 2 results" in p for p in problems) and any("'zz', which no assistant turn made" in p
                                                              for p in problems)


def test_the_server_logs_arrival_carried_and_history(umi):
    """Over the real server: `arrival` in the order requests came, `carried` what the
    client got, `history` the conversation sent; none of them changes the trace hash."""
    messages = list(QUESTION)
    text, calls, finish = whole_turn(umi, messages, MODEL, first=True)
    assert calls and finish == "tool_calls"
    messages.append(assistant_turn(text, calls))
    messages += [{"role": "tool", "tool_call_id": i, "content": "done"} for i, _n, _a in calls]
    whole_turn(umi, messages, MODEL, first=False)
    trace = sorted(umi.trace(), key=lambda e: e["arrival"])
    assert [e["arrival"] for e in trace] == [0, 1]
    first, second = trace
    assert first["carried"]["whole"] is True
    assert [(c["id"], c["name"]) for c in first["carried"]["tool_calls"]] == [(i, n) for i, n, _a in calls]
    assert json.loads(first["carried"]["tool_calls"][0]["arguments"]) == json.loads(calls[0][2])
    assert second["history"]["tool_results"] == [{"call_id": i} for i, _n, _a in calls]
    assert [c["id"] for c in second["history"]["assistant"][0]["tool_calls"]] == [i for i, _n, _a in calls]
    with Server(umi.server.flags) as fresh:
        again = umi.new_scope(server=fresh)
        # Another order of arrival (the second request first): the same trace hash.
        whole_turn(again, messages, MODEL, first=False)
        whole_turn(again, list(QUESTION), MODEL, first=True)
        assert [e["arrival"] for e in again.trace()] != [e["arrival"] for e in umi.trace()]
        assert again.trace().hash == umi.trace().hash


def test_a_short_whole_text_in_the_answer_does_not_hide_a_cut_prefix():
    """Review finding (issue 39): any whole text that appeared in the answer explained it,
    so an agent that echoed "Let me check." and then answered from a cut prefix passed."""
    cut_text = carried(text="Your refund of 216 EUR is on its w", whole=False)
    opener = carried(text="Let me check.")
    run = Umi(FakeServer([model(0, opener), model(1, cut_text)]), 5)
    with pytest.raises(ActedOnCut, match="the final answer is the partial text"):
        run.check_cut_streams(answer="Let me check. Your refund of 216 EUR is on its w")
    # A whole response that holds the partial text explains it: a retry that answered.
    retried = Umi(FakeServer([model(0, cut_text), model(1, carried(text="Your refund of 216 EUR is on its way."))]), 5)
    assert retried.check_cut_streams(answer="Your refund of 216 EUR is on its way.") == []


def test_a_call_reported_with_float_numbers_matches_the_wires_integers():
    """Review finding (issue 39): `216.0` (a pydantic float field) did not equal the wire's
    `216`, so a whole response's own call fell through to the cut-fit test."""
    cut_call = carried(calls=[("c1", "issue_refund", '{"amount": 21')], whole=False)
    retry = carried(calls=[("c2", "issue_refund", '{"amount":216}')])
    run = Umi(FakeServer([model(0, cut_call), model(1, retry)]), 5)
    run.report_tool_call("issue_refund", {"amount": 216.0})
    assert run.check_cut_streams(answered=False) == []


def test_unretried_cut_streams_leaves_mcp_cuts_apart():
    mcp_cut = {"endpoint": "mcp", "path": "/mcp", "request_hash": "mm", "occurrence": 0, "status": 200,
               "end": "reset", "cut": True, "faults": ["tool.mcp_stream_cut@tools/call"], "arrival": 0, "events": []}
    assert Umi(FakeServer([mcp_cut]), 5).unretried_cut_streams() == []
