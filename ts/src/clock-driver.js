// The driver of a run on the agent's clock: it decides when simulated time moves.
//
// The clock is @sinonjs/fake-timers' (installed by clock.js): Date, performance.now,
// process.hrtime, setTimeout and setInterval read and wait on it, and nothing moves it
// but this driver. Time moves only when the agent waits: while any request is in flight
// (its head or body still coming over the socket, in real time) the clock stands still;
// when nothing is in flight and the run has had a few turns of the real event loop to do
// what it can (SETTLE_CYCLES, as looptime gives asyncio's ready tasks), the clock jumps to
// the next thing due (the earliest fake timer, or the earliest `waitUntil` of a response
// being played on the clock) and runs it. Timers already due run even while a request is
// in flight: that moves no time.
//
// `waitUntil` waits on the simulated clock in microseconds (fake timers count whole
// milliseconds): what a response's `x-umi-timing` says is met to the microsecond, and two
// responses resume in simulated order, never in the order their bytes came.
//
// Nor does the clock jump while Node's own real work is pending beyond what was there when
// the run began (a file read, a child process, a DNS lookup: clock-real-work.js), or while
// a `realWait(promise)` is unsettled; it stands still for them at most `realWaitSecsMax`
// real seconds, then the run fails with a ClockRealWaitError naming what it waited on.
//
// The real event loop keeps running: setImmediate, process.nextTick and queueMicrotask are
// not faked (Node's own I/O needs them), and the driver waits on the real timers captured
// in `realTimers` before any clock is installed.

import { ClockRealWaitError, ClockStuckError } from './clock-errors.js';
import { realWorkBeyond, realWorkCounts } from './clock-real-work.js';

/** Turns of the real event loop a run gets to settle before the clock jumps. */
export const SETTLE_CYCLES = 8;
/** Real milliseconds between looks at a run that waits on real I/O. */
export const POLL_MS = 10;
/** Jumps of the clock in one run, at most (a run that keeps a timer going forever ends here). */
export const JUMPS_MAX = 1_000_000;
/** Default real seconds a run may wait on nothing the clock knows before it is stuck. */
export const IDLE_REAL_SECS_MAX = 60;
/** Default real seconds the clock stands still for one real wait (a request, Node's work, realWait). */
export const REAL_WAIT_SECS_MAX = 60;
/** Responses being played on the clock at once, at most (their waits are this driver's queue). */
export const WAITERS_MAX = 10_000;

/** The real timers, captured when this module loads (before any fake clock). */
export const realTimers = Object.freeze({
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setImmediate: globalThis.setImmediate,
  // The real monotonic clock, for the real-time caps only: never seen by the agent.
  nowMs: globalThis.performance.now.bind(globalThis.performance),
});

/** One turn of the real event loop (microtasks, then I/O callbacks, then immediates). */
function turn() {
  return new Promise((resolve) => realTimers.setImmediate(resolve));
}

/** A real sleep of `ms`, cut short by `wake` (a promise). */
function realSleep(ms, wake) {
  let timer;
  const slept = new Promise((resolve) => {
    timer = realTimers.setTimeout(resolve, ms);
  });
  return Promise.race([slept, wake]).finally(() => realTimers.clearTimeout(timer));
}

/** A fake-timers delta in milliseconds for `deltaUs` whole microseconds. fake-timers keeps
 * the fraction as `floor(fraction * 1e6)` nanoseconds; half a nanosecond more makes the
 * floor land on the whole microsecond whatever the float rounding. */
export function tickMs(deltaUs) {
  const wholeMs = Math.floor(deltaUs / 1000);
  const restUs = deltaUs - wholeMs * 1000;
  return restUs === 0 ? wholeMs : wholeMs + (restUs * 1000 + 0.5) / 1e6;
}

