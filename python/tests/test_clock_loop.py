"""The simulated clock's event loop and httpx hook, against a stand-in server
(`timed_server.py`) whose answers arrive after a chosen REAL delay and say a chosen
SIMULATED timing: the loop fast-forwards when idle, never while a request is in flight,
and concurrent responses resume in simulated order, not in real arrival order. Every
assertion is on the simulated clock; real durations are printed, never asserted.
"""

import asyncio
import sys

import anyio
import anyio.to_thread
import httpx
import pytest

from timed_server import TimedServer
from umi_dst import clock_flights, clock_httpx
from umi_dst.clock import real_monotonic, real_sleep
from umi_dst.clock_loop import LoopBeforeClock, SimEventLoop
from umi_dst.clock_on import on_clock


@pytest.fixture
def server():
    served = TimedServer()
    yield served
    served.stop()


def test_an_idle_loop_jumps_to_its_next_timer(capsys):
    started = real_monotonic()
    with on_clock() as clock:
        async def main():
            loop = asyncio.get_running_loop()
            assert isinstance(loop, SimEventLoop)
            await asyncio.sleep(3600)
            return loop.time()

        assert asyncio.run(main()) == 3600.0
        assert clock.now_us == 3600 * 1_000_000
        assert clock.sleeps_us() == [3600 * 1_000_000]
    with capsys.disabled():
        print(f"\nan hour of asyncio.sleep: {real_monotonic() - started:.3f} s of wall time")


def test_timers_fire_in_order_at_their_microsecond():
    with on_clock() as clock:
        async def main():
            loop = asyncio.get_running_loop()
            fired = []

            async def sleeper(name, seconds):
                await asyncio.sleep(seconds)
                fired.append((name, clock.now_us, loop.time()))

            await asyncio.gather(sleeper("a", 30), sleeper("b", 0.1 + 0.2), sleeper("c", 10))
            return fired

        assert asyncio.run(main()) == [("b", 300_000, 0.3), ("c", 10_000_000, 10.0), ("a", 30_000_000, 30.0)]


def test_a_deadline_fires_at_exactly_its_time():
    with on_clock() as clock:
        async def main():
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(10):
                    await asyncio.sleep(100)
            return clock.now_us

        assert asyncio.run(main()) == 10_000_000


def test_the_clock_never_jumps_while_a_request_is_in_flight(server):
    """The answer takes 0.3 s of real time and says 50 ms of simulated time; a sleeper
    of 1 s and a 0.1 s deadline (and httpx's own 0.01 s read timeout) wait meanwhile.
    A loop that jumped while the request was in flight would fire them first."""
    with on_clock(servers=[server.url]) as clock:
        async def main():
            woke = []

            async def sleeper():
                await asyncio.sleep(1)
                woke.append(clock.now_us)

            sleeping = asyncio.create_task(sleeper())
            async with httpx.AsyncClient(timeout=0.01) as client:
                async with asyncio.timeout(0.1):
                    response = await client.get(server.at(delay_s=0.3, head_us=50_000, body="ok"))
            answered_at = clock.now_us
            await sleeping
            return response.text, answered_at, woke

        assert asyncio.run(main()) == ("ok", 50_000, [1_000_000])
    assert server.seen == [(None, "0")]


def test_concurrent_responses_resume_in_simulated_order(server):
    """`slow` arrives 0.3 s later in real time but 1 s earlier in simulated time: it
    resumes first."""
    with on_clock(servers=[server.url]) as clock:
        async def main():
            resumed = []

            async def get(client, name, **query):
                response = await client.get(server.at(name=name, **query))
                resumed.append((name, clock.now_us, response.text))

            async with httpx.AsyncClient() as client:
                await asyncio.gather(get(client, "fast", delay_s=0, head_us=2_000_000, body="f"),
                                     get(client, "slow", delay_s=0.3, head_us=1_000_000, body="s"))
            return resumed

        assert asyncio.run(main()) == [("slow", 1_000_000, "s"), ("fast", 2_000_000, "f")]


