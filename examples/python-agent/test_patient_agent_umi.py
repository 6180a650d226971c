"""The patient agent on Umi's clock (docs/guide.md, "The agent's clock"): the umi
plugin runs each test on the run's simulated clock (the default; `clock=True` keeps these
on it under `--umi-clock=off` too), so the agent's Retry-After waits, its
own jittered backoff and its 10-second deadline take no real time, and a seed replays
them exactly. Assertions are on the simulated clock (`umi.clock`); wall time is printed.
"""

import asyncio

import openai
import pytest

from patient_agent import DEADLINE_S, AgentError, ask

QUESTION = "Is it raining in Bergen?"


def _client(umi):
    return openai.AsyncOpenAI(base_url=umi.openai_base_url, api_key="unused", max_retries=0)


async def _ask(umi, waits=None):
    async with _client(umi) as client:
        return await ask(client, "umi-sim", QUESTION, waits)


# The first two model calls are refused with 429s: the agent waits what each asks (or
# its own backoff when one asks nothing), then answers. Simulated minutes, real
# milliseconds.
@pytest.mark.umi(seed=3, faults={"llm.rate_limit@llm.call#1": 1.0, "llm.rate_limit@llm.call#2": 1.0}, clock=True)
def test_the_agent_waits_out_rate_limits_on_the_clock(umi):
    waits = []
    answer = asyncio.run(_ask(umi, waits))
    assert answer
    assert len(waits) == 2
    # What the clock moved for while the agent slept is exactly what it chose to wait.
    assert umi.clock.sleeps_us() == [round(wait * 1_000_000) for wait in waits]
    print(f"waited {waits} s of simulated time; the run took {umi.clock.elapsed_us / 1e6:.3f} simulated s")


# The body stalls after the first bytes: the agent gives up at its deadline, exactly.
@pytest.mark.umi(seed=1, faults={"network.timeout@network.body": 1.0}, clock=True)
def test_the_agent_gives_up_at_its_deadline(umi):
    with pytest.raises(AgentError, match="no answer within 10 s"):
        asyncio.run(_ask(umi))
    assert umi.clock.elapsed_us == DEADLINE_S * 1_000_000


# Any seed, any of these faults: an answer or the agent's own error, and the same run
# (answer, waits, simulated time) when the seed runs again in a fresh scope.
@pytest.mark.umi(seeds=10, faults={"llm.rate_limit": 0.4, "network.timeout@network.body": 0.1}, clock=True)
def test_the_agent_is_the_same_on_every_run_of_a_seed(umi):
    def run(this):
        waits = []
        try:
            outcome = asyncio.run(_ask(this, waits))
        except AgentError as error:
            outcome = f"AgentError: {error}"
        return outcome, waits, umi.clock.elapsed_us

    first = run(umi)
    umi.clock.restart()
    assert run(umi.new_scope()) == first
