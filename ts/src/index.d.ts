// Types of @umi-dst/node (the code is plain ESM JavaScript in this folder; see index.js).
// Seeds are u64 and always carried as decimal strings.

import type { ChildProcess } from 'node:child_process';

// ---- server.js ----

export const START_TIMEOUT_MS_DEFAULT: number;

export class DstNotFoundError extends Error {
  name: 'DstNotFoundError';
}

/** `dst serve` refused its flags (exit 2): `reason` is what it said. */
export class ServeRefusedError extends Error {
  name: 'ServeRefusedError';
  reason: string;
}

/** A rule's aim, `KIND[@OPERATION][#N[..]]` (`llm.rate_limit`, `tool.timeout@tool.call.pay`,
 * `llm.rate_limit@llm.call#2`), to its probability in [0, 1]. */
export type Faults = Record<string, number>;

export interface StartServerOptions {
  /** More `dst serve` arguments: `["--model", "m", "--swarm"]`. Not --bind/--faults/--time-scale. */
  flags?: string[];
  /** `--faults`: aim -> probability, or the flag's text (`tool.timeout@tool.call.pay=0.5,llm.rate_limit=0.2` or a scenario name). */
  faults?: Faults | string;
  /** `--time-scale`: real seconds per simulated second (0, the default: no real waits). */
  timeScale?: number;
  /** The dst binary; default $UMI_DST, else `dst` on PATH. */
  dst?: string;
  /** The server's environment; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the "listening on" line; default 60 000. */
  startTimeoutMs?: number;
}

export interface Server {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
  /** The arguments `dst` was started with. */
  readonly args: string[];
  readonly process: ChildProcess;
  /** SIGTERM; resolves when the server exited 0, rejects otherwise. Idempotent. */
  close(): Promise<void>;
  /** POST /umi/reset: forget every occurrence count and the log. */
  reset(): Promise<void>;
}

export function startServer(options?: StartServerOptions): Promise<Server>;
export function findDst(explicit?: string, env?: NodeJS.ProcessEnv): string;
export function faultsFlag(faults: Faults | string): string;
export function serveArgs(options?: Pick<StartServerOptions, 'flags' | 'faults' | 'timeScale'>): string[];

// ---- seed.js ----

/** A u64 seed: decimal or 0x hex text, a BigInt, or a safe integer. */
export type SeedInput = string | bigint | number;

export function seedForTestId(testId: string): string;
export function parseSeed(value: SeedInput, source?: string): string;
export function resolveSeed(
  testId: string,
  explicit?: SeedInput,
  env?: NodeJS.ProcessEnv,
): { seed: string; source: 'option' | 'UMI_SEED' | 'test id' };
/** A path: a seed and its branches (`7/3:9913`), numbers as decimal strings. */
export interface RunPath {
  seed: string;
  branches: { step: string; stream: string }[];
  /** `7/3:9913`: what the server is told where a seed goes. */
  text: string;
}
export const PATH_BRANCHES_MAX: 64;
export function parsePath(value: SeedInput, source?: string): RunPath;
export function resolvePath(
  explicit?: SeedInput | null,
  env?: NodeJS.ProcessEnv,
): { path: RunPath | null; source: 'path option' | 'UMI_PATH' | null };
export function freshScope(testId: string): string;
export function isScope(text: unknown): boolean;

// ---- trace.js ----

export interface TraceEntry {
  seed: string;
  scope: string;
  endpoint: string;
  path: string;
  request_hash: string;
  occurrence: number;
  run_seed: string;
  status: number | null;
  end: 'complete' | 'reset' | 'stall';
  cut: boolean;
  faults: string[];
  trace_hash: string;
  events: Array<{ index: number; at: number; kind: string; detail: string }>;
  /** MCP `tools/call` entries: what the call was and did. */
  tool?: ToolField;
  /** The order this scope's requests arrived in (0-based). */
  arrival?: number;
  carried?: Carried;
  history?: History;
  [key: string]: unknown;
}

