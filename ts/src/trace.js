// The server's log of one scope, and the cut-stream check over it.
//
// `GET /umi/trace?scope=S` returns one JSON object per answered request of that scope,
// then a summary line `{"entries", "left_out", "session_trace_hash"}`. Seeds and run seeds
// are u64 and routinely past 2^53, which JSON.parse would round: integers of 16 digits
// or more are read as strings, and `seed` / `run_seed` are always decimal strings here.
//
// The cut-stream check: an entry with `cut: true` is a response whose body did not end
// the way its format ends a whole answer (a reset, a stall, a stream cut by a fault). A
// client that then hands its caller an answer must have re-sent that request (the
// server sees the same request hash again, at a higher occurrence); if it did not, it
// took a truncated answer for a whole one. A run that ended in an error is allowed to
// stop at a cut: the caller was told.

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
 * The cut entries of `entries`, each with whether it was re-sent: another entry of the
 * same seed, endpoint and request hash at a higher occurrence.
 */
export function cutStreams(entries) {
  return entries
    .filter((entry) => entry.cut === true)
    .map((entry) => ({
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

/** Thrown when a run answered although a cut response was never re-sent. */
export class CutStreamError extends Error {
  constructor(unresent, context = '') {
    super(
      `${unresent.length} cut response(s) never re-sent, yet the run answered as if whole` +
        `${context ? ` (${context})` : ''}:\n` +
        unresent.map((entry) => `  - ${describeEntry(entry)}`).join('\n'),
    );
    this.name = 'CutStreamError';
    this.cut = unresent;
  }
}

/**
 * Checks the cut entries of `entries` for a run that `answered` (true) or ended in an
 * error (false). Returns `{ cut, unresent }` (entries); throws CutStreamError when the
 * run answered and some cut response was never re-sent.
 */
export function checkCutEntries(entries, { answered } = {}, context = '') {
  if (typeof answered !== 'boolean') {
    throw new TypeError(
      'checkCutStreams: pass { answered: true } when the run returned an answer, ' +
        `{ answered: false } when it ended in an error (got ${JSON.stringify(answered)})`,
    );
  }
  const found = cutStreams(entries);
  const unresent = found.filter((c) => !c.resent).map((c) => c.entry);
  if (answered && unresent.length > 0) throw new CutStreamError(unresent, context);
  return { cut: found.map((c) => c.entry), unresent };
}
