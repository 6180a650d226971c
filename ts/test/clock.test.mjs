// The agent's clock against the real `dst serve` (docs/guide.md, "The agent's clock"):
// an agent on the official openai SDK waits out three rate limits as the server's
// Retry-After says, on the simulated clock, and finishes, the same way twice on one seed;
// an agent whose own 10-second deadline (setTimeout + AbortController) meets a stalled
// stream gives up at exactly start + 10 s on the clock; a server that never answers is
// the SDK's own timeout, or its connection error, when the clock says. Wall times are
// printed, never asserted.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { testContext, SIM_EPOCH_UNIX_MS } from '../src/index.js';
import { serve, MODEL } from './support/dst.mjs';

const SECOND_US = 1_000_000;
const MESSAGES = [{ role: 'user', content: 'Summarise the order history for customer 8812' }];

// The first three model requests of every scope are refused with a 429.
const limited = await serve({
  faults: { 'llm.rate_limit@llm.call#1': 1, 'llm.rate_limit@llm.call#2': 1, 'llm.rate_limit@llm.call#3': 1 },
});
// Every body stops part-way and never ends (a hang past any client's patience).
const stalled = await serve({ faults: 'network.timeout@network.body=1' });
// No response at all: every connection hangs before the head, or is refused.
const hung = await serve({ faults: 'network.timeout@network.connect=1' });
const refused = await serve({ faults: 'network.connection_refused=1' });

// A seed whose three 429s all carry a Retry-After (25, 30 and 27 s with this prompt and
// today's simulator): an OpenAI 429 does not always have one (then the SDK backs off on
// its own, 0.5 s doubling, with jitter). The test checks that the seed still does, and
// says so if it stops (then pick another: any seed whose three 429s carry one).
const SEED = '141';

/** The wait the openai SDK takes from a 429's headers (client.js retryRequest:
 * retry-after-ms, else retry-after in seconds), or null when it has neither. */
function sdkWaitMs(headers) {
  const ms = parseFloat(headers.get('retry-after-ms') ?? '');
  if (!Number.isNaN(ms)) return ms;
  const secs = parseFloat(headers.get('retry-after') ?? '');
  return Number.isNaN(secs) ? null : secs * 1000;
}

/** The agent: one question, the SDK's own retries (3 of them), on the run's clock. */
async function patientAgent(umi) {
  const started = performance.now();
  const run = await umi.onClock(async (clock) => {
    const heads = [];
    // The SDK takes its fetch as an option: the clock's, recorded on the way.
    const recording = async (input, init) => {
      const response = await clock.fetch(input, init);
      heads.push({ status: response.status, waitMs: response.ok ? null : sdkWaitMs(response.headers) });
      return response;
    };
    const client = new OpenAI({ baseURL: umi.openaiBaseURL, apiKey: 'unused', maxRetries: 3, fetch: recording });
    const completion = await client.chat.completions.create({ model: MODEL, messages: MESSAGES });
    return {
      answer: completion.choices[0].message.content,
      heads,
      requests: clock.requests.map(({ clockUs, status, timing }) => ({ clockUs, status, timing })),
      finishedUs: clock.nowUs(),
      finishedDate: new Date().toISOString(),
    };
  });
  console.log(`the patient agent (scope ${umi.scope}): ${(performance.now() - started).toFixed(1)} ms of wall time, ` +
    `${run.finishedUs / SECOND_US} s on the clock`);
  return run;
}