export interface TraceSummary {
  entries: number;
  left_out: number;
  session_trace_hash: string;
}

/** What a model response carried to the client (decoded from the bytes sent). */
export interface CarriedCall {
  id: string | null;
  name: string | null;
  /** The argument text as far as it was sent. */
  arguments: string;
}

export interface Carried {
  /** False when the body was cut. */
  whole: boolean;
  text: string;
  tool_calls: CarriedCall[];
}

/** A digest of a model request's conversation. */
export interface History {
  assistant: Array<{ text: string; tool_calls: CarriedCall[] }>;
  tool_results: Array<{ call_id: string }>;
}

/** One piece of evidence that a run acted on a cut response. */
export interface CutFinding {
  kind: 'history_call' | 'history_text' | 'tool_result' | 'tool_ran' | 'tool_reported' | 'answer' | 'answered_after_cut';
  /** The cut response's entry. */
  cut: TraceEntry;
  message: string;
}

export interface CutReport {
  /** Every cut model response (never an MCP entry). */
  cut: TraceEntry[];
  /** Empty: a run with findings throws CutStreamError. */
  findings: CutFinding[];
}

/**
 * What the cut check is told: the run's final text (`answer`: judged against each cut
 * response's partial text), or only whether it answered (`answered: false`: it ended in
 * an error; `true` without `answer`: the last model response being cut is a finding).
 */
export type CutOutcome = { answer: string; answered?: true } | { answered: boolean; answer?: undefined };

export interface ReportedToolCall {
  name: string;
  arguments: unknown;
  callId: string | null;
}

export class CutStreamError extends Error {
  name: 'CutStreamError';
  /** The cut responses the run acted on. */
  cut: TraceEntry[];
  findings: CutFinding[];
}

export class ToolResultsError extends Error {
  name: 'ToolResultsError';
  problems: string[];
}

export function parseJsonExact(text: string): unknown;
export function parseTrace(body: string, where?: string): { entries: TraceEntry[]; summary: TraceSummary };
export function fetchTrace(url: string, scope: string): Promise<{ entries: TraceEntry[]; summary: TraceSummary }>;
export function faultsFired(entries: TraceEntry[]): string[];
export function describeEntry(entry: TraceEntry): string;
export function cutStreams(entries: TraceEntry[]): Array<{ entry: TraceEntry; resent: boolean }>;
export function checkCutEntries(
  entries: TraceEntry[],
  outcome: CutOutcome & { reported?: ReportedToolCall[] },
  context?: string,
): CutReport;
export function checkToolResultEntries(entries: TraceEntry[], context?: string): string[];

// ---- evidence.js ----

export const PREFIX_CHARS_MIN: number;
export const CONTAINS_CHARS_MIN: number;
export function judge(
  entries: TraceEntry[],
  outcome?: CutOutcome & { reported?: ReportedToolCall[] },
): CutFinding[];
export function toolResultProblems(entries: TraceEntry[]): string[];
export function completePartialJson(text: string): unknown;
export function argumentsFit(partialText: string, actual: unknown): boolean;
export function cutResponses(entries: TraceEntry[]): TraceEntry[];

// ---- effects.js ----

/** An MCP `tools/call` entry's `tool` field. */
export interface ToolField {
  name: string;
  arguments: unknown;
  call_id: string | null;
  idempotency_key: string | null;
  ran: boolean;
  deduplicated: boolean;
  side_effects: boolean;
}

export interface Effect {
  tool: string;
  arguments: unknown;
  call_id: string | null;
  idempotency_key: string | null;
  /** The trace entry it came from (null for a call the test reported). */
  entry: TraceEntry | null;
}

export interface EffectOptions {
  /** Calls the agent ran itself (reportToolCall). */
  reported?: ReportedToolCall[];
  /** Tools whose reported calls are effects. */
  effectTools?: string[] | string;
}

export class EffectError extends Error {
  name: 'EffectError';
  kind: 'twice' | 'never_asked';
  tool: string;
  field: 'idempotency_key' | 'call_id';
  value: string;
  effects: Effect[];
}

