// @umi-dst/node: test TypeScript and JavaScript agents against `dst serve`, Umi's seeded
// simulated model over real HTTP. Same seed, same bytes: a test's seed comes from its
// id, each run gets a fresh scope on a shared server, and a failure says how to replay.
//
//   startServer()        spawn `dst serve` on an ephemeral port      (server.js)
//   testContext()        a run's seed, scope, base URLs, trace        (context.js)
//   forNodeTest / forVitest / forJest   runner adapters              (adapters.js)
//   checkCutEntries ...  the cut-stream and tool-result checks         (trace.js, evidence.js)
//   checkEffectEntries   the effects check over trace entries         (effects.js)
//   runOnClock / umi.onClock   the agent's clock is the run's clock   (clock.js, clock-driver.js,
//                              clock-fetch.js, clock-errors.js, timing.js, seeded-random.js,
//                              clock-real-work.js)

export {
  startServer,
  findDst,
  faultsFlag,
  serveArgs,
  DstNotFoundError,
  ServeRefusedError,
  START_TIMEOUT_MS_DEFAULT,
} from './server.js';
export { testContext, replayCommand, namePattern, shellQuote } from './context.js';
export {
  seedForTestId,
  parseSeed,
  resolveSeed,
  parsePath,
  resolvePath,
  PATH_BRANCHES_MAX,
  freshScope,
  isScope,
} from './seed.js';
export {
  parseJsonExact,
  parseTrace,
  fetchTrace,
  faultsFired,
  cutStreams,
  checkCutEntries,
  checkToolResultEntries,
  describeEntry,
  CutStreamError,
  ToolResultsError,
} from './trace.js';
export {
  judge,
  toolResultProblems,
  completePartialJson,
  argumentsFit,
  cutResponses,
  PREFIX_CHARS_MIN,
  CONTAINS_CHARS_MIN,
} from './evidence.js';
export { forNodeTest, forVitest, forJest, annotateError } from './adapters.js';
export { checkEffectEntries, effectsOf, EffectError } from './effects.js';
export { runOnClock, fetchOnClock, SIM_EPOCH_UNIX_MS, FAKED } from './clock.js';
export {
  ClockDriver,
  SETTLE_CYCLES,
  POLL_MS,
  JUMPS_MAX,
  IDLE_REAL_SECS_MAX,
  WAITERS_MAX,
} from './clock-driver.js';
export { REAL_WORK_RESOURCES } from './clock-real-work.js';
export {
  clockFetch,
  REAL_WAIT_SECS_MAX,
  BODY_BYTES_MAX,
  UNDICI_HEADERS_TIMEOUT_SECS,
  UNDICI_BODY_TIMEOUT_SECS,
} from './clock-fetch.js';
export { ClockRealWaitError, ClockStuckError, ClockBusyError, ClockProtocolError } from './clock-errors.js';
export {
  parseTiming,
  parseNoResponse,
  TimingHeaderError,
  CLOCK_HEADER,
  TIMING_HEADER,
  NO_RESPONSE_HEADER,
} from './timing.js';
export { seededRandom } from './seeded-random.js';
