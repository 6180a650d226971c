"""The agent's clock: one simulated clock per test run, shared with `dst serve`.

An integer number of MICROSECONDS since Umi's simulated epoch, 2024-01-01T00:00:00Z
(`umi_dst::constants::SIM_EPOCH_UNIX_MS_DEFAULT`, where the Rust simulations' wall clock
starts too). It starts at 0 and moves only when the agent waits (a sleep, a timer, a
timeout) or when a response from `dst serve` says simulated time passed
(`clock_httpx.py`). Everything the agent reads as time reads it while it runs:

* the wall clock (`time.time`, `time.time_ns`, `datetime.now`, `datetime.utcnow`,
  `time.gmtime`, `time.localtime`, `time.strftime`, `clock_gettime(CLOCK_REALTIME)`) is
  faked by `time-machine` (`time_machine.travel(..., tick=False)`, moved with
  `Traveller.shift`): it swaps the C functions themselves, so even names bound with
  `from time import time` read the simulated clock;
* time-machine (3.6) leaves the monotonic clocks and `time.sleep` alone: its C module
  swaps only the wall-clock functions above (its `escape_hatch` lists them), and under
  `travel(tick=False)` `time.monotonic()`, `time.perf_counter()` and
  `clock_gettime(CLOCK_MONOTONIC)` keep running (python/tests/test_clock_unit.py checks
  it). Those few are patched here, as attributes of the `time` module, so
  `time.monotonic()` (httpcore's keep-alive expiry, tenacity, an agent's own deadline) and
  `time.sleep()` (the openai and anthropic SDKs' retry backoff) are simulated; a name
  bound earlier with `from time import monotonic` keeps the real clock (the standard
  library's `threading`, `queue` and `subprocess` do that, which keeps their waits real);
* asyncio's loop time and its sleeps and timers: `clock_loop.SimEventLoop`. Its clock
  stands still while a request (to any host), an executor or anyio worker thread, or a
  `real_wait()` block is pending; any other real wait it cannot see (a subprocess, a
  thread of the agent's own) goes in `with clock.real_wait(...)`.

`time.sleep` on the thread that started the clock moves the clock and returns at once;
on any other thread it sleeps for real (a helper thread polling in a loop would otherwise
race the clock forward). `random` is seeded with the run's seed while the clock runs
(the SDKs' backoff jitter), and its state is restored after.
"""

import dataclasses
import datetime
import random
import threading
import time

import time_machine

# `umi_dst::constants::SIM_EPOCH_UNIX_MS_DEFAULT`: 2024-01-01T00:00:00Z.
SIM_EPOCH_UNIX_MS = 1_704_067_200_000
SIM_EPOCH_UNIX_US = SIM_EPOCH_UNIX_MS * 1_000
US_PER_SEC = 1_000_000
SIM_EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
# The most waits a clock keeps for `waits` (a run that waits more keeps counting them).
WAITS_KEPT_MAX = 10_000

# The real clocks, bound before any clock patches them: the plugin's own waits (starting
# `dst serve`, the real-time cap on a request in flight) use these.
real_monotonic = time.monotonic
real_sleep = time.sleep
real_perf_counter = time.perf_counter

