"""AWS's own Python SDK (boto3's `bedrock-runtime` client, `endpoint_url` pointed at
`dst serve --endpoint bedrock`): `converse` and `converse_stream` (botocore signs every
request with SigV4 and reads the stream's `application/vnd.amazon.eventstream` frames,
CRCs checked), a tool-use round trip, Bedrock's errors typed as botocore's modelled
exceptions (ThrottlingException, ValidationException for a prompt past the context
window), an unsigned request refused, a keyed endpoint reading a signature's form
before its key (AWS's order), `dst record` recording a whole and a streamed exchange
(signing each request again for its upstream) that `dst serve --cassette` replays as
boto3 parsed it, and the promise of `dst serve` (the same answer
streamed and whole for the same seed). Dummy AWS credentials come from the environment,
as boto3 reads them. Every server runs at --time-scale 0 (the default), so nothing waits.
"""

import os
import re
import signal
import subprocess
import types
import uuid

import boto3
import botocore
import pytest
from botocore.config import Config

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
ENDPOINTS = ("--endpoint", "bedrock")


@pytest.fixture(autouse=True)
def dummy_credentials(monkeypatch):
    # AWS's documented example pair: boto3 signs with whatever the environment names.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def client(server, scope=None, seed=None, signed=True, authorization=None, key_id=None):
    config = Config(retries={"max_attempts": 1, "mode": "standard"})
    if not signed:
        config = config.merge(Config(signature_version=botocore.UNSIGNED))
    keys = {}
    if key_id is not None:
        # boto3's default session keeps the credentials it read first: name them.
        keys = {"aws_access_key_id": key_id, "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
    made = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=server.url, config=config, **keys)
    headers = {"x-umi-scope": scope or f"t-{uuid.uuid4().hex[:12]}"}
    if seed is not None:
        headers["x-umi-seed"] = str(seed)

    # Umi's session headers go on after the signature (they are not AWS's to sign).
    def add_headers(request, **_):
        for name, value in headers.items():
            request.headers[name] = value
        if authorization is not None:
            # The signature botocore made, rewritten after signing (a broken client).
            signed = request.headers["Authorization"]
            if isinstance(signed, bytes):
                signed = signed.decode()
            request.headers["Authorization"] = authorization(signed)

    made.meta.events.register("before-send.bedrock-runtime.*", add_headers)
    return made


def user(text):
    return [{"role": "user", "content": [{"text": text}]}]


def test_converse_whole_and_streamed_is_the_same_answer(serve):
    server = serve("--seed", "41", *ENDPOINTS)
    whole = client(server, scope="same-1").converse(modelId=MODEL, messages=user("What changed this week?"))
    text = whole["output"]["message"]["content"][0]["text"]
    assert text
    assert whole["stopReason"] == "end_turn"
    assert whole["usage"]["inputTokens"] > 0
    assert whole["metrics"]["latencyMs"] > 0
    streamed = client(server, scope="same-2").converse_stream(modelId=MODEL, messages=user("What changed this week?"))
    events = list(streamed["stream"])
    names = [next(iter(event)) for event in events]
    assert names[0] == "messageStart"
    assert names[-2:] == ["messageStop", "metadata"]
    deltas = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert deltas == text
    assert events[-2]["messageStop"]["stopReason"] == "end_turn"
    assert events[-1]["metadata"]["usage"]["outputTokens"] > 0


WEATHER = {
    "toolSpec": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    }
}


def test_a_tool_use_round_trip(serve):
    server = serve("--seed", "42", *ENDPOINTS)
    bedrock = client(server)
    tools = {"tools": [WEATHER], "toolChoice": {"any": {}}}
    messages = user("What is the weather in Oslo?")
    first = bedrock.converse(modelId=MODEL, messages=messages, toolConfig=tools)
    assert first["stopReason"] == "tool_use"
    uses = [block["toolUse"] for block in first["output"]["message"]["content"] if "toolUse" in block]
    assert uses and uses[0]["name"] == "get_weather"
    assert uses[0]["toolUseId"].startswith("tooluse_")
    assert isinstance(uses[0]["input"], dict)
    messages.append(first["output"]["message"])
    result = {"toolResult": {"toolUseId": uses[0]["toolUseId"], "content": [{"text": "12 C and rain"}], "status": "success"}}
    messages.append({"role": "user", "content": [result]})
    second = bedrock.converse(modelId=MODEL, messages=messages, toolConfig={"tools": [WEATHER]})
    assert second["stopReason"] in ("end_turn", "tool_use")
    # Streamed: the call opens with contentBlockStart and its input comes in pieces.
    streamed = bedrock.converse_stream(modelId=MODEL, messages=user("Weather in Oslo?"), toolConfig=tools)
    events = list(streamed["stream"])
    starts = [e["contentBlockStart"]["start"]["toolUse"] for e in events if "contentBlockStart" in e]
    assert starts and starts[0]["name"] == "get_weather"
    pieces = [e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events
              if "contentBlockDelta" in e and "toolUse" in e["contentBlockDelta"]["delta"]]
    assert "".join(pieces).startswith("{")
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"


