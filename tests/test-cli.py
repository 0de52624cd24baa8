#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of the pagecache command (tools/pagecache), run against the built
binary: the walk (FIFOs, sockets, symlinks, hard links, odd names, deep
trees), the text and JSON output field by field, agreement with mincore as
root, the unknown answer as uid 65534, exit codes and every stat option.

Usage: test-cli.py PATH-TO-pagecache
Prints one line per case; "SKIP: case: why" for a case that cannot run here.
Exits 0 when all ran cases passed, 1 on a failure, 77 when nothing can run.
Under PC_UNDER_VALGRIND=1 every pagecache run goes through valgrind."""

import pc_unvalgrind  # noqa: F401 (first: leaves valgrind, see the module)
import pc_cases
from pc_cases import Failure, Skip, check, mincore, only_cases, run_cases, tmpfs
import base64
import json
import os
import re
import socket
import stat
import subprocess
import sys

EXE = None
PS = os.sysconf("SC_PAGE_SIZE")
TIMEOUT = 60
NOBODY = 65534
IS_ROOT = os.geteuid() == 0
UNDER_VALGRIND = os.environ.get("PC_UNDER_VALGRIND") == "1"
VALGRIND = ["valgrind", "--error-exitcode=3", "--leak-check=full",
            "--errors-for-leak-kinds=definite", "--quiet",
            "--suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "valgrind.supp")]

def run(args, as_nobody=False, stdin=None, input_bytes=None):
    """Run pagecache with args; returns (rc, stdout bytes, stderr bytes)."""
    cmd = [EXE] + args
    if UNDER_VALGRIND:
        cmd = VALGRIND + cmd
    if as_nobody:
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] + cmd
    p = subprocess.run(cmd, stdin=stdin, input=input_bytes, capture_output=True,
                       timeout=TIMEOUT * (10 if UNDER_VALGRIND else 1))
    err = p.stderr
    if UNDER_VALGRIND:
        check(p.returncode != 3, "valgrind found errors:\n" + err.decode(errors="replace"))
        # valgrind's own warnings (cachestat is unknown to it) are not ours;
        # one can land inside a line of ours when another thread makes the
        # call while a message is being written
        err = re.sub(rb"(--|==)[0-9]+(--|==) [^\n]*\n", b"", err)
        err = b"".join(l for l in err.splitlines(keepends=True)
                       if not l.startswith(b"--") and not l.startswith(b"=="))
    return p.returncode, p.stdout, err


def run_json(args, **kw):
    check(args[0] == "stat", "run_json wants a stat command line")
    rc, out, err = run(["stat", "--json"] + args[1:], **kw)
    try:
        doc = json.loads(out)
    except ValueError as e:
        raise Failure(f"output is not JSON ({e}): {out[:500]!r}")
    return rc, doc, err


def make_file(path, npages, mode=0o644, uid=None):
    with open(path, "wb") as f:
        f.write(bytes([0x5a]) * (npages * PS))
        f.flush()
        os.fsync(f.fileno())
    os.chmod(path, mode)
    if uid is not None:
        os.chown(path, uid, uid)


def set_pattern(path, pages):
    """Evict the whole file, then read the listed pages one by one through a
    POSIX_FADV_RANDOM fd (doc/kernels.md section 7)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        for p in pages:
            os.pread(fd, 1, p * PS)
    finally:
        os.close(fd)


def runs_of(vec):
    runs, i = [], 0
    while i < len(vec):
        if vec[i]:
            j = i
            while j < len(vec) and vec[j]:
                j += 1
            runs.append([i, j - i])
            i = j
        else:
            i += 1
    return runs


def stable_mincore(path, measure):
    """Call measure() between two mincore snapshots; retry until they agree,
    so background reclaim cannot make the comparison flaky.
    Under valgrind the snapshot after counts: valgrind reads the first bytes
    of every file the program maps (looking for debug info), which brings
    the first pages in before the measurement."""
    for _ in range(5):
        before = mincore(path)
        result = measure()
        after = mincore(path)
        if before == after or UNDER_VALGRIND:
            return after, result
    raise Failure(f"{path}: residency kept changing under the test")


# ---------------------------------------------------------------------------


class Env(pc_cases.Env):
    PREFIX = "pc-test-cli."


ODD_NEWLINE = b"new\nline"
ODD_BADUTF8 = b"bad\xff\xfename"
ODD_SPACE = b"with space"


