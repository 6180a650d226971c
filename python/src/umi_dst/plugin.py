"""The pytest plugin: seeded `dst serve` runs for any Python agent's tests.

Registered through the `pytest11` entry point of the `umi-dst` wheel (or load it with
`-p umi_dst.plugin`). It gives a test:

* the `umi` fixture (`umi_dst.Umi`): the test's seed, a fresh scope, base URLs for the
  openai, anthropic and ollama SDKs, `headers`, `trace()`, `check_cut_streams()`, and
  `clock` (the run's simulated clock, `clock_pytest.py`: on where safe, `clock=` on the
  marker or `--umi-clock=on|off` to say so);
* the `umi` marker: `@pytest.mark.umi(seeds=20, faults="llm.stream_cut=0.3",
  time_scale=0, endpoints=[...], models=[...], args=[...], seed=N)`: the test runs once
  per seed (ids `seed=N`) against a server started with those flags;
* on failure, a report section with the seed, the faults that fired in the run, the
  command that reruns that test on that seed (`report.rerun_line`), a picture of the run
  (`html:`, drawn by `dst trace-html` under `--umi-html-dir`) and the marker that keeps
  the seed as a regression (`keep:`);
* kept seeds checked: `expect_requests=[...]` on a `seed=` marker names the request
  hashes the kept run sent; a run that no longer sends one fails as stale.

Seeds, strongest first: `--umi-seed N` on the command line (typed for this run: it
replaces even a marker's `seed=`, and the session header names the tests it re-seeded);
the marker's `seed=N` (a kept regression: `UMI_SEED` does not replace it, and the header
says so); `UMI_SEED=N` (what the rerun line uses); the marker's `seeds=`; else the first
8 bytes of sha256(test node id). `seeds=N` means seeds S..S+N-1 with S =
`--umi-seed-start` (`UMI_SEED_START`, default 1); `--umi-seeds` (`UMI_SEEDS`) replaces
every marker's N (a nightly can sweep more seeds than CI).

Servers: one `dst serve --bind 127.0.0.1:0` per distinct set of flags, started when a
test first needs it, stopped with SIGTERM at the end of the session and required to
exit 0.
"""

import decimal
import os
import re
import shlex

import pytest

from . import clock_pytest
from . import report as umi_report
from ._binary import DstNotFound
from . import explore as umi_explore
from .path import RunPath
from .run import Umi, derive_seed, describe, parse_seed
from .server import Server, ServeError, ServeRefused

MARKER_KEYS = ("seeds", "seed", "faults", "time_scale", "endpoints", "models", "args", "expect_requests", "clock")
# Marker keys that are not `dst serve` flags.
NOT_SERVE_KEYS = ("seed", "seeds", "expect_requests", "clock")
_RUN_KEY = pytest.StashKey()
_OVERRIDES_KEY = pytest.StashKey()
_KEPT_KEY = pytest.StashKey()
_PATH_KEY = pytest.StashKey()
_EXPLORED_KEY = pytest.StashKey()


def pytest_addoption(parser):
    group = parser.getgroup("umi", "Umi: seeded dst serve runs")
    group.addoption("--umi-seed", default=None, metavar="N",
                    help="run every umi test on seed N only (decimal or 0x hex); env UMI_SEED")
    group.addoption("--umi-seeds", default=None, metavar="N",
                    help="run every @pytest.mark.umi(seeds=...) test on N seeds instead; env UMI_SEEDS")
    group.addoption("--umi-seed-start", default=None, metavar="S",
                    help="first seed of a seeds=N marker (default 1); env UMI_SEED_START")
    group.addoption("--umi-html-dir", default=None, metavar="DIR",
                    help="where a failed umi test's picture goes (default: .umi/html under the rootdir); "
                         "env UMI_HTML_DIR; 'off' writes none")
    group.addoption("--umi-path", default=None, metavar="PATH",
                    help="run every umi test on path PATH (SEED[/STEP:STREAM]..., e.g. 7/3:9913: seed 7, and "
                         "from its 3rd request on answers drawn from stream 9913), what --umi-explore prints; "
                         "env UMI_PATH")
    group.addoption("--umi-explore", default=None, metavar="N",
                    help="rerun each umi test up to N times along paths steered by what the server's marks "
                         "say each run reached, stopping at its first failure; env UMI_EXPLORE")
    group.addoption("--umi-explore-seed", default=None, metavar="S",
                    help="the seed of --umi-explore's choices (default: each test's seed)")
    group.addoption("--umi-keep", action="store_true", default=False,
                    help="print, for every umi test run, the marker that keeps its seed with its request hashes")
    clock_pytest.add_option(group)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "umi(seeds=N or [..], seed=N, faults={aim: p} or 'aim=p,..' (aim: KIND[@OPERATION][#N[..]]), "
        "time_scale=X, endpoints=[..], models=[..], args=[..], expect_requests=[..], clock=True|False): run the "
        "test on N seeds against `dst serve` started with these flags, on the simulated clock or not",
    )
    config.stash[_OVERRIDES_KEY] = {}
    config.stash[_KEPT_KEY] = []
    config.stash[_EXPLORED_KEY] = []
    pinned_path(config)  # a bad path, a bad count or two pins are usage errors up front
    explore_options(config)
    clock_pytest.setting(config)


