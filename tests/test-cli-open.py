#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What `pagecache stat` opens (SECURITY.md): never a device node or FIFO it
meets in a walk, even when a name is swapped right before the open (made
certain by the LD_PRELOAD shim of test-cli-special.py). Opening a device
runs its driver, so the walk decides a type it did not get from readdir on
an O_PATH fd first. A device node of our own (mknod in the scratch
directory) is watched with inotify: IN_OPEN says someone opened it; an
O_PATH open raises no event, a real one does (checked first, every time).

Usage: test-cli-open.py PATH-TO-pagecache PATH-TO-pc-replace-shim.so
Exits 0 when all ran cases passed, 1 on a failure, 77 when not root."""

import pc_unvalgrind  # noqa: F401 (first: leaves valgrind, see the module)
from pc_cases import Failure, Skip, check
import ctypes
import ctypes.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback

EXE = SHIM = None
TIMEOUT = 60
UNDER_VALGRIND = os.environ.get("PC_UNDER_VALGRIND") == "1"
VALGRIND = ["valgrind", "--error-exitcode=3", "--leak-check=full",
            "--errors-for-leak-kinds=definite", "--quiet",
            "--suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "valgrind.supp")]
IN_OPEN = 0x20
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def run_json(args, env):
    cmd = [EXE, "stat", "--json"] + args
    if UNDER_VALGRIND:
        cmd = VALGRIND + cmd
    e = dict(os.environ)
    e.update(env)
    p = subprocess.run(cmd, capture_output=True, env=e,
                       timeout=TIMEOUT * (10 if UNDER_VALGRIND else 1))
    if UNDER_VALGRIND:
        check(p.returncode != 3, "valgrind found errors:\n" + p.stderr.decode(errors="replace"))
    try:
        return p.returncode, json.loads(p.stdout), p.stderr.decode(errors="replace")
    except ValueError as ex:
        raise Failure(f"output is not JSON ({ex}): {p.stdout[:300]!r} {p.stderr[:300]!r}")


class Watch:
    """inotify IN_OPEN on one path."""

    def __init__(self, path):
        self.fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        check(self.fd >= 0, "inotify_init1")
        check(libc.inotify_add_watch(self.fd, os.fsencode(path), IN_OPEN) >= 0,
              "inotify_add_watch")

    def opens(self):
        n = 0
        while True:
            try:
                buf = os.read(self.fd, 4096)
            except BlockingIOError:
                return n
            i = 0
            while i < len(buf):
                _, mask, _, length = struct.unpack_from("iIII", buf, i)
                n += bool(mask & IN_OPEN)
                i += 16 + length

    def close(self):
        os.close(self.fd)


def device_node(path):
    """A char device 1:3 (null) of our own, watched; Skip when not possible."""
    try:
        os.mknod(path, 0o666 | 0o020000, os.makedev(1, 3))
    except OSError as ex:
        raise Skip(f"mknod refused here: {ex}")
    w = Watch(path)
    os.close(os.open(path, os.O_PATH))
    check(w.opens() == 0, "an O_PATH open raised IN_OPEN")
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError as ex:
        w.close()
        raise Skip(f"the scratch directory is mounted nodev: {ex}")
    check(w.opens() >= 1, "a real open raised no IN_OPEN: the watch sees nothing")
    return w


def shim_env(name, with_path):
    asan = os.environ.get("ASAN_OPTIONS", "")
    return {"LD_PRELOAD": SHIM, "PC_SHIM_NAME": name, "PC_SHIM_WITH": with_path,
            "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}


def make_file(path, size=8192):
    with open(path, "wb") as f:
        f.write(b"\x5a" * size)


def case_follow_symlink_swapped_in_for_a_file(d):
    """-L: a regular file readdir saw becomes a symlink to a device right
    before its open. The walk notes the device; it never opens it."""
    t = os.path.join(d, "follow")
    os.mkdir(t)
    make_file(os.path.join(t, "victim"))
    make_file(os.path.join(t, "other"))
    dev = os.path.join(d, "follow-null")
    w = device_node(dev)
    try:
        spare = os.path.join(d, "follow-spare")
        os.symlink(dev, spare)
        rc, doc, err = run_json(["-L", t], shim_env("victim", spare))
        check(os.path.islink(os.path.join(t, "victim")), "the shim did not swap")
        check(rc == 0 and doc["totals"]["files"] == 1, f"exit {rc}: {doc['totals']} {err}")
        lines = [l for l in err.splitlines() if "victim" in l]
        check(len(lines) == 1 and "character device" in lines[0], f"notes: {err!r}")
        check(w.opens() == 0, "pagecache opened the device node")
    finally:
        w.close()


def case_follow_symlink_swapped_in_for_a_directory(d):
    """-L: a directory readdir saw becomes a symlink to a device: noted,
    never opened (and never walked)."""
    t = os.path.join(d, "followdir")
    os.makedirs(os.path.join(t, "victim"))
    make_file(os.path.join(t, "other"))
    dev = os.path.join(d, "followdir-null")
    w = device_node(dev)
    try:
        spare = os.path.join(d, "followdir-spare")
        os.symlink(dev, spare)
        rc, doc, err = run_json(["-L", t], shim_env("victim", spare))
        check(os.path.islink(os.path.join(t, "victim")), "the shim did not swap")
        check(rc == 0 and doc["totals"]["files"] == 1, f"exit {rc}: {doc['totals']} {err}")
        check(w.opens() == 0, "pagecache opened the device node")
    finally:
        w.close()


def case_named_device_is_not_opened(d):
    """A device named on the command line, directly or through a symlink:
    a note, and the node is never opened."""
    dev = os.path.join(d, "named-null")
    w = device_node(dev)
    try:
        link = os.path.join(d, "named-link")
        os.symlink(dev, link)
        for p in (dev, link):
            rc, doc, err = run_json([p], {})
            check(rc == 0 and doc["totals"]["files"] == 0 and "character device" in err,
                  f"{p}: exit {rc} {doc['totals']} {err!r}")
        check(w.opens() == 0, "pagecache opened the device node")
    finally:
        w.close()


def case_audit_of_a_device_path_does_not_open_it(d):
    """`pagecache audit PATH` looks at the filesystem holding PATH: a device
    node named there is looked at through O_PATH, never opened."""
    dev = os.path.join(d, "audit-null")
    w = device_node(dev)
    try:
        cmd = ([] if not UNDER_VALGRIND else VALGRIND) + [EXE, "audit", "--json", dev]
        p = subprocess.run(cmd, capture_output=True,
                           timeout=TIMEOUT * (10 if UNDER_VALGRIND else 1))
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr!r}")
        check(os.path.basename(dev).encode() in p.stdout, f"{p.stdout[:300]!r}")
        check(w.opens() == 0, "pagecache audit opened the device node")
    finally:
        w.close()


def case_pid_mapped_device_is_not_opened(d):
    """--pid of a process that maps a device (a private mapping of a zero
    device node, as allocators do with /dev/zero): the device is not a file
    and is never opened, not even through /proc/PID/map_files."""
    dev = os.path.join(d, "pid-zero")
    try:
        os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 5))
    except OSError as ex:
        raise Skip(f"mknod refused here: {ex}")
    make_file(os.path.join(d, "mapped-file"))
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import mmap, os, sys\n"
         "fd = os.open(sys.argv[1], os.O_RDWR)\n"
         "m = mmap.mmap(fd, 4096, flags=mmap.MAP_PRIVATE)\n"
         "g = os.open(sys.argv[2], os.O_RDONLY)\n"
         "n = mmap.mmap(g, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)\n"
         "os.close(fd); os.close(g)\n"
         "print('ready', flush=True)\n"
         "sys.stdin.read()\n",
         dev, os.path.join(d, "mapped-file")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    w = None
    try:
        check(child.stdout.readline().strip() == b"ready", "the child did not map")
        w = Watch(dev)
        check(w.opens() == 0, "an open before the check")
        rc, doc, err = run_json(["--pid", str(child.pid)], {})
        paths = [f["path"] for f in doc["files"]]
        check(rc == 0, f"exit {rc}: {err!r}")
        check(any(p.endswith("/mapped-file") for p in paths), f"files: {paths}")
        check(not any(p.endswith("/pid-zero") for p in paths), f"files: {paths}")
        check(w.opens() == 0, "pagecache opened the mapped device node")
        # the watch works: our own open is seen
        os.close(os.open(dev, os.O_RDONLY))
        check(w.opens() >= 1, "a real open raised no IN_OPEN")
    finally:
        child.stdin.close()
        child.wait(timeout=TIMEOUT)
        if w:
            w.close()


CASES = [case_follow_symlink_swapped_in_for_a_file,
         case_follow_symlink_swapped_in_for_a_directory,
         case_named_device_is_not_opened,
         case_audit_of_a_device_path_does_not_open_it,
         case_pid_mapped_device_is_not_opened]


def main():
    global EXE, SHIM
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    EXE, SHIM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if os.geteuid() != 0:
        print("SKIP: test-cli-open: needs root (mknod)")
        return 77
    base = os.environ.get("PC_TEST_DIR") or "/var/tmp"
    failed = 0
    for case in CASES:
        d = tempfile.mkdtemp(prefix="pc-cli-open-", dir=base)
        try:
            case(d)
            print(f"PASS: {case.__name__}")
        except Skip as ex:
            print(f"SKIP: {case.__name__}: {ex}")
        except Exception:
            failed += 1
            print(f"FAIL: {case.__name__}")
            traceback.print_exc(file=sys.stdout)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
