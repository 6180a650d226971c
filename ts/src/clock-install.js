// Installing the agent's clock into the process, and taking it out again.
//
// @sinonjs/fake-timers (what Vitest and Jest fake timers with) replaces Date, performance,
// process.hrtime, Intl's clock, setTimeout/setInterval and node:timers' and
// node:timers/promises' setTimeout. On top of it:
//
// - Node's own I/O keeps the real timers. Node 20's fetch is its bundled undici, whose
//   code reads the global setTimeout when it runs: its header, body and keep-alive
//   timeouts would land on the fake clock (and its one refreshed tick timer, made during
//   a run, would stay a dead fake timer for the rest of the process). So a timer asked
//   for by Node's internals (a caller frame in `node:internal/`) gets a real one, and a
//   real timer is cleared by the real clearTimeout.
// - ES modules that imported node:timers or node:timers/promises by name see the fake
//   functions too: fake-timers patches the CommonJS exports, and
//   `module.syncBuiltinESMExports()` (Node's API for exactly this) carries that over to
//   the named exports, at install and again at uninstall.
// - AbortSignal.timeout fires on the fake clock, with the error Node's raises.
//
// One fake-timers instance for the process, so timer ids never repeat across runs (a
// stale id from an earlier run can never clear a timer of this one).

import FakeTimers from '@sinonjs/fake-timers';
import { syncBuiltinESMExports } from 'node:module';

import { realTimers } from './clock-driver.js';

/** What fake-timers fakes for a run; nothing Node's own I/O needs to make progress. */
export const FAKED = Object.freeze([
  'setTimeout',
  'clearTimeout',
  'setInterval',
  'clearInterval',
  'Date',
  'performance',
  'hrtime',
  'Intl',
]);

const fakeTimers = FakeTimers.withGlobal(globalThis);
const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
};
const RealTimeout = real.setTimeout(() => {}, 0).constructor;

/** fake-timers numbers its timers from 1e12 (its `idCounterStart`), clear of Node's ids. */
const FAKE_TIMER_ID_MIN = 1e12;

/** A timer (or a timer's numeric id) of the real clock. */
function isRealTimer(timer) {
  return timer instanceof RealTimeout || (typeof timer === 'number' && timer < FAKE_TIMER_ID_MIN);
}

/** Stack frames calledByNode needs: "Error", itself, the wrapper, the wrapper's caller. */
const CALLER_FRAMES_MIN = 4;

/**
 * Whether the caller of the function that calls this is Node's own code. The stack is
 * taken with at least CALLER_FRAMES_MIN frames whatever `Error.stackTraceLimit` the
 * process set (some libraries lower it to 0 or 1), and the limit is put back after.
 */
function calledByNode() {
  const savedLimit = Error.stackTraceLimit;
  let stack;
  try {
    if (!(savedLimit >= CALLER_FRAMES_MIN)) Error.stackTraceLimit = CALLER_FRAMES_MIN;
    stack = new Error().stack ?? '';
  } finally {
    Error.stackTraceLimit = savedLimit;
  }
  const frames = stack.split('\n');
  // [0] "Error", [1] calledByNode, [2] the wrapper, [3] its caller.
  const caller = frames[3] ?? '';
  return caller.includes('node:internal/');
}

/** Routes Node's own timers to the real functions, everything else to the fake ones. */
function routeNodeTimers() {
  const fake = {
    setTimeout: globalThis.setTimeout,
    clearTimeout: globalThis.clearTimeout,
    setInterval: globalThis.setInterval,
    clearInterval: globalThis.clearInterval,
  };
  const set = (name) =>
    Object.assign(
      function (...args) {
        return (calledByNode() ? real : fake)[name](...args);
      },
      { clock: fake[name].clock },
    );
  const clear = (name) =>
    Object.assign(
      function (timer) {
        return (isRealTimer(timer) ? real : fake)[name](timer);
      },
      { clock: fake[name].clock },
    );
  globalThis.setTimeout = set('setTimeout');
  globalThis.setInterval = set('setInterval');
  globalThis.clearTimeout = clear('clearTimeout');
  globalThis.clearInterval = clear('clearInterval');
}

/** AbortSignal.timeout on the fake clock, raising what Node's raises. */
function timeoutSignal(ms) {
  const controller = new AbortController();
  setTimeout(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
  return controller.signal;
}

/**
 * Installs the fake clock at `nowMs` (ms since the Unix epoch, whole) and returns
 * `{ fake, uninstall }`; `uninstall()` puts back everything this changed.
 */
export function installClock(nowMs) {
  const savedTimeout = AbortSignal.timeout;
  const fake = fakeTimers.install({ now: nowMs, toFake: [...FAKED] });
  routeNodeTimers();
  AbortSignal.timeout = timeoutSignal;
  syncBuiltinESMExports();
  return {
    fake,
    uninstall() {
      AbortSignal.timeout = savedTimeout;
      fake.uninstall();
      syncBuiltinESMExports();
    },
  };
}

export { realTimers };