def make_tree(env):
    """tree/: regular files (one with odd names), a FIFO, a socket, a symlink,
    a hard link. Returns the tree's path."""
    t = env.path("tree")
    os.makedirs(os.path.join(t, "sub", "deeper"))
    make_file(os.path.join(t, "a"), 8)
    make_file(os.path.join(t, "sub", "b"), 3)
    make_file(os.path.join(t, "sub", "deeper", "c"), 1)
    with open(os.path.join(t, "empty"), "wb"):
        pass
    for name in (ODD_NEWLINE, ODD_BADUTF8, ODD_SPACE):
        with open(os.path.join(os.fsencode(t), name), "wb") as f:
            f.write(b"x" * 5000)
    os.mkfifo(os.path.join(t, "fifo"))
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(t, "sock"))
    s.close()
    os.symlink("a", os.path.join(t, "link"))
    os.link(os.path.join(t, "a"), os.path.join(t, "sub", "hardlink-to-a"))
    return t


def tree_files(t):
    """Regular files in the tree as the CLI should count them: bytes path ->
    stat, hard links once."""
    seen, files = set(), {}
    for root, dirs, names in os.walk(os.fsencode(t)):
        for n in names:
            p = os.path.join(root, n)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                files[p] = st
    return files


# ---- cases ----------------------------------------------------------------

def case_help(env):
    rc, out, _ = run(["--help"])
    check(rc == 0 and b"stat" in out, f"pagecache --help: rc {rc}")
    rc, out, _ = run(["stat", "--help"])
    check(rc == 0 and b"--json" in out and b"--allow-perturb" in out,
          f"pagecache stat --help: rc {rc}")
    rc, out, _ = run(["--version"])
    check(rc == 0 and out.startswith(b"pagecache "), f"--version: rc {rc}")


def case_usage_errors_exit_2(env):
    for args in ([], ["stat"], ["nosuchcommand"], ["stat", "--bogus", env.dir],
                 ["stat", "--json", "--ndjson", env.dir], ["stat", "--bytes", "--pages", env.dir],
                 ["stat", "--sort", "color", env.dir], ["stat", "--top", "0", env.dir],
                 ["stat", "--top", "x", env.dir], ["stat", "--max-size", "12Q", env.dir],
                 ["stat", "-0", env.dir], ["stat", "--top"]):
        rc, out, err = run(args)
        check(rc == 2, f"{args}: exit {rc}, want 2")
        check(err, f"{args}: no message on stderr")


def case_tree_text(env):
    t = make_tree(env)
    rc, out, err = run(["stat", t])
    check(rc == 0, f"exit {rc}: {err!r}")
    lines = out.split(b"\n")
    check(lines[-1] == b"", "output does not end with a newline")
    lines = lines[:-1]
    files = tree_files(t)
    # header + one line per file + totals: a newline in a name adds no line
    check(lines[0].split()[0] == b"SIZE", f"header: {lines[0]!r}")
    check(len(lines) == 1 + len(files) + 1, f"{len(lines)} lines for {len(files)} files:\n{out!r}")
    check(any(l.endswith(b"/new\\nline") for l in lines), "newline not escaped as \\n")
    check(any(l.endswith(b"/bad\\xff\\xfename") for l in lines), "invalid UTF-8 not escaped")
    check(any(l.endswith(b"/with space") for l in lines), "space mangled")
    check(lines[-1].startswith(b"total: %d files" % len(files)), f"totals: {lines[-1]!r}")
    # the hard link is counted once: only one of its two names shows
    check(sum(l.endswith(b"/a") or l.endswith(b"/hardlink-to-a") for l in lines) == 1,
          "hard link counted twice")
    for what in (b"fifo: skipped", b"sock: skipped", b"link: skipped"):
        check(what in err, f"no note for {what!r}: {err!r}")
    for l in err.split(b"\n")[:-1]:
        check(l.startswith(b"pagecache: "), f"stderr line: {l!r}")
    # -q silences the notes
    rc, out, err = run(["stat", "-q", t])
    check(rc == 0 and err == b"", f"-q: rc {rc} stderr {err!r}")


