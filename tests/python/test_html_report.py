"""The HTML pages of `dst replay --html` and `dst sweep --html` in a real browser: Debian's
Chromium (/usr/bin/chromium, installed by scripts/python-tests.sh; never `playwright
install`), headless, through playwright.

Each page opens from a file:// URL with no console error, no page error and no request
for anything but the file itself; the replay page of a failing canary seed draws one
`[data-lane]` mark per trace event, per lane as the page's embedded data says and in
total as `dst replay --trace` prints, with its `#failure` marker; screenshots go to
target/screenshots/. The largest run of a few seeds is rendered too and its load time
printed (measured, not asserted; also written to target/screenshots/timings.txt and shown in
the session's summary). The page the pytest plugin writes for a failed test (`dst
trace-html` over a served scope) renders the same way."""

import json
import os
import pathlib
import re
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import sync_playwright

DST = os.environ.get("UMI_DST")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = pathlib.Path(__file__).resolve().parents[2]
SHOTS = ROOT / "target" / "screenshots"
CANARY = "canary_lost_update"
# The largest runs the scenarios make: no scenario records anywhere near 10,000 events
# today (router_rate_limit_storm's are the longest, 400 to 500), so the test takes the
# longest trace of a few of its seeds and prints its size with the load time.
LARGE_SCENARIO, LARGE_SEEDS = "router_rate_limit_storm", range(1, 21)
LANES = ["model", "network", "tools", "mcp", "storage", "router", "faults", "other"]


