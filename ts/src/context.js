// One test run's view of a `dst serve` server: its seed, its fresh scope, the base URL
// each SDK wants, its part of the server's trace, and the command that replays it.
//
// Base URLs carry the seed and scope in the path, because every SDK lets you set a base
// URL and not all let you set headers:
//   root        http://HOST:PORT/seed/N/scope/S        (@anthropic-ai/sdk, ollama)
//   /v1         http://HOST:PORT/seed/N/scope/S/v1     (openai-node, the AI SDK's
//                                                      createOpenAI and createAnthropic)
// `headers` says the same for clients that prefer default headers.

import path from 'node:path';

import { freshScope, requireTestId, resolvePath, resolveSeed } from './seed.js';
import { checkCutEntries, checkToolResultEntries, fetchTrace, faultsFired } from './trace.js';
import { checkEffectEntries } from './effects.js';
import { runOnClock } from './clock.js';

const RUNNERS = ['node', 'vitest', 'jest'];

/** A regular expression source matching `name` exactly, as a whole test name or as the
 * last part of one whose ancestors' names come first ("suite name"). */
export function namePattern(name) {
  const escaped = name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return `(^| )${escaped}$`;
}

/** `text` quoted for a POSIX shell. */
export function shellQuote(text) {
  if (/^[A-Za-z0-9_./:=@%+-]+$/.test(text)) return text;
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command that reruns `testName` of `file` under `runner` on `seed`. `nodeOptions`
 * (Jest on ES modules needs NODE_OPTIONS=--experimental-vm-modules) goes first when given,
 * and before it `dst` (the binary the run used, when it came from UMI_DST) as `UMI_DST=`,
 * so that the line works as printed in a shell that has neither.
 */
export function replayCommand({ runner, file, testName, seed, nodeOptions, dst, path }) {
  if (!RUNNERS.includes(runner)) {
    throw new TypeError(`replayLine: runner must be one of ${RUNNERS.join(', ')}, got ${JSON.stringify(runner)}`);
  }
  if (typeof testName !== 'string' || testName === '') {
    throw new TypeError(`replayLine: the test name must be a non-empty string, got ${JSON.stringify(testName)}`);
  }
  if (typeof file !== 'string' || file === '') {
    throw new TypeError('replayLine: no test file known; pass testContext({ file })');
  }
  const pattern = shellQuote(namePattern(testName));
  const where = shellQuote(file);
  const command = {
    node: `node --test --test-name-pattern ${pattern} ${where}`,
    vitest: `npx vitest run ${where} -t ${pattern}`,
    jest: `npx jest ${where} -t ${pattern}`,
  }[runner];
  const options = nodeOptions ? `NODE_OPTIONS=${shellQuote(nodeOptions)} ` : '';
  const binary = dst ? `UMI_DST=${shellQuote(dst)} ` : '';
  // A path with branches replays through UMI_PATH (its seed is the path's first part).
  const pin = path && path.includes('/') ? `UMI_PATH=${path}` : `UMI_SEED=${seed}`;
  return `${binary}${pin} ${options}${command}`;
}

/** `file` relative to the working directory when it lies under it. */
export function displayPath(file) {
  if (!file) return file;
  const relative = path.relative(process.cwd(), file.startsWith('file://') ? new URL(file).pathname : file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}

/** The server's base URL from a `{ url }` (what startServer returns) or a string. */
function serverUrl(server) {
  if (typeof server?.then === 'function') {
    throw new TypeError('testContext: server is a Promise; await startServer() first');
  }
  const url = typeof server === 'string' ? server : server?.url;
  if (typeof url !== 'string' || !/^https?:\/\/[^/\s]+/.test(url)) {
    const shown = typeof server === 'object' && server !== null ? `an object without a url (keys: ${Object.keys(server).join(', ') || 'none'})` : JSON.stringify(server);
    throw new TypeError(`testContext: server must be what startServer() returned or an http:// URL, got ${shown}`);
  }
  return url.replace(/\/+$/, '');
}

/**
 * A test run's context.
 *
 * options: `server` (startServer's result or a URL), `testId` (stable across runs: it
 * picks the seed), `seed` (overrides everything), `testName` (for replayLine; defaults
 * to the part of testId after the last "::"), `file` (the test file; default
 * process.argv[1]), `runner` ("node", "vitest" or "jest"; default "node"), `env`.
 */
export function testContext(options) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('testContext: pass { server, testId }');
  }
  const known = new Set(['server', 'testId', 'seed', 'path', 'testName', 'file', 'runner', 'env']);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) {
      throw new TypeError(`testContext: unknown option ${JSON.stringify(key)} (known: ${[...known].join(', ')})`);
    }
  }
  const url = serverUrl(options.server);
  const { testId } = options;
  requireTestId(testId, 'testContext');
  const runner = options.runner ?? 'node';
  if (!RUNNERS.includes(runner)) {
    throw new TypeError(`testContext: runner must be one of ${RUNNERS.join(', ')}, got ${JSON.stringify(runner)}`);
  }
  if (options.seed !== undefined && options.seed !== null && options.path !== undefined && options.path !== null) {
    throw new TypeError('testContext: give seed or path, not both (a path starts with its seed)');
  }
  const pinned = resolvePath(options.path, options.seed != null ? {} : options.env ?? process.env);
  const resolved = pinned.path
    ? { seed: pinned.path.seed, source: pinned.source }
    : resolveSeed(testId, options.seed, options.env ?? process.env);
  const { seed, source: seedSource } = resolved;
  // What the server is told where a seed goes: the path's text when there is one.
  const runPath = pinned.path ? pinned.path.text : null;
  const seedText = runPath ?? seed;
  const scope = freshScope(testId);
  const file = displayPath(options.file ?? process.argv[1]);
  const defaultName =
    options.testName ?? (testId.includes('::') ? testId.slice(testId.lastIndexOf('::') + 2) : testId);
  const baseURL = `${url}/seed/${seedText}/scope/${scope}`;
  // Jest on ES modules runs only with this flag: the replay line must carry it.
  const env = options.env ?? process.env;
  const nodeOptions =
    runner === 'jest' && /--experimental-vm-modules/.test(env.NODE_OPTIONS ?? '')
      ? '--experimental-vm-modules'
      : undefined;
  // The binary came from UMI_DST (startServer's default): the replay line carries it.
  const dst = env.UMI_DST ? path.resolve(env.UMI_DST) : undefined;

  /** This run's entries, refusing a log the server no longer holds whole. */
  async function wholeTrace(check) {
    const { entries, summary } = await fetchTrace(url, scope);
    if ((summary.left_out ?? 0) > 0 || summary.evicted === true) {
      throw new Error(
        `${check}: the server no longer holds this run's whole log (left out: ` +
          `${summary.left_out ?? 0}, evicted: ${summary.evicted === true}; seed ${seedText}, scope ` +
          `${scope}): nothing can be concluded. Use a fresh server, or fewer requests per scope.`,
      );
    }
    return entries;
  }

  const context = {
    testId,
    seed,
    seedSource,
    /** The path this run is on (`7/3:9913`), or null: the seed alone. */
    path: runPath,
    scope,
    serverURL: url,
    /** http://HOST:PORT/seed/N/scope/S: @anthropic-ai/sdk's baseURL, and ollama's host. */
    baseURL,
    /** baseURL + /v1: openai-node, createOpenAI, createAnthropic (the AI SDK). */
    v1BaseURL: `${baseURL}/v1`,
    openaiBaseURL: `${baseURL}/v1`,
    anthropicBaseURL: baseURL,
    ollamaHost: baseURL,
    /** The same seed and scope as headers, for clients given the bare server URL. */
    headers: { 'x-umi-seed': seedText, 'x-umi-scope': scope },

    /** Another run of the same test: the same seed, a fresh scope. */
    rerun() {
      return testContext(options);
    },
    /** This run's trace: `{ entries, summary }`. */
    async traceWithSummary() {
      return fetchTrace(url, scope);
    },
    /** This run's entries of the server's trace, in the server's (key) order. */
    async trace() {
      return (await fetchTrace(url, scope)).entries;
    },
    /**
     * What this run reached, as the server counts it (`GET /umi/marks?scope=S`): the
     * faults fired at each fault point, the response shapes sent, the tool outcomes,
     * each `{ name, kind, arrival, step, count }` (`step`: the first request, from 1,
     * that reached it: what a path's branch counts).
     */
    async marks() {
      const response = await fetch(`${url}/umi/marks?scope=${encodeURIComponent(scope)}`);
      if (!response.ok) throw new Error(`GET ${url}/umi/marks: ${response.status} ${await response.text()}`);
      return (await response.json()).marks;
    },
    /** The faults that fired in this run: ["llm.rate_limit@llm.call", ...]. */
    async faultsFired() {
      return faultsFired(await context.trace());
    },
    /** Tool calls the test reported (reportToolCall): tools the agent ran itself. */
    toolCallsReported: [],
    /**
     * Tells the checks that the agent ran tool `name` with `args` (an object or its JSON
     * text) for the model's call `callId` (if known): for tools the agent runs itself,
     * not over the MCP server (whose calls the server sees).
     */
    reportToolCall(name, args, callId = null) {
      if (typeof name !== 'string' || name === '') {
        throw new TypeError(`reportToolCall: name must be a non-empty string, got ${JSON.stringify(name)}`);
      }
      if (callId !== null && callId !== undefined && typeof callId !== 'string') {
        throw new TypeError(`reportToolCall: callId must be a string, got ${JSON.stringify(callId)}`);
      }
      let value = args;
      if (typeof args === 'string') {
        try {
          value = args.trim() ? JSON.parse(args) : {};
        } catch {
          value = args; // kept as text: it fits a cut call's text by prefix
        }
      }
      context.toolCallsReported.push({ name, arguments: value, callId: callId ?? null });
    },
    /**
     * Fails (CutStreamError, with `findings`) when the run acted on a response the server
     * cut: a later request's history built from it, a tool run with its arguments, or the
     * final `answer` being its partial text. `{ answered: false }`: the run ended in an
     * error; `{ answered: true }` without `answer`: a finding when the last model response
     * was cut. Returns `{ cut, findings }` otherwise.
     */
    async checkCutStreams({ answer, answered } = {}) {
      const entries = await wholeTrace('checkCutStreams');
      return checkCutEntries(
        entries,
        { answer, answered, reported: context.toolCallsReported },
        `seed ${seed}, scope ${scope}`,
      );
    },
    /**
     * Fails (ToolResultsError) when a request of this run told the model of a tool call's
     * result not exactly once, or of a call no turn made. Returns [] otherwise.
     */
    async checkToolResults() {
      return checkToolResultEntries(await wholeTrace('checkToolResults'), `seed ${seed}, scope ${scope}`);
    },
    /**
     * Fails (EffectError) when a tool did its effect twice for one idempotency key or
     * call id, or for a call id no model response carried, over this whole scope (its
     * tools' world lasts the run). `effectTools`: tools the agent runs itself whose
     * reported calls (`reportToolCall`) are effects too. Returns the effects.
     */
    async checkEffects({ effectTools = [] } = {}) {
      const entries = await wholeTrace('checkEffects');
      const reported = context.toolCallsReported ?? [];
      return checkEffectEntries(entries, { reported, effectTools }, `seed ${seed}, scope ${scope}`);
    },
    /**
     * Runs `body(clock)` on the agent's clock (clock.js; docs/guide.md, "The agent's
     * clock"): the run's time is simulated from Umi's epoch, requests to this server carry
     * it, Math.random is seeded from this run's seed. `clockOptions`: `startUs`, `fetch`
     * (the fetch to wrap), `realWaitSecsMax`, `idleRealSecsMax`.
     */
    onClock(body, clockOptions = {}) {
      for (const key of ['serverURL', 'seed']) {
        if (clockOptions && key in clockOptions) {
          throw new TypeError(`onClock: ${key} is the context's; pass only startUs, fetch, realWaitSecsMax, idleRealSecsMax`);
        }
      }
      return runOnClock({ ...clockOptions, serverURL: url, seed }, body);
    },
    /** The command that reruns this test on this seed. */
    replayLine(testName = defaultName) {
      return replayCommand({ runner, file, testName, seed, nodeOptions, dst, path: runPath });
    },
    /**
     * What a failure report says: seed, scope, the faults that fired, the replay line.
     * Never throws: a trace that cannot be read is reported as such.
     */
    async report(testName = defaultName) {
      let faults;
      try {
        const fired = await context.faultsFired();
        faults = fired.length ? fired.join(', ') : 'none';
      } catch (error) {
        faults = `unknown (${error.message.split('\n')[0]})`;
      }
      let replay;
      try {
        replay = context.replayLine(testName);
      } catch (error) {
        replay = `unknown (${error.message})`;
      }
      return [
        `umi seed: ${seed} (from ${seedSource})`,
        ...(runPath ? [`umi path: ${runPath}`] : []),
        `umi scope: ${scope} on ${url}`,
        `umi faults fired: ${faults}`,
        `umi replay: ${replay}`,
      ].join('\n');
    },
  };
  return context;
}
