// What a run did with the responses `dst serve` cut: evidence, not guesses. The same rule
// as the Python plugin's umi_dst/evidence.py (docs/adr/0019-the-cut-oracle-judges-evidence.md).
//
// The server logs, for each model request of a scope, what the response the client
// received carried (`carried`: text prefix, each tool call's id, name and argument text
// as far as sent, `whole`), a digest of the conversation the request sent (`history`:
// assistant turns, tool results' call ids), and the order requests arrived in
// (`arrival`). A run ACTED ON a cut response R when:
// - a later request's history (by arrival) holds an assistant turn built from R (a tool
//   call with an id R carried; R's non-empty partial text as the turn's text, or its start
//   when R's text has PREFIX_CHARS_MIN characters or more), or tool results for R's ids;
// - a tool ran with arguments from R: an MCP tools/call after R with a call id R carried,
//   or a call of a tool R carried whose arguments fit R's partial argument text; the same
//   for tool calls the test reported (reportToolCall);
// - the final answer is R's non-empty partial text, or starts with it (from
//   PREFIX_CHARS_MIN characters), or contains it (from CONTAINS_CHARS_MIN characters).
// Evidence a whole response of the scope explains (its call ids, its text, its tool calls
// by name and arguments) is never counted: recovering by a retry, a fallback model or
// replanning and answering from a complete response is not acting on a cut.
//
// Arguments FIT a partial argument text when the text, completed as a partial-JSON parser
// completes it (an open string closed, a dangling key or token dropped, brackets closed),
// is a prefix of them: `{"amount": 21` fits `{"amount": 216}`; empty text or `{` fits any
// object. MCP cuts are kept apart: a cut tools/call is the "maybe applied" question (the
// effect oracle's), never a cut model stream.

export const MCP_ENDPOINT = 'mcp';
export const PREFIX_CHARS_MIN = 8;
export const CONTAINS_CHARS_MIN = 24;
const COMPLETION_TRIES_MAX = 512;
const CLOSERS = { '{': '}', '[': ']' };

/** A model request's entry (not `/mcp`). */
export function isModelEntry(entry) {
  return entry.endpoint !== MCP_ENDPOINT && entry.path !== '/mcp';
}

/** The model entries whose 200 body was cut (never an MCP entry). */
export function cutResponses(entries) {
  return entries.filter((entry) => isModelEntry(entry) && entry.cut === true);
}

function closers(text) {
  const stack = [];
  let inString = false;
  let escaped = false;
  for (const char of text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (CLOSERS[char]) stack.push(CLOSERS[char]);
    else if ((char === '}' || char === ']') && stack.length) stack.pop();
  }
  if (escaped) return null;
  return (inString ? '"' : '') + stack.reverse().join('');
}

/** The value a partial-JSON parser makes of cut argument text, or null ('' is {}). */
export function completePartialJson(text) {
  const trimmed = (text ?? '').trimEnd();
  if (!trimmed) return {};
  const lowest = Math.max(0, trimmed.length - COMPLETION_TRIES_MAX);
  for (let end = trimmed.length; end >= lowest; end--) {
    const head = trimmed.slice(0, end).trimEnd();
    if (!head) return {};
    const close = closers(head);
    if (close === null) continue;
    try {
      return JSON.parse(head + close);
    } catch {
      // a dangling key or token: try a shorter head
    }
  }
  return null;
}

/** Whether `actual` (a JSON value) could be what the partial value became. */
export function fits(partial, actual) {
  if (Array.isArray(partial)) {
    return Array.isArray(actual) && partial.length <= actual.length && partial.every((p, i) => fits(p, actual[i]));
  }
  if (partial !== null && typeof partial === 'object') {
    return (
      actual !== null &&
      typeof actual === 'object' &&
      !Array.isArray(actual) &&
      Object.entries(partial).every(([key, value]) => Object.hasOwn(actual, key) && fits(value, actual[key]))
    );
  }
  if (typeof partial === 'string') return typeof actual === 'string' && actual.startsWith(partial);
  if (typeof partial === 'number') {
    return typeof actual === 'number' && (partial === actual || JSON.stringify(actual).startsWith(JSON.stringify(partial)));
  }
  return partial === actual;
}

/** Whether the arguments `actual` (a value or its JSON text) fit the cut text. */
export function argumentsFit(partialText, actual) {
  let value = actual;
  if (typeof actual === 'string') {
    try {
      value = JSON.parse(actual);
    } catch {
      return (partialText ?? '') !== '' && actual.startsWith(partialText);
    }
  }
  const partial = completePartialJson(partialText);
  return partial !== null && fits(partial, value);
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortKeys(value[key])]));
  }
  return value;
}

