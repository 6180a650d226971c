"""The simulated clock's pieces: what time-machine fakes and what `clock.py` must patch
itself, every clock reading the one simulated time, `random` seeded and restored, the
`x-umi-timing` header read strictly, and the plugin's `clock=` / `--umi-clock` settings,
with the clock undone after each test, even a failing one.
"""

import asyncio
import datetime
import random
import threading
import time

import httpx
import pytest
import time_machine

from umi_dst import clock_on
from umi_dst.clock import SIM_EPOCH_UNIX_MS, ClockError, real_monotonic, real_sleep
from umi_dst.clock_loop import SimEventLoop
from umi_dst.clock_pytest import safe_by_default
from umi_dst.clock_timing import Timing, TimingHeaderError, no_response


def test_time_machine_leaves_the_monotonic_clocks_and_sleep_to_us():
    """Why clock.py patches `monotonic`, `perf_counter` and `sleep` itself: under
    time-machine alone they keep real time (if a release starts faking them, this fails
    and the patches should go)."""
    with time_machine.travel(0, tick=False):
        wall, monotonic, perf = time.time(), time.monotonic(), time.perf_counter()
        real_sleep(0.01)
        assert time.time() == wall == 0.0
        assert time.monotonic() > monotonic
        assert time.perf_counter() > perf
        assert time.sleep is real_sleep


def test_every_clock_reads_the_simulated_time():
    with clock_on.on_clock() as clock:
        assert time.time() == SIM_EPOCH_UNIX_MS / 1000
        assert datetime.datetime.now(datetime.timezone.utc) == datetime.datetime(2024, 1, 1,
                                                                                 tzinfo=datetime.timezone.utc)
        time.sleep(1.25)
        assert clock.now_us == 1_250_000
        assert time.monotonic() == time.perf_counter() == 1.25
        assert time.monotonic_ns() == 1_250_000_000
        assert time.time_ns() == SIM_EPOCH_UNIX_MS * 1_000_000 + 1_250_000_000
        assert datetime.datetime.now(datetime.timezone.utc) == clock.now()
        assert time.gmtime()[:6] == (2024, 1, 1, 0, 0, 1)
        assert asyncio.run(_loop_time()) == 1.25
        assert clock.sleeps_us() == [1_250_000]
    assert time.time() > SIM_EPOCH_UNIX_MS / 1000 + 86_400 * 365  # the real clock again


async def _loop_time():
    return asyncio.get_running_loop().time()


def test_a_sleep_on_another_thread_is_real():
    with clock_on.on_clock() as clock:
        done = []
        started = real_monotonic()
        thread = threading.Thread(target=lambda: done.append(time.sleep(0.05)))
        thread.start()
        thread.join()
        assert done == [None] and clock.now_us == 0
        assert real_monotonic() - started >= 0.05


def test_a_bad_sleep_is_refused_like_time_sleep():
    with clock_on.on_clock():
        with pytest.raises(ValueError, match="time.sleep: -1 seconds is negative"):
            time.sleep(-1)


def test_random_is_seeded_and_restored():
    random.seed(99)
    expected_after = random.Random(99).random()
    with clock_on.on_clock(seed=7):
        first = random.random()
    with clock_on.on_clock(seed=7) as clock:
        assert random.random() == first == random.Random(7).random()
        clock.restart()
        assert random.random() == first
    assert random.random() == expected_after


def test_stop_undoes_everything_and_one_clock_runs_at_a_time():
    sleep, monotonic = time.sleep, time.monotonic
    handle = httpx.HTTPTransport.handle_request
    clock = clock_on.start()
    try:
        assert httpx.HTTPTransport.handle_request is not handle
        with pytest.raises(ClockError, match="already running"):
            clock_on.start()
    finally:
        clock_on.stop(clock)
    assert (time.sleep, time.monotonic, httpx.HTTPTransport.handle_request) == (sleep, monotonic, handle)
    assert not isinstance(asyncio.new_event_loop(), SimEventLoop)
    clock_on.stop(clock)  # twice is fine


def test_restart_goes_back_to_the_start():
    with clock_on.on_clock() as clock:
        time.sleep(30)
        clock.restart()
        assert (clock.now_us, time.time(), clock.waits) == (0, SIM_EPOCH_UNIX_MS / 1000, [])


@pytest.mark.parametrize("text, timing", [
    ("head_us=1, first_us=2, last_us=3, end_us=4, ending=complete", Timing(1, 2, 3, 4, "complete")),
    ("head_us=0, first_us=0, last_us=0, end_us=600000000, ending=stall", Timing(0, 0, 0, 600_000_000, "stall")),
])
def test_a_timing_header_is_read(text, timing):
    assert Timing.parse(text) == timing


