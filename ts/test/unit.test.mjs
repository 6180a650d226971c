// The helper's own logic, without `dst`: seeds, scopes, base URLs, replay lines (run for
// real through node --test), starting and stopping a stand-in server, the missing-binary
// error, trace parsing, the cut-stream check, and the three runner adapters (with
// stand-ins for what each runner hands a test).

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync, chmodSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import {
  seedForTestId,
  parseSeed,
  resolveSeed,
  freshScope,
  isScope,
  testContext,
  replayCommand,
  shellQuote,
  namePattern,
  startServer,
  findDst,
  faultsFlag,
  serveArgs,
  DstNotFoundError,
  parseJsonExact,
  parseTrace,
  fetchTrace,
  checkCutEntries,
  checkToolResultEntries,
  completePartialJson,
  argumentsFit,
  CutStreamError,
  ToolResultsError,
  forNodeTest,
  forVitest,
  forJest,
  annotateError,
} from '../src/index.js';
import { fakeTraceServer, entry } from './support/fake-trace.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.dirname(here);
const fakeDst = path.join(here, 'fixtures', 'fake-dst.sh');
const run = promisify(execFile);
// node --test in a test must not think it is a child of this run.
const { NODE_TEST_CONTEXT: _, ...cleanEnv } = process.env;

describe('seeds', () => {
  test('a seed is the first 8 bytes of SHA-256 of the test id, big-endian (as Python computes it)', () => {
    // int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big")
    assert.equal(seedForTestId('test/helper.test.mjs::same seed'), '13280521113049443661');
    assert.equal(seedForTestId('a'), '14598278634844962250');
    assert.equal(seedForTestId('é::ü'), '16118916837887764808');
  });

  test('seeds parse from decimal, 0x hex, BigInt and safe integers, as decimal strings', () => {
    assert.equal(parseSeed('18446744073709551615'), '18446744073709551615');
    assert.equal(parseSeed('0xff'), '255');
    assert.equal(parseSeed(' 42 '), '42');
    assert.equal(parseSeed(2n ** 63n), '9223372036854775808');
    assert.equal(parseSeed(7), '7');
  });

  test('a bad seed is refused, naming where it came from', () => {
    assert.throws(() => parseSeed('12x', 'UMI_SEED'), /UMI_SEED: "12x" is not a seed/);
    assert.throws(() => parseSeed('18446744073709551616', 'UMI_SEED'), /UMI_SEED: .* outside u64/);
    assert.throws(() => parseSeed(-1n, 'the seed option'), /the seed option: -1 is outside u64/);
    assert.throws(() => parseSeed(2 ** 60), /not a safe integer; pass a u64 seed as a string or a BigInt/);
    assert.throws(() => parseSeed(1.5), /not a safe integer/);
    assert.throws(() => parseSeed(null), /expected a u64 seed/);
    assert.throws(() => resolveSeed('t', undefined, { UMI_SEED: 'seven' }), /UMI_SEED: "seven" is not a seed/);
  });

  test('the seed option beats UMI_SEED, which beats the test id', () => {
    assert.deepEqual(resolveSeed('a', '5', { UMI_SEED: '6' }), { seed: '5', source: 'option' });
    assert.deepEqual(resolveSeed('a', undefined, { UMI_SEED: '0x10' }), { seed: '16', source: 'UMI_SEED' });
    assert.deepEqual(resolveSeed('a', undefined, { UMI_SEED: '' }), {
      seed: '14598278634844962250',
      source: 'test id',
    });
  });

  test('every run gets a fresh scope the server accepts, prefixed by the test id hash', () => {
    const a = freshScope('a');
    const b = freshScope('a');
    assert.match(a, /^ca978112ca1b-[0-9a-f]{32}$/);
    assert.notEqual(a, b);
    assert.ok(isScope(a));
    assert.ok(!isScope('has space'));
    assert.ok(!isScope('x'.repeat(129)));
    assert.throws(() => freshScope(''), /testId must be a non-empty string/);
  });
});