def pinned_path(config):
    """`--umi-path` (or `UMI_PATH`) as a `RunPath`, or None. The command line wins over the
    environment (`--umi-seed` over `UMI_PATH`, `--umi-path` over `UMI_SEED`); two pins at
    one level are a usage error."""
    cli_path, cli_seed = config.getoption("umi_path"), config.getoption("umi_seed")
    if cli_path is not None and cli_seed is not None:
        raise pytest.UsageError("--umi-path and --umi-seed together: give one")
    if cli_path is not None:
        return _checked(RunPath.parse, cli_path, "--umi-path")
    env_path = os.environ.get("UMI_PATH", "").strip()
    if cli_seed is not None or not env_path:
        return None
    if os.environ.get("UMI_SEED", "").strip():
        raise pytest.UsageError("UMI_PATH and UMI_SEED together: give one")
    return _checked(RunPath.parse, env_path, "UMI_PATH")


def explore_options(config):
    """`(runs_max, explorer_seed)` of `--umi-explore`, or None when not exploring."""
    value, source = _setting(config, "umi_explore", "UMI_EXPLORE")
    if value is None:
        return None
    runs_max = _checked(_count, value, source)
    if runs_max > umi_explore.EXPLORE_RUNS_MAX:
        raise pytest.UsageError(f"{source} {value}: at most {umi_explore.EXPLORE_RUNS_MAX} runs")
    if _setting(config, "umi_path", "UMI_PATH")[0] is not None:
        raise pytest.UsageError(f"{source} with a path pin (--umi-path / UMI_PATH): a path replays one run; "
                                f"give one")
    seed = config.getoption("umi_explore_seed")
    seed = None if seed is None else _checked(parse_seed, seed, "--umi-explore-seed")
    return runs_max, seed


def _setting(config, option, env):
    """A command-line option, else its environment variable, else None."""
    value = config.getoption(option)
    if value is not None:
        return value, f"--{option.replace('_', '-')}"
    value = os.environ.get(env)
    if value is not None and value.strip():
        return value, env
    return None, None


def pinned_seed(config):
    path = pinned_path(config)
    if path is not None:
        return path.seed
    value, source = _setting(config, "umi_seed", "UMI_SEED")
    return None if value is None else _checked(parse_seed, value, source)


def _option_seed(config):
    """`--umi-seed` (or `--umi-path`'s seed), when given on the command line."""
    path = config.getoption("umi_path")
    if path is not None:
        return _checked(RunPath.parse, path, "--umi-path").seed
    value = config.getoption("umi_seed")
    return None if value is None else _checked(parse_seed, value, "--umi-seed")


def _checked(parse, value, source):
    try:
        return parse(value, source)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


def _count(value, what):
    try:
        count = int(str(value).strip(), 10)
    except ValueError:
        raise ValueError(f"{what}: {value!r} is not a count of seeds") from None
    if count < 1:
        raise ValueError(f"{what}: {value!r}; at least 1 seed")
    return count


