"""The official MCP Python SDK (`mcp`) against `dst serve`'s simulated MCP server.

The client is pointed at `umi.mcp_url` as its docs point it at any Streamable HTTP
server (`mcp.Client(url)`), in both of its connect modes: `legacy` (the `initialize`
handshake) and `auto` (it probes `server/discover` first, gets the 400 a handshake-era
server answers, and falls back).

* it initializes, lists the tools and calls them: results valid under their output
  schemas, bad arguments a tool execution error (`isError`), an unknown tool the
  JSON-RPC error -32602; the one payment is one effect in the server's trace;
* the same seed replays: a fresh scope on the used server, and a fresh server, give the
  same versions, tools and results;
* `tools/list` pages are followed by `nextCursor` (`--mcp-tools`, a page size of 1);
* under MCP's own faults (a cut stream, an internal error, no response) every session
  ends in results, an `MCPError` or a transport error, never another exception or a hang;
* an expired session (404) must be answered by a new `initialize` (MCP 2025-11-25,
  transports, session management, rule 4); a client that gives up instead is an Umi
  finding, an xfail naming the 404;
* over stdio (`dst mcp`, spawned as agents spawn their servers) the same session works,
  and a process started again with the same seed answers the same;
* the transport as the specification says, where the SDK cannot send the shape with raw
  `httpx`: a session that negotiated 2025-03-26 sends a JSON-RPC batch and gets a
  response per request (that revision: servers "MUST support receiving JSON-RPC
  batches"), a session of 2025-06-18 or later gets 400 -32600 for one (batches were
  removed); JSON that is no JSON-RPC message is -32600, not -32700; a stalled answer
  (`tool.mcp_no_response`) sends the status line the trace records; and, through the
  SDK, an `Origin` that is not local is refused with 403 (2025-11-25: servers MUST
  validate it) unless `--allow-origin` names it.
"""

import asyncio
import json
import os
import pathlib

import httpx
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from umi_dst import Server

MODES = ["legacy", "auto"]
PAGED = str(pathlib.Path(__file__).with_name("mcp_tools.json"))
CALLS = [
    ("get_weather", {"city": "Oslo"}),
    ("search_docs", {"query": "refunds"}),
    ("send_payment", {"invoice_id": "INV-7", "amount_cents": 1200}),
    ("send_payment", {"invoice_id": "INV-8"}),
]


def leaves(error):
    """The exceptions inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from leaves(inner)
    else:
        yield error


async def _session(url, mode, calls, timeout_s):
    async with Client(url, mode=mode, read_timeout_seconds=timeout_s) as client:
        seen = [("version", client.protocol_version, client.server_info.name)]
        listed = await client.list_tools()
        seen.append(("tools", [tool.name for tool in listed.tools]))
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            texts = [part.text for part in result.content]
            seen.append(("call", name, result.is_error, texts, result.structured_content))
        return seen


def session(umi, mode="legacy", calls=CALLS, timeout_s=10):
    return asyncio.run(_session(umi.mcp_url, mode, calls, timeout_s))


def failed_session(umi, mode="legacy", calls=CALLS, timeout_s=10):
    """The errors a session that must fail ended with (anyio wraps them in groups)."""
    try:
        session(umi, mode, calls, timeout_s)
    except BaseException as error:  # noqa: B036 - exception groups
        return list(leaves(error))
    raise AssertionError("the session did not fail")


def effects(umi, tool):
    """The runs of `tool` that did their effect, from the server's trace."""
    return [event["detail"] for entry in umi.trace() for event in entry.get("events", [])
            if event["kind"] == "tool.call" and event["detail"].startswith(f"{tool} ") and "ran=true" in event["detail"]]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.umi(seeds=3)
def test_the_official_client_initializes_lists_and_calls(umi, mode):
    seen = session(umi, mode)
    assert seen[0][:2] == ("version", "2025-11-25")
    assert seen[1] == ("tools", ["get_weather", "search_docs", "send_payment"])
    weather, search, paid, refused = seen[2:]
    assert weather[2] is False and -40 <= weather[4]["celsius"] <= 45 and weather[4]["sky"] in ("clear", "cloudy", "rain", "snow")
    assert search[2] is False and len(search[4]["hits"]) <= 3
    assert paid[2] is False
    assert refused[2] is True and "Input validation error" in refused[3][0] and "amount_cents" in refused[3][0]
    assert len(effects(umi, "send_payment")) == 1, umi.trace()
    [unknown] = failed_session(umi.new_scope(), mode, calls=[("no_such_tool", {})])
    assert isinstance(unknown, MCPError), unknown
    assert unknown.code == -32602 and "Unknown tool: no_such_tool" in str(unknown)


