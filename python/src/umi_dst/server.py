"""A `dst serve` process on an ephemeral local port, and what it recorded.

`Server(flags)` starts `dst serve --bind 127.0.0.1:0 FLAGS...`, waits for the line that
says where it listens, and `stop()` ends it with SIGTERM and requires exit 0 (a server
that crashed or hung is a failure, not noise). `trace(scope)` reads the server's log
of answered requests (`GET /umi/trace`), one `dict` per request plus the summary line.

The plugin uses this module; it is public so that a test (or a script) can start a
server of its own, e.g. a fresh one to check that a seed replays on it.
"""

import json
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from ._binary import find_dst

# The real clocks, bound at import: a test on the simulated clock (`clock.py` patches
# `time.monotonic` and `time.sleep`) may start a server of its own, which waits for real.
_real_monotonic = time.monotonic
_real_sleep = time.sleep

LISTENING = re.compile(r"listening on (http://\S+)")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class ServeError(RuntimeError):
    """`dst serve` did not start, did not answer its trace endpoint, or did not stop cleanly."""


class ServeRefused(ServeError):
    """`dst serve` refused its flags (it exited 2, the usage code): `reason` is what it said
    (`--faults "tool.timeout@tool.call.refund=0.5": no tool "refund" is served ...`)."""

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


EXIT_CODE_BAD_ARGUMENTS = 2


class Trace(list):
    """The entries one scope (or the whole session) of a server recorded, in the server's
    stable order (not arrival order: the same run gives the same trace; `arrival`, where
    the server records it, is the order it received them: `in_arrival_order()`).

    Each entry is the server's JSON object as a `dict`: `seed`, `scope`, `endpoint`,
    `path`, `request_hash`, `occurrence`, `run_seed`, `status`, `end`, `cut`, `faults`
    (`kind@operation` strings), `trace_hash`, `events`. `summary` is the last line
    (`entries`, `left_out`, `session_trace_hash`, `agent_spans`).

    `agent_spans` are the spans the agent itself sent to the server over OTLP/HTTP
    (`POST /v1/traces`, e.g. through `umi.tracer_provider()`), in arrival order, each a
    `dict` as `GET /umi/spans` lists it: `trace_id`, `span_id`, `parent_span_id`, `name`,
    `kind`, `start_unix_nano`, `end_unix_nano`, `attributes`, `events`, `status`,
    `resource`, `instrumentation_scope`.
    """

    def __init__(self, entries, summary, agent_spans=()):
        super().__init__(entries)
        self.summary = summary
        self.agent_spans = list(agent_spans)

    def agent_span_names(self):
        """The agent's spans' names, in arrival order."""
        return [span.get("name") for span in self.agent_spans]

    @property
    def hash(self):
        """The summary's `session_trace_hash`: for one scope it does not depend on the
        scope's name, so two runs that got the same answers have the same hash."""
        return self.summary.get("session_trace_hash")

    @property
    def left_out(self):
        """How many entries the server no longer holds (its log is bounded)."""
        return self.summary.get("left_out", 0)

    def faults(self):
        """Every fault that fired, as `(entry, "kind@operation")`, in trace order."""
        return [(entry, fault) for entry in self for fault in entry.get("faults") or []]

    def cut(self):
        """The entries whose body did not end as a whole answer ends (`cut: true`)."""
        return [entry for entry in self if entry.get("cut")]

    def in_arrival_order(self):
        """The entries sorted by `arrival` when every entry has one (a server that records
        it), else in the log's order."""
        if all(isinstance(entry.get("arrival"), int) for entry in self):
            return sorted(self, key=lambda entry: entry["arrival"])
        return list(self)

    def to_jsonl(self):
        """The trace as the server sent it: one JSON line per entry, then the summary
        (what `dst trace-html` reads)."""
        lines = [json.dumps(entry, ensure_ascii=False) for entry in self]
        lines.append(json.dumps(self.summary, ensure_ascii=False))
        return "\n".join(lines) + "\n"


