// What goes wrong on the agent's clock, and what fetch raises for the endings it plays.
//
// The clock's own errors say what happened in its terms (a server that did not answer in
// real time, a run that waits on nothing the clock knows, a second clock). The endings a
// simulated response can have (a connection closed before or during the response, a read
// that times out) are raised as Node's fetch raises them, so that an SDK reads them as
// it reads production's: Node's bundled undici (6.x in Node 20) rejects `fetch` with
// `TypeError: fetch failed` and errors a body with `TypeError: terminated`, each with an
// undici error as its `cause` (undici's lib/core/errors.js: SocketError "other side
// closed" UND_ERR_SOCKET, HeadersTimeoutError "Headers Timeout Error"
// UND_ERR_HEADERS_TIMEOUT, BodyTimeoutError "Body Timeout Error" UND_ERR_BODY_TIMEOUT).
// test/clock-unit.test.mjs holds these to the errors a real socket gives.

/** A real wait the clock gave up on: `dst serve` did not answer (or send its body) in time. */
export class ClockRealWaitError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ClockRealWaitError';
  }
}

/** The run waits on nothing the clock can move: no timer, no request in flight. */
export class ClockStuckError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ClockStuckError';
  }
}

/** Another fake clock is installed (a run on the clock already, or a runner's fake timers). */
export class ClockBusyError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ClockBusyError';
  }
}

/** `dst serve` answered without what the clock needs (a server older than the clock). */
export class ClockProtocolError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ClockProtocolError';
  }
}

const UNDICI_ERROR = Symbol.for('undici.error.UND_ERR');

/** An error shaped as undici's `name` with `code` and `message`, marked as undici marks its own. */
function undiciError(name, code, message) {
  const error = new Error(message);
  Object.defineProperty(error, 'name', { value: name, enumerable: true, writable: true, configurable: true });
  error.code = code;
  error[UNDICI_ERROR] = true;
  error[Symbol.for(`undici.error.${code}`)] = true;
  return error;
}

/** `fetch` rejected: the connection closed before the response head (what undici raises). */
export function connectionClosedBeforeResponse() {
  return new TypeError('fetch failed', { cause: undiciError('SocketError', 'UND_ERR_SOCKET', 'other side closed') });
}

/** `fetch` rejected: no response head within undici's headersTimeout. */
export function headersTimeout() {
  return new TypeError('fetch failed', {
    cause: undiciError('HeadersTimeoutError', 'UND_ERR_HEADERS_TIMEOUT', 'Headers Timeout Error'),
  });
}

/** A body read errored: the connection closed in the middle of the body. */
export function connectionClosedInBody() {
  return new TypeError('terminated', { cause: undiciError('SocketError', 'UND_ERR_SOCKET', 'other side closed') });
}

/** A body read errored: no byte within undici's bodyTimeout. */
export function bodyTimeout() {
  return new TypeError('terminated', {
    cause: undiciError('BodyTimeoutError', 'UND_ERR_BODY_TIMEOUT', 'Body Timeout Error'),
  });
}

/** What an aborted `signal` makes fetch raise: its reason (an AbortError DOMException by default). */
export function abortReason(signal) {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
