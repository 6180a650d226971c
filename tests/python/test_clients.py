"""Real clients in another language against `dst serve`: the `openai` (chat and
Responses), `anthropic` and `ollama` packages, each parsing what the simulator sends,
typing its failures with their own exceptions, and honouring its Retry-After with their
own retries. Every server runs at --time-scale 0, so nothing here waits.

A failing test prints its server's flags and the seed; `dst serve` with those flags
returns the same bytes for the same request.
"""

import concurrent.futures
import json

import anthropic
import httpx
import ollama
import openai
import pytest

MODEL = "umi-sim"
ENDPOINTS = ("--endpoint", "openai", "--endpoint", "ollama", "--endpoint", "anthropic",
             "--endpoint", "openai_responses@/r")
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def chat_client(server, seed=None, retries=0):
    headers = {"x-umi-seed": str(seed)} if seed is not None else None
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-unused", max_retries=retries,
                         default_headers=headers)


def ask(client, text, **extra):
    return client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}], **extra)


def test_plain_and_streamed_text_parse_and_replay(serve):
    first = serve("--seed", "21", *ENDPOINTS)
    again = serve("--seed", "21", "--concurrency-max", "63", *ENDPOINTS)
    whole = ask(chat_client(first), "What changed this week?")
    assert whole.choices[0].finish_reason == "stop"
    assert whole.choices[0].message.content
    # The same request to a server started alike: the same answer.
    assert ask(chat_client(again), "What changed this week?").choices[0].message.content == whole.choices[0].message.content
    chunks = list(ask(chat_client(first), "What changed this week?", stream=True,
                      stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert text and finishes == ["stop"]
    assert any(c.usage for c in chunks), "usage came when asked"


def test_per_request_seeds_pick_the_answer(serve):
    server = serve("--seed", "21", *ENDPOINTS)
    answers = {seed: ask(chat_client(server, seed), "Plan the week.").choices[0].message.content
               for seed in (1, 2, 3, 1)}
    assert len(set(answers.values())) > 1, "different seeds, different answers"
    # A /seed/{n} path prefix is the same as the header (on a fresh server: a request
    # seen before in a session is its next occurrence, with an answer of its own).
    fresh = serve("--seed", "21", "--concurrency-max", "61", *ENDPOINTS)
    by_path = openai.OpenAI(base_url=f"{fresh.url}/seed/3/v1", api_key="x", max_retries=0)
    assert ask(by_path, "Plan the week.").choices[0].message.content == answers[3]


def test_parallel_tool_calls_and_a_tool_loop(serve):
    server = serve("--seed", "22", *ENDPOINTS)
    client = chat_client(server)
    messages = [{"role": "user", "content": "What is the weather in Oslo and in Rome?"}]
    called = 0
    for _turn in range(4):
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER])
        message = response.choices[0].message
        if not message.tool_calls:
            assert response.choices[0].finish_reason == "stop"
            break
        assert response.choices[0].finish_reason == "tool_calls"
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            assert call.function.name == "get_weather"
            json.loads(call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "12 C"})
            called += 1
    assert called >= 1
    # Streamed: the SDK's accumulator assembles the calls.
    with client.chat.completions.stream(model=MODEL, messages=messages[:1], tools=[WEATHER]) as stream:
        final = stream.get_final_completion()
    for call in final.choices[0].message.tool_calls or []:
        json.loads(call.function.arguments)


def test_a_429_is_retried_by_the_client_after_its_retry_after(serve):
    server = serve("--seed", "23", "--faults", "llm.rate_limit=1.0", *ENDPOINTS)
    before = len(server.trace()[0])
    with pytest.raises(openai.RateLimitError) as raised:
        ask(chat_client(server, retries=2), "hello")
    assert raised.value.status_code == 429
    assert len(server.trace()[0]) - before == 3, "the first attempt and two retries reached the server"


def test_5xx_and_context_overflow_are_the_clients_own_exceptions(serve):
    unavailable = serve("--seed", "24", "--faults", "llm.service_unavailable=1.0", *ENDPOINTS)
    with pytest.raises(openai.InternalServerError):
        ask(chat_client(unavailable), "hello")
    overflow = serve("--seed", "24", "--faults", "llm.context_overflow=1.0", *ENDPOINTS)
    with pytest.raises(openai.BadRequestError) as raised:
        ask(chat_client(overflow), "hello")
    assert raised.value.code == "context_length_exceeded"