function canonical(args) {
  let value = args;
  if (typeof args === 'string') {
    try {
      value = JSON.parse(args);
    } catch {
      return args;
    }
  }
  return JSON.stringify(sortKeys(value ?? null));
}

/** A cut response, named for a finding. */
export function nameResponse(entry) {
  return (
    `cut response R (request ${String(entry.request_hash ?? '?').slice(0, 16)}, occurrence ` +
    `${entry.occurrence}, arrival ${entry.arrival ?? '?'})`
  );
}

function short(entry) {
  return `request ${String(entry.request_hash ?? '?').slice(0, 16)}, arrival ${entry.arrival ?? '?'}`;
}

/** What the scope's whole responses carried: evidence they explain. */
function wholeOf(entries) {
  const whole = { ids: new Set(), texts: [], calls: new Set() };
  for (const entry of entries) {
    const carried = entry.carried;
    if (!isModelEntry(entry) || !carried || carried.whole !== true) continue;
    if ((carried.text ?? '').trim()) whole.texts.push(carried.text.trim());
    for (const call of carried.tool_calls ?? []) {
      if (call.id) whole.ids.add(call.id);
      whole.calls.add(`${call.name}\u0000${canonical(call.arguments ?? '')}`);
    }
  }
  return whole;
}

function carriedOf(entry) {
  const carried = entry.carried ?? {};
  return { text: carried.text ?? '', calls: (carried.tool_calls ?? []).filter((c) => c && typeof c === 'object') };
}

function historyFindings(cut, later, whole) {
  const { text, calls } = carriedOf(cut);
  const ids = new Map(calls.filter((c) => c.id && !whole.ids.has(c.id)).map((c) => [c.id, c]));
  const stripped = text.trim();
  const found = [];
  const seen = new Set();
  const once = (kind, key, message) => {
    if (seen.has(`${kind}\u0000${key}`)) return;
    seen.add(`${kind}\u0000${key}`);
    found.push({ kind, cut, message });
  };
  for (const entry of later) {
    const history = entry.history ?? {};
    for (const turn of history.assistant ?? []) {
      for (const call of turn.tool_calls ?? []) {
        if (ids.has(call.id)) {
          once(
            'history_call',
            call.id,
            `a later request (${short(entry)}) sent back an assistant turn with tool call ` +
              `\`${call.name}\` (${call.id}) from ${nameResponse(cut)}`,
          );
        }
      }
      const turnText = (turn.text ?? '').trim();
      const built =
        stripped && turnText && (turnText === stripped || (stripped.length >= PREFIX_CHARS_MIN && turnText.startsWith(stripped)));
      if (built && !whole.texts.includes(turnText)) {
        once(
          'history_text',
          turnText,
          `a later request (${short(entry)}) sent back an assistant turn whose text is the partial text of ` +
            `${nameResponse(cut)}: ${JSON.stringify(stripped.slice(0, 60))}`,
        );
      }
    }
    for (const result of history.tool_results ?? []) {
      const call = ids.get(result.call_id);
      if (call) {
        once(
          'tool_result',
          call.id,
          `a later request (${short(entry)}) told the model the result of tool call \`${call.name}\` ` +
            `(${call.id}) from ${nameResponse(cut)}`,
        );
      }
    }
  }
  return found;
}

function callFrom(cut, name, args, callId, whole) {
  const { calls } = carriedOf(cut);
  if (callId && !whole.ids.has(callId) && calls.some((call) => call.id === callId)) return 'call id';
  if (args === undefined || args === null || whole.calls.has(`${name}\u0000${canonical(args)}`)) return null;
  return calls.some((call) => call.name === name && argumentsFit(call.arguments ?? '', args)) ? 'arguments' : null;
}

/** The tool calls an MCP entry ran: [name, arguments or null, callId or null]. */
export function mcpToolCalls(entry) {
  const tool = entry.tool;
  if (tool && typeof tool === 'object' && tool.name) return [[tool.name, tool.arguments ?? null, tool.call_id ?? null]];
  return (entry.events ?? [])
    .filter((event) => event.kind === 'tool.call')
    .map((event) => String(event.detail ?? '').split(/\s+/))
    .filter((words) => words.length >= 2)
    .map((words) => [words[0], null, words[1]]);
}

