#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every file descriptor the library and the command create is close-on-exec.

libpagecache runs inside threaded programs that fork and exec: an fd made
without O_CLOEXEC in one thread leaks into a child another thread starts.
This check reads the C sources (*.c, *.h) under the directories given
(lib/, tools/, examples/ from meson) and fails on any call that creates an
fd without asking for close-on-exec in the call itself:

  open, openat                 O_CLOEXEC among the flags
  struct open_how (openat2)    O_CLOEXEC in .flags (initialiser or assignment)
  fopen, freopen, popen        "e" in a literal mode string
  memfd_create                 MFD_CLOEXEC
  socket, socketpair, accept4  SOCK_CLOEXEC
  pipe2, dup3                  O_CLOEXEC
  fcntl(..., F_DUPFD, ...)     use F_DUPFD_CLOEXEC
  eventfd / signalfd /         EFD_CLOEXEC / SFD_CLOEXEC /
  timerfd_create / inotify_init1 / epoll_create1
                               TFD_CLOEXEC / IN_CLOEXEC / EPOLL_CLOEXEC
  pipe, dup, dup2, accept, mkstemp, mkstemps, tmpfile, inotify_init,
  epoll_create                 never: they cannot ask (use pipe2, dup3 or
                               F_DUPFD_CLOEXEC, accept4, mkostemp, ...)

The heuristic, and its limits: comments are ignored and string literals are
not searched for calls; a call is the name (not after "." or "->", not part
of a longer name) followed by "(", up to its matching ")", across lines. The
flag must appear literally in the call's text: flags built in a variable or
a helper do not count, so write `open(p, flags | O_CLOEXEC)` even when
flags has it already. Calls through syscall() are not seen, except openat2's
struct open_how. io_uring_queue_init (the kernel always sets close-on-exec
on a ring) and opendir (glibc opens it O_CLOEXEC) are not checked.

An exception is written on a line of the call itself:
    fd = open(path, O_RDONLY); /* no-cloexec: handed to the child on purpose */
The reason must not be empty.

Usage: check-cloexec.py DIR...    (exit 0: clean, 1: findings)
       check-cloexec.py --self-test
