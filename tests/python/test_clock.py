"""Agents on Umi's clock, with the real SDKs (issue 43, item 1): a Retry-After of many
seconds, three times over, waited out on the simulated clock and the same on every run;
an agent's 10-second deadline firing on a stalled stream at exactly its time; and the
Retry-After `dst serve` sends with the clock (unscaled) and without it (scaled, as
before). Every assertion is on simulated time; wall times are printed, never asserted.
"""

import asyncio

import httpx2
import openai
import pytest

from umi_dst import Server
from umi_dst.clock import real_monotonic

MODEL = "umi-sim"
QUESTION = [{"role": "user", "content": "What should I pack for a week in Oslo?"}]
# The first three model calls of each run are refused with a 429 (the ordinal counts a
# scope); the fourth answers. Seed 4's three 429s all carry Retry-After (the OpenAI
# profile sends it or not, drawn per response), 30, 14 and 25 s (drawn from 0.5 to 30 s):
# openai-python waits exactly what each says.
RATE_LIMITED_THRICE = {"llm.rate_limit@llm.call#1": 1.0, "llm.rate_limit@llm.call#2": 1.0,
                       "llm.rate_limit@llm.call#3": 1.0}
RETRIES = 3


class Seen:
    """What the agent's HTTP client saw, from its response hook: per response, the clock
    when the head arrived, the status and the Retry-After."""

    def __init__(self, clock):
        self.clock = clock
        self.responses = []

    def record(self, response):
        self.responses.append((self.clock.elapsed_us, response.status_code, response.headers.get("retry-after")))

    async def arecord(self, response):
        self.record(response)


def _sync_agent(umi, seen):
    client = openai.OpenAI(base_url=umi.openai_base_url, api_key="x", max_retries=RETRIES,
                           http_client=openai.DefaultHttpxClient(event_hooks={"response": [seen.record]}))
    with client:
        return client.chat.completions.create(model=MODEL, messages=QUESTION).choices[0].message.content


def _async_agent(umi, seen):
    async def run():
        http_client = openai.DefaultAsyncHttpxClient(event_hooks={"response": [seen.arecord]})
        async with openai.AsyncOpenAI(base_url=umi.openai_base_url, api_key="x", max_retries=RETRIES,
                                      http_client=http_client) as client:
            answer = await client.chat.completions.create(model=MODEL, messages=QUESTION)
            return answer.choices[0].message.content

    return asyncio.run(run())


def _one_run(umi, run_agent, measured, label):
    seen = Seen(umi.clock)
    started = real_monotonic()
    answer = run_agent(umi, seen)
    wall_s = real_monotonic() - started
    measured(f"{label}: {umi.clock.elapsed_us / 1e6:.3f} simulated s in {wall_s:.3f} wall s")
    trace = umi.trace()
    return answer, seen.responses, trace, umi.clock.elapsed_us


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.umi(seed=4, faults=RATE_LIMITED_THRICE, clock=True)
def test_an_agent_waits_out_retry_after_three_times_on_the_clock(umi, flavour, measured):
    run_agent = _sync_agent if flavour == "sync" else _async_agent
    answer, responses, trace, elapsed_us = _one_run(umi, run_agent, measured, f"retry-after x3 ({flavour})")
    assert answer.strip()
    assert [status for _at, status, _after in responses] == [429, 429, 429, 200]
    waits_us = [int(after) * 1_000_000 for _at, status, after in responses if status == 429]
    assert len(waits_us) == 3 and all(1_000_000 <= wait <= 30_000_000 for wait in waits_us), responses
    # The server's log: when each request was sent on the agent's clock, and how long its
    # answer took in simulated time. Each retry goes out exactly Retry-After after the
    # 429's last byte, and the run ends with the answer's last byte.
    sent = [entry["clock_us"] for entry in trace]
    took = [entry["timing"]["last_us"] for entry in trace]
    assert sent[0] == 0
    for i, wait_us in enumerate(waits_us):
        assert sent[i + 1] == sent[i] + took[i] + wait_us, (i, trace[i])
    assert elapsed_us == sum(took) + sum(waits_us)
    assert umi.clock.sleeps_us() == waits_us  # what openai-python slept: the three Retry-Afters

    # Twice, identically: the same seed in a fresh scope, the clock from its start again.
    again = umi.new_scope()
    umi.clock.restart()
    answer2, responses2, trace2, elapsed2_us = _one_run(again, run_agent, measured,
                                                        f"retry-after x3 ({flavour}), again")
    assert (answer2, responses2, elapsed2_us) == (answer, responses, elapsed_us)
    assert [(e["request_hash"], e["status"], e["clock_us"], e["timing"]) for e in trace2] == \
        [(e["request_hash"], e["status"], e["clock_us"], e["timing"]) for e in trace]


