// A stand-in for `dst serve`'s side of the agent's clock, for the clock's unit tests: it
// answers each request with what `answer(request)` says (status, headers with
// `x-umi-timing`, body chunks, and how the connection ends: `complete`, or `destroy`
// after the chunks, as `dst serve` ends a reset or stalled body at --time-scale 0), after
// `delayMs` of REAL time. It records each request's `x-umi-clock-us` and what the fake
// clock read (Date.now()) when the answer went out: the server runs in the test's process,
// so its Date is the agent's.

import http from 'node:http';

// Real timers, taken before any clock is installed.
const realSetTimeout = globalThis.setTimeout;

export function timing(headUs, firstUs, lastUs, endUs, ending) {
  return `head_us=${headUs}, first_us=${firstUs}, last_us=${lastUs}, end_us=${endUs}, ending=${ending}`;
}

export async function timedServer(t, answer) {
  const seen = [];
  const server = http.createServer((request, response) => {
    const url = new URL(request.url, 'http://x');
    const clockHeader = request.headers['x-umi-clock-us'] ?? null;
    request.resume();
    request.on('end', () => {
      const plan = answer({ path: url.pathname, clockHeader, headers: request.headers });
      realSetTimeout(() => {
        seen.push({ path: url.pathname, clockHeader, dateNowAtAnswer: Date.now() });
        if (plan.end === 'never') return; // holds the connection: the client's cap must end it
        response.writeHead(plan.status ?? 200, plan.headers ?? {});
        if (plan.end === 'destroy') {
          for (const chunk of plan.chunks ?? []) response.write(chunk);
          realSetTimeout(() => request.socket.destroy(), 20);
        } else {
          for (const chunk of plan.chunks ?? []) response.write(chunk);
          response.end();
        }
      }, plan.delayMs ?? 0);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${server.address().port}`, seen };
}