# The functions patched here, beside time-machine's (see the module doc).
_PATCHED = ("monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "sleep")


class ClockError(RuntimeError):
    """The simulated clock was used wrongly (two at once, moved backwards, restarted
    while a request was in flight)."""


@dataclasses.dataclass(frozen=True)
class Wait:
    """One move of the clock: from `at_us` to `until_us`, and why: `sleep` (time.sleep),
    `timer` (the event loop jumped to its next timer), `response` (a response from
    `dst serve` said simulated time passed)."""

    at_us: int
    until_us: int
    why: str

    @property
    def by_us(self):
        return self.until_us - self.at_us


def seconds_to_us(seconds, what="a wait"):
    """`seconds` (int or float) as whole microseconds, the nearest; `ValueError` naming
    `what` for a negative or non-finite value."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{what}: {seconds!r} is not a number of seconds")
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        raise ValueError(f"{what}: {seconds!r} seconds is not finite")
    if seconds < 0:
        raise ValueError(f"{what}: {seconds!r} seconds is negative")
    return round(seconds * US_PER_SEC)


_active = None  # the running SimClock (one at a time: time itself is process-wide)
_active_lock = threading.Lock()


def active():
    """The clock that is running, or None."""
    return _active


class SimClock:
    """One run's simulated clock. `start()` puts the process on it, `stop()` takes it off
    (always call it: the plugin does, even when the test fails). `seed` seeds `random`
    while it runs; `servers` are the `dst serve` base URLs whose requests carry the clock
    (`covers`)."""

    def __init__(self, seed=None, servers=(), start_us=0):
        if isinstance(start_us, bool) or not isinstance(start_us, int) or start_us < 0:
            raise ValueError(f"start_us: {start_us!r}; a whole number of microseconds, 0 or more")
        self.seed = seed
        self.start_us = start_us
        self._now_us = start_us
        self._lock = threading.RLock()
        self.waits = []
        self.waits_left_out = 0
        self._origins = set()
        for url in servers:
            self.cover(url)
        self._traveller = None
        self._travel = None
        self._saved = {}
        self._random_state = None
        self._owner = None
        self.flights = None  # clock_flights.Flights: clock_on.start sets it
        self.saved_policy = None  # the event loop policy clock_on.start replaced

    def __repr__(self):
        return f"SimClock(now_us={self._now_us}, running={self.running})"

    # -- reading ---------------------------------------------------------------------

    @property
    def now_us(self):
        """Microseconds since the simulated epoch."""
        return self._now_us

    @property
    def elapsed_us(self):
        """Microseconds since the clock started (or was restarted)."""
        return self._now_us - self.start_us

    def now(self):
        """The simulated wall clock as an aware UTC `datetime`."""
        return SIM_EPOCH + datetime.timedelta(microseconds=self._now_us)

    def unix_us(self):
        """The simulated wall clock in microseconds since the Unix epoch."""
        return SIM_EPOCH_UNIX_US + self._now_us

    def sleeps_us(self):
        """What the agent slept: each `time.sleep` and each jump of the event loop to its
        next timer, in microseconds, in order."""
        return [wait.by_us for wait in self.waits if wait.why in ("sleep", "timer")]

    @property
    def running(self):
        return self._traveller is not None

    # -- the servers -----------------------------------------------------------------

    def cover(self, url):
        """Requests to `url`'s origin (scheme, host, port) carry this clock."""
        self._origins.add(_origin(url))

    def covers(self, url):
        """Whether a request to `url` (an httpx URL or text) is one of the servers'."""
        return _origin(url) in self._origins

    # -- real waits ------------------------------------------------------------------

    def real_wait(self, what="a real wait"):
        """A context manager (`with` or `async with`) that holds the clock still while
        its block waits for something real the event loop cannot see: a subprocess (an
        MCP stdio server), a thread of the agent's own, a queue fed from outside.
        `what` names it in the error past `REAL_WAIT_SECS_MAX` real seconds
        (`clock_flights.RealWait`)."""
        if self.flights is None:
            raise ClockError(f"real_wait({what!r}): this clock was not started by clock_on.start "
                             f"(it has no in-flight registry)")
        return self.flights.real_wait(what)

    # -- moving ----------------------------------------------------------------------

    def advance_to(self, until_us, why):
        """Moves the clock forward to `until_us` (never backwards: a target already
        passed leaves it where it is). Returns the microseconds it moved."""
        with self._lock:
            by_us = until_us - self._now_us
            if by_us <= 0:
                return 0
            self._record(Wait(self._now_us, until_us, why))
            self._now_us = until_us
            if self._traveller is not None:
                self._traveller.shift(datetime.timedelta(microseconds=by_us))
            return by_us

    def advance_by(self, by_us, why):
        with self._lock:
            return self.advance_to(self._now_us + by_us, why)

    def _record(self, wait):
        if len(self.waits) < WAITS_KEPT_MAX:
            self.waits.append(wait)
        else:
            self.waits_left_out += 1

    # -- the process on the clock ----------------------------------------------------

    def start(self):
        """Puts the process's time on this clock: time-machine for the wall clock, the
        monotonic clocks and `time.sleep` here, `random` seeded. (`clock_on.start` does
        this and the rest: the httpx hooks, the event loop policy.)"""
        global _active
        with _active_lock:
            if _active is not None:
                raise ClockError(f"a simulated clock is already running ({_active!r}); one at a time")
            _active = self
        try:
            self._owner = threading.get_ident()
            self._travel = time_machine.travel(self.now(), tick=False)
            self._traveller = self._travel.start()
            self._patch()
            self._random_state = random.getstate()
            if self.seed is not None:
                random.seed(self.seed)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """Takes the process off the clock (idempotent): every patch undone, `random`'s
        state restored."""
        global _active
        for name, original in self._saved.items():
            setattr(time, name, original)
        self._saved = {}
        if self._random_state is not None:
            random.setstate(self._random_state)
            self._random_state = None
        if self._travel is not None:
            self._travel.stop()
        self._travel = self._traveller = None
        with _active_lock:
            if _active is self:
                _active = None

    def restart(self):
        """The same test again from the start: the clock back to where it started and
        `random` reseeded, for a second run that must match the first. Refused while a
        request is in flight."""
        with self._lock:
            if self.flights is not None and self.flights.count():
                raise ClockError(f"restart with {self.flights.count()} request(s) in flight")
            if self._traveller is not None:
                self._traveller.shift(datetime.timedelta(microseconds=self.start_us - self._now_us))
            self._now_us = self.start_us
            self.waits = []
            self.waits_left_out = 0
            if self.seed is not None and self.running:
                random.seed(self.seed)


    def _patch(self):
        fakes = {
            "monotonic": lambda: self._now_us / US_PER_SEC,
            "monotonic_ns": lambda: self._now_us * 1_000,
            "perf_counter": lambda: self._now_us / US_PER_SEC,
            "perf_counter_ns": lambda: self._now_us * 1_000,
            "sleep": self._sleep,
        }
        for name in _PATCHED:
            self._saved[name] = getattr(time, name)
            setattr(time, name, fakes[name])

    def _sleep(self, seconds):
        """`time.sleep` on the clock: on the thread that started it, the clock moves and
        the call returns; on any other thread, a real sleep."""
        if threading.get_ident() != self._owner:
            return real_sleep(seconds)
        self.advance_by(seconds_to_us(seconds, "time.sleep"), "sleep")
        real_sleep(0)  # let other threads run, as a sleep would
        return None


def _origin(url):
    """(scheme, host, port) of an httpx/httpx2 URL or of URL text."""
    import urllib.parse

    if not isinstance(url, str):
        scheme, host, port = url.scheme, url.host, url.port
    else:
        parts = urllib.parse.urlsplit(url)
        scheme, host, port = parts.scheme, parts.hostname or "", parts.port
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme)
    return scheme, (host or "").lower(), port
