#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Special files and filesystems through `pagecache stat` (issue 7; the
library's side is tests/test-special.c): /proc and /sys files, character
devices, a socket, tmpfs, overlayfs, hugetlbfs, a sparse 1 TiB file, a
deleted file still open, a file replaced between the walk and its open
(made certain by an LD_PRELOAD shim), a symlink loop, a path with a
newline named on the command line.

Usage: test-cli-special.py PATH-TO-pagecache PATH-TO-pc-replace-shim.so
Prints one line per case; "SKIP: case: why" for a case that cannot run here.
Exits 0 when all ran cases passed, 1 on a failure, 77 when not root.
Under PC_UNDER_VALGRIND=1 every pagecache run goes through valgrind."""

import pc_unvalgrind  # noqa: F401 (first: leaves valgrind, see the module)
import pc_cases
from pc_cases import Failure, Skip, check, mincore, only_cases, run_cases
import json
import os
import socket
import subprocess
import sys

EXE = SHIM = None
PS = os.sysconf("SC_PAGE_SIZE")
TIMEOUT = 60
UNDER_VALGRIND = os.environ.get("PC_UNDER_VALGRIND") == "1"
VALGRIND = ["valgrind", "--error-exitcode=3", "--leak-check=full",
            "--errors-for-leak-kinds=definite", "--quiet",
            "--suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "valgrind.supp")]

def run(args, env=None, as_nobody=False, timeout=TIMEOUT):
    cmd = [EXE] + args
    if UNDER_VALGRIND:
        cmd = VALGRIND + cmd
    if as_nobody:
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, env=e,
                       timeout=timeout * (10 if UNDER_VALGRIND else 1))
    err = p.stderr
    if UNDER_VALGRIND:
        check(p.returncode != 3, "valgrind found errors:\n" + err.decode(errors="replace"))
        err = b"".join(l for l in err.splitlines(keepends=True)
                       if not l.startswith(b"--") and not l.startswith(b"=="))
    return p.returncode, p.stdout, err


def run_json(args, **kw):
    rc, out, err = run(["stat", "--json"] + args, **kw)
    try:
        return rc, json.loads(out), err
    except ValueError as e:
        raise Failure(f"output is not JSON ({e}): {out[:500]!r} {err[:500]!r}")


def mincore_count(path):
    """Resident pages of the file by mincore (root: the truth)."""
    return sum(mincore(path))


def make_file(path, npages, mode=0o644):
    with open(path, "wb") as f:
        f.write(bytes([0x5a]) * (npages * PS))
        f.flush()
        os.fsync(f.fileno())
    os.chmod(path, mode)


def set_pattern(path, pages):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        for p in pages:
            os.pread(fd, 1, p * PS)
    finally:
        os.close(fd)


def stable(path, measure):
    """measure() between two equal mincore counts (background reclaim)."""
    for _ in range(5):
        before = mincore_count(path)
        result = measure()
        if mincore_count(path) == before:
            return before, result
    raise Failure(f"{path}: residency kept changing under the test")


def one_file(doc, what):
    check(len(doc["files"]) == 1, f"{what}: files {doc['files']}")
    return doc["files"][0]


def filesystems():
    with open("/proc/filesystems") as f:
        return {l.split()[-1] for l in f if l.strip()}


def cachestat_usable(doc):
    return doc["kernel"]["cachestat"] in ("gated", "open")


class Env(pc_cases.Env):
    """With the mounts a case made, undone (lazily) before the directory goes."""
    PREFIX = "pc-test-cli-special."

    def __init__(self):
        super().__init__()
        self.mounts = []

    def mount(self, args, target):
        r = subprocess.run(["mount"] + args + [target], capture_output=True, text=True)
        if r.returncode != 0:
            raise Skip(f"mount {' '.join(args)} refused: {r.stderr.strip()}")
        self.mounts.append(target)

    def cleanup(self):
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", m], capture_output=True)
        super().cleanup()


# ---- cases ----------------------------------------------------------------

def case_proc_files(env):
    rc, doc, err = run_json(["/proc/self/status", "/proc/meminfo"])
    check(rc == 0, f"exit {rc}: {err!r}")
    check(len(doc["files"]) == 2, f"files {doc['files']}")
    for f in doc["files"]:
        check(f["size"] == 0 and f["pages"] == 0 and f["resident_pages"] == 0,
              f"{f['path']}: {f}")
        check(f["quality"] == "exact" and f["source"] == "none", f"{f['path']}: {f}")


def case_sys_file(env):
    path = None
    for cand in ("/sys/kernel/uevent_seqnum", "/sys/kernel/profiling", "/sys/power/state"):
        if os.path.isfile(cand) and os.stat(cand).st_size == 4096:
            path = cand
            break
    if not path:
        raise Skip("no sysfs attribute of 4096 bytes")
    rc, doc, err = run_json([path])
    check(rc == 0, f"exit {rc}: {err!r}")
    f = one_file(doc, path)
    check(f["size"] == 4096 and f["pages"] == 1, f"{f}")
    if cachestat_usable(doc):
        # nothing of sysfs is ever in the page cache, and cachestat says so
        check(f["quality"] == "exact" and f["resident_pages"] == 0 and
              f["source"] == "cachestat", f"{f}")
    else:
        check(f["quality"] == "unknown", f"{f}")
    # uid 65534: cachestat's gate refuses, mincore cannot map sysfs
    rc, doc, err = run_json([path], as_nobody=True)
    check(rc == 0 and one_file(doc, path)["quality"] == "unknown", f"nobody: {doc['files']}")


def case_char_devices_named(env):
    rc, doc, err = run_json(["/dev/zero", "/dev/null"])
    check(rc == 0, f"exit {rc}: {err!r}")
    check(doc["totals"]["files"] == 0 and doc["totals"]["skipped"] == 2, f"{doc['totals']}")
    for s in doc["skipped"]:
        check("character device" in s["reason"], f"{s}")


def case_socket_named(env):
    p = env.path("sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(p)
    s.listen(1)
    try:
        rc, doc, err = run_json([p])
    finally:
        s.close()
    check(rc == 0 and doc["totals"]["files"] == 0, f"exit {rc}: {doc['totals']}")
    check("socket" in doc["skipped"][0]["reason"], f"{doc['skipped']}")


def case_tmpfs(env):
    m = env.path("tmpfs")
    os.mkdir(m)
    env.mount(["-t", "tmpfs", "-o", "size=4m", "tmpfs"], m)
    p = os.path.join(m, "f")
    with open(p, "wb") as f:
        f.truncate(16 * PS)
        for pg in (0, 5, 9):
            f.seek(pg * PS)
            f.write(b"t" * PS)
    rc, doc, err = run_json([p])
    f = one_file(doc, p)
    check(rc == 0 and f["quality"] == "exact" and f["pages"] == 16 and
          f["resident_pages"] == 3, f"{f}")


def case_overlayfs(env):
    if "overlay" not in filesystems():
        raise Skip("the kernel has no overlayfs")
    for d in ("lower", "upper", "work", "merged"):
        os.mkdir(env.path(d))
    make_file(env.path("lower", "low"), 32)
    make_file(env.path("lower", "up"), 32)
    env.mount(["-t", "overlay", "-o", "lowerdir=%s,upperdir=%s,workdir=%s" %
               (env.path("lower"), env.path("upper"), env.path("work")), "overlay"],
              env.path("merged"))
    # copy "up" up
    with open(env.path("merged", "up"), "r+b") as f:
        f.write(b"u")
        f.flush()
        os.fsync(f.fileno())
    check(os.path.exists(env.path("upper", "up")), "no copy-up")
    set_pattern(env.path("lower", "low"), [0, 3, 20])
    set_pattern(env.path("upper", "up"), [1, 2])
    for name, real in (("low", env.path("lower", "low")), ("up", env.path("upper", "up"))):
        merged = env.path("merged", name)
        want, (rc, doc, err) = stable(real, lambda: run_json([merged]))
        f = one_file(doc, merged)
        check(rc == 0 and want > 0, f"{name}: exit {rc}, mincore {want}")
        # the real file's pages, not cachestat's empty overlay mapping
        check(f["quality"] == "exact" and f["resident_pages"] == want and
              f["source"] == "mincore", f"{name}: {f} (mincore: {want})")


def case_hugetlbfs(env):
    if "hugetlbfs" not in filesystems():
        raise Skip("the kernel has no hugetlbfs")
    m = env.path("huge")
    os.mkdir(m)
    env.mount(["-t", "hugetlbfs", "hugetlbfs"], m)
    p = os.path.join(m, "f")
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, 4 << 20)
    os.close(fd)
    rc, doc, err = run_json([p])
    f = one_file(doc, p)
    check(rc == 0 and f["quality"] == "unknown" and f["source"] == "none", f"{f} {err!r}")
    rc, out, err = run(["stat", p])
    check(rc == 0 and b"?" in out.split(b"\n")[1], f"text: {out!r}")


def case_sparse_1tib(env):
    """A sparse file past 4 GiB: 1 TiB where cachestat answers in one call.
    Without cachestat (before 6.5, valgrind) the answer is a mincore walk,
    2^28 pages for 1 TiB (47 s per command in the 6.1 guest under TCG), so
    16 GiB there: still page indexes past 2^20, offsets past 2^32."""
    small = env.path("tera-probe")
    make_file(small, 1)
    rc, doc, err = run_json([small])
    check(rc == 0, f"stat of a one-page file: {err!r}")
    size = 1 << 40 if cachestat_usable(doc) else 1 << 34
    p = env.path("tera")
    with open(p, "wb") as f:
        try:
            f.truncate(size)
        except OSError as e:
            raise Skip(f"no {size >> 30} GiB file here: {e}")
    last = size // PS - 1
    set_pattern(p, [0, last // 2, last])
    # the bound is for a hang, not a speed check
    for args in ([], ["--map"]):
        rc, doc, err = run_json(args + [p], timeout=TIMEOUT * 2)
        f = one_file(doc, p)
        check(rc == 0 and f["pages"] == size // PS, f"{args}: {f}")
        check(f["quality"] == "exact" and f["resident_pages"] == 3, f"{args}: {f}")
        if args:
            check(f["resident_runs"] == [[0, 1], [last // 2, 1], [last, 1]],
                  f"runs {f['resident_runs']}")


def case_deleted_but_open(env):
    p = env.path("deleted")
    make_file(p, 16)
    fd = os.open(p, os.O_RDONLY)
    try:
        set_pattern(p, [2, 3, 9])
        os.unlink(p)
        magic = f"/proc/{os.getpid()}/fd/{fd}"
        want, (rc, doc, err) = stable(magic, lambda: run_json([magic]))
        f = one_file(doc, magic)
        check(rc == 0 and f["quality"] == "exact" and f["resident_pages"] == want == 3,
              f"{f} (mincore {want})")
    finally:
        os.close(fd)


def case_replaced_between_walk_and_open(env):
    """The shim swaps the entry right before the walk opens it."""
    t = env.path("swap")
    os.mkdir(t)
    make_file(os.path.join(t, "victim"), 2)
    make_file(os.path.join(t, "other"), 1)
    spare = env.path("spare")

    def prepare(kind):
        for name in ("spare",):
            q = env.path(name)
            if os.path.islink(q) or os.path.isfile(q) or os.path.exists(q):
                if os.path.isdir(q) and not os.path.islink(q):
                    os.rmdir(q)
                else:
                    os.unlink(q)
        if not os.path.exists(os.path.join(t, "victim")):
            make_file(os.path.join(t, "victim"), 2)
        if kind == "symlink":
            os.symlink(os.path.join(t, "other"), spare)
        elif kind == "fifo":
            os.mkfifo(spare)
        elif kind == "dir":
            os.mkdir(spare)
        elif kind == "file":
            make_file(spare, 5)
        # in an ASan build the runtime must come first; the shim cannot
        asan = os.environ.get("ASAN_OPTIONS", "")
        return {"LD_PRELOAD": SHIM, "PC_SHIM_NAME": "victim",
                "PC_SHIM_WITH": spare if kind != "gone" else "",
                "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}

    # (kind, exit status, files measured, what the victim's line says)
    for kind, want_rc, want_files, want in (
            ("symlink", 0, 1, "symlink"),
            ("fifo", 0, 1, "FIFO"),
            ("dir", 0, 1, "directory"),
            ("gone", 1, 1, "No such file"),
            ("file", 0, 2, None)):
        env_vars = prepare(kind)
        rc, doc, err = run_json([t], env=env_vars)
        check(rc == want_rc, f"{kind}: exit {rc}, want {want_rc}: {err!r}")
        check(doc["totals"]["files"] == want_files, f"{kind}: {doc['totals']}")
        if want:
            lines = [l for l in err.decode().splitlines() if "victim" in l]
            check(len(lines) == 1 and want in lines[0], f"{kind}: {err!r}")
        else:
            v = [f for f in doc["files"] if f["path"].endswith("/victim")]
            check(len(v) == 1 and v[0]["pages"] == 5, f"{kind}: measured {doc['files']}")
        # put the tree back
        v = os.path.join(t, "victim")
        if os.path.isdir(v) and not os.path.islink(v):
            os.rmdir(v)
        elif os.path.lexists(v):
            os.unlink(v)


def case_symlink_loop(env):
    d = env.path("loops")
    os.mkdir(d)
    os.symlink("b", os.path.join(d, "a"))
    os.symlink("a", os.path.join(d, "b"))
    os.symlink("self", os.path.join(d, "self"))
    make_file(os.path.join(d, "real"), 1)
    # without -L: notes, exit 0
    rc, doc, err = run_json([d])
    check(rc == 0 and doc["totals"]["files"] == 1 and doc["totals"]["skipped"] == 3,
          f"no -L: exit {rc} {doc['totals']}")
    # with -L: one error per looping link (ELOOP), the rest measured, no hang
    rc, doc, err = run_json(["-L", d])
    check(rc == 1 and doc["totals"]["files"] == 1 and doc["totals"]["errors"] == 3,
          f"-L: exit {rc} {doc['totals']}")
    check(all(e["errno"] == 40 for e in doc["errors"]), f"{doc['errors']}")
    # named on the command line (followed, as named paths are)
    rc, doc, err = run_json([os.path.join(d, "self")])
    check(rc == 1 and doc["errors"][0]["errno"] == 40, f"named: exit {rc} {doc['errors']}")


def case_newline_path_named(env):
    p = env.path("two\nlines")
    make_file(p, 3)
    rc, out, err = run(["stat", p])
    lines = out.split(b"\n")[:-1]
    check(rc == 0 and len(lines) == 3, f"exit {rc}: {out!r}")
    check(lines[1].endswith(b"/two\\nlines"), f"row: {lines[1]!r}")
    rc, doc, err = run_json([p])
    check(rc == 0 and one_file(doc, p)["path"] == p, f"{doc['files']}")
    # an error about such a path escapes it too
    rc, out, err = run(["stat", env.path("gone\nname")])
    check(rc == 1 and err.count(b"\n") == 1 and b"gone\\nname" in err, f"error: {err!r}")


CASES = [case_proc_files, case_sys_file, case_char_devices_named, case_socket_named,
         case_tmpfs, case_overlayfs, case_hugetlbfs, case_sparse_1tib, case_deleted_but_open,
         case_replaced_between_walk_and_open, case_symlink_loop, case_newline_path_named]


def main():
    global EXE, SHIM
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    EXE = os.path.abspath(sys.argv[1])
    SHIM = os.path.abspath(sys.argv[2])
    if os.geteuid() != 0:
        print("SKIP: test-cli-special: needs root (mounts)")
        return 77
    failed = run_cases(CASES, Env, only_cases())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