def check_file_obj(f, expect_path, st):
    check(isinstance(f["path"], str), "path not a string")
    size = st.st_size
    check(f["size"] == size, f"{expect_path!r}: size {f['size']} != {size}")
    check(f["pages"] == (size + PS - 1) // PS, f"{expect_path!r}: pages {f['pages']}")
    check(f["file_type"] == "regular", "file_type")
    check(f["quality"] == "exact", f"{expect_path!r}: quality {f['quality']}")
    check(f["source"] in ("cachestat", "mincore", "none"), f"source {f['source']}")
    check(f["source"] != "none" or f["pages"] == 0, "source none for a non-empty file")
    check(isinstance(f["resident_pages"], int) and 0 <= f["resident_pages"] <= f["pages"],
          f"resident_pages {f['resident_pages']}")
    check(f["resident_bytes"] == f["resident_pages"] * PS, "resident_bytes")
    want_pct = 100.0 * f["resident_pages"] / f["pages"] if f["pages"] else 0.0
    check(abs(f["percent"] - want_pct) < 0.01, f"percent {f['percent']} vs {want_pct}")
    check(f["perturbed"] is False, "perturbed without --allow-perturb")


def case_tree_json(env):
    t = make_tree(env)
    rc, doc, err = run_json(["stat", t])
    check(rc == 0, f"exit {rc}: {err!r}")
    check(doc["format_version"] == 1, "format_version")
    k = doc["kernel"]
    check(isinstance(k["mincore"], str) and isinstance(k["cachestat"], str), "kernel modes")
    check(isinstance(k["io_uring"], bool), "kernel.io_uring")
    check(k["page_size"] == PS, "kernel.page_size")
    files = tree_files(t)
    got = {}
    for f in doc["files"]:
        p = base64.b64decode(f["path_base64"]) if "path_base64" in f else f["path"].encode()
        check(p not in got, f"{p!r} listed twice")
        got[p] = f
    want = set(files)
    # a hard link may show under either name
    a, h = os.path.join(os.fsencode(t), b"a"), os.path.join(os.fsencode(t), b"sub", b"hardlink-to-a")
    if h in got and a in want:
        want = (want - {a}) | {h}
    check(set(got) == want, f"files {sorted(got)} != {sorted(want)}")
    for p, f in got.items():
        check_file_obj(f, p, os.stat(p))
    bad = os.path.join(os.fsencode(t), ODD_BADUTF8)
    check("path_base64" in got[bad], "no path_base64 for invalid UTF-8")
    check("\ufffd" in got[bad]["path"], "no U+FFFD in path")
    nl = os.path.join(os.fsencode(t), ODD_NEWLINE)
    check(got[nl]["path"] == os.fsdecode(nl) and "path_base64" not in got[nl], "newline path")
    tot = doc["totals"]
    check(tot["files"] == len(got) == tot["known_files"], "totals.files")
    check(tot["unknown_files"] == 0 and tot["errors"] == 0, "totals unknown/errors")
    check(tot["size"] == sum(f["size"] for f in got.values()), "totals.size")
    check(tot["pages"] == sum(f["pages"] for f in got.values()), "totals.pages")
    check(tot["resident_pages"] == sum(f["resident_pages"] for f in got.values()),
          "totals.resident_pages")
    check(tot["skipped"] == 4 and len(doc["skipped"]) == 4, f"skipped {doc['skipped']}")
    reasons = {os.path.basename(s["path"]): s["reason"] for s in doc["skipped"]}
    check("FIFO" in reasons.get("fifo", ""), "fifo reason")
    check("socket" in reasons.get("sock", ""), "socket reason")
    check("symlink" in reasons.get("link", ""), "symlink reason")
    check(doc["errors"] == [], "errors")


def case_ndjson(env):
    t = make_tree(env)
    rc, out, err = run(["stat", "--ndjson", t])
    check(rc == 0, f"exit {rc}")
    objs = [json.loads(l) for l in out.decode().split("\n") if l]
    check(objs[0]["type"] == "kernel" and objs[0]["format_version"] == 1, "first line")
    check(objs[-1]["type"] == "totals", "last line")
    nfiles = sum(o["type"] == "file" for o in objs)
    check(nfiles == len(tree_files(t)) == objs[-1]["files"], "file lines")
    check(sum(o["type"] == "skipped" for o in objs) == 4, "skipped lines")


def case_fifo_named_does_not_hang(env):
    fifo = env.path("lonely-fifo")
    os.mkfifo(fifo)
    rc, out, err = run(["stat", fifo])  # times out (and fails) if it opens it
    check(rc == 0, f"exit {rc}")
    check(b"FIFO" in err, f"no note: {err!r}")


def need_root():
    if not IS_ROOT:
        raise Skip("needs root (mincore is the truth only for a caller the gate lets through)")


def nowait_clean(path):
    return pc_cases.nowait_clean(EXE, path, TIMEOUT)


def case_counts_agree_with_mincore(env):
    need_root()
    p = env.path("pattern")
    make_file(p, 64)
    pages = [0, 9, 20, 41, 63]
    for flags in ([], ["--map"]):
        set_pattern(p, pages)
        vec, (rc, doc, err) = stable_mincore(p, lambda: run_json(["stat"] + flags + [p]))
        check(rc == 0, f"exit {rc}")
        n = sum(vec)
        check(0 < n < 64, f"pattern did not hold: mincore says {n}/64")
        f = doc["files"][0]
        check(f["resident_pages"] == n, f"{flags}: resident {f['resident_pages']} != mincore {n}")
        check(f["quality"] == "exact", "quality")
        if flags:
            check(f["resident_runs"] == runs_of(vec),
                  f"runs {f['resident_runs']} != mincore {runs_of(vec)}")
    # text with --pages shows the same count
    set_pattern(p, pages)
    vec, (rc, out, err) = stable_mincore(p, lambda: run(["stat", "--pages", p]))
    row = out.split(b"\n")[1].split()
    check(row[1] == str(sum(vec)).encode() and row[3] == b"%d/64" % sum(vec), f"row {row}")
    # fully cached and fully evicted
    with open(p, "rb") as f:
        f.read()
    vec, (rc, doc, err) = stable_mincore(p, lambda: run_json(["stat", p]))
    check(doc["files"][0]["resident_pages"] == sum(vec), "fully cached")
    set_pattern(p, [])
    vec, (rc, doc, err) = stable_mincore(p, lambda: run_json(["stat", p]))
    check(doc["files"][0]["resident_pages"] == sum(vec), "evicted")
    check(sum(vec) == 0 or UNDER_VALGRIND, "eviction did not hold")


def case_map_text(env):
    need_root()
    p = env.path("mapped")
    make_file(p, 40)
    set_pattern(p, list(range(0, 10)))
    vec, (rc, out, err) = stable_mincore(p, lambda: run(["stat", "--map", p]))
    check(rc == 0, f"exit {rc}")
    line = out.split(b"\n")[2]
    check(line.startswith(b"  [") and line.endswith(b"]"), f"map line {line!r}")
    drawn = line[3:-1]
    check(len(drawn) == 40, f"one char per page for a 40-page file: {drawn!r}")
    want = b"".join(b"O" if v else b" " for v in vec)
    check(drawn == want, f"map {drawn!r} != mincore {want!r}")


def case_nobody_gets_unknown(env):
    need_root()
    p = env.path("root-owned")
    make_file(p, 32, 0o644, uid=0)
    set_pattern(p, list(range(0, 15)))
    check(0 < sum(mincore(p)) < 32, "pattern did not hold")
    rc, out, err = run(["stat", p], as_nobody=True)
    check(rc == 0, f"exit {rc}: {err!r}")
    if nowait_clean(p):
        # a clean RWF_NOWAIT probe answers for it, exactly
        rc, doc, err = run_json(["stat", p], as_nobody=True)
        f = doc["files"][0]
        check(f["quality"] == "exact" and f["resident_pages"] == sum(mincore(p)) == 15,
              f"clean NOWAIT: {f}")
        return
    row = out.split(b"\n")[1].split()
    check(row[1] == b"?" and row[2] == b"?" and row[3] == b"?/32", f"numbers shown: {row}")
    check(row[4] == b"unknown", f"quality {row[4]!r}")
    check(b"100.0" not in out.split(b"\n")[1], "a fake 100%")
    check(b"1 unknown" in out, "totals do not count the unknown file")
    rc, doc, err = run_json(["stat", p], as_nobody=True)
    f = doc["files"][0]
    check(f["resident_pages"] is None and f["percent"] is None, f"numbers in JSON: {f}")
    check(f["quality"] == "unknown" and f["source"] == "none", f"labels {f}")
    check(f["pages"] == 32 and f["size"] == 32 * PS, "size and pages are known")
    check(doc["totals"]["unknown_files"] == 1 and doc["totals"]["known_files"] == 0, "totals")
    check(doc["totals"]["percent"] is None, "totals.percent")
    # --stats shows nothing for it either
    rc, doc, err = run_json(["stat", "--stats", p], as_nobody=True)
    check(doc["files"][0]["cachestat"] is None, "cachestat numbers for a hidden file")
    # a file uid 65534 owns is exact for it
    q = env.path("nobody-owned")
    make_file(q, 16, 0o644, uid=NOBODY)
    set_pattern(q, [1, 7, 12])
    vec, (rc, doc, err) = stable_mincore(q, lambda: run_json(["stat", q], as_nobody=True))
    f = doc["files"][0]
    check(f["quality"] == "exact" and f["resident_pages"] == sum(vec), f"owned file: {f}")


def case_allow_perturb(env):
    need_root()
    p = env.path("perturb")
    make_file(p, 32, 0o644, uid=0)
    set_pattern(p, [3, 17, 30])
    before = mincore(p)
    rc, doc, err = run_json(["stat", "--allow-perturb", p], as_nobody=True)
    check(rc == 0, f"exit {rc}")
    f = doc["files"][0]
    if f["quality"] == "unknown":
        raise Skip("no RWF_NOWAIT probe on this filesystem")
    check(f["source"] in ("io_uring", "preadv2"), f"source {f['source']}")
    if UNDER_VALGRIND:  # valgrind's own read of the first pages (see stable_mincore)
        check(f["resident_pages"] >= sum(before), f"probe {f['resident_pages']} < {sum(before)}")
    else:
        check(f["resident_pages"] == sum(before),
              f"probe {f['resident_pages']} != {sum(before)}")
    check(isinstance(f["perturbed"], bool), "perturbed")
    check(doc["totals"]["perturbed_files"] == int(f["perturbed"]), "totals.perturbed_files")
    rc, out, err = run(["stat", "--allow-perturb", p], as_nobody=True)
    check(b"PERTURBED" in out.split(b"\n")[0], "no PERTURBED column")


def case_errors_exit_1(env):
    good = env.path("good")
    make_file(good, 2)
    rc, out, err = run(["stat", env.path("missing"), good])
    check(rc == 1, f"exit {rc}, want 1")
    check(out.count(b"\n") == 3, f"the good file is not listed: {out!r}")
    lines = err.decode().splitlines()
    check(lines == [f"pagecache: {env.path('missing')}: No such file or directory"], f"{lines}")
    rc, doc, err = run_json(["stat", env.path("missing"), good])
    check(rc == 1 and doc["totals"]["errors"] == 1 and len(doc["errors"]) == 1, "JSON errors")
    check(doc["errors"][0]["errno"] == 2, "errno")
    if IS_ROOT:
        d = env.path("locked")
        os.mkdir(d, 0o700)
        make_file(os.path.join(d, "x"), 1)
        secret = env.path("secret")
        make_file(secret, 1, 0o600)
        rc, out, err = run(["stat", d, secret, good], as_nobody=True)
        check(rc == 1, f"as nobody: exit {rc}")
        check(len(err.decode().splitlines()) == 2, f"two error lines: {err!r}")
        check(b"Permission denied" in err, "reason")


def case_deep_tree(env):
    # deeper than the walk's fd budget and longer than PATH_MAX
    top = env.path("deep")
    os.mkdir(top)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    name = "d" * 30
    depth = 300
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        # a file on the way down too
        wfd = os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(wfd, b"y" * 10)
        os.close(wfd)
        os.close(fd)
        fd = nfd
    wfd = os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(wfd, b"z" * 3 * PS)
    os.close(wfd)
    os.close(fd)
    rc, doc, err = run_json(["stat", top])
    check(rc == 0, f"exit {rc}: {err[:300]!r}")
    check(doc["totals"]["files"] == depth + 1, f"files {doc['totals']['files']}")
    bottom = [f for f in doc["files"] if f["path"].endswith("/bottom")]
    check(len(bottom) == 1, "bottom file missing")
    want = top + ("/" + name) * depth + "/bottom"
    check(bottom[0]["path"] == want and bottom[0]["pages"] == 3, "bottom path")


def case_top_and_sort(env):
    d = env.path("ranked")
    os.mkdir(d)
    sizes = {"p1": 1, "p5": 5, "p3": 3, "p8": 8, "p2": 2}
    for n, k in sizes.items():
        make_file(os.path.join(d, n), k)
        with open(os.path.join(d, n), "rb") as f:
            f.read()
    rc, doc, err = run_json(["stat", "--sort", "name", d])
    names = [os.path.basename(f["path"]) for f in doc["files"]]
    check(names == sorted(sizes), f"--sort name: {names}")
    rc, doc, err = run_json(["stat", "--sort", "size", d])
    names = [os.path.basename(f["path"]) for f in doc["files"]]
    check(names == ["p8", "p5", "p3", "p2", "p1"], f"--sort size: {names}")
    if IS_ROOT:
        set_pattern(os.path.join(d, "p8"), [0])        # 1/8 resident
        set_pattern(os.path.join(d, "p5"), [0, 1, 2])  # 3/5
        rc, doc, err = run_json(["stat", "--sort", "resident", d])
        res = [f["resident_pages"] for f in doc["files"]]
        check(res == sorted(res, reverse=True), f"--sort resident: {res}")
        rc, doc, err = run_json(["stat", "--sort", "percent", d])
        pct = [f["percent"] for f in doc["files"]]
        check(pct == sorted(pct, reverse=True), f"--sort percent: {pct}")
        rc, doc, err = run_json(["stat", "--top", "2", d])
        all_res = sorted((f["resident_pages"] for f in run_json(["stat", d])[1]["files"]),
                         reverse=True)
        res = [f["resident_pages"] for f in doc["files"]]
        check(res == all_res[:2], f"--top 2: {res} of {all_res}")
        check(doc["totals"]["files"] == 5, "--top totals cover every file")
        rc, out, err = run(["stat", "--top", "2", d])
        check(out.count(b"\n") == 1 + 2 + 1, f"--top 2 text: {out!r}")


def case_filters(env):
    d = env.path("filters")
    os.makedirs(os.path.join(d, "skipme"))
    os.makedirs(os.path.join(d, "keep"))
    for p in ("x.log", "y.txt", "keep/z.log", "skipme/w.log"):
        make_file(os.path.join(d, p), 1)
    make_file(os.path.join(d, "big.log"), 10)

    def names(args):
        rc, doc, err = run_json(["stat", "-q"] + args + [d])
        check(rc == 0, f"{args}: exit {rc}")
        return sorted(os.path.relpath(f["path"], d) for f in doc["files"]), doc

    got, _ = names(["--include", "*.log"])
    check(got == ["big.log", "keep/z.log", "skipme/w.log", "x.log"], f"--include: {got}")
    got, _ = names(["--include", "*.log", "--exclude", "skipme"])
    check(got == ["big.log", "keep/z.log", "x.log"], f"--exclude dir: {got}")
    got, _ = names(["--exclude", "*/keep/*"])
    check("keep/z.log" not in got and "x.log" in got, f"--exclude path glob: {got}")
    got, doc = names(["--max-size", str(4 * PS)])
    check("big.log" not in got and "x.log" in got, f"--max-size: {got}")
    check(doc["totals"]["filtered"] == 1, "totals.filtered")
    got, _ = names(["--max-size", "40K"])
    check("big.log" in got, "--max-size 40K keeps a 40 KiB file")


def case_files_from(env):
    d = env.path("listed")
    os.mkdir(d)
    paths = []
    for n in (b"one", b"two words", b"three\nlines"):
        p = os.path.join(os.fsencode(d), n)
        with open(p, "wb") as f:
            f.write(b"q" * 100)
        paths.append(p)
    rc, doc, err = run_json(["stat", "--files-from", "-", "-0"],
                            input_bytes=b"\0".join(paths) + b"\0")
    check(rc == 0 and doc["totals"]["files"] == 3, f"-0: rc {rc} {doc['totals']}")
    listfile = env.path("list.txt")
    with open(listfile, "wb") as f:
        f.write(paths[0] + b"\n\n" + paths[1] + b"\n")
    rc, doc, err = run_json(["stat", "--files-from", listfile])
    check(rc == 0 and doc["totals"]["files"] == 2, f"newline list: {doc['totals']}")
    rc, doc, err = run_json(["stat", "--files-from", env.path("no-such-list")])
    check(rc == 1, "missing --files-from file")


def case_follow_symlinks(env):
    d = env.path("links")
    os.mkdir(d)
    outside = env.path("outside")
    make_file(outside, 2)
    os.symlink(outside, os.path.join(d, "to-outside"))
    os.symlink("nowhere", os.path.join(d, "dangling"))
    os.symlink(".", os.path.join(d, "loop"))
    rc, doc, err = run_json(["stat", d])
    check(doc["totals"]["files"] == 0, "followed a symlink without -L")
    rc, doc, err = run_json(["stat", "-L", d])
    check(rc == 0, f"-L: exit {rc} {err!r}")
    check(doc["totals"]["files"] == 1, f"-L: {doc['files']}")
    reasons = " ".join(s["reason"] for s in doc["skipped"])
    check("dangling" in reasons and "loop" in reasons, f"-L notes: {reasons}")
    # a symlink named on the command line is followed
    rc, doc, err = run_json(["stat", os.path.join(d, "to-outside")])
    check(doc["totals"]["files"] == 1, "named symlink not followed")


def case_one_file_system(env):
    need_root()
    d = env.path("xdev")
    m = os.path.join(d, "mnt")
    os.makedirs(m)
    make_file(os.path.join(d, "here"), 1)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", m],
                       capture_output=True)
    if r.returncode != 0:
        raise Skip("cannot mount tmpfs: " + r.stderr.decode().strip())
    try:
        with open(os.path.join(m, "there"), "wb") as f:
            f.write(b"t" * 10)
        rc, doc, err = run_json(["stat", d])
        check(doc["totals"]["files"] == 2, "without -x")
        rc, doc, err = run_json(["stat", "-x", d])
        check(rc == 0 and doc["totals"]["files"] == 1, f"-x: {doc['files']}")
    finally:
        subprocess.run(["umount", m])


