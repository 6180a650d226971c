"""The MCP agent under the umi pytest plugin: its model and its tools both from `dst
serve`, under model faults and MCP's own, one test per seed. Whatever happens, the agent
answers or fails cleanly, and no payment is made twice for one call of the model's (the
server's trace has every tool run, by the call id the agent sent in `_meta`); it never
acts on a cut model response (an MCP call whose answer was cut is the "maybe applied"
question, which the agent hands to the model: not a cut model stream), and every tool
call the model made is told exactly one result.
"""

import asyncio
import collections

import openai
import pytest

from mcp_agent import AgentError, ask

FAULTS = {"llm.rate_limit": 0.1, "tool.mcp_stream_cut": 0.15, "tool.mcp_internal_error": 0.1, "tool.timeout": 0.1}


def payments(umi):
    """How many times each call id paid, from the trace's `tool.call` events."""
    paid = collections.Counter()
    for entry in umi.trace():
        for event in entry.get("events", []):
            detail = event["detail"]
            if event["kind"] == "tool.call" and detail.startswith("send_payment ") and "ran=true" in detail:
                paid[detail.split()[1]] += 1
    return paid


async def answer(umi, question):
    client = openai.AsyncOpenAI(base_url=umi.openai_base_url, api_key="unused", max_retries=1)
    try:
        return await ask(client, umi.mcp_url, "umi-sim", question)
    finally:
        await client.close()


@pytest.mark.umi(seeds=12, faults=FAULTS)
def test_the_agent_answers_or_fails_cleanly_and_never_pays_twice(umi):
    question = "Pay invoice INV-7 (1200 cents) and tell me the weather in Oslo."
    try:
        text = asyncio.run(answer(umi, question))
        assert text.strip()
        umi.check_cut_streams(answer=text)
    except AgentError:
        umi.check_cut_streams(answered=False)  # a clean failure is a fine end under faults
    umi.check_tool_results()
    twice = {call: n for call, n in payments(umi).items() if n > 1}
    assert not twice, f"paid more than once for one call: {twice}"
