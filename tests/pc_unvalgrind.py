# SPDX-License-Identifier: MIT
"""Imported first by every python test: leaves valgrind.

`meson test --setup=valgrind` puts each test's program under valgrind, and
for these tests that program is the python interpreter: valgrind would check
python, not our code, at fifty times the cost. The tests run every pagecache
command under valgrind themselves (PC_UNDER_VALGRIND=1), so the interpreter
execs itself anew, which valgrind does not follow (no --trace-children).
"""

import os
import sys


def _under_valgrind():
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            return "vgpreload" in f.read()
    except OSError:
        return False


if _under_valgrind():
    # (valgrind leaves LD_PRELOAD set, empty, in the new process: harmless)
    os.execv(sys.executable, [sys.executable] + sys.argv)
