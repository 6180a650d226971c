"""Starts `dst serve` processes for the tests: one per set of flags, on an ephemeral port.

The `dst` binary comes from $UMI_DST (scripts/python-tests.sh builds it). Each server is
stopped with SIGTERM at the end of the session, and must exit 0 (a graceful stop).
"""

import os
import re
import signal
import subprocess
import urllib.request
import json

import pytest

DST = os.environ.get("UMI_DST")


class Served:
    def __init__(self, flags):
        if not DST:
            raise RuntimeError("set UMI_DST to the dst binary (scripts/python-tests.sh does)")
        self.flags = flags
        self.process = subprocess.Popen(
            [DST, "serve", "--bind", "127.0.0.1:0", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()
        match = re.search(r"listening on (http://\S+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"dst serve did not start: {line!r} {self.process.stderr.read()}")
        self.url = match.group(1)

    def trace(self):
        """The session log: one dict per answered request, then the summary line."""
        with urllib.request.urlopen(f"{self.url}/umi/trace") as response:
            lines = [json.loads(line) for line in response.read().decode().splitlines()]
        return lines[:-1], lines[-1]

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=30)
        assert code == 0, f"dst serve exited {code}: {self.process.stderr.read()}"


@pytest.fixture(scope="session")
def serve():
    started = {}

    def start(*flags):
        if flags not in started:
            started[flags] = Served(list(flags))
        return started[flags]

    yield start
    for served in started.values():
        served.stop()


# Figures a test measured (not asserted), printed in the session's summary so they show
# under `pytest -q` without `-s` (test_html_report.py's page load times).
_MEASURED = []


@pytest.fixture(scope="session")
def measured():
    """Call with one line of text; it is printed at the end of the session."""
    return _MEASURED.append


def pytest_terminal_summary(terminalreporter):
    if _MEASURED:
        terminalreporter.section("measured")
        for line in _MEASURED:
            terminalreporter.write_line(line)
