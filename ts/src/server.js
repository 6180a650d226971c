// Starting and stopping `dst serve` for a test suite.
//
// One server can serve every test of a file: each test names its own seed and a fresh
// scope in its base URL, so tests neither see each other's occurrence counts nor depend
// on the order they run in. The server listens on an ephemeral loopback port; its first
// stdout line says where (`... listening on http://127.0.0.1:PORT ...`). Stopping sends
// SIGTERM and requires exit 0: a server that crashed or refused to stop fails the suite
// instead of hiding.
//
// The binary: the `dst` option, else $UMI_DST, else `dst` on PATH.

import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

const HOW_TO_GET_DST =
  'get it with `pip install umi-dst`, or build it from the Umi repository with ' +
  '`cargo build -p umi-scenarios --bin dst` and set UMI_DST=<repo>/target/debug/dst';

/** How long `startServer` waits for the "listening on" line before it gives up. */
export const START_TIMEOUT_MS_DEFAULT = 60_000;

// Servers still running: a suite that dies before it closes its servers must not leave
// them behind.
const live = new Set();
let exitHooked = false;
function track(child) {
  live.add(child);
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const running of live) running.kill('SIGKILL');
    });
  }
}

/** Raised when no `dst` binary can be found or run. */
export class DstNotFoundError extends Error {
  constructor(message) {
    super(message);
    this.name = 'DstNotFoundError';
  }
}

/**
 * The `dst` binary to run: `explicit` (the `dst` option), else $UMI_DST, else `dst` on
 * PATH. Throws DstNotFoundError naming what was tried and how to get the binary.
 */
export function findDst(explicit, env = process.env) {
  if (explicit !== undefined) {
    if (typeof explicit !== 'string' || explicit === '') {
      throw new TypeError(`startServer: dst must be a path to the dst binary, got ${JSON.stringify(explicit)}`);
    }
    requireExecutable(explicit, `the dst option (${explicit})`);
    return explicit;
  }
  if (env.UMI_DST) {
    requireExecutable(env.UMI_DST, `UMI_DST (${env.UMI_DST})`);
    return env.UMI_DST;
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'dst');
    if (isExecutableFile(candidate)) return candidate;
  }
  throw new DstNotFoundError(
    `no dst binary: UMI_DST is not set and there is no \`dst\` on PATH; ${HOW_TO_GET_DST}`,
  );
}

