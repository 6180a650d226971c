"""What a run did with the responses `dst serve` cut: evidence, not guesses.

The server logs, for every model request of a scope, what the response the client
received carried (`carried`: the text prefix, each tool call's id, name and argument text
as far as they were sent, and `whole`), a digest of the conversation the request sent
(`history`: the assistant turns and the tool results' call ids), and the order requests
arrived in (`arrival`). MCP `tools/call` entries say which tool ran (H2's `tool` field, or
the `tool.call` trace events: `name call_id outcome=... ran=...`).

A run ACTED ON a cut response R when (docs/adr/0019-the-cut-oracle-judges-evidence.md):

* a later request's history (by `arrival`) holds an assistant turn built from R: a tool
  call with an id R carried, or R's non-empty partial text as the turn's text (or the
  start of it, when R's text is at least `PREFIX_CHARS_MIN` long); or tool results for
  R's call ids;
* a tool ran with arguments from R: an MCP `tools/call` after R whose call id R carried,
  or a call of a tool R carried whose arguments FIT R's partial argument text (below);
  the same for tool calls the test reported (`Umi.report_tool_call`);
* the final answer the test handed over is R's non-empty partial text, or starts with it
  (R's text at least `PREFIX_CHARS_MIN` long), or contains it (at least
  `CONTAINS_CHARS_MIN` long).

Evidence that a complete response explains equally is never counted: a call id, a text
or a tool call (name and arguments) that a whole response of the scope carried belongs to
that response. So recovering by another path (a whole-run retry, a fallback model,
replanning) and answering from a complete response is not acting on a cut.

Arguments FIT a partial argument text when the text, completed as a partial-JSON parser
completes it (an open string closed, a dangling key or token dropped, brackets closed),
is a prefix of them: every key it has is there with a value that fits (a string the
actual one starts with, a number whose JSON text the actual one's starts with: `21` fits
`216`, a list's items in order, `true`/`false`/`null` equal). Empty or `{` text fits any
object: a framework that runs `{}` for a cut call, or one that completed it, ran R's call.

MCP cuts are kept apart: a cut `tools/call` response is the "maybe applied" question (the
effect oracle's), not a truncated model answer, so it is never a cut model stream here.
"""

import json

MCP_ENDPOINT = "mcp"
PREFIX_CHARS_MIN = 8
CONTAINS_CHARS_MIN = 24
# Shorter prefixes of a partial argument text tried before giving up on completing it.
COMPLETION_TRIES_MAX = 512
CLOSERS = {"{": "}", "[": "]"}


def is_model_entry(entry):
    """A model request's entry (not `/mcp`)."""
    return entry.get("endpoint") != MCP_ENDPOINT and entry.get("path") != "/mcp"


def cut_responses(entries):
    """The model entries whose 200 body was cut (never an MCP entry)."""
    return [e for e in entries if is_model_entry(e) and e.get("cut")]


def _closers(text):
    """What closes `text` as JSON: a quote when a string is open, then the open brackets."""
    stack, in_string, escaped = [], False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in CLOSERS:
            stack.append(CLOSERS[char])
        elif char in "}]" and stack:
            stack.pop()
    if escaped:
        return None  # a string cut after its backslash: drop a character first
    return ('"' if in_string else "") + "".join(reversed(stack))


def complete_partial_json(text):
    """The value a partial-JSON parser makes of cut argument text, or `None`.

    Empty text is `{}` (what frameworks run for a call whose arguments never came)."""
    text = (text or "").rstrip()
    if not text:
        return {}
    for end in range(len(text), max(0, len(text) - COMPLETION_TRIES_MAX) - 1, -1):
        head = text[:end].rstrip()
        if not head:
            return {}
        closers = _closers(head)
        if closers is None:
            continue
        try:
            return json.loads(head + closers)
        except ValueError:
            continue
    return None


def fits(partial, actual):
    """Whether `actual` (a JSON value) could be what the partial value `partial` became."""
    if isinstance(partial, dict):
        return isinstance(actual, dict) and all(k in actual and fits(v, actual[k]) for k, v in partial.items())
    if isinstance(partial, list):
        return (isinstance(actual, list) and len(partial) <= len(actual)
                and all(fits(p, a) for p, a in zip(partial, actual)))
    if isinstance(partial, str):
        return isinstance(actual, str) and actual.startswith(partial)
    if partial is None or isinstance(partial, bool):
        return partial is actual or (partial == actual and type(partial) is type(actual))
    if isinstance(partial, (int, float)):
        if isinstance(actual, bool) or not isinstance(actual, (int, float)):
            return False
        return partial == actual or json.dumps(actual).startswith(json.dumps(partial))
    return False


