// Paths through the helper: `testContext({ path })` (or UMI_PATH) puts the path where
// the seed goes, so a scope's requests from the branch's step on draw from another
// stream; the same path twice gives the same scope trace; `marks()` reads what the run
// reached; the replay line pins the path; a bad path is refused by part.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { parsePath, testContext } from '../src/index.js';
import { serve, MODEL } from './support/dst.mjs';

async function fiveChats(umi) {
  for (let n = 0; n < 5; n++) {
    const response = await fetch(`${umi.openaiBaseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: `question ${n}` }] }),
    });
    await response.text();
  }
  const { entries, summary } = await umi.traceWithSummary();
  const seeds = [...entries].sort((a, b) => a.arrival - b.arrival).map((e) => e.run_seed);
  return { seeds, hash: summary.session_trace_hash };
}

test('paths read and print as the server reads them, and a bad one is refused by part', () => {
  assert.deepEqual(parsePath('0x10/0x2:1'), { seed: '16', branches: [{ step: '2', stream: '1' }], text: '16/2:1' });
  assert.equal(parsePath('7').text, '7');
  for (const [text, says] of [
    ['7/3', /branch "3" is not STEP:STREAM/],
    ['7/0:1', /counts requests from 1/],
    ['7/3:1/3:2', /steps must increase/],
    ['x/1:1', /the seed/],
  ]) {
    assert.throws(() => parsePath(text, 'UMI_PATH'), says);
  }
  assert.throws(() => testContext({ server: 'http://127.0.0.1:1', testId: 't', seed: '1', path: '1/2:3' }), /seed or path, not both/);
});

test('a path replays the seed before its branch and itself exactly', async () => {
  const server = await serve({ faults: { 'llm.rate_limit': 0.3 } });
  const run = (options) => fiveChats(testContext({ server, testId: 'paths::five', env: {}, ...options }));
  const bare = await run({ seed: '7' });
  const first = await run({ path: '7/3:9913' });
  const again = await run({ env: { UMI_PATH: '7/3:9913' } });
  const other = await run({ path: '7/3:9914' });
  assert.deepEqual(first.seeds.slice(0, 2), bare.seeds.slice(0, 2));
  assert.ok([2, 3, 4].every((i) => first.seeds[i] !== bare.seeds[i] && first.seeds[i] !== other.seeds[i]));
  assert.deepEqual(again, first);
  assert.notEqual(other.hash, first.hash);
  assert.deepEqual((await run({ path: '7' })).hash, bare.hash, 'a path without branches is its seed');

  const umi = testContext({ server, testId: 'paths::marks', env: {}, path: '7/3:9913', file: 'test/path.test.mjs' });
  assert.equal(umi.headers['x-umi-seed'], '7/3:9913');
  assert.match(umi.baseURL, /\/seed\/7\/3:9913\/scope\//);
  assert.match(umi.replayLine('a test'), /^UMI_PATH=7\/3:9913 node --test /);
  await fiveChats(umi);
  const marks = await umi.marks();
  assert.ok(marks.some((m) => m.name === 'shape:200/complete/text' && m.step === 1), JSON.stringify(marks));
});