export function effectsOf(entries: TraceEntry[], options?: EffectOptions): { found: Effect[]; ordered: TraceEntry[] };
export function checkEffectEntries(entries: TraceEntry[], options?: EffectOptions, context?: string): Effect[];

// ---- context.js ----

export type Runner = 'node' | 'vitest' | 'jest';

export interface TestContextOptions {
  /** What startServer returned, or the server's URL. */
  server: { url: string } | string;
  /** Stable across runs and machines (`file::test name`): it picks the seed. */
  testId: string;
  /** Overrides UMI_SEED and the derived seed. */
  seed?: SeedInput;
  /** A path (`7/3:9913`: seed 7, from the scope's 3rd request on answers drawn from stream
   * 9913); overrides UMI_PATH, UMI_SEED and the derived seed. Not with `seed`. */
  path?: string;
  /** For replayLine; default: testId after its last "::". */
  testName?: string;
  /** The test file, for replayLine; default process.argv[1]. */
  file?: string;
  /** Which runner replayLine speaks to; default "node". */
  runner?: Runner;
  /** Where UMI_SEED is read; default process.env. */
  env?: NodeJS.ProcessEnv;
}

export interface TestContext {
  readonly testId: string;
  /** u64, decimal. */
  readonly seed: string;
  readonly seedSource: 'option' | 'UMI_SEED' | 'test id' | 'path option' | 'UMI_PATH';
  /** The path (`7/3:9913`) from the `path` option or UMI_PATH, or null: the seed alone. */
  readonly path: string | null;
  /** Fresh for every context: `<12 hex>-<32 hex>`. */
  readonly scope: string;
  readonly serverURL: string;
  /** `http://HOST:PORT/seed/N/scope/S`: @anthropic-ai/sdk's baseURL. */
  readonly baseURL: string;
  /** `baseURL + "/v1"`: openai-node, and the AI SDK's createOpenAI and createAnthropic. */
  readonly v1BaseURL: string;
  /** Same as v1BaseURL. */
  readonly openaiBaseURL: string;
  /** Same as baseURL. */
  readonly anthropicBaseURL: string;
  /** Same as baseURL: the ollama client's host. */
  readonly ollamaHost: string;
  /** `{ "x-umi-seed": seed, "x-umi-scope": scope }`, for clients pointed at the bare server URL. */
  readonly headers: Record<'x-umi-seed' | 'x-umi-scope', string>;
  /** Another run of the same test: the same seed, a fresh scope. */
  rerun(): TestContext;
  trace(): Promise<TraceEntry[]>;
  traceWithSummary(): Promise<{ entries: TraceEntry[]; summary: TraceSummary }>;
  /** `kind@operation` of every fault that fired in this run. */
  faultsFired(): Promise<string[]>;
  /** What this run reached (`GET /umi/marks?scope=S`): faults at fault points, shapes, tool outcomes. */
  marks(): Promise<{ name: string; kind: 'fault' | 'shape' | 'tool'; arrival: number; step: number; count: number }[]>;
  /** Tool calls reported with reportToolCall. */
  readonly toolCallsReported: ReportedToolCall[];
  /** The agent ran tool `name` with `args` itself (not over MCP), for call `callId`. */
  reportToolCall(name: string, args: unknown, callId?: string | null): void;
  /** Throws CutStreamError (with `findings`) when the run acted on a cut response. */
  checkCutStreams(outcome: CutOutcome): Promise<CutReport>;
  /** Throws ToolResultsError when a call got not exactly one result, or a result no call. */
  checkToolResults(): Promise<string[]>;
  /** Throws EffectError when a tool did its effect twice for one key or call id, or for a
   * call id no model response carried, over the whole scope. Resolves to the effects. */
  checkEffects(options?: { effectTools?: string[] | string }): Promise<Effect[]>;
  /** `UMI_SEED=N node --test --test-name-pattern '...' file` (or the Vitest/Jest form). */
  replayLine(testName?: string): string;
  /** Seed, scope, faults fired and the replay line, one per line. Never rejects. */
  report(testName?: string): Promise<string>;
  /** Runs `body` on the agent's clock: this server, this run's seed (runOnClock). */
  onClock<R>(body: (clock: Clock) => R | Promise<R>, options?: ClockOptions): Promise<R>;
}