describe('testContext', () => {
  const server = { url: 'http://127.0.0.1:4000' };

  test('base URLs carry the seed and scope; /v1 for OpenAI-shaped clients', () => {
    const umi = testContext({ server, testId: 'a', env: {} });
    const root = `http://127.0.0.1:4000/seed/14598278634844962250/scope/${umi.scope}`;
    assert.equal(umi.seed, '14598278634844962250');
    assert.equal(umi.baseURL, root);
    assert.equal(umi.anthropicBaseURL, root);
    assert.equal(umi.ollamaHost, root);
    assert.equal(umi.openaiBaseURL, `${root}/v1`);
    assert.equal(umi.v1BaseURL, `${root}/v1`);
    assert.deepEqual(umi.headers, { 'x-umi-seed': '14598278634844962250', 'x-umi-scope': umi.scope });
  });

  test('UMI_SEED pins the seed; a rerun keeps the seed and takes a fresh scope', () => {
    const umi = testContext({ server: 'http://127.0.0.1:4000/', testId: 'a', env: { UMI_SEED: '99' } });
    assert.equal(umi.seed, '99');
    assert.equal(umi.seedSource, 'UMI_SEED');
    assert.ok(umi.baseURL.startsWith('http://127.0.0.1:4000/seed/99/scope/'));
    const again = umi.rerun();
    assert.equal(again.seed, '99');
    assert.notEqual(again.scope, umi.scope);
  });

  test('bad options are refused with what was wrong', () => {
    assert.throws(() => testContext({ server, testId: '' }), /testId must be a non-empty string/);
    assert.throws(() => testContext({ server: {}, testId: 'a' }), /server must be what startServer\(\) returned or an http:\/\/ URL, got an object without a url \(keys: none\)/);
    assert.throws(() => testContext({ server: 'localhost:80', testId: 'a' }), /an http:\/\/ URL, got "localhost:80"/);
    assert.throws(() => testContext({ server: Promise.resolve(server), testId: 'a' }), /server is a Promise; await startServer\(\) first/);
    assert.throws(() => testContext({ server, testId: 'a', sed: 1 }), /unknown option "sed"/);
    assert.throws(() => testContext({ server, testId: 'a', runner: 'mocha' }), /runner must be one of node, vitest, jest/);
    assert.throws(() => testContext({ server, testId: 'a', seed: 'x' }), /the seed option: "x" is not a seed/);
  });
});

/** What a replay line starts with when the binary came from UMI_DST. */
function dstPrefix() {
  return process.env.UMI_DST ? `UMI_DST=${shellQuote(path.resolve(process.env.UMI_DST))} ` : '';
}

describe('replay lines', () => {
  test('one line per runner, the test name matched exactly and shell-quoted', () => {
    const name = "it's (x)";
    assert.equal(
      replayCommand({ runner: 'node', file: 'test/a.test.mjs', testName: name, seed: '12' }),
      `UMI_SEED=12 node --test --test-name-pattern '(^| )it'\\''s \\(x\\)$' test/a.test.mjs`,
    );
    assert.equal(
      replayCommand({ runner: 'vitest', file: 'a.test.ts', testName: 'n', seed: '1' }),
      "UMI_SEED=1 npx vitest run a.test.ts -t '(^| )n$'",
    );
    assert.equal(
      replayCommand({ runner: 'jest', file: 'a.test.js', testName: 'n', seed: '1' }),
      "UMI_SEED=1 npx jest a.test.js -t '(^| )n$'",
    );
    assert.throws(() => replayCommand({ runner: 'node', file: '', testName: 'n', seed: '1' }), /no test file known/);
    assert.equal(
      replayCommand({ runner: 'node', file: 'a.mjs', testName: 'n', seed: '1', dst: '/opt/my dst' }),
      "UMI_DST='/opt/my dst' UMI_SEED=1 node --test --test-name-pattern '(^| )n$' a.mjs",
    );
  });

  test('the pattern matches the name alone or after its suites, and nothing longer', () => {
    const pattern = new RegExp(namePattern('a [b] (c)?'));
    assert.ok(pattern.test('a [b] (c)?'));
    assert.ok(pattern.test('suite a [b] (c)?'));
    assert.ok(!pattern.test('a [b] (c)? too'));
    assert.ok(!pattern.test('xa [b] (c)?'));
  });

  test("node --test runs exactly the named test on the line's seed", async () => {
    const fixture = 'test/fixtures/replay.fixture.mjs';
    const line = replayCommand({ runner: 'node', file: fixture, testName: "it's [the] one (x)", seed: '4242' });
    const { stdout } = await run('sh', ['-c', line], { cwd: packageDir, env: cleanEnv });
    assert.match(stdout, /RAN one seed=4242 source=UMI_SEED/);
    assert.doesNotMatch(stdout, /RAN the other|RAN inner/);
    assert.match(stdout, /# pass 1\b/);
  });

  test('a test in a suite prints a line that replays it', async () => {
    const fixture = 'test/fixtures/replay.fixture.mjs';
    const first = replayCommand({ runner: 'node', file: fixture, testName: 'inner $HOME `x`', seed: '77' });
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'umi-replay-')), 'line');
    const { stdout } = await run('sh', ['-c', first], { cwd: packageDir, env: { ...cleanEnv, REPLAY_OUT: out } });
    assert.match(stdout, /RAN inner seed=77/);
    assert.doesNotMatch(stdout, /RAN one|RAN the other/);
    // The test's own line carries UMI_DST when the binary came from there.
    assert.equal(readFileSync(out, 'utf8'), `${dstPrefix()}${first}`);
  });
});

