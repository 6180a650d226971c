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
    """Runs an inner pytest session with the plugin (in this process, from pytester's
    directory): its own servers, options and outcome; the environment as monkeypatched."""
    monkeypatch.setenv("PYTHONPATH", SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("UMI_SEED", raising=False)
    monkeypatch.delenv("UMI_SEEDS", raising=False)
    monkeypatch.delenv("UMI_SEED_START", raising=False)

    def run(*args):
        return pytester.runpytest("-p", "umi_dst.plugin", "-p", "no:cacheprovider", *args)

    return run
