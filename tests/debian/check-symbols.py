# SPDX-License-Identifier: MIT
"""debian/*.symbols list what the version scripts export, node by node.

    check-symbols.py --map lib/libpagecache.sym --symbols debian/libpagecache0.symbols
                     [--map M --symbols S]...

The package build fails on a new or lost symbol (dpkg-gensymbols -c4); this
says so in a second, in every build, instead of at the end of a package
build: each global symbol of each version script, as NAME@NODE, and each
node itself, must be in the symbols file given with it, and nothing else.
The fix is `scripts/update-symbols.sh` (debian/README.source).

Exit status: 0 pass, 1 fail.
"""

import argparse
import re
import sys


def version_script(path):
    """{"name@NODE"} for the global symbols and the nodes of a version script."""
    text = re.sub(r"/\*.*?\*/", " ", open(path).read(), flags=re.S)
    text = re.sub(r"#[^\n]*", " ", text)
    out = set()
    for node, body in re.findall(r"([A-Za-z_][\w.]*)\s*\{(.*?)\}", text, flags=re.S):
        out.add(f"{node}@{node}")
        scope = "global"
        for tok in re.findall(r"[^\s;]+:|[^\s;]+", body):
            if tok.endswith(":"):
                scope = tok[:-1]
            elif scope == "global":
                out.add(f"{tok}@{node}")
    return out


def symbols_file(path):
    """{"name@NODE"} of a dpkg symbols file (its symbol lines start with a space)."""
    out = set()
    for line in open(path):
        if line.startswith(" "):
            out.add(line.split()[0])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--map", action="append", required=True)
    ap.add_argument("--symbols", action="append", required=True)
    args = ap.parse_args()
    if len(args.map) != len(args.symbols):
        ap.error("give one --symbols per --map")
    problems = 0
    for mapfile, symfile in zip(args.map, args.symbols):
        exported, listed = version_script(mapfile), symbols_file(symfile)
        for sym in sorted(exported - listed):
            print(f"FAIL: {sym} is exported ({mapfile}) but not in {symfile}")
            problems += 1
        for sym in sorted(listed - exported):
            print(f"FAIL: {sym} is in {symfile} but not exported ({mapfile})")
            problems += 1
        print(f"{symfile}: {len(listed)} symbols, {len(exported)} exported")
    if problems:
        print("run scripts/update-symbols.sh (debian/README.source, \"Symbols\")")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
