"""Google's own Python SDK (`google-genai`) against `dst serve --endpoint gemini`: text
whole and streamed (SSE, `?alt=sse`), a function-calling round trip, structured output
with a response schema, token counting, a 429 typed as the SDK's `ClientError`, and the
promises of `dst serve` (the same answer streamed and whole, and on a fresh server, for
the same seed). Every server runs at --time-scale 0, so nothing here waits.
"""

import uuid

import pydantic
import pytest
from google import genai
from google.genai import errors, types

MODEL = "umi-sim"
ENDPOINTS = ("--endpoint", "gemini")


# The SDK closes its HTTP client when a `genai.Client` is collected: every client made
# here is kept for the session.
_CLIENTS = []


def client(server, seed=None, scope=None):
    headers = {}
    if seed is not None:
        headers["x-umi-seed"] = str(seed)
    # A fresh scope per call: the same question is occurrence 0 again, so two calls
    # (streamed and whole, or on two servers) meet the same draw.
    headers["x-umi-scope"] = scope or f"t-{uuid.uuid4().hex[:12]}"
    options = types.HttpOptions(
        base_url=server.url,
        headers=headers,
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    made = genai.Client(api_key="AIza-umi-test-key", http_options=options)
    _CLIENTS.append(made)
    return made


def test_text_whole_and_streamed_is_the_same_answer(serve):
    server = serve("--seed", "31", *ENDPOINTS)
    question = "What changed this week?"
    whole = client(server, scope="same-1").models.generate_content(model=MODEL, contents=question)
    assert whole.text
    assert whole.candidates[0].finish_reason == types.FinishReason.STOP
    assert whole.usage_metadata.prompt_token_count > 0
    chunks = list(client(server, scope="same-2").models.generate_content_stream(model=MODEL, contents=question))
    assert len(chunks) >= 1
    assert "".join(c.text or "" for c in chunks) == whole.text
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert chunks[-1].usage_metadata.total_token_count > 0


def test_the_same_seed_gives_the_same_answer_on_a_fresh_server(serve):
    first = serve("--seed", "32", *ENDPOINTS)
    again = serve("--seed", "32", "--concurrency-max", "63", *ENDPOINTS)
    ask = lambda server: client(server, scope="fresh").models.generate_content(model=MODEL, contents="Plan the week.")
    assert ask(first).text == ask(again).text
    # Another seed, another answer (for at least one of a few seeds).
    answers = {client(first, seed=s).models.generate_content(model=MODEL, contents="Plan the week.").text
               for s in (1, 2, 3)}
    assert len(answers) > 1


WEATHER = types.FunctionDeclaration(
    name="get_weather",
    description="Weather for a city.",
    parameters=types.Schema(
        type=types.Type.OBJECT,
        properties={"city": types.Schema(type=types.Type.STRING)},
        required=["city"],
    ),
)


def test_a_function_calling_round_trip(serve):
    server = serve("--seed", "33", *ENDPOINTS)
    gemini = client(server)
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[WEATHER])],
        tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode="ANY")),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents = [types.Content(role="user", parts=[types.Part.from_text(text="What is the weather in Oslo?")])]
    response = gemini.models.generate_content(model=MODEL, contents=contents, config=config)
    calls = response.function_calls
    assert calls, response
    assert all(call.name == "get_weather" and isinstance(call.args, dict) for call in calls)
    contents.append(response.candidates[0].content)
    contents.append(types.Content(role="user", parts=[
        types.Part.from_function_response(name=call.name, response={"result": "12 C"}) for call in calls
    ]))
    answer_config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[WEATHER])],
        tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode="NONE")),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    final = gemini.models.generate_content(model=MODEL, contents=contents, config=answer_config)
    assert final.text
    assert not final.function_calls


def test_an_unanswered_call_is_refused_in_googles_words(serve):
    server = serve("--seed", "33", *ENDPOINTS)
    contents = [
        types.Content(role="user", parts=[types.Part.from_text(text="Weather?")]),
        types.Content(role="model", parts=[types.Part.from_function_call(name="get_weather", args={"city": "Oslo"})]),
        types.Content(role="user", parts=[
            types.Part.from_function_response(name="get_weather", response={"result": "1"}),
            types.Part.from_function_response(name="get_weather", response={"result": "2"}),
        ]),
    ]
    with pytest.raises(errors.ClientError) as raised:
        client(server).models.generate_content(model=MODEL, contents=contents)
    assert raised.value.code == 400
    assert raised.value.status == "INVALID_ARGUMENT"
    assert "number of function response parts" in raised.value.message


class Forecast(pydantic.BaseModel):
    city: str
    celsius: int


def test_structured_output_follows_the_schema(serve):
    server = serve("--seed", "34", *ENDPOINTS)
    response = client(server).models.generate_content(
        model=MODEL,
        contents="The forecast for Rome, as JSON.",
        config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=Forecast),
    )
    assert isinstance(response.parsed, Forecast), response.text
    Forecast.model_validate_json(response.text)


def test_count_tokens(serve):
    server = serve("--seed", "35", *ENDPOINTS)
    counted = client(server).models.count_tokens(model=MODEL, contents="How many tokens is this sentence?")
    assert counted.total_tokens > 0


def test_a_429_is_the_sdks_client_error(serve):
    server = serve("--seed", "36", "--faults", "llm.rate_limit=1.0", *ENDPOINTS)
    with pytest.raises(errors.ClientError) as raised:
        client(server).models.generate_content(model=MODEL, contents="hello")
    assert raised.value.code == 429
    assert raised.value.status == "RESOURCE_EXHAUSTED"
    with pytest.raises(errors.ClientError) as streamed:
        list(client(server).models.generate_content_stream(model=MODEL, contents="hello"))
    assert streamed.value.code == 429


def test_the_model_list_and_an_unserved_model(serve):
    server = serve("--seed", "37", "--model", "gemini-sim", *ENDPOINTS)
    gemini = client(server)
    names = [model.name for model in gemini.models.list()]
    assert names == ["models/gemini-sim"]
    with pytest.raises(errors.ClientError) as raised:
        gemini.models.generate_content(model="gemini-other", contents="hi")
    assert raised.value.code == 404
    assert raised.value.status == "NOT_FOUND"
