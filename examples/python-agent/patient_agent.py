"""An async agent with its own patience, on the `openai` package alone: a refused model
call is retried after the server's Retry-After (or, when it gives none, after its own
exponential backoff with jitter), and an answer that has not finished streaming within
the agent's deadline is given up on. Nothing here knows about Umi: on the umi plugin's
simulated clock (test_patient_agent_umi.py) its waits and its deadline take no real
time and are the same on every run.
"""

import asyncio
import random

import openai

ATTEMPTS_MAX = 4
DEADLINE_S = 10.0
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 20.0
# A Retry-After longer than this is not waited for: the agent gives up instead.
RETRY_AFTER_MAX_S = 60.0


class AgentError(Exception):
    """The agent could not answer; the message says why."""


def backoff_s(attempt):
    """The wait before retry `attempt` (from 0) when the server names none: exponential,
    capped, with full jitter (`random`: the umi plugin seeds it per test)."""
    return random.uniform(0, min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2**attempt))


def retry_after_s(response):
    """The server's Retry-After in seconds (the delta-seconds form), or None."""
    value = response.headers.get("retry-after")
    if value is None or not value.strip().isdigit():
        return None
    return float(value)


async def ask(client: openai.AsyncOpenAI, model: str, question: str, waits=None) -> str:
    """The model's streamed answer to `question`. `waits`, when given, collects each wait
    the agent chose (seconds), for a test to compare with the clock."""
    messages = [{"role": "user", "content": question}]
    for attempt in range(ATTEMPTS_MAX):
        try:
            async with asyncio.timeout(DEADLINE_S):
                stream = await client.chat.completions.create(model=model, messages=messages, stream=True)
                parts = [choice.delta.content or "" async for chunk in stream for choice in chunk.choices]
        except TimeoutError:
            raise AgentError(f"no answer within {DEADLINE_S:.0f} s") from None
        except openai.RateLimitError as error:
            wait_s = retry_after_s(error.response)
            if wait_s is not None and wait_s > RETRY_AFTER_MAX_S:
                raise AgentError(f"rate limited for {wait_s:.0f} s") from error
            wait_s = backoff_s(attempt) if wait_s is None else wait_s
            if waits is not None:
                waits.append(wait_s)
            await asyncio.sleep(wait_s)
            continue
        except (openai.APIError, ValueError) as error:
            raise AgentError(f"the model API failed: {error}") from error
        text = "".join(parts).strip()
        if not text:
            raise AgentError("the model finished with an empty answer")
        return text
    raise AgentError(f"still rate limited after {ATTEMPTS_MAX} attempts")
