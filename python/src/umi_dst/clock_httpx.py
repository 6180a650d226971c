"""The httpx hook: requests to `dst serve` carry the agent's clock, and its answers take
the simulated time the server says they took (SCHEMA section 1, "What the client does").

openai, anthropic, google-genai, ollama, pydantic-ai, the OpenAI Agents SDK and mcp all
send through httpx's default transports (the openai and anthropic SDKs through `httpx2`,
httpx's successor with the same API): `HTTPTransport.handle_request` and
`AsyncHTTPTransport.handle_async_request` are wrapped, in whichever of `httpx` and
`httpx2` is installed, while a clock runs. A request whose origin is not one of the
clock's servers gets no header and takes no simulated time, but it is IN FLIGHT until its
head is read and while each next piece of its body is awaited, so the clock stands
still while a real host answers (an async client's own timeouts, on the loop's time,
would otherwise fire before its bytes came). One to a server:

1. gets `x-umi-clock-us: N` (the clock now) and is IN FLIGHT until its head is read, and
   again while the agent waits for each next piece of its body (`clock_flights.py`); its
   real I/O has no httpx timeout of its own (a sync client's socket waits are capped at
   `REAL_WAIT_SECS_MAX` instead: a real timeout there is a hung server, named);
2. head read: the agent waits until N + head_us on the clock (async: a sleep on the
   simulated loop, so concurrent responses resume in simulated order); first body byte:
   until N + first_us; the body's end: until N + last_us;
3. `ending=reset`: until N + end_us, then the error the library raised;
   `ending=stall`: after the last byte the read blocks for the client's own read timeout
   (`request.extensions["timeout"]["read"]`, or `STALL_SECS_MAX` when it has none), then
   raises the library's `ReadTimeout` (an agent deadline shorter than that fires first);
4. the 502 with `x-umi-no-response` (no response at all) never reaches the SDK: `reset`
   waits until N + end_us and raises `RemoteProtocolError("Server disconnected without
   sending a response.")`, what httpx raises for a connection closed before its head;
   `stall` blocks for the read timeout and raises `ReadTimeout`.

An async request to a server from an event loop that is not the clock's (one created
before the clock started: its time is frozen, and nothing caps its real waits) raises
`clock_loop.LoopBeforeClock` before it is sent.

A response without `x-umi-timing` (a server that does not know the clock, or its own
`/umi/...` paths) is handed over as it came.
"""

import asyncio
import functools
import importlib

from . import clock as umi_clock
from .clock_flights import OTHER_HOST, REAL_WAIT_SECS_MAX, raise_if_expired
from .clock_loop import check_loop, wait_until_us
from .clock_timing import CLOCK_HEADER, TIMING_HEADER, Timing, no_response

# A stall's read blocks this long when the client set no read timeout (an hour).
STALL_SECS_MAX = 3600
# The HTTP client packages hooked, when installed.
MODULES = ("httpx", "httpx2")
DISCONNECTED = "Server disconnected without sending a response."
READ_TIMED_OUT = "timed out"

_installed = {}  # module name -> (module, original sync, original async)


def install():
    """Wraps the default transports of every installed httpx (idempotent)."""
    for name in MODULES:
        if name in _installed:
            continue
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        sync_original = module.HTTPTransport.handle_request
        async_original = module.AsyncHTTPTransport.handle_async_request
        _installed[name] = (module, sync_original, async_original)
        module.HTTPTransport.handle_request = _sync_hook(module, sync_original)
        module.AsyncHTTPTransport.handle_async_request = _async_hook(module, async_original)


def uninstall():
    for name, (module, sync_original, async_original) in list(_installed.items()):
        module.HTTPTransport.handle_request = sync_original
        module.AsyncHTTPTransport.handle_async_request = async_original
        del _installed[name]


def _sync_hook(module, original):
    @functools.wraps(original)
    def handle_request(self, request):
        clock = umi_clock.active()
        if clock is None:
            return original(self, request)
        if not clock.covers(request.url):
            return _other_host_sync(module, clock, request, functools.partial(original, self))
        return Exchange(module, clock, request).send(functools.partial(original, self))

    return handle_request


def _async_hook(module, original):
    @functools.wraps(original)
    async def handle_async_request(self, request):
        clock = umi_clock.active()
        if clock is None:
            return await original(self, request)
        if not clock.covers(request.url):
            return await _other_host_async(module, clock, request, functools.partial(original, self))
        return await Exchange(module, clock, request).send_async(functools.partial(original, self))

    return handle_async_request


def _what(request):
    return f"{request.method} {request.url}"


def _other_host_sync(module, clock, request, send):
    """A request to another host: as it is, in flight until its head is read (and for
    each piece of its body), its own timeouts kept."""
    flight = clock.flights.begin(_what(request), OTHER_HOST)
    try:
        response = send(request)
    finally:
        clock.flights.end(flight)
    response.stream = _stream_class(module, InFlightSyncStream, "SyncByteStream")(clock, request, response.stream)
    return response


