"""One test run against `dst serve`: a seed, a fresh scope, and the URLs that carry both.

`dst serve` picks every answer from the seed a request names (`/seed/N/` in the path or
`x-umi-seed`), and counts repeated identical requests within a scope (`/scope/S/` or
`x-umi-scope`) so that a retry after a fault meets the next draw. The scope never feeds
an answer: the same test under a fresh scope gets the same answers, on a fresh server
or on one that has served a thousand tests. So every run gets a scope of its own, and
its trace (`GET /umi/trace?scope=S`) is exactly what that run asked and got.

`Umi.check_cut_streams` is what Umi finds in your framework: a run that acted on a
response the server cut (a reset, a stall, a fault mid-stream), judged from evidence
(`evidence.py`): a later request's history built from it, a tool run with its cut
arguments, or a final answer that is its partial text. `Umi.check_tool_results` checks
that every tool call the model made was told exactly one result.
"""

import hashlib
import json
import re
import uuid

from . import evidence

SEED_MAX = 2**64 - 1
SCOPE_CHARS = re.compile(r"^[A-Za-z0-9._~-]{1,128}$")


def derive_seed(node_id):
    """The default seed of a test: the first 8 bytes of sha256(node id), big-endian.

    Stable across runs, machines and Python versions (unlike `hash()`), and different
    for every test, so a suite explores as many seeds as it has tests."""
    return int.from_bytes(hashlib.sha256(node_id.encode("utf-8")).digest()[:8], "big")


def parse_seed(text, what):
    """A u64 from decimal or `0x` hex text; `ValueError` naming `what` otherwise."""
    if isinstance(text, bool):
        raise ValueError(f"{what}: {text!r} is not a seed (an integer from 0 to 2**64-1)")
    if isinstance(text, int):
        value = text
    else:
        raw = str(text).strip()
        try:
            value = int(raw, 16) if raw.lower().startswith("0x") else int(raw, 10)
        except ValueError:
            raise ValueError(f"{what}: {text!r} is not a seed (decimal or 0x hex, 0 to 2**64-1)") from None
    if not 0 <= value <= SEED_MAX:
        raise ValueError(f"{what}: {text!r} is out of range (a seed is 0 to 2**64-1)")
    return value


def new_scope(node_id=""):
    """A fresh scope name: 12 hex digits of the test's id hash, then a uuid4 (45 chars)."""
    digest = hashlib.sha256(node_id.encode("utf-8")).hexdigest()[:12]
    return f"{digest}-{uuid.uuid4().hex}"


def _request_key(entry):
    """What makes two entries the same request: the seed, the endpoint and the request's
    hash (a request's hash does not depend on its seed)."""
    return entry.get("seed"), entry.get("endpoint"), entry.get("request_hash")


class TruncatedAnswer(AssertionError):
    """A run passed off a cut response as a whole one.

    `cut` holds the trace entries of the cut responses it acted on."""

    def __init__(self, message, cut):
        super().__init__(message)
        self.cut = cut


class ActedOnCut(TruncatedAnswer):
    """A run acted on a cut response: `findings` says how (`evidence.Finding`s: a later
    request's history built from it, a tool run with its arguments, an answer that is its
    partial text), `cut` which responses."""

    def __init__(self, message, cut, findings):
        super().__init__(message, cut)
        self.findings = findings


class UnpairedToolResults(AssertionError):
    """A request told the model of a tool call's result not exactly once; `problems`
    says which."""

    def __init__(self, message, problems):
        super().__init__(message)
        self.problems = problems


def describe(entry):
    """One trace entry on one line: what was asked, how it ended, which faults fired."""
    faults = ",".join(entry.get("faults") or []) or "none"
    status = entry.get("status")
    return (f"{entry.get('path', '?')} request {str(entry.get('request_hash', '?'))[:16]} "
            f"occurrence {entry.get('occurrence')}: status {status if status is not None else '-'}, "
            f"end {entry.get('end')}, faults {faults}")


