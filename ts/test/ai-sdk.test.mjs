// The Vercel AI SDK (`ai`, `@ai-sdk/openai`, `@ai-sdk/anthropic`) over `dst serve`, on
// three models: `openai(model)` (the Responses API, the provider's default),
// `openai.chat(model)` (chat completions) and `anthropic(model)` (Messages).
//
// - a tool-calling loop (generateText, tools, several steps) completes;
// - the same seed replays on a used server and on a fresh one;
// - streamText ends with the same steps (text, tool calls, finish) as generateText;
// - generateObject with a zod schema is valid over 20 seeds;
// - under rate limits, 503s and cut streams, every run ends in an answer or in one of
//   the SDK's own errors (AISDKError: APICallError, RetryError, ...), and an answer that
//   is a cut stream's partial text is reported by checkCutStreams (which judges evidence:
//   the answer handed over, the later requests' histories, the tools that ran).
//
// Backs the base URL rows: createOpenAI({ baseURL: umi.v1BaseURL }) and
// createAnthropic({ baseURL: umi.v1BaseURL }): both AI SDK providers want the /v1.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, generateObject, streamText, tool, stepCountIs, Output, AISDKError } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { z } from 'zod';

import { testContext, CutStreamError, describeEntry } from '../src/index.js';
import { serve, pool, MODEL } from './support/dst.mjs';

const server = await serve();

/** The models, each with the path its requests must take. */
const PROVIDERS = {
  'openai (Responses)': {
    path: '/v1/responses',
    model: (umi) => createOpenAI({ baseURL: umi.v1BaseURL, apiKey: 'unused' })(MODEL),
  },
  'openai.chat': {
    path: '/v1/chat/completions',
    model: (umi) => createOpenAI({ baseURL: umi.v1BaseURL, apiKey: 'unused' }).chat(MODEL),
  },
  anthropic: {
    path: '/v1/messages',
    model: (umi) => createAnthropic({ baseURL: umi.v1BaseURL, apiKey: 'unused' })(MODEL),
  },
};

const ORDERS = { 8812: 'shipped', 9004: 'delayed' };
const TOOLS = {
  lookupOrder: tool({
    description: "Look up an order's status by its id",
    inputSchema: z.object({ orderId: z.string() }),
    execute: async ({ orderId }) => ({ orderId, status: ORDERS[orderId] ?? 'unknown' }),
  }),
};
const AGENT = {
  system: 'You are a support agent. Use the tools to answer.',
  prompt: 'Where are my orders 8812 and 9004?',
  tools: TOOLS,
  stopWhen: stepCountIs(5),
  maxOutputTokens: 1024,
};

/** What a run did, step by step, without ids or timings. */
function steps(result) {
  return result.steps.map((step) => ({
    text: step.text,
    toolCalls: step.toolCalls.map((call) => ({ tool: call.toolName, input: call.input })),
    toolResults: step.toolResults.map((r) => ({ tool: r.toolName, output: r.output })),
    finish: step.finishReason,
  }));
}

/** Seeds `count` contexts of one test id: consecutive seeds from the derived one. */
function contexts(testId, count, target = server) {
  const base = testContext({ server: target, testId });
  return Array.from({ length: count }, (_, i) =>
    testContext({ server: target, testId, seed: (BigInt(base.seed) + BigInt(i)).toString() }),
  );
}