def _marker_kwargs(node):
    """The `umi` marker's keyword arguments, closest marker winning per key."""
    kwargs = {}
    for marker in reversed(list(node.iter_markers("umi"))):
        if marker.args:
            raise pytest.UsageError(f"{node.nodeid}: @pytest.mark.umi takes keyword arguments only "
                                    f"({', '.join(MARKER_KEYS)}), got {marker.args!r}")
        unknown = sorted(set(marker.kwargs) - set(MARKER_KEYS))
        if unknown:
            raise pytest.UsageError(f"{node.nodeid}: @pytest.mark.umi does not know {', '.join(unknown)}; "
                                    f"it takes {', '.join(MARKER_KEYS)}")
        kwargs.update(marker.kwargs)
    return kwargs


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what}: {value!r} is not a number")
    return value


# A rule's aim, as `dst serve --faults` reads it (umi-dst's `fault::aim`):
# KIND[@OPERATION][#N[..]], then `=P` in the text form.
_AIM = re.compile(r"(?P<kind>[A-Za-z0-9_.]+)(?:@(?P<operation>[A-Za-z0-9_./-]+\*?))?"
                  r"(?:#(?P<ordinal>[0-9]+)(?P<onwards>\.\.)?)?")
_PROBABILITY = re.compile(r"[0-9.]+")


def _aim(key, where):
    """Checks one rule's aim (`tool.timeout@tool.call.pay#2`) as the server parses it."""
    shape = "KIND[@OPERATION][#N[..]], e.g. 'tool.timeout@tool.call.issue_refund' or 'llm.rate_limit@llm.call#2'"
    if not isinstance(key, str):
        raise ValueError(f"{where}: faults: {key!r} is not a rule ({shape})")
    match = _AIM.fullmatch(key.strip())
    if match is None:
        raise ValueError(f"{where}: faults: rule {key!r} is not {shape}")
    if match["ordinal"] is not None and int(match["ordinal"]) == 0:
        raise ValueError(f"{where}: faults: rule {key!r}: `#0`: the ordinal counts from 1")
    return key.strip()


def _probability(value, where, key):
    p = _number(value, f"{where}: faults[{key!r}]")
    if not 0 <= p <= 1:
        raise ValueError(f"{where}: faults[{key!r}] = {value!r}; a probability is 0 to 1")
    return float(p)


def _probability_text(p):
    """`p` as `dst serve --faults` reads it: `repr` (`0.2`, `1.0`), never an exponent
    (`1e-05` would be refused: the grammar takes digits and one point)."""
    text = repr(p)
    return format(decimal.Decimal(text), "f") if "e" in text.lower() else text


def faults_text(faults, where="umi"):
    """The `--faults` text of a marker's `faults`: `{aim: probability}` or the server's own
    `aim=p,aim=p` text (each aim `KIND[@OPERATION][#N[..]]`), or a scenario's name. The
    grammar is checked here; whether the kind and the operation exist is the server's
    check (it knows its tools), which the `umi` fixture reports naming the marker."""
    if isinstance(faults, dict):
        return ",".join(f"{_aim(key, where)}={_probability_text(_probability(p, where, key))}"
                        for key, p in faults.items())
    if not isinstance(faults, str):
        raise ValueError(f"{where}: faults: {faults!r}; give a dict {{aim: p}} or an 'aim=p,aim=p' string")
    items = [item.strip() for item in faults.split(",") if item.strip()]
    if len(items) == 1 and "=" not in items[0] and "@" not in items[0] and "#" not in items[0]:
        return items[0]  # a scenario's fault profile, by name
    for item in items:
        key, equals, p = item.partition("=")
        if not equals:
            raise ValueError(f"{where}: faults: rule {item!r} has no `=probability`")
        _aim(key, where)
        if _PROBABILITY.fullmatch(p.strip()) is None:
            raise ValueError(f"{where}: faults: rule {item!r}: {p.strip()!r} is not a probability (0 to 1)")
        _probability(float(p), where, key)
    return ",".join(items)


