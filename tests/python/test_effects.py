"""`umi.check_effects()`: a scope is one run, and its tools' world lasts the run.

Planted agents talk to `dst serve`'s MCP server (tests/python/refund_tools.json:
`issue_refund` honours an `idempotency_key`) with a plain JSON-RPC client, so what each
sends is exactly what the test says:

* an agent that resends a stalled `issue_refund` with the same call id and no key pays
  twice on some seed: `check_effects()` fails with `EffectTwice`, naming the tool, the
  call id and the entries;
* the same agent with a key: the resend is deduplicated (the server applies the key once
  and answers the key's first answer) and the check passes, on every seed;
* a key sent again from another MCP session of the same scope is deduplicated too, with
  the first call's result: before a scope kept its world, each request began from a
  fresh one and the second call refunded again, with another refund id.
"""

import json
import pathlib
import urllib.error
import urllib.request

import pytest

from umi_dst import EffectNeverAsked, EffectTwice

REFUNDS = str(pathlib.Path(__file__).with_name("refund_tools.json"))
STALLS = "tool.timeout=0.5"
SEEDS_SEARCHED = 60
ATTEMPTS_MAX = 4
CALL_ID_META_KEY = "umi.dev/tool_call_id"


class RawMcp:
    """A JSON-RPC client over Streamable HTTP that sends exactly what it is told."""

    def __init__(self, url, timeout_s=5):
        self.url = url
        self.timeout_s = timeout_s
        self.session = None
        self.next_id = 0

    def post(self, message):
        """The reply to `message`, or None when none came whole (a cut, a stall, a reset)."""
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if self.session:
            headers["mcp-session-id"] = self.session
        request = urllib.request.Request(self.url, data=json.dumps(message).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                self.session = response.headers.get("mcp-session-id") or self.session
                body = response.read().decode()
                sse = response.headers.get("content-type", "").startswith("text/event-stream")
        except (urllib.error.URLError, OSError, ValueError):
            return None
        if sse:
            data = [line[len("data: "):] for line in body.splitlines() if line.startswith("data: ")]
            body = data[-1] if data else ""
        try:
            return json.loads(body) if body else None
        except json.JSONDecodeError:
            return None

    def request(self, method, params):
        self.next_id += 1
        return self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})

    def initialize(self):
        for _ in range(ATTEMPTS_MAX):
            reply = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                "clientInfo": {"name": "planted", "version": "1"}})
            if reply and "result" in reply and self.session:
                self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
                return
        raise AssertionError("the planted agent could not initialize")

    def call(self, name, arguments, call_id):
        return self.request("tools/call", {"name": name, "arguments": arguments, "_meta": {CALL_ID_META_KEY: call_id}})


def refund_resending(umi, key=None, client=None):
    """The planted agent: refunds order A-1, resending a call whose answer never came (the
    same call id each time), with `key` as its idempotency key when given. Returns the
    reply that came, or None."""
    client = client or RawMcp(umi.mcp_url)
    if client.session is None:
        client.initialize()
    arguments = {"order_id": "A-1", "amount": 40}
    if key is not None:
        arguments["idempotency_key"] = key
    for _ in range(ATTEMPTS_MAX):
        reply = client.call("issue_refund", arguments, "call_refund_1")
        if reply and "result" in reply and not reply["result"].get("isError"):
            return reply
    return None


def tool_entries(run):
    return [entry["tool"] for entry in run.trace() if entry.get("tool")]


@pytest.mark.umi(seed=1, args=["--mcp-tools", REFUNDS], faults=STALLS)
def test_a_resend_without_a_key_pays_twice_and_the_check_says_so(umi):
    for seed in range(1, SEEDS_SEARCHED + 1):
        run = umi.new_scope(seed=seed)
        refund_resending(run)
        if len(run.effects()) < 2:
            assert run.check_effects() == run.effects()
            continue
        with pytest.raises(EffectTwice) as found:
            run.check_effects()
        finding = found.value
        assert isinstance(finding, AssertionError)
        assert (finding.tool, finding.field, finding.value) == ("issue_refund", "call_id", "call_refund_1")
        assert len(finding.effects) >= 2 and all(effect["entry"] for effect in finding.effects)
        assert "issue_refund did its effect" in str(finding) and "call_refund_1" in str(finding)
        return
    pytest.fail(f"no seed in 1..{SEEDS_SEARCHED} made the resending agent pay twice")


@pytest.mark.umi(seed=1, args=["--mcp-tools", REFUNDS], faults=STALLS)
def test_a_resend_with_a_key_is_deduplicated_and_the_check_passes(umi):
    deduplicated = 0
    for seed in range(1, SEEDS_SEARCHED + 1):
        run = umi.new_scope(seed=seed)
        refund_resending(run, key="refund-A-1")
        effects = run.check_effects()
        assert len(effects) <= 1, effects
        entries = tool_entries(run)
        assert all(entry["idempotency_key"] == "refund-A-1" for entry in entries), entries
        if any(entry["deduplicated"] for entry in entries):
            deduplicated += 1
            assert len(effects) == 1
    assert deduplicated, f"no seed in 1..{SEEDS_SEARCHED} resent a refund that had run"


@pytest.mark.umi(seeds=3, args=["--mcp-tools", REFUNDS])
def test_a_key_sent_again_from_another_session_gets_the_first_result_and_no_second_refund(umi):
    first = refund_resending(umi, key="refund-A-7")
    second = refund_resending(umi, key="refund-A-7")  # a new client: another MCP session
    assert first and second
    assert second["result"] == first["result"], "the key's first answer again"
    entries = tool_entries(umi)
    assert [(entry["ran"], entry["deduplicated"]) for entry in entries] == [(True, False), (True, True)], entries
    assert len(umi.check_effects()) == 1


REFUND_TOOL = {"type": "function", "function": {
    "name": "issue_refund", "description": "refunds an order",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "integer", "minimum": 1}},
                   "required": ["order_id", "amount"]}}}


@pytest.mark.umi(seed=1, args=["--mcp-tools", REFUNDS])
def test_an_effect_for_a_call_no_model_response_carried_is_found(umi):
    """An agent that refunds under the call id the model sent passes; one that refunds
    under an id no response carried fails with `EffectNeverAsked`. Judged only when the
    trace says what responses carried (`carried`)."""
    import openai

    for seed in range(1, SEEDS_SEARCHED + 1):
        run = umi.new_scope(seed=seed)
        client = openai.OpenAI(base_url=run.openai_base_url, api_key="unused", max_retries=0)
        try:
            response = client.chat.completions.create(
                model="umi-sim", messages=[{"role": "user", "content": "Refund order A-1, 40 euros."}],
                tools=[REFUND_TOOL], tool_choice="required")
        except openai.APIError:
            continue
        calls = response.choices[0].message.tool_calls or []
        if not calls:
            continue
        if not any("carried" in entry for entry in run.trace()):
            pytest.skip("this dst does not log what model responses carried (`carried`)")
        mcp = RawMcp(run.mcp_url)
        mcp.initialize()
        mcp.call("issue_refund", {"order_id": "A-1", "amount": 40}, calls[0].id)
        if run.effects():
            assert run.check_effects()
        mcp.call("issue_refund", {"order_id": "A-2", "amount": 40}, "call_made_up")
        if len(run.effects()) < 1 or run.effects()[-1]["call_id"] != "call_made_up":
            continue
        with pytest.raises(EffectNeverAsked) as found:
            run.check_effects()
        assert (found.value.tool, found.value.value) == ("issue_refund", "call_made_up")
        return
    pytest.fail(f"no seed in 1..{SEEDS_SEARCHED} gave a tool call and two refunds")