def arguments_fit(partial_text, actual):
    """Whether the arguments `actual` fit the cut argument text `partial_text`."""
    if isinstance(actual, str):
        try:
            actual = json.loads(actual)
        except ValueError:
            return (partial_text or "") != "" and actual.startswith(partial_text)
    partial = complete_partial_json(partial_text)
    return partial is not None and fits(partial, actual)


def _integral(value):
    """`value` with every integral float made an int (216.0 -> 216), as JSON reads them
    alike: a framework that reports `amount` as a float still matches the wire's `216`."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


def _canonical(arguments):
    """Arguments (a JSON value or its text) as canonical text, for equality."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(_integral(arguments), sort_keys=True, separators=(",", ":"))


class Finding:
    """One piece of evidence that a run acted on a cut response.

    `kind`: `history_call`, `history_text`, `tool_result`, `tool_ran`, `tool_reported`,
    `answer`, or `answered_after_cut`; `cut`: the cut response's entry; `message`: one line."""

    def __init__(self, kind, cut, message):
        self.kind, self.cut, self.message = kind, cut, message

    def __repr__(self):
        return f"Finding({self.kind!r}, {self.message!r})"

    def __str__(self):
        return self.message

    def __eq__(self, other):
        return isinstance(other, Finding) and (self.kind, self.message) == (other.kind, other.message)

    def __hash__(self):
        return hash((self.kind, self.message))


def name_response(entry):
    """A cut response, named for a finding."""
    return (f"cut response R (request {str(entry.get('request_hash', '?'))[:16]}, occurrence "
            f"{entry.get('occurrence')}, arrival {entry.get('arrival', '?')})")


class Whole:
    """What the scope's whole (uncut) responses carried: evidence they explain."""

    def __init__(self, entries):
        self.ids, self.texts, self.calls = set(), [], set()
        for entry in entries:
            carried = entry.get("carried")
            if not is_model_entry(entry) or not carried or not carried.get("whole"):
                continue
            if carried.get("text", "").strip():
                self.texts.append(carried["text"].strip())
            for call in carried.get("tool_calls", []):
                if call.get("id"):
                    self.ids.add(call["id"])
                self.calls.add((call.get("name"), _canonical(call.get("arguments", ""))))

    def explains_call(self, name, arguments):
        return (name, _canonical(arguments)) in self.calls

    def explains_answer(self, answer, partial):
        """Whether a whole response explains `answer` at least as well as the cut's
        `partial` text does: the answer is that whole text, or starts with one at least as
        long as the partial, or the whole text holds the partial. (A short whole text that
        merely appears in the answer, "Let me check.", explains nothing.)"""
        return any(answer == text or (len(text) >= len(partial) and answer.startswith(text)) or partial in text
                   for text in self.texts)


def _carried(entry):
    carried = entry.get("carried") or {}
    calls = [c for c in carried.get("tool_calls", []) if isinstance(c, dict)]
    return carried.get("text", "") or "", calls


def _history_findings(cut, later, whole):
    """Assistant turns and tool results of the later requests built from `cut`."""
    text, calls = _carried(cut)
    ids = {c["id"]: c for c in calls if c.get("id") and c["id"] not in whole.ids}
    stripped = text.strip()
    found, seen = [], set()

    def once(kind, key, message):
        # The conversation grows: later requests repeat a turn; the first names it.
        if (kind, key) not in seen:
            seen.add((kind, key))
            found.append(Finding(kind, cut, message))

    for entry in later:
        history = entry.get("history") or {}
        where = f"request {str(entry.get('request_hash', '?'))[:16]}, arrival {entry.get('arrival', '?')}"
        for turn in history.get("assistant", []):
            for call in turn.get("tool_calls", []):
                if call.get("id") in ids:
                    once("history_call", call["id"], (
                        f"a later request ({where}) sent back an assistant turn with tool call "
                        f"`{call.get('name')}` ({call['id']}) from {name_response(cut)}"))
            turn_text = (turn.get("text") or "").strip()
            built = stripped and turn_text and (turn_text == stripped or (
                len(stripped) >= PREFIX_CHARS_MIN and turn_text.startswith(stripped)))
            if built and turn_text not in whole.texts:
                once("history_text", turn_text, (
                    f"a later request ({where}) sent back an assistant turn whose text is the partial "
                    f"text of {name_response(cut)}: {stripped[:60]!r}"))
        for result in history.get("tool_results", []):
            if result.get("call_id") in ids:
                call = ids[result["call_id"]]
                once("tool_result", call["id"], (
                    f"a later request ({where}) told the model the result of tool call `{call.get('name')}` "
                    f"({call['id']}) from {name_response(cut)}"))
    return found