for (const [name, provider] of Object.entries(PROVIDERS)) {
  test(`${name}: a tool-calling loop completes, one request per step at ${provider.path}`, async () => {
    const runs = await pool(
      contexts(`ai-sdk::loop::${name}`, 6).map((umi) => async () => {
        const result = await generateText({ model: provider.model(umi), ...AGENT });
        return { umi, result, entries: await umi.trace() };
      }),
    );
    let looped = 0;
    for (const { umi, result, entries } of runs) {
      const what = `seed ${umi.seed}`;
      const done = steps(result);
      assert.ok(['stop', 'length', 'tool-calls'].includes(result.finishReason), `${what}: finish ${result.finishReason}`);
      assert.equal(entries.length, done.length, `${what}: one request per step`);
      for (const entry of entries) assert.equal(entry.path, provider.path, `${what}: ${entry.path}`);
      done.forEach((step, i) => {
        // Every call was answered by the tool, and the loop went on unless out of steps.
        assert.equal(step.toolResults.length, step.toolCalls.length, `${what} step ${i}`);
        if (step.finish === 'tool-calls' && i < 4) assert.ok(done[i + 1], `${what}: a step after step ${i}'s tool calls`);
      });
      if (done.length >= 2 && done[0].toolCalls.length > 0 && done.at(-1).finish === 'stop') looped += 1;
    }
    assert.ok(looped > 0, 'some seed should call a tool, then answer');
  });

  test(`${name}: the same seed replays on a used server and on a fresh one`, async () => {
    const fresh = await serve();
    const [umi] = contexts(`ai-sdk::replay::${name}`, 1);
    const again = umi.rerun();
    const elsewhere = testContext({ server: fresh, testId: umi.testId, seed: umi.seed });
    const first = steps(await generateText({ model: provider.model(umi), ...AGENT }));
    const [second, third] = await Promise.all(
      [again, elsewhere].map(async (u) => steps(await generateText({ model: provider.model(u), ...AGENT }))),
    );
    assert.deepEqual(second, first, 'a used server');
    assert.deepEqual(third, first, 'a fresh server');
    const hashes = await Promise.all([umi, again, elsewhere].map(async (u) => (await u.traceWithSummary()).summary.session_trace_hash));
    assert.equal(new Set(hashes).size, 1, `the three runs' trace hashes: ${hashes}`);
  });

  test(`${name}: streamText ends with the same steps as generateText`, async () => {
    await pool(
      contexts(`ai-sdk::stream::${name}`, 5).map((umi) => async () => {
        const whole = steps(await generateText({ model: provider.model(umi), ...AGENT }));
        const errors = [];
        const streamed = streamText({ model: provider.model(umi.rerun()), ...AGENT, onError: ({ error }) => errors.push(error) });
        const text = await streamed.text;
        const streamedSteps = steps({ steps: await streamed.steps });
        assert.deepEqual(errors, [], `seed ${umi.seed}: no stream errors without faults`);
        assert.deepEqual(streamedSteps, whole, `seed ${umi.seed}`);
        assert.equal(text, whole.at(-1).text);
      }),
    );
  });

  test(`${name}: generateObject with a zod schema is valid over 20 seeds`, async () => {
    const schema = z.object({
      title: z.string(),
      priority: z.enum(['low', 'normal', 'urgent']),
      steps: z.array(z.object({ action: z.string(), minutes: z.number().int() })),
      escalate: z.boolean(),
    });
    await pool(
      contexts(`ai-sdk::object::${name}`, 20).map((umi) => async () => {
        const { object, finishReason } = await generateObject({
          model: provider.model(umi),
          schema,
          prompt: 'Plan how to handle a late delivery complaint.',
          maxOutputTokens: 1024,
        });
        const parsed = schema.safeParse(object);
        assert.ok(parsed.success, `seed ${umi.seed}: ${JSON.stringify(parsed.error?.issues)}`);
        assert.equal(finishReason, 'stop', `seed ${umi.seed}`);
      }),
    );
  });
}

test('openai.chat: generateText with Output.object gives a valid object', async () => {
  // `.nullable()`, not `.optional()`: OpenAI's strict mode needs every key required (the
  // next test shows the refusal an optional field gets, as in production).
  const schema = z.object({ answer: z.string(), confidence: z.number().min(0).max(1).nullable(), sources: z.array(z.string()) });
  await pool(
    contexts('ai-sdk::output', 8).map((umi) => async () => {
      const result = await generateText({
        model: PROVIDERS['openai.chat'].model(umi),
        output: Output.object({ schema }),
        prompt: 'Where is order 8812?',
        maxOutputTokens: 1024,
      });
      assert.ok(schema.safeParse(result.output).success, `seed ${umi.seed}: ${JSON.stringify(result.output)}`);
    }),
  );
});

