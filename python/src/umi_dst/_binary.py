"""Where the `dst` binary is: the one thing the plugin cannot work without.

Looked for in this order:
1. `$UMI_DST` (a path; set it to a binary you built with cargo);
2. the `dst` that `pip install umi-dst` put in this interpreter's scripts directory
   (the environment's, then the user scheme's, for `pip install --user`);
3. `dst` on `$PATH`.
When none is found, the error says how to get one.
"""

import os
import shutil
import sys
import sysconfig

INSTALL_HINT = (
    "install it with `pip install umi-dst` (the wheel carries the binary), or build it from the Umi "
    "repository with `cargo build -p umi-scenarios --bin dst` and set UMI_DST=/path/to/target/debug/dst"
)


class DstNotFound(RuntimeError):
    """No usable `dst` binary; the message names where it looked and how to install one."""


def _user_scheme():
    if hasattr(sysconfig, "get_preferred_scheme"):  # Python 3.10+
        return sysconfig.get_preferred_scheme("user")
    if sys.platform == "darwin" and getattr(sys, "_framework", None):  # pragma: no cover (3.9, macOS framework)
        return "osx_framework_user"
    return f"{os.name}_user"


def _scripts_dirs():
    """Where pip puts a wheel's scripts for this interpreter: the environment, the user
    scheme, and the interpreter's own directory (a venv used without activating it)."""
    found = []
    for scheme in (None, _user_scheme()):
        try:
            path = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if path and path not in found:
            found.append(path)
    here = os.path.dirname(sys.executable)
    if here not in found:
        found.append(here)
    return found


def find_dst():
    """The path of the `dst` binary to run, or `DstNotFound` saying how to get one."""
    configured = os.environ.get("UMI_DST")
    if configured is not None:
        if not configured.strip():
            raise DstNotFound(f"UMI_DST is set but empty; unset it or point it at a dst binary ({INSTALL_HINT})")
        if not os.path.isfile(configured):
            raise DstNotFound(f"UMI_DST={configured} is not a file; {INSTALL_HINT}")
        if not os.access(configured, os.X_OK):
            raise DstNotFound(f"UMI_DST={configured} is not executable")
        return configured
    looked = []
    for directory in _scripts_dirs():
        found = shutil.which("dst", path=directory)
        looked.append(directory)
        if found:
            return found
    found = shutil.which("dst")
    if found:
        return found
    raise DstNotFound(
        "the Umi pytest plugin needs the `dst` binary and found none (UMI_DST is unset; looked in "
        f"{', '.join(looked)} and on PATH): {INSTALL_HINT}"
    )
