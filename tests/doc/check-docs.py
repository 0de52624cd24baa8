# SPDX-License-Identifier: MIT
"""Every exported function is documented, in the header and in a man page.

    check-docs.py --map lib/libpagecache.sym [--map ...] [--lib libpagecache.so ...]
                  --header H.h... --page PAGE... [--alias NAME=PAGE...]
                  [--lint-page PAGE...]

The exported functions are the version script's global symbols, plus what
`nm -D` shows in the built library (so an export that bypasses the list
is caught too). For each one:

  header    a /** ... */ comment right before its declaration in a public
            header, or one naming it right before a run of declarations
            that holds it (a grouped comment); with @since in it or in the
            header's opening comment.
  man page  `man NAME` finds a page: NAME.3 itself, or a symlink NAME.3
            (--alias NAME=PAGE) to a page; and that page's NAME section
            lists it.

The pages are checked too: every name in a NAME section is an exported
function and reachable (the page itself or an alias), every alias is in its
page's NAME section, every page in the pages' directory is installed, and
each page (and each --lint-page) formats with `groff -ww -man` without a
warning; mandoc -Tlint finds no warning in the --page pages.

Prints each problem on its own line. Exit status: 0 pass, 1 fail.
A missing groff or mandoc is reported as "SKIP: <case>: <why>".
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

PROBLEMS = []


def problem(msg):
    print(f"FAIL: {msg}")
    PROBLEMS.append(msg)


def skip(case, why):
    print(f"SKIP: {case}: {why}", flush=True)


# ---- the exported functions ----------------------------------------------------

def version_script_symbols(path):
    text = re.sub(r"/\*.*?\*/", " ", open(path, encoding="utf-8").read(), flags=re.S)
    text = re.sub(r"#[^\n]*", " ", text)
    symbols = set()
    for body in re.findall(r"\{(.*?)\}", text, flags=re.S):
        scope = "global"
        for tok in re.findall(r"[^\s;]+:|[^\s;]+", body):
            if tok.endswith(":"):
                scope = tok[:-1]
            elif scope == "global" and "*" not in tok:
                symbols.add(tok)
    return symbols


def library_symbols(path):
    nm = shutil.which("nm")
    if not nm:
        skip("nm", "nm not installed: checking the version script's symbols only")
        return set()
    out = subprocess.run([nm, "-D", "--defined-only", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, check=True).stdout
    symbols = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1] in ("T", "W", "i"):
            symbols.add(fields[2].split("@")[0])
    return symbols


# ---- doc comments in the headers -----------------------------------------------

COMMENT = re.compile(r"/\*.*?\*/", re.S)
PROTOTYPE = re.compile(r"^[\w\s\*]+?\b\w+\s*\([^;{}()]*\)\s*$", re.S)


class Header:
    def __init__(self, path):
        self.path = path
        self.text = open(path, encoding="utf-8").read()
        self.comments = [(m.start(), m.end(), m.group(0)) for m in COMMENT.finditer(self.text)]
        first = self.comments[1][2] if len(self.comments) > 1 else ""
        # the opening comment after the SPDX line describes the whole header
        self.since_all = "@since" in first and self.comments[1][0] < self.text.find("#ifndef")

    def in_comment(self, pos):
        return any(start <= pos < end for start, end, _ in self.comments)

    def declaration(self, name):
        """Start offset of name's declaration (outside comments), or None."""
        for m in re.finditer(r"\b%s\s*\(" % re.escape(name), self.text):
            if not self.in_comment(m.start()):
                return m.start()
        return None

    def doc_comment(self, name, pos):
        """The doc comment that documents the declaration at pos, or None."""
        before = [c for c in self.comments if c[1] <= pos]
        if not before:
            return None
        start, end, text = before[-1]
        if not text.startswith("/**"):
            return None
        # the declaration's own start: after the last ';' before pos
        gap = self.text[end:pos]
        own_start = gap.rfind(";") + 1
        between, own_type = gap[:own_start], gap[own_start:]
        if not re.fullmatch(r"[\w\s\*]*", own_type):
            return None
        if "\n\n" in re.sub(r"[ \t]+\n", "\n", gap):
            return None  # a blank line ends what a comment documents
        if not between.strip():
            return text  # right before its declaration
        # a grouped comment: only prototypes in between, and it names us
        if not all(PROTOTYPE.match(p.strip()) for p in between.split(";")[:-1]):
            return None
        if not re.search(r"\b%s\b" % re.escape(name), text):
            return None
        return text


def check_headers(symbols, headers):
    for name in sorted(symbols):
        found = [(h, h.declaration(name)) for h in headers]
        found = [(h, pos) for h, pos in found if pos is not None]
        if not found:
            problem(f"no declaration of {name} in the public headers")
            continue
        h, pos = found[0]
        doc = h.doc_comment(name, pos)
        if doc is None:
            problem(f"no doc comment for {name} in {h.path} "
                    "(a /** ... */ right before its declaration, or a grouped one naming it)")
        elif "@since" not in doc and not h.since_all:
            problem(f"{name}: its doc comment in {h.path} has no @since")