test('openai.chat: an optional field in a strict schema is refused as OpenAI refuses it', async () => {
  const schema = z.object({ answer: z.string(), confidence: z.number().optional() });
  const [umi] = contexts('ai-sdk::strict-refusal', 1);
  await assert.rejects(
    generateText({
      model: PROVIDERS['openai.chat'].model(umi),
      output: Output.object({ schema }),
      prompt: 'Where is order 8812?',
      maxOutputTokens: 256,
    }),
    (error) => {
      assert.equal(error.name, 'AI_APICallError');
      assert.equal(error.statusCode, 400);
      assert.match(error.message, /'required' is required to be supplied and to be an array including every key in properties\. Missing 'confidence'\./);
      return true;
    },
  );
});

test('under rate limits, 503s and cut streams: an answer or an AI SDK error; answers from cut streams reported', async (t) => {
  const faulty = await serve({
    faults: { 'llm.rate_limit': 0.15, 'llm.service_unavailable': 0.1, 'llm.stream_cut': 0.2 },
  });
  const jobs = [];
  for (const [name, provider] of Object.entries(PROVIDERS)) {
    for (const mode of ['generateText', 'streamText']) {
      for (const umi of contexts(`ai-sdk::faults::${name}::${mode}`, 8, faulty)) {
        jobs.push(async () => {
          const run = { name, mode, umi, streamErrors: [] };
          try {
            if (mode === 'generateText') {
              const result = await generateText({ model: provider.model(umi), ...AGENT });
              run.finish = result.finishReason;
              run.text = result.text;
            } else {
              const result = streamText({
                model: provider.model(umi),
                ...AGENT,
                onError: ({ error }) => run.streamErrors.push(error),
              });
              run.text = await result.text;
              run.finish = await result.finishReason;
            }
          } catch (error) {
            run.error = error;
          }
          // An answer: nothing thrown, no error in the stream, and not finished by one.
          run.answered = !run.error && run.streamErrors.length === 0 && run.finish !== 'error';
          run.fired = await umi.faultsFired();
          try {
            // The text handed over is judged; an empty "answer" only by whether the last
            // model response the run received was cut.
            const outcome = !run.answered ? { answered: false } : run.text?.trim() ? { answer: run.text } : { answered: true };
            run.cuts = await umi.checkCutStreams(outcome);
          } catch (error) {
            if (!(error instanceof CutStreamError)) throw error;
            run.finding = error;
          }
          return run;
        });
      }
    }
  }
  const runs = await pool(jobs, 24);

  const tally = {};
  for (const run of runs) {
    const what = `${run.name} ${run.mode} seed ${run.umi.seed}`;
    if (run.error) {
      assert.ok(AISDKError.isInstance(run.error), `${what}: not the SDK's own error: ${run.error?.stack ?? run.error}`);
    }
    // The SDK's silent truncation: a stream that ended early, handed back as text with
    // finish reason "other" and no error. The check must catch every one of them.
    if (run.answered && run.finish === 'other') {
      assert.ok(run.finding, `${what}: finish "other" with no cut-stream finding (faults: ${run.fired})`);
    }
    const outcome = run.error ? `error ${run.error.name}` : run.answered ? `answer (${run.finish})` : `stream error (${run.finish})`;
    const key = `${run.name} ${run.mode}: ${outcome}${run.finding ? ', acted on a cut' : ''}`;
    tally[key] = (tally[key] ?? 0) + 1;
  }
  const findings = runs.filter((run) => run.finding);
  const fired = runs.flatMap((run) => run.fired);
  for (const [key, count] of Object.entries(tally).sort()) t.diagnostic(`${count} x ${key}`);
  t.diagnostic(
    `${findings.length} of ${runs.length} runs acted on a cut stream ` +
      '(the SDK took a truncated response for a whole one); first: ' +
      (findings[0]
        ? `${findings[0].name} ${findings[0].mode} seed ${findings[0].umi.seed}: ${describeEntry(findings[0].finding.cut[0])}: ` +
          findings[0].finding.findings[0].message
        : 'none'),
  );
  // The faults did happen, so the outcomes above mean something.
  for (const kind of ['llm.rate_limit', 'llm.service_unavailable', 'llm.stream_cut']) {
    assert.ok(fired.some((f) => f.startsWith(`${kind}@`)), `${kind} never fired over ${runs.length} runs`);
  }
  assert.ok(runs.some((run) => run.answered), 'some run should answer');
  assert.ok(runs.some((run) => !run.answered), 'some run should end in an error');
});
