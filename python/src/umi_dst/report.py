"""What the plugin says about a run: the rerun line, the picture, and kept seeds.

* `rerun_line`: the shell command that reruns one test on one seed, as printed, from the
  directory pytest was started in: the plugin (`-p umi_dst.plugin` when this session
  loaded it that way), the binary (`UMI_DST=...` when it came from there), the package
  (`PYTHONPATH=...` when `umi_dst` was found through it), and a path valid from there.
* `write_picture`: a failed run's scope trace saved as JSON lines and drawn as an HTML
  page by `dst trace-html` (the page of `dst replay --html`, over the scope's requests in
  arrival order, with the agent's own OpenTelemetry spans beside them when it sent any),
  for the report to link.
* `keep_marker` and `stale_requests`: a seed kept as a regression
  (`@pytest.mark.umi(seed=N, expect_requests=[...])`) records the request hashes its run
  sent; answers are seeded by request hash, so when a prompt, a tool schema or the agent
  changes, the same seed answers something else. A run that no longer sends a recorded
  hash is reported stale (the test fails), as a kept Rust seed is.
"""

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

#: Request hashes a keep line records at most (the first ones the run sent).
KEEP_REQUESTS_MAX = 8
#: Hex digits of each recorded request hash (64 bits: no accidental match).
KEEP_HASH_CHARS = 16
#: Shortest hash prefix `expect_requests` accepts.
EXPECT_HASH_CHARS_MIN = 8
#: Longest request hash (sha256, hex).
EXPECT_HASH_CHARS_MAX = 64
#: Characters of a node id kept in a picture's file name (then a hash of the whole id).
PICTURE_NAME_CHARS_MAX = 100
#: Characters of the failure text handed to the page.
FAILURE_TEXT_CHARS_MAX = 4000
#: How long `dst trace-html` may take.
PICTURE_TIMEOUT_S = 60
HEX = re.compile(r"^[0-9a-f]+$")


def _pluginarg_values(args):
    """The values of `-p NAME` / `-pNAME` in a list of pytest arguments."""
    values = []
    for at, arg in enumerate(args):
        if arg == "-p" and at + 1 < len(args):
            values.append(args[at + 1])
        elif arg.startswith("-p") and len(arg) > 2 and not arg.startswith("--"):
            values.append(arg[2:].lstrip("="))
    return values


def loaded_by_p(config):
    """Whether this session loaded the plugin with `-p umi_dst.plugin` (on the command line
    or in PYTEST_ADDOPTS): then a rerun needs it too (it is not an installed entry point)."""
    args = [str(arg) for arg in config.invocation_params.args]
    try:
        args += shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:
        pass
    return "umi_dst.plugin" in _pluginarg_values(args)


def pytest_command():
    """`pytest` when the `pytest` on PATH is this interpreter's, else `PYTHON -m pytest`."""
    found = shutil.which("pytest")
    if found and os.path.dirname(os.path.abspath(found)) == os.path.dirname(os.path.abspath(sys.executable)):
        return "pytest"
    return f"{shlex.quote(sys.executable)} -m pytest"


def _package_pythonpath():
    """PYTHONPATH's value (entries made absolute) when `umi_dst` was imported through it."""
    value = os.environ.get("PYTHONPATH")
    if not value:
        return None
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    entries = []
    for entry in value.split(os.pathsep):
        if entry and os.path.abspath(entry) not in entries:
            entries.append(os.path.abspath(entry))
    if package_root not in entries:
        return None
    return os.pathsep.join(entries)


def _dst_from_env(dst):
    """UMI_DST's value, absolute, when it is the binary the run used."""
    configured = os.environ.get("UMI_DST")
    if not configured or not configured.strip() or not dst:
        return None
    if os.path.abspath(configured) != os.path.abspath(dst):
        return None
    return os.path.abspath(configured)


def rerun_line(item, seed, dst=None, run_path=None):
    """The shell command that reruns `item` on `seed`, as printed, from the directory
    pytest was started in; on `run_path` (a `RunPath`, `--umi-path=7/3:9913`) when given."""
    config = item.config
    path, sep, rest = item.nodeid.partition("::")
    where = config.invocation_params.dir
    try:
        relative = os.path.relpath(config.rootpath / path, where)
    except ValueError:  # another drive, on Windows
        relative = str(config.rootpath / path)
    words = []
    binary = _dst_from_env(dst)
    if binary:
        words.append(f"UMI_DST={shlex.quote(binary)}")
    pythonpath = _package_pythonpath()
    if pythonpath:
        words.append(f"PYTHONPATH={shlex.quote(pythonpath)}")
    if run_path is None:
        words.append(f"UMI_SEED={seed}")
    words.append(pytest_command())
    if loaded_by_p(config):
        words.append("-p umi_dst.plugin")
    if run_path is not None:
        words.append(f"--umi-path={run_path}")
    words.append(shlex.quote(relative + sep + rest))
    return " ".join(words)


