"""asyncio on the simulated clock: an event loop whose time is the run's clock.

`SimEventLoop` is an `asyncio.SelectorEventLoop` whose `time()` is the `SimClock` (so
`asyncio.sleep`, `asyncio.timeout`, `loop.call_later`, anyio's `sleep` and `fail_after`
all run on it), and whose selector wait fast-forwards the clock to the next timer, but
only when nothing can happen from outside:

1. I/O that is ready is handled first (a poll with no wait).
2. While a request is in flight (`clock_flights.py`: to `dst serve` or any other host,
   or a `clock.real_wait()` block), or a thread started with `run_in_executor`
   (`getaddrinfo`, `asyncio.to_thread`) or anyio's `to_thread.run_sync` (pydantic-ai's
   sync tools, mcp) is still running, the loop waits for real I/O in real time and the
   clock stands still (SCHEMA section 1, rule 2); a flight past `REAL_WAIT_SECS_MAX` is
   cancelled, named. A real wait the loop cannot see (a subprocess's exit, a thread of
   the agent's own) counts as idle: it goes in `with clock.real_wait(...)`.
3. With no timer at all, it waits for the outside world like any loop.
4. Otherwise, after `NOOP_CYCLES` polls that found nothing (ready tasks get their turn to
   schedule what they were about to: an `async with timeout(2)` around a `sleep(1)`), the
   clock jumps to the next timer (rule 4).

Why not `looptime` (nolar/looptime, the library the issue names): it keeps the loop's time
in its own private counter (`LoopTimeEventLoop.__now`), not shared with `time.time()` or
time-machine, and its `select` moves that counter to the next timer after 42 no-op
cycles whatever sockets are open (`looptime/_internal/loops.py`, the last `else` of
`__replaced_select`): with a request in flight, httpx's read timeout (an anyio
`fail_after` on the loop's time) would fire before `dst serve`'s bytes arrive. Both are
what this loop must not do; its no-op cycles before a jump are looptime's idea, and its
count.

`SimEventLoopPolicy` makes `asyncio.run`, `asyncio.Runner` and anyio's runner create
this loop while the clock runs (`install_policy`; undone by `uninstall_policy`), and
`install_anyio` makes anyio's worker threads count as threads the loop waits on. A loop
created BEFORE the clock started is not one of these: its `time()` reads the patched
`time.monotonic`, which stands still, so nothing there ever comes due; a request to
`dst serve` from it raises `LoopBeforeClock` (`check_loop`) instead of hanging.
"""

import asyncio
import functools
import weakref

from . import clock as umi_clock

class LoopBeforeClock(umi_clock.ClockError):
    """An async request to `dst serve` ran on an event loop that is not the clock's."""


# Polls that found nothing before the clock jumps to the next timer (looptime's default).
NOOP_CYCLES = 42


class SimEventLoop(asyncio.SelectorEventLoop):
    """A selector event loop on `clock` (a running `SimClock`)."""

    def __init__(self, clock, selector=None):
        super().__init__(selector)
        self.sim_clock = clock
        # Timers are rounded to the clock's microsecond: a handle within half a
        # microsecond of now is due (asyncio compares `when < time() + resolution`).
        self._clock_resolution = 0.5e-6
        self._noop_cycles = 0
        self._executor_futures = weakref.WeakSet()
        self.worker_threads = 0  # anyio worker threads running for this loop
        self._real_select = self._selector.select
        self._selector.select = self._sim_select

    def time(self):
        return self.sim_clock.now_us / umi_clock.US_PER_SEC

    def run_in_executor(self, executor, func, *args):
        future = super().run_in_executor(executor, func, *args)
        self._executor_futures.add(future)
        return future

    def _threads_running(self):
        return self.worker_threads > 0 or any(not future.done() for future in self._executor_futures)

    def _sim_select(self, timeout):
        ready = self._real_select(0)
        if ready or timeout == 0:
            self._noop_cycles = 0
            return ready
        flights = self.sim_clock.flights
        real_wait_s = flights.real_wait_s() if flights is not None else None
        if real_wait_s is not None:
            # Rule 2: a request is in flight; the clock stands still, real I/O is awaited.
            self._noop_cycles = 0
            ready = self._real_select(real_wait_s)
            if not ready:
                flights.expire_overdue()
            return ready
        if self._threads_running() or timeout is None:
            # A thread's result (or the outside world) wakes the loop through its self-pipe.
            self._noop_cycles = 0
            return self._real_select(None)
        if self._noop_cycles < NOOP_CYCLES:
            self._noop_cycles += 1
            return []
        self._noop_cycles = 0
        self._jump()
        return []

    def _jump(self):
        """Moves the clock to the next timer's time (in whole microseconds, never less
        than one: a timer always gets due)."""
        clock = self.sim_clock
        scheduled = getattr(self, "_scheduled", None)  # CPython's heap of TimerHandles
        if not scheduled:
            return
        head = scheduled[0]
        until_us = round(head.when() * umi_clock.US_PER_SEC)
        # A wait for a response's timing (`sleep_until_us`) is not a sleep of the agent's.
        why = "response" if head._callback is _set_done else "timer"
        clock.advance_to(max(until_us, clock.now_us + 1), why)

    async def sleep_until_us(self, until_us):
        """Waits on the loop until the clock reads `until_us` (at once when it is past)."""
        if until_us <= self.sim_clock.now_us:
            return
        future = self.create_future()
        handle = self.call_at(until_us / umi_clock.US_PER_SEC, _set_done, future)
        try:
            await future
        finally:
            handle.cancel()


