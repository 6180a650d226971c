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
    """Runs an inner pytest session with the plugin from pytester's directory: its own
    servers, options and outcome; the environment as monkeypatched.

    In this process by default (fast). `subprocess=True` for inner tests that use an
    SDK: pytester drops the modules an in-process run imported, and an SDK whose lazily
    imported modules come back as second copies no longer recognises their exceptions."""
    monkeypatch.setenv("PYTHONPATH", SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("UMI_SEED", raising=False)
    monkeypatch.delenv("UMI_SEEDS", raising=False)
    monkeypatch.delenv("UMI_SEED_START", raising=False)
    monkeypatch.delenv("UMI_PATH", raising=False)
    monkeypatch.delenv("UMI_EXPLORE", raising=False)
    monkeypatch.delenv("UMI_CLOCK", raising=False)

    def run(*args, subprocess=False):
        runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
        return runner("-p", "umi_dst.plugin", "-p", "no:cacheprovider", *args)

    return run
