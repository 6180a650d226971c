// The README's node:test example, as printed there (unit.test.mjs checks that the README
// still shows exactly the code below this header): it must run green over dst serve.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, forNodeTest } from '@umi-dst/node';

const server = await startServer({ faults: { 'llm.rate_limit': 0.2 } });
after(() => server.close());

test('the agent answers', forNodeTest(server, async (t, umi) => {
  const client = new OpenAI({ baseURL: umi.openaiBaseURL, apiKey: 'unused' });
  const reply = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  assert.ok(reply.choices[0].message.content);
}));