def dst(*args, codes=(0,)):
    if not DST:
        raise RuntimeError("set UMI_DST to the dst binary (scripts/python-tests.sh does)")
    done = subprocess.run([DST, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode in codes, f"dst {' '.join(args)} exited {done.returncode}: {done.stderr}"
    return done


@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"{CHROMIUM} is missing: scripts/python-tests.sh installs it "
            "(apt-get install -y --no-install-recommends chromium, as root or via sudo -n); "
            "install it and run again (playwright's own browser download is not used)"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    SHOTS.mkdir(parents=True, exist_ok=True)
    return tmp_path_factory.mktemp("html")


@pytest.fixture(scope="module")
def sweep(out_dir):
    """A sweep of the canary with its JSON report and HTML page."""
    report, page = out_dir / "sweep.json", out_dir / "sweep.html"
    dst("sweep", "--scenario", CANARY, "--seeds", "50", "--no-record", "--quiet",
        "--report", str(report), "--html", str(page))
    return json.loads(report.read_text()), page


class Opened:
    """A page loaded in its own tab, with what went wrong while it loaded."""

    def __init__(self, browser, path):
        self.tab = browser.new_page(viewport={"width": 1400, "height": 900})
        self.errors, self.foreign = [], []
        self.tab.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.tab.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.tab.on("request", lambda r: r.url.startswith("file:") or self.foreign.append(r.url))
        started = time.monotonic()
        self.tab.goto(path.as_uri(), wait_until="load")
        self.load_s = time.monotonic() - started

    def check_clean(self):
        assert self.errors == [], self.errors
        assert self.foreign == [], f"requests off the page: {self.foreign}"

    def embedded(self, element_id):
        return json.loads(self.tab.locator(f"script#{element_id}").text_content())

    def marks_by_lane(self):
        return self.tab.evaluate(
            """() => {
                const counts = {};
                for (const mark of document.querySelectorAll('[data-lane]')) {
                    counts[mark.dataset.lane] = (counts[mark.dataset.lane] || 0) + 1;
                }
                return counts;
            }"""
        )


def trace_printed(scenario, seed, codes):
    """`dst replay --trace`'s events: (index, kind) per `[ 1.000000s] #N kind detail` line."""
    out = dst("replay", "--scenario", scenario, "--seed", str(seed), "--trace", codes=codes).stdout
    return [(int(m.group(1)), m.group(2))
            for m in re.finditer(r"^\s+\[\s*\d+\.\d{6}s\] #(\d+)\s+(\S+)", out, re.M)]


def test_a_failing_seeds_page_draws_each_event_in_its_lane(browser, out_dir, sweep):
    report, _ = sweep
    failures = report["scenarios"][0]["failures"]
    assert failures, "the canary is found in 50 seeds"
    seed, codes = failures[0]["seed"], range(10, 21)
    page = out_dir / f"replay-{CANARY}-{seed}.html"
    dst("replay", "--scenario", CANARY, "--seed", str(seed), "--html", str(page), codes=codes)
    opened = Opened(browser, page)
    opened.check_clean()
    data = opened.embedded("trace")
    expected = {lane: 0 for lane in LANES}
    for event in data["events"]:
        expected[event["lane"]] += 1
    drawn = opened.marks_by_lane()
    assert {lane: drawn.get(lane, 0) for lane in LANES} == expected
    printed = trace_printed(CANARY, seed, codes)
    assert len(printed) == len(data["events"]) == data["events_recorded"]
    assert printed == [(e["index"], e["kind"]) for e in data["events"]]
    indices = opened.tab.evaluate(
        "() => [...document.querySelectorAll('[data-lane]')].map(m => Number(m.dataset.index))")
    assert indices == [index for index, _ in printed]
    assert opened.tab.locator("#failure").count() == 1
    assert "FAILED" in opened.tab.locator("#failure").text_content()
    opened.tab.screenshot(path=str(SHOTS / "replay-failing.png"), full_page=False)
    opened.tab.close()


def test_the_sweep_page_shows_every_scenario_and_failure(browser, sweep):
    report, page = sweep
    opened = Opened(browser, page)
    opened.check_clean()
    assert opened.embedded("report") == report
    assert opened.tab.locator("tr[data-scenario]").count() == len(report["scenarios"])
    commands = opened.tab.locator("code.replay-html").all_text_contents()
    listed = report["scenarios"][0]["failures"]
    assert commands == [f"{f['replay']} --html replay-{CANARY}-{f['seed']}.html" for f in listed]
    opened.tab.screenshot(path=str(SHOTS / "sweep.png"), full_page=True)
    opened.tab.close()


def events_of(scenario, seed):
    """The events `dst replay` says the run recorded."""
    out = dst("replay", "--scenario", scenario, "--seed", str(seed), codes=range(0, 21)).stdout
    return int(re.search(r"^run: .* (\d+) events,", out, re.M).group(1))


def test_a_large_run_loads(browser, out_dir, measured):
    seed = max(LARGE_SEEDS, key=lambda seed: events_of(LARGE_SCENARIO, seed))
    page = out_dir / "large.html"
    done = dst("replay", "--scenario", LARGE_SCENARIO, "--seed", str(seed),
               "--html", str(page), codes=range(0, 21))
    assert "html:" in done.stdout
    opened = Opened(browser, page)
    opened.check_clean()
    events = len(opened.embedded("trace")["events"])
    assert events == events_of(LARGE_SCENARIO, seed)
    assert sum(opened.marks_by_lane().values()) == events
    navigation = opened.tab.evaluate(
        "() => { const t = performance.timing; return t.loadEventEnd - t.navigationStart; }")
    line = (f"html report: {LARGE_SCENARIO} seed {seed}: {events} events, "
            f"{page.stat().st_size // 1024} KiB, loaded in {opened.load_s * 1000:.0f} ms "
            f"(navigation to load event {navigation} ms)")
    print(line)
    measured(line)
    with open(SHOTS / "timings.txt", "a") as timings:
        timings.write(line + "\n")
    opened.tab.screenshot(path=str(SHOTS / "replay-large.png"), full_page=False)
    opened.tab.close()


def served_request(server, scope, prompt):
    """One chat request to `server` under seed 3 and `scope` (its status, read or not)."""
    body = json.dumps({"model": "umi-sim", "messages": [{"role": "user", "content": prompt}]}).encode()
    request = urllib.request.Request(f"{server.url}/seed/3/scope/{scope}/v1/chat/completions", data=body,
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_pytest_seeds_page_draws_its_requests_and_faults(browser, out_dir):
    """The page the pytest plugin writes on a failure (`umi_dst.report.write_picture`,
    i.e. `dst trace-html`): a scope of three rate-limited requests (one a retry), drawn
    with one mark per event in its lane and one row per request."""
    from umi_dst import Server
    from umi_dst.report import write_picture

    with Server(["--faults", "llm.rate_limit=1.0"], dst=DST) as server:
        statuses = [served_request(server, "pic", prompt)
                    for prompt in ("Plan the week.", "Plan the week.", "Plan the month.")]
        assert statuses == [429, 429, 429]
        trace = server.trace("pic")
    page = write_picture(DST, trace, str(out_dir), "pytest-page", "test_agent.py::test_plan[seed=3]",
                         rerun="UMI_SEED=3 pytest -p umi_dst.plugin 'test_agent.py::test_plan[seed=3]'",
                         failure="AssertionError: the plan is empty")
    opened = Opened(browser, pathlib.Path(page))
    opened.check_clean()
    data = opened.embedded("trace")
    assert len(data["requests"]) == 3 == opened.tab.locator("#requests tbody tr").count()
    assert sorted((r["path"], r["occurrence"], r["status"]) for r in data["requests"]) == [
        ("/v1/chat/completions", 0, 429), ("/v1/chat/completions", 0, 429), ("/v1/chat/completions", 1, 429)]
    fired = [f.split("@")[0] for r in data["requests"] for f in r["faults"]]
    assert fired == ["llm.rate_limit"] * 3
    expected = {lane: 0 for lane in LANES}
    for event in data["events"]:
        expected[event["lane"]] += 1
    drawn = opened.marks_by_lane()
    assert {lane: drawn.get(lane, 0) for lane in LANES} == expected
    assert expected["faults"] >= 3 and len(data["events"]) == data["events_recorded"]
    assert opened.tab.locator("#failure").count() == 1
    opened.tab.screenshot(path=str(SHOTS / "pytest-page.png"), full_page=True)
    opened.tab.close()
