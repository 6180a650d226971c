// The agent's clock without `dst`: the driver (it jumps when the run is idle, never while
// a request is in flight, nor while a file read, a child process or a
// realWait is pending, and plays two responses in simulated order), the timing rules
// of a response against a stand-in server (head, first and last byte, reset, stall, no
// response, the caller's abort), the header's grammar, the errors next to the ones a real
// socket gives, seeded Math.random, and that a run leaves nothing installed, however it
// ended. Wall times are printed, never asserted.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setTimeout as sleepPromise } from 'node:timers/promises';

import {
  runOnClock,
  fetchOnClock,
  SIM_EPOCH_UNIX_MS,
  parseTiming,
  TimingHeaderError,
  ClockBusyError,
  ClockProtocolError,
  ClockRealWaitError,
  ClockStuckError,
  seededRandom,
  UNDICI_BODY_TIMEOUT_SECS,
  UNDICI_HEADERS_TIMEOUT_SECS,
} from '../src/index.js';
import OpenAI from 'openai';

import { realWorkCounts } from '../src/clock-real-work.js';
import { timedServer, timing } from './support/timed-server.mjs';

const realDate = Date;
const realSetTimeout = globalThis.setTimeout;
const realFetch = globalThis.fetch;
const realRandom = Math.random;
const SECOND_US = 1_000_000;
const here = path.dirname(fileURLToPath(import.meta.url));

/** Runs `body` on the clock and prints the wall time it took (never asserted). */
async function timed(name, options, body) {
  const started = performance.now();
  try {
    return await runOnClock(options, body);
  } finally {
    console.log(`${name}: ${(performance.now() - started).toFixed(1)} ms of wall time`);
  }
}

/** Reads a body to its end or error: `{ text, error, atUs }` (atUs: the clock at the end). */
async function readAll(response, clock) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const steps = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, steps, error: null, atUs: clock.nowUs() };
      text += decoder.decode(value);
      steps.push(clock.nowUs());
    }
  } catch (error) {
    return { text, steps, error, atUs: clock.nowUs() };
  }
}

describe('the driver', () => {
  test('an idle run jumps to its timers: an hour of sleep takes no real hour', async () => {
    const readings = await timed('an hour of sleep', { serverURL: 'http://127.0.0.1:9', seed: 1 }, async (clock) => {
      const before = { us: clock.nowUs(), date: Date.now(), perf: performance.now(), iso: new Date().toISOString() };
      await new Promise((resolve) => setTimeout(resolve, 3_600_000));
      const afterTimeout = clock.nowUs();
      await sleepPromise(1500); // node:timers/promises, on the clock too
      const aborted = await new Promise((resolve) => {
        const signal = AbortSignal.timeout(250);
        signal.addEventListener('abort', () => resolve({ at: clock.nowUs(), name: signal.reason.name }));
      });
      const [secs, nanos] = process.hrtime();
      return { before, afterTimeout, afterPromise: aborted.at - 250_000, aborted, hr: secs * 1e9 + nanos, end: Date.now() };
    });
    assert.deepEqual(readings.before, { us: 0, date: SIM_EPOCH_UNIX_MS, perf: 0, iso: '2024-01-01T00:00:00.000Z' });
    assert.equal(readings.afterTimeout, 3600 * SECOND_US);
    assert.equal(readings.afterPromise, 3601.5 * SECOND_US);
    assert.deepEqual(readings.aborted, { at: 3601.75 * SECOND_US, name: 'TimeoutError' });
    assert.equal(readings.hr, 3601.75e9);
    assert.equal(readings.end, SIM_EPOCH_UNIX_MS + 3_601_750);
    assert.equal(Date, realDate, 'the real Date is back');
  });

  test('a run starts where startUs says, to the microsecond', async () => {
    const start = await runOnClock({ serverURL: 'http://127.0.0.1:9', seed: 1, startUs: 2_500_250 }, (clock) => ({
      us: clock.nowUs(),
      date: Date.now(),
      perf: performance.now(),
    }));
    assert.deepEqual(start, { us: 2_500_250, date: SIM_EPOCH_UNIX_MS + 2500, perf: 0.25 });
  });

  test('the clock never jumps while a request is in flight, and jumps once it is in', async (t) => {
    // The server takes 300 ms of real time; the agent's 1-second timer is due meanwhile.
    const server = await timedServer(t, () => ({
      delayMs: 300,
      headers: { 'x-umi-timing': timing(5 * SECOND_US, 5 * SECOND_US, 5 * SECOND_US, 5 * SECOND_US, 'complete') },
    }));
    const events = await timed('in flight', { serverURL: server.url, seed: 1 }, async (clock) => {
      const seen = [];
      setTimeout(() => seen.push(['timer', clock.nowUs()]), 1000);
      const response = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
      seen.push(['head', clock.nowUs(), response.status]);
      return seen;
    });
    assert.equal(server.seen[0].clockHeader, '0');
    // What the agent's Date read when the answer went out, 300 real ms later: still 0.
    assert.equal(server.seen[0].dateNowAtAnswer, SIM_EPOCH_UNIX_MS);
    assert.deepEqual(events, [
      ['timer', 1 * SECOND_US],
      ['head', 5 * SECOND_US, 200],
    ]);
  });

  test('two responses resume in simulated order, not in the order they came', async (t) => {
    const server = await timedServer(t, ({ path }) => {
      const late = path.endsWith('/late');
      // `late` is answered first in real time but comes later on the clock.
      return {
        delayMs: late ? 0 : 200,
        headers: { 'x-umi-timing': late ? timing(9000, 9000, 9000, 9000, 'complete') : timing(10, 10, 10, 10, 'complete') },
      };
    });
    const order = await runOnClock({ serverURL: server.url, seed: 1 }, async (clock) => {
      const seen = [];
      await Promise.all(
        ['late', 'early'].map(async (name) => {
          await fetch(`${server.url}/v1/${name}`);
          seen.push([name, clock.nowUs()]);
        }),
      );
      return seen;
    });
    assert.deepEqual(server.seen.map((s) => s.path), ['/v1/late', '/v1/early']);
    assert.deepEqual(order, [
      ['early', 10],
      ['late', 9000],
    ]);
  });

  test('a run waiting on nothing the clock knows is stuck, by name', async () => {
    await assert.rejects(
      timed('stuck', { serverURL: 'http://127.0.0.1:9', seed: 1, idleRealSecsMax: 0.2 }, () => new Promise(() => {})),
      (error) => error instanceof ClockStuckError && /waited 0.2 s of real time on nothing the clock knows/.test(error.message),
    );
  });
});

