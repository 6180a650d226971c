"""How the plugin picks seeds and server flags, and how it refuses bad input.

Seed derivation, the marker's parametrization (ids `seed=N`), the pins (`--umi-seed`,
`UMI_SEED`) and their precedence over a marker's own `seed=`, the overrides
(`--umi-seeds`), the flags a marker becomes, the message when no `dst` binary can be
found, and kept seeds: `expect_requests=[...]` passes while the run sends those requests
and fails as stale when a prompt change makes it send others.
"""

import hashlib
import os
import re

import pytest

from umi_dst import DstNotFound, derive_seed, find_dst
from umi_dst import _binary
from umi_dst.plugin import serve_flags
from umi_dst.run import new_scope, parse_seed


def test_a_seed_is_the_first_8_bytes_of_the_node_ids_sha256():
    node_id = "tests/test_agent.py::test_answers[gpt]"
    expected = int(hashlib.sha256(node_id.encode()).hexdigest()[:16], 16)
    assert derive_seed(node_id) == expected
    # Pinned, so that a seed printed today means the same test tomorrow and elsewhere.
    assert derive_seed("t.py::test_a") == 0x75A2B72A2CCEBC6C
    assert derive_seed("t.py::test_a") != derive_seed("t.py::test_b")
    assert 0 <= derive_seed("") < 2**64


def test_seeds_parse_as_the_server_reads_them():
    assert parse_seed("42", "x") == 42
    assert parse_seed("0x2A", "x") == 42
    assert parse_seed(" 7 ", "x") == 7
    assert parse_seed(2**64 - 1, "x") == 2**64 - 1
    for bad, says in (("ten", "UMI_SEED: 'ten' is not a seed"), ("-1", "out of range"),
                      (2**64, "out of range"), (True, "not a seed")):
        with pytest.raises(ValueError, match=says):
            parse_seed(bad, "UMI_SEED")


def test_scopes_are_fresh_and_within_the_servers_alphabet():
    a, b = new_scope("t.py::test_a"), new_scope("t.py::test_a")
    assert a != b and a[:12] == b[:12] == hashlib.sha256(b"t.py::test_a").hexdigest()[:12]
    assert len(a) <= 128 and all(c.isalnum() or c in "._~-" for c in a)


def test_marker_settings_become_serve_flags():
    assert serve_flags() == ()
    assert serve_flags(faults={"llm.rate_limit": 0.2, "llm.stream_cut": 1}, time_scale=0,
                       endpoints=["openai", "anthropic@/a"], models=["m1"], args=["--swarm"]) == (
        "--faults", "llm.rate_limit=0.2,llm.stream_cut=1.0", "--time-scale", "0.0",
        "--endpoint", "openai", "--endpoint", "anthropic@/a", "--model", "m1", "--swarm")
    assert serve_flags(faults=" llm.timeout=0.5,network.reset=0.1 ") == (
        "--faults", "llm.timeout=0.5,network.reset=0.1")
    assert serve_flags(faults="wire_shapes") == ("--faults", "wire_shapes")  # a scenario's profile
    for kwargs, says in (
        ({"faults": {"llm.rate_limit": 1.5}}, r"faults\['llm.rate_limit'\] = 1.5; a probability is 0 to 1"),
        ({"faults": {"llm.rate_limit": "0.2"}}, "is not a number"),
        ({"faults": {"a=b": 0.1}}, r"rule 'a=b' is not KIND\[@OPERATION\]"),
        ({"faults": 0.2}, "give a dict"),
        ({"time_scale": -1}, "time_scale -1; 0 or more"),
        ({"endpoints": "openai"}, "endpoints: 'openai'; give a list"),
        ({"args": "--swarm"}, "give a list of strings"),
    ):
        with pytest.raises(ValueError, match=says):
            serve_flags(**kwargs)


MARKED = """
import pytest

@pytest.mark.umi(seeds=3)
def test_three(umi):
    print("SEED", umi.seed)

@pytest.mark.umi(seeds=[5, "0x10"])
def test_listed(umi):
    pass

@pytest.mark.umi(seed=77)
def test_one(umi):
    pass

def test_derived(umi):
    pass

def test_no_umi():
    pass
"""


