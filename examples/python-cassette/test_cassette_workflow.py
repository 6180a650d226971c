"""The cassette workflow end to end, as a user runs it:

1. record: the agent talks to its provider through `dst record` (here `dst serve` stands
   in for the provider, since CI has no internet);
2. check: `dst cassette check` reads every recorded exchange back with Umi's clients;
3. replay: `dst serve --cassette` serves the recording under other seeds, without faults
   (the same final answer) and with 429s, 503s and cut connections (the agent's retries
   must keep it on the recorded conversation: the same answer again);
4. sweep and minimize: the Rust side of the same idea, the `cassette_agent` scenario
   over many seeds, and `dst minimize` on a failure of its canary (a retry that changes
   its request), shrunk to the fault that caused it.
"""

import json
import os
import re
import signal
import subprocess

import weather_agent

DST = os.environ.get("UMI_DST")
QUESTION = "What is the weather in Oslo and in Lisbon?"


def start(*args):
    process = subprocess.Popen(
        [DST, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    line = process.stdout.readline()
    match = re.search(r"listening on (http://\S+)", line)
    assert match, f"{args[0]} did not start: {line!r} {process.stderr.read()}"
    return process, match.group(1)


def stop(process):
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0, process.stderr.read()


def test_record_check_replay_sweep_minimize(tmp_path):
    cassette = tmp_path / "weather.jsonl"
    upstream, upstream_url = start("serve", "--bind", "127.0.0.1:0", "--seed", "3")
    recorder, proxy_url = start(
        "record", "--upstream", upstream_url, "--cassette", str(cassette),
        "--bind", "127.0.0.1:0",
    )
    try:
        recorded = weather_agent.run(f"{proxy_url}/v1", QUESTION)
    finally:
        stop(recorder)
        stop(upstream)
    assert recorded

    check = subprocess.run([DST, "cassette", "check", str(cassette)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr

    for flags in ([], ["--faults", "llm.rate_limit=0.3,llm.service_unavailable=0.2,network.reset=0.2"]):
        replay, replay_url = start(
            "serve", "--bind", "127.0.0.1:0", "--seed", "11", "--cassette", str(cassette), *flags
        )
        try:
            assert weather_agent.run(f"{replay_url}/v1", QUESTION, max_retries=8) == recorded, flags
        finally:
            stop(replay)

    sweep = subprocess.run(
        [DST, "sweep", "--scenario", "cassette_agent", "--seeds", "300", "--no-record", "--quiet"],
        capture_output=True, text=True,
    )
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr

    report = tmp_path / "canary.json"
    subprocess.run(
        [DST, "sweep", "--scenario", "canary_cassette_drift", "--seeds", "100", "--no-record",
         "--quiet", "--report", str(report)],
        capture_output=True, text=True,
    )
    failures = json.loads(report.read_text())
    seed = first_failing_seed(failures)
    minimized = subprocess.run(
        [DST, "minimize", "--scenario", "canary_cassette_drift", "--seed", str(seed)],
        capture_output=True, text=True,
    )
    output = minimized.stdout + minimized.stderr
    assert "differs at $.metadata" in output, output


def first_failing_seed(report):
    """The first failing seed a sweep's JSON report names."""
    text = json.dumps(report)
    match = re.search(r'"seed": (\d+)', text)
    assert match, text[:2000]
    return int(match.group(1))