@pytest.mark.parametrize("text, said", [
    ("head_us=1, first_us=2, last_us=3, end_us=4", "4 items"),
    ("first_us=1, head_us=2, last_us=3, end_us=4, ending=complete", "where head_us=... belongs"),
    ("head_us=1, first_us=2, last_us=3, end_us=4, ending=done", "ending 'done'"),
    ("head_us=-1, first_us=2, last_us=3, end_us=4, ending=reset", "head_us: '-1' is not a whole number"),
    ("head_us=5, first_us=2, last_us=3, end_us=4, ending=reset", "go backwards"),
    (f"head_us={2**64}, first_us=2, last_us=3, end_us=4, ending=reset", "past u64"),
])
def test_a_bad_timing_header_is_named(text, said):
    with pytest.raises(TimingHeaderError, match="x-umi-timing") as raised:
        Timing.parse(text)
    assert said in str(raised.value)


def test_no_response_header():
    assert no_response(httpx.Headers({})) is None
    assert no_response(httpx.Headers({"x-umi-no-response": "stall"})) == "stall"
    with pytest.raises(TimingHeaderError, match="x-umi-no-response: 'hung'"):
        no_response(httpx.Headers({"x-umi-no-response": "hung"}))


@pytest.mark.parametrize("kwargs, safe", [
    ({}, True),
    ({"time_scale": 0}, True),
    ({"time_scale": 0.01}, False),
    ({"args": ["--time-scale", "1"]}, False),
    ({"args": ["--faults", "none", "--time-scale=0.5"]}, False),
    ({"args": ["--time-scale", "0"]}, True),
    ({"args": ["--time-scale=0"], "time_scale": 0}, True),
    ({"args": ["--seed", "3"]}, True),
])
def test_a_time_scale_in_args_is_not_safe_by_default(kwargs, safe):
    assert safe_by_default(kwargs) is safe


INNER = """
import asyncio, random, time
import pytest

REAL = 1.7e9  # a wall clock reading after 2023-11: not the simulated 2024-01-01 start

def on_clock(umi):
    return umi.clock is not None and time.time() < REAL + 86400 * 365

def say(umi, on):
    with open("clocks.txt", "a") as said:  # the outer test reads it
        print("on" if on else "off", file=said)

@pytest.mark.umi(clock=True)
def test_on_and_failing(umi):
    time.sleep(90)
    assert umi.clock.elapsed_us == 90_000_000
    assert False, "failing on purpose"

def test_after_a_failure_the_real_clock():
    assert time.time() > REAL and time.sleep.__module__ == "time"
    assert type(asyncio.new_event_loop()).__name__ != "SimEventLoop"

@pytest.mark.umi(clock=False)
def test_off(umi):
    say(umi, umi.clock is not None)

def test_default(umi):
    say(umi, on_clock(umi))

@pytest.mark.umi(time_scale=0.01)
def test_real_time_server(umi):
    say(umi, on_clock(umi))
"""


def _clocks(pytester, *args, inner):
    said = pytester.path / "clocks.txt"
    said.write_text("")
    result = inner("-q", "-p", "no:randomly", *args)
    return result, said.read_text().split()


def test_the_marker_and_the_option_choose_and_a_failure_undoes_the_clock(inner, pytester):
    pytester.makepyfile(test_inner=INNER)
    result, clocks = _clocks(pytester, inner=inner)
    result.assert_outcomes(passed=4, failed=1)
    assert "failing on purpose" in result.stdout.str()
    assert clocks == ["off", "on", "off"]  # the marker; the default; time_scale > 0
    assert _clocks(pytester, "--umi-clock=on", "-k", "not failing", inner=inner)[1] == ["off", "on", "on"]
    assert _clocks(pytester, "--umi-clock=off", "-k", "not failing", inner=inner)[1] == ["off", "off", "off"]


def test_a_bad_clock_setting_is_a_usage_error(inner, pytester, monkeypatch):
    pytester.makepyfile(test_inner=INNER)
    result = inner("-q", "--umi-clock=maybe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--umi-clock='maybe': give on or off*"])
    monkeypatch.setenv("UMI_CLOCK", "sometimes")
    result = inner("-q")
    result.stderr.fnmatch_lines(["*UMI_CLOCK='sometimes': give on or off*"])
    monkeypatch.delenv("UMI_CLOCK")
    pytester.makepyfile(test_inner="import pytest\n@pytest.mark.umi(clock='yes')\ndef test_x(umi):\n    pass\n")
    result = inner("-q")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*test_inner.py::test_x: clock: 'yes'; give True or False*"])
