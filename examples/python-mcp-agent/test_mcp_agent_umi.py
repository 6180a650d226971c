"""The MCP agent under the umi pytest plugin: its model and its tools both from `dst
serve`, under model faults and MCP's own, one test per seed. Whatever happens, the agent
answers or fails cleanly; no payment is made twice for one call of the model's, nor
for a call the model never made: `umi.check_effects()` judges the whole run (the server
keeps the scope's tools' world across its requests, and logs each tool call with the call
id the agent sent in `_meta`); it never acts on a cut model response (an MCP call whose
answer was cut is the "maybe applied" question, which the agent hands to the model: not a
cut model stream), and every tool call the model made is told exactly one result.
"""

import asyncio

import openai
import pytest

from mcp_agent import AgentError, ask

FAULTS = {"llm.rate_limit": 0.1, "tool.mcp_stream_cut": 0.15, "tool.mcp_internal_error": 0.1, "tool.timeout": 0.1}


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
    umi.check_effects()
