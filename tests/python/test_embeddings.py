"""Embeddings from `dst serve` through the official `openai` package, plain httpx
against Ollama's `/api/embed`, and Google's `google-genai` against Gemini's
`:batchEmbedContents`: the vectors are a function of (model, text, dimensions), the same
in both encodings, every format, every call and every fresh server, and texts that share
words are nearer than texts that do not.
"""

import math

import httpx
import openai
import pytest
from google import genai
from google.genai import errors, types

MODEL = "sim-embed"
ENDPOINTS = ("--endpoint", "openai", "--endpoint", "ollama", "--endpoint", "gemini")
TEXTS = ["the cat sat on the mat", "a cat sat on a red mat", "quarterly revenue grew in europe"]


def client(server):
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-unused", max_retries=0)


def vectors(response):
    return [item.embedding for item in sorted(response.data, key=lambda d: d.index)]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_base64_and_float_give_the_same_vectors(serve):
    server = serve("--seed", "5", "--time-scale", "0", *ENDPOINTS)
    default = client(server).embeddings.create(model=MODEL, input=TEXTS)  # base64 on the wire
    floats = client(server).embeddings.create(model=MODEL, input=TEXTS, encoding_format="float")
    assert vectors(default) == vectors(floats)
    assert [len(v) for v in vectors(default)] == [256, 256, 256]
    assert default.usage.prompt_tokens > 0
    assert default.model == MODEL


def test_the_same_text_gets_the_same_vector_across_calls_seeds_and_servers(serve):
    first = serve("--seed", "5", "--time-scale", "0", *ENDPOINTS)
    other = serve("--seed", "77", "--time-scale", "0", *ENDPOINTS)
    once = vectors(client(first).embeddings.create(model=MODEL, input=TEXTS[:1]))
    again = vectors(client(first).embeddings.create(model=MODEL, input=TEXTS[:1]))
    fresh = vectors(client(other).embeddings.create(model=MODEL, input=TEXTS[:1]))
    in_batch = vectors(client(first).embeddings.create(model=MODEL, input=TEXTS))[0]
    assert once == again == fresh
    assert once[0] == in_batch


def test_dimensions_and_meaning(serve):
    server = serve("--seed", "5", "--time-scale", "0", *ENDPOINTS)
    small = vectors(client(server).embeddings.create(model=MODEL, input=TEXTS, dimensions=64))
    assert [len(v) for v in small] == [64, 64, 64]
    assert all(abs(sum(x * x for x in v) - 1.0) < 1e-5 for v in small)
    full = vectors(client(server).embeddings.create(model=MODEL, input=TEXTS))
    for vs in (small, full):
        assert cosine(vs[0], vs[1]) > cosine(vs[0], vs[2])


def test_ollama_gives_the_vectors_openai_gives(serve):
    server = serve("--seed", "5", "--time-scale", "0", *ENDPOINTS)
    native = httpx.post(f"{server.url}/api/embed", json={"model": MODEL, "input": TEXTS, "dimensions": 64})
    assert native.status_code == 200, native.text
    body = native.json()
    assert set(body) >= {"model", "embeddings", "prompt_eval_count"}
    openai_vectors = vectors(client(server).embeddings.create(model=MODEL, input=TEXTS, dimensions=64))
    assert body["embeddings"] == openai_vectors


def test_bad_requests_are_refused_naming_the_field(serve):
    server = serve("--seed", "5", "--time-scale", "0", *ENDPOINTS)
    with pytest.raises(openai.BadRequestError, match=r"'\$\.input' is invalid"):
        client(server).embeddings.create(model=MODEL, input="")
    with pytest.raises(openai.BadRequestError, match="dimensions"):
        client(server).embeddings.create(model=MODEL, input=TEXTS, dimensions=4096)
    with pytest.raises(openai.BadRequestError, match="maximum context length is 8192 tokens"):
        client(server).embeddings.create(model=MODEL, input=["word " * 20000])
    with pytest.raises(openai.NotFoundError):
        client(server).embeddings.create(model="no-such-embedder", input=TEXTS)


# The SDK closes its HTTP client when a `genai.Client` is collected: keep every one.
_GOOGLE_CLIENTS = []


def google(server):
    options = types.HttpOptions(
        base_url=server.url, retry_options=types.HttpRetryOptions(attempts=1)
    )
    made = genai.Client(api_key="AIza-umi-test-key", http_options=options)
    _GOOGLE_CLIENTS.append(made)
    return made


def google_vectors(response):
    return [embedding.values for embedding in response.embeddings]


def test_google_genai_embeds_one_text_and_a_batch(serve):
    server = serve("--seed", "5", "--time-scale", "0", *ENDPOINTS)
    one = google(server).models.embed_content(model=MODEL, contents=TEXTS[0])
    batch = google(server).models.embed_content(model=MODEL, contents=TEXTS)
    assert [len(v) for v in google_vectors(batch)] == [256, 256, 256]
    assert google_vectors(one) == google_vectors(batch)[:1]
    gemini = google(server).models.embed_content(model="gemini-embedding-001", contents=TEXTS[:2])
    assert [len(v) for v in google_vectors(gemini)] == [3072, 3072]


def test_google_genai_gets_the_vectors_openai_gets(serve):
    server = serve("--seed", "5", "--time-scale", "0", *ENDPOINTS)
    config = types.EmbedContentConfig(output_dimensionality=64, task_type="RETRIEVAL_DOCUMENT")
    from_google = google(server).models.embed_content(model=MODEL, contents=TEXTS, config=config)
    from_openai = vectors(client(server).embeddings.create(model=MODEL, input=TEXTS, dimensions=64))
    assert google_vectors(from_google) == from_openai
    assert [len(v) for v in google_vectors(from_google)] == [64, 64, 64]


def test_google_genai_refusals_are_client_errors(serve):
    server = serve("--seed", "5", "--time-scale", "0", *ENDPOINTS)
    with pytest.raises(errors.ClientError) as empty:
        google(server).models.embed_content(model=MODEL, contents=[TEXTS[0], ""])
    assert empty.value.code == 400
    assert empty.value.status == "INVALID_ARGUMENT"
    assert "requests[1].content contains an empty Part" in empty.value.message
    with pytest.raises(errors.ClientError) as many:
        google(server).models.embed_content(model=MODEL, contents=["t"] * 101)
    assert "at most 100 requests can be in one batch" in many.value.message
    with pytest.raises(errors.ClientError) as unknown:
        google(server).models.embed_content(model="no-such-embedder", contents=TEXTS)
    assert unknown.value.code == 404
    assert "not supported for embedContent" in unknown.value.message
