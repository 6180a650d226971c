"""Putting a run on the simulated clock, and taking it off: every piece together.

`start(seed, servers)` starts a `SimClock` (the wall clock through time-machine, the
monotonic clocks and `time.sleep`, `random` seeded), gives it its in-flight registry,
wraps httpx's transports (`clock_httpx.py`), counts anyio's worker threads and makes new asyncio loops `SimEventLoop`s
(`clock_loop.py`); `stop(clock)` undoes all of it, whatever state the run left. The
pytest plugin does both around each test on the clock; `on_clock(...)` is the same as a
context manager, for a script:

    with on_clock(seed=7, servers=[server.url]) as clock:
        agent.run()            # its sleeps, timeouts and retries take no real time
    print(clock.elapsed_us)
"""

import contextlib

from . import clock_httpx, clock_loop
from .clock import SimClock
from .clock_flights import Flights


def start(seed=None, servers=(), start_us=0):
    """A running `SimClock` with everything hooked; stop it with `stop`."""
    clock = SimClock(seed=seed, servers=servers, start_us=start_us)
    clock.flights = Flights()
    clock.start()
    try:
        clock_httpx.install()
        clock_loop.install_anyio()
        clock.saved_policy = clock_loop.install_policy(clock)
    except BaseException:
        stop(clock)
        raise
    return clock


def stop(clock):
    """Takes the process off `clock` (idempotent)."""
    try:
        clock_httpx.uninstall()
        clock_loop.uninstall_anyio()
        saved = getattr(clock, "saved_policy", None)
        if saved is not None:
            clock_loop.uninstall_policy(saved)
            clock.saved_policy = None
    finally:
        clock.stop()


@contextlib.contextmanager
def on_clock(seed=None, servers=(), start_us=0):
    clock = start(seed=seed, servers=servers, start_us=start_us)
    try:
        yield clock
    finally:
        stop(clock)
