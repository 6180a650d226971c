"""pydantic-ai (`pydantic-ai-slim[openai,anthropic]`) against `dst serve`, through the umi plugin.

Its models are pointed at the server the way its docs point them at any compatible
endpoint: `OpenAIChatModel` / `OpenAIResponsesModel` with
`OpenAIProvider(base_url=umi.openai_base_url)`, and `AnthropicModel` with
`AnthropicProvider(base_url=umi.anthropic_base_url)`.

* a tool-calling agent loop completes (chat, Responses, Anthropic);
* the same seed replays on a used server (fresh scope) and on a fresh server;
* `Agent.run` and `Agent.run_stream_events` (streamed requests) give the same tool calls and
  output; `Agent.run_stream` the same run up to where it stops by its documented rule
  (the first response with text); no faults;
* structured output (`output_type=` a pydantic model, in pydantic-ai's default tool mode
  and as `NativeOutput`, the JSON schema response format) is valid on 20 seeds;
* under rate limits, 503s and cut streams every run ends in an answer or pydantic-ai's
  own `AgentRunError`, and `check_cut_streams` judges the evidence: an output that is a
  cut stream's text, a tool run with a cut call's arguments (the tool reports its calls),
  or a later request built from a cut response is an Umi finding, reported as an xfail
  (pydantic-ai's bug, not this suite's) with the cut requests;
* with every stream cut, an answer is always such a finding (whatever the seed draws).
"""

import asyncio

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent, AgentRunResultEvent, NativeOutput
from pydantic_ai.exceptions import AgentRunError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from umi_dst import ActedOnCut, Server, TruncatedAnswer

MODEL = "umi-sim"
KINDS = ["chat", "responses", "anthropic"]
FAULTS = "llm.rate_limit=0.1,llm.service_unavailable=0.1,llm.stream_cut=0.3"
QUESTION = "What is the weather in Oslo?"


class Forecast(BaseModel):
    city: str
    summary: str


# The run whose tool calls get_weather reports (`umi.report_tool_call`).
REPORTING = {"umi": None}


def get_weather(city: str) -> str:
    """The forecast for a city."""
    if REPORTING["umi"] is not None:
        REPORTING["umi"].report_tool_call("get_weather", {"city": city})
    return f"12 C and light rain in {city}"


def outcome_of(output):
    """What check_cut_streams is told of a run that answered: its text when it is text."""
    return {"answer": output} if isinstance(output, str) and output.strip() else {"answered": True}


def model(umi, kind, retries):
    """The pydantic-ai model of `kind` on this run's seed and scope, and its SDK client
    (closed by the caller: each test's event loop is its own)."""
    if kind == "anthropic":
        client = AsyncAnthropic(base_url=umi.anthropic_base_url, api_key="sk-ant-unused", max_retries=retries)
        return AnthropicModel(MODEL, provider=AnthropicProvider(anthropic_client=client)), client
    client = AsyncOpenAI(base_url=umi.openai_base_url, api_key="sk-unused", max_retries=retries)
    cls = OpenAIChatModel if kind == "chat" else OpenAIResponsesModel
    return cls(MODEL, provider=OpenAIProvider(openai_client=client)), client


def summary(messages, output):
    """Every model response's text and tool calls, then the output: comparable across runs."""
    parts = []
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    parts.append(("call", part.tool_name, part.args_as_json_str()))
                elif isinstance(part, TextPart):
                    parts.append(("text", part.content))
    return parts, output


async def _run(umi, kind, how, retries, **agent_options):
    llm, client = model(umi, kind, retries)
    agent_options.setdefault("tools", [get_weather])
    agent = Agent(llm, instructions="Answer questions about the weather.", **agent_options)
    REPORTING["umi"] = umi
    try:
        if how == "run_stream":
            async with agent.run_stream(QUESTION) as stream:
                output = await stream.get_output()
            return summary(stream.all_messages(), output)
        if how == "run_stream_events":
            async with agent.run_stream_events(QUESTION) as events:
                async for event in events:
                    if isinstance(event, AgentRunResultEvent):
                        return summary(event.result.all_messages(), event.result.output)
            raise AssertionError("run_stream_events ended without its AgentRunResultEvent")
        result = await agent.run(QUESTION)
        return summary(result.all_messages(), result.output)
    finally:
        REPORTING["umi"] = None
        await client.close()


def run(umi, kind, how="run", retries=0, **agent_options):
    """One agent run: `run`, `run_stream` or `run_stream_events`; returns `summary`."""
    return asyncio.run(_run(umi, kind, how, retries, **agent_options))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.umi(seeds=3)
