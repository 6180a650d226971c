// The helper against the real `dst serve`: a server starts and stops cleanly; a test's
// run replays exactly under a fresh scope on a used server (also interleaved with
// another run) and on a fresh one, by path and by headers; the trace holds the run's own
// entries; a cut stream is caught until the request is re-sent.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { testContext, CutStreamError } from '../src/index.js';
import { serve, MODEL } from './support/dst.mjs';

// About half the requests are refused: five turns all answered first time would be a
// 3% chance, so the runs below do meet retries and later occurrences.
const FAULTS = { 'llm.rate_limit': 0.4, 'llm.service_unavailable': 0.2 };
const used = await serve({ faults: FAULTS });

/**
 * Five turns of a conversation over raw HTTP, each request retried (at most 6 times)
 * until it is answered: what every attempt got, bytes included.
 */
async function converse(base, headers = {}) {
  const attempts = [];
  const messages = [{ role: 'user', content: 'Plan a picnic for four' }];
  for (let turn = 0; turn < 5; turn++) {
    for (let attempt = 0; attempt < 6; attempt++) {
      const response = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ model: MODEL, messages }),
      });
      const body = await response.text();
      attempts.push({
        status: response.status,
        occurrence: response.headers.get('x-umi-occurrence'),
        faults: response.headers.get('x-umi-faults'),
        body,
      });
      if (response.ok) {
        messages.push({ role: 'assistant', content: JSON.parse(body).choices[0].message.content ?? '' });
        messages.push({ role: 'user', content: `Now turn ${turn + 1}` });
        break;
      }
    }
  }
  return attempts;
}

test('a run replays byte for byte under a fresh scope, on a used server and on a fresh one', async () => {
  const first = testContext({ server: used, testId: 'helper::replay' });
  const answers = await converse(first.baseURL);
  assert.ok(answers.some((a) => a.status !== 200), 'the faults should have refused some attempt');
  assert.ok(answers.some((a) => a.occurrence !== '0'), 'a retried request should have met a later occurrence');

  // Two more runs on the same server at once: interleaved, each still replays.
  const [second, third] = [first.rerun(), first.rerun()];
  const [again, andAgain] = await Promise.all([converse(second.baseURL), converse(third.baseURL)]);
  assert.deepEqual(again, answers);
  assert.deepEqual(andAgain, answers);

  const fresh = await serve({ faults: FAULTS });
  const elsewhere = testContext({ server: fresh, testId: 'helper::replay' });
  assert.deepEqual(await converse(elsewhere.baseURL), answers);

  const hashes = await Promise.all(
    [first, second, third, elsewhere].map(async (umi) => (await umi.traceWithSummary()).summary.session_trace_hash),
  );
  assert.equal(new Set(hashes).size, 1, `one trace hash for four runs of one test: ${hashes}`);
});

test('headers name the seed and scope as well as the path does', async () => {
  const byPath = testContext({ server: used, testId: 'helper::headers' });
  const byHeaders = byPath.rerun();
  const answers = await converse(byPath.baseURL);
  assert.deepEqual(await converse(used.url, byHeaders.headers), answers);
  const entries = await byHeaders.trace();
  assert.equal(entries.length, answers.length);
});

test("the trace holds the run's own entries, seeds as exact decimal strings", async () => {
  const umi = testContext({ server: used, testId: 'helper::trace', seed: '18446744073709551557' });
  const other = testContext({ server: used, testId: 'helper::trace::other' });
  const answers = await converse(umi.baseURL);
  await converse(other.baseURL);
  const entries = await umi.trace();
  assert.equal(entries.length, answers.length);
  for (const entry of entries) {
    assert.equal(entry.scope, umi.scope);
    assert.equal(entry.seed, '18446744073709551557');
    assert.equal(typeof entry.run_seed, 'string');
    assert.match(entry.request_hash, /^[0-9a-f]{64}$/);
  }
  const fired = await umi.faultsFired();
  // The trace's faults are the ones each response's x-umi-faults header named.
  const named = answers.flatMap((a) => (a.faults && a.faults !== 'none' ? a.faults.split(',') : []));
  assert.deepEqual([...fired].sort(), named.sort());
  for (const fault of fired) assert.match(fault, /^llm\.(rate_limit|service_unavailable)@/);
});

test('a cut stream handed over as the answer fails the check; the complete retry passes', async () => {
  const cutting = await serve({ faults: { 'llm.stream_cut': 1 } });
  const umi = testContext({ server: cutting, testId: 'helper::cut' });
  const request = {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'Count to ten' }] }),
  };
  const send = async () => {
    try {
      const response = await fetch(`${umi.openaiBaseURL}/chat/completions`, request);
      await response.text();
    } catch {
      // A reset is one way a stream is cut.
    }
  };
  await send();
  const [cut] = (await umi.trace()).filter((entry) => entry.cut);
  assert.ok(cut, 'llm.stream_cut=1 should cut the stream');
  assert.equal(cut.carried.whole, false);
  assert.equal(cut.arrival, 0);
  // A run that answered and received nothing whole after the cut: found.
  await assert.rejects(umi.checkCutStreams({ answered: true }), (error) => {
    assert.ok(error instanceof CutStreamError);
    assert.equal(error.cut.length, 1);
    assert.equal(error.cut[0].request_hash, cut.request_hash);
    return true;
  });
  if (cut.carried.text.trim()) {
    await assert.rejects(umi.checkCutStreams({ answer: cut.carried.text }), /the final answer is the partial text/);
  }
  assert.equal((await umi.checkCutStreams({ answered: false })).findings.length, 0);
  await send(); // the retry (itself cut: p=1)
  const afterRetry = await umi.checkCutStreams({ answered: false });
  assert.equal(afterRetry.cut.length, 2);
  assert.deepEqual(afterRetry.cut.map((e) => e.arrival).sort(), [0, 1]);
});

test('reset forgets occurrence counts: the same scope then answers as a fresh one', async () => {
  const server = await serve({ faults: FAULTS });
  const umi = testContext({ server, testId: 'helper::reset' });
  const answers = await converse(umi.baseURL);
  await server.reset();
  assert.equal((await umi.trace()).length, 0);
  assert.deepEqual(await converse(umi.baseURL), answers);
});
