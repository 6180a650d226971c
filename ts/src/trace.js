// The server's log of one scope, and the cut-stream check over it.
//
// `GET /umi/trace?scope=S` returns one JSON object per answered request of that scope,
// then a summary line `{"entries", "left_out", "session_trace_hash"}`. Seeds and run seeds
// are u64 and routinely past 2^53, which JSON.parse would round: integers of 16 digits
// or more are read as strings, and `seed` / `run_seed` are always decimal strings here.
//
// The cut-stream check judges evidence (evidence.js): a run acted on a cut response (an
// entry with `cut: true`: its body did not end the way its format ends a whole answer)
// when a later request's history holds a turn or tool results built from it, when a tool
// ran with its cut arguments, or when the final answer is its partial text. A run that
// recovered by another path and answered from a whole response passes.

import { cutResponses, judge, toolResultProblems } from './evidence.js';

/** Parses one JSON text, reading integers of 16+ digits as strings (no rounding). */
export function parseJsonExact(text) {
  // Strings are matched whole from their opening quote, so a digit inside one is never
  // taken for a number.
  const quoted = text.replace(/"(?:[^"\\]|\\.)*"|-?\d+(\.\d+)?([eE][+-]?\d+)?/g, (token, fraction, exponent) =>
    token[0] !== '"' && !fraction && !exponent && token.replace('-', '').length >= 16 ? `"${token}"` : token,
  );
  return JSON.parse(quoted);
}

/** Splits an NDJSON trace into entries and the summary line. */
export function parseTrace(body, where = 'the trace') {
  const lines = body.split('\n').filter((line) => line.trim() !== '');
  if (lines.length === 0) throw new Error(`${where}: empty body (expected at least the summary line)`);
  const parsed = lines.map((line, n) => {
    try {
      return parseJsonExact(line);
    } catch (error) {
      throw new Error(`${where}: line ${n + 1} is not JSON (${error.message}): ${line.slice(0, 200)}`);
    }
  });
  const summary = parsed.pop();
  if (typeof summary?.session_trace_hash !== 'string' || typeof summary?.entries !== 'number') {
    throw new Error(`${where}: the last line is not the summary line: ${lines.at(-1).slice(0, 200)}`);
  }
  const entries = parsed.map((entry) => ({
    ...entry,
    seed: entry.seed === undefined ? undefined : String(entry.seed),
    run_seed: entry.run_seed === undefined ? undefined : String(entry.run_seed),
  }));
  return { entries, summary };
}

/**
 * The entries and summary of `scope` on the server at `url`. Throws when the server
 * answers with entries of other scopes (a `dst` older than the scope contract).
 */
export async function fetchTrace(url, scope) {
  const address = `${url}/umi/trace?scope=${encodeURIComponent(scope)}`;
  let response;
  try {
    response = await fetch(address);
  } catch (error) {
    throw new Error(`GET ${address}: ${error.message} (is the server still running?)`);
  }
  const body = await response.text();
  if (!response.ok) throw new Error(`GET ${address}: ${response.status} ${body.slice(0, 500)}`);
  const trace = parseTrace(body, `GET ${address}`);
  const stranger = trace.entries.find((entry) => entry.scope !== scope);
  if (stranger) {
    throw new Error(
      `GET ${address} returned an entry of scope ${JSON.stringify(stranger.scope)}: ` +
        'this dst does not filter its trace by scope (it predates per-test scopes; update dst)',
    );
  }
  return trace;
}

/** Every fault that fired in `entries`, in order: ["llm.rate_limit@llm.call", ...]. */
export function faultsFired(entries) {
  return entries.flatMap((entry) => entry.faults ?? []);
}

/** One line naming a trace entry, for findings. */
export function describeEntry(entry) {
  const faults = entry.faults?.length ? entry.faults.join(',') : 'no fault';
  return (
    `${entry.endpoint ?? '?'} ${entry.path ?? '?'} request ${String(entry.request_hash).slice(0, 16)} ` +
    `occurrence ${entry.occurrence}: status ${entry.status ?? 'none'}, end ${entry.end}, ${faults}`
  );
}

/**
 * The cut model entries of `entries` (never MCP's), each with whether it was re-sent:
 * another entry of the same seed, endpoint and request hash at a higher occurrence.
 */
export function cutStreams(entries) {
  return cutResponses(entries).map((entry) => ({
    entry,
    resent: entries.some(
      (later) =>
        later.request_hash === entry.request_hash &&
        later.seed === entry.seed &&
        later.endpoint === entry.endpoint &&
        later.occurrence > entry.occurrence,
    ),
  }));
}

/** Thrown when a run acted on a cut response; `findings` says how, `cut` which responses. */
export class CutStreamError extends Error {
  constructor(findings, context = '') {
    const cut = [...new Set(findings.map((finding) => finding.cut))];
    super(
      `the run acted on ${cut.length} response(s) the server cut${context ? ` (${context})` : ''}:\n` +
        findings.map((finding) => `  - ${finding.message}`).join('\n'),
    );
    this.name = 'CutStreamError';
    this.cut = cut;
    this.findings = findings;
  }
}

/**
 * Judges what the run did with the cut responses of `entries`. `answer`: the run's final
 * text; `answered`: false when it ended in an error, true when it answered without the
 * text at hand (then the last model response being cut is a finding); `reported`: the
 * tool calls the test reported. Returns `{ cut, findings }` (findings empty); throws
 * CutStreamError when there are findings.
 */
export function checkCutEntries(entries, { answer, answered, reported = [] } = {}, context = '') {
  if (answer === undefined && typeof answered !== 'boolean') {
    throw new TypeError(
      'checkCutStreams: pass { answer } (the text the run returned), { answered: true } when it ' +
        `answered, or { answered: false } when it ended in an error (got ${JSON.stringify(answered)})`,
    );
  }
  if (answer !== undefined && typeof answer !== 'string') {
    throw new TypeError(`checkCutStreams: answer must be the run's final text (a string), got ${typeof answer}`);
  }
  if (answer !== undefined && answered === false) {
    throw new TypeError('checkCutStreams: { answer } given with { answered: false }');
  }
  const findings = judge(entries, { answer, answered, reported });
  if (findings.length > 0) throw new CutStreamError(findings, context);
  return { cut: cutResponses(entries), findings };
}

/** Thrown when a request told the model a tool call's result not exactly once. */
export class ToolResultsError extends Error {
  constructor(problems, context = '') {
    super(
      `tool results not paired with calls${context ? ` (${context})` : ''}:\n` +
        problems.map((problem) => `  - ${problem}`).join('\n'),
    );
    this.name = 'ToolResultsError';
    this.problems = problems;
  }
}

/** Checks the pairing of tool calls and results in `entries`; returns [] or throws. */
export function checkToolResultEntries(entries, context = '') {
  const problems = toolResultProblems(entries);
  if (problems.length > 0) throw new ToolResultsError(problems, context);
  return problems;
}