export class ClockDriver {
  /**
   * `fake`: an installed fake-timers clock whose start (`now`) was `baseMs` (ms since the
   * Unix epoch, whole); `epochMs`: the simulated clock's zero on that scale.
   * `idleRealSecsMax`: how long a run may wait on nothing the clock knows;
   * `realWaitSecsMax`: how long the clock stands still for Node's own work or a realWait.
   */
  constructor(fake, { baseMs, epochMs, idleRealSecsMax = IDLE_REAL_SECS_MAX, realWaitSecsMax = REAL_WAIT_SECS_MAX }) {
    this.fake = fake;
    this.baseUs = (baseMs - epochMs) * 1000;
    this.epochMs = epochMs;
    this.idleRealSecsMax = idleRealSecsMax;
    this.realWaitSecsMax = realWaitSecsMax;
    // Node's own work already there (the `dst serve` child, a server started before the run).
    this.realWorkBaseline = realWorkCounts();
    this.inFlight = 0;
    this.waiters = [];
    this.sequence = 0;
    this.jumps = 0;
    this.wake = null;
    this.wakeUp = () => {};
    this.renewWake();
  }

  renewWake() {
    this.wake = new Promise((resolve) => {
      this.wakeUp = resolve;
    });
  }

  /** Tells the drive loop something changed (a request went out or came back). */
  notify() {
    const wakeUp = this.wakeUp;
    this.renewWake();
    wakeUp();
  }

  /** The simulated clock, microseconds since the simulated epoch. */
  nowUs() {
    const [secs, nanos] = this.fake.hrtime();
    return this.baseUs + secs * 1_000_000 + Math.round(nanos / 1000);
  }