describe('starting dst serve', () => {
  test('no binary: the error says how to get one', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'umi-no-dst-'));
    const env = { PATH: empty };
    assert.throws(() => findDst(undefined, env), (error) => {
      assert.ok(error instanceof DstNotFoundError);
      assert.match(error.message, /UMI_DST is not set and there is no `dst` on PATH/);
      assert.match(error.message, /pip install umi-dst/);
      assert.match(error.message, /cargo build -p umi-scenarios --bin dst/);
      return true;
    });
    await assert.rejects(startServer({ env }), DstNotFoundError);
  });

  test('a UMI_DST or dst option that is not an executable is named', () => {
    assert.throws(() => findDst(undefined, { UMI_DST: '/nonexistent/dst' }), /UMI_DST \(\/nonexistent\/dst\) is not an executable file; get it with `pip install umi-dst`/);
    assert.throws(() => findDst('/nonexistent/dst', {}), /the dst option \(\/nonexistent\/dst\) is not an executable file/);
    assert.throws(() => findDst('', {}), /dst must be a path to the dst binary/);
  });

  test('dst on PATH is found when UMI_DST is not set', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'umi-path-'));
    writeFileSync(path.join(dir, 'dst'), '#!/bin/sh\n');
    chmodSync(path.join(dir, 'dst'), 0o755);
    assert.equal(findDst(undefined, { PATH: `/nonexistent${path.delimiter}${dir}` }), path.join(dir, 'dst'));
    assert.equal(findDst(undefined, { UMI_DST: fakeDst, PATH: dir }), fakeDst);
  });

  test('faults and flags become arguments; bad ones are refused', () => {
    assert.equal(faultsFlag({ 'llm.rate_limit': 0.2, 'llm.stream_cut': 1 }), 'llm.rate_limit=0.2,llm.stream_cut=1');
    assert.equal(faultsFlag('wire_shapes'), 'wire_shapes');
    assert.deepEqual(serveArgs({ faults: { 'network.reset': 0.05 }, timeScale: 0.1, flags: ['--model', 'm'] }), [
      'serve', '--bind', '127.0.0.1:0', '--faults', 'network.reset=0.05', '--time-scale', '0.1', '--model', 'm',
    ]);
    assert.throws(() => faultsFlag({ 'llm.rate_limit': 2 }), /llm.rate_limit has probability 2; it must be a number in \[0, 1\]/);
    assert.throws(() => faultsFlag({ 'bad kind': 0.1 }), /rule "bad kind" is not KIND\[@OPERATION\]/);
    assert.throws(() => faultsFlag([]), /faults must be an object/);
    assert.throws(() => serveArgs({ timeScale: -1 }), /timeScale must be a finite number >= 0, got -1/);
    assert.throws(() => serveArgs({ flags: ['--bind', '0.0.0.0:1'] }), /pass --bind through its option/);
    assert.throws(() => serveArgs({ flags: '--swarm' }), /flags must be an array of strings/);
  });

  test('startServer reads the listening line and close() needs exit 0 on SIGTERM', async () => {
    const server = await startServer({ dst: fakeDst, env: { ...process.env, FAKE_DST_MODE: 'ok' } });
    assert.equal(server.url, 'http://127.0.0.1:1');
    await server.close();
    await server.close(); // twice is fine
    assert.equal(server.process.exitCode, 0);

    const stubborn = await startServer({ dst: fakeDst, env: { ...process.env, FAKE_DST_MODE: 'bad-stop' } });
    await assert.rejects(stubborn.close(), /did not stop cleanly on SIGTERM \(exit 3\)/);
  });

  test('a server that dies before listening is reported with its stderr', async () => {
    await assert.rejects(
      startServer({ dst: fakeDst, env: { ...process.env, FAKE_DST_MODE: 'crash' }, faults: { 'llm.timeout': 0.5 } }),
      (error) => {
        assert.match(error.message, /exited \(code 2\) before listening/);
        assert.match(error.message, /fake dst: bad flag --nope/);
        assert.match(error.message, /--faults llm.timeout=0.5/);
        return true;
      },
    );
    await assert.rejects(startServer({ dst: fakeDst, bind: '0.0.0.0:80' }), /unknown option "bind"/);
  });
});