def _set_done(future):
    if not future.done():
        future.set_result(None)


class SimEventLoopPolicy(asyncio.DefaultEventLoopPolicy):
    """The default policy, whose new loops are `SimEventLoop`s on `clock`."""

    def __init__(self, clock):
        super().__init__()
        self.sim_clock = clock

    def new_event_loop(self):
        return SimEventLoop(self.sim_clock)


def install_policy(clock):
    """Makes new event loops run on `clock`; returns the policy it replaced."""
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(SimEventLoopPolicy(clock))
    return previous


def uninstall_policy(previous):
    asyncio.set_event_loop_policy(previous)


def check_loop(clock, what):
    """The running loop, when it is a `SimEventLoop` on `clock`; else `LoopBeforeClock`
    naming `what` (its timers would never come due, and its real waits have no cap)."""
    loop = asyncio.get_running_loop()
    if isinstance(loop, SimEventLoop) and loop.sim_clock is clock:
        return loop
    raise LoopBeforeClock(f"{what}: this event loop ({type(loop).__name__}) was created before the simulated clock "
                          f"started, so its time stands still and its timers never come due; create the loop "
                          f"inside the test (asyncio.run, or a fixture that runs after `umi`), or use "
                          f"@pytest.mark.umi(clock=False)")


async def wait_until_us(clock, until_us, what="a response"):
    """The agent's task waits until the clock reads `until_us`: a sleep on the simulated
    loop (so concurrent waits end in simulated order); `LoopBeforeClock` on any other."""
    await check_loop(clock, what).sleep_until_us(until_us)


_anyio_saved = {}  # "run_sync_in_worker_thread" -> anyio's own classmethod


def install_anyio():
    """Counts anyio's worker threads (`anyio.to_thread.run_sync`, on asyncio) on the
    running `SimEventLoop` while they run (idempotent; nothing when anyio is absent)."""
    try:
        from anyio._backends._asyncio import AsyncIOBackend
    except ImportError:
        return
    name = "run_sync_in_worker_thread"
    if name in _anyio_saved:
        return
    original = AsyncIOBackend.__dict__[name]
    _anyio_saved[name] = original

    @functools.wraps(original.__func__)
    async def counted(cls, *args, **kwargs):
        loop = asyncio.get_running_loop()
        if not isinstance(loop, SimEventLoop):
            return await original.__func__(cls, *args, **kwargs)
        loop.worker_threads += 1
        try:
            return await original.__func__(cls, *args, **kwargs)
        finally:
            loop.worker_threads -= 1

    AsyncIOBackend.run_sync_in_worker_thread = classmethod(counted)


def uninstall_anyio():
    if not _anyio_saved:
        return
    from anyio._backends._asyncio import AsyncIOBackend

    for name, original in list(_anyio_saved.items()):
        setattr(AsyncIOBackend, name, original)
        del _anyio_saved[name]
