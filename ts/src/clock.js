// A run on the agent's clock: the agent's time is the run's simulated time (issue 43;
// docs/guide.md, "The agent's clock"; ts/README.md).
//
// `runOnClock({ serverURL, seed }, async (clock) => agent())` (or a test context's
// `umi.onClock(async (clock) => agent())`) installs @sinonjs/fake-timers (what Vitest and
// Jest fake timers with) at Umi's simulated epoch, 2024-01-01T00:00:00Z plus `startUs`
// (clock-install.js: Date, performance.now, process.hrtime, Intl's clock, setTimeout and
// setInterval, node:timers' and node:timers/promises' setTimeout and AbortSignal.timeout
// read and wait on it; Node's own I/O keeps real timers). It replaces the global fetch with one on the clock
// (clock-fetch.js: the `x-umi-clock-us` header, requests in flight, the response played
// as its `x-umi-timing` says), seeds Math.random from the run's seed (seeded-random.js),
// then drives the clock (clock-driver.js) until the agent's promise settles, and
// uninstalls all of it, however the run ended.
//
// setImmediate, process.nextTick and queueMicrotask stay real: Node's own I/O needs them.
// One run on the clock at a time per process (the clock is the process's globals).
//
// An SDK client made inside the run uses the global fetch, so it is on the clock; one
// made before keeps the global fetch it found when it was made (openai-node and
// @anthropic-ai/sdk read it in their constructor) and must be given `fetchOnClock` (or,
// made inside, `clock.fetch`) as its `fetch` option.

import { ClockBusyError } from './clock-errors.js';
import { ClockDriver, IDLE_REAL_SECS_MAX } from './clock-driver.js';
import { FAKED, installClock } from './clock-install.js';
import { REAL_WAIT_SECS_MAX, clockFetch } from './clock-fetch.js';
import { seededRandom } from './seeded-random.js';
import { parseSeed } from './seed.js';

/** Umi's simulated epoch, 2024-01-01T00:00:00Z (umi_dst::constants::SIM_EPOCH_UNIX_MS_DEFAULT). */
export const SIM_EPOCH_UNIX_MS = 1_704_067_200_000;

export { FAKED };

let running = false;
/** The fetch of the run on the clock now, or null. */
let activeFetch = null;

/**
 * A fetch for clients made before a run (`new OpenAI({ fetch: fetchOnClock })`): inside a
 * run it is the run's fetch on the clock, outside the global fetch.
 */
export function fetchOnClock(input, init) {
  return (activeFetch ?? globalThis.fetch)(input, init);
}

function positiveSecs(value, name) {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`runOnClock: ${name} must be a positive number of seconds, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** The options, checked: `serverURL`, `seed`, `startUs`, `fetch` and the real-time caps. */
function readOptions(options) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('runOnClock: pass { serverURL, seed }');
  }
  const known = new Set(['serverURL', 'seed', 'startUs', 'fetch', 'realWaitSecsMax', 'idleRealSecsMax']);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) {
      throw new TypeError(`runOnClock: unknown option ${JSON.stringify(key)} (known: ${[...known].join(', ')})`);
    }
  }
  const { serverURL, startUs = 0 } = options;
  if (typeof serverURL !== 'string' || !/^https?:\/\/[^/\s]+/.test(serverURL)) {
    throw new TypeError(`runOnClock: serverURL must be the server's http:// URL, got ${JSON.stringify(serverURL)}`);
  }
  if (!Number.isSafeInteger(startUs) || startUs < 0) {
    throw new TypeError(`runOnClock: startUs must be a whole number of microseconds >= 0, got ${JSON.stringify(startUs)}`);
  }
  if (options.seed === undefined || options.seed === null) {
    throw new TypeError("runOnClock: seed is required (the run's u64 seed: Math.random is seeded from it)");
  }
  if (options.fetch !== undefined && typeof options.fetch !== 'function') {
    throw new TypeError(`runOnClock: fetch must be a function, got ${typeof options.fetch}`);
  }
  return {
    serverURL,
    startUs,
    seed: parseSeed(options.seed, 'runOnClock: the seed option'),
    fetch: options.fetch,
    realWaitSecsMax: positiveSecs(options.realWaitSecsMax, 'realWaitSecsMax') ?? REAL_WAIT_SECS_MAX,
    idleRealSecsMax: positiveSecs(options.idleRealSecsMax, 'idleRealSecsMax') ?? IDLE_REAL_SECS_MAX,
  };
}

/**
 * Runs `body(clock)` on the agent's clock and resolves as it does. `clock`:
 * `{ nowUs(), fetch, realWait(promise), requests, seed, startUs, epochUnixMs }`
 * (`realWait`: settles as `promise` does, the clock standing still meanwhile) (`requests`: each request to
 * the server, `{ method, url, clockUs, status, timing, noResponse }`).
 */
export async function runOnClock(options, body) {
  const { serverURL, startUs, seed, fetch: givenFetch, realWaitSecsMax, idleRealSecsMax } = readOptions(options);
  if (typeof body !== 'function') {
    throw new TypeError(`runOnClock: the body must be a function, got ${typeof body}`);
  }
  if (running || globalThis.Date.isFake === true) {
    throw new ClockBusyError(
      running
        ? 'runOnClock: a run is already on the clock in this process (one at a time: the clock is the process\'s globals)'
        : 'runOnClock: fake timers are already installed (a runner\'s, e.g. vi.useFakeTimers or jest.useFakeTimers); uninstall them first',
    );
  }
  running = true;
  const saved = { fetch: globalThis.fetch, random: Math.random };
  const baseMs = SIM_EPOCH_UNIX_MS + Math.floor(startUs / 1000);
  let installed = null;
  try {
    installed = installClock(baseMs);
    const { fake } = installed;
    const driver = new ClockDriver(fake, { baseMs, epochMs: SIM_EPOCH_UNIX_MS, idleRealSecsMax, realWaitSecsMax });
    await driver.advanceTo(startUs);
    const requests = [];
    const fetch = clockFetch({ driver, realFetch: givenFetch ?? saved.fetch, serverURL, log: requests, realWaitSecsMax });
    globalThis.fetch = fetch;
    activeFetch = fetch;
    Math.random = seededRandom(seed);
    const clock = Object.freeze({
      nowUs: () => driver.nowUs(),
      fetch,
      realWait: (promise) => driver.realWait(promise),
      requests,
      seed,
      startUs,
      epochUnixMs: SIM_EPOCH_UNIX_MS,
    });
    const run = Promise.resolve().then(() => body(clock));
    return await driver.drive(run);
  } finally {
    globalThis.fetch = saved.fetch;
    activeFetch = null;
    Math.random = saved.random;
    installed?.uninstall();
    running = false;
  }
}