Each run starts with the self-test (known good and bad lines), so a broken
pattern fails loudly instead of passing everything."""

import os
import re
import sys

# name -> the token that must appear in the call ("" = never acceptable)
NEEDS = {
    "open": "O_CLOEXEC",
    "openat": "O_CLOEXEC",
    "open64": "O_CLOEXEC",
    "openat64": "O_CLOEXEC",
    "memfd_create": "MFD_CLOEXEC",
    "socket": "SOCK_CLOEXEC",
    "socketpair": "SOCK_CLOEXEC",
    "accept4": "SOCK_CLOEXEC",
    "pipe2": "O_CLOEXEC",
    "dup3": "O_CLOEXEC",
    "eventfd": "EFD_CLOEXEC",
    "signalfd": "SFD_CLOEXEC",
    "timerfd_create": "TFD_CLOEXEC",
    "inotify_init1": "IN_CLOEXEC",
    "epoll_create1": "EPOLL_CLOEXEC",
    "pipe": "",
    "dup": "",
    "dup2": "",
    "accept": "",
    "mkstemp": "",
    "mkstemps": "",
    "tmpfile": "",
    "inotify_init": "",
    "epoll_create": "",
}
MODE_CALLS = {"fopen": 1, "freopen": 1, "popen": 1}  # name -> index of the mode argument
NAMES = sorted(set(NEEDS) | set(MODE_CALLS) | {"fcntl"}, key=len, reverse=True)
CALL_RE = re.compile(r"(?<![\w.>])(" + "|".join(NAMES) + r")\s*\(")
EXCEPTION_RE = re.compile(r"/\*\s*no-cloexec:\s*\S[^*]*\*/")
HOW_DECL_RE = re.compile(r"struct\s+open_how\s+(\w+)\s*(=\s*\{)?")


def mask(text):
    """text with comments blanked and string/char literal contents blanked
    (quotes kept), offsets and newlines preserved."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def close_paren(masked, start):
    """Index of the ")" matching the "(" at start, or -1."""
    depth = 0
    for i in range(start, len(masked)):
        if masked[i] == "(":
            depth += 1
        elif masked[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def split_args(masked, lo, hi):
    """Top-level comma positions of the argument list masked[lo:hi]."""
    depth, cuts = 0, [lo]
    for i in range(lo, hi):
        if masked[i] in "([{":
            depth += 1
        elif masked[i] in ")]}":
            depth -= 1
        elif masked[i] == "," and depth == 0:
            cuts.append(i + 1)
    cuts.append(hi + 1)
    return [(cuts[k], cuts[k + 1] - 1) for k in range(len(cuts) - 1)]


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def excepted(text, lo, hi):
    """A no-cloexec comment on any line the span [lo, hi] touches."""
    a = text.rfind("\n", 0, lo) + 1
    b = text.find("\n", hi)
    b = len(text) if b < 0 else b
    return EXCEPTION_RE.search(text[a:b]) is not None


def check_text(text):
    """[(line, message)] for one file's text."""
    masked = mask(text)
    found = []
    for m in CALL_RE.finditer(masked):
        name, lparen = m.group(1), m.end() - 1
        rparen = close_paren(masked, lparen)
        if rparen < 0:
            continue
        call_masked = masked[m.start():rparen + 1]
        call_text = text[m.start():rparen + 1]
        if excepted(text, m.start(), rparen):
            continue
        line = line_of(text, m.start())
        if name == "fcntl":
            if re.search(r"\bF_DUPFD\b", call_masked):
                found.append((line, "fcntl(F_DUPFD) without close-on-exec: use F_DUPFD_CLOEXEC"))
        elif name in MODE_CALLS:
            args = split_args(masked, lparen + 1, rparen)
            idx = MODE_CALLS[name]
            if len(args) <= idx:
                continue
            a, b = args[idx]
            mode = text[a:b].strip()
            lit = re.fullmatch(r'"([^"\\]*)"', mode)
            if not lit:
                found.append((line, f"{name}() with a mode that is not a literal: cannot see \"e\""))
            elif "e" not in lit.group(1):
                found.append((line, f"{name}() mode \"{lit.group(1)}\" lacks \"e\" (O_CLOEXEC)"))
        else:
            need = NEEDS[name]
            if not need:
                found.append((line, f"{name}() cannot set close-on-exec: use a *_CLOEXEC variant"))
            elif not re.search(r"\b" + need + r"\b", call_masked):
                found.append((line, f"{name}() without {need}: " +
                              " ".join(call_text.split())[:100]))
    # openat2: struct open_how initialisers and .flags assignments
    for m in HOW_DECL_RE.finditer(masked):
        var = m.group(1)
        if m.group(2):
            lbrace = m.end() - 1
            depth = 0
            for end in range(lbrace, len(masked)):
                depth += masked[end] == "{"
                depth -= masked[end] == "}"
                if depth == 0:
                    break
            init = masked[lbrace:end + 1]
            fl = re.search(r"\.flags\s*=\s*([^,}]*)", init)
            if not excepted(text, m.start(), end) and (not fl or "O_CLOEXEC" not in fl.group(1)):
                found.append((line_of(text, m.start()),
                              f"struct open_how {var}: .flags without O_CLOEXEC"))
        for a in re.finditer(r"\b" + re.escape(var) + r"\s*(\.|->)\s*flags\s*=([^;]*);", masked):
            if "O_CLOEXEC" not in a.group(2) and not excepted(text, a.start(), a.end()):
                found.append((line_of(text, a.start()),
                              f"{var}.flags set without O_CLOEXEC"))
    return sorted(set(found))


# (source, how many findings it must give)
SELF_TEST = [
    ('fd = open(p, O_RDONLY | O_CLOEXEC);', 0),
    ('fd = open(p, O_RDONLY);', 1),
    ('fd = openat(d, n,\n\t    O_RDONLY |\n\t    O_NONBLOCK);', 1),
    ('fd = openat(d, n,\n\t    O_RDONLY |\n\t    O_CLOEXEC);', 0),
    ('/* open(p, O_RDONLY) in a comment */ x = 1;', 0),
    ('puts("open(p, O_RDONLY)");', 0),
    ('f = fopen(p, "r");', 1),
    ('f = fopen(p, "re");', 0),
    ('f = fopen(p, mode);', 1),
    ('fd = memfd_create("x", 0);', 1),
    ('fd = memfd_create("x", MFD_CLOEXEC);', 0),
    ('s = socket(AF_UNIX, SOCK_STREAM, 0);', 1),
    ('s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);', 0),
    ('pipe(p);', 1),
    ('pipe2(p, O_CLOEXEC);', 0),
    ('fd2 = dup(fd);', 1),
    ('fd2 = fcntl(fd, F_DUPFD, 0);', 1),
    ('fd2 = fcntl(fd, F_DUPFD_CLOEXEC, 0);', 0),
    ('fd = mkstemp(t);', 1),
    ('b->ops->open(b, f); x.open(y); pcm_open(t); open_flags(w);', 0),
    ('fd = open(p, O_RDONLY); /* no-cloexec: inherited by the child on purpose */', 0),
    ('fd = open(p, O_RDONLY); /* no-cloexec: */', 1),
    ('fd = open(p, O_RDONLY | (x ? O_DIRECTORY : 0) | O_CLOEXEC);', 0),
    ('struct open_how how = { .flags = O_RDONLY | O_CLOEXEC, .resolve = R };', 0),
    ('struct open_how how = { .flags = O_RDONLY, .resolve = R };', 1),
    ('struct open_how how;\nhow.flags = O_RDONLY;', 1),
    ('struct open_how how;\nhow.flags = O_RDONLY | O_CLOEXEC;', 0),
]


def self_test():
    bad = 0
    for src, want in SELF_TEST:
        got = check_text("void f(void)\n{\n" + src + "\n}\n")
        if len(got) != want:
            print(f"check-cloexec self-test: {src!r}: {len(got)} findings, want {want}: {got}")
            bad += 1
    return bad == 0


def sources(dirs):
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            subdirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(root, f)


def main(argv):
    if not self_test():
        return 1
    if argv == ["--self-test"]:
        print(f"check-cloexec: self-test passed ({len(SELF_TEST)} snippets)")
        return 0
    if not argv:
        print(__doc__)
        return 2
    findings, files = 0, 0
    for path in sources(argv):
        files += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for line, msg in check_text(text):
            print(f"{path}:{line}: {msg}")
            findings += 1
    print(f"check-cloexec: {files} files, {findings} findings")
    return 1 if findings or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
