// Servers for the tests that need the real `dst` ($UMI_DST, or `dst` on PATH): started
// with startServer, stopped after the file's tests (and required to exit 0).

import { after } from 'node:test';

import { startServer } from '../../src/index.js';

// Warnings about unknown model ids ("umi-sim") are noise here.
globalThis.AI_SDK_LOG_WARNINGS = false;

/** The model name every test asks for; the server answers any. */
export const MODEL = 'umi-sim';

/** Starts `dst serve` with `options` and stops it after this file's tests. */
export async function serve(options = {}) {
  const server = await startServer(options);
  after(() => server.close());
  return server;
}

/** Runs `jobs` (functions returning promises) with at most `limit` in flight. */
export async function pool(jobs, limit = 16) {
  const results = new Array(jobs.length);
  let next = 0;
  async function worker() {
    while (next < jobs.length) {
      const index = next++;
      results[index] = await jobs[index]();
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker));
  return results;
}
