// Adapters for node's test runner, Vitest and Jest: each gives a test its context (seed,
// fresh scope, base URLs) and, when the test fails, says which seed it ran on, which
// faults fired and the command that replays it, where the runner shows it.
//
// None of them imports its runner: they use what the runner hands the test (node's `t`,
// Vitest's test context) or its globals (Jest's `expect.getState()`), so this package
// depends on no test framework.
//
// A test's id is `<file relative to the working directory>::<full test name>`: stable
// across runs and machines as long as the suite is run from the same directory.

import { displayPath, testContext } from './context.js';

function resolveServer(server, who) {
  const resolved = typeof server === 'function' ? server() : server;
  if (resolved === undefined || resolved === null) {
    throw new TypeError(`${who}: no server (start it with startServer() before the test runs)`);
  }
  if (typeof resolved?.then === 'function') {
    throw new TypeError(`${who}: server is a Promise; await startServer() first`);
  }
  return resolved;
}

/**
 * Runs `run` as the adapter's `clock` option says: on the agent's clock (`true`, or the
 * clock's options: `{ startUs }`), or as it is (absent, false).
 */
function onClockIf(umi, clock, run) {
  if (clock === undefined || clock === false) return run();
  return umi.onClock(run, clock === true ? {} : clock);
}

function requireBody(body, who) {
  if (typeof body !== 'function') {
    throw new TypeError(`${who}: the test body must be a function, got ${typeof body}`);
  }
}

/**
 * Adds `report` to `error`'s message and to the head of its stack (the lines before the
 * first frame, which repeat the message), since runners print one or the other (node's
 * runner and Jest print the stack). Returns the error to throw.
 */
export function annotateError(error, report) {
  // Duck-typed: under Jest, errors from node's own modules come from another realm.
  const errorLike = error !== null && typeof error === 'object' && typeof error.message === 'string';
  if (!errorLike) {
    const wrapped = new Error(`${String(error)}\n\n${report}`);
    wrapped.cause = error;
    return wrapped;
  }
  const before = error.message;
  try {
    // Read first: V8 formats a stack when it is first read, from the message of then.
    const stack = error.stack;
    error.message = `${before}\n\n${report}`;
    if (typeof stack === 'string') {
      const lines = stack.split('\n');
      const firstFrame = lines.findIndex((line) => /^\s+at /.test(line));
      const split = firstFrame === -1 ? lines.length : firstFrame;
      const head = lines.slice(0, split).join('\n');
      const at = before === '' ? -1 : head.indexOf(before);
      const newHead = at === -1 ? `${head}\n\n${report}` : head.slice(0, at) + error.message + head.slice(at + before.length);
      error.stack = [newHead, ...lines.slice(split)].join('\n');
    }
  } catch {
    // A frozen error: leave it be, the runner still reports it.
  }
  return error;
}

/**
 * node:test: `test('name', forNodeTest(server, async (t, umi) => { ... }))`.
 * On failure the seed, faults and replay line go to `t.diagnostic` and onto the error.
 * options: `seed`, `file` (default process.argv[1], the file node --test runs), `clock`
 * (`true` or the clock's options: the body runs on the agent's clock, `umi.onClock`).
 */
export function forNodeTest(server, body, options = {}) {
  requireBody(body, 'forNodeTest');
  return async (t) => {
    const file = displayPath(options.file ?? process.argv[1]);
    const umi = testContext({
      server: resolveServer(server, 'forNodeTest'),
      testId: `${file}::${t.name}`,
      testName: t.name,
      file,
      runner: 'node',
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
    });
    try {
      return await onClockIf(umi, options.clock, () => body(t, umi));
    } catch (error) {
      const report = await umi.report(t.name);
      for (const line of report.split('\n')) t.diagnostic(line);
      throw annotateError(error, report);
    }
  };
}

/** Vitest: a test's full name (its suites' names, then its own, space-separated). */
function vitestFullName(task) {
  const names = [task.name];
  for (let suite = task.suite; suite && !suite.filepath && suite.name; suite = suite.suite) {
    names.unshift(suite.name);
  }
  return names.join(' ');
}

/**
 * Vitest: `test('name', async (ctx) => { const umi = forVitest(server, ctx); ... })`.
 * On failure (`onTestFailed`) the seed, faults and replay line are added to the
 * failure's errors (printed, when there are none to carry them). options: `seed`, `file`.
 */
export function forVitest(server, vitestContext, options = {}) {
  const task = vitestContext?.task;
  if (!task?.name || typeof vitestContext.onTestFailed !== 'function') {
    throw new TypeError("forVitest: pass the test's context, the argument Vitest gives the test function");
  }
  const name = vitestFullName(task);
  const file = displayPath(options.file ?? task.file?.filepath ?? process.argv[1]);
  const umi = testContext({
    server: resolveServer(server, 'forVitest'),
    testId: `${file}::${name}`,
    testName: name,
    file,
    runner: 'vitest',
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
  });
  vitestContext.onTestFailed(async (failed) => {
    const report = await umi.report(name);
    // Vitest 1 passes the result, later versions a context holding the task.
    const errors = failed?.errors ?? failed?.task?.result?.errors ?? task.result?.errors ?? [];
    let annotated = 0;
    for (const error of errors) {
      if (error && typeof error.message === 'string') {
        error.message = `${error.message}\n\n${report}`;
        annotated += 1;
      }
    }
    // No error to carry it (another Vitest shape): print it with the test's output.
    if (annotated === 0) console.error(`${name} failed\n${report}`);
  });
  return umi;
}

/**
 * Jest: `test('name', forJest(server, async (umi) => { ... }))`. On failure the seed,
 * the faults and the replay line are appended to the thrown error. The test's name and
 * file come from Jest's `expect.getState()`; outside Jest pass `testName` and `file`.
 * options: `seed`, `testName`, `file`, `clock` (as forNodeTest's).
 */
export function forJest(server, body, options = {}) {
  requireBody(body, 'forJest');
  return async () => {
    const state = typeof globalThis.expect?.getState === 'function' ? globalThis.expect.getState() : {};
    const name = options.testName ?? state.currentTestName;
    const file = displayPath(options.file ?? state.testPath);
    if (!name || !file) {
      throw new TypeError('forJest: no test name or file (not under Jest?); pass { testName, file }');
    }
    const umi = testContext({
      server: resolveServer(server, 'forJest'),
      testId: `${file}::${name}`,
      testName: name,
      file,
      runner: 'jest',
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
    });
    try {
      return await onClockIf(umi, options.clock, () => body(umi));
    } catch (error) {
      const annotated = annotateError(error, await umi.report(name));
      // Jest rebuilds the text of node's AssertionError from actual/expected and shows
      // the message only when it was not generated: mark it so the report is shown.
      if (annotated.code === 'ERR_ASSERTION' && annotated.generatedMessage === true) {
        annotated.generatedMessage = false;
      }
      throw annotated;
    }
  };
}