def collected(result):
    return sorted(line.strip() for line in result.outlines if "::" in line and not line.startswith("umi: "))


def test_the_marker_parametrizes_seeds_with_readable_ids(inner, pytester):
    pytester.makepyfile(test_m=MARKED)
    result = inner("--collect-only", "-q")
    assert collected(result) == [
        "test_m.py::test_derived", "test_m.py::test_listed[seed=16]", "test_m.py::test_listed[seed=5]",
        "test_m.py::test_no_umi", "test_m.py::test_one[seed=77]",
        "test_m.py::test_three[seed=1]", "test_m.py::test_three[seed=2]", "test_m.py::test_three[seed=3]"]


def test_umi_seeds_and_seed_start_widen_a_sweep(inner, pytester, monkeypatch):
    pytester.makepyfile(test_m=MARKED)
    result = inner("--collect-only", "-q", "--umi-seeds", "4", "--umi-seed-start", "100", "-k", "three")
    assert collected(result) == [f"test_m.py::test_three[seed={s}]" for s in (100, 101, 102, 103)]
    monkeypatch.setenv("UMI_SEEDS", "2")
    result = inner("--collect-only", "-q", "-k", "three")
    assert collected(result) == ["test_m.py::test_three[seed=1]", "test_m.py::test_three[seed=2]"]


@pytest.mark.parametrize("how", ["option", "env"])
def test_a_pinned_seed_replaces_marker_seeds_and_only_the_option_a_kept_one(inner, pytester, monkeypatch, how):
    pytester.makepyfile(test_m=MARKED)
    if how == "env":
        monkeypatch.setenv("UMI_SEED", "0x2a")
        result = inner("--collect-only", "-q")
        one = "test_m.py::test_one[seed=77]"  # a marker's own seed= is a kept regression
        said = "umi: UMI_SEED=42 does not replace the marker's seed=77 of test_m.py::test_one"
    else:
        result = inner("--collect-only", "-q", "--umi-seed", "42")
        one = "test_m.py::test_one[seed=42]"  # typed for this run: it wins, and says so
        said = "umi: --umi-seed 42 replaces the marker's seed=77 of test_m.py::test_one"
    assert collected(result) == sorted([
        "test_m.py::test_derived", "test_m.py::test_listed[seed=42]", "test_m.py::test_no_umi",
        one, "test_m.py::test_three[seed=42]"])
    assert said in result.stdout.str()
    # The same seed as the marker's: nothing replaced, nothing said.
    monkeypatch.setenv("UMI_SEED", "77")
    result = inner("--collect-only", "-q", "-k", "one")
    assert collected(result) == ["test_m.py::test_one[seed=77]"]
    assert "umi:" not in result.stdout.str()


def test_bad_settings_are_named(inner, pytester, monkeypatch):
    pytester.makepyfile(test_m="""
        import pytest
        @pytest.mark.umi(seeds=2, fault={"llm.rate_limit": 0.1})
        def test_typo(umi):
            pass
    """)
    result = inner("--collect-only", "-q")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*@pytest.mark.umi does not know fault; it takes seeds, seed, faults,*"])

    pytester.makepyfile(test_m="""
        import pytest
        @pytest.mark.umi(seeds=2)
        def test_without_fixture():
            pass
    """)
    result = inner("--collect-only", "-q")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*test_without_fixture: @pytest.mark.umi is on a test that does not use the `umi` fixture*"])

    pytester.makepyfile(test_m="def test_x(umi):\n    pass\n")
    monkeypatch.setenv("UMI_SEED", "seven")
    result = inner("-q")
    assert result.ret != 0
    assert "UMI_SEED: 'seven' is not a seed" in result.stdout.str() + result.stderr.str()


