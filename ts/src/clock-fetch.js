// fetch on the agent's clock (SCHEMA of issue 43, section 1, the client's part; see
// docs/guide.md "The agent's clock"). For a request to `dst serve`:
//
// 1. it carries `x-umi-clock-us: N` (the clock now) and counts as in flight;
// 2. while in flight (the head and the whole body coming over the socket, in real time)
//    the clock stands still; a server that does not answer within `realWaitSecsMax` real
//    seconds is a ClockRealWaitError naming it and the request;
// 3. the response is then played on the simulated clock as its `x-umi-timing` says: the
//    head at N + H (fetch resolves), the first body chunk at N + F, the rest at N + L;
//    `reset`: at N + E the body errors as undici's does on a closed connection; `stall`:
//    no byte comes again, and undici's bodyTimeout (300 s after the last byte) errors it
//    unless the caller's signal aborts first (an SDK's timeout, an agent's deadline);
// 4. a 502 with `x-umi-no-response` (the simulation produced no response) never reaches
//    the caller: `reset` rejects at N + E as fetch rejects a connection closed before the
//    head; `stall` waits for undici's headersTimeout (300 s) or the caller's signal.
//
// Other hosts are passed through untouched (no header, no timing) but counted in flight
// until their head comes, so the clock does not jump while the agent waits on them; so
// are the server's own paths (`/umi/...`). The server's own refusals (an error status
// without `x-umi-timing`: a bad seed in the path, a path no endpoint serves) are handed
// over at once, as nothing was simulated; a success without it is a ClockProtocolError. The undici figures are Node 20's bundled
// undici's defaults (undici's Agent: headersTimeout and bodyTimeout, 300e3 ms each).

import {
  ClockProtocolError,
  ClockRealWaitError,
  abortReason,
  bodyTimeout,
  connectionClosedBeforeResponse,
  connectionClosedInBody,
  headersTimeout,
} from './clock-errors.js';
import { REAL_WAIT_SECS_MAX, realTimers } from './clock-driver.js';
import { CLOCK_HEADER, NO_RESPONSE_HEADER, TIMING_HEADER, parseNoResponse, parseTiming } from './timing.js';

// REAL_WAIT_SECS_MAX (clock-driver.js): default real seconds a request may take to come in whole.
export { REAL_WAIT_SECS_MAX };
/** A response body read while in flight, at most. */
export const BODY_BYTES_MAX = 64 * 1024 * 1024;
/** undici's headersTimeout (Node 20's fetch): no head within it fails the fetch. */
export const UNDICI_HEADERS_TIMEOUT_SECS = 300;
/** undici's bodyTimeout: no body byte within it after the last fails the read. */
export const UNDICI_BODY_TIMEOUT_SECS = 300;

/** Statuses whose response has no body (the fetch standard's "null body status"). */
const NULL_BODY_STATUSES = [101, 103, 204, 205, 304];

function requestURL(input) {
  if (input instanceof Request) return new URL(input.url);
  return new URL(String(input));
}

/** A path of the server's own (`/umi/trace`, `/scope/S/umi/marks`): not simulated. */
function ownPath(url) {
  return /(^|\/)umi\//.test(url.pathname);
}

/** Links `signal` (the caller's, may be undefined) into `controller`. */
function link(signal, controller) {
  if (!signal) return () => {};
  if (signal.aborted) {
    controller.abort(signal.reason);
    return () => {};
  }
  const abort = () => controller.abort(signal.reason);
  signal.addEventListener('abort', abort, { once: true });
  return () => signal.removeEventListener('abort', abort);
}

/**
 * Sends the request for real and reads its whole body, counted in flight, within
 * `realWaitSecsMax` real seconds. Resolves to `{ response, chunks, bodyError }`.
 */
async function receive({ driver, realFetch, input, init, signal, where, realWaitSecsMax }) {
  const end = driver.beginIO();
  const controller = new AbortController();
  const unlink = link(signal, controller);
  const capped = new ClockRealWaitError(
    `the agent's clock: ${where} got no whole answer within ${realWaitSecsMax} s of real time ` +
      '(REAL_WAIT_SECS_MAX; the clock stands still while a request is in flight). Is the server ' +
      'alive, and run with --time-scale 0 (the default)?',
  );
  const timer = realTimers.setTimeout(() => controller.abort(capped), realWaitSecsMax * 1000);
  try {
    const response = await realFetch(input, { ...init, signal: controller.signal });
    const chunks = [];
    let bodyError = null;
    if (response.body) {
      const reader = response.body.getReader();
      let bytes = 0;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          bytes += value.byteLength;
          if (bytes > BODY_BYTES_MAX) {
            throw new RangeError(`the agent's clock: ${where} answered more than BODY_BYTES_MAX (${BODY_BYTES_MAX}) bytes`);
          }
          chunks.push(value);
        }
      } catch (error) {
        if (controller.signal.aborted) throw controller.signal.reason;
        if (error instanceof RangeError) throw error;
        bodyError = error; // a reset or a stall, as the server plays them at --time-scale 0
      }
    }
    return { response, chunks, bodyError };
  } catch (error) {
    if (controller.signal.aborted && controller.signal.reason === capped) throw capped;
    throw error;
  } finally {
    realTimers.clearTimeout(timer);
    unlink();
    end();
  }
}

