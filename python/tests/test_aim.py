"""Faults aimed at one operation through the marker: `faults={"tool.timeout@tool.call.
issue_refund": 1.0}` reaches that MCP tool and nothing else (not `initialize`, not
`tools/list`, not the lookup), in the dict form and the string form; a rule the grammar
refuses is named at collection, and one the server refuses (a tool it does not serve) is
a usage error naming the marker.
"""

import json
import os
import urllib.request

import pytest

from umi_dst.plugin import faults_text

TOOLS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support_tools.json")
AIMED = "tool.timeout@tool.call.issue_refund"


class Mcp:
    """A bare MCP client over Streamable HTTP (JSON or SSE answers), enough to call tools."""

    def __init__(self, url):
        self.url, self.session, self.next_id = url, None, 0

    def post(self, message):
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.session:
            headers["mcp-session-id"] = self.session
        request = urllib.request.Request(self.url, json.dumps(message).encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            self.session = response.headers.get("mcp-session-id") or self.session
            body = response.read().decode()
        if not body.strip():
            return None
        if body.lstrip().startswith("{"):
            return json.loads(body)
        data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
        return json.loads(data[-1]) if data else None

    def request(self, method, params=None):
        self.next_id += 1
        return self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})

    def connect(self):
        result = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                             "clientInfo": {"name": "aim-test", "version": "0"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result


def run_support_agent(umi):
    """Looks an order up, refunds it, looks it up again; returns the refund's outcome."""
    mcp = Mcp(umi.mcp_url)
    assert "result" in mcp.connect()
    assert [t["name"] for t in mcp.request("tools/list")["result"]["tools"]] == ["lookup_order", "issue_refund"]
    assert "result" in mcp.request("tools/call", {"name": "lookup_order", "arguments": {"order_id": "A-1"}})
    try:
        refund = mcp.request("tools/call", {"name": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}})
    except Exception as error:  # noqa: BLE001 -- a timed-out tool: the call never answers whole
        refund = error
    assert "result" in mcp.request("tools/call", {"name": "lookup_order", "arguments": {"order_id": "A-1"}})
    return refund


@pytest.mark.umi(seeds=5, faults={AIMED: 1.0}, args=["--mcp-tools", TOOLS_FILE])
def test_a_fault_aimed_at_one_mcp_tool_fires_there_only(umi):
    refund = run_support_agent(umi)
    assert not (isinstance(refund, dict) and "result" in refund and not refund["result"].get("isError")), refund
    assert umi.faults() == [AIMED]


@pytest.mark.umi(seeds=3, faults=f"{AIMED}=1", args=["--mcp-tools", TOOLS_FILE])
def test_the_string_form_aims_the_same(umi):
    run_support_agent(umi)
    assert umi.faults() == [AIMED]


def test_the_grammar_is_checked_before_any_server_starts():
    assert faults_text({AIMED: 0.5, "llm.rate_limit@llm.call#2": 1}) == (
        "tool.timeout@tool.call.issue_refund=0.5,llm.rate_limit@llm.call#2=1.0")
    assert faults_text(" tool.mcp_stream_cut@tool.mcp.request.tools/call#2..=1 ,") == (
        "tool.mcp_stream_cut@tool.mcp.request.tools/call#2..=1")
    assert faults_text("wire_shapes") == "wire_shapes"
    for faults, says in (
        ({"tool.timeout@": 1}, r"rule 'tool.timeout@' is not KIND\[@OPERATION\]\[#N\[..\]\]"),
        ({"llm.rate_limit#0": 1}, "`#0`: the ordinal counts from 1"),
        ({"llm.rate_limit@llm.call#2": 2}, "a probability is 0 to 1"),
        ("llm.rate_limit@llm.call", "has no `=probability`"),
        ("tool.timeout@tool.call.pay=high", "'high' is not a probability"),
        ("tool.timeout@tool call=1", "is not KIND"),
    ):
        with pytest.raises(ValueError, match=says):
            faults_text(faults, where="t.py::test_x")


def test_an_operation_the_server_does_not_ask_is_a_usage_error_naming_the_marker(inner, pytester):
    pytester.makepyfile(test_m="""
        import pytest
        @pytest.mark.umi(seed=1, faults={"tool.timeout@tool.call.refund": 1})
        def test_refund(umi):
            pass
    """)
    result = inner("-q")
    assert result.ret != 0
    text = result.stdout.str() + result.stderr.str()
    assert ("test_m.py::test_refund[seed=1]: @pytest.mark.umi: dst serve refused its settings "
            "--faults tool.timeout@tool.call.refund=1.0: ") in text, text
    assert "Traceback" not in text and "plugin.py" not in text, text
    assert '--faults "tool.timeout@tool.call.refund=1": no tool "refund" is served' in text, text


def test_a_small_probability_is_written_without_an_exponent():
    """Review finding (issue 39): `{kind: 0.00001}` became `1e-05`, which the server's
    grammar (digits and one point) refuses."""
    from umi_dst.plugin import faults_text

    assert faults_text({"llm.rate_limit": 0.00001}) == "llm.rate_limit=0.00001"
    assert faults_text({"llm.rate_limit": 0.2, "llm.stream_cut": 1}) == "llm.rate_limit=0.2,llm.stream_cut=1.0"