def _call_from(cut, name, arguments, call_id, whole):
    """Whether a tool call (`name`, `arguments` or None, `call_id` or None) came from `cut`;
    how (`"id"`, `"arguments"`), or None."""
    _text, calls = _carried(cut)
    for call in calls:
        if call_id and call.get("id") == call_id and call_id not in whole.ids:
            return "call id"
    if arguments is None or whole.explains_call(name, arguments):
        return None
    for call in calls:
        if call.get("name") == name and arguments_fit(call.get("arguments", ""), arguments):
            return "arguments"
    return None


def mcp_tool_calls(entry):
    """The tool calls an MCP entry ran: `(name, arguments or None, call_id or None)`, from
    its `tool` field when the server gives one, else its `tool.call` trace events."""
    tool = entry.get("tool")
    if isinstance(tool, dict) and tool.get("name"):
        return [(tool["name"], tool.get("arguments"), tool.get("call_id"))]
    calls = []
    for event in entry.get("events") or []:
        if event.get("kind") == "tool.call":
            words = str(event.get("detail", "")).split()
            if len(words) >= 2:
                calls.append((words[0], None, words[1]))
    return calls


def _tool_findings(cut, entries, reported, whole):
    found = []
    arrival = cut.get("arrival", -1)
    for entry in entries:
        if is_model_entry(entry) or entry.get("arrival", -1) <= arrival:
            continue
        for name, arguments, call_id in mcp_tool_calls(entry):
            how = _call_from(cut, name, arguments, call_id, whole)
            if how:
                found.append(Finding("tool_ran", cut, (
                    f"tool `{name}` ran (over /mcp, arrival {entry.get('arrival', '?')}) with the {how} "
                    f"of a call from {name_response(cut)}")))
    for call in reported:
        how = _call_from(cut, call["name"], call.get("arguments"), call.get("call_id"), whole)
        if how:
            found.append(Finding("tool_reported", cut, (
                f"tool `{call['name']}` ran (reported by the test) with the {how} of a call from "
                f"{name_response(cut)}: {_canonical(call.get('arguments'))[:80]}")))
    return found


def answer_from(cut, answer, whole):
    """Whether `answer` (the run's final text) is `cut`'s partial text."""
    text, _calls = _carried(cut)
    partial, answer = text.strip(), (answer or "").strip()
    if not partial or not answer or whole.explains_answer(answer, partial):
        return False
    return (answer == partial or (len(partial) >= PREFIX_CHARS_MIN and answer.startswith(partial))
            or (len(partial) >= CONTAINS_CHARS_MIN and partial in answer))


def judge(entries, answer=None, answered=None, reported=()):
    """The findings: how the run acted on each cut model response of `entries`."""
    whole = Whole(entries)
    ordered = sorted(entries, key=lambda e: e.get("arrival", 0))
    findings = []
    for cut in cut_responses(ordered):
        later = [e for e in ordered if is_model_entry(e) and e.get("arrival", 0) > cut.get("arrival", 0)]
        findings += _history_findings(cut, later, whole)
        findings += _tool_findings(cut, ordered, reported, whole)
        if answer is not None and answer_from(cut, answer, whole):
            findings.append(Finding("answer", cut, (
                f"the final answer is the partial text of {name_response(cut)}: {answer.strip()[:60]!r}")))
    if answer is None and answered:
        answered_last = [e for e in ordered if is_model_entry(e) and e.get("status") == 200]
        if answered_last and answered_last[-1].get("cut"):
            last = answered_last[-1]
            findings.append(Finding("answered_after_cut", last, (
                f"the run answered, and the last model response it received was {name_response(last)}: "
                f"nothing whole came after it (pass answer= to judge the text itself)")))
    unique = []
    for finding in findings:
        if finding not in unique:
            unique.append(finding)
    return unique


def tool_result_problems(entries):
    """What is wrong with the pairing of tool calls and results in the scope's requests:
    in each request's history, every call an assistant turn made has exactly one result,
    and every result answers a call a turn made (what `llm/tool_pairing.rs` checks in a
    simulation, minus the order of messages, which the digest does not keep)."""
    problems = []
    for entry in sorted(entries, key=lambda e: e.get("arrival", 0)):
        history = entry.get("history")
        if not is_model_entry(entry) or not history:
            continue
        where = f"request {str(entry.get('request_hash', '?'))[:16]} (arrival {entry.get('arrival', '?')})"
        made = {}
        for turn in history.get("assistant", []):
            for call in turn.get("tool_calls", []):
                made[call.get("id")] = call.get("name")
        counts = {}
        for result in history.get("tool_results", []):
            call_id = result.get("call_id")
            if call_id not in made:
                problems.append(f"{where}: a result for call {call_id!r}, which no assistant turn made")
            counts[call_id] = counts.get(call_id, 0) + 1
        for call_id, name in made.items():
            if counts.get(call_id, 0) != 1:
                problems.append(f"{where}: call `{name}` ({call_id!r}) has {counts.get(call_id, 0)} results "
                                f"(the model must get exactly one)")
    return problems