/** A child process `sleep secs`, and a promise of its exit. */
function sleeper(secs) {
  const child = spawn('sleep', [String(secs)], { stdio: 'ignore' });
  return { child, exited: new Promise((resolve) => child.on('exit', () => resolve('exited'))) };
}

/** Races `work` against a 30-second timer of the agent's: `{ first, atUs }`. */
async function raceDeadline(clock, work) {
  const deadline = new Promise((resolve) => setTimeout(() => resolve('deadline'), 30_000));
  const first = await Promise.race([work, deadline]);
  return { first, atUs: clock.nowUs() };
}

describe("Node's own real work holds the clock", () => {
  test('a pending fs.promises.readFile of a large file is not overtaken by a 30 s timer', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'umi-clock-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const big = path.join(dir, 'big.bin');
    fs.writeFileSync(big, Buffer.alloc(32 * 1024 * 1024, 7)); // 64 reads of 512 KiB
    const seen = await timed('readFile vs 30 s', { serverURL: 'http://127.0.0.1:9', seed: 1 }, (clock) =>
      raceDeadline(clock, fs.promises.readFile(big).then((bytes) => `read ${bytes.length}`)),
    );
    assert.deepEqual(seen, { first: `read ${32 * 1024 * 1024}`, atUs: 0 });
  });

  // Pins the flake of the test above (1 run in 30, and once in CI): the read's last
  // step, closing its FileHandle, is a CloseReq, which the clock did not count, so a
  // 30 s timer overtook the read while it closed.
  test('a FileHandle closing (the end of every fs.promises.readFile) is real work', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'umi-clock-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'small.txt');
    fs.writeFileSync(file, 'x');
    const handle = await fs.promises.open(file);
    const before = realWorkCounts().get('CloseReq') ?? 0;
    const closing = handle.close();
    const during = realWorkCounts().get('CloseReq') ?? 0;
    await closing;
    assert.equal(during, before + 1, 'a pending close is not counted as real work');
  });

  test('a child process (sleep 0.3) is not overtaken by a 30 s timer', async () => {
    const seen = await timed('child vs 30 s', { serverURL: 'http://127.0.0.1:9', seed: 1 }, (clock) =>
      raceDeadline(clock, sleeper(0.3).exited),
    );
    assert.deepEqual(seen, { first: 'exited', atUs: 0 });
  });

  test('clock.realWait holds the clock for work it cannot see, and is capped by realWaitSecsMax', async () => {
    const seen = await timed('realWait vs 30 s', { serverURL: 'http://127.0.0.1:9', seed: 1 }, (clock) =>
      raceDeadline(clock, clock.realWait(new Promise((resolve) => realSetTimeout(() => resolve('waited'), 300)))),
    );
    assert.deepEqual(seen, { first: 'waited', atUs: 0 });
    await assert.rejects(
      timed('realWait never', { serverURL: 'http://127.0.0.1:9', seed: 1, realWaitSecsMax: 0.2 }, (clock) =>
        clock.realWait(new Promise(() => {})),
      ),
      (error) => error instanceof ClockRealWaitError && /a realWait did not settle within 0.2 s of real time/.test(error.message),
    );
  });

  test('work pending past realWaitSecsMax fails the run, naming it; work from before the run holds nothing', async (t) => {
    const inRun = [];
    t.after(() => inRun.forEach((child) => child.kill()));
    await assert.rejects(
      timed('child past the cap', { serverURL: 'http://127.0.0.1:9', seed: 1, realWaitSecsMax: 0.3 }, (clock) => {
        const { child, exited } = sleeper(30);
        inRun.push(child);
        return raceDeadline(clock, exited);
      }),
      (error) => error instanceof ClockRealWaitError && /Node's own work \(ProcessWrap x1\) has been pending for 0.3 s/.test(error.message),
    );
    const before = sleeper(30);
    t.after(() => before.child.kill());
    const seen = await timed('child from before', { serverURL: 'http://127.0.0.1:9', seed: 1 }, (clock) =>
      raceDeadline(clock, before.exited),
    );
    assert.deepEqual(seen, { first: 'deadline', atUs: 30 * SECOND_US });
  });
});

