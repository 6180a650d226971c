"""Real agent frameworks against `dst serve`, through the umi plugin (`-p umi_dst.plugin`).

A framework that passes off a cut stream as an answer is an Umi finding: the test
xfails with the cut requests (it is the framework's bug, not a failure of this suite),
and the end of the session prints how many runs of each framework did it.
"""

import collections
import re


def pytest_terminal_summary(terminalreporter):
    findings = collections.Counter()
    for report in terminalreporter.stats.get("xfailed", []):
        match = re.search(r"(openai-agents|pydantic-ai) \(([^)]*)\) returned an answer built on", report.wasxfail or "")
        if match:
            findings[f"{match.group(1)} ({match.group(2)})"] += 1
    if not findings:
        return
    terminalreporter.section("Umi findings: answers built on cut streams nobody re-sent")
    for where, count in sorted(findings.items()):
        terminalreporter.write_line(f"{count:3d} run(s)  {where}")
    terminalreporter.write_line("(each is an xfail above; its rerun command replays it)")
