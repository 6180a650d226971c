// Not run: `tsc -p .` checks that the declarations in src/index.d.ts describe the API as
// a TypeScript user calls it (and refuse what they should).

import {
  startServer,
  testContext,
  forNodeTest,
  forJest,
  forVitest,
  CutStreamError,
  runOnClock,
  fetchOnClock,
  type Clock,
  type TestContext,
  type TraceEntry,
} from '../src/index.js';
import { test } from 'node:test';

export async function usage(): Promise<void> {
  const server = await startServer({ faults: { 'llm.rate_limit': 0.2 }, timeScale: 0, flags: ['--model', 'm'] });
  const umi: TestContext = testContext({ server, testId: 'file::name', seed: 5n });
  const seed: string = umi.seed;
  const base: string = umi.openaiBaseURL + umi.anthropicBaseURL + umi.v1BaseURL;
  const entries: TraceEntry[] = await umi.trace();
  const hash: string = (await umi.traceWithSummary()).summary.session_trace_hash;
  const { cut, findings } = await umi.checkCutStreams({ answered: true });
  await umi.checkCutStreams({ answer: 'the text the run returned' });
  umi.reportToolCall('issue_refund', { amount: 216 }, 'call_1');
  const problems: string[] = await umi.checkToolResults();
  const line: string = umi.replayLine('name');
  void [seed, base, entries, hash, cut, findings, problems, line];
  try {
    await umi.checkCutStreams({ answered: false });
  } catch (error) {
    if (error instanceof CutStreamError) void [error.cut[0]?.request_hash, error.findings[0]?.kind];
  }
  test('node', forNodeTest(server, async (t, u) => { t.diagnostic(u.seed); }));
  const jestBody: () => Promise<number> = forJest(() => server, async (u) => u.seed.length);
  void jestBody;
  const fromVitest: TestContext = forVitest(server, { task: { name: 'n' }, onTestFailed: () => {} });
  void fromVitest;
  const answer: string = await umi.onClock(async (clock: Clock) => {
    const started: number = clock.nowUs();
    const response = await clock.fetch(umi.openaiBaseURL + '/chat/completions');
    void [started, clock.requests[0]?.timing?.headUs];
    return response.text();
  }, { startUs: 1_000_000 });
  const n: number = await runOnClock({ serverURL: server.url, seed: '7' }, () => 1);
  test('on the clock', forNodeTest(server, async (_t, u) => { void u; }, { clock: true }));
  void [answer, n, fetchOnClock];
  await server.close();

  // @ts-expect-error a test id is a string
  testContext({ server, testId: 5 });
  // @ts-expect-error the answer or whether the run answered must be said
  await umi.checkCutStreams({});
  // @ts-expect-error an answer is text
  await umi.checkCutStreams({ answer: 5 });
  // @ts-expect-error the clock's server and seed are the context's
  await umi.onClock(() => 1, { seed: '7' });
  // @ts-expect-error a run on the clock needs its seed
  await runOnClock({ serverURL: server.url }, () => 1);
  // @ts-expect-error faults are probabilities
  await startServer({ faults: { 'llm.rate_limit': 'often' } });
}
