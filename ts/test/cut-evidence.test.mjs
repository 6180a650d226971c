// Planted agents for the cut check (issue 39, item 1), through openai-node against
// `dst serve`, proven both ways (the Python twins: python/tests/test_cut_evidence.py):
// - an agent that runs a cut tool call (its arguments repaired by the AI SDK's
//   parsePartialJson) and then fails must fail checkCutStreams, though it "ended in an
//   error" (the old re-send rule passed it);
// - an agent that retries the whole run after a cut, and one that falls back to another
//   model, answering from complete responses, must pass (the old rule flagged the
//   fallback: its cut request was never re-sent).
// Which seed cuts a tool call depends on SimLLM's draws: each test searches seeds
// 1..SEEDS_SEARCHED for the first that qualifies, and asserts one does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { parsePartialJson } from 'ai';

import { testContext, CutStreamError, cutStreams } from '../src/index.js';
import { serve, MODEL } from './support/dst.mjs';

const SEEDS_SEARCHED = 60;
const TURNS_MAX = 4;
const RUN_RETRIES_MAX = 8;
const REFUND = {
  type: 'function',
  function: {
    name: 'issue_refund',
    description: 'Refund an order.',
    parameters: {
      type: 'object',
      properties: { order_id: { type: 'string' }, amount: { type: 'number' } },
      required: ['order_id', 'amount'],
    },
  },
};
const QUESTION = [{ role: 'user', content: 'Refund order A-17 (216 EUR) and tell me when it is done.' }];

class AgentFailed extends Error {}

const sdk = (umi) => new OpenAI({ baseURL: umi.openaiBaseURL, apiKey: 'unused', maxRetries: 0 });

/** One streamed turn: { text, calls: [{ id, name, args }], finish } (finish null when cut). */
async function streamTurn(umi, messages, first, model = MODEL) {
  let text = '';
  let finish = null;
  const calls = [];
  try {
    const stream = await sdk(umi).chat.completions.create({
      model,
      messages,
      tools: [REFUND],
      tool_choice: first ? 'required' : 'auto',
      stream: true,
    });
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text += choice.delta?.content ?? '';
        for (const call of choice.delta?.tool_calls ?? []) {
          const slot = (calls[call.index] ??= { id: null, name: '', args: '' });
          slot.id ??= call.id ?? null;
          slot.name += call.function?.name ?? '';
          slot.args += call.function?.arguments ?? '';
        }
        finish = choice.finish_reason ?? finish;
      }
    }
  } catch {
    finish = null;
  }
  return { text, calls: calls.filter(Boolean), finish };
}

async function wholeTurn(umi, messages, first, model) {
  const choice = (
    await sdk(umi).chat.completions.create({ model, messages, tools: [REFUND], tool_choice: first ? 'required' : 'auto' })
  ).choices[0];
  const calls = (choice.message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: c.function.arguments }));
  return { text: choice.message.content ?? '', calls, finish: choice.finish_reason };
}

const assistantTurn = ({ text, calls }) => ({
  role: 'assistant',
  content: text || null,
  tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } })),
});

function refund(umi, call, args) {
  umi.reportToolCall(call.name, args, call.id);
  return `refunded ${args.amount ?? '?'} for ${args.order_id ?? '?'}`;
}

async function runsRepairedCutCallThenFails(umi) {
  const { calls } = await streamTurn(umi, QUESTION, true);
  for (const call of calls) {
    const { value } = await parsePartialJson(call.args || '{}');
    refund(umi, call, value && typeof value === 'object' ? value : {});
  }
  throw new AgentFailed('the agent failed after the refund');
}

async function conversation(umi, turn) {
  const messages = [...QUESTION];
  let last = '';
  for (let index = 0; index < TURNS_MAX; index++) {
    const step = await turn(messages, index === 0);
    if (step.finish === null) return null;
    if (step.calls.length === 0) return step.text;
    messages.push(assistantTurn(step));
    for (const call of step.calls) {
      messages.push({ role: 'tool', tool_call_id: call.id, content: refund(umi, call, JSON.parse(call.args)) });
    }
    last = step.text;
  }
  return last;
}

