"""Cassettes through clients we did not write: openai-python and anthropic-python talk to
the real `dst record` proxy in front of a `dst serve` upstream, then to `dst serve
--cassette` on another seed; every parsed answer (whole, streamed chunk by chunk, with
tool calls) must be exactly what the same client parsed from the original, and the key
the clients sent must not be in the cassette."""

import os
import re
import signal
import subprocess

import anthropic
import openai

DST = os.environ.get("UMI_DST")
KEY = "sk-test-python-PLANTED-0123456789abcdef"

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


class Recorder:
    """`dst record` in front of `upstream`, writing `cassette`."""

    def __init__(self, upstream, cassette):
        self.process = subprocess.Popen(
            [DST, "record", "--upstream", upstream, "--cassette", str(cassette),
             "--bind", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()
        match = re.search(r"listening on (http://\S+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"dst record did not start: {line!r} {self.process.stderr.read()}")
        self.url = match.group(1)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=30)
        assert code == 0, f"dst record exited {code}: {self.process.stderr.read()}"


def conversations(root):
    """What the two SDKs make of four requests to the server at `root`."""
    oa = openai.OpenAI(base_url=f"{root}/v1", api_key=KEY, max_retries=0)
    an = anthropic.Anthropic(base_url=root, api_key=KEY, max_retries=0)
    seen = []
    whole = oa.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Say hello."}]
    )
    seen.append(whole.model_dump())
    chunks = oa.chat.completions.create(
        model="gpt-4o",
        stream=True,
        tools=TOOLS,
        messages=[{"role": "user", "content": "What is the weather in Oslo?"}],
    )
    seen.append([chunk.model_dump() for chunk in chunks])
    message = an.messages.create(
        model="claude-haiku-4-5",
        max_tokens=256,
        messages=[{"role": "user", "content": "Say hello."}],
    )
    seen.append(message.model_dump())
    with an.messages.stream(
        model="claude-haiku-4-5",
        max_tokens=256,
        tools=[{"name": "get_weather", "description": "Weather for a city.",
                "input_schema": TOOLS[0]["function"]["parameters"]}],
        messages=[{"role": "user", "content": "What is the weather in Oslo?"}],
    ) as stream:
        events = [event.model_dump() for event in stream]
        final = stream.get_final_message().model_dump()
    seen.append((events, final))
    return seen


def test_a_replay_parses_exactly_as_the_original_did(serve, tmp_path):
    cassette = tmp_path / "python.jsonl"
    upstream = serve("--seed", "5")
    recorder = Recorder(upstream.url, cassette)
    try:
        original = conversations(recorder.url)
    finally:
        recorder.stop()
    text = cassette.read_text()
    assert len(text.splitlines()) == 5, text[:500]
    assert "PLANTED" not in text
    for seed in ("1", "77"):
        replay = serve("--seed", seed, "--cassette", str(cassette))
        assert conversations(replay.url) == original, f"seed {seed}"


def test_a_request_the_cassette_lacks_is_refused_naming_where_it_differs(serve, tmp_path):
    cassette = tmp_path / "miss.jsonl"
    upstream = serve("--seed", "6")
    recorder = Recorder(upstream.url, cassette)
    try:
        conversations(recorder.url)
    finally:
        recorder.stop()
    replay = serve("--cassette", str(cassette))
    client = openai.OpenAI(base_url=f"{replay.url}/v1", api_key=KEY, max_retries=0)
    try:
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Say goodbye."}]
        )
        raise AssertionError("a request the cassette lacks was answered")
    except openai.BadRequestError as error:
        assert "differs at $.messages[0].content" in str(error), str(error)
