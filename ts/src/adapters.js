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

function requireBody(body, who) {
  if (typeof body !== 'function') {
    throw new TypeError(`${who}: the test body must be a function, got ${typeof body}`);
  }
}

/**
 * Adds `report` to `error`'s message (and stack, whose first lines repeat the message),
 * so that every runner prints it with the failure. Returns the error to throw.
 */
export function annotateError(error, report) {
  if (!(error instanceof Error)) {
    const wrapped = new Error(`${String(error)}\n\n${report}`);
    wrapped.cause = error;
    return wrapped;
  }
  const before = error.message;
  try {
    error.message = `${before}\n\n${report}`;
    // The stack starts "<name>[ <code>]: <message>"; put the report after the message there.
    const stack = error.stack;
    if (typeof stack === 'string') {
      const header = stack.indexOf(`: ${before}`);
      error.stack =
        header >= 0 && header < 200 && before !== ''
          ? `${stack.slice(0, header + 2)}${error.message}${stack.slice(header + 2 + before.length)}`
          : `${stack}\n\n${report}`;
    }
  } catch {
    // A frozen error: leave it be, the runner still reports it.
  }
  return error;
}

/**
 * node:test: `test('name', forNodeTest(server, async (t, umi) => { ... }))`.
 * On failure the seed, faults and replay line go to `t.diagnostic` and onto the error.
 * options: `seed`, `file` (default process.argv[1], the file node --test runs).
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
      return await body(t, umi);
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
 * On failure (`onTestFailed`) the seed, faults and replay line are printed and added to
 * the failure's errors. options: `seed`, `file`.
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
    console.error(`${name} failed\n${report}`);
    // Vitest 1 passes the result, later versions a context holding the task.
    const errors = failed?.errors ?? failed?.task?.result?.errors ?? task.result?.errors ?? [];
    for (const error of errors) {
      if (error && typeof error.message === 'string') error.message = `${error.message}\n\n${report}`;
    }
  });
  return umi;
}

/**
 * Jest: `test('name', forJest(server, async (umi) => { ... }))`. On failure the seed,
 * the faults and the replay line are appended to the thrown error. The test's name and
 * file come from Jest's `expect.getState()`; outside Jest pass `testName` and `file`.
 * options: `seed`, `testName`, `file`.
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
      return await body(umi);
    } catch (error) {
      throw annotateError(error, await umi.report(name));
    }
  };
}
