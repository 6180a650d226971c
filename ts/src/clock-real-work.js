// Real work of Node's own that the clock waits for before it jumps (issue 43, review #4).
//
// The driver counts fetch in flight itself. Other real work a run can wait on (a file
// read, a child process, a DNS lookup) is not fetch, and a few turns of the event loop
// are not enough for it: a timer of the agent's (its deadline on that very work) would
// fire first, and simulated time would depend on real time. Node lists what keeps its
// event loop alive in `process.getActiveResourcesInfo()` (Node >= 17; the names are its
// async-hooks provider names). The names below are the ones Node 20 reports for such
// work, found by experiment: `fs.promises` (FSReqPromise), a FileHandle closing
// (CloseReq: the last step of every `fs.promises.readFile`; without it a 30 s timer
// overtook a 32 MiB read about once in 30 runs), callback fs and fs streams
// (FSReqCallback), a child process until it exits (ProcessWrap), `dns.lookup` and
// `dns.lookupService` (GetAddrInfoReqWrap, GetNameInfoReqWrap), a socket connecting
// (ConnectWrap).
//
// Not listed, so not seen: zlib's and crypto's thread-pool work (Node 20 lists nothing
// for it), `dns.resolve*` (c-ares), and bytes awaited on an open socket or pipe (an idle
// keep-alive socket looks the same, so TCPSocketWrap and PipeWrap are ignored); the
// clock's own real timers (Timeout) and immediates are ignored too. For those, the run
// says so itself with `clock.realWait(promise)`.
//
// What was already there when the run began (the `dst serve` child, an MCP server
// started before the run) is the baseline: only work beyond it holds the clock.

/** The resource names (Node 20's) of real work the clock waits for. */
export const REAL_WORK_RESOURCES = Object.freeze([
  'FSReqPromise',
  'CloseReq',
  'FSReqCallback',
  'ProcessWrap',
  'GetAddrInfoReqWrap',
  'GetNameInfoReqWrap',
  'ConnectWrap',
]);

const watched = new Set(REAL_WORK_RESOURCES);

/** How many of each watched resource the process has now: a Map from name to count. */
export function realWorkCounts() {
  const counts = new Map();
  for (const name of process.getActiveResourcesInfo()) {
    if (watched.has(name)) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/** The watched resources beyond `baseline` (a realWorkCounts()), as "Name xN" strings. */
export function realWorkBeyond(baseline) {
  const beyond = [];
  for (const [name, count] of realWorkCounts()) {
    const extra = count - (baseline.get(name) ?? 0);
    if (extra > 0) beyond.push(`${name} x${extra}`);
  }
  return beyond;
}
