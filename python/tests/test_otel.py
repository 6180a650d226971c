"""The plugin's OpenTelemetry side: `umi.otlp_traces_url`, `umi.tracer_provider()`,
`Trace.agent_spans`, `Server.spans()` and `umi.otlp_trace()`, against a real `dst
serve` with the real OpenTelemetry SDK and its OTLP/HTTP exporter.

* spans sent through `tracer_provider()` (plain or gzipped) land in the run's scope and
  no other, with their parent links, attributes, events and status;
* an exporter pointed at the server's root files its spans under the resource's
  `umi.scope`;
* a run without spans has none (and the summary says 0); `Server.reset()` forgets them;
* `tracer_provider()` without the SDK raises an ImportError that names the packages;
* `otlp_trace()` parses as an `ExportTraceServiceRequest` with the official
  `opentelemetry-proto` package and holds both resources.
"""

import sys

import openai
import pytest

pytest.importorskip("opentelemetry.sdk")

from google.protobuf import json_format  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.trace import Status, StatusCode  # noqa: E402

from umi_dst import otel  # noqa: E402


def traced_work(provider):
    tracer = provider.get_tracer("tests.otel")
    with tracer.start_as_current_span("invoke_agent demo") as outer:
        outer.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("execute_tool lookup") as inner:
            inner.add_event("retry", {"attempt": 2})
            inner.set_status(Status(StatusCode.ERROR, "gave up"))
    provider.shutdown()


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_spans_land_in_the_runs_scope_with_their_links(umi, compression):
    traced_work(umi.tracer_provider(service_name="demo", compression=compression))
    trace = umi.trace()
    assert trace.agent_span_names() == ["execute_tool lookup", "invoke_agent demo"]
    inner, outer = trace.agent_spans
    assert inner["parent_span_id"] == outer["span_id"] and outer["parent_span_id"] is None
    assert inner["trace_id"] == outer["trace_id"]
    assert inner["events"][0]["name"] == "retry" and inner["events"][0]["attributes"] == {"attempt": 2}
    assert inner["status"] == {"code": "error", "message": "gave up"}
    assert outer["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert outer["resource"]["service.name"] == "demo"
    assert outer["resource"]["umi.scope"] == umi.scope and outer["resource"]["umi.seed"] == str(umi.seed)
    assert trace.summary["agent_spans"] == 2
    assert umi.new_scope().trace().agent_spans == []


def test_an_exporter_at_the_servers_root_files_spans_under_the_resources_scope(umi):
    provider = TracerProvider(resource=Resource.create({"service.name": "rooted", "umi.scope": umi.scope}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{umi.server.url}/v1/traces")))
    traced_work(provider)
    assert umi.trace().agent_span_names() == ["execute_tool lookup", "invoke_agent demo"]
    assert umi.server.spans(umi.scope)["scope"] == umi.scope


def test_a_run_without_spans_has_none_and_a_reset_forgets_them(umi_servers):
    from umi_dst import Umi
    server = umi_servers.get(("--seed", "41"))
    run = Umi(server, 41)
    client = openai.OpenAI(base_url=run.openai_base_url, api_key="unused", max_retries=0)
    client.chat.completions.create(model="umi-sim", messages=[{"role": "user", "content": "hi"}])
    trace = run.trace()
    assert trace.agent_spans == [] and trace.summary["agent_spans"] == 0 and len(trace) == 1
    traced_work(run.tracer_provider())
    assert len(run.trace().agent_spans) == 2
    server.reset()
    assert run.trace().agent_spans == [] and server.spans()["spans"] == []


def test_without_the_sdk_the_error_names_the_packages(umi, monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(ImportError) as raised:
        otel.tracer_provider(umi)
    assert "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http" in str(raised.value)


def test_the_run_as_otlp_holds_the_served_requests_and_the_agents_spans(umi):
    client = openai.OpenAI(base_url=umi.openai_base_url, api_key="unused", max_retries=0)
    client.chat.completions.create(model="umi-sim", messages=[{"role": "user", "content": "hi"}])
    traced_work(umi.tracer_provider(service_name="demo"))
    request = json_format.ParseDict(umi.otlp_trace(), ExportTraceServiceRequest())
    services = {}
    for resource_spans in request.resource_spans:
        name = next(kv.value.string_value for kv in resource_spans.resource.attributes if kv.key == "service.name")
        services[name] = [span.name for scope in resource_spans.scope_spans for span in scope.spans]
    assert services["umi.dst-serve"] == ["POST /v1/chat/completions", "chat umi-sim"]
    assert services["demo"] == ["execute_tool lookup", "invoke_agent demo"]
