"""`Umi.check_effects()` over planted traces (no server): both ways for each rule.

The same check against a real `dst serve`, with planted agents, is in
tests/python/test_effects.py."""

import pytest

from umi_dst import EffectFinding, EffectNeverAsked, EffectTwice, Trace, Umi


class Planted:
    """A stand-in server whose trace is `entries`."""

    url = "http://planted"

    def __init__(self, entries, left_out=0):
        self.entries = entries
        self.left_out = left_out

    def trace(self, scope):
        return Trace(self.entries, {"entries": len(self.entries), "left_out": self.left_out, "session_trace_hash": "x"})


def call(arrival, **tool):
    field = {"name": "issue_refund", "arguments": {"order_id": "A-1"}, "call_id": None, "idempotency_key": None,
             "ran": True, "deduplicated": False, "side_effects": True, **tool}
    return {"path": "/mcp", "endpoint": "mcp", "request_hash": f"{arrival:02x}" * 32, "occurrence": 0,
            "status": 200, "end": "complete", "faults": [], "arrival": arrival, "tool": field}


def run(entries, **kwargs):
    return Umi(Planted(entries, **kwargs), 7, scope="s")


def test_twice_for_one_call_id_or_one_key_fails_naming_the_tool_and_the_entries():
    with pytest.raises(EffectTwice) as found:
        run([call(1, call_id="c1"), call(0, call_id="c1")]).check_effects()
    assert isinstance(found.value, (EffectFinding, AssertionError))
    assert (found.value.tool, found.value.field, found.value.value) == ("issue_refund", "call_id", "c1")
    assert [effect["entry"]["arrival"] for effect in found.value.effects] == [0, 1]
    assert "issue_refund did its effect 2 times for one call id 'c1' (seed 7, scope s)" in str(found.value)
    with pytest.raises(EffectTwice) as found:
        run([call(0, idempotency_key="k"), call(1, idempotency_key="k", call_id="c2")]).check_effects()
    assert (found.value.field, found.value.value) == ("idempotency_key", "k")


def test_a_deduplicated_repeat_a_call_that_did_not_run_and_a_harmless_tool_pass():
    entries = [call(0, call_id="c1", idempotency_key="k"), call(1, call_id="c1", idempotency_key="k", deduplicated=True),
               call(2, call_id="c1", ran=False), call(3, call_id="c1", side_effects=False), call(4, call_id="c2")]
    assert [effect["call_id"] for effect in run(entries).check_effects()] == ["c1", "c2"]


def test_an_effect_for_a_call_id_no_response_carried_fails_when_the_trace_says_what_was_carried():
    model = {"path": "/v1/chat/completions", "arrival": 0,
             "carried": {"whole": True, "text": "", "tool_calls": [{"id": "c1", "name": "issue_refund", "arguments": "{}"}]}}
    assert len(run([model, call(1, call_id="c1")]).check_effects()) == 1
    with pytest.raises(EffectNeverAsked) as found:
        run([model, call(1, call_id="made_up")]).check_effects()
    assert found.value.value == "made_up"
    assert len(run([call(1, call_id="made_up")]).check_effects()) == 1, "nothing judged without `carried`"


def test_reported_calls_of_the_named_tools_are_effects_and_a_partial_log_concludes_nothing():
    umi = run([])
    umi.tool_calls_reported = [{"name": "pay", "arguments": {}, "call_id": "c"}] * 2
    assert umi.check_effects() == []
    with pytest.raises(EffectTwice):
        umi.check_effects(effect_tools=["pay"])
    with pytest.raises(AssertionError, match="nothing can be concluded"):
        run([call(0)], left_out=1).check_effects()