export function testContext(options: TestContextOptions): TestContext;
export function replayCommand(options: {
  runner: Runner;
  file: string;
  testName: string;
  seed: string;
  /** A path with branches (`7/3:9913`): the line pins it with `UMI_PATH=` instead of `UMI_SEED=`. */
  path?: string | null;
  nodeOptions?: string;
  /** The binary, when it came from UMI_DST: the line starts `UMI_DST=...`. */
  dst?: string;
}): string;
export function namePattern(name: string): string;
export function shellQuote(text: string): string;

// ---- adapters.js ----

/** A server, or a function giving it (for servers started in a before hook). */
export type ServerSource = { url: string } | string | (() => { url: string } | string | undefined);

export interface AdapterOptions {
  seed?: SeedInput;
  file?: string;
  /** The test body runs on the agent's clock (`umi.onClock`): `true`, or the clock's options. */
  clock?: boolean | ClockOptions;
}

/** node:test's TestContext, as much as the adapter uses. */
export interface NodeTestLike {
  readonly name: string;
  diagnostic(message: string): void;
}

export function forNodeTest<T extends NodeTestLike, R>(
  server: ServerSource,
  body: (t: T, umi: TestContext) => R | Promise<R>,
  options?: AdapterOptions,
): (t: T) => Promise<R>;

/** Vitest's test context, as much as the adapter uses. */
export interface VitestContextLike {
  task: { name: string; suite?: unknown; file?: { filepath?: string }; result?: unknown };
  onTestFailed(handler: (result: any) => unknown): void;
}

export function forVitest(server: ServerSource, vitestContext: VitestContextLike, options?: AdapterOptions): TestContext;

export function forJest<R>(
  server: ServerSource,
  body: (umi: TestContext) => R | Promise<R>,
  options?: AdapterOptions & { testName?: string },
): () => Promise<R>;

export function annotateError(error: unknown, report: string): Error;

// ---- clock.js, clock-driver.js, clock-fetch.js, clock-errors.js, timing.js ----

/** Umi's simulated epoch, 2024-01-01T00:00:00Z, in ms since the Unix epoch. */
export const SIM_EPOCH_UNIX_MS: 1704067200000;
/** What @sinonjs/fake-timers fakes during a run. */
export const FAKED: readonly string[];
export const SETTLE_CYCLES: number;
export const POLL_MS: number;
export const JUMPS_MAX: number;
export const IDLE_REAL_SECS_MAX: number;
export const WAITERS_MAX: number;
/** Node's resource names (process.getActiveResourcesInfo) whose pending work holds the clock. */
export const REAL_WORK_RESOURCES: readonly string[];
export const REAL_WAIT_SECS_MAX: number;
export const BODY_BYTES_MAX: number;
/** undici's headersTimeout (Node's fetch): a response that never comes fails then. */
export const UNDICI_HEADERS_TIMEOUT_SECS: 300;
/** undici's bodyTimeout: a stalled body fails this long after its last byte. */
export const UNDICI_BODY_TIMEOUT_SECS: 300;
export const CLOCK_HEADER: 'x-umi-clock-us';
export const TIMING_HEADER: 'x-umi-timing';
export const NO_RESPONSE_HEADER: 'x-umi-no-response';

/** Options of a run on the clock (the context's `onClock` takes all but serverURL and seed). */
export interface ClockOptions {
  /** Where the clock starts, in microseconds after the epoch; default 0. */
  startUs?: number;
  /** The fetch to put on the clock; default the global fetch. */
  fetch?: typeof fetch;
  /**
   * Real seconds the clock stands still for one real wait (a request to the server coming
   * in whole, Node's own work pending, a `realWait`); default 60.
   */
  realWaitSecsMax?: number;
  /** Real seconds the run may wait on nothing the clock knows; default 60. */
  idleRealSecsMax?: number;
}