function toolFindings(cut, entries, reported, whole) {
  const found = [];
  const arrival = cut.arrival ?? -1;
  for (const entry of entries) {
    if (isModelEntry(entry) || (entry.arrival ?? -1) <= arrival) continue;
    for (const [name, args, callId] of mcpToolCalls(entry)) {
      const how = callFrom(cut, name, args, callId, whole);
      if (how) {
        found.push({
          kind: 'tool_ran',
          cut,
          message: `tool \`${name}\` ran (over /mcp, arrival ${entry.arrival ?? '?'}) with the ${how} of a call from ${nameResponse(cut)}`,
        });
      }
    }
  }
  for (const call of reported) {
    const how = callFrom(cut, call.name, call.arguments, call.callId, whole);
    if (how) {
      found.push({
        kind: 'tool_reported',
        cut,
        message:
          `tool \`${call.name}\` ran (reported by the test) with the ${how} of a call from ${nameResponse(cut)}: ` +
          canonical(call.arguments).slice(0, 80),
      });
    }
  }
  return found;
}

/** Whether `answer` (the run's final text) is `cut`'s partial text. */
export function answerFrom(cut, answer, whole) {
  const partial = carriedOf(cut).text.trim();
  const text = (answer ?? '').trim();
  // A whole response explains the answer when the answer is its text, starts with one at
  // least as long as the partial, or the whole text holds the partial (a short whole text
  // that merely appears in the answer, "Let me check.", explains nothing).
  const explained = whole.texts.some(
    (w) => text === w || (w.length >= partial.length && text.startsWith(w)) || w.includes(partial),
  );
  if (!partial || !text || explained) return false;
  return (
    text === partial ||
    (partial.length >= PREFIX_CHARS_MIN && text.startsWith(partial)) ||
    (partial.length >= CONTAINS_CHARS_MIN && text.includes(partial))
  );
}

/**
 * The findings: how the run acted on each cut model response of `entries`. `answer`: the
 * run's final text (or undefined); `answered`: true when it answered without the text at
 * hand (a finding when the last model response it received was cut); `reported`: the
 * tool calls the test reported.
 */
export function judge(entries, { answer, answered, reported = [] } = {}) {
  const whole = wholeOf(entries);
  const ordered = [...entries].sort((a, b) => (a.arrival ?? 0) - (b.arrival ?? 0));
  const findings = [];
  for (const cut of cutResponses(ordered)) {
    const later = ordered.filter((e) => isModelEntry(e) && (e.arrival ?? 0) > (cut.arrival ?? 0));
    findings.push(...historyFindings(cut, later, whole), ...toolFindings(cut, ordered, reported, whole));
    if (answer !== undefined && answerFrom(cut, answer, whole)) {
      findings.push({
        kind: 'answer',
        cut,
        message: `the final answer is the partial text of ${nameResponse(cut)}: ${JSON.stringify(answer.trim().slice(0, 60))}`,
      });
    }
  }
  if (answer === undefined && answered === true) {
    const answeredBy = ordered.filter((e) => isModelEntry(e) && e.status === 200);
    const last = answeredBy.at(-1);
    if (last?.cut === true) {
      findings.push({
        kind: 'answered_after_cut',
        cut: last,
        message:
          `the run answered, and the last model response it received was ${nameResponse(last)}: ` +
          'nothing whole came after it (pass { answer } to judge the text itself)',
      });
    }
  }
  const unique = [];
  for (const finding of findings) {
    if (!unique.some((f) => f.kind === finding.kind && f.message === finding.message)) unique.push(finding);
  }
  return unique;
}

/**
 * What is wrong with the pairing of tool calls and results in the scope's requests: in
 * each request's history, every call an assistant turn made has exactly one result, and
 * every result answers a call a turn made (umi-dst's llm/tool_pairing.rs, minus message
 * order, which the digest does not keep).
 */
export function toolResultProblems(entries) {
  const problems = [];
  const ordered = [...entries].sort((a, b) => (a.arrival ?? 0) - (b.arrival ?? 0));
  for (const entry of ordered) {
    const history = entry.history;
    if (!isModelEntry(entry) || !history) continue;
    const where = `request ${String(entry.request_hash ?? '?').slice(0, 16)} (arrival ${entry.arrival ?? '?'})`;
    const made = new Map();
    for (const turn of history.assistant ?? []) for (const call of turn.tool_calls ?? []) made.set(call.id, call.name);
    const counts = new Map();
    for (const result of history.tool_results ?? []) {
      if (!made.has(result.call_id)) {
        problems.push(`${where}: a result for call ${JSON.stringify(result.call_id)}, which no assistant turn made`);
      }
      counts.set(result.call_id, (counts.get(result.call_id) ?? 0) + 1);
    }
    for (const [id, name] of made) {
      const count = counts.get(id) ?? 0;
      if (count !== 1) {
        problems.push(`${where}: call \`${name}\` (${JSON.stringify(id)}) has ${count} results (the model must get exactly one)`);
      }
    }
  }
  return problems;
}