def test_a_stream_cut_mid_tool_call_is_an_error_or_an_unfinished_stream(serve):
    server = serve("--seed", "25", "--faults", "llm.stream_cut=1.0", *ENDPOINTS)
    outcomes = set()
    for seed in range(12):
        try:
            chunks = list(ask(chat_client(server, seed), "Weather in Oslo?", tools=[WEATHER], stream=True))
            finished = any(c.choices and c.choices[0].finish_reason for c in chunks)
            outcomes.add("finished" if finished else "cut")
        except (openai.APIError, httpx.HTTPError) as error:
            outcomes.add(type(error).__name__)
    assert "finished" not in outcomes, f"a cut stream looked whole: {outcomes}"


def test_the_ollama_package(serve):
    server = serve("--seed", "26", *ENDPOINTS)
    client = ollama.Client(host=server.url)
    assert [m.model for m in client.list().models] == [MODEL]
    whole = client.chat(model=MODEL, messages=[{"role": "user", "content": "hello"}])
    assert whole.message.content and whole.done
    parts = list(client.chat(model=MODEL, messages=[{"role": "user", "content": "hello"}], stream=True))
    assert parts[-1].done and "".join(p.message.content for p in parts)
    tools = client.chat(model=MODEL, messages=[{"role": "user", "content": "Weather in Oslo?"}], tools=[WEATHER])
    for call in tools.message.tool_calls or []:
        assert isinstance(call.function.arguments, dict)
    # Any model name is answered unless the server names its models.
    named = ollama.Client(host=serve("--seed", "26", "--model", MODEL, *ENDPOINTS).url)
    with pytest.raises(ollama.ResponseError) as raised:
        named.chat(model="gpt-x", messages=[{"role": "user", "content": "hello"}])
    assert raised.value.status_code == 404


def test_the_anthropic_package(serve):
    server = serve("--seed", "27", *ENDPOINTS)
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-unused", max_retries=0)
    message = client.messages.create(model=MODEL, max_tokens=512, messages=[{"role": "user", "content": "hello"}])
    assert message.stop_reason == "end_turn" and message.content[0].text
    with client.messages.stream(model=MODEL, max_tokens=512,
                                messages=[{"role": "user", "content": "Weather in Oslo?"}],
                                tools=[{"name": "get_weather", "description": "Weather.",
                                        "input_schema": WEATHER["function"]["parameters"]}]) as stream:
        final = stream.get_final_message()
    assert final.stop_reason in ("end_turn", "tool_use")
    for block in final.content:
        if block.type == "tool_use":
            assert isinstance(block.input, dict)
    overloaded = serve("--seed", "27", "--faults", "llm.service_unavailable=1.0", *ENDPOINTS)
    with pytest.raises(anthropic.APIStatusError) as raised:
        anthropic.Anthropic(base_url=overloaded.url, api_key="x", max_retries=0).messages.create(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hello"}])
    assert raised.value.status_code == 529


def test_the_openai_responses_api(serve):
    server = serve("--seed", "28", *ENDPOINTS)
    client = openai.OpenAI(base_url=f"{server.url}/r/v1", api_key="x", max_retries=0)
    response = client.responses.create(model=MODEL, input="What changed this week?")
    assert response.status == "completed" and response.output_text
    with client.responses.stream(model=MODEL, input="Weather in Oslo?",
                                 tools=[{"type": "function", "name": "get_weather", "description": "Weather.",
                                         "parameters": WEATHER["function"]["parameters"], "strict": False}]) as stream:
        final = stream.get_final_response()
    assert final.status == "completed"


def test_concurrent_requests_get_what_they_get_alone(serve):
    seeds = list(range(100, 116))

    def one(server, seed):
        return ask(chat_client(server, seed), f"request {seed}").choices[0].message.content

    alone_server = serve("--seed", "29", *ENDPOINTS)
    alone = [one(alone_server, seed) for seed in seeds]
    # A second server started alike, sent the same requests eight at a time, backwards.
    busy = serve("--seed", "29", "--concurrency-max", "62", *ENDPOINTS)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda seed: one(busy, seed), reversed(seeds)))
    assert list(reversed(together)) == alone
