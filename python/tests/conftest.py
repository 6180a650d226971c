"""The plugin's own tests. They run with the plugin loaded by `-p umi_dst.plugin` and
`python/src` on PYTHONPATH (scripts/python-tests.sh does both; an installed wheel loads
it through its `pytest11` entry point instead), and drive inner pytest sessions with
pytester, each of which loads the plugin the same way.
"""

import os

import pytest

pytest_plugins = ["pytester"]

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


@pytest.fixture
def inner(pytester, monkeypatch):
    """Runs an inner pytest session with the plugin, in a subprocess (so its servers,
    environment and exit code are its own) from pytester's directory."""
    monkeypatch.setenv("PYTHONPATH", SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("UMI_SEED", raising=False)
    monkeypatch.delenv("UMI_SEEDS", raising=False)
    monkeypatch.delenv("UMI_SEED_START", raising=False)

    def run(*args):
        return pytester.runpytest_subprocess("-p", "umi_dst.plugin", "-p", "no:cacheprovider", *args)

    return run