@pytest.mark.parametrize("mode", MODES)
def test_a_seed_replays_on_a_used_and_a_fresh_server(umi, mode):
    first = session(umi, mode)
    assert session(umi.new_scope(), mode) == first
    with Server(umi.server.flags) as fresh:
        assert session(umi.new_scope(server=fresh), mode) == first
    other_seed = session(umi.new_scope(seed=umi.seed + 1), mode)
    assert other_seed[1] == first[1] and other_seed != first, "another seed, other results"


@pytest.mark.umi(args=["--mcp-tools", PAGED])
def test_pages_are_followed_by_next_cursor(umi):
    async def pages():
        async with Client(umi.mcp_url, mode="legacy") as client:
            assert client.instructions == "Three tools, one per page."
            names, cursor, count = [], None, 0
            while True:
                page = await client.list_tools(cursor=cursor)
                count += 1
                names += [tool.name for tool in page.tools]
                cursor = page.next_cursor
                if cursor is None or count > 10:
                    return names, count
    names, count = asyncio.run(pages())
    assert names == ["lookup_order", "refund_order", "ping_warehouse"]
    assert count == 3


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.umi(seeds=8, faults="tool.mcp_stream_cut=0.15,tool.mcp_internal_error=0.15,tool.mcp_no_response=0.1")
def test_under_mcp_faults_results_or_a_typed_error(umi, mode):
    """A server that never answers is a dropped connection here (`--time-scale 0`
    plays a stall as its end): httpx2's transport error, which the SDK lets through."""
    try:
        session(umi, mode, timeout_s=5)
    except BaseException as error:  # noqa: B036 - anyio wraps errors in exception groups
        found = list(leaves(error))
        assert found and all(isinstance(leaf, (MCPError, httpx2.TransportError)) for leaf in found), found
        assert umi.faults(), "an error with no fault"


@pytest.mark.umi(seeds=6, faults="tool.mcp_session_expired=0.15")
def test_an_expired_session_is_followed_by_a_new_initialize(umi):
    try:
        session(umi)
        return
    except BaseException as error:  # noqa: B036
        found = list(leaves(error))
    assert all(isinstance(leaf, MCPError) for leaf in found), found
    expired = [entry for entry in umi.trace() if entry.get("status") == 404]
    assert expired, "the session failed without a 404"
    pytest.xfail(f"mcp (python) did not initialize again after a 404 on {len(expired)} request(s) "
                 f"({found[0]}): MCP 2025-11-25 says a client MUST start a new session")


def stdio_session(seed, mode, faults=None):
    args = ["mcp", "--seed", str(seed)] + (["--faults", faults] if faults else [])
    server = StdioServerParameters(command=os.environ["UMI_DST"], args=args)
    return asyncio.run(_session(server, mode, CALLS, 10))


@pytest.mark.parametrize("mode", MODES)
def test_over_stdio_a_spawned_server_answers_and_replays(mode):
    first = stdio_session(11, mode)
    assert first[0][:2] == ("version", "2025-11-25")
    assert first[1] == ("tools", ["get_weather", "search_docs", "send_payment"])
    assert first[2][2] is False and first[2][4]["sky"] in ("clear", "cloudy", "rain", "snow")
    assert first[5][2] is True and "amount_cents" in first[5][3][0]
    assert stdio_session(11, mode) == first, "a process started again with the same seed"
    assert stdio_session(12, mode) != first, "another seed, other results"


def test_over_stdio_a_cut_stream_is_a_server_that_dies():
    """`tool.mcp_stream_cut` on stdio: the server dies mid-message; the session fails with
    the SDK's own error (never a hang), and the same seed dies at the same message."""
    def died():
        try:
            stdio_session(3, "legacy", faults="tool.mcp_stream_cut=1.0")
        except BaseException as error:  # noqa: B036
            return [type(leaf).__name__ for leaf in leaves(error)]
        raise AssertionError("the session outlived a server that died")
    assert died() == died()


# The transport as the specification says, with raw httpx where the SDK cannot send the
# shape (it sends no batches).

POST_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
BATCH = [
    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
]