def serve_flags(faults=None, time_scale=None, endpoints=None, models=None, args=None, where="umi"):
    """The `dst serve` flags for a marker's settings, as a tuple (the server's identity).

    `faults`: `{aim: probability}` or the server's own `aim=p,aim=p` text (`faults_text`)."""
    flags = []
    if faults is not None:
        text = faults_text(faults, where)
        if text:
            flags += ["--faults", text]
    if time_scale is not None:
        scale = _number(time_scale, f"{where}: time_scale")
        if scale < 0:
            raise ValueError(f"{where}: time_scale {time_scale!r}; 0 or more (0: no real waits)")
        flags += ["--time-scale", repr(float(scale))]
    for name, values, flag in (("endpoints", endpoints, "--endpoint"), ("models", models, "--model")):
        if values is None:
            continue
        if isinstance(values, str) or not all(isinstance(v, str) and v for v in values):
            raise ValueError(f"{where}: {name}: {values!r}; give a list of non-empty strings")
        for value in values:
            flags += [flag, value]
    if args is not None:
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"{where}: args: {args!r}; give a list of strings (extra dst serve flags)")
        flags += list(args)
    return tuple(flags)


def _seeds_of(config, kwargs, where):
    """The seeds a marked test runs on (a list), honouring the pins and overrides."""
    if "seed" in kwargs and "seeds" in kwargs:
        raise ValueError(f"{where}: give seed= or seeds=, not both")
    if "seed" not in kwargs and "seeds" not in kwargs:
        return None  # the `umi_seed` fixture: pinned or derived from the node id
    if "expect_requests" in kwargs:
        if "seed" not in kwargs:
            raise ValueError(f"{where}: expect_requests= belongs to a kept seed: give seed=N with it")
        umi_report.check_expect_requests(kwargs["expect_requests"], where)
    if "seed" in kwargs:
        # A marker's own seed is a kept regression: only the command line replaces it.
        marked = parse_seed(kwargs["seed"], f"{where}: seed")
        pinned = pinned_seed(config)
        if pinned is not None and pinned != marked:
            how = "--umi-seed" if _option_seed(config) is not None else "UMI_SEED"
            config.stash[_OVERRIDES_KEY][where] = (how, marked, pinned)
            if how == "--umi-seed":
                return [pinned]
        return [marked]
    pinned = pinned_seed(config)
    if pinned is not None:
        return [pinned]
    seeds = kwargs.get("seeds")
    if seeds is None:
        return None
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        count = _count(seeds, f"{where}: seeds")
        override, source = _setting(config, "umi_seeds", "UMI_SEEDS")
        if override is not None:
            count = _checked(_count, override, source)
        start, source = _setting(config, "umi_seed_start", "UMI_SEED_START")
        start = 1 if start is None else _checked(parse_seed, start, source)
        return [parse_seed(start + i, f"{where}: seeds") for i in range(count)]
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise ValueError(f"{where}: seeds: {seeds!r}; give a count or a list of seeds")
    listed = [parse_seed(seed, f"{where}: seeds") for seed in seeds]
    if not listed:
        raise ValueError(f"{where}: seeds: an empty list")
    return listed


def pytest_generate_tests(metafunc):
    kwargs = _marker_kwargs(metafunc.definition)
    if not kwargs:
        return
    where = metafunc.definition.nodeid
    if "umi" not in metafunc.fixturenames:
        raise pytest.UsageError(f"{where}: @pytest.mark.umi is on a test that does not use the `umi` fixture")
    try:
        seeds = _seeds_of(metafunc.config, kwargs, where)
        if "clock" in kwargs:
            clock_pytest.check_marker(kwargs["clock"], where)
        serve_flags(**{k: v for k, v in kwargs.items() if k not in NOT_SERVE_KEYS}, where=where)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    if seeds is not None:
        metafunc.parametrize("umi_seed", seeds, ids=[f"seed={seed}" for seed in seeds])


class Servers:
    """The session's `dst serve` processes, one per distinct tuple of flags."""

    def __init__(self):
        self.started = {}

    def get(self, flags=()):
        flags = tuple(flags)
        if flags not in self.started:
            self.started[flags] = Server(flags)
        return self.started[flags]

    def stop_all(self):
        failures = []
        for server in self.started.values():
            try:
                server.stop()
            except ServeError as error:
                failures.append(str(error))
        self.started.clear()
        if failures:
            raise ServeError("\n".join(failures))


@pytest.fixture(scope="session")
def umi_servers():
    """The session's `dst serve` processes (`umi_servers.get(flags)` starts or reuses one)."""
    servers = Servers()
    yield servers
    servers.stop_all()


