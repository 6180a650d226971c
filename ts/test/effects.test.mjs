// checkEffects: no effect twice for one idempotency key or call id over a whole scope,
// and none for a call id no model response carried; both ways, on entries and through a
// context reading a (fake) server's trace.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { checkEffectEntries, effectsOf, EffectError, testContext } from '../src/index.js';
import { entry, fakeTraceServer } from './support/fake-trace.mjs';

function call(n, tool) {
  return entry({
    endpoint: 'mcp',
    path: '/mcp',
    request_hash: String(n).padStart(2, '0').repeat(32),
    arrival: n,
    tool: {
      name: 'issue_refund',
      arguments: { order_id: 'A-1', amount: 40 },
      call_id: null,
      idempotency_key: null,
      ran: true,
      deduplicated: false,
      side_effects: true,
      ...tool,
    },
  });
}

describe('checkEffects', () => {
  test('a resend without a key that ran twice for one call id fails, naming the tool, the id and the entries', () => {
    const entries = [call(1, { call_id: 'call_1' }), call(0, { call_id: 'call_1' })];
    assert.throws(
      () => checkEffectEntries(entries, {}, 'seed 7'),
      (error) => {
        assert.ok(error instanceof EffectError);
        assert.equal(error.kind, 'twice');
        assert.deepEqual([error.tool, error.field, error.value], ['issue_refund', 'call_id', 'call_1']);
        assert.deepEqual(
          error.effects.map((e) => e.entry.arrival),
          [0, 1],
          'in arrival order',
        );
        assert.match(error.message, /issue_refund did its effect 2 times for one call id "call_1" \(seed 7\)/);
        return true;
      },
    );
  });

  test('two effects for one idempotency key fail; a deduplicated resend passes', () => {
    const twice = [call(0, { idempotency_key: 'k' }), call(1, { idempotency_key: 'k' })];
    assert.throws(() => checkEffectEntries(twice), (error) => error.field === 'idempotency_key' && error.value === 'k');
    const deduplicated = [call(0, { idempotency_key: 'k' }), call(1, { idempotency_key: 'k', deduplicated: true })];
    assert.equal(checkEffectEntries(deduplicated).length, 1);
  });

  test('calls that did not run, tools without side effects and other calls are no double effect', () => {
    const entries = [
      call(0, { call_id: 'a' }),
      call(1, { call_id: 'a', ran: false }),
      call(2, { call_id: 'a', side_effects: false }),
      call(3, { call_id: 'b' }),
      entry({ request_hash: 'ff'.repeat(32) }),
    ];
    assert.deepEqual(
      checkEffectEntries(entries).map((e) => e.call_id),
      ['a', 'b'],
    );
  });

  test('an effect for a call id no model response carried fails, when the trace says what responses carried', () => {
    const model = entry({ carried: { whole: true, text: '', tool_calls: [{ id: 'call_1', name: 'issue_refund', arguments: '{}' }] } });
    assert.equal(checkEffectEntries([model, call(1, { call_id: 'call_1' })]).length, 1);
    assert.throws(
      () => checkEffectEntries([model, call(1, { call_id: 'call_made_up' })]),
      (error) => error.kind === 'never_asked' && error.value === 'call_made_up',
    );
    // Without `carried` in the trace nothing is judged of it.
    assert.equal(checkEffectEntries([entry(), call(1, { call_id: 'call_made_up' })]).length, 1);
  });

  test('reported calls of the tools named count as effects', () => {
    const reported = [
      { name: 'pay', arguments: {}, call_id: 'c' },
      { name: 'pay', arguments: {}, call_id: 'c' },
    ];
    assert.equal(effectsOf([], { reported }).found.length, 0);
    assert.throws(() => checkEffectEntries([], { reported, effectTools: ['pay'] }), (error) => error.tool === 'pay');
  });

  test("a context's checkEffects reads its own scope", async (t) => {
    const fake = await fakeTraceServer(t, (scope) =>
      scope.startsWith('x')
        ? []
        : [call(0, { call_id: 'c', scope }), call(1, { call_id: 'c', scope })].map((e) => ({ ...e, scope })),
    );
    const umi = testContext({ server: fake, testId: 'effects' });
    await assert.rejects(umi.checkEffects(), (error) => {
      assert.ok(error instanceof EffectError);
      assert.ok(error.message.includes(`scope ${umi.scope}`));
      return true;
    });
  });
});

// Against the real `dst serve` (tests/python/refund_tools.json: `issue_refund` honours an
// `idempotency_key`): the scope is one run, so a key sent again from a second MCP session
// is deduplicated (the first answer again) and the check passes; the same resend without
// a key refunds twice, and the check fails naming the call id.
describe('checkEffects against dst serve', async () => {
  const { serve } = await import('./support/dst.mjs');
  const path = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  const tools = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'tests', 'python', 'refund_tools.json');
  const server = await serve({ flags: ['--mcp-tools', tools] });

  async function post(url, session, message) {
    const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    if (session) headers['mcp-session-id'] = session;
    const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(message) });
    const text = await response.text();
    const data = text.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
    return { session: response.headers.get('mcp-session-id') ?? session, reply: text ? JSON.parse(data.at(-1) ?? text) : null };
  }

  /** A new MCP session that refunds order A-1 once (call id call_1, `key` if given). */
  async function refund(umi, key) {
    const url = `${umi.baseURL}/mcp`;
    const { session } = await post(url, null, {
      jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'planted', version: '1' } },
    });
    const args = { order_id: 'A-1', amount: 40, ...(key ? { idempotency_key: key } : {}) };
    const params = { name: 'issue_refund', arguments: args, _meta: { 'umi.dev/tool_call_id': 'call_1' } };
    return (await post(url, session, { jsonrpc: '2.0', id: 1, method: 'tools/call', params })).reply;
  }

  test('a key sent again from another session is deduplicated; without a key it refunds twice', async () => {
    const keyed = testContext({ server, testId: 'effects::keyed' });
    const first = await refund(keyed, 'k-1');
    const again = await refund(keyed, 'k-1');
    assert.deepEqual(again.result, first.result, "the key's first answer again");
    assert.equal((await keyed.checkEffects()).length, 1);
    assert.deepEqual(
      (await keyed.trace()).filter((e) => e.tool).map((e) => [e.tool.ran, e.tool.deduplicated]),
      [[true, false], [true, true]],
    );

    const unkeyed = testContext({ server, testId: 'effects::unkeyed' });
    await refund(unkeyed);
    await refund(unkeyed);
    await assert.rejects(unkeyed.checkEffects(), (error) => {
      assert.ok(error instanceof EffectError);
      assert.deepEqual([error.kind, error.tool, error.value], ['twice', 'issue_refund', 'call_1']);
      return true;
    });
  });
});
