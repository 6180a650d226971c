// Seeds and scopes for tests run against `dst serve`.
//
// A test's seed is derived from its id alone, so the same test gets the same simulated
// model on every machine and every run, and can be pinned with UMI_SEED to replay a seed
// found elsewhere (a sweep, a CI log). Seeds are u64: they are carried as decimal
// strings (never JS numbers, which lose precision past 2^53) and accepted as strings,
// BigInts or safe integers.
//
// The derivation is the first 8 bytes of SHA-256 over the test id's UTF-8 bytes, read
// big-endian; in Python: int.from_bytes(hashlib.sha256(test_id.encode()).digest()[:8], "big").
//
// A scope names one run of one test on the server, so that repeated identical requests
// of that run get successive occurrences while another run (a rerun, the same test in
// another worker) starts afresh. The server never lets the scope feed the answer; it
// only has to be unique: `<12 hex digits of the test id's hash>-<random UUID hex>`.

import { createHash, randomUUID } from 'node:crypto';

const U64_MAX = (1n << 64n) - 1n;

/** The seed of `testId`: a u64 as a decimal string. */
export function seedForTestId(testId) {
  requireTestId(testId, 'seedForTestId');
  const digest = createHash('sha256').update(testId, 'utf8').digest();
  return digest.readBigUInt64BE(0).toString();
}

/**
 * A u64 seed from a string (decimal or 0x hex), a BigInt or a safe non-negative
 * integer, as a decimal string. `source` names where it came from in the error
 * ("UMI_SEED", "the seed option").
 */
export function parseSeed(value, source = 'seed') {
  let parsed;
  if (typeof value === 'bigint') {
    parsed = value;
  } else if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new TypeError(
        `${source}: ${value} is not a safe integer; pass a u64 seed as a string or a BigInt`,
      );
    }
    parsed = BigInt(value);
  } else if (typeof value === 'string') {
    const text = value.trim();
    if (/^[0-9]+$/.test(text) || /^0[xX][0-9a-fA-F]+$/.test(text)) {
      parsed = BigInt(text);
    } else {
      throw new TypeError(
        `${source}: ${JSON.stringify(value)} is not a seed (a u64 in decimal or 0x hex)`,
      );
    }
  } else {
    throw new TypeError(
      `${source}: expected a u64 seed (string, BigInt or integer), got ${typeof value}`,
    );
  }
  if (parsed < 0n || parsed > U64_MAX) {
    throw new RangeError(`${source}: ${value} is outside u64 (0 ..= ${U64_MAX})`);
  }
  return parsed.toString();
}

/**
 * The seed a test runs on: `explicit` when given, else $UMI_SEED when set, else the one
 * derived from `testId`. Returns `{ seed, source }` (source: "option", "UMI_SEED",
 * "test id").
 */
export function resolveSeed(testId, explicit, env = process.env) {
  if (explicit !== undefined && explicit !== null) {
    return { seed: parseSeed(explicit, 'the seed option'), source: 'option' };
  }
  const pinned = env.UMI_SEED;
  if (pinned !== undefined && pinned !== '') {
    return { seed: parseSeed(pinned, 'UMI_SEED'), source: 'UMI_SEED' };
  }
  return { seed: seedForTestId(testId), source: 'test id' };
}

/** Branches a path holds at most (as the server's). */
export const PATH_BRANCHES_MAX = 64;

/**
 * A path (`7`, `7/3:9913`, `7/3:9913/6:55`: seed 7, and from the scope's 3rd request on
 * every answer drawn from stream 9913, ...) as `{ seed, branches: [{ step, stream }], text }`
 * (numbers as decimal strings). `dst serve` takes the text wherever it takes a seed.
 * `source` names where it came from in the error ("UMI_PATH", "the path option").
 */
export function parsePath(value, source = 'path') {
  if (typeof value !== 'string') {
    return { seed: parseSeed(value, source), branches: [], text: parseSeed(value, source) };
  }
  const [seedText, ...parts] = value.trim().split('/');
  const seed = parseSeed(seedText, `${source} ${JSON.stringify(value)}: the seed`);
  const branches = [];
  for (const part of parts) {
    const where = `${source} ${JSON.stringify(value)}: branch ${JSON.stringify(part)}`;
    const [step, stream, extra] = part.split(':');
    if (stream === undefined || extra !== undefined) {
      throw new TypeError(`${where} is not STEP:STREAM (e.g. 3:9913: from the 3rd request on, stream 9913)`);
    }
    const branch = { step: parseSeed(step, `${where}: the step`), stream: parseSeed(stream, `${where}: the stream`) };
    const last = branches[branches.length - 1];
    if (BigInt(branch.step) < 1n) throw new RangeError(`${where}: a branch's step counts requests from 1`);
    if (last && BigInt(branch.step) <= BigInt(last.step)) {
      throw new RangeError(`${where}: steps must increase (this one follows step ${last.step})`);
    }
    if (branches.length === PATH_BRANCHES_MAX) {
      throw new RangeError(`${where}: a path holds at most ${PATH_BRANCHES_MAX} branches`);
    }
    branches.push(branch);
  }
  const text = [seed, ...branches.map((b) => `${b.step}:${b.stream}`)].join('/');
  return { seed, branches, text };
}

/**
 * The path a test runs on, or null: `explicit` (the `path` option) when given, else
 * $UMI_PATH when set. Returns `{ path, source }` (source: "path option", "UMI_PATH").
 */
export function resolvePath(explicit, env = process.env) {
  if (explicit !== undefined && explicit !== null) {
    return { path: parsePath(explicit, 'the path option'), source: 'path option' };
  }
  const pinned = env.UMI_PATH;
  if (pinned !== undefined && pinned !== '') {
    return { path: parsePath(pinned, 'UMI_PATH'), source: 'UMI_PATH' };
  }
  return { path: null, source: null };
}

/** A fresh scope for one run of `testId`: `<12 hex>-<32 hex>`, 45 characters. */
export function freshScope(testId) {
  requireTestId(testId, 'freshScope');
  const prefix = createHash('sha256').update(testId, 'utf8').digest('hex').slice(0, 12);
  return `${prefix}-${randomUUID().replaceAll('-', '')}`;
}

/** What the server accepts as a scope: 1..128 of [A-Za-z0-9._~-]. */
export function isScope(text) {
  return typeof text === 'string' && /^[A-Za-z0-9._~-]{1,128}$/.test(text);
}

export function requireTestId(testId, who) {
  if (typeof testId !== 'string' || testId.length === 0) {
    throw new TypeError(`${who}: testId must be a non-empty string, got ${JSON.stringify(testId)}`);
  }
}