def test_the_body_takes_its_simulated_time(server):
    with on_clock(servers=[server.url]) as clock:
        async def main():
            async with httpx.AsyncClient() as client:
                async with client.stream("GET", server.at(head_us=1_000, first_us=3_000, last_us=9_000,
                                                          body="x" * 100)) as response:
                    assert clock.now_us == 1_000
                    async for _piece in response.aiter_raw():
                        pass
                    return clock.now_us

        assert asyncio.run(main()) == 9_000
        # sync: the same times, the clock simply moves
        with httpx.Client() as client:
            started = clock.now_us
            assert client.get(server.at(head_us=1_000, last_us=4_000, body="y")).text == "y"
            assert clock.now_us == started + 4_000
    assert server.seen[-1] == (None, str(started))


def test_a_stall_is_the_client_read_timeout_on_the_clock(server):
    with on_clock(servers=[server.url]) as clock:
        async def stalled(read_s, deadline_s):
            async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=read_s)) as client:
                start = clock.now_us
                try:
                    async with asyncio.timeout(deadline_s):
                        await client.get(server.at(head_us=500_000, last_us=700_000, end_us=600_700_000,
                                                   ending="stall", body="partial"))
                except (httpx.ReadTimeout, TimeoutError) as error:
                    return type(error).__name__, clock.now_us - start

        # httpx's read timeout: 5 s after the last byte
        assert asyncio.run(stalled(5, 60)) == ("ReadTimeout", 5_700_000)
        # the agent's 2 s deadline first
        assert asyncio.run(stalled(5, 2)) == ("TimeoutError", 2_000_000)
        with httpx.Client(timeout=httpx.Timeout(30, read=7)) as client:
            start = clock.now_us
            with pytest.raises(httpx.ReadTimeout):
                client.get(server.at(head_us=500_000, last_us=700_000, ending="stall", body="p"))
            assert clock.now_us - start == 7_700_000


def test_a_reset_raises_what_httpx_raises_at_its_time(server):
    with on_clock(servers=[server.url]) as clock:
        with httpx.Client() as client:
            with pytest.raises(httpx.RemoteProtocolError):
                client.get(server.at(head_us=100, last_us=200, end_us=900, ending="reset", body="p"))
            assert clock.now_us == 900


def test_no_response_never_reaches_the_client(server):
    with on_clock(servers=[server.url]) as clock:
        with httpx.Client(timeout=httpx.Timeout(30, read=12)) as client:
            with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
                client.get(server.at(no_response="reset", end_us=250_000))
            assert clock.now_us == 250_000
            with pytest.raises(httpx.ReadTimeout):
                client.get(server.at(no_response="stall", end_us=600_000_000))
            assert clock.now_us == 250_000 + 12_000_000


def test_a_sync_request_to_another_host_gets_no_header_and_no_time(server):
    with on_clock(servers=["http://127.0.0.1:1"]) as clock:
        with httpx.Client() as client:
            assert client.get(server.at(head_us=5_000_000, body="z")).text == "z"
        assert clock.now_us == 0
    assert server.seen == [(None, None)]


def test_a_request_past_the_real_cap_is_named(server, monkeypatch):
    monkeypatch.setattr(clock_flights, "REAL_WAIT_SECS_MAX", 0.2)
    monkeypatch.setattr(clock_httpx, "REAL_WAIT_SECS_MAX", 0.2)
    with on_clock(servers=[server.url]):
        async def main():
            async with httpx.AsyncClient() as client:
                await client.get(server.at(delay_s=1.5, body="late"))

        with pytest.raises(clock_flights.RealWaitExceeded, match=r"GET http://127\.0\.0\.1:\d+/\?delay_s=1\.5"):
            asyncio.run(main())
        with httpx.Client() as client:
            with pytest.raises(clock_flights.RealWaitExceeded, match="REAL_WAIT_SECS_MAX"):
                client.get(server.at(delay_s=1.5, body="late"))


