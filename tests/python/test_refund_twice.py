"""A planted support agent on the `openai` SDK against `dst serve` (issue 39, item 3):
it refunds the same order twice after a whole-run retry, and the test that says "never
refund the same order twice" finds it within 200 seeds; its correct twin (an idempotent
refund) passes the same seeds.

The agent offers a local `issue_refund(order_id, amount)` tool; the user's message names
the order. When a model call fails (`llm.service_unavailable`), the planted agent runs the
whole conversation again from the user's message, even when the failure came after its
refund ran. Each seed runs under a fresh scope, so the retry's first request is the next
occurrence of the same request (the next draw), as it is for a real retry.

The test can fail only because SimLLM takes a field's value from the conversation (the
order id the user named) and draws positive amounts: on the SimLLM before issue 39
(numbers in [-1000, 0], ids drawn from words) it passed on every seed, vacuously. The
figures (seeds that refunded at all, that refunded the named order, that refunded it
twice) are printed in the session's summary. When this test was written, on seeds 0..200
with `--seed 39 --faults llm.service_unavailable=0.3`: before issue 39, 0 seeds refunded
anything; after, 139 refunded an order, 110 the named one, and the planted agent refunded
it twice on 12 (the first, seed 71).
"""

import json

import openai
import pytest

MODEL = "umi-sim"
SEEDS = 200
RUNS_MAX = 3
TURNS_MAX = 4
ORDER_ID = "ORD-1234"
USER = f"Hi, I was charged twice for order {ORDER_ID}. Please refund the $25.00 extra charge."
FLAGS = ("--seed", "39", "--faults", "llm.service_unavailable=0.3")
REFUND = {
    "type": "function",
    "function": {
        "name": "issue_refund",
        "description": "Refund an amount of an order to the customer.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
        },
    },
}


def client_for(server, seed, scope):
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-unused", max_retries=0,
                         default_headers={"x-umi-seed": str(seed), "x-umi-scope": scope})


def issue_refund(refunds, arguments, idempotent):
    """The tool: a positive amount refunds the order (appended to `refunds`)."""
    order, amount = arguments.get("order_id"), arguments.get("amount")
    if not isinstance(amount, (int, float)) or amount <= 0:
        return "error: the amount must be positive"
    if idempotent and order in refunds:
        return f"order {order} was already refunded"
    refunds.append(order)
    return f"refunded {amount} on order {order}"


def one_run(client, refunds, idempotent):
    messages = [{"role": "system", "content": "You are a support agent. Use the tools."},
                {"role": "user", "content": USER}]
    for _ in range(TURNS_MAX):
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=[REFUND],
                                                  parallel_tool_calls=False)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = issue_refund(refunds, json.loads(call.function.arguments), idempotent)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return ""


def run_agent(client, idempotent):
    """The orders refunded by one task; the whole run again after any API error (the
    planted bug when the refund is not idempotent)."""
    refunds = []
    for _ in range(RUNS_MAX):
        try:
            one_run(client, refunds, idempotent)
            break
        except openai.APIError:
            continue
    return refunds


def figures(server, idempotent):
    """Per seed: the orders refunded; and the seeds that refunded one order twice."""
    by_seed, twice = {}, []
    for seed in range(SEEDS):
        refunds = run_agent(client_for(server, seed, f"refund-{idempotent}-{seed}"), idempotent)
        by_seed[seed] = refunds
        if any(refunds.count(order) > 1 for order in refunds):
            twice.append(seed)
    refunded = sum(1 for refunds in by_seed.values() if refunds)
    named = sum(1 for refunds in by_seed.values() if ORDER_ID in refunds)
    return refunded, named, twice


def test_a_refund_made_twice_after_a_whole_run_retry_is_found(serve, measured):
    server = serve(*FLAGS)
    refunded, named, twice = figures(server, idempotent=False)
    measured(f"refund agent (planted): of {SEEDS} seeds, {refunded} refunded an order, "
             f"{named} refunded {ORDER_ID}, {len(twice)} refunded one order twice "
             f"(first: {twice[:1]})")
    assert twice, f"no seed in 0..{SEEDS} refunded an order twice (refunds: {refunded}, named order: {named})"


def test_the_idempotent_refund_agent_passes_the_same_seeds(serve, measured):
    server = serve(*FLAGS)
    refunded, named, twice = figures(server, idempotent=True)
    measured(f"refund agent (idempotent): of {SEEDS} seeds, {refunded} refunded an order, "
             f"{named} refunded {ORDER_ID}, {len(twice)} refunded one order twice")
    assert not twice, f"seeds {twice} refunded an order twice"
    assert named, "the order the user named was never refunded: the test would be vacuous"
