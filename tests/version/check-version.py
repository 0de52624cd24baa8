# SPDX-License-Identifier: MIT
"""One version everywhere: meson.build's project version is the one that is set.

    check-version.py --version V --header pagecache.h --changelog debian/changelog
                     --cli pagecache

Checks that these agree with V (meson.project_version(), which also names the
shared library's file and pagecache.pc's Version):
  header     PAGECACHE_VERSION_MAJOR/MINOR/MICRO in the public header
  cli        `pagecache --version`: the command's own version and the
             library's pc_version() (built from the header's macros)
  changelog  debian/changelog's newest entry, without epoch and Debian
             revision (0.1.0-1 -> 0.1.0; 0.1.0~rc1-1 -> 0.1.0~rc1 is not 0.1.0)

To release a new version: change project(version:) in meson.build, the three
macros in include/pagecache/pagecache.h, and add a debian/changelog entry
(dch -v NEW-1); this test fails until all three agree.

Exit status: 0 pass, 1 fail, 77 skip (no debian/changelog: a tree without
debian/, e.g. an export of the sources without it).
"""

import argparse
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--changelog", required=True)
    ap.add_argument("--cli", required=True)
    args = ap.parse_args()
    want = args.version
    problems = []

    text = open(args.header).read()
    parts = []
    for part in ("MAJOR", "MINOR", "MICRO"):
        m = re.search(rf"^#define PAGECACHE_VERSION_{part} (\d+)$", text, flags=re.M)
        parts.append(m.group(1) if m else "?")
    header = ".".join(parts)
    if header != want:
        problems.append(f"{args.header}: PAGECACHE_VERSION_* say {header}, meson.build says {want}")

    out = subprocess.run([args.cli, "--version"], stdout=subprocess.PIPE, text=True,
                         check=False).stdout.strip()
    m = re.fullmatch(r"pagecache (\S+) \(libpagecache (\S+)\)", out)
    if not m:
        problems.append(f"pagecache --version printed {out!r}")
    else:
        if m.group(1) != want:
            problems.append(f"pagecache --version says {m.group(1)}, meson.build says {want}")
        if m.group(2) != want:
            problems.append(f"pc_version() says {m.group(2)}, meson.build says {want}")

    skipped = False
    if not os.path.exists(args.changelog):
        print(f"SKIP: changelog: no {args.changelog}")
        skipped = True
    else:
        with open(args.changelog) as f:
            first = f.readline()
        m = re.match(r"^\S+ \(([^)]+)\)", first)
        if not m:
            problems.append(f"{args.changelog}: cannot read a version from {first.strip()!r}")
        else:
            full = m.group(1)
            upstream = full.split(":", 1)[-1].rsplit("-", 1)[0]
            if upstream != want:
                problems.append(f"{args.changelog}: upstream version {upstream} ({full}), "
                                f"meson.build says {want}")

    for p in problems:
        print(f"FAIL: {p}")
    if problems:
        return 1
    print(f"version {want}: header, pagecache --version, pc_version()"
          + ("" if skipped else " and debian/changelog") + " agree")
    return 77 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