async def _other_host_async(module, clock, request, send):
    flight = clock.flights.begin(_what(request), OTHER_HOST)
    try:
        response = await send(request)
    except asyncio.CancelledError:
        raise_if_expired(flight)
        raise
    finally:
        clock.flights.end(flight)
    response.stream = _stream_class(module, InFlightAsyncStream, "AsyncByteStream")(clock, request, response.stream)
    return response


def _read_timeout_us(request):
    """The client's read timeout, in microseconds (`STALL_SECS_MAX` when it has none)."""
    timeout = (request.extensions.get("timeout") or {}).get("read")
    if timeout is None:
        return STALL_SECS_MAX * umi_clock.US_PER_SEC
    return umi_clock.seconds_to_us(min(float(timeout), STALL_SECS_MAX), "the read timeout")


class Exchange:
    """One request to `dst serve` and its response, on the clock."""

    def __init__(self, module, clock, request):
        self.module = module
        self.clock = clock
        self.request = request
        self.what = _what(request)
        self.sent_us = None
        self.timing = None
        self.read_timeout_us = _read_timeout_us(request)

    def _stamp(self, real_timeout):
        """Adds the header; the request's timeouts for its real I/O (the client's are
        kept for the simulated stall). Returns the extensions to restore."""
        self.sent_us = self.clock.now_us
        self.request.headers[CLOCK_HEADER] = str(self.sent_us)
        kept = self.request.extensions
        self.request.extensions = {**kept, "timeout": dict.fromkeys(("connect", "read", "write", "pool"),
                                                                      real_timeout)}
        return kept

    def _timing_of(self, response):
        text = response.headers.get(TIMING_HEADER)
        self.timing = None if text is None else Timing.parse(text)
        return self.timing

    def _no_response_error(self, kind):
        if kind == "reset":
            return self.sent_us + self.timing.end_us, self.module.RemoteProtocolError(DISCONNECTED,
                                                                                      request=self.request)
        return self.sent_us + self.read_timeout_us, self.module.ReadTimeout(READ_TIMED_OUT, request=self.request)

    def end_of_body(self, error):
        """When the body's reading ends (`at_us`) and what it raises then (None: nothing),
        given the library's error while reading (None when it ended cleanly)."""
        timing, sent = self.timing, self.sent_us
        if timing.ending == "stall":
            stalled = self.module.ReadTimeout(READ_TIMED_OUT, request=self.request)
            return sent + timing.last_us + self.read_timeout_us, stalled
        if timing.ending == "reset":
            return sent + timing.end_us, error or self.module.RemoteProtocolError(DISCONNECTED, request=self.request)
        return sent + timing.last_us, error

    # -- sync ------------------------------------------------------------------------

    def send(self, original):
        kept = self._stamp(REAL_WAIT_SECS_MAX)
        flight = self.clock.flights.begin(self.what)
        try:
            response = original(self.request)
        except self.module.TimeoutException as error:
            raise flight.exceeded() from error
        finally:
            self.clock.flights.end(flight)
            self.request.extensions = kept
        try:
            if self._timing_of(response) is None:
                return response
            self.clock.advance_to(self.sent_us + self.timing.head_us, "response")
            kind = no_response(response.headers)
            if kind is not None:
                at_us, error = self._no_response_error(kind)
                self.clock.advance_to(at_us, "response")
                raise error
        except BaseException:
            response.close()
            raise
        response.stream = timed_sync_stream(self, response.stream)
        return response

    # -- async -----------------------------------------------------------------------

    async def send_async(self, original):
        check_loop(self.clock, self.what)
        kept = self._stamp(None)
        flight = self.clock.flights.begin(self.what)
        try:
            response = await original(self.request)
        except asyncio.CancelledError:
            raise_if_expired(flight)
            raise
        finally:
            self.clock.flights.end(flight)
            self.request.extensions = kept
        try:
            if self._timing_of(response) is None:
                return response
            await wait_until_us(self.clock, self.sent_us + self.timing.head_us)
            kind = no_response(response.headers)
            if kind is not None:
                at_us, error = self._no_response_error(kind)
                await wait_until_us(self.clock, at_us)
                raise error
        except BaseException:
            await response.aclose()
            raise
        response.stream = timed_async_stream(self, response.stream)
        return response


def _raise_end(raised, error):
    """Raises what ends the body (nothing, the library's own error, or the one that stands
    for it: a stall's `ReadTimeout`, chained to the error the socket gave)."""
    if raised is None:
        return
    if raised is error:
        raise error
    raise raised from error


_stream_classes = {}


def _stream_class(module, mixin, base_name):
    """`mixin` over `module`'s byte stream base (httpx checks the body's type)."""
    key = (module.__name__, mixin.__name__)
    if key not in _stream_classes:
        _stream_classes[key] = type(mixin.__name__, (mixin, getattr(module, base_name)), {})
    return _stream_classes[key]


def timed_sync_stream(exchange, inner):
    return _stream_class(exchange.module, TimedSyncStream, "SyncByteStream")(exchange, inner)


def timed_async_stream(exchange, inner):
    return _stream_class(exchange.module, TimedAsyncStream, "AsyncByteStream")(exchange, inner)