describe('the trace', () => {
  test('u64 values survive parsing, digits inside strings are left alone', () => {
    const value = parseJsonExact('{"seed":18446744073709551615,"detail":"seed=12345678901234567890 \\" 1","n":3,"f":-1.5e3}');
    assert.deepEqual(value, { seed: '18446744073709551615', detail: 'seed=12345678901234567890 " 1', n: 3, f: -1500 });
  });

  test('entries and the summary line come apart; seeds are strings', () => {
    const body = `${JSON.stringify(entry({ seed: 5 }))}\n{"entries":1,"left_out":0,"session_trace_hash":"ff"}\n`;
    const { entries, summary } = parseTrace(body);
    assert.equal(entries.length, 1);
    assert.equal(entries[0].seed, '5');
    assert.equal(entries[0].run_seed, '1');
    assert.equal(summary.session_trace_hash, 'ff');
    assert.throws(() => parseTrace('{"seed":1}\n'), /the last line is not the summary line/);
    assert.throws(() => parseTrace('nope\n{}\n'), /line 1 is not JSON/);
    assert.throws(() => parseTrace(''), /empty body/);
  });

  test('a dst that ignores ?scope= is caught, not trusted', async (t) => {
    const fake = await fakeTraceServer(t, () => [entry({ scope: 's' }), entry({ scope: 'other' })]);
    await assert.rejects(fetchTrace(fake.url, 's'), /does not filter its trace by scope .* update dst/);
    const { entries } = await fetchTrace(fake.url, 'other').catch(() => ({ entries: null }));
    assert.equal(entries, null);
  });
});

