// Faults aimed at one operation through the helper: `faultsFlag` checks the grammar the
// server reads (`KIND[@OPERATION][#N[..]]=P`), a rule aimed at the 2nd model call of a
// scope fires there only, and a rule naming a tool the server does not serve is refused
// by the real `dst serve` with a ServeRefusedError saying what it said.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { faultsFlag, startServer, ServeRefusedError } from '../src/index.js';
import { serve, MODEL } from './support/dst.mjs';

describe('faultsFlag reads aimed rules', () => {
  test('a small probability is written without an exponent (review finding, issue 39)', () => {
    assert.equal(faultsFlag({ 'llm.rate_limit': 1e-7 }), 'llm.rate_limit=0.0000001');
  });
  test('aims become the flag, in both forms', () => {
    assert.equal(
      faultsFlag({ 'tool.timeout@tool.call.issue_refund': 0.5, 'llm.rate_limit@llm.call#2': 1 }),
      'tool.timeout@tool.call.issue_refund=0.5,llm.rate_limit@llm.call#2=1',
    );
    assert.equal(
      faultsFlag(' tool.mcp_stream_cut@tool.mcp.request.tools/call#2..=1 , llm.timeout=0.1'),
      'tool.mcp_stream_cut@tool.mcp.request.tools/call#2..=1,llm.timeout=0.1',
    );
    assert.equal(faultsFlag('tool.mcp_stream_cut@tool.mcp.request.*=1'), 'tool.mcp_stream_cut@tool.mcp.request.*=1');
    assert.equal(faultsFlag('wire_shapes'), 'wire_shapes');
  });

  test('bad aims are named with what is wrong', () => {
    for (const [faults, says] of [
      [{ 'tool.timeout@': 1 }, /rule "tool.timeout@" is not KIND\[@OPERATION\]\[#N\[..\]\]/],
      [{ 'llm.rate_limit#0': 1 }, /`#0`: the ordinal counts from 1/],
      [{ 'llm.rate_limit@llm.call#2': 2 }, /probability 2; it must be a number in \[0, 1\]/],
      ['llm.rate_limit@llm.call', /rule "llm.rate_limit@llm.call" has no `=probability`/],
      ['tool.timeout@tool.call.pay=high', /"high" is not a probability/],
      ['tool.timeout@tool call=1', /is not KIND/],
    ]) {
      assert.throws(() => faultsFlag(faults), says);
    }
  });
});

async function chat(url, scope, n) {
  const response = await fetch(`${url}/seed/3/scope/${scope}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: `question ${n}` }] }),
  });
  await response.text();
  return [response.status, response.headers.get('x-umi-faults')];
}

test('a rule aimed at the 2nd model call of a scope fires there only', async () => {
  const server = await serve({ faults: { 'llm.rate_limit@llm.call#2': 1 } });
  for (const scope of ['run-a', 'run-b']) {
    const seen = [];
    for (let n = 0; n < 4; n++) seen.push(await chat(server.url, scope, n));
    assert.deepEqual(seen, [
      [200, 'none'],
      [429, 'llm.rate_limit@llm.call'],
      [200, 'none'],
      [200, 'none'],
    ]);
  }
});

test('a tool the server does not serve is refused by the server, by name', async () => {
  await assert.rejects(startServer({ faults: { 'tool.timeout@tool.call.refund': 1 } }), (error) => {
    assert.ok(error instanceof ServeRefusedError, error);
    assert.match(error.reason, /--faults "tool.timeout@tool.call.refund=1": no tool "refund" is served/);
    assert.match(error.message, /^startServer: dst serve refused its options: /);
    return true;
  });
});