def _requests_in_order(trace):
    """A trace's entries in arrival order when the server recorded it, else as logged."""
    entries = list(trace)
    if entries and all(isinstance(entry.get("arrival"), int) for entry in entries):
        entries.sort(key=lambda entry: entry["arrival"])
    return entries


def sent_hashes(trace):
    """The distinct request hashes a run sent, in arrival order (else log order)."""
    seen = []
    for entry in _requests_in_order(trace):
        digest = str(entry.get("request_hash") or "")
        if digest and digest not in seen:
            seen.append(digest)
    return seen


def keep_marker(seed, trace):
    """The marker that keeps this run's seed as a regression, with its request hashes."""
    hashes = [digest[:KEEP_HASH_CHARS] for digest in sent_hashes(trace)[:KEEP_REQUESTS_MAX]]
    if not hashes:
        return f"@pytest.mark.umi(seed={seed})"  # no request: nothing to record
    listed = ", ".join(f'"{digest}"' for digest in hashes)
    return f"@pytest.mark.umi(seed={seed}, expect_requests=[{listed}])"


def check_expect_requests(value, where):
    """`expect_requests=[...]`: a list of lowercase hex prefixes; `ValueError` otherwise."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"{where}: expect_requests: {value!r}; give a non-empty list of request hash "
                         f"prefixes (the `keep:` line of a failure report prints one)")
    checked = []
    for prefix in value:
        text = prefix.strip().lower() if isinstance(prefix, str) else None
        if (text is None or not HEX.match(text)
                or not EXPECT_HASH_CHARS_MIN <= len(text) <= EXPECT_HASH_CHARS_MAX):
            raise ValueError(f"{where}: expect_requests: {prefix!r} is not a request hash prefix "
                             f"({EXPECT_HASH_CHARS_MIN} to {EXPECT_HASH_CHARS_MAX} hex digits)")
        checked.append(text)
    return checked


def stale_requests(expected, trace):
    """The recorded prefixes no request of the run has (empty: the seed still means what
    it was kept for)."""
    sent = sent_hashes(trace)
    return [prefix for prefix in expected if not any(digest.startswith(prefix) for digest in sent)]


def stale_message(seed, missing, expected, trace):
    """What a stale kept seed's report says."""
    sent = sent_hashes(trace)
    first = f"its first request hash is now {sent[0][:KEEP_HASH_CHARS]}" if sent else "it sent no request"
    return (f"umi: stale kept seed {seed}: the run sent no request with hash {', '.join(missing)} "
            f"({len(missing)} of the {len(expected)} in expect_requests); {first}. A prompt, a tool "
            f"schema or the agent changed, and answers are seeded by request hash, so the seed no longer "
            f"replays what it was kept for. Check that it still tests what it was kept for and record it "
            f"again: {keep_marker(seed, trace)}")


def picture_name(node_id):
    """A file name for a test's picture: its id made safe, and a hash of the whole id."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", node_id).strip("_")[:PICTURE_NAME_CHARS_MAX] or "test"
    return f"{safe}-{hashlib.sha256(node_id.encode('utf-8')).hexdigest()[:8]}"


def write_picture(dst, trace, directory, name, title, rerun=None, failure=None):
    """Saves `trace` as `NAME.trace.jsonl` in `directory` and draws it into `NAME.html`
    with `dst trace-html`. Returns the page's path; `OSError` or `RuntimeError` saying
    what went wrong."""
    os.makedirs(directory, exist_ok=True)
    saved = os.path.join(directory, f"{name}.trace.jsonl")
    page = os.path.join(directory, f"{name}.html")
    with open(saved, "w", encoding="utf-8") as out:
        out.write(trace.to_jsonl())
    command = [dst, "trace-html", saved, "--output", page, "--title", title]
    agent_spans = getattr(trace, "agent_spans", None)
    if agent_spans:
        # The agent's own spans (OTLP), drawn beside the requests on one time line.
        spans_file = os.path.join(directory, f"{name}.spans.json")
        with open(spans_file, "w", encoding="utf-8") as out:
            json.dump({"spans": agent_spans}, out, ensure_ascii=False)
        command += ["--agent-spans", spans_file]
    if rerun:
        command += ["--rerun", rerun]
    if failure:
        command += ["--failure", failure[:FAILURE_TEXT_CHARS_MAX]]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PICTURE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"dst trace-html took more than {PICTURE_TIMEOUT_S} s") from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise RuntimeError(f"dst trace-html exited {done.returncode}: {said[0] if said else 'no output'} "
                           f"(trace saved at {saved})")
    return page