function isExecutableFile(file) {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function requireExecutable(file, what) {
  if (!isExecutableFile(file)) {
    throw new DstNotFoundError(`${what} is not an executable file; ${HOW_TO_GET_DST}`);
  }
}

/** Raised when `dst serve` refuses its flags (it exits 2, the usage code): `reason` is what it
 * said (`--faults "tool.timeout@tool.call.refund=1": no tool "refund" is served ...`). */
export class ServeRefusedError extends Error {
  constructor(message, reason) {
    super(message);
    this.name = 'ServeRefusedError';
    this.reason = reason;
  }
}

/** The exit code of a `dst` that refused its arguments. */
const EXIT_CODE_BAD_ARGUMENTS = 2;

// A rule's aim, as `dst serve --faults` reads it (umi-dst's `fault::aim`):
// KIND[@OPERATION][#N[..]], then `=P` in the text form.
const AIM = /^(?<kind>[A-Za-z0-9_.]+)(?:@(?<operation>[A-Za-z0-9_./-]+\*?))?(?:#(?<ordinal>[0-9]+)(?<onwards>\.\.)?)?$/;
const AIM_SHAPE =
  'KIND[@OPERATION][#N[..]], like "tool.timeout@tool.call.issue_refund" or "llm.rate_limit@llm.call#2"';

function checkAim(aim) {
  const match = AIM.exec(aim);
  if (match === null) {
    throw new TypeError(`startServer: faults: rule ${JSON.stringify(aim)} is not ${AIM_SHAPE}`);
  }
  if (match.groups.ordinal !== undefined && Number(match.groups.ordinal) === 0) {
    throw new RangeError(`startServer: faults: rule ${JSON.stringify(aim)}: \`#0\`: the ordinal counts from 1`);
  }
}

function checkProbability(aim, p) {
  if (typeof p !== 'number' || !(p >= 0 && p <= 1)) {
    throw new RangeError(`startServer: fault ${aim} has probability ${JSON.stringify(p)}; it must be a number in [0, 1]`);
  }
}

/**
 * The `--faults` value: rules `KIND[@OPERATION][#N[..]]=P`, comma-separated (or a scenario
 * name), or an object of aim -> probability in [0, 1]: `{ "tool.timeout@tool.call.pay": 0.5,
 * "llm.rate_limit@llm.call#2": 1 }`. The grammar is checked here; whether the kind and the
 * operation exist is the server's check (it knows its tools): `startServer` rejects with a
 * ServeRefusedError saying what it said.
 */
export function faultsFlag(faults) {
  if (typeof faults === 'string') {
    const items = faults.split(',').map((item) => item.trim()).filter((item) => item !== '');
    if (items.length === 0) throw new TypeError('startServer: faults is an empty string');
    if (items.length === 1 && !/[=@#]/.test(items[0])) return items[0]; // a scenario's profile
    for (const item of items) {
      const at = item.indexOf('=');
      if (at < 0) throw new TypeError(`startServer: faults: rule ${JSON.stringify(item)} has no \`=probability\``);
      const aim = item.slice(0, at);
      const text = item.slice(at + 1).trim();
      checkAim(aim);
      if (!/^[0-9.]+$/.test(text) || Number.isNaN(Number(text))) {
        throw new RangeError(`startServer: faults: rule ${JSON.stringify(item)}: ${JSON.stringify(text)} is not a probability (0 to 1)`);
      }
      checkProbability(aim, Number(text));
    }
    return items.join(',');
  }
  if (faults === null || typeof faults !== 'object' || Array.isArray(faults)) {
    throw new TypeError(
      'startServer: faults must be an object of aim -> probability ({ "llm.rate_limit": 0.2 }) or a string',
    );
  }
  const parts = [];
  for (const [aim, p] of Object.entries(faults)) {
    checkAim(aim);
    checkProbability(aim, p);
    // Never an exponent (`1e-7`): the server's grammar takes digits and one point.
    const text = /e/i.test(String(p)) ? p.toFixed(20).replace(/0+$/, '').replace(/\.$/, '') : String(p);
    parts.push(`${aim}=${text}`);
  }
  if (parts.length === 0) throw new TypeError('startServer: faults is an empty object');
  return parts.join(',');
}

/** The arguments after `dst`. */
export function serveArgs({ flags = [], faults, timeScale } = {}) {
  if (!Array.isArray(flags) || flags.some((f) => typeof f !== 'string')) {
    throw new TypeError('startServer: flags must be an array of strings (["--model", "m"])');
  }
  for (const reserved of ['--bind', '--faults', '--time-scale']) {
    if (flags.some((f) => f === reserved || f.startsWith(`${reserved}=`))) {
      throw new TypeError(
        `startServer: pass ${reserved} through its option (bind is always 127.0.0.1:0), not in flags`,
      );
    }
  }
  const args = ['serve', '--bind', '127.0.0.1:0'];
  if (faults !== undefined) args.push('--faults', faultsFlag(faults));
  if (timeScale !== undefined) {
    if (typeof timeScale !== 'number' || !Number.isFinite(timeScale) || timeScale < 0) {
      throw new RangeError(`startServer: timeScale must be a finite number >= 0, got ${JSON.stringify(timeScale)}`);
    }
    args.push('--time-scale', String(timeScale));
  }
  return [...args, ...flags];
}

/**
 * Starts `dst serve` on an ephemeral loopback port.
 *
 * options: `flags` (more arguments: `["--model", "m"]`), `faults` (object or string; see
 * `faultsFlag`; a refused one rejects with a ServeRefusedError),
 * `timeScale` (real seconds per simulated second; 0, the server's default, waits never),
 * `dst` (the binary), `env` (the child's environment), `startTimeoutMs`.
 *
 * Resolves to `{ url, args, process, close(), reset() }`.
 */
export async function startServer(options = {}) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('startServer: options must be an object');
  }
  const known = new Set(['flags', 'faults', 'timeScale', 'dst', 'env', 'startTimeoutMs']);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) {
      throw new TypeError(`startServer: unknown option ${JSON.stringify(key)} (known: ${[...known].join(', ')})`);
    }
  }
  const env = options.env ?? process.env;
  const dst = findDst(options.dst, env);
  const args = serveArgs(options);
  const startTimeoutMs = options.startTimeoutMs ?? START_TIMEOUT_MS_DEFAULT;
  const command = [dst, ...args].join(' ');

  const child = spawn(dst, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let stderr = '';
  let stdout = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    // Keep the tail: enough to say why it failed.
    stderr = (stderr + chunk).slice(-8192);
  });
  // 'close', not 'exit': it comes after the pipes are drained, so stderr is whole.
  const exited = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  const spawnError = new Promise((resolve) => child.on('error', resolve));

  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command}: no "listening on" line within ${startTimeoutMs} ms; stdout: ${stdout} stderr: ${stderr}`));
    }, startTimeoutMs);
    child.stdout.setEncoding('utf8');
    const onData = (chunk) => {
      stdout = (stdout + chunk).slice(-8192);
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        // Keep draining stdout so the server never blocks on a full pipe.
        child.stdout.resume();
        resolve(match[1].replace(/\/+$/, ''));
      }
    };
    child.stdout.on('data', onData);
    spawnError.then((error) => {
      clearTimeout(timer);
      reject(new DstNotFoundError(`${command}: could not start: ${error.message}; ${HOW_TO_GET_DST}`));
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      const message = `${command} exited (${signal ?? `code ${code}`}) before listening; stderr: ${stderr.trim()}`;
      if (code === EXIT_CODE_BAD_ARGUMENTS) {
        const reason = stderr.trim().replace(/^dst serve: /, '');
        reject(new ServeRefusedError(`startServer: dst serve refused its options: ${message}`, reason));
      } else {
        reject(new Error(message));
      }
    });
  });

  let closing;
  return {
    url,
    args,
    process: child,
    /** Sends SIGTERM and resolves when the server exited 0; rejects otherwise. */
    close() {
      closing ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        const { code, signal } = await exited;
        if (code !== 0) {
          throw new Error(`${command} did not stop cleanly on SIGTERM (${signal ?? `exit ${code}`}); stderr: ${stderr.trim()}`);
        }
      })();
      return closing;
    },
    /** POST /umi/reset: the server forgets every occurrence count and its log. */
    async reset() {
      const response = await fetch(`${url}/umi/reset`, { method: 'POST' });
      if (!response.ok) {
        throw new Error(`POST ${url}/umi/reset: ${response.status} ${await response.text()}`);
      }
    },
  };
}