def test_no_binary_says_how_to_install_one(inner, pytester, monkeypatch, tmp_path):
    pytester.makepyfile(test_m="def test_x(umi):\n    pass\n")
    monkeypatch.setenv("UMI_DST", str(tmp_path / "no-such-dst"))
    result = inner("-q")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"*UMI_DST={tmp_path / 'no-such-dst'} is not a file; install it with `pip install umi-dst`*"])

    # Nothing anywhere: no UMI_DST, no dst where pip puts scripts nor on PATH.
    monkeypatch.delenv("UMI_DST")
    monkeypatch.setattr(_binary, "_scripts_dirs", lambda: [str(tmp_path)])
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DstNotFound) as raised:
        find_dst()
    message = str(raised.value)
    assert "needs the `dst` binary and found none" in message
    assert "`pip install umi-dst`" in message and "set UMI_DST=" in message and str(tmp_path) in message


def test_find_dst_honours_umi_dst(monkeypatch, tmp_path):
    binary = tmp_path / "dst"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o644)
    monkeypatch.setenv("UMI_DST", str(binary))
    with pytest.raises(DstNotFound, match="is not executable"):
        find_dst()
    binary.chmod(0o755)
    assert find_dst() == str(binary)
    monkeypatch.setenv("UMI_DST", " ")
    with pytest.raises(DstNotFound, match="UMI_DST is set but empty"):
        find_dst()
    # Unset: the scripts directory pip installs into comes before PATH.
    monkeypatch.delenv("UMI_DST")
    monkeypatch.setattr(_binary, "_scripts_dirs", lambda: [str(tmp_path)])
    monkeypatch.setenv("PATH", os.defpath)
    assert find_dst() == str(binary)


ASKS = """
import json
import urllib.request

import pytest

PROMPT = {prompt!r}

def ask(umi):
    body = json.dumps({{"model": "umi-sim", "messages": [{{"role": "user", "content": PROMPT}}]}}).encode()
    request = urllib.request.Request(umi.openai_base_url + "/chat/completions", data=body,
                                     headers={{"content-type": "application/json"}})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)

{marker}
def test_kept(umi):
    assert ask(umi)["choices"]
"""


def test_a_kept_seed_is_stale_when_its_requests_change(inner, pytester):
    # Record: --umi-keep prints the marker that keeps the seed, with its request hashes.
    pytester.makepyfile(test_k=ASKS.format(prompt="Plan the week.", marker="@pytest.mark.umi(seed=5)"))
    result = inner("-q", "--umi-keep")
    result.assert_outcomes(passed=1)
    keep = re.search(r"^test_k\.py::test_kept\[seed=5\]: (@pytest\.mark\.umi\(.*\))$",
                     result.stdout.str(), re.M).group(1)
    assert re.fullmatch(r'@pytest\.mark\.umi\(seed=5, expect_requests=\["[0-9a-f]{16}"\]\)', keep), keep

    # Kept: the same run sends the same request, and passes.
    pytester.makepyfile(test_k=ASKS.format(prompt="Plan the week.", marker=keep))
    inner("-q").assert_outcomes(passed=1)

    # The prompt changed: the seed now answers another request; the kept seed is stale.
    pytester.makepyfile(test_k=ASKS.format(prompt="Plan the month.", marker=keep))
    result = inner("-q")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    recorded = re.search(r'"([0-9a-f]{16})"', keep).group(1)
    assert f"umi: stale kept seed 5: the run sent no request with hash {recorded}" in output, output
    assert "answers are seeded by request hash" in output
    assert re.search(r"^stale:   umi: stale kept seed 5", output, re.M), output
    new = re.search(r"^keep:    (.*)$", output, re.M).group(1)
    assert new.startswith("@pytest.mark.umi(seed=5, expect_requests=[") and recorded not in new


def test_expect_requests_is_checked(inner, pytester):
    for marker, says in (
        ('@pytest.mark.umi(seeds=3, expect_requests=["0123456789abcdef"])', "expect_requests= belongs to a kept seed"),
        ('@pytest.mark.umi(seed=3, expect_requests=["xyz"])', "'xyz' is not a request hash prefix"),
        ('@pytest.mark.umi(seed=3, expect_requests="0123456789abcdef")', "give a non-empty list"),
    ):
        pytester.makepyfile(test_k=ASKS.format(prompt="p", marker=marker))
        result = inner("--collect-only", "-q")
        assert result.ret != 0
        assert says in result.stdout.str() + result.stderr.str(), (marker, result.stdout.str())