describe('a response on the clock', () => {
  const complete = timing(1000, 2000, 7000, 7000, 'complete');

  test('head at N + H, first chunk at N + F, the rest at N + L; the header carries N', async (t) => {
    const server = await timedServer(t, () => ({ headers: { 'x-umi-timing': complete }, chunks: ['one ', 'two ', 'three'] }));
    const got = await runOnClock({ serverURL: server.url, seed: 1, startUs: 40 }, async (clock) => {
      const response = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
      const head = clock.nowUs();
      return { head, ...(await readAll(response, clock)), log: clock.requests };
    });
    assert.equal(server.seen[0].clockHeader, '40');
    assert.equal(got.head, 1040);
    assert.equal(got.text, 'one two three');
    // The socket may join chunks; the first comes at F, whatever is left at L.
    assert.equal(got.steps[0], 2040);
    assert.ok(got.steps.slice(1).every((us) => us === 7040), JSON.stringify(got.steps));
    assert.equal(got.atUs, 7040);
    assert.deepEqual(got.log, [
      {
        method: 'POST',
        url: `${server.url}/v1/chat/completions`,
        clockUs: 40,
        status: 200,
        timing: { headUs: 1000, firstUs: 2000, lastUs: 7000, endUs: 7000, ending: 'complete' },
        noResponse: null,
      },
    ]);
  });

  test('a body its reader cancels leaves no wait behind: the clock does not jump for it', async (t) => {
    const server = await timedServer(t, () => ({ headers: { 'x-umi-timing': timing(0, 0, 50 * SECOND_US, 50 * SECOND_US, 'complete') }, chunks: ['a', 'b'] }));
    const got = await runOnClock({ serverURL: server.url, seed: 1 }, async (clock) => {
      const reader = (await fetch(`${server.url}/v1/x`)).body.getReader();
      await reader.read(); // the first chunk, at N + F
      const pending = reader.read(); // the rest is due at N + L = 50 s
      await new Promise((resolve) => setImmediate(resolve)); // the body's pull starts waiting
      await reader.cancel();
      await pending;
      // Waiting on something the clock does not know (100 real ms): nothing is due, so
      // the clock stays (a wait left for the cancelled body would have moved it to 50 s).
      await new Promise((resolve) => realSetTimeout(resolve, 100));
      return clock.nowUs();
    });
    assert.equal(got, 0);
  });

  test('reset: the body errors at N + E with the error of the closed socket', async (t) => {
    const server = await timedServer(t, () => ({
      headers: { 'x-umi-timing': timing(0, 100, 100, 4000, 'reset') },
      chunks: ['data: {"partial'],
      end: 'destroy',
    }));
    const got = await runOnClock({ serverURL: server.url, seed: 1 }, async (clock) =>
      readAll(await fetch(`${server.url}/v1/chat/completions`), clock),
    );
    assert.equal(got.text, 'data: {"partial');
    assert.equal(got.atUs, 4000);
    assert.equal(got.error.message, 'terminated');
    assert.equal(got.error.cause.code, 'UND_ERR_SOCKET');
  });

  test('stall: no byte comes again; undici\'s body timeout, unless the caller aborts first', async (t) => {
    const server = await timedServer(t, () => ({
      headers: { 'x-umi-timing': timing(0, 50, 50, 600 * SECOND_US + 50, 'stall') },
      chunks: ['data: {"par'],
      end: 'destroy',
    }));
    const url = `${server.url}/v1/chat/completions`;
    const timedOut = await timed('stall', { serverURL: server.url, seed: 1 }, async (clock) => readAll(await fetch(url), clock));
    assert.equal(timedOut.atUs, 50 + UNDICI_BODY_TIMEOUT_SECS * SECOND_US);
    assert.equal(timedOut.error.cause.code, 'UND_ERR_BODY_TIMEOUT');
    const aborted = await runOnClock({ serverURL: server.url, seed: 1 }, async (clock) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 10_000);
      return readAll(await fetch(url, { signal: controller.signal }), clock);
    });
    assert.equal(aborted.atUs, 10 * SECOND_US);
    assert.equal(aborted.error.name, 'AbortError');
  });

  test('no response: reset rejects at N + E, stall at undici\'s headers timeout; neither is a 502', async (t) => {
    const server = await timedServer(t, ({ path }) => ({
      status: 502,
      headers: {
        'x-umi-timing': path.endsWith('reset') ? timing(0, 0, 0, 3000, 'reset') : timing(0, 0, 0, 600 * SECOND_US, 'stall'),
        'x-umi-no-response': path.endsWith('reset') ? 'reset' : 'stall',
      },
    }));
    for (const [kind, atUs, code] of [
      ['reset', 3000, 'UND_ERR_SOCKET'],
      ['stall', UNDICI_HEADERS_TIMEOUT_SECS * SECOND_US, 'UND_ERR_HEADERS_TIMEOUT'],
    ]) {
      const got = await runOnClock({ serverURL: server.url, seed: 1 }, async (clock) => {
        try {
          const response = await fetch(`${server.url}/v1/${kind}`);
          return { status: response.status };
        } catch (error) {
          return { atUs: clock.nowUs(), message: error.message, code: error.cause.code, log: clock.requests[0] };
        }
      });
      assert.deepEqual(
        { ...got, log: got.log && { status: got.log.status, noResponse: got.log.noResponse } },
        { atUs, message: 'fetch failed', code, log: { status: null, noResponse: kind } },
      );
    }
  });

  test('the errors played are the errors a real closed socket gives', async (t) => {
    const server = http.createServer((request) => request.socket.destroy());
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise((resolve) => server.close(resolve)));
    const real = await realFetch(`http://127.0.0.1:${server.address().port}/`).catch((error) => error);
    const fake = await timedServer(t, () => ({
      status: 502,
      headers: { 'x-umi-timing': timing(0, 0, 0, 0, 'reset'), 'x-umi-no-response': 'reset' },
    }));
    const played = await runOnClock({ serverURL: fake.url, seed: 1 }, () => fetch(`${fake.url}/v1/x`).catch((error) => error));
    const shape = (error) => ({
      type: error.constructor.name,
      message: error.message,
      cause: { name: error.cause.name, code: error.cause.code, message: error.cause.message },
      undici: error.cause[Symbol.for('undici.error.UND_ERR')],
    });
    assert.deepEqual(shape(played), shape(real));
  });

  test('a caller that aborts while the head is due gets its abort reason', async (t) => {
    const server = await timedServer(t, () => ({ headers: { 'x-umi-timing': timing(30 * SECOND_US, 30 * SECOND_US, 30 * SECOND_US, 30 * SECOND_US, 'complete') } }));
    const got = await runOnClock({ serverURL: server.url, seed: 1 }, async (clock) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('deadline')), 2000);
      return fetch(`${server.url}/v1/x`, { signal: controller.signal }).then(
        () => 'answered',
        (error) => [error.message, clock.nowUs()],
      );
    });
    assert.deepEqual(got, ['deadline', 2 * SECOND_US]);
  });

  test('other hosts and the server\'s own paths go untouched; fetchOnClock works for clients made before', async (t) => {
    const server = await timedServer(t, () => ({ headers: { 'x-umi-timing': complete }, chunks: ['ok'] }));
    const other = await timedServer(t, () => ({ chunks: ['other'] }));
    const made = { fetch: fetchOnClock }; // as an SDK keeps the fetch it was given
    const got = await runOnClock({ serverURL: server.url, seed: 1 }, async (clock) => {
      const fromOther = await (await fetch(`${other.url}/anything`)).text();
      const own = await (await made.fetch(`${server.url}/umi/trace?scope=s`)).text();
      const model = await (await made.fetch(`${server.url}/v1/chat/completions`)).text();
      return { fromOther, own, model, at: clock.nowUs() };
    });
    assert.deepEqual(got, { fromOther: 'other', own: 'ok', model: 'ok', at: 7000 });
    assert.deepEqual(other.seen.map((s) => s.clockHeader), [null]);
    assert.deepEqual(server.seen.map((s) => [s.path, s.clockHeader]), [
      ['/umi/trace', null],
      ['/v1/chat/completions', '0'],
    ]);
  });

  test("the server's own refusal comes at once; a server that does not keep the clock, or a bad header, is named", async (t) => {
    const server = await timedServer(t, ({ path }) => ({
      status: path.endsWith('nope') ? 404 : 200,
      headers: path.endsWith('bad') ? { 'x-umi-timing': 'head_us=1, first_us=2' } : {},
      chunks: path.endsWith('nope') ? ['{"error":"no such path"}'] : [],
    }));
    const refusal = await runOnClock({ serverURL: server.url, seed: 1 }, async (clock) => {
      const response = await fetch(`${server.url}/v1/nope`);
      return { status: response.status, body: await response.text(), at: clock.nowUs(), timing: clock.requests[0].timing };
    });
    assert.deepEqual(refusal, { status: 404, body: '{"error":"no such path"}', at: 0, timing: null });
    for (const [path, kind, says] of [
      ['/v1/old', ClockProtocolError, /GET http:\/\/127\.0\.0\.1:\d+\/v1\/old was answered 200 without x-umi-timing/],
      ['/v1/bad', TimingHeaderError, /^x-umi-timing: "head_us=1, first_us=2" is not `head_us=H/],
    ]) {
      await assert.rejects(
        runOnClock({ serverURL: server.url, seed: 1 }, () => fetch(`${server.url}${path}`)),
        (error) => error instanceof kind && says.test(error.message),
      );
    }
  });

  test('a server that does not answer in real time is named, with the request', async (t) => {
    const server = await timedServer(t, () => ({ end: 'never' }));
    await assert.rejects(
      timed('no answer', { serverURL: server.url, seed: 1, realWaitSecsMax: 0.3 }, () =>
        fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: '{}' }),
      ),
      (error) =>
        error instanceof ClockRealWaitError &&
        /POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions got no whole answer within 0.3 s of real time/.test(error.message),
    );
  });
});

test("Node's own fetch keeps real timers: the process's first fetch, on the clock, puts none on it", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(here, 'fixtures', 'clock-first-fetch.mjs')]);
  assert.deepEqual(JSON.parse(stdout), { text: 'ok', fakeTimersInFlight: 0, stackTraceLimit: 10 });
});

test("a lowered Error.stackTraceLimit still routes undici's timers to real time, and is left as it was", async () => {
  for (const limit of ['0', '1']) {
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(here, 'fixtures', 'clock-first-fetch.mjs'), limit]);
    assert.deepEqual(JSON.parse(stdout), { text: 'ok', fakeTimersInFlight: 0, stackTraceLimit: Number(limit) });
  }
});

test("the openai SDK's own backoff draws its jitter from the seed: one seed, one schedule", async (t) => {
  // Two 503s without Retry-After, then an answer: the SDK backs off 0.5 s, then 1 s, each
  // less up to 25 % of jitter from Math.random.
  let calls = 0;
  const completion = { id: 'c', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] };
  const server = await timedServer(t, () => {
    calls += 1;
    const ok = calls % 3 === 0;
    return {
      status: ok ? 200 : 503,
      headers: { 'content-type': 'application/json', 'x-umi-timing': timing(1000, 1000, 1000, 1000, 'complete') },
      chunks: [JSON.stringify(ok ? completion : { error: { message: 'overloaded' } })],
    };
  });
  const schedule = (seed) =>
    runOnClock({ serverURL: server.url, seed }, async (clock) => {
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 2 });
      await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      return clock.requests.map((r) => r.clockUs);
    });
  const [a, b, other] = [await schedule(11), await schedule(11), await schedule(12)];
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, other);
  assert.equal(a.length, 3);
  const waits = [a[1] - a[0] - 1000, a[2] - a[1] - 1000];
  assert.ok(waits[0] > 375_000 && waits[0] <= 500_000 && waits[1] > 750_000 && waits[1] <= 1_000_000, JSON.stringify(waits));
});

describe('x-umi-timing', () => {
  test('reads the header in its one form', () => {
    assert.deepEqual(parseTiming('head_us=1, first_us=2, last_us=3, end_us=600000003, ending=stall'), {
      headUs: 1,
      firstUs: 2,
      lastUs: 3,
      endUs: 600000003,
      ending: 'stall',
    });
  });
  test('refuses anything else, naming the header', () => {
    for (const [value, says] of [
      [undefined, /is missing/],
      ['head_us=1,first_us=2,last_us=3,end_us=3,ending=complete', /is not `head_us=H/],
      ['first_us=2, head_us=1, last_us=3, end_us=3, ending=complete', /is not `head_us=H/],
      ['head_us=-1, first_us=2, last_us=3, end_us=3, ending=complete', /is not `head_us=H/],
      ['head_us=1, first_us=2, last_us=3, end_us=3, ending=done', /ending=done, not one of complete, reset, stall/],
      ['head_us=5, first_us=2, last_us=3, end_us=3, ending=complete', /head_us <= first_us <= last_us <= end_us/],
      ['head_us=1, first_us=2, last_us=3, end_us=18446744073709551615, ending=reset', /end_us=18446744073709551615, past 2\^53 - 1/],
    ]) {
      assert.throws(() => parseTiming(value), (error) => error instanceof TimingHeaderError && error.header === 'x-umi-timing' && says.test(error.message));
    }
  });
});

