// The base URL rows of the README, both ways: each client answers with the form the
// table gives it, and gets a 404 with the other (with or without /v1), so the table is
// not a guess. The answering side of each row is also covered at length in
// openai.test.mjs, anthropic.test.mjs and ai-sdk.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { generateText, APICallError } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';

import { testContext } from '../src/index.js';
import { serve, MODEL } from './support/dst.mjs';

const server = await serve();
const umi = () => testContext({ server, testId: 'base-urls' });
const MESSAGES = [{ role: 'user', content: 'hi' }];

test('openai-node: openaiBaseURL (…/v1) answers; the root does not', async () => {
  const ok = await new OpenAI({ baseURL: umi().openaiBaseURL, apiKey: 'k' }).chat.completions.create({ model: MODEL, messages: MESSAGES });
  assert.equal(typeof ok.choices[0].message.content, 'string');
  const wrong = new OpenAI({ baseURL: umi().baseURL, apiKey: 'k', maxRetries: 0 });
  await assert.rejects(wrong.chat.completions.create({ model: MODEL, messages: MESSAGES }), (error) => error.status === 404);
});

test('@anthropic-ai/sdk: anthropicBaseURL (no /v1) answers; …/v1 does not', async () => {
  const ok = await new Anthropic({ baseURL: umi().anthropicBaseURL, apiKey: 'k' }).messages.create({ model: MODEL, max_tokens: 64, messages: MESSAGES });
  assert.equal(ok.type, 'message');
  const wrong = new Anthropic({ baseURL: umi().v1BaseURL, apiKey: 'k', maxRetries: 0 });
  await assert.rejects(wrong.messages.create({ model: MODEL, max_tokens: 64, messages: MESSAGES }), (error) => error.status === 404);
});

for (const [name, make] of [
  ['createOpenAI (Responses)', (baseURL) => createOpenAI({ baseURL, apiKey: 'k' })(MODEL)],
  ['createOpenAI .chat', (baseURL) => createOpenAI({ baseURL, apiKey: 'k' }).chat(MODEL)],
  ['createAnthropic', (baseURL) => createAnthropic({ baseURL, apiKey: 'k' })(MODEL)],
]) {
  test(`AI SDK ${name}: v1BaseURL (…/v1) answers; the root does not`, async () => {
    const ok = await generateText({ model: make(umi().v1BaseURL), prompt: 'hi', maxOutputTokens: 64 });
    assert.equal(typeof ok.text, 'string');
    await assert.rejects(
      generateText({ model: make(umi().baseURL), prompt: 'hi', maxOutputTokens: 64, maxRetries: 0 }),
      (error) => APICallError.isInstance(error) && error.statusCode === 404,
    );
  });
}
