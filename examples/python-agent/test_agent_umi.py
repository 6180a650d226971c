"""The same agent under the umi pytest plugin (`pip install umi-dst`): no server code,
one test per seed, and a failure prints its seed, the faults that fired and the command
that reruns it. python/README.md shows this test.
"""

import openai
import pytest

from agent import AgentError, ask


@pytest.mark.umi(seeds=20, faults={"llm.rate_limit": 0.2, "llm.stream_cut": 0.2, "llm.invalid_response": 0.1})
def test_the_agent_answers_or_fails_cleanly(umi):
    client = openai.OpenAI(base_url=umi.openai_base_url, api_key="unused", max_retries=1)
    try:
        answer = ask(client, "umi-sim", "What is the weather in Oslo?")
    except AgentError:
        umi.check_cut_streams(answered=False)  # an error is a fine end under faults...
        umi.check_tool_results()
        return
    assert answer.strip()
    umi.check_cut_streams(answer=answer)  # ...but not an answer (or a tool run) from a cut stream
    umi.check_tool_results()  # and every tool call the model made got exactly one result
