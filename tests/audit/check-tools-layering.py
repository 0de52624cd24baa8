#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Nothing in tools/ asks the kernel about the page cache itself.

The pagecache command is a shell around libpagecache: what it learns of
the page cache and how it reads files back comes from the library, so that
a program linking the library gets the same answers (issue 21). This check
reads the C sources (*.c, *.h) under the directories given and fails on any
direct use of

  mincore(                     the residency of a mapping
  preadv2(, RWF_NOWAIT         probing reads
  cachestat(, SYS_cachestat, __NR_cachestat
  io_uring_..., struct io_uring, <liburing.h>

Comments and string literals (help texts, JSON field names) are ignored; a
call is the name, not part of a longer one (pc_cachestat( and
pc_detect_mincore( are the library's), followed by "(".

    check-tools-layering.py DIR...    exit status 0 clean, 1 a use found
"""

import os
import re
import sys

FORBIDDEN = [
    (re.compile(r"(?<![\w.>])mincore\s*\("), "mincore()"),
    (re.compile(r"(?<![\w.>])preadv2\s*\("), "preadv2()"),
    (re.compile(r"\bRWF_NOWAIT\b"), "RWF_NOWAIT"),
    (re.compile(r"(?<![\w.>])cachestat\s*\("), "cachestat()"),
    (re.compile(r"\b(?:SYS|__NR)_cachestat\b"), "the cachestat syscall"),
    (re.compile(r"(?<![\w.>])io_uring_\w+\s*\("), "liburing"),
    (re.compile(r"\bstruct\s+io_uring(?:_\w+)?\b"), "liburing"),
    (re.compile(r"#\s*include\s*<liburing\.h>"), "liburing"),
]


def strip(text):
    """The C text with comments and string and character literals blanked
    (newlines kept, so that line numbers stay right)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_file(path):
    found = []
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read()
    # #include <...> lines keep their brackets: strip() leaves them be
    code = strip(raw)
    for pattern, what in FORBIDDEN:
        for m in pattern.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            found.append(f"{path}:{line}: {what}: {raw.splitlines()[line - 1].strip()}")
    return found


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    problems, files = [], 0
    for top in argv[1:]:
        for dirpath, _, names in sorted(os.walk(top)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    files += 1
                    problems += check_file(os.path.join(dirpath, name))
    for p in problems:
        print(f"FAIL: {p}")
    if not files:
        print("FAIL: no C source found: wrong directory?")
        return 1
    print(f"{files} files, {len(problems)} direct use(s) of the page-cache calls")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