class Server:
    """One `dst serve` process. `flags` are the arguments after `--bind 127.0.0.1:0`."""

    def __init__(self, flags=(), dst=None):
        self.flags = [str(flag) for flag in flags]
        self.dst = dst or find_dst()
        self.command = [self.dst, "serve", "--bind", "127.0.0.1:0", *self.flags]
        # Files, not pipes: a server that logs a lot must never block on a full pipe.
        self._stdout = tempfile.TemporaryFile(mode="w+b")
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        try:
            self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL,
                                            stdout=self._stdout, stderr=self._stderr)
        except OSError as error:
            raise ServeError(f"could not run {self.dst}: {error}") from error
        self.url = self._wait_for_url()
        self.stopped = False

    def __repr__(self):
        return f"Server({self.url}, {' '.join(self.flags) or 'no flags'})"

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.stop()

    def _output(self, stream):
        # pread: the child writes through the same open file, at its offset; moving that
        # offset (seek + read) would make its next line overwrite what we have not read.
        fd = stream.fileno()
        if not hasattr(os, "pread"):  # pragma: no cover (Windows)
            stream.seek(0)
            return stream.read().decode("utf-8", "replace")
        return os.pread(fd, os.fstat(fd).st_size, 0).decode("utf-8", "replace")

    def _wait_for_url(self):
        deadline = _real_monotonic() + START_TIMEOUT_S
        while True:
            match = LISTENING.search(self._output(self._stdout))
            if match:
                return match.group(1).rstrip("/")
            if self.process.poll() is not None:
                said = self._output(self._stderr).strip() or self._output(self._stdout).strip()
                message = f"`{' '.join(self.command)}` exited {self.process.returncode} before listening:\n{said}"
                if self.process.returncode == EXIT_CODE_BAD_ARGUMENTS:
                    raise ServeRefused(message, said.removeprefix("dst serve: "))
                raise ServeError(message)
            if _real_monotonic() > deadline:
                self.process.kill()
                self.process.wait()
                raise ServeError(f"`{' '.join(self.command)}` printed no `listening on` line in "
                                 f"{START_TIMEOUT_S:.0f} s; stderr:\n{self._output(self._stderr)}")
            _real_sleep(0.01)

    def stderr(self):
        """What the server has written to stderr so far."""
        return self._output(self._stderr)

    def trace(self, scope=None):
        """The server's log (`GET /umi/trace`), or one scope's (`?scope=S`), as a `Trace`."""
        url = f"{self.url}/umi/trace"
        if scope is not None:
            url += "?" + urllib.parse.urlencode({"scope": scope})
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                text = response.read().decode("utf-8")
        except (urllib.error.URLError, OSError) as error:
            raise ServeError(f"GET {url} failed: {error}") from error
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        if not lines or "session_trace_hash" not in lines[-1]:
            raise ServeError(f"GET {url}: no summary line at the end of {text[:200]!r}")
        summary = lines[-1]
        spans = self.spans(scope)["spans"] if summary.get("agent_spans") else []
        return Trace(lines[:-1], summary, spans)

    def _get_json(self, path, query):
        url = f"{self.url}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return json.loads(response.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise ServeError(f"GET {url} failed: {error}") from error

    def spans(self, scope=None):
        """The spans the agent sent over OTLP/HTTP (`GET /umi/spans?scope=S`): the server's
        JSON object, `scope` and `spans` (dicts, in arrival order)."""
        return self._get_json("/umi/spans", {"scope": scope} if scope is not None else None)

    def otlp_trace(self, scope=None):
        """One scope's run as OpenTelemetry (`GET /umi/trace?scope=S&format=otlp`): an OTLP
        JSON `ExportTraceServiceRequest` as a dict, the served requests as spans (GenAI
        semantic conventions) and the agent's own spans in one document."""
        query = {"format": "otlp"}
        if scope is not None:
            query["scope"] = scope
        return self._get_json("/umi/trace", query)

    def marks(self, scope=None):
        """What one scope (or every scope) reached (`GET /umi/marks?scope=S`): the server's
        JSON object, `marks` (each `name`, `kind`, `arrival`, `step`, `count`), `entries`,
        `left_out` and, for a scope, `evicted`."""
        url = f"{self.url}/umi/marks"
        if scope is not None:
            url += "?" + urllib.parse.urlencode({"scope": scope})
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return json.loads(response.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise ServeError(f"GET {url} failed: {error}") from error

    def reset(self):
        """`POST /umi/reset`: the server forgets every occurrence count, its log and the
        agent's spans."""
        request = urllib.request.Request(f"{self.url}/umi/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()

    def stop(self):
        """SIGTERM, then wait; `ServeError` unless the server exits 0."""
        if self.stopped:
            return
        self.stopped = True
        if self.process.poll() is None:
            if os.name == "posix":
                self.process.send_signal(signal.SIGTERM)
            else:  # pragma: no cover
                self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise ServeError(f"{self!r} did not stop within {STOP_TIMEOUT_S:.0f} s of SIGTERM; "
                                 f"stderr:\n{self.stderr()}") from None
        code = self.process.returncode
        self._stdout.close()
        stderr = self._output(self._stderr)
        self._stderr.close()
        if code != 0:
            raise ServeError(f"{self!r} exited {code} on SIGTERM (expected 0); stderr:\n{stderr}")