def test_a_429_is_botocores_throttling_exception(serve):
    server = serve("--seed", "43", "--faults", "llm.rate_limit=1.0", *ENDPOINTS)
    bedrock = client(server)
    with pytest.raises(bedrock.exceptions.ThrottlingException) as raised:
        bedrock.converse(modelId=MODEL, messages=user("hi"))
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429
    assert "Too many requests" in raised.value.response["Error"]["Message"]
    with pytest.raises(bedrock.exceptions.ThrottlingException):
        bedrock.converse_stream(modelId=MODEL, messages=user("hi"))


def test_a_prompt_past_the_window_is_a_validation_exception(serve):
    server = serve("--seed", "44", "--faults", "llm.context_overflow=1.0", *ENDPOINTS)
    bedrock = client(server)
    with pytest.raises(bedrock.exceptions.ValidationException) as raised:
        bedrock.converse(modelId=MODEL, messages=user("hi"))
    assert "prompt is too long" in raised.value.response["Error"]["Message"]


def test_an_unsigned_request_is_refused(serve):
    server = serve("--seed", "45", *ENDPOINTS)
    bedrock = client(server, signed=False)
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        bedrock.converse(modelId=MODEL, messages=user("hi"))
    error = raised.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert error["Error"]["Code"] == "MissingAuthenticationTokenException"


def keyed_error(server, **kwargs):
    bedrock = client(server, **kwargs)
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        bedrock.converse(modelId=MODEL, messages=user("hi"))
    error = raised.value.response
    return error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Code"]


def test_a_keyed_endpoint_reads_the_signatures_form_before_its_key(serve, monkeypatch):
    # AWS "Common Errors": IncompleteSignature 400, MissingAuthenticationToken 403; a key
    # id AWS does not know is 403 UnrecognizedClientException. The form comes first: a
    # malformed signature is 400 whatever key signed it (aws/aws-sdk-go #289).
    monkeypatch.setenv("UMI_TEST_BEDROCK_KEY", "AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    server = serve("--seed", "46", "--api-key-env", "UMI_TEST_BEDROCK_KEY", *ENDPOINTS)
    answered = client(server).converse(modelId=MODEL, messages=user("hi"))
    assert answered["output"]["message"]["content"][0]["text"]
    no_equals = lambda value: value.replace("Credential=", "Credential ", 1)
    assert keyed_error(server, authorization=no_equals) == (400, "IncompleteSignatureException")
    assert keyed_error(server, signed=False) == (403, "MissingAuthenticationTokenException")
    other = "AKIDOTHEREXAMPLE"
    assert keyed_error(server, key_id=other) == (403, "UnrecognizedClientException")
    # Signed with a key the endpoint does not know and out of shape: the form's 400.
    assert keyed_error(server, key_id=other, authorization=no_equals) == (400, "IncompleteSignatureException")


class Recorder:
    """`dst record --endpoint bedrock` in front of `upstream`, writing `cassette`,
    signing each forwarded request again with the key pair in `key_env`."""

    def __init__(self, upstream, cassette, key_env):
        self.process = subprocess.Popen(
            [os.environ["UMI_DST"], "record", "--upstream", upstream, "--cassette", str(cassette),
             "--endpoint", "bedrock", "--key-env", key_env, "--bind", "127.0.0.1:0"],
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


def exchanges(root):
    """What boto3 makes of a whole and a streamed converse, a tool use among them."""
    bedrock = client(types.SimpleNamespace(url=root), scope="recorded")
    whole = bedrock.converse(modelId=MODEL, messages=user("What changed this week?"))
    streamed = bedrock.converse_stream(
        modelId=MODEL, messages=user("Weather in Oslo?"),
        toolConfig={"tools": [WEATHER], "toolChoice": {"any": {}}},
    )
    whole.pop("ResponseMetadata")
    return whole, list(streamed["stream"])


def test_dst_record_records_bedrock_and_a_replay_parses_as_the_original(serve, tmp_path, monkeypatch):
    # The upstream knows only the recorder's key pair: the client's own signature
    # (AKIDEXAMPLE, made for the recorder's host) would be 403 there, so an answer
    # proves the recorder signed each request again for the upstream.
    upstream_pair = "AKIDUPSTREAMEXAMPLE:upstreamSECRETPLANTED0123456789"
    monkeypatch.setenv("UMI_TEST_BEDROCK_UPSTREAM", upstream_pair)
    upstream = serve("--seed", "5", "--api-key-env", "UMI_TEST_BEDROCK_UPSTREAM", *ENDPOINTS)
    assert keyed_error(upstream) == (403, "UnrecognizedClientException")
    cassette = tmp_path / "bedrock.jsonl"
    recorder = Recorder(upstream.url, cassette, "UMI_TEST_BEDROCK_UPSTREAM")
    try:
        original = exchanges(recorder.url)
    finally:
        recorder.stop()
    text = cassette.read_text()
    assert len(text.splitlines()) == 3, text[:500]
    assert "SECRETPLANTED" not in text
    assert original[0]["output"]["message"]["content"][0]["text"]
    assert [next(iter(e)) for e in original[1]][-2:] == ["messageStop", "metadata"]
    for seed in ("1", "77"):
        replay = serve("--seed", seed, "--cassette", str(cassette), *ENDPOINTS)
        assert exchanges(replay.url) == original, f"seed {seed}"
