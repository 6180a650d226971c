// A stand-in for `dst serve`'s trace endpoint, for the helper's unit tests: it answers
// GET /umi/trace?scope=S with `entriesFor(S)` (an array of entries; a string entry is
// sent as is), then the summary line.

import http from 'node:http';

export async function fakeTraceServer(t, entriesFor) {
  const server = http.createServer((request, response) => {
    const url = new URL(request.url, 'http://x');
    if (url.pathname !== '/umi/trace') {
      response.writeHead(404).end('not found');
      return;
    }
    const entries = entriesFor(url.searchParams.get('scope'));
    const lines = entries.map((entry) => (typeof entry === 'string' ? entry : JSON.stringify(entry)));
    lines.push(JSON.stringify({ entries: entries.length, left_out: 0, session_trace_hash: 'ab'.repeat(32) }));
    response.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(`${lines.join('\n')}\n`);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${server.address().port}` };
}

/** A trace entry with the fields the helper reads; `overrides` replaces any. */
export function entry(overrides = {}) {
  return {
    seed: 7,
    scope: 's',
    endpoint: 'openai',
    path: '/v1/chat/completions',
    request_hash: 'aa'.repeat(32),
    occurrence: 0,
    run_seed: 1,
    status: 200,
    end: 'complete',
    cut: false,
    faults: [],
    trace_hash: 'cd'.repeat(32),
    events: [],
    ...overrides,
  };
}
