"""A small agent whose production code knows only the `openai` package: it answers a
question, calling a weather tool as the model asks, and gives up cleanly when the model
or the network fails. Nothing here knows about Umi: the tests point it at `dst serve`.
"""

import json

import openai

TURNS_MAX = 4
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The forecast for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


class AgentError(Exception):
    """The agent could not answer; the message says why."""


def get_weather(city):
    return f"12 C and light rain in {city}"


def ask(client: openai.OpenAI, model: str, question: str) -> str:
    """The model's answer to `question`, after running the tools it asked for."""
    messages = [{"role": "user", "content": question}]
    for _turn in range(TURNS_MAX):
        try:
            response = client.chat.completions.create(model=model, messages=messages, tools=[WEATHER])
        except openai.APIError as error:
            raise AgentError(f"the model API failed: {error}") from error
        except ValueError as error:
            # A body that does not parse (`llm.invalid_response`): openai-python lets the
            # JSON decoder's error through (json.JSONDecodeError is a ValueError).
            raise AgentError(f"the model's answer could not be parsed: {error}") from error
        choice = response.choices[0]
        if choice.finish_reason == "stop":
            if not (choice.message.content or "").strip():
                raise AgentError("the model finished with an empty answer")
            return choice.message.content
        if choice.finish_reason != "tool_calls":
            raise AgentError(f"the model stopped: {choice.finish_reason}")
        messages.append(choice.message.model_dump(exclude_none=True))
        for call in choice.message.tool_calls:
            try:
                arguments = json.loads(call.function.arguments)
            except json.JSONDecodeError as error:
                raise AgentError(f"broken arguments for {call.function.name}: {error}") from error
            messages.append({"role": "tool", "tool_call_id": call.id, "content": get_weather(arguments.get("city", "?"))})
    raise AgentError(f"no answer after {TURNS_MAX} turns")