/** The body of a played response: chunks at N + F and N + L, then its ending. A body
 * cancelled by its reader leaves no wait behind (the clock must not jump for it). */
function playedBody({ driver, nowUs, timing, chunks, bodyError, signal }) {
  const local = new AbortController();
  const unlink = link(signal, local);
  const wait = (atUs) => driver.waitUntil(atUs, local.signal, () => abortReason(local.signal));
  let step = 0;
  return new ReadableStream(
    {
      async pull(controller) {
        try {
          if (step === 0) {
            step = 1;
            if (chunks.length > 0) {
              await wait(nowUs + timing.firstUs);
              controller.enqueue(chunks[0]);
              return;
            }
          }
          if (step === 1) {
            step = 2;
            if (chunks.length > 1) {
              await wait(nowUs + timing.lastUs);
              for (const chunk of chunks.slice(1)) controller.enqueue(chunk);
              return;
            }
          }
          await wait(nowUs + timing.lastUs);
          if (timing.ending === 'complete') {
            unlink();
            controller.close();
          } else if (timing.ending === 'reset') {
            await wait(nowUs + timing.endUs);
            throw bodyError instanceof TypeError ? bodyError : connectionClosedInBody();
          } else {
            await wait(nowUs + timing.lastUs + UNDICI_BODY_TIMEOUT_SECS * 1_000_000);
            throw bodyTimeout();
          }
        } catch (error) {
          unlink();
          controller.error(error);
        }
      },
      cancel(reason) {
        unlink();
        local.abort(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** `response` again, with the body already read (`chunks`). */
function replayed(response, chunks) {
  const body = chunks.length ? new Blob(chunks) : null;
  const again = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperty(again, 'url', { value: response.url });
  return again;
}

/** What a 502 standing for no response becomes: a rejection, on the clock. */
async function noResponse({ driver, nowUs, timing, kind, signal }) {
  const onAbort = () => abortReason(signal);
  if (kind === 'reset') {
    await driver.waitUntil(nowUs + timing.endUs, signal, onAbort);
    throw connectionClosedBeforeResponse();
  }
  await driver.waitUntil(nowUs + UNDICI_HEADERS_TIMEOUT_SECS * 1_000_000, signal, onAbort);
  throw headersTimeout();
}

/**
 * A fetch on the clock of `driver` for requests to `serverURL`; others go to `realFetch`
 * as they are. Each request to the server is logged in `log` as
 * `{ method, url, clockUs, status, timing, noResponse }`.
 */
export function clockFetch({ driver, realFetch, serverURL, log, realWaitSecsMax = REAL_WAIT_SECS_MAX }) {
  const server = new URL(serverURL);
  const prefix = server.pathname.replace(/\/+$/, '');
  const onServer = (url) =>
    url.origin === server.origin && (url.pathname === prefix || url.pathname.startsWith(`${prefix}/`)) && !ownPath(url);

  return async function fetch(input, init = undefined) {
    const url = requestURL(input);
    if (!onServer(url)) {
      const end = driver.beginIO();
      try {
        return await realFetch(input, init);
      } finally {
        end();
      }
    }
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const where = `${method} ${url.href}`;
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const nowUs = driver.nowUs();
    headers.set(CLOCK_HEADER, String(nowUs));
    const received = await receive({
      driver,
      realFetch,
      input,
      init: { ...init, headers },
      signal,
      where,
      realWaitSecsMax,
    });
    const { response } = received;
    if (!response.headers.has(TIMING_HEADER)) {
      if (response.status >= 400) {
        // The server's own refusal (a bad seed in the path, a path no endpoint serves):
        // nothing was simulated, so no time passed; handed over as it came.
        log.push({ method, url: url.href, clockUs: nowUs, status: response.status, timing: null, noResponse: null });
        return replayed(response, received.chunks);
      }
      throw new ClockProtocolError(
        `the agent's clock: ${where} was answered ${response.status} without ${TIMING_HEADER}: ` +
          `the server does not keep the agent's clock (a dst older than issue 43's; it must answer ${CLOCK_HEADER})`,
      );
    }
    const timing = parseTiming(response.headers.get(TIMING_HEADER), where);
    const kind = response.headers.has(NO_RESPONSE_HEADER)
      ? parseNoResponse(response.headers.get(NO_RESPONSE_HEADER), where)
      : null;
    log.push({ method, url: url.href, clockUs: nowUs, status: kind ? null : response.status, timing, noResponse: kind });
    if (kind) return noResponse({ driver, nowUs, timing, kind, signal });
    await driver.waitUntil(nowUs + timing.headUs, signal, () => abortReason(signal));
    const bodyless = method === 'HEAD' || NULL_BODY_STATUSES.includes(response.status);
    const played = new Response(
      bodyless ? null : playedBody({ driver, nowUs, timing, ...received, signal }),
      { status: response.status, statusText: response.statusText, headers: response.headers },
    );
    Object.defineProperty(played, 'url', { value: response.url });
    return played;
  };
}
