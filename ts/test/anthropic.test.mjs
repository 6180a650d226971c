// @anthropic-ai/sdk over `dst serve`, no faults: a message asked for whole and the same
// message streamed (the SDK's stream helper, and raw stream events put together) agree:
// content blocks (text, tool_use name and input), stop reason, output tokens.
// Backs the base URL row: new Anthropic({ baseURL: umi.anthropicBaseURL }) (no /v1).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';

import { testContext } from '../src/index.js';
import { serve, MODEL } from './support/dst.mjs';

const server = await serve();

const TOOLS = [
  {
    name: 'lookup_order',
    description: 'Find an order by its id',
    input_schema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
  },
];
const ASK = {
  model: MODEL,
  max_tokens: 1024,
  system: 'You are a support agent.',
  messages: [{ role: 'user', content: 'Where is my order 8812?' }],
  tools: TOOLS,
};

/** What a message says, without ids. */
function answer(message) {
  return {
    content: message.content.map((block) =>
      block.type === 'text'
        ? { type: 'text', text: block.text }
        : block.type === 'tool_use'
          ? { type: 'tool_use', name: block.name, input: block.input }
          : { type: block.type },
    ),
    stop: message.stop_reason,
    outputTokens: message.usage.output_tokens,
  };
}

/** A message put together from raw stream events. */
async function fromEvents(stream) {
  const blocks = [];
  let stop = null;
  let outputTokens = null;
  for await (const event of stream) {
    if (event.type === 'content_block_start') {
      blocks[event.index] = { ...event.content_block, partial: '' };
    } else if (event.type === 'content_block_delta') {
      const block = blocks[event.index];
      if (event.delta.type === 'text_delta') block.text += event.delta.text;
      if (event.delta.type === 'input_json_delta') block.partial += event.delta.partial_json;
    } else if (event.type === 'message_delta') {
      stop = event.delta.stop_reason ?? stop;
      outputTokens = event.usage?.output_tokens ?? outputTokens;
    }
  }
  const content = blocks.map(({ partial, ...block }) =>
    block.type === 'tool_use' ? { ...block, input: partial ? JSON.parse(partial) : {} } : block,
  );
  return answer({ content, stop_reason: stop, usage: { output_tokens: outputTokens } });
}

test('a message and the same message streamed agree', async () => {
  const base = testContext({ server, testId: 'anthropic::agree' });
  const kinds = { text: 0, tools: 0 };
  for (let i = 0; i < 8; i++) {
    // Eight seeds, tools offered on every other one; each way of asking in a fresh scope.
    const ask = i % 2 === 0 ? ASK : { ...ASK, tools: undefined };
    const seed = (BigInt(base.seed) + BigInt(i)).toString();
    const client = () =>
      new Anthropic({ baseURL: testContext({ server, testId: 'anthropic::agree', seed }).anthropicBaseURL, apiKey: 'unused' });
    const whole = answer(await client().messages.create(ask));
    const helper = answer(await client().messages.stream(ask).finalMessage());
    const raw = await fromEvents(await client().messages.create({ ...ask, stream: true }));
    assert.deepEqual(helper, whole, `seed ${seed}: messages.stream() vs messages.create()`);
    assert.deepEqual(raw, whole, `seed ${seed}: stream: true events vs messages.create()`);
    const calls = whole.content.filter((block) => block.type === 'tool_use');
    kinds[calls.length ? 'tools' : 'text'] += 1;
    for (const call of calls) assert.equal(typeof call.input.order_id, 'string');
  }
  assert.ok(kinds.text > 0 && kinds.tools > 0, `eight seeds should give both texts and tool calls: ${JSON.stringify(kinds)}`);
});
