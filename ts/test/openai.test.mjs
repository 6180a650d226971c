// openai-node over `dst serve`, no faults: a chat completion asked for whole
// (`stream: false`), by default (no `stream`), streamed, and streamed with usage, is the
// same answer: text, tool calls and finish reason (and usage, where both report it).
// Backs the base URL row: new OpenAI({ baseURL: umi.openaiBaseURL }) (with /v1).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { testContext } from '../src/index.js';
import { serve, MODEL } from './support/dst.mjs';

const server = await serve();

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'lookup_order',
      description: 'Find an order by its id',
      parameters: {
        type: 'object',
        properties: { order_id: { type: 'string' } },
        required: ['order_id'],
        additionalProperties: false,
      },
    },
  },
];
const MESSAGES = [
  { role: 'system', content: 'You are a support agent.' },
  { role: 'user', content: 'Where is my order 8812?' },
];

/** The answer of a whole completion. */
function wholeAnswer(completion) {
  const [choice] = completion.choices;
  return {
    content: choice.message.content ?? '',
    toolCalls: (choice.message.tool_calls ?? []).map((c) => ({ name: c.function.name, arguments: c.function.arguments })),
    finish: choice.finish_reason,
    usage: completion.usage && { prompt: completion.usage.prompt_tokens, completion: completion.usage.completion_tokens },
  };
}

/** The answer of a stream, put together from its deltas. */
async function streamedAnswer(stream) {
  let content = '';
  let finish = null;
  let usage;
  const calls = [];
  for await (const chunk of stream) {
    if (chunk.usage) usage = { prompt: chunk.usage.prompt_tokens, completion: chunk.usage.completion_tokens };
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta?.content ?? '';
    for (const delta of choice.delta?.tool_calls ?? []) {
      calls[delta.index] ??= { name: '', arguments: '' };
      calls[delta.index].name += delta.function?.name ?? '';
      calls[delta.index].arguments += delta.function?.arguments ?? '';
    }
    finish = choice.finish_reason ?? finish;
  }
  return { content, toolCalls: calls.filter(Boolean), finish, usage };
}

const without = (answer, key) => Object.fromEntries(Object.entries(answer).filter(([k]) => k !== key));

test('streamed, whole, default and streamed-with-usage completions agree', async () => {
  const base = testContext({ server, testId: 'openai::agree' });
  const kinds = { text: 0, tools: 0 };
  for (let i = 0; i < 6; i++) {
    // Six seeds, each asked four ways, each way in a fresh scope (so each is the first
    // time the server sees it).
    const seed = (BigInt(base.seed) + BigInt(i)).toString();
    const client = () =>
      new OpenAI({ baseURL: testContext({ server, testId: 'openai::agree', seed }).openaiBaseURL, apiKey: 'unused' });
    const ask = { model: MODEL, messages: MESSAGES, tools: TOOLS };
    const whole = wholeAnswer(await client().chat.completions.create({ ...ask, stream: false }));
    const byDefault = wholeAnswer(await client().chat.completions.create(ask));
    const streamed = await streamedAnswer(await client().chat.completions.create({ ...ask, stream: true }));
    const withUsage = await streamedAnswer(
      await client().chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } }),
    );
    const what = `seed ${seed}`;
    assert.deepEqual(byDefault, whole, `${what}: default vs stream: false`);
    assert.deepEqual(without(streamed, 'usage'), without(whole, 'usage'), `${what}: stream: true vs whole`);
    assert.deepEqual(withUsage, whole, `${what}: include_usage stream vs whole`);
    assert.ok(whole.usage, `${what}: a whole completion reports usage`);
    kinds[whole.toolCalls.length ? 'tools' : 'text'] += 1;
    for (const call of whole.toolCalls) {
      assert.equal(call.name, 'lookup_order');
      assert.equal(typeof JSON.parse(call.arguments).order_id, 'string', `${what}: arguments valid JSON`);
    }
  }
  assert.ok(kinds.text > 0 && kinds.tools > 0, `six seeds should give both texts and tool calls: ${JSON.stringify(kinds)}`);
});

test("the SDK's stream helper assembles the same message as a whole completion", async () => {
  const umi = testContext({ server, testId: 'openai::helper' });
  const ask = { model: MODEL, messages: MESSAGES, tools: TOOLS };
  const whole = await new OpenAI({ baseURL: umi.openaiBaseURL, apiKey: 'unused' }).chat.completions.create(ask);
  const runner = new OpenAI({ baseURL: umi.rerun().openaiBaseURL, apiKey: 'unused' }).chat.completions.stream(ask);
  const final = await runner.finalChatCompletion();
  assert.deepEqual(
    { ...wholeAnswer(final), usage: undefined },
    { ...wholeAnswer(whole), usage: undefined },
  );
});