def test_a_tool_loop_completes(umi, kind):
    async def go():
        # The providers as pydantic-ai's docs show them: a base URL and a key.
        if kind == "anthropic":
            provider = AnthropicProvider(base_url=umi.anthropic_base_url, api_key="sk-ant-unused")
            llm = AnthropicModel(MODEL, provider=provider)
        else:
            provider = OpenAIProvider(base_url=umi.openai_base_url, api_key="sk-unused")
            llm = (OpenAIChatModel if kind == "chat" else OpenAIResponsesModel)(MODEL, provider=provider)
        async with provider:  # closes the HTTP client it made
            result = await Agent(llm, tools=[get_weather]).run(QUESTION)
        return summary(result.all_messages(), result.output)

    parts, output = asyncio.run(go())
    assert isinstance(output, str) and output.strip()
    assert all(name == "get_weather" for kind_, name, *_ in parts if kind_ == "call")
    assert umi.faults() == []
    expected = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages"}[kind]
    assert {entry["path"] for entry in umi.trace()} == {expected}


@pytest.mark.parametrize("kind", KINDS)
def test_a_seed_replays_on_a_used_and_a_fresh_server(umi, kind):
    first = run(umi, kind)
    assert run(umi.new_scope(), kind) == first
    with Server(umi.server.flags) as fresh:
        assert run(umi.new_scope(server=fresh), kind) == first


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.umi(seeds=3)
def test_run_and_its_streamed_forms_agree(umi, kind):
    whole_parts, whole_output = whole = run(umi, kind)
    # Streamed requests, the whole loop run: the same calls, texts and output.
    assert run(umi.new_scope(), kind, "run_stream_events") == whole
    # `run_stream` ends at the first response that has text (its documented rule: tool
    # calls beside that text are not run): the same run up to there.
    parts, output = run(umi.new_scope(), kind, "run_stream")
    assert parts == whole_parts[: len(parts)], (parts, whole_parts)
    texts = [part[1] for part in parts if part[0] == "text"]
    assert texts and output == texts[-1]
    if len(parts) == len(whole_parts):
        assert output == whole_output


# NativeOutput on Anthropic: pydantic-ai refuses it itself for a model name it does not
# know to support structured outputs (a UserError before any request).
@pytest.mark.parametrize(("kind", "how"), [("chat", "tool_output"), ("chat", "native_output"),
                                           ("anthropic", "tool_output")])
@pytest.mark.umi(seeds=20)
def test_structured_output_is_valid(umi, kind, how):
    output_type = Forecast if how == "tool_output" else NativeOutput(Forecast)
    _parts, output = run(umi, kind, output_type=output_type, tools=[])
    assert isinstance(output, Forecast), (type(output), output)
    assert Forecast.model_validate_json(output.model_dump_json()) == output
    assert umi.faults() == []


@pytest.mark.parametrize("how", ["run", "run_stream", "run_stream_events"])
@pytest.mark.parametrize("kind", ["chat", "anthropic"])
@pytest.mark.umi(seeds=6, faults=FAULTS)
def test_under_faults_an_answer_or_a_typed_error(umi, kind, how):
    try:
        _parts, output = run(umi, kind, how, retries=1)
        outcome = outcome_of(output)
    except AgentRunError:
        outcome = {"answered": False}
    try:
        umi.check_cut_streams(**outcome)
    except ActedOnCut as finding:
        assert finding.cut and all(entry["cut"] for entry in finding.cut) and finding.findings
        pytest.xfail(f"pydantic-ai ({kind}, {how}) acted on {len(finding.cut)} cut stream(s): {finding}")


@pytest.mark.parametrize("how", ["run_stream", "run_stream_events"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.umi(seeds=4, faults={"llm.stream_cut": 1.0})
def test_when_every_stream_is_cut_an_answer_is_a_finding(umi, kind, how):
    """Every stream cut: a run can only fail, or answer from a cut stream. Whatever the
    seed draws, an answer must be flagged by `check_cut_streams` (and is an xfail:
    pydantic-ai's finding); an error passes it unless a tool ran with a cut call's
    arguments first (also pydantic-ai's finding)."""
    try:
        _parts, output = run(umi, kind, how)
    except AgentRunError:
        assert umi.cut_responses(), "the run failed on a cut stream"
        try:
            umi.check_cut_streams(answered=False)
        except ActedOnCut as finding:
            pytest.xfail(f"pydantic-ai ({kind}, {how}) acted on a cut stream before failing: {finding}")
        return
    with pytest.raises(TruncatedAnswer) as finding:
        umi.check_cut_streams(**outcome_of(output))
    pytest.xfail(f"pydantic-ai ({kind}, {how}) answered from {len(finding.value.cut)} "
                 f"cut stream(s): {finding.value}")
