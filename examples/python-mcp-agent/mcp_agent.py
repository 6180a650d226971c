"""An agent whose tools are on an MCP server: production code that knows only the
`openai` and `mcp` packages. It offers the model the server's tools, runs the calls the
model makes on the server (the model's call id in `_meta`, so the server can tell a
logical call's repeats), and never sends a call again on its own: a call whose answer was
lost may have run (a payment made), so the model is told it failed and decides. Nothing
here knows about Umi: the test points it at `dst serve`.
"""

import json

import openai
from mcp import Client, MCPError

TURNS_MAX = 5
CALL_ID_META_KEY = "umi.dev/tool_call_id"


class AgentError(Exception):
    """The agent could not answer; the message says why."""


def as_function(tool):
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description or "", "parameters": tool.input_schema}}


async def run_tool(mcp_client, call):
    """The text the model gets for one call, and whether the tool succeeded."""
    try:
        arguments = json.loads(call.function.arguments or "{}")
    except json.JSONDecodeError as error:
        return f"the arguments are not JSON: {error}", False
    try:
        result = await mcp_client.call_tool(call.function.name, arguments, meta={CALL_ID_META_KEY: call.id})
    except MCPError as error:
        # Maybe it ran, maybe not: never resend a call with side effects blindly.
        return f"the tool failed: {error}", False
    text = "\n".join(part.text for part in result.content if getattr(part, "text", None) is not None)
    return text, not result.is_error


async def ask(openai_client, mcp_url, model, question):
    """The model's answer to `question`, after running the MCP tools it asked for."""
    try:
        async with Client(mcp_url, mode="legacy", read_timeout_seconds=10) as mcp_client:
            tools = [as_function(tool) for tool in (await mcp_client.list_tools()).tools]
            messages = [{"role": "user", "content": question}]
            for _turn in range(TURNS_MAX):
                try:
                    response = await openai_client.chat.completions.create(model=model, messages=messages, tools=tools)
                except openai.APIError as error:
                    raise AgentError(f"the model API failed: {error}") from error
                choice = response.choices[0]
                if choice.finish_reason != "tool_calls":
                    if not (choice.message.content or "").strip():
                        raise AgentError(f"the model stopped ({choice.finish_reason}) with no answer")
                    return choice.message.content
                messages.append(choice.message.model_dump(exclude_none=True))
                for call in choice.message.tool_calls:
                    text, _ok = await run_tool(mcp_client, call)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            raise AgentError(f"no answer after {TURNS_MAX} turns")
    except AgentError:
        raise
    except BaseException as error:  # noqa: B036 - anyio wraps connection failures in groups
        raise AgentError(f"the MCP server failed: {error!r}") from error