# ---- man pages -----------------------------------------------------------------

def roff_text(line):
    line = re.sub(r"\\f[BIRP]|\\f\(\w\w|\\&|\\c", "", line)
    return line.replace("\\-", "-").replace("\\e", "\\")


def name_section(path):
    """The names a page's NAME section lists."""
    lines = open(path, encoding="utf-8").read().splitlines()
    text, inside = [], False
    for line in lines:
        if line.startswith(".SH"):
            if inside:
                break
            inside = line.split(None, 1)[1:] == ["NAME"]
            continue
        if inside and not line.startswith('.\\"'):
            text.append(roff_text(line))
    joined = " ".join(text)
    names = joined.split(" - ", 1)[0]
    if " - " not in joined:
        problem(f"{path}: NAME section has no ' \\- ' separator")
    return [n.strip() for n in names.split(",") if n.strip()]


def check_pages(symbols, pages, aliases, lint_pages):
    by_name = {}
    page_names = {}
    for path in pages:
        base = os.path.basename(path)
        name, _, section = base.rpartition(".")
        by_name[(name, section)] = path
        page_names[path] = name_section(path)

    alias_to = {}
    for spec in aliases:
        name, _, target = spec.partition("=")
        tname, _, tsection = target.rpartition(".")
        path = by_name.get((tname, tsection))
        if path is None:
            problem(f"alias {name} points to {target}, which is not an installed page")
            continue
        alias_to[name] = path
        if name not in page_names[path]:
            problem(f"alias {name} -> {target}: {target}'s NAME section does not list {name}")

    for name in sorted(symbols):
        path = by_name.get((name, "3")) or alias_to.get(name)
        if path is None:
            problem(f"no man page for {name} (no {name}.3 and no alias {name}=PAGE)")
        elif name not in page_names[path]:
            problem(f"no man page for {name}: {os.path.basename(path)} is found for it "
                    "but its NAME section does not list it")

    for path, names in page_names.items():
        base = os.path.basename(path)
        own = base.rpartition(".")[0]
        for name in names:
            if base.endswith(".3") and name not in symbols:
                problem(f"{base}: NAME lists {name}, which the library does not export")
            if name != own and alias_to.get(name) != path:
                problem(f"{base}: NAME lists {name}, but `man {name}` would not find "
                        f"this page (add the alias {name}={base})")

    # every page in the directory is installed
    for d in sorted({os.path.dirname(p) for p in pages}):
        for f in sorted(os.listdir(d)):
            if re.fullmatch(r".+\.[1-8]", f) and os.path.join(d, f) not in pages:
                problem(f"{os.path.join(d, f)} is not in the installed pages (doc/man/meson.build)")

    groff = shutil.which("groff")
    if not groff:
        skip("groff", "groff not installed (Debian: groff-base)")
    else:
        for path in list(pages) + list(lint_pages):
            res = subprocess.run([groff, "-ww", "-man", "-Tutf8", "-z", path],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if res.returncode != 0 or res.stderr.strip():
                problem(f"{path}: groff -ww -man warns:\n{res.stderr.rstrip()}")

    mandoc = shutil.which("mandoc")
    if not mandoc:
        skip("mandoc", "mandoc not installed")
    else:
        for path in pages:
            res = subprocess.run([mandoc, "-Tlint", "-W", "warning", path],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out = (res.stdout + res.stderr).strip()
            if res.returncode != 0 or out:
                problem(f"{path}: mandoc -Tlint warns:\n{out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--map", action="append", required=True)
    ap.add_argument("--lib", action="append", default=[])
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--page", action="append", default=[])
    ap.add_argument("--alias", action="append", default=[])
    ap.add_argument("--lint-page", action="append", default=[])
    args = ap.parse_args()

    symbols = set()
    for path in args.map:
        listed = version_script_symbols(path)
        if not listed:
            problem(f"{path}: no global symbols")
        symbols |= listed
    for lib in args.lib:
        extra = library_symbols(lib) - symbols
        for name in sorted(extra):
            print(f"note: {name} is exported by {lib} but in no version script")
        symbols |= extra
    print(f"{len(symbols)} exported functions, {len(args.header)} headers, "
          f"{len(args.page)} pages, {len(args.alias)} aliases")

    check_headers(symbols, [Header(h) for h in args.header])
    check_pages(symbols, [os.path.abspath(p) for p in args.page], args.alias,
                args.lint_page)

    if PROBLEMS:
        print(f"{len(PROBLEMS)} problem(s)")
        return 1
    print("all documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