export interface RunOnClockOptions extends ClockOptions {
  /** The server's URL (`http://127.0.0.1:PORT`): requests under it go on the clock. */
  serverURL: string;
  /** The run's seed: Math.random is seeded from it. */
  seed: SeedInput;
}

/** When each part of a response came, in microseconds after the request (`x-umi-timing`). */
export interface Timing {
  headUs: number;
  firstUs: number;
  lastUs: number;
  endUs: number;
  ending: 'complete' | 'reset' | 'stall';
}

/** A request to the server made on the clock. */
export interface ClockRequest {
  method: string;
  url: string;
  /** The clock when it was sent (`x-umi-clock-us`). */
  clockUs: number;
  /** Null when the simulation produced no response. */
  status: number | null;
  /** Null for the server's own refusal (nothing simulated: no `x-umi-timing`). */
  timing: Timing | null;
  noResponse: 'reset' | 'stall' | null;
}

/** What a body on the clock is handed. */
export interface Clock {
  /** The clock: microseconds since the simulated epoch. */
  nowUs(): number;
  /** The run's fetch on the clock (also the global fetch during the run). */
  readonly fetch: typeof fetch;
  /**
   * Settles as `promise` does; the clock stands still meanwhile (for real work it cannot
   * see: zlib, crypto, a reply on a socket or a pipe). ClockRealWaitError past realWaitSecsMax.
   */
  realWait<T>(promise: Promise<T>): Promise<T>;
  /** Each request to the server, in the order sent. */
  readonly requests: readonly ClockRequest[];
  /** u64, decimal. */
  readonly seed: string;
  readonly startUs: number;
  readonly epochUnixMs: number;
}

export function runOnClock<R>(options: RunOnClockOptions, body: (clock: Clock) => R | Promise<R>): Promise<R>;
/** A fetch for clients made before a run: the run's fetch inside one, the global fetch outside. */
export function fetchOnClock(input: string | URL | Request, init?: RequestInit): Promise<Response>;

export class ClockDriver {
  constructor(
    fake: unknown,
    options: { baseMs: number; epochMs: number; idleRealSecsMax?: number; realWaitSecsMax?: number },
  );
  nowUs(): number;
  readonly inFlight: number;
  beginIO(): () => void;
  realWait<T>(promise: Promise<T>): Promise<T>;
  waitUntil(atUs: number, signal?: AbortSignal, onAbort?: () => unknown): Promise<void>;
  nextDueUs(): number | null;
  advanceTo(atUs: number): Promise<void>;
  drive<R>(promise: Promise<R>): Promise<R>;
}

export function clockFetch(options: {
  driver: ClockDriver;
  realFetch: typeof fetch;
  serverURL: string;
  log: ClockRequest[];
  realWaitSecsMax?: number;
}): typeof fetch;

/** A real wait past its cap: `dst serve` did not answer (whole), Node's own work or a realWait did not end. */
export class ClockRealWaitError extends Error {
  name: 'ClockRealWaitError';
}
/** The run waits on nothing the clock can move. */
export class ClockStuckError extends Error {
  name: 'ClockStuckError';
}
/** Another fake clock is installed. */
export class ClockBusyError extends Error {
  name: 'ClockBusyError';
}
/** The server answered without `x-umi-timing` (it does not keep the agent's clock). */
export class ClockProtocolError extends Error {
  name: 'ClockProtocolError';
}
/** A header of the clock that cannot be read: `header` names it. */
export class TimingHeaderError extends Error {
  name: 'TimingHeaderError';
  header: 'x-umi-timing' | 'x-umi-no-response';
  value: unknown;
}

export function parseTiming(value: string | null | undefined, where?: string): Timing;
export function parseNoResponse(value: string | null | undefined, where?: string): 'reset' | 'stall';
/** SplitMix64 from `seed`, as Math.random is during a run. */
export function seededRandom(seed: SeedInput): () => number;