@pytest.fixture
def umi_seed(request):
    """The test's seed when no marker parametrizes it: pinned, the marker's, or derived."""
    pinned = pinned_seed(request.config)
    if pinned is not None:
        return pinned
    return derive_seed(request.node.nodeid)


def rerun_command(item, seed, dst=None, path=None):
    """The shell command that reruns `item` on `seed` (or `path`), as printed, from where
    pytest was started (`report.rerun_line`: plugin, binary, package path and test path
    included)."""
    return umi_report.rerun_line(item, seed, dst, run_path=path)


def pytest_report_collectionfinish(config, start_path, items):
    """Says which marker seeds a pin replaced (`--umi-seed`) or did not (`UMI_SEED`)."""
    overrides = config.stash.get(_OVERRIDES_KEY, {})
    lines = []
    for where, (how, marked, pinned) in sorted(overrides.items()):
        if how == "--umi-seed":
            lines.append(f"umi: --umi-seed {pinned} replaces the marker's seed={marked} of {where}")
        else:
            lines.append(f"umi: UMI_SEED={pinned} does not replace the marker's seed={marked} of {where} "
                         f"(a kept seed; --umi-seed does)")
    return lines


@pytest.fixture
def umi(request, umi_servers, umi_seed):
    """This test's `Umi`: seed, a fresh scope, base URLs, headers, trace, checks."""
    kwargs = _marker_kwargs(request.node)
    try:
        flags = serve_flags(**{k: v for k, v in kwargs.items() if k not in NOT_SERVE_KEYS},
                            where=request.node.nodeid)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    try:
        server = umi_servers.get(flags)
    except DstNotFound as error:
        pytest.fail(str(error), pytrace=False)
    except ServeRefused as error:
        # A usage error of the marker, said without a traceback: what the server refused.
        pytest.fail(f"umi: {error}\n{request.node.nodeid}: @pytest.mark.umi: dst serve refused its settings "
                    f"{' '.join(flags) or '(none)'}: {error.reason}", pytrace=False)
    except ServeError as error:
        pytest.fail(f"umi: {error}", pytrace=False)
    path = request.node.stash.get(_PATH_KEY, None) or pinned_path(request.config)
    if path is not None and path.seed != umi_seed:
        # A kept seed= marker that --umi-path does not replace (UMI_PATH, like UMI_SEED).
        path = None
    run = Umi(server, umi_seed, node_id=request.node.nodeid, path=path,
              rerun_command=rerun_command(request.node, umi_seed, getattr(server, "dst", None), path))
    request.node.stash[_RUN_KEY] = run
    clock_pytest.start_for(request, run, kwargs)
    return run


def _describe_run(run, lines, label):
    if getattr(run.server, "stopped", False):
        lines.append(f"{label}trace:   gone with its server ({run.server.url}, stopped)")
        return
    try:
        trace = run.trace()
    except ServeError as error:
        lines.append(f"{label}trace unavailable ({error})")
        return
    requests = f"{len(trace)}" + (f" ({trace.left_out} left out of the log)" if trace.left_out else "")
    lines.append(f"{label}requests: {requests}")
    fired = [entry for entry in trace if entry.get("faults")]
    count = sum(len(entry["faults"]) for entry in fired)
    lines.append(f"{label}faults:  {count} fired" if count else f"{label}faults:  none fired")
    lines += [f"  {describe(entry)}" for entry in fired]
    cut = trace.cut()
    if cut:
        lines.append(f"{label}cut:     {len(cut)} stream(s) did not end whole")


def failure_section(run, html=None, keep=None, stale=None):
    """The report text of a failed run: seed, server, the faults that fired, the rerun,
    and (when given) its picture, the marker that keeps its seed, and why it is stale."""
    lines = [f"seed:    {run.seed}"]
    if getattr(run, "path", None) is not None:
        lines.append(f"path:    {run.path}")
    lines += [f"scope:   {run.scope}",
             f"server:  dst serve {' '.join(shlex.quote(f) for f in run.server.flags)}".rstrip()]
    _describe_run(run, lines, "")
    for number, child in enumerate(run.runs()[1:], 1):
        where = "" if child.server is run.server else f" on {child.server.url}"
        lines.append(f"new_scope #{number}: seed {child.seed}, scope {child.scope}{where}")
        _describe_run(child, lines, "  ")
    lines.append(f"rerun:   {run.rerun_command}")
    if html:
        lines.append(f"html:    {html}")
    if keep:
        lines.append(f"keep:    {keep}")
    if stale:
        lines.append(f"stale:   {stale}")
    return "\n".join(lines)


