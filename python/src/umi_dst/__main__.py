"""`python -m umi_dst ARGS...` runs the `dst` binary the plugin would use (`find_dst`)."""

import os
import subprocess
import sys

from ._binary import DstNotFound, find_dst


def main():
    try:
        dst = find_dst()
    except DstNotFound as error:
        print(f"umi_dst: {error}", file=sys.stderr)
        return 127
    if os.name == "posix":
        os.execv(dst, [dst, *sys.argv[1:]])
    return subprocess.call([dst, *sys.argv[1:]])  # pragma: no cover (Windows)


if __name__ == "__main__":
    sys.exit(main())