class Umi:
    """A test's handle on `dst serve`: its seed, its scope, its URLs and its trace.

    `openai_base_url` is for the openai SDK and everything built on it (the OpenAI
    Agents SDK, pydantic-ai's OpenAI models); `anthropic_base_url` for the anthropic
    SDK; `ollama_base_url` for the ollama package. `headers` carries the same seed and
    scope for clients that take default headers instead of a base URL.
    """

    def __init__(self, server, seed, scope=None, node_id="", rerun_command=None, path=None):
        self.server = server
        self.seed = parse_seed(seed, "seed")
        # A path (`umi_dst.path.RunPath`, or its text `7/3:9913`) of this seed: from its
        # branches' requests on, answers are drawn from other streams. None: the seed.
        if path is not None:
            from .path import RunPath  # path.py imports parse_seed from here
            path = RunPath.parse(path, "path")
            if path.seed != self.seed:
                raise ValueError(f"path {path}: its seed is not the run's seed {self.seed}")
        self.path = path
        self.scope = scope if scope is not None else new_scope(node_id)
        if not SCOPE_CHARS.match(self.scope):
            raise ValueError(f"scope {self.scope!r}: 1 to 128 characters of A-Z a-z 0-9 . _ ~ -")
        self.node_id = node_id
        self.rerun_command = rerun_command
        self.children = []  # the runs new_scope() made: a failure report covers them too
        self.tool_calls_reported = []  # report_tool_call(): tools the agent ran itself
        # The run's simulated clock (`umi_dst.clock.SimClock`: `now_us`, `elapsed_us`,
        # `sleeps_us()`, `waits`), or None when the test runs on the wall clock.
        self.clock = None

    def __repr__(self):
        return f"Umi(seed={self.seed}, scope={self.scope!r}, server={self.server!r})"

    @property
    def seed_text(self):
        """What the server is told: the seed, or the path (`7/3:9913`) when one is set."""
        return str(self.path) if self.path is not None else str(self.seed)

    @property
    def url(self):
        """The server's root with this run's seed (or path) and scope in the path."""
        return f"{self.server.url}/seed/{self.seed_text}/scope/{self.scope}"

    @property
    def openai_base_url(self):
        """For `openai.OpenAI(base_url=...)` and what is built on it (chat and Responses)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self):
        """For `anthropic.Anthropic(base_url=...)` (the SDK adds `/v1/messages`)."""
        return self.url

    @property
    def ollama_base_url(self):
        """For `ollama.Client(host=...)` (the package adds `/api/chat`)."""
        return self.url

    @property
    def mcp_url(self):
        """For an MCP client over Streamable HTTP (`mcp.Client(umi.mcp_url)`, the OpenAI
        Agents SDK's `MCPServerStreamableHttp`): the simulated MCP server's tools
        (`dst serve --mcp-tools FILE`), seeded and scoped like the model."""
        return f"{self.url}/mcp"

    @property
    def otlp_traces_url(self):
        """Where the agent's own OpenTelemetry spans go (OTLP/HTTP, protobuf or JSON): the
        server files them under this run's scope, beside what it served
        (`trace().agent_spans`, `otlp_trace()`). For `OTLPSpanExporter(endpoint=...)` or
        `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `tracer_provider()` builds one for you."""
        return f"{self.url}/v1/traces"

    def tracer_provider(self, service_name="agent-under-test", resource_attributes=None, compression=None):
        """An OpenTelemetry SDK `TracerProvider` exporting every span to this run's scope
        (`otlp_traces_url`) with a `SimpleSpanProcessor` (`umi_dst.otel`); `ImportError`
        naming the packages when the SDK or its OTLP/HTTP exporter is not installed."""
        from .otel import tracer_provider
        return tracer_provider(self, service_name, resource_attributes, compression)

    def otlp_trace(self):
        """This run as OpenTelemetry: an OTLP JSON `ExportTraceServiceRequest` (a dict) with
        the served requests as spans (GenAI semantic conventions, faults as `umi.fault`
        events) and the agent's own spans, on one time line
        (`GET /umi/trace?scope=S&format=otlp`)."""
        return self.server.otlp_trace(self.scope)

    @property
    def headers(self):
        """The seed and scope as headers, for a client given the server's root URL."""
        return {"x-umi-seed": self.seed_text, "x-umi-scope": self.scope}

    def new_scope(self, server=None, seed=None):
        """The same test again: same seed (unless given), a fresh scope, on this server or
        another. A run under it must get the same answers as this one."""
        child = Umi(server or self.server, self.seed if seed is None else seed,
                    node_id=self.node_id, rerun_command=self.rerun_command,
                    path=self.path if seed is None else None)
        # One clock per test: the new run shares it, and its server's requests carry it.
        child.clock = self.clock
        if self.clock is not None:
            self.clock.cover(child.server.url)
        self.children.append(child)
        return child

    def runs(self):
        """This run and every run made from it by `new_scope`, depth first."""
        found = [self]
        for child in self.children:
            found += child.runs()
        return found

    def trace(self):
        """What this run asked and got: the server's entries for this scope (a `Trace`), and
        the spans the agent sent to `otlp_traces_url` (`Trace.agent_spans`)."""
        return self.server.trace(self.scope)

    def marks(self):
        """What this run reached, as the server counts it (`GET /umi/marks?scope=S`): a
        list of dicts `{"name", "kind", "arrival", "step", "count"}`, one per fault that
        fired at a fault point (`fault:llm.stream_cut@llm.call`), response shape sent
        (`shape:429/complete`) and tool outcome (`tool:issue_refund:ran`), each with the
        first arrival it was reached at (`step` = `arrival` + 1, what a path's branch
        counts). What `--umi-explore` steers by."""
        return self.server.marks(self.scope)["marks"]

    def faults(self):
        """The faults that fired in this run, `kind@operation`, in trace order."""
        return [fault for _entry, fault in self.trace().faults()]

    def report_tool_call(self, name, arguments, call_id=None):
        """Tells the checks that the agent ran tool `name` with `arguments` (a dict, or
        its JSON text) for the model's call `call_id` (if known): for tools the agent runs
        itself, not over `umi.mcp_url` (whose calls the server sees)."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"report_tool_call: name must be a non-empty str, got {name!r}")
        if isinstance(arguments, (bytes, bytearray)):
            arguments = arguments.decode("utf-8", "replace")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                pass  # kept as text: it fits a cut call's text by prefix
        if call_id is not None and not isinstance(call_id, str):
            raise TypeError(f"report_tool_call: call_id must be a str or None, got {call_id!r}")
        self.tool_calls_reported.append({"name": name, "arguments": arguments, "call_id": call_id})

    def cut_responses(self):
        """The model responses the server cut in this run (never an MCP entry: a cut MCP
        `tools/call` is the "maybe applied" question, not a truncated answer)."""
        return evidence.cut_responses(self.trace())

    def unretried_cut_streams(self):
        """Model entries whose stream was cut and that no later request re-sent (same
        endpoint and `request_hash`, a higher `occurrence`); never an MCP entry."""
        trace = self.trace()
        latest = {}
        for entry in trace:
            key = _request_key(entry)
            latest[key] = max(latest.get(key, -1), entry.get("occurrence", 0))
        return [entry for entry in trace.cut()
                if evidence.is_model_entry(entry) and latest[_request_key(entry)] <= entry.get("occurrence", 0)]

    def _whole_trace(self, check):
        trace = self.trace()
        if trace.left_out or trace.summary.get("evicted"):
            raise AssertionError(
                f"{check}: the server no longer holds this run's whole log "
                f"(left out: {trace.left_out}, evicted: {bool(trace.summary.get('evicted'))}; "
                f"seed {self.seed}, scope {self.scope}): nothing can be concluded. Use a fresh server, "
                f"or fewer requests per scope."
            )
        return trace

    def check_cut_streams(self, answer=None, answered=True):
        """Assert that the run did not act on a response the server cut; return the
        findings (empty when it did not).

        Judged from evidence (`umi_dst.evidence`): a later request's history holding an
        assistant turn or tool results built from a cut response; a tool run, over
        `umi.mcp_url` or reported with `report_tool_call`, with a cut call's id or
        arguments (also when a partial-JSON parser completed them); the final `answer`
        (the text the run handed over) being a cut response's partial text. Evidence a
        whole response explains is not counted, so a run that recovered by a retry, a
        fallback model or replanning passes. MCP cuts are not model stream cuts.

        `answered` (kept from the re-send rule, default True): `False` says the run ended
        in an error (only the history and tool evidence is judged); `True` without
        `answer` says it answered but the text is not at hand: then it is a finding when
        the last model response the run received was cut (nothing whole came after it).
        Pass `answer=` to judge the text itself. `check_cut_streams(True)` (the old
        positional `answered`) still means `answered=True`.
        Raises `ActedOnCut` (a `TruncatedAnswer`, an `AssertionError`) with the findings.
        """
        if isinstance(answer, bool):  # the old positional `answered`
            answer, answered = None, answer
        if not isinstance(answered, bool):
            raise TypeError(f"check_cut_streams(answered=...): a bool, got {answered!r}")
        if answer is not None and not isinstance(answer, str):
            raise TypeError(f"check_cut_streams(answer=...): the run's final text (a str), got {type(answer).__name__}")
        if answer is not None and answered is False:
            raise ValueError("check_cut_streams: answer= given with answered=False (a run that answered has answered)")
        trace = self._whole_trace("check_cut_streams")
        findings = evidence.judge(trace, answer=answer, answered=answered, reported=self.tool_calls_reported)
        if findings:
            cut = []
            for finding in findings:
                if finding.cut not in cut:
                    cut.append(finding.cut)
            lines = "\n".join(f"  {finding}" for finding in findings)
            rerun = f"\nrerun: {self.rerun_command}" if self.rerun_command else ""
            raise ActedOnCut(
                f"Umi finding: the run acted on {len(cut)} response(s) the server cut "
                f"(seed {self.seed_text}, scope {self.scope}):\n{lines}{rerun}",
                cut, findings,
            )
        return findings

    def check_tool_results(self):
        """Assert that every request of this run told the model of each tool call its
        conversation made exactly one result, and of no call it did not make (what
        Umi's `check_tool_results` checks in a simulation). Returns the problems (empty)."""
        trace = self._whole_trace("check_tool_results")
        problems = evidence.tool_result_problems(trace)
        if problems:
            lines = "\n".join(f"  {problem}" for problem in problems)
            rerun = f"\nrerun: {self.rerun_command}" if self.rerun_command else ""
            raise UnpairedToolResults(
                f"Umi finding: tool results not paired with calls (seed {self.seed_text}, scope {self.scope}):\n"
                f"{lines}{rerun}", problems)
        return problems

    def effects(self, effect_tools=()):
        """The effects this run did, in arrival order when the trace has it: each a dict
        `{"tool", "arguments", "call_id", "idempotency_key", "entry"}`.

        An effect is a `tools/call` over this scope's `/mcp` whose `tool` field says a tool
        with side effects ran and was not deduplicated (a repeated idempotency key
        applies nothing), or a call reported with `report_tool_call` of a tool named in
        `effect_tools` (tools the agent runs itself; `entry` is then None)."""
        return self._effects(effect_tools)[0]

    def _effects(self, effect_tools):
        """The effects (as `effects`) and the scope's entries in arrival order."""
        trace = self._whole_trace("check_effects")
        ordered = sorted(trace, key=lambda entry: entry.get("arrival", 0))
        found = []
        for entry in ordered:
            tool = entry.get("tool")
            if tool and tool.get("side_effects") and tool.get("ran") and not tool.get("deduplicated"):
                found.append({"tool": tool.get("name"), "arguments": tool.get("arguments"),
                              "call_id": tool.get("call_id"), "idempotency_key": tool.get("idempotency_key"),
                              "entry": entry})
        names = {effect_tools} if isinstance(effect_tools, str) else set(effect_tools)
        for call in getattr(self, "tool_calls_reported", []):
            if call.get("name") in names:
                found.append({"tool": call.get("name"), "arguments": call.get("arguments"),
                              "call_id": call.get("call_id"), "idempotency_key": None, "entry": None})
        return found, ordered

    def check_effects(self, effect_tools=()):
        """Assert that no side effect was done twice and none for a call no model made.

        The scope is one run (the server keeps its tools' world across its requests), so
        this judges the whole run: no two effects of one tool for one idempotency key or
        one call id (`EffectTwice`), and, when the trace says what the model's responses
        carried (`carried`), no effect for a call id none of them carried
        (`EffectNeverAsked`). Both are `EffectFinding`s (`AssertionError`s) naming the tool,
        the key or call id and the entries. `effect_tools`: tools the agent runs itself
        whose reported calls (`report_tool_call`) are effects too. Returns the effects.
        """
        found, ordered = self._effects(effect_tools)
        context = f"seed {self.seed_text}, scope {self.scope}"
        rerun = f"\nrerun: {self.rerun_command}" if self.rerun_command else ""
        for field, words in (("idempotency_key", "idempotency key"), ("call_id", "call id")):
            groups = {}
            for effect in found:
                if effect[field] is not None:
                    groups.setdefault((effect["tool"], effect[field]), []).append(effect)
            for (tool, value), done in groups.items():
                if len(done) > 1:
                    raise EffectTwice(
                        f"Umi finding: {tool} did its effect {len(done)} times for one {words} {value!r} "
                        f"({context}):\n{_effect_lines(done)}{rerun}", tool, field, value, done)
        carried = [entry["carried"] for entry in ordered if isinstance(entry.get("carried"), dict)]
        if carried:
            ids = {call.get("id") for whole in carried for call in whole.get("tool_calls") or []}
            for effect in found:
                if effect["call_id"] is not None and effect["call_id"] not in ids:
                    raise EffectNeverAsked(
                        f"Umi finding: {effect['tool']} did an effect for call id {effect['call_id']!r}, which no "
                        f"model response carried ({context}):\n{_effect_lines([effect])}{rerun}",
                        effect["tool"], "call_id", effect["call_id"], [effect])
        return found


class EffectFinding(AssertionError):
    """A side effect the run should not have done. `tool` names the tool, `field` is
    `"idempotency_key"` or `"call_id"` and `value` its value, `effects` the effects
    (dicts from `Umi.effects`, each with its trace `entry`)."""

    def __init__(self, message, tool, field, value, effects):
        super().__init__(message)
        self.tool = tool
        self.field = field
        self.value = value
        self.effects = effects


class EffectTwice(EffectFinding):
    """One tool did its effect more than once for one idempotency key or one call id."""


class EffectNeverAsked(EffectFinding):
    """A tool did an effect for a call id no model response carried."""


def _effect_lines(effects):
    """The effects, one line each: where each came from and with what arguments."""
    lines = []
    for effect in effects:
        entry = effect["entry"]
        where = describe(entry) if entry is not None else "reported by the test (report_tool_call)"
        lines.append(f"  - {effect['tool']} {effect['arguments']} call id {effect['call_id']!r}: {where}")
    return "\n".join(lines)