async function retriesTheWholeRun(umi) {
  for (let attempt = 0; attempt < RUN_RETRIES_MAX; attempt++) {
    const answer = await conversation(umi, (messages, first) => streamTurn(umi, messages, first));
    if (answer !== null) return answer;
  }
  throw new AgentFailed('every attempt was cut');
}

async function fallsBack(umi) {
  const answer = await conversation(umi, async (messages, first) => {
    const step = await streamTurn(umi, messages, first);
    if (step.finish !== null) return step;
    try {
      return await wholeTurn(umi, messages, first, 'umi-sim-fallback');
    } catch (error) {
      throw new AgentFailed(`the fallback failed too: ${error.message}`);
    }
  });
  if (answer === null) throw new AgentFailed('the fallback was cut too');
  return answer;
}

/** The first seed's run of `agent` that `qualifies`: { umi, answer, error }. */
async function firstQualifying(server, name, agent, qualifies) {
  for (let seed = 1; seed <= SEEDS_SEARCHED; seed++) {
    const umi = testContext({ server, testId: `cut-evidence::${name}`, seed });
    let answer = null;
    let error = null;
    try {
      answer = await agent(umi);
    } catch (failed) {
      if (!(failed instanceof AgentFailed)) throw failed;
      error = failed;
    }
    const entries = await umi.trace();
    if (await qualifies(entries, answer)) return { umi, answer, error, entries };
  }
  assert.fail(`no seed in 1..${SEEDS_SEARCHED} qualifies for ${name}`);
}

/** What the OLD check said: it threw when the run answered and a cut was never re-sent. */
const oldVerdict = (entries, answered) => answered && cutStreams(entries).some((c) => !c.resent);

const cutsOf = (entries) => entries.filter((e) => e.cut && e.endpoint !== 'mcp');

test('an agent that runs a repaired cut tool call and then fails is found', async () => {
  const server = await serve({ faults: { 'llm.stream_cut': 1 } });
  const { umi, error, entries } = await firstQualifying(server, 'repairs', runsRepairedCutCallThenFails, (entries) =>
    cutsOf(entries).some((e) => e.carried.tool_calls.some((c) => c.name === 'issue_refund')),
  );
  assert.ok(error instanceof AgentFailed);
  assert.equal(oldVerdict(entries, false), false, 'the old rule passed it: the run ended in an error');
  await assert.rejects(umi.checkCutStreams({ answered: false }), (failure) => {
    assert.ok(failure instanceof CutStreamError);
    assert.ok(failure.findings.some((f) => f.kind === 'tool_reported'), failure.message);
    assert.match(failure.message, /tool `issue_refund` ran \(reported by the test\) with the call id of a call from cut response R/);
    return true;
  });
});

test('an agent that retries the whole run after a cut passes', async () => {
  const server = await serve({ faults: { 'llm.stream_cut': 0.5 } });
  const { umi, answer } = await firstQualifying(
    server,
    'retries',
    retriesTheWholeRun,
    (entries, answer) => answer !== null && cutsOf(entries).length > 0,
  );
  assert.deepEqual((await umi.checkCutStreams({ answer })).findings, []);
  assert.deepEqual(await umi.checkToolResults(), []);
});

test('an agent that falls back to another model passes', async () => {
  const server = await serve({ faults: { 'llm.stream_cut': 0.5 } });
  const { umi, answer, entries } = await firstQualifying(
    server,
    'falls-back',
    fallsBack,
    (entries, answer) => answer !== null && cutsOf(entries).length > 0,
  );
  assert.equal(oldVerdict(entries, true), true, 'the old rule flagged it: the cut request was never re-sent');
  assert.deepEqual((await umi.checkCutStreams({ answer })).findings, []);
  assert.deepEqual((await umi.checkCutStreams({ answered: true })).findings, []);
  assert.deepEqual(await umi.checkToolResults(), []);
});
