"""The pytest plugin's clock: which tests run on simulated time, and the clock around them.

`@pytest.mark.umi(clock=True)` (or `False`) says it for one test; `--umi-clock=on|off`
(env `UMI_CLOCK`) says it for every test that takes the `umi` fixture and whose marker
does not; with neither, a test is on the clock when that is SAFE (`safe_by_default`):
it takes the `umi` fixture and its server does not play simulated time in real time
(`time_scale` above 0, or `--time-scale` above 0 in its `args`, makes the server wait
for real, and the agent would then wait the same time twice). What counts as safe was decided by running the repository's Python
suite with the clock forced on (docs/guide.md, "The agent's clock").

The clock starts when the `umi` fixture is set up (after the server is, so starting
`dst serve` waits in real time) and stops when it is torn down, even when the test
failed; `random` is seeded with the test's seed meanwhile and restored after.
"""

import os

import pytest

from . import clock_on

CLOCK_SETTINGS = ("on", "off")
# `dst serve`'s flag for playing simulated time in real time.
TIME_SCALE_FLAG = "--time-scale"


def add_option(group):
    group.addoption("--umi-clock", default=None, metavar="on|off",
                    help="run every umi test on the simulated clock (on) or the wall clock (off), "
                         "unless its marker says clock=True/False; default: on where safe; env UMI_CLOCK")


def setting(config):
    """'on', 'off' or None (the default), from `--umi-clock` or `UMI_CLOCK`."""
    value, source = config.getoption("umi_clock"), "--umi-clock"
    if value is None:
        value, source = os.environ.get("UMI_CLOCK"), "UMI_CLOCK"
    if value is None or not value.strip():
        return None
    value = value.strip().lower()
    if value not in CLOCK_SETTINGS:
        raise pytest.UsageError(f"{source}={value!r}: give on or off")
    return value


def check_marker(value, where):
    if not isinstance(value, bool):
        raise ValueError(f"{where}: clock: {value!r}; give True or False")
    return value


def _scales(kwargs):
    """Every time scale the marker gives the server: `time_scale=X`, and `--time-scale X`
    or `--time-scale=X` in its `args` (as text: `dst serve` parses it)."""
    if kwargs.get("time_scale") is not None:
        yield kwargs["time_scale"]
    args = [str(arg) for arg in kwargs.get("args") or ()]
    for at, arg in enumerate(args):
        if arg == TIME_SCALE_FLAG and at + 1 < len(args):
            yield args[at + 1]
        elif arg.startswith(TIME_SCALE_FLAG + "="):
            yield arg.split("=", 1)[1]


def _real_time(scale):
    """Whether a scale makes the server wait for real (above 0); one that is not a
    number is left to `dst serve` to refuse."""
    try:
        return float(scale) > 0
    except (TypeError, ValueError):
        return False


def safe_by_default(kwargs):
    """The default for a test that takes `umi`: on, unless its server plays in real time
    (`time_scale` above 0, in the marker's keyword or in its `args`)."""
    return not any(_real_time(scale) for scale in _scales(kwargs))


def wanted(config, kwargs, where):
    """Whether a test with the `umi` marker's `kwargs` runs on the clock."""
    if "clock" in kwargs:
        try:
            return check_marker(kwargs["clock"], where)
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None
    said = setting(config)
    if said is not None:
        return said == "on"
    return safe_by_default(kwargs)


def start_for(request, run, kwargs):
    """Starts the test's clock when it wants one (`run.clock`, stopped at teardown)."""
    if not wanted(request.config, kwargs, request.node.nodeid):
        return None
    clock = clock_on.start(seed=run.seed, servers=[run.server.url])
    request.addfinalizer(lambda: clock_on.stop(clock))
    run.clock = clock
    return clock
