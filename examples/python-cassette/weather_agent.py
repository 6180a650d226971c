"""A small tool-using agent on the official openai package, knowing nothing of Umi: it
asks its model, runs the tools the model calls, and sends the results back until the
model answers in text. Pointed at a real provider, a `dst record` proxy, or `dst serve
--cassette`, it runs unchanged."""

import json

import openai

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]

TURNS_MAX = 6


def get_weather(city):
    """The tool: deterministic, so a replayed conversation stays the recorded one."""
    return f"{city}: 14 C, light rain"


def run(base_url, question, api_key="sk-example", max_retries=4):
    """The agent's final answer to `question`."""
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries)
    messages = [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": question},
    ]
    for _ in range(TURNS_MAX):
        reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": get_weather(arguments.get("city", "?")),
                }
            )
    raise RuntimeError(f"no answer in {TURNS_MAX} turns")