class _Body:
    """Where the reading of one body stands. It lives on the stream, not in one iteration:
    a client may iterate the stream again after stopping early (openai drains a stream
    it left at `[DONE]`), and that iteration goes on from here (and ends at once when the
    body has)."""

    def __init__(self, exchange, inner):
        self.exchange = exchange
        self.inner = inner
        self.pieces = None
        self.held = None
        self.first = True
        self.ended = False
        self.error = None
        self.finished = False

    def took(self, piece, error, ended):
        """Records a read; returns the piece to hand over now and when (or None, None)."""
        held = self.held
        self.held = None if ended else piece
        if ended:
            self.ended, self.error = True, error
        if held is None:
            return None, None
        timing = self.exchange.timing
        at_us = self.exchange.sent_us + (timing.last_us if ended else timing.first_us if self.first else 0)
        self.first = False
        return held, at_us

    def finish(self):
        """When the body's end comes and what it raises, once (None, None after)."""
        if self.finished:
            return None, None
        self.finished = True
        return self.exchange.end_of_body(self.error)


class TimedSyncStream:
    """A sync response body read on the clock (`Exchange.end_of_body`); a mixin over the
    library's `SyncByteStream` (`timed_sync_stream`).

    It reads one piece ahead: the first piece is handed over at N + first_us, the last
    (known once the next read ends the body) at N + last_us, those between at once. So a
    client that stops at the last event it needs (openai's `[DONE]`) has it when the
    simulation sent it, not when the first bytes came."""

    def __init__(self, exchange, inner):
        self.body = _Body(exchange, inner)

    def _read(self):
        """(piece, error, ended) of the next read, in flight meanwhile."""
        exchange = self.body.exchange
        flights = exchange.clock.flights
        flight = flights.begin(exchange.what)
        try:
            return next(self.body.pieces), None, False
        except StopIteration:
            return None, None, True
        except exchange.module.TransportError as raised:
            if isinstance(raised, exchange.module.TimeoutException) and exchange.timing.ending != "stall":
                raise flight.exceeded() from raised
            return None, raised, True
        finally:
            flights.end(flight)

    def __iter__(self):
        body = self.body
        clock = body.exchange.clock
        if body.pieces is None:
            body.pieces = iter(body.inner)
        while not body.ended:
            piece, at_us = body.took(*self._read())
            if piece is not None:
                clock.advance_to(at_us, "response")
                yield piece
        at_us, raised = body.finish()
        if at_us is not None:
            clock.advance_to(at_us, "response")
            _raise_end(raised, body.error)

    def close(self):
        self.body.inner.close()


class TimedAsyncStream:
    """An async response body read on the clock, each wait a sleep on the loop, one piece
    read ahead as `TimedSyncStream` does; a mixin over the library's `AsyncByteStream`
    (`timed_async_stream`)."""

    def __init__(self, exchange, inner):
        self.body = _Body(exchange, inner)

    async def _read(self):
        exchange = self.body.exchange
        flights = exchange.clock.flights
        flight = flights.begin(exchange.what)
        try:
            return await self.body.pieces.__anext__(), None, False
        except StopAsyncIteration:
            return None, None, True
        except asyncio.CancelledError:
            raise_if_expired(flight)
            raise
        except exchange.module.TransportError as raised:
            return None, raised, True
        finally:
            flights.end(flight)

    async def __aiter__(self):
        body = self.body
        clock = body.exchange.clock
        if body.pieces is None:
            body.pieces = body.inner.__aiter__()
        while not body.ended:
            piece, at_us = body.took(*await self._read())
            if piece is not None:
                await wait_until_us(clock, at_us)
                yield piece
        at_us, raised = body.finish()
        if at_us is not None:
            await wait_until_us(clock, at_us)
            _raise_end(raised, body.error)

    async def aclose(self):
        await self.body.inner.aclose()


class InFlightSyncStream:
    """The body of a response from another host, each read in flight (no timing); a mixin
    over the library's `SyncByteStream`."""

    def __init__(self, clock, request, inner):
        self.flights = clock.flights
        self.what = _what(request)
        self.inner = inner

    def __iter__(self):
        pieces = iter(self.inner)
        while True:
            flight = self.flights.begin(self.what, OTHER_HOST)
            try:
                piece = next(pieces)
            except StopIteration:
                return
            finally:
                self.flights.end(flight)
            yield piece

    def close(self):
        self.inner.close()


class InFlightAsyncStream:
    """`InFlightSyncStream` for an async body (over `AsyncByteStream`)."""

    def __init__(self, clock, request, inner):
        self.flights = clock.flights
        self.what = _what(request)
        self.inner = inner

    async def __aiter__(self):
        pieces = self.inner.__aiter__()
        while True:
            flight = self.flights.begin(self.what, OTHER_HOST)
            try:
                piece = await pieces.__anext__()
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                raise_if_expired(flight)
                raise
            finally:
                self.flights.end(flight)
            yield piece

    async def aclose(self):
        await self.inner.aclose()
