"""pydantic-ai's own OpenTelemetry spans in a `dst serve` run, with the real SDKs.

The agent is instrumented as pydantic-ai's docs say (its `Instrumentation` capability,
`Agent(..., capabilities=[Instrumentation(settings=InstrumentationSettings(
tracer_provider=...))])`), with the OpenTelemetry SDK's
`TracerProvider` exporting OTLP/HTTP protobuf through
`opentelemetry-exporter-otlp-proto-http` to the run's scope (`umi.tracer_provider()`,
`umi.otlp_traces_url`). Its first model call is refused with a 429
(`llm.rate_limit@llm.call#1=1`), which the openai SDK retries.

* the agent's spans (the agent run, its `chat umi-sim` calls, its tool) are in
  `umi.trace().agent_spans`, in the scope of the run and no other;
* `umi.otlp_trace()` (`GET /umi/trace?scope=S&format=otlp`), parsed with the official
  `opentelemetry-proto` package (`google.protobuf.json_format` into
  `ExportTraceServiceRequest`), holds the served requests as GenAI spans (`chat umi-sim`,
  `gen_ai.operation.name`, `gen_ai.request.model`, token counts, the 429's `error.type`
  (`error.type = rate_limit`) and its `umi.fault` event) under `service.name = umi.dst-serve` with `umi.seed` and
  `umi.scope`, and the agent's own spans under its own resource, in one document;
* a page of the run (`dst trace-html --agent-spans`, what the plugin writes on a
  failure) draws the agent's spans beside the requests.
"""

import asyncio
import json
import os

import pytest
from google.protobuf import json_format
from openai import AsyncOpenAI
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from umi_dst import report as umi_report

MODEL = "umi-sim"
QUESTION = "What is the weather in Oslo?"
FIRST_CALL_REFUSED = "llm.rate_limit@llm.call#1=1"


def get_weather(city: str) -> str:
    """The forecast for a city."""
    return f"12 C and light rain in {city}"


def run_instrumented(umi):
    """One instrumented agent run on `umi`'s scope; its output."""
    provider = umi.tracer_provider(service_name="weather-agent")

    async def go():
        client = AsyncOpenAI(base_url=umi.openai_base_url, api_key="sk-unused", max_retries=3)
        try:
            model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
            instrumented = Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))
            agent = Agent(model, tools=[get_weather], capabilities=[instrumented])
            result = await agent.run(QUESTION)
            return result.output
        finally:
            await client.close()

    try:
        return asyncio.run(go())
    finally:
        provider.shutdown()


def attributes(span_or_resource):
    """An OTLP message's attributes as a dict of plain values."""
    out = {}
    for pair in span_or_resource.attributes:
        kind = pair.value.WhichOneof("value")
        out[pair.key] = getattr(pair.value, kind) if kind else None
    return out


@pytest.mark.umi(seed=7, faults=FIRST_CALL_REFUSED)
def test_the_agents_spans_are_in_the_run_beside_the_served_requests(umi, tmp_path):
    output = run_instrumented(umi)
    assert isinstance(output, str) and output

    trace = umi.trace()
    names = trace.agent_span_names()
    print("agent spans:", names)
    assert trace.summary["agent_spans"] == len(trace.agent_spans) > 0
    chats = [span for span in trace.agent_spans if span["name"] == f"chat {MODEL}"]
    assert chats, names
    assert all(span["kind"] == "client" for span in chats)
    assert chats[0]["attributes"]["gen_ai.request.model"] == MODEL
    assert any("get_weather" in name for name in names), names
    assert all(span["resource"]["service.name"] == "weather-agent" for span in trace.agent_spans)
    assert all(span["resource"]["umi.scope"] == umi.scope for span in trace.agent_spans)
    # Filed under this run's scope only.
    assert umi.server.spans("some-other-scope")["spans"] == []

    document = umi.otlp_trace()
    request = json_format.ParseDict(document, ExportTraceServiceRequest())
    served, agent = [], []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource)
        spans = [span for scope_spans in resource_spans.scope_spans for span in scope_spans.spans]
        if resource.get("service.name") == "umi.dst-serve":
            assert resource["umi.scope"] == umi.scope
            assert str(resource["umi.seed"]) == str(umi.seed)
            served += spans
        else:
            assert resource.get("service.name") == "weather-agent"
            agent += spans
    assert len(agent) == len(trace.agent_spans)
    assert {span.name for span in agent} == set(names)
    model_calls = [span for span in served if span.name == f"chat {MODEL}"]
    assert len(model_calls) == sum(1 for entry in trace if entry["path"].endswith("/chat/completions"))
    for span in model_calls:
        assert span.kind == Span.SPAN_KIND_CLIENT
        said = attributes(span)
        assert said["gen_ai.operation.name"] == "chat"
        assert said["gen_ai.request.model"] == MODEL
    refused = [span for span in model_calls if attributes(span).get("http.response.status_code") == 429]
    assert len(refused) == 1, [attributes(span) for span in model_calls]
    assert attributes(refused[0]).get("error.type") == "rate_limit"
    assert refused[0].status.code == refused[0].status.STATUS_CODE_ERROR
    faults = [event for event in refused[0].events if event.name == "umi.fault"]
    assert [attributes(event)["umi.fault.kind"] for event in faults] == ["llm.rate_limit"]
    answered = [span for span in model_calls if attributes(span).get("http.response.status_code") == 200]
    assert answered and all(attributes(span)["gen_ai.usage.input_tokens"] > 0 for span in answered)

    # The picture of the run: the agent's spans beside the requests.
    page = umi_report.write_picture(umi.server.dst, trace, str(tmp_path), "run", "otel run")
    html = open(page, encoding="utf-8").read()
    assert html.count('data-source="agent"') == len(trace.agent_spans)
    assert html.count('data-source="request"') == len(trace)
    assert os.path.exists(os.path.join(str(tmp_path), "run.spans.json"))
    print("page:", page, json.dumps(trace.summary))


@pytest.mark.umi(seed=7, faults=FIRST_CALL_REFUSED)
def test_the_same_seed_exports_the_same_served_spans(umi):
    run_instrumented(umi)
    first = umi.otlp_trace()
    again = umi.new_scope()
    # On the agent's clock (the default) a served span starts at the clock of its request:
    # the second run starts the clock from 0 again, as the first did.
    if umi.clock is not None:
        umi.clock.restart()
    run_instrumented(again)
    second = again.otlp_trace()

    def served(document):
        for resource_spans in document["resourceSpans"]:
            keys = {pair["key"]: pair["value"] for pair in resource_spans["resource"]["attributes"]}
            if keys["service.name"] == {"stringValue": "umi.dst-serve"}:
                return [span for scope in resource_spans["scopeSpans"] for span in scope["spans"]]
        return None

    strip = lambda spans: [{k: v for k, v in span.items() if k not in ("traceId", "spanId", "parentSpanId")}
                           for span in spans]
    assert strip(served(first)) == strip(served(second))