# `network.timeout` at the body: the stream's head and first chunks come, then nothing.
@pytest.mark.umi(seed=1, faults={"network.timeout@network.body": 1.0}, clock=True)
def test_an_agents_deadline_fires_on_a_stalled_stream_at_exactly_its_time(umi, measured):
    deadline_s = 10

    async def agent():
        client = openai.AsyncOpenAI(base_url=umi.openai_base_url, api_key="x", max_retries=0)
        async with client:
            parts = []
            started_us = umi.clock.now_us
            try:
                async with asyncio.timeout(deadline_s):
                    stream = await client.chat.completions.create(model=MODEL, messages=QUESTION, stream=True)
                    async for chunk in stream:
                        parts.extend(choice.delta.content or "" for choice in chunk.choices)
            except TimeoutError:
                return "deadline", started_us, umi.clock.now_us, "".join(parts)
            return "answered", started_us, umi.clock.now_us, "".join(parts)

    wall = real_monotonic()
    how, started_us, ended_us, _text = asyncio.run(agent())
    measured(f"10 s deadline on a stalled stream: {(ended_us - started_us) / 1e6:.3f} simulated s in "
             f"{real_monotonic() - wall:.3f} wall s")
    [entry] = umi.trace()
    assert entry["end"] == "stall" and entry["timing"]["ending"] == "stall", entry
    assert entry["timing"]["head_us"] < deadline_s * 1_000_000
    assert how == "deadline"
    assert ended_us - started_us == deadline_s * 1_000_000


def _retry_after(url):
    """The Retry-After of a run's first answer (a 429: every model call is refused)."""
    with httpx2.Client() as client:
        response = client.post(f"{url}/chat/completions", json={"model": MODEL, "messages": QUESTION})
    assert response.status_code == 429, response.text
    return response.headers.get("retry-after")


RATE_LIMITED = {"llm.rate_limit": 1.0}


@pytest.mark.umi(seed=4, faults=RATE_LIMITED, clock=True)
def test_retry_after_at_time_scale_0_is_the_drawn_value_on_the_clock(umi):
    on_the_clock = _retry_after(umi.openai_base_url)
    [entry] = umi.trace()
    assert entry["clock_us"] == 0
    assert umi.clock.elapsed_us == entry["timing"]["last_us"]
    # The drawn value is what a server that plays simulated time in real time sends to a
    # client on the wall clock (this server's origin is not the clock's: no header).
    with Server(["--faults", "llm.rate_limit=1.0", "--time-scale", "1"]) as real_time:
        unscaled = _retry_after(f"{real_time.url}/seed/{umi.seed}/scope/wall-clock/v1")
    assert on_the_clock == unscaled == "30"


@pytest.mark.umi(seed=4, faults=RATE_LIMITED, clock=False)
def test_retry_after_at_time_scale_0_is_scaled_without_the_clock(umi):
    assert _retry_after(umi.openai_base_url) == "0"
    [entry] = umi.trace()
    assert "clock_us" not in entry
