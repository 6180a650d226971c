"""Requests in flight to `dst serve`: what keeps the simulated clock from jumping.

A request is IN FLIGHT from the moment the httpx hook sends it until its response head
is read, and again each time the agent waits for the next bytes of its body
(`clock_httpx.py`). While any request is in flight the clock never fast-forwards (SCHEMA
section 1, rule 2): the server's bytes come over a real socket, in real time, and a
timer that fired meanwhile (httpx's own read timeout, an agent's deadline) would fire
before they arrive. So the event loop waits for real I/O instead (`clock_loop.py`), and
each flight is bounded by `REAL_WAIT_SECS_MAX` seconds of REAL time: past it, the
flight's task is cancelled and the hook raises `RealWaitExceeded`, naming the server and
the request (a server that hangs is a broken harness, not a timeout the agent should
see).

A request to any OTHER host is in flight the same way (no header, no timing: its
answer takes no simulated time), and so is a `real_wait()` block: a subprocess, a
thread of the agent's own, anything the loop cannot see. Their cap is the same, and
their error names the host or the wait instead of `dst serve`.
"""

import asyncio
import itertools
import threading

from .clock import ClockError, real_monotonic

# How long one request may wait for the server's bytes in real time.
REAL_WAIT_SECS_MAX = 60.0
# The most requests in flight at once (a runaway agent is stopped, named).
IN_FLIGHT_MAX = 1_000
# The real-time poll while only a flight without a task (a sync client on another thread)
# is past its cap: its socket timeout ends it.
REAL_POLL_SECS = 0.05
# Who sends the bytes of a request to another host, and what a `real_wait()` is.
OTHER_HOST = "the host"
REAL_WAIT = "the real wait"
# Who sends a covered request's bytes (`Flight.who`).
SERVER = "dst serve"


class RealWaitExceeded(ClockError):
    """`dst serve` sent no bytes for a request in flight within `REAL_WAIT_SECS_MAX` real
    seconds."""


class Flight:
    """One request in flight: `what` names it (`POST http://127.0.0.1:PORT/...`), `who`
    is what sends its bytes (`dst serve`, `the host`, `the real wait`)."""

    def __init__(self, what, task, who=SERVER):
        self.what = what
        self.task = task
        self.who = who
        self.started_s = real_monotonic()
        self.expired = False

    def overdue_s(self, now_s):
        return now_s - self.started_s - REAL_WAIT_SECS_MAX

    def exceeded(self):
        said = "sent nothing" if self.who != REAL_WAIT else "did not end"
        return RealWaitExceeded(f"{self.what}: {self.who} {said} for {REAL_WAIT_SECS_MAX:.0f} s of real "
                                f"time (REAL_WAIT_SECS_MAX) while the simulated clock waited for it")


def _current_task():
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop: a sync client
        return None


class Flights:
    """The requests in flight now, from any thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._open = {}
        self._ids = itertools.count()

    def count(self):
        with self._lock:
            return len(self._open)

    def begin(self, what, who=SERVER):
        flight = Flight(what, _current_task(), who)
        with self._lock:
            if len(self._open) >= IN_FLIGHT_MAX:
                raise ClockError(f"{what}: {IN_FLIGHT_MAX} requests already in flight (IN_FLIGHT_MAX)")
            flight.key = next(self._ids)
            self._open[flight.key] = flight
        return flight

    def real_wait(self, what):
        return RealWait(self, what)

    def end(self, flight):
        with self._lock:
            self._open.pop(flight.key, None)

    def real_wait_s(self):
        """How long the loop may wait for real I/O before a flight is past its cap (0 or
        more), or None when nothing is in flight."""
        with self._lock:
            flights = list(self._open.values())
        if not flights:
            return None
        now_s = real_monotonic()
        left = [-flight.overdue_s(now_s) for flight in flights if not flight.expired]
        if not left:
            return REAL_POLL_SECS
        return max(0.0, min(left))

    def expire_overdue(self):
        """Cancels the task of every flight past its cap (once); returns those flights."""
        now_s = real_monotonic()
        with self._lock:
            overdue = [flight for flight in self._open.values()
                       if not flight.expired and flight.overdue_s(now_s) >= 0]
            for flight in overdue:
                flight.expired = True
        for flight in overdue:
            if flight.task is not None:
                flight.task.cancel(flight.what)
        return overdue


def raise_if_expired(flight):
    """A flight cancelled for passing its real-time cap raises `RealWaitExceeded` (in
    place of the `CancelledError` its task got)."""
    if flight.expired:
        task = _current_task()
        if task is not None:
            task.uncancel()
        raise flight.exceeded() from None


class RealWait:
    """`with clock.real_wait("..."):` or `async with ...`: the clock stands still while
    the block runs, as for a request in flight (a subprocess, a thread the loop does not
    know, any real wait); past `REAL_WAIT_SECS_MAX` real seconds its task is cancelled
    and the block raises `RealWaitExceeded`, naming `what`."""

    def __init__(self, flights, what):
        self.flights = flights
        self.what = what
        self.flight = None

    def __enter__(self):
        self.flight = self.flights.begin(self.what, REAL_WAIT)
        return self

    def __exit__(self, kind, _error, _traceback):
        self.flights.end(self.flight)
        if kind is not None and issubclass(kind, asyncio.CancelledError):
            raise_if_expired(self.flight)
        return False

    async def __aenter__(self):
        return self.__enter__()

    async def __aexit__(self, kind, error, traceback):
        return self.__exit__(kind, error, traceback)