describe('the cut-stream check (judges evidence)', () => {
  const carried = (text, calls = [], whole = true) => ({
    whole,
    text,
    tool_calls: calls.map(([id, name, args]) => ({ id, name, arguments: args })),
  });
  const model = (arrival, carriedValue, history = { assistant: [], tool_results: [] }) =>
    entry({
      request_hash: `${'aa'.repeat(31)}${String(arrival).padStart(2, '0')}`,
      arrival,
      cut: !carriedValue.whole,
      end: carriedValue.whole ? 'complete' : 'reset',
      carried: carriedValue,
      history,
    });
  const cutCall = model(0, carried('', [['c1', 'issue_refund', '{"amount": 21']], false));

  test('partial JSON is completed as a partial-JSON parser would, and fits by prefix', () => {
    assert.deepEqual(completePartialJson(''), {});
    assert.deepEqual(completePartialJson('{"amount": 21'), { amount: 21 });
    assert.deepEqual(completePartialJson('{"order_id": "item notes dra'), { order_id: 'item notes dra' });
    assert.deepEqual(completePartialJson('{"a": 1, "b": tr'), { a: 1 });
    assert.ok(argumentsFit('{"amount": 21', { amount: 216 }));
    assert.ok(!argumentsFit('{"amount": 21', { amount: 2 }));
    assert.ok(!argumentsFit('{"order_id": "B', { order_id: 'A-17' }));
  });

  test('a tool run with a cut call\'s arguments fails the check, even after an error', () => {
    const reported = [{ name: 'issue_refund', arguments: { amount: 216 }, callId: null }];
    assert.throws(
      () => checkCutEntries([cutCall], { answered: false, reported }, 'seed 7'),
      (error) => {
        assert.ok(error instanceof CutStreamError);
        assert.deepEqual(error.cut, [cutCall]);
        assert.deepEqual(error.findings.map((f) => f.kind), ['tool_reported']);
        assert.match(error.message, /the run acted on 1 response\(s\) the server cut \(seed 7\)/);
        assert.match(error.message, /tool `issue_refund` ran \(reported by the test\) with the arguments of a call from cut response R/);
        return true;
      },
    );
  });

  test('a short whole text in the answer does not hide a cut prefix (review finding, issue 39)', () => {
    const opener = model(0, carried('Let me check.'));
    const cutText = model(1, carried('Your refund of 216 EUR is on its w', [], false));
    assert.throws(
      () => checkCutEntries([opener, cutText], { answer: 'Let me check. Your refund of 216 EUR is on its w' }),
      (error) => error instanceof CutStreamError && error.findings.some((f) => f.kind === 'answer'),
    );
    const retried = model(1, carried('Your refund of 216 EUR is on its way.'));
    assert.deepEqual(
      checkCutEntries([model(0, carried('Your refund of 216 EUR is on its w', [], false)), retried], {
        answer: 'Your refund of 216 EUR is on its way.',
      }).findings,
      [],
    );
  });

  test('what a whole response explains is not counted: a retry that ran its own call passes', () => {
    const retry = model(1, carried('', [['c2', 'issue_refund', '{"amount":216}']]));
    const reported = [{ name: 'issue_refund', arguments: { amount: 216 }, callId: 'c2' }];
    assert.deepEqual(checkCutEntries([cutCall, retry], { answered: false, reported }), { cut: [cutCall], findings: [] });
  });

  test('history and answer evidence; MCP cuts are kept apart', () => {
    const cutText = model(0, carried('Your refund of 216 EUR is on its w', [], false));
    const later = model(2, carried('Done.'), {
      assistant: [{ text: 'Your refund of 216 EUR is on its w', tool_calls: [] }],
      tool_results: [],
    });
    const mcpCut = entry({ endpoint: 'mcp', path: '/mcp', cut: true, end: 'reset', arrival: 1 });
    assert.throws(
      () => checkCutEntries([cutText, mcpCut, later], { answer: 'Done.' }),
      (error) => error.findings.map((f) => f.kind).join() === 'history_text',
    );
    assert.deepEqual(checkCutEntries([mcpCut, model(2, carried('Done.'))], { answer: 'Done.' }).cut, []);
    assert.throws(() => checkCutEntries([cutText], { answer: 'Your refund of 216 EUR is on its w' }), /partial text/);
    assert.deepEqual(checkCutEntries([cutText], { answer: 'Sorry, later.' }).findings, []);
    assert.throws(() => checkCutEntries([cutText], { answered: true }), /last model response it received was cut response R/);
    assert.deepEqual(checkCutEntries([cutText], { answered: false }).findings, []);
  });

  test('the outcome must be said', () => {
    assert.throws(() => checkCutEntries([cutCall], {}), /pass \{ answer \} \(the text the run returned\)/);
    assert.throws(() => checkCutEntries([cutCall], { answered: 'yes' }), /got "yes"/);
    assert.throws(() => checkCutEntries([cutCall], { answer: 5 }), /a string/);
  });

  test('tool results are paired with calls in every request', () => {
    const turn = { text: '', tool_calls: [{ id: 'c1', name: 'issue_refund', arguments: '{}' }] };
    const fine = model(1, carried('ok'), { assistant: [turn], tool_results: [{ call_id: 'c1' }] });
    assert.deepEqual(checkToolResultEntries([fine]), []);
    const twice = model(1, carried('ok'), { assistant: [turn], tool_results: [{ call_id: 'c1' }, { call_id: 'c1' }] });
    const stranger = model(2, carried('ok'), { assistant: [turn], tool_results: [{ call_id: 'c1' }, { call_id: 'zz' }] });
    assert.throws(
      () => checkToolResultEntries([twice, stranger]),
      (error) =>
        error instanceof ToolResultsError &&
        error.problems.some((p) => p.includes('has 2 results')) &&
        error.problems.some((p) => p.includes('"zz", which no assistant turn made')),
    );
  });

  test("checkCutStreams reads the run's own scope and the calls it reported", async (t) => {
    const fake = await fakeTraceServer(t, (scope) => [{ ...cutCall, scope }]);
    const umi = testContext({ server: fake, testId: 'cut' });
    assert.equal((await umi.checkCutStreams({ answered: false })).cut.length, 1);
    umi.reportToolCall('issue_refund', '{"amount": 216}');
    await assert.rejects(umi.checkCutStreams({ answered: false }), (error) => {
      assert.ok(error instanceof CutStreamError);
      assert.ok(error.message.includes(`scope ${umi.scope}`));
      return true;
    });
    assert.deepEqual(await umi.rerun().checkToolResults(), []);
    assert.throws(() => umi.reportToolCall('', {}), /non-empty string/);
  });
});

