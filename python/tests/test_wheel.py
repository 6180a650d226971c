"""The umi-dst wheel as a user gets it: built by maturin, installed into a fresh venv.

Opt-in (a cargo build of the `dst` binary): runs when UMI_TEST_WHEEL=1, which
`scripts/python-tests.sh --wheel` sets. maturin comes from python/requirements-build.txt;
cargo builds in the `dev` profile into $CARGO_TARGET_DIR (default: the workspace's
target/, where `make test` has already built `dst`, so most of it is reused).

In the fresh venv: `dst --help` runs from the venv's scripts directory, `umi_dst`
imports and finds that `dst` with UMI_DST unset, and pytest loads the plugin through
the wheel's `pytest11` entry point (no `-p`) and serves a test from the wheel's binary.
"""

import os
import subprocess
import textwrap
import time
import venv

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)

# The longest one step may take in real time (the maturin build of `dst` is the slow one).
RUN_SECS_MAX = 1800
# The inner pytest: one test, two seeds, an hour's sleep on the simulated clock.
INNER_SECS_MAX = 300

pytestmark = pytest.mark.skipif(os.environ.get("UMI_TEST_WHEEL") != "1",
                                reason="builds the wheel with cargo: UMI_TEST_WHEEL=1 (scripts/python-tests.sh --wheel)")


def pinned(name):
    with open(os.path.join(REPO, "tests", "python", "requirements.txt")) as requirements:
        for line in requirements:
            if line.split("==")[0].strip() == name:
                return line.strip()
    raise AssertionError(f"{name} is not pinned in tests/python/requirements.txt")


def make_venv(path):
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    bin_dir = os.path.join(path, "Scripts" if os.name == "nt" else "bin")
    return bin_dir, os.path.join(bin_dir, "python")


def run(command, timeout_secs=RUN_SECS_MAX, **kwargs):
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_secs, **kwargs)
    took = time.monotonic() - started
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done, took


def test_the_wheel_installs_dst_and_the_plugin(tmp_path):
    build_bin, build_python = make_venv(str(tmp_path / "build"))
    run([build_python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-r", os.path.join(PYTHON_DIR, "requirements-build.txt")])
    wheels = tmp_path / "wheels"
    env = dict(os.environ)
    # maturin runs in python/: a relative target directory means the one from here.
    env["CARGO_TARGET_DIR"] = os.path.abspath(env.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"))
    _done, took = run([os.path.join(build_bin, "maturin"), "build", "--profile", "dev", "--quiet",
                       "--out", str(wheels)], cwd=PYTHON_DIR, env=env)
    print(f"maturin build --profile dev: {took:.0f} s (CARGO_TARGET_DIR={env['CARGO_TARGET_DIR']})")
    built = sorted(wheels.glob("umi_dst-*.whl"))
    assert len(built) == 1, built

    user_bin, user_python = make_venv(str(tmp_path / "user"))
    run([user_python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(built[0]),
         pinned("pytest")])
    # Nothing of this run's Umi settings reaches the user's: UMI_DST, UMI_SEED, UMI_CLOCK
    # (off would make the inner hour's sleep real), UMI_SEED_START, UMI_PATH, UMI_EXPLORE...
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("UMI_")}
    dst = os.path.join(user_bin, "dst.exe" if os.name == "nt" else "dst")
    helped, _ = run([dst, "serve", "--help"], env=clean)
    assert "Usage: dst serve" in helped.stdout

    found, _ = run([user_python, "-c", "import umi_dst, umi_dst.plugin; print(umi_dst.find_dst())"], env=clean)
    assert os.path.realpath(found.stdout.strip()) == os.path.realpath(dst)

    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "test_user.py").write_text(textwrap.dedent("""
        import json
        import time
        import urllib.request

        import pytest

        @pytest.mark.umi(seeds=2, clock=True)
        def test_served(umi):
            body = {"model": "umi-sim", "messages": [{"role": "user", "content": "hello"}]}
            request = urllib.request.Request(umi.openai_base_url + "/chat/completions", data=json.dumps(body).encode(),
                                             headers={"content-type": "application/json"})
            with urllib.request.urlopen(request) as response:
                assert response.headers["x-umi-seed"] == str(umi.seed)
                assert json.load(response)["choices"][0]["message"]["content"]
            assert len(umi.trace()) == 1
            time.sleep(3600)  # on the simulated clock: the wheel brings time-machine along
            assert umi.clock.elapsed_us == 3600 * 1_000_000
    """))
    tested, _ = run([user_python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"],
                    timeout_secs=INNER_SECS_MAX, cwd=str(tmp_path / "project"), env=clean)
    assert "2 passed" in tested.stdout