def _html_dir(config):
    """Where pictures go, or None when `off`."""
    value, _source = _setting(config, "umi_html_dir", "UMI_HTML_DIR")
    if value is None:
        return os.path.join(str(config.rootpath), ".umi", "html")
    if value.strip().lower() == "off":
        return None
    return os.path.join(str(config.invocation_params.dir), value)


def _shown(config, path):
    """`path` relative to where pytest was started, when it lies under it."""
    relative = os.path.relpath(path, str(config.invocation_params.dir))
    return path if relative.startswith("..") else relative


def _picture(item, run, trace, report):
    """Writes the run's picture; the report line (a path, or why there is none)."""
    directory = _html_dir(item.config)
    if directory is None or trace is None:
        return None
    dst = getattr(run.server, "dst", None)
    if not dst:
        return "not written (the server names no dst binary to draw it with)"
    failure = (report.longreprtext or "").strip().splitlines()
    try:
        page = umi_report.write_picture(
            dst, trace, directory, umi_report.picture_name(item.nodeid), item.nodeid,
            rerun=run.rerun_command, failure="\n".join(failure[-20:]) or "failed")
    except (OSError, RuntimeError) as error:
        return f"not written ({error})"
    return _shown(item.config, page)


def _scope_trace(run):
    """The run's trace, or None when the server is gone or does not answer."""
    if getattr(run.server, "stopped", False):
        return None
    try:
        return run.trace()
    except ServeError:
        return None


def _stale(item, run, trace):
    """The stale-seed message when the marker's `expect_requests` no longer match."""
    expected = _marker_kwargs(item).get("expect_requests")
    if expected is None or trace is None:
        return None
    expected = umi_report.check_expect_requests(expected, item.nodeid)
    missing = umi_report.stale_requests(expected, trace)
    if not missing:
        return None
    return umi_report.stale_message(run.seed, missing, expected, trace)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    run = item.stash.get(_RUN_KEY, None)
    if run is None or report.when != "call":
        if run is not None and report.failed:
            report.sections.append(("umi", failure_section(run)))
        return
    keeping = item.config.getoption("umi_keep")
    if not (report.failed or keeping or "expect_requests" in _marker_kwargs(item)):
        return  # nothing to say: no trace read
    trace = _scope_trace(run)
    stale = _stale(item, run, trace)
    if stale and report.passed:
        report.outcome = "failed"
        report.longrepr = stale
    # A kept seed replays no branch: a run on a path has no keep line (its rerun line pins it).
    on_path = getattr(run, "path", None) is not None and not run.path.is_seed_only()
    keep = umi_report.keep_marker(run.seed, trace) if trace is not None and not on_path else None
    if keep and keeping:
        item.config.stash[_KEPT_KEY].append((item.nodeid, keep))
    if not report.failed:
        return
    html = _picture(item, run, trace, report)
    report.sections.append(("umi", failure_section(run, html=html, keep=keep, stale=stale)))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """`--umi-explore=N`: each umi test rerun along paths (`explore.py`)."""
    options = explore_options(item.config)
    if options is None or "umi" not in getattr(item, "fixturenames", ()):
        return None
    said = umi_explore.explore_item(item, nextitem, options, (_PATH_KEY, _RUN_KEY))
    item.config.stash[_EXPLORED_KEY].append(said)
    return True


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """`--umi-explore`: what each test's exploration found; `--umi-keep`: the marker that
    keeps each run's seed, with its request hashes."""
    explored = config.stash.get(_EXPLORED_KEY, [])
    if explored:
        terminalreporter.section("umi explore")
        for line in explored:
            terminalreporter.write_line(line)
    kept = config.stash.get(_KEPT_KEY, [])
    if not kept:
        return
    terminalreporter.section("umi: markers that keep these seeds")
    for node_id, keep in kept:
        terminalreporter.write_line(f"{node_id}: {keep}")
