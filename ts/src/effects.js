// The effects check over a run's trace: a scope of `dst serve` is one run, and its
// simulated tools' world (the effect ledger, the idempotency keys seen) lasts the run.
//
// Each MCP `tools/call` entry carries a `tool` field: `{name, arguments, call_id,
// idempotency_key, ran, deduplicated, side_effects}`. An effect is a call of a tool with
// side effects that ran and was not deduplicated (a key the tool had seen applies
// nothing), or a call the test reported with `reportToolCall` of a tool named in
// `effectTools` (tools the agent runs itself). Two effects of one tool for one
// idempotency key, or for one call id, are a double effect; an effect for a call id no
// model response carried (entries' `carried.tool_calls[].id`, when the trace has
// `carried`) is an effect nobody asked for.

import { describeEntry } from './trace.js';

/** Thrown by checkEffects: `kind` is 'twice' or 'never_asked'; `tool`, `field`
 * ('idempotency_key' or 'call_id') and `value` say which; `effects` lists them. */
export class EffectError extends Error {
  constructor(message, { kind, tool, field, value, effects }) {
    super(message);
    this.name = 'EffectError';
    this.kind = kind;
    this.tool = tool;
    this.field = field;
    this.value = value;
    this.effects = effects;
  }
}

/** The effects of `entries` (arrival order when entries carry `arrival`), and of the
 * `reported` calls of tools named in `effectTools`. */
export function effectsOf(entries, { reported = [], effectTools = [] } = {}) {
  const ordered = [...entries].sort((a, b) => (a.arrival ?? 0) - (b.arrival ?? 0));
  const found = [];
  for (const entry of ordered) {
    const tool = entry.tool;
    if (tool && tool.side_effects && tool.ran && !tool.deduplicated) {
      found.push({
        tool: tool.name,
        arguments: tool.arguments,
        call_id: tool.call_id ?? null,
        idempotency_key: tool.idempotency_key ?? null,
        entry,
      });
    }
  }
  const names = new Set(typeof effectTools === 'string' ? [effectTools] : effectTools);
  for (const call of reported) {
    if (names.has(call.name)) {
      found.push({ tool: call.name, arguments: call.arguments, call_id: call.callId ?? call.call_id ?? null, idempotency_key: null, entry: null });
    }
  }
  return { found, ordered };
}

function effectLines(effects) {
  return effects
    .map((effect) => {
      const where = effect.entry ? describeEntry(effect.entry) : 'reported by the test (reportToolCall)';
      return `  - ${effect.tool} ${JSON.stringify(effect.arguments)} call id ${JSON.stringify(effect.call_id)}: ${where}`;
    })
    .join('\n');
}

/**
 * Throws EffectError when one tool did its effect twice for one idempotency key or one
 * call id, or did one for a call id no model response carried (judged when the trace has
 * `carried`). Returns the effects otherwise.
 */
export function checkEffectEntries(entries, options = {}, context = '') {
  const { found, ordered } = effectsOf(entries, options);
  const where = context ? ` (${context})` : '';
  for (const [field, words] of [
    ['idempotency_key', 'idempotency key'],
    ['call_id', 'call id'],
  ]) {
    const groups = new Map();
    for (const effect of found) {
      if (effect[field] === null || effect[field] === undefined) continue;
      const key = JSON.stringify([effect.tool, effect[field]]);
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(effect);
    }
    for (const done of groups.values()) {
      if (done.length > 1) {
        const { tool } = done[0];
        const value = done[0][field];
        throw new EffectError(
          `Umi finding: ${tool} did its effect ${done.length} times for one ${words} ${JSON.stringify(value)}${where}:\n` +
            effectLines(done),
          { kind: 'twice', tool, field, value, effects: done },
        );
      }
    }
  }
  const carried = ordered.filter((entry) => entry.carried && typeof entry.carried === 'object');
  if (carried.length > 0) {
    const ids = new Set(carried.flatMap((entry) => (entry.carried.tool_calls ?? []).map((call) => call.id)));
    const stray = found.find((effect) => effect.call_id !== null && !ids.has(effect.call_id));
    if (stray) {
      throw new EffectError(
        `Umi finding: ${stray.tool} did an effect for call id ${JSON.stringify(stray.call_id)}, which no model ` +
          `response carried${where}:\n${effectLines([stray])}`,
        { kind: 'never_asked', tool: stray.tool, field: 'call_id', value: stray.call_id, effects: [stray] },
      );
    }
  }
  return found;
}