def messages(response):
    """The JSON-RPC messages of an answer: its JSON (an array's elements each), or each
    SSE event's data, as the seed's server answers."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        found = [json.loads(line[5:]) for line in response.text.splitlines()
                 if line.startswith("data:") and line[5:].strip()]
    else:
        found = [response.json()]
    return [message for item in found for message in (item if isinstance(item, list) else [item])]


def raw_session(url, version):
    """A session that negotiated `version`, begun by hand: its id."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "httpx", "version": "1"}}}
    answered = httpx.post(url, json=init, headers=POST_HEADERS)
    assert answered.status_code == 200, answered.text
    assert messages(answered)[0]["result"]["protocolVersion"] == version
    return answered.headers["mcp-session-id"]


@pytest.mark.umi(seeds=4)
def test_a_2025_03_26_session_sends_a_batch_and_gets_each_response_in_order(umi):
    session = raw_session(umi.mcp_url, "2025-03-26")
    headers = {**POST_HEADERS, "mcp-session-id": session}
    answered = httpx.post(umi.mcp_url, json=BATCH, headers=headers)
    assert answered.status_code == 200, answered.text
    found = messages(answered)
    assert [message["id"] for message in found] == [1, "two", 3], found
    assert found[0]["result"] == {}
    assert [tool["name"] for tool in found[1]["result"]["tools"]] == ["get_weather", "search_docs", "send_payment"]
    assert -40 <= found[2]["result"]["structuredContent"]["celsius"] <= 45
    notes = httpx.post(umi.mcp_url, json=BATCH[1:2], headers=headers)
    assert (notes.status_code, notes.text) == (202, "")


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_where_batches_were_removed_a_batch_is_an_invalid_request(umi, version):
    session = raw_session(umi.mcp_url, version)
    refused = httpx.post(umi.mcp_url, json=BATCH, headers={**POST_HEADERS, "mcp-session-id": session})
    assert refused.status_code == 400
    body = refused.json()
    assert (body["id"], body["error"]["code"]) == (None, -32600), body
    assert f"not part of MCP {version}" in body["error"]["message"]


def test_json_that_is_not_json_rpc_is_an_invalid_request(umi):
    for text in ['{"id": 1, "method": "ping"}', "[]", "42", '{"jsonrpc": "2.0", "id": 1}']:
        refused = httpx.post(umi.mcp_url, content=text, headers=POST_HEADERS)
        assert (refused.status_code, refused.json()["error"]["code"]) == (400, -32600), text
    garbage = httpx.post(umi.mcp_url, content="{not json", headers=POST_HEADERS)
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (400, -32700)


# 0.005: the stall (600 simulated seconds) ends 3 s after the request; the head must come
# well before.
@pytest.mark.umi(seeds=10, faults="tool.mcp_no_response=1.0", time_scale=0.005)
def test_a_stalled_answer_sends_the_status_line_the_trace_records(umi):
    """An SSE server's stall is a 200 whose events never come; a JSON server's is no
    status at all. Either way the client sees what the trace says, when it happened (a
    200 once came only after the stall was over)."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    try:
        with httpx.stream("POST", umi.mcp_url, json=init, headers=POST_HEADERS,
                          timeout=httpx.Timeout(10, read=1.5)) as response:
            seen = response.status_code
    except httpx.TimeoutException:
        seen = None
    [entry] = umi.trace()
    assert seen == entry["status"], f"the client saw {seen}, the trace says {entry['status']}"


async def _tools_from(url, origin):
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"origin": origin}))
    async with Client(transport, mode="legacy", read_timeout_seconds=10) as client:
        return [tool.name for tool in (await client.list_tools()).tools]


def test_an_origin_that_is_not_local_is_refused_with_403(umi):
    for local in ["http://localhost:5173", "http://127.0.0.1:8000"]:
        assert asyncio.run(_tools_from(umi.mcp_url, local))[0] == "get_weather", local
    try:
        asyncio.run(_tools_from(umi.mcp_url, "https://evil.example"))
        raise AssertionError("a foreign origin was served")
    except BaseException as error:  # noqa: B036 - exception groups
        found = list(leaves(error))
    assert any(isinstance(leaf, MCPError) and "Invalid Origin header" in str(leaf) for leaf in found), found
    refused = httpx.post(umi.mcp_url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}},
                         headers={**POST_HEADERS, "origin": "https://evil.example"})
    assert (refused.status_code, refused.json()["id"]) == (403, None)


@pytest.mark.umi(args=["--allow-origin", "https://app.example"])
def test_allow_origin_lets_a_named_origin_in(umi):
    assert asyncio.run(_tools_from(umi.mcp_url, "https://app.example"))[0] == "get_weather"