describe('adapters', () => {
  const fired = ['llm.rate_limit@llm.call', 'llm.stream_cut@llm.stream'];

  // A server whose every scope saw two faults.
  const faultyServer = (t) =>
    fakeTraceServer(t, (scope) => [
      entry({ scope, faults: [fired[0]] }),
      entry({ scope, faults: [fired[1]], occurrence: 1 }),
    ]);

  test('node:test: a failure gets the seed, the faults fired and the replay line, as diagnostics and on the error', async (t) => {
    const server = await faultyServer(t);
    const diagnostics = [];
    const fakeT = { name: 'agent (retries)', diagnostic: (line) => diagnostics.push(line) };
    const body = forNodeTest(server, async (_t, umi) => {
      assert.equal(umi.testId, `${path.relative(process.cwd(), process.argv[1])}::agent (retries)`);
      assert.equal(2 + 2, 5);
    });
    await assert.rejects(body(fakeT), (error) => {
      assert.ok(error instanceof assert.AssertionError);
      assert.match(error.message, /umi seed: \d+ \(from (test id|UMI_SEED)\)/);
      assert.match(error.message, /umi faults fired: llm.rate_limit@llm.call, llm.stream_cut@llm.stream/);
      assert.match(error.message, /umi replay: (UMI_DST=\S+ )?UMI_SEED=\d+ node --test --test-name-pattern '\(\^\| \)agent \\\(retries\\\)\$' /);
      assert.match(error.stack.split('\n    at ')[0], /umi replay:/);
      return true;
    });
    assert.equal(diagnostics.length, 4);
    assert.match(diagnostics[2], /^umi faults fired: /);
  });

  test('node:test: a passing test reports nothing and keeps its result', async (t) => {
    const server = await faultyServer(t);
    const diagnostics = [];
    const body = forNodeTest(server, async (_t, umi) => umi.seed, { seed: 3 });
    assert.equal(await body({ name: 'ok', diagnostic: (line) => diagnostics.push(line) }), '3');
    assert.deepEqual(diagnostics, []);
    assert.throws(() => forNodeTest(server, 'not a function'), /the test body must be a function, got string/);
    await assert.rejects(forNodeTest(() => undefined, async () => {})({ name: 'x' }), /no server \(start it with startServer\(\) before the test runs\)/);
  });

  test("Vitest: onTestFailed adds the report to the failure's errors; the name includes the suites", async (t) => {
    const server = await faultyServer(t);
    let onFailed;
    const file = path.join(process.cwd(), 'test', 'agent.test.ts');
    const task = {
      name: 'answers',
      suite: { name: 'agent', suite: { name: 'test/agent.test.ts', filepath: file } },
      file: { filepath: file },
    };
    const umi = forVitest(server, { task, onTestFailed: (fn) => (onFailed = fn) });
    assert.equal(umi.testId, 'test/agent.test.ts::agent answers');
    assert.equal(umi.replayLine(), `${dstPrefix()}UMI_SEED=${umi.seed} npx vitest run test/agent.test.ts -t '(^| )agent answers$'`);
    const result = { errors: [{ message: 'expected 1 to be 2' }] };
    await onFailed(result);
    assert.match(result.errors[0].message, /^expected 1 to be 2\n\numi seed: /);
    assert.match(result.errors[0].message, /umi faults fired: llm.rate_limit@llm.call, llm.stream_cut@llm.stream/);
    // Vitest 3 hands the hook a context holding the task.
    const later = { task: { result: { errors: [{ message: 'm' }] } } };
    await onFailed(later);
    assert.match(later.task.result.errors[0].message, /^m\n\numi seed/);
    // Nothing to carry the report: it is printed.
    const logged = [];
    const original = console.error;
    console.error = (text) => logged.push(text);
    try {
      await onFailed({});
    } finally {
      console.error = original;
    }
    assert.match(logged[0], /^agent answers failed\numi seed/);
    assert.throws(() => forVitest(server, {}), /pass the test's context/);
  });

  test('Jest: the wrapped body rethrows its error with the seed, faults and replay line appended', async (t) => {
    const server = await faultyServer(t);
    const saved = globalThis.expect;
    globalThis.expect = {
      getState: () => ({ currentTestName: 'agent answers', testPath: path.join(process.cwd(), 'test', 'agent.test.js') }),
    };
    t.after(() => {
      globalThis.expect = saved;
    });
    let seen;
    const body = forJest(server, async (umi) => {
      seen = umi;
      throw new TypeError('no tool call');
    });
    await assert.rejects(body(), (error) => {
      assert.ok(error instanceof TypeError);
      assert.match(error.message, /^no tool call\n\numi seed: /);
      assert.ok(error.message.includes(`umi replay: ${dstPrefix()}UMI_SEED=${seen.seed} npx jest test/agent.test.js -t '(^| )agent answers$'`));
      // Jest prints the stack: the report comes once, before the first frame.
      assert.ok(error.stack.startsWith(`TypeError: no tool call\n\numi seed: ${seen.seed}`));
      assert.equal(error.stack.split('umi seed').length, 2);
      return true;
    });
    // Jest rebuilds node's AssertionError text unless the message is marked as not generated.
    const failing = forJest(server, async () => assert.equal(1, 2));
    await assert.rejects(failing(), (error) => {
      assert.equal(error.generatedMessage, false);
      assert.match(error.message, /^Expected values to be strictly equal:[^]*umi replay: /);
      return true;
    });
    assert.equal(seen.testId, 'test/agent.test.js::agent answers');
    const esm = testContext({ server, testId: 'f::n', runner: 'jest', file: 'f.js', env: { NODE_OPTIONS: '--experimental-vm-modules --x' } });
    assert.equal(esm.replayLine(), `UMI_SEED=${esm.seed} NODE_OPTIONS=--experimental-vm-modules npx jest f.js -t '(^| )n$'`);
    globalThis.expect = undefined;
    await assert.rejects(forJest(server, async () => {})(), /no test name or file \(not under Jest\?\); pass \{ testName, file \}/);
    assert.equal(await forJest(server, async (umi) => umi.testId, { testName: 'n', file: 'f.js' })(), 'f.js::n');
  });

  test('the report goes into the stack once, before the first frame, even when the message is not in it', () => {
    const plain = new Error('boom');
    void plain.stack; // formatted before the message changes, as a runner may have done
    annotateError(plain, 'REPORT');
    assert.match(plain.stack, /^Error: boom\n\nREPORT\n    at /);
    const odd = new Error('x');
    odd.stack = 'CustomHeader\n    at somewhere (f.js:1:1)';
    annotateError(odd, 'REPORT');
    assert.equal(odd.stack, 'CustomHeader\n\nREPORT\n    at somewhere (f.js:1:1)');
  });

  test('a thrown non-Error is wrapped, keeping what was thrown as the cause', () => {
    const error = annotateError('plain string', 'umi seed: 1');
    assert.equal(error.message, 'plain string\n\numi seed: 1');
    assert.equal(error.cause, 'plain string');
  });

  test("a report never throws: a trace that can't be read is said so", async () => {
    const umi = testContext({ server: 'http://127.0.0.1:1', testId: 'x', env: {} });
    const report = await umi.report();
    assert.match(report, /umi faults fired: unknown \(GET http:\/\/127.0.0.1:1\/umi\/trace\?scope=/);
    assert.match(report, /umi replay: UMI_SEED=\d+ node --test/);
  });
});

test("the README's example is the code of test/readme-example.test.mjs, which runs", () => {
  const example = readFileSync(path.join(here, 'readme-example.test.mjs'), 'utf8').replace(/^(\/\/.*\n)+\n/, '');
  const readme = readFileSync(path.join(packageDir, 'README.md'), 'utf8');
  assert.ok(readme.includes(`\`\`\`js\n${example}\`\`\``), 'README.md shows another example than test/readme-example.test.mjs');
});
