"""The same agent, traced with OpenTelemetry, its spans in the run beside what the server
served (docs/guide.md, "OpenTelemetry"; python/README.md).

`umi.tracer_provider()` is the OpenTelemetry SDK's own `TracerProvider`, exporting
OTLP/HTTP to this run's scope of `dst serve` (`umi.otlp_traces_url`). The test wraps one
run of `ask` in the span an agent framework would make (`invoke_agent`, GenAI semantic
conventions); a framework that instruments itself (pydantic-ai's `instrument=`, the
OpenAI Agents SDK's processors) is given the same provider instead.

To look at the run: `umi.otlp_trace()` is the scope as one OTLP JSON document (the
served requests as `chat umi-sim` spans with their `gen_ai.*` attributes and the 429 as an
`umi.fault` event, and the agent's own spans); this test writes it to
`.umi/otlp/NAME.json`, which any OTLP/HTTP receiver loads as is, e.g. Jaeger
(`docker run -p 16686:16686 -p 4318:4318 jaegertracing/all-in-one`, then
`curl -H 'content-type: application/json' --data @.umi/otlp/NAME.json
http://localhost:4318/v1/traces` and open http://localhost:16686). A failing test's
picture (`.umi/html/NAME.html`) draws the agent's spans beside the requests too.
"""

import json
import os

import openai
import pytest

from agent import ask


@pytest.mark.umi(seed=5, faults="llm.rate_limit@llm.call#1=1")
def test_the_agents_spans_sit_beside_the_served_requests(umi, request):
    pytest.importorskip("opentelemetry.sdk", reason="pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http")
    provider = umi.tracer_provider(service_name="weather-agent")
    tracer = provider.get_tracer("examples.python-agent")
    client = openai.OpenAI(base_url=umi.openai_base_url, api_key="unused", max_retries=2)
    with tracer.start_as_current_span("invoke_agent weather-agent") as span:
        span.set_attribute("gen_ai.operation.name", "invoke_agent")
        answer = ask(client, "umi-sim", "What is the weather in Oslo?")
    provider.shutdown()
    assert answer.strip()

    # The agent's span is in the run's trace, and only in this run's.
    trace = umi.trace()
    assert trace.agent_span_names() == ["invoke_agent weather-agent"]
    assert trace.agent_spans[0]["resource"]["umi.scope"] == umi.scope

    # The run as OpenTelemetry: the served requests and the agent's span in one document.
    document = umi.otlp_trace()
    services = {}
    for resource_spans in document["resourceSpans"]:
        attributes = {pair["key"]: pair["value"].get("stringValue") for pair in resource_spans["resource"]["attributes"]}
        services[attributes["service.name"]] = [span["name"] for scope in resource_spans["scopeSpans"]
                                                for span in scope["spans"]]
    assert services["weather-agent"] == ["invoke_agent weather-agent"]
    assert services["umi.dst-serve"].count("chat umi-sim") == len(trace)
    saved = os.path.join(str(request.config.rootpath), ".umi", "otlp", f"{umi.seed}-{umi.scope[:12]}.json")
    os.makedirs(os.path.dirname(saved), exist_ok=True)
    with open(saved, "w", encoding="utf-8") as out:
        json.dump(document, out)
    print(f"OTLP JSON of the run: {saved}")