  /** Counts a request in flight until the returned function is called (once). */
  beginIO() {
    this.inFlight += 1;
    this.notify();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.inFlight -= 1;
      this.notify();
    };
  }

  /**
   * Settles as `promise` does, counted in flight meanwhile (the clock stands still for it):
   * for real work the clock cannot see (zlib, crypto, a reply on a socket or a pipe).
   * Rejects with ClockRealWaitError when it is not settled within `realWaitSecsMax` real
   * seconds.
   */
  async realWait(promise) {
    const end = this.beginIO();
    let timer;
    const capped = new Promise((_, reject) => {
      timer = realTimers.setTimeout(() => {
        reject(new ClockRealWaitError(`the agent's clock: a realWait did not settle within ${this.realWaitSecsMax} s of real time (realWaitSecsMax)`));
      }, this.realWaitSecsMax * 1000);
    });
    try {
      return await Promise.race([promise, capped]);
    } finally {
      realTimers.clearTimeout(timer);
      end();
    }
  }

  /**
   * Whether Node's own real work holds the clock (and it has not held it too long: past
   * `realWaitSecsMax` real seconds since `sinceMs`, throws ClockRealWaitError naming it).
   */
  heldByRealWork(sinceMs) {
    const pending = realWorkBeyond(this.realWorkBaseline);
    if (pending.length === 0) return false;
    if (realTimers.nowMs() - sinceMs > this.realWaitSecsMax * 1000) {
      throw new ClockRealWaitError(
        `the agent's clock: a timer is due at ${this.nextDueUs()} us but Node's own work (${pending.join(', ')}) ` +
          `has been pending for ${this.realWaitSecsMax} s of real time (realWaitSecsMax); a long-lived child process ` +
          'started in the run holds the clock: start it before the run, or unref() it',
      );
    }
    return true;
  }

  /**
   * Resolves when the simulated clock reaches `atUs` (at once when it has); rejects with
   * `onAbort()` when `signal` aborts first.
   */
  waitUntil(atUs, signal, onAbort) {
    if (signal?.aborted) return Promise.reject(onAbort());
    if (atUs <= this.nowUs()) return Promise.resolve();
    if (this.waiters.length >= WAITERS_MAX) {
      return Promise.reject(new RangeError(`the agent's clock: more than WAITERS_MAX (${WAITERS_MAX}) responses waiting at once`));
    }
    return new Promise((resolve, reject) => {
      const waiter = { atUs, order: this.sequence++, resolve, abort: null };
      if (signal) {
        waiter.abort = () => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          reject(onAbort());
        };
        signal.addEventListener('abort', waiter.abort, { once: true });
      }
      waiter.done = () => {
        if (signal) signal.removeEventListener('abort', waiter.abort);
        resolve();
      };
      this.waiters.push(waiter);
      this.waiters.sort((a, b) => a.atUs - b.atUs || a.order - b.order);
    });
  }

  /** The earliest fake timer's time in microseconds, or null. */
  nextTimerUs() {
    let first = null;
    // fake-timers keeps its timers in `clock.timers`, a Map by id (its doc comment on
    // ensureTimerState); each has `callAt`, in its milliseconds.
    for (const timer of this.fake.timers?.values() ?? []) {
      if (first === null || timer.callAt < first) first = timer.callAt;
    }
    return first === null ? null : (first - this.epochMs) * 1000;
  }

  /** The next thing due on the simulated clock, in microseconds, or null. */
  nextDueUs() {
    const timer = this.nextTimerUs();
    const waiter = this.waiters.length ? this.waiters[0].atUs : null;
    if (timer === null) return waiter;
    if (waiter === null) return timer;
    return Math.min(timer, waiter);
  }

  /** Moves the clock to `atUs` (never back), running the timers due, then the waits due. */
  async advanceTo(atUs) {
    const deltaUs = Math.max(0, atUs - this.nowUs());
    await this.fake.tickAsync(tickMs(deltaUs));
    const now = this.nowUs();
    while (this.waiters.length && this.waiters[0].atUs <= now) {
      this.waiters.shift().done();
    }
  }

  /** Runs the timers already due (no time moves). */
  runDue() {
    this.fake.tick(0);
  }

  /**
   * Drives the clock until `promise` settles, and settles as it does. Throws
   * ClockStuckError when the run waits on nothing the clock knows for too long, and
   * RangeError past JUMPS_MAX jumps.
   */
  async drive(promise) {
    let settled = false;
    const outcome = promise.then(
      (value) => ({ ok: true, value }),
      (error) => ({ ok: false, error }),
    );
    outcome.then(() => {
      settled = true;
      this.notify();
    });
    let idleSinceMs = null;
    let heldSinceMs = null;
    while (!settled) {
      for (let i = 0; i < SETTLE_CYCLES && !settled; i++) await turn();
      if (settled) break;
      if (this.inFlight > 0) {
        idleSinceMs = null;
        heldSinceMs = null;
        this.runDue();
        await realSleep(POLL_MS, this.wake);
        continue;
      }
      const dueUs = this.nextDueUs();
      if (dueUs === null) {
        idleSinceMs ??= realTimers.nowMs();
        if (realTimers.nowMs() - idleSinceMs > this.idleRealSecsMax * 1000) {
          throw new ClockStuckError(
            `the agent's clock: the run has waited ${this.idleRealSecsMax} s of real time on nothing the clock ` +
              `knows (no timer, no request in flight) at ${this.nowUs()} us; it waits on something else ` +
              '(a promise never settled, or I/O the clock does not see: wrap its wait in clock.realWait)',
          );
        }
        await realSleep(POLL_MS, this.wake);
        continue;
      }
      idleSinceMs = null;
      heldSinceMs ??= realTimers.nowMs();
      if (this.heldByRealWork(heldSinceMs)) {
        this.runDue();
        await realSleep(POLL_MS, this.wake);
        continue;
      }
      heldSinceMs = null;
      if (++this.jumps > JUMPS_MAX) {
        throw new RangeError(`the agent's clock: more than JUMPS_MAX (${JUMPS_MAX}) jumps in one run (a timer that never stops?)`);
      }
      await this.advanceTo(dueUs);
    }
    const { ok, value, error } = await outcome;
    if (!ok) throw error;
    return value;
  }
}