describe('a run leaves nothing behind', () => {
  test('Math.random is SplitMix64 from the seed during the run, and the real one after', async () => {
    // splitmix64.c's first output for seed 0 is 0xe220a8397b1dcdaf.
    assert.equal(seededRandom(0)(), Number(0xe220a8397b1dcdafn >> 11n) / 2 ** 53);
    const draws = () => runOnClock({ serverURL: 'http://127.0.0.1:9', seed: '18446744073709551615' }, () => [Math.random(), Math.random()]);
    const [first, second] = [await draws(), await draws()];
    assert.deepEqual(first, second);
    assert.notDeepEqual(first, await runOnClock({ serverURL: 'http://127.0.0.1:9', seed: 2 }, () => [Math.random(), Math.random()]));
    assert.equal(Math.random, realRandom);
  });

  test('a failing run uninstalls everything and fails with its own error; a second clock is refused', async () => {
    await assert.rejects(
      runOnClock({ serverURL: 'http://127.0.0.1:9', seed: 1 }, async () => {
        await new Promise((resolve) => setTimeout(resolve, 5000));
        await assert.rejects(runOnClock({ serverURL: 'http://127.0.0.1:9', seed: 1 }, () => 1), ClockBusyError);
        throw new Error('the agent failed');
      }),
      /the agent failed/,
    );
    assert.equal(Date, realDate);
    assert.equal(globalThis.setTimeout, realSetTimeout);
    assert.equal(globalThis.fetch, realFetch);
    assert.equal(Math.random, realRandom);
    assert.ok(Date.now() > SIM_EPOCH_UNIX_MS + 365 * 86_400_000, 'the wall clock is back');
  });

  test('bad options are named', async () => {
    for (const [options, says] of [
      [{ seed: 1 }, /serverURL must be the server's http:\/\/ URL/],
      [{ serverURL: 'http://x', seed: 1, startUs: -1 }, /startUs must be a whole number of microseconds >= 0, got -1/],
      [{ serverURL: 'http://x' }, /seed is required/],
      [{ serverURL: 'http://x', seed: 1, realWaitSecsMax: 0 }, /realWaitSecsMax must be a positive number of seconds/],
      [{ serverURL: 'http://x', seed: 1, clock: true }, /unknown option "clock"/],
    ]) {
      await assert.rejects(runOnClock(options, () => 1), says);
    }
  });
});
