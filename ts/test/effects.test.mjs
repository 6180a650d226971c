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