def case_stats(env):
    p = env.path("stats")
    make_file(p, 4)
    rc, doc, err = run_json(["stat", "--stats", p])
    cs = doc["files"][0]["cachestat"]
    if doc["kernel"]["cachestat"] in ("absent", "blocked"):
        check(cs is None, "cachestat numbers where the kernel has none")
        return
    check(cs is not None, "no cachestat for an owned file")
    for k in ("cache", "dirty", "writeback", "evicted", "recently_evicted"):
        check(isinstance(cs[k], int) and cs[k] >= 0, f"cachestat.{k}")
    rc, out, err = run(["stat", "--stats", p])
    check(b"DIRTY" in out.split(b"\n")[0], "no DIRTY column")


def case_block_device_named(env):
    need_root()
    img = env.path("disk.img")
    make_file(img, 64)
    r = subprocess.run(["losetup", "-f", "--show", img], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip("cannot attach a loop device: " + r.stderr.strip())
    dev = r.stdout.strip()
    try:
        # cache the first 16 pages; the kernel drops a block device's cache
        # when its last opener closes it, so keep it open meanwhile
        with open(dev, "rb") as holder:
            holder.read(16 * PS)
            rc, doc, err = run_json(["stat", dev])
        check(rc == 0, f"exit {rc}: {err!r}")
        f = doc["files"][0]
        check(f["file_type"] == "block" and f["size"] == 64 * PS and f["pages"] == 64,
              f"block device: {f}")
        check(f["quality"] == "exact" and f["resident_pages"] >= 16, f"block residency {f}")
        # met in a walk, a device is a note, not a measurement
        d = env.path("devdir")
        os.mkdir(d)
        os.mknod(os.path.join(d, "blk"), 0o600 | stat.S_IFBLK, os.stat(dev).st_rdev)
        rc, doc, err = run_json(["stat", d])
        check(rc == 0 and doc["totals"]["files"] == 0 and doc["totals"]["skipped"] == 1,
              f"block device in a walk: {doc['totals']}")
    finally:
        subprocess.run(["losetup", "-d", dev])


CASES = [case_help, case_usage_errors_exit_2, case_tree_text, case_tree_json, case_ndjson,
         case_fifo_named_does_not_hang, case_counts_agree_with_mincore, case_map_text,
         case_nobody_gets_unknown, case_allow_perturb, case_errors_exit_1, case_deep_tree,
         case_top_and_sort, case_filters, case_files_from, case_follow_symlinks,
         case_one_file_system, case_stats, case_block_device_named]


def main():
    global EXE
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    EXE = os.path.abspath(sys.argv[1])
    probe = Env()
    if tmpfs(probe.dir):
        probe.cleanup()
        print("SKIP: test-cli: the test directory is on tmpfs")
        return 77
    probe.cleanup()
    failed = run_cases(CASES, Env, only_cases())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