def test_the_clock_waits_for_an_executor_thread():
    """A thread the loop waits on (`run_in_executor`: `asyncio.to_thread`, getaddrinfo)
    takes real time; the clock does not jump past it to a later timer."""
    with on_clock() as clock:
        async def main():
            loop = asyncio.get_running_loop()
            order = []

            async def sleeper():
                await asyncio.sleep(1)
                order.append(("sleeper", clock.now_us))

            sleeping = asyncio.create_task(sleeper())
            await loop.run_in_executor(None, real_sleep, 0.2)
            order.append(("thread", clock.now_us))
            await sleeping
            return order

        assert asyncio.run(main()) == [("thread", 0), ("sleeper", 1_000_000)]


def test_an_async_request_to_another_host_holds_the_clock(server):
    """Another host answers after 0.3 s of real time; the client's 0.1 s timeout and a 1 s
    sleeper wait meanwhile. The request takes no simulated time and carries no header,
    and nothing fires early (before, the loop jumped: httpx's ReadTimeout at once)."""
    with on_clock(servers=["http://127.0.0.1:1"]) as clock:
        async def main():
            woke = []

            async def sleeper():
                await asyncio.sleep(1)
                woke.append(clock.now_us)

            sleeping = asyncio.create_task(sleeper())
            started = real_monotonic()
            async with httpx.AsyncClient(timeout=0.1) as client:
                response = await client.get(server.at(delay_s=0.3, head_us=5_000_000, body="far"))
            print(f"\nanother host, 0.3 s real delay: {real_monotonic() - started:.3f} s of wall time")
            answered_at = clock.now_us
            await sleeping
            return response.text, answered_at, woke

        assert asyncio.run(main()) == ("far", 0, [1_000_000])
    assert server.seen == [(None, None)]


def test_the_clock_waits_for_an_anyio_worker_thread():
    """`anyio.to_thread.run_sync` (pydantic-ai's sync tools) is not `run_in_executor`; a
    30 s deadline around a 0.3 s real thread must not fire (before: the clock jumped to
    it, or not, depending on how fast the thread was)."""
    with on_clock() as clock:
        async def main():
            with anyio.fail_after(30):
                await anyio.to_thread.run_sync(real_sleep, 0.3)
            return clock.now_us

        assert asyncio.run(main()) == 0


def test_a_real_wait_holds_the_clock_for_a_subprocess():
    """A child that takes 0.3 s of real time, awaited with a 30 s timeout inside
    `clock.real_wait()` (`async with`, and plain `with` around an await)."""
    with on_clock() as clock:
        async def child():
            return await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(0.3)")

        async def main():
            proc = await child()
            async with clock.real_wait("the child"):
                assert await asyncio.wait_for(proc.wait(), 30) == 0
            proc = await child()
            with clock.real_wait("the child again"):
                assert await asyncio.wait_for(proc.wait(), 30) == 0
            return clock.now_us

        assert asyncio.run(main()) == 0


def test_a_real_wait_past_the_real_cap_is_named(monkeypatch):
    monkeypatch.setattr(clock_flights, "REAL_WAIT_SECS_MAX", 0.2)
    with on_clock() as clock:
        async def main():
            async with clock.real_wait("the MCP server's exit"):
                await asyncio.Event().wait()

        with pytest.raises(clock_flights.RealWaitExceeded, match="the MCP server's exit: the real wait did not end"):
            asyncio.run(main())


def test_a_loop_made_before_the_clock_is_named(server):
    """A loop created before the clock started has a frozen time; a request to the server
    from it is refused, named, before it is sent (before: it went through, and a hung
    server would have hung the test)."""
    loop = asyncio.new_event_loop()
    try:
        with on_clock(servers=[server.url]):
            async def main():
                async with httpx.AsyncClient() as client:
                    await client.get(server.at(head_us=1_000, body="x"))

            with pytest.raises(LoopBeforeClock, match=r"GET http://127\.0\.0\.1:\d+/.*created before the simulated clock"):
                loop.run_until_complete(main())
    finally:
        loop.close()
    assert server.seen == []