test('an agent on the openai SDK waits out three Retry-Afters on the clock and answers, twice alike', async () => {
  const umi = testContext({ server: limited, testId: 'clock::patient', seed: SEED });
  const first = await patientAgent(umi);
  assert.deepEqual(first.heads.map((h) => h.status), [429, 429, 429, 200]);
  assert.ok(first.answer, 'the agent answers');
  assert.ok(
    first.heads.slice(0, 3).every((h) => h.waitMs !== null),
    `seed ${SEED} no longer draws a Retry-After on each 429 (${JSON.stringify(first.heads)}): pick a seed that does`,
  );
  // Each retry went out exactly when the Retry-After it was given ran out: the head came
  // at N + H, and the SDK's setTimeout (whole milliseconds, as Node's) waited the rest.
  for (let i = 0; i < 3; i++) {
    const { clockUs, timing } = first.requests[i];
    const headMs = Math.floor((clockUs + timing.headUs) / 1000);
    assert.equal(
      first.requests[i + 1].clockUs,
      (headMs + first.heads[i].waitMs) * 1000,
      `retry ${i + 1}: sent when the ${first.heads[i].waitMs} ms the server asked for had passed`,
    );
    console.log(`retry ${i + 1}: Retry-After ${first.heads[i].waitMs / 1000} s, sent at ${first.requests[i + 1].clockUs} us`);
  }
  const last = first.requests[3];
  assert.equal(first.finishedUs, last.clockUs + last.timing.lastUs);
  assert.equal(Date.parse(first.finishedDate), SIM_EPOCH_UNIX_MS + Math.floor(first.finishedUs / 1000));
  // The server saw the clock on each request.
  const entries = await umi.trace();
  assert.deepEqual(entries.map((e) => e.clock_us), first.requests.map((r) => r.clockUs));

  // The same seed in a fresh scope: the same clock readings, the same requests.
  const again = umi.rerun();
  const second = await patientAgent(again);
  assert.deepEqual(second, first);
  const hashes = (run) => run.map((e) => [e.request_hash, e.clock_us, e.status]);
  assert.deepEqual(hashes(await again.trace()), hashes(entries));
});

test("an agent's 10-second deadline fires on a stalled stream at exactly start + 10 s", async () => {
  const umi = testContext({ server: stalled, testId: 'clock::deadline' });
  const started = performance.now();
  const run = await umi.onClock(async (clock) => {
    const client = new OpenAI({ baseURL: umi.openaiBaseURL, apiKey: 'unused', maxRetries: 0 });
    const startUs = clock.nowUs();
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), 10_000);
    let text = '';
    try {
      const stream = await client.chat.completions.create(
        { model: MODEL, messages: MESSAGES, stream: true },
        { signal: deadline.signal },
      );
      // openai-node ends the iteration quietly when its signal aborts (core/streaming.js).
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    } finally {
      clearTimeout(timer);
    }
    return { startUs, endUs: clock.nowUs(), gaveUp: deadline.signal.aborted, text, request: clock.requests[0] };
  });
  console.log(`the deadline agent: ${(performance.now() - started).toFixed(1)} ms of wall time`);
  assert.equal(run.gaveUp, true, 'the deadline fired');
  assert.equal(run.endUs, run.startUs + 10 * SECOND_US);
  assert.equal(run.request.timing.ending, 'stall');
  assert.ok(run.request.timing.lastUs < 10 * SECOND_US, 'the stream stalled before the deadline');
  // What the stream carried before it stalled reached the agent.
  const [entry] = await umi.trace();
  assert.equal(entry.end, 'stall');
  assert.equal(run.text, entry.carried.text);
});

test("no response: the SDK's own timeout on a hung server, its connection error on a refused one, on the clock", async () => {
  const outcome = async (server, timeoutMs) => {
    const umi = testContext({ server, testId: 'clock::no-response' });
    return umi.onClock(async (clock) => {
      const client = new OpenAI({ baseURL: umi.openaiBaseURL, apiKey: 'unused', maxRetries: 0, timeout: timeoutMs });
      try {
        await client.chat.completions.create({ model: MODEL, messages: MESSAGES });
        return { error: null };
      } catch (error) {
        return { error: error.constructor.name, atUs: clock.nowUs(), request: clock.requests[0] };
      }
    });
  };
  // The SDK aborts a request with no head after its `timeout` (20 s here, on the clock).
  const timedOut = await outcome(hung, 20_000);
  assert.deepEqual(
    { error: timedOut.error, atUs: timedOut.atUs, noResponse: timedOut.request.noResponse },
    { error: 'APIConnectionTimeoutError', atUs: 20 * SECOND_US, noResponse: 'stall' },
  );
  // A refused connection fails when the simulation says it closed.
  const failed = await outcome(refused, 20_000);
  assert.deepEqual(
    { error: failed.error, atUs: failed.atUs, noResponse: failed.request.noResponse },
    { error: 'APIConnectionError', atUs: failed.request.timing.endUs, noResponse: 'reset' },
  );
});
