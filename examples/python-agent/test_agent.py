"""The agent against `dst serve`: one seed per test, each failure printing the command
that replays it. Run with scripts/python-tests.sh (part of `make test`), or by hand:

    dst serve --seed 1 --faults llm.rate_limit=0.2,llm.invalid_response=0.1 &
    UMI_SERVE_URL=http://127.0.0.1:8080 pytest examples/python-agent
"""

import os
import subprocess
import re
import signal

import openai
import pytest

from agent import AgentError, ask

FLAGS = ["--seed", "1", "--faults", "llm.rate_limit=0.2,llm.service_unavailable=0.1,llm.invalid_response=0.1"]
MODEL = "umi-sim"


@pytest.fixture(scope="module")
def server_url():
    if os.environ.get("UMI_SERVE_URL"):
        yield os.environ["UMI_SERVE_URL"]
        return
    process = subprocess.Popen([os.environ["UMI_DST"], "serve", "--bind", "127.0.0.1:0", *FLAGS],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = re.search(r"listening on (\S+)", process.stdout.readline()).group(1)
    yield url
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0


@pytest.mark.parametrize("seed", range(1, 41))
def test_the_agent_answers_or_fails_cleanly(server_url, seed):
    client = openai.OpenAI(base_url=f"{server_url}/v1", api_key="x", max_retries=2,
                           default_headers={"x-umi-seed": str(seed)})
    replay = (f"replay: dst serve {' '.join(FLAGS)} & "
              f"pytest examples/python-agent -k 'test_the_agent_answers_or_fails_cleanly and {seed}]'")
    try:
        answer = ask(client, MODEL, "Should I take an umbrella in Oslo?")
    except AgentError as error:
        # The faults are on: failing is allowed, as long as it is the agent's own error.
        print(f"seed {seed}: {error}")
        return
    except Exception as error:  # anything else escaped the agent: a bug
        pytest.fail(f"seed {seed}: {type(error).__name__} escaped the agent: {error}\n{replay}")
    assert answer.strip(), f"seed {seed}: empty answer\n{replay}"
