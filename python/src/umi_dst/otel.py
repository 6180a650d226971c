"""The agent's own OpenTelemetry spans, sent to the run's `dst serve` scope.

`dst serve` accepts OTLP/HTTP traces at `/v1/traces` (protobuf or JSON, gzip or not) and
files them under the request's scope, so a test's `umi.trace().agent_spans`, its failure
picture (`dst trace-html`) and `GET /umi/trace?scope=S&format=otlp` show the agent's spans
(an OpenAI Agents SDK or pydantic-ai run, instrumented as their docs say) beside the
simulated model, tools and faults.

`tracer_provider(umi)` builds the OpenTelemetry SDK's own `TracerProvider` exporting there
through `opentelemetry-exporter-otlp-proto-http`'s `OTLPSpanExporter` with a
`SimpleSpanProcessor`: each span is sent when it ends, in the order it ended, so nothing
is lost when the test ends and the run's spans come in the same order on every run. Its
resource says `service.name`, `umi.scope` and `umi.seed`. The SDK and the exporter are
optional dependencies of the plugin: without them, `tracer_provider` raises an
`ImportError` that names the packages to install.
"""

#: The packages `tracer_provider` needs (pip names).
OTEL_PACKAGES = ("opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http")

#: Seconds one export may take before the exporter gives up (the SDK's own default is 10).
EXPORT_TIMEOUT_S = 10.0


def tracer_provider(umi, service_name="agent-under-test", resource_attributes=None, compression=None):
    """An OpenTelemetry SDK `TracerProvider` that sends every span to `umi`'s scope.

    Hand it to the framework as its docs say (pydantic-ai:
    `Agent(..., instrument=InstrumentationSettings(tracer_provider=provider))`, or
    `opentelemetry.trace.set_tracer_provider(provider)` for everything that reads the
    global one). `compression`: `"gzip"` to send gzipped bodies (the exporter's own option).
    Call `provider.shutdown()` when done if the provider outlives the test.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    except ImportError as error:
        raise ImportError(
            f"umi.tracer_provider() needs the OpenTelemetry SDK and its OTLP/HTTP exporter: "
            f"pip install {' '.join(OTEL_PACKAGES)} ({error})") from error
    attributes = {"service.name": service_name, "umi.scope": umi.scope, "umi.seed": str(umi.seed)}
    attributes.update(resource_attributes or {})
    exporter = OTLPSpanExporter(
        endpoint=umi.otlp_traces_url,
        timeout=EXPORT_TIMEOUT_S,
        compression=Compression(compression) if compression else Compression.NoCompression,
    )
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider
