// The agent's clock on the wire (docs/guide.md, "The agent's clock"): the request header
// `x-umi-clock-us` the client sends and the response header `x-umi-timing` with which
// `dst serve` says when, on the run's simulated clock, each part of its answer came.
//
//   x-umi-timing: head_us=H, first_us=F, last_us=L, end_us=E, ending=X
//
// H, F, L and E are u64 microseconds after the request's arrival: the status line and
// headers (H), the first body byte (F), the last (L), the end of the response (E); X is
// `complete`, `reset` or `stall`. Keys always in this order, `, ` between items. A
// response the simulation never produced (a connection refused, reset or hung before the
// headers) is a 502 with `x-umi-no-response: reset|stall`, which is never the answer.

/** The request header: the agent's clock in microseconds when the request is sent. */
export const CLOCK_HEADER = 'x-umi-clock-us';
/** The response header: when each part of the answer came (see above). */
export const TIMING_HEADER = 'x-umi-timing';
/** The response header of a 502 standing for no response at all. */
export const NO_RESPONSE_HEADER = 'x-umi-no-response';

export const ENDINGS = ['complete', 'reset', 'stall'];

const TIMING = /^head_us=(\d+), first_us=(\d+), last_us=(\d+), end_us=(\d+), ending=([a-z]+)$/;

/** A header the clock cannot read: `header` names it, `value` is what came. */
export class TimingHeaderError extends Error {
  constructor(header, value, why, where) {
    super(`${header}: ${JSON.stringify(value)} ${why}${where ? ` (${where})` : ''}`);
    this.name = 'TimingHeaderError';
    this.header = header;
    this.value = value;
  }
}

/** A u64 of the header as a Number, refused past 2^53 - 1 (no clock gets there). */
function micros(text, key, value, where) {
  const big = BigInt(text);
  if (big > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new TimingHeaderError(TIMING_HEADER, value, `has ${key}=${text}, past 2^53 - 1 microseconds`, where);
  }
  return Number(big);
}

/**
 * `{ headUs, firstUs, lastUs, endUs, ending }` from an `x-umi-timing` value; throws
 * TimingHeaderError naming the header when it is not in the form above or its times do
 * not come in order (H <= F <= L <= E). `where` says which request, for the message.
 */
export function parseTiming(value, where) {
  if (typeof value !== 'string') {
    throw new TimingHeaderError(TIMING_HEADER, value, 'is missing', where);
  }
  const match = TIMING.exec(value);
  if (!match) {
    throw new TimingHeaderError(
      TIMING_HEADER,
      value,
      'is not `head_us=H, first_us=F, last_us=L, end_us=E, ending=X`',
      where,
    );
  }
  const [headUs, firstUs, lastUs, endUs] = ['head_us', 'first_us', 'last_us', 'end_us'].map((key, i) =>
    micros(match[i + 1], key, value, where),
  );
  const ending = match[5];
  if (!ENDINGS.includes(ending)) {
    throw new TimingHeaderError(TIMING_HEADER, value, `has ending=${ending}, not one of ${ENDINGS.join(', ')}`, where);
  }
  if (!(headUs <= firstUs && firstUs <= lastUs && lastUs <= endUs)) {
    throw new TimingHeaderError(TIMING_HEADER, value, 'does not have head_us <= first_us <= last_us <= end_us', where);
  }
  return { headUs, firstUs, lastUs, endUs, ending };
}

/** `reset` or `stall` from an `x-umi-no-response` value; TimingHeaderError otherwise. */
export function parseNoResponse(value, where) {
  if (value === 'reset' || value === 'stall') return value;
  throw new TimingHeaderError(NO_RESPONSE_HEADER, value, 'is not `reset` or `stall`', where);
}
