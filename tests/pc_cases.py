# SPDX-License-Identifier: MIT
"""What the python tests of the command share: their case loop, their
exceptions and check(), the scratch directory of a case, and mincore of a
file.

run_cases() runs each case in a fresh scratch environment and prints
"ok: NAME", "SKIP: NAME: why" (which scripts/testlog.py collects) or
"FAIL: NAME: why"; it returns the number of failed cases. "ok" says how
long the case took.

Reclaim: many cases bring pages in and then check, as the kernel sees it,
that they are resident. The kernel may take them back in between when the
machine, or the memory cgroup the tests run in, is short of memory; nothing
the command does can stop that. A case that fails while the kernel reclaimed
pages (the pgsteal counters of /proc/vmstat and of the test's own memory
cgroup moved) runs again, at most RECLAIM_RETRIES times, and every such
attempt is printed with the reclaim it saw. A case that fails without any
reclaim, or fails every attempt, fails.
"""

import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

RECLAIM_RETRIES = 2
PS = os.sysconf("SC_PAGE_SIZE")

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
_libc.syscall.restype = ctypes.c_long
_NR_CACHESTAT = 451  # the same on every architecture (Linux 6.5+)


class _CachestatRange(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Cachestat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("nr_cache", "nr_dirty", "nr_writeback",
                                               "nr_evicted", "nr_recently_evicted")]


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Env:
    """A case's scratch directory: fresh, mode 0755 (uid 65534 reaches it),
    under $PC_TEST_DIR or /var/tmp (a real disk: tmpfs cannot evict).
    Tests name theirs with PREFIX."""
    PREFIX = "pc-test."

    def __init__(self):
        base = os.environ.get("PC_TEST_DIR", "/var/tmp")
        self.dir = tempfile.mkdtemp(prefix=self.PREFIX, dir=base)
        os.chmod(self.dir, 0o755)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def tmpfs(path):
    """Whether path is on tmpfs (where nothing can be evicted)."""
    try:
        out = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True,
                             text=True).stdout.strip()
    except OSError:
        return False
    return out == "tmpfs"


def cached_pages(path):
    """cachestat's count of the file's pages in the page cache, those still
    being read in included (mincore counts only pages up to date), or None
    where cachestat does not answer (before 6.5, or the gate refuses)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        rng, cs = _CachestatRange(0, 0), _Cachestat()
        r = _libc.syscall(ctypes.c_long(_NR_CACHESTAT), ctypes.c_int(fd), ctypes.byref(rng),
                          ctypes.byref(cs), ctypes.c_uint(0))
        return cs.nr_cache if r == 0 else None
    finally:
        os.close(fd)


def mincore(path, first=0, count=None):
    """mincore's vector (0 or 1 per page) of pages [first, first + count) of
    the file, through a fresh PROT_NONE mapping: the truth when the caller
    passes the kernel's gate (root). A PROT_NONE mapping is never read,
    by valgrind either."""
    size = os.stat(path).st_size
    npages = (size + PS - 1) // PS
    if count is None:
        count = npages - first
    count = max(0, min(count, npages - first))
    if count == 0:
        return []
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, count * PS, 0, 1, fd, first * PS)  # PROT_NONE, MAP_SHARED
        check(addr not in (None, ctypes.c_void_p(-1).value), "mmap failed")
        vec = ctypes.create_string_buffer(count)
        r = _libc.mincore(addr, count * PS, vec)
        _libc.munmap(addr, count * PS)
        check(r == 0, f"mincore failed: errno {ctypes.get_errno()}")
        return [b & 1 for b in vec.raw[:count]]
    finally:
        os.close(fd)


def _memcg_stat():
    """The memory.stat file of this process's memory cgroup, or None."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return f"/sys/fs/cgroup/memory{path}/memory.stat"
        if controllers == "":
            return f"/sys/fs/cgroup{path}/memory.stat"
    return None


DAMON_ADMIN = "/sys/kernel/mm/damon/admin/kdamonds"


def damon_paged_out_pages():
    """Pages that DAMON's pageout schemes have paged out so far (0 without
    DAMON, or when its files cannot be read or refreshed: not root). Such a
    scheme takes page cache pages nobody has used, fresh ones included,
    without moving pgsteal (doc/design.md); its counters are refreshed only
    on request ("update_schemes_stats", which changes nothing else)."""
    total = 0
    try:
        kdamonds = os.listdir(DAMON_ADMIN)
    except OSError:
        return 0
    for k in kdamonds:
        base = os.path.join(DAMON_ADMIN, k)
        try:
            with open(os.path.join(base, "state"), encoding="utf-8") as f:
                if f.read().strip() != "on":
                    continue
            with open(os.path.join(base, "state"), "w", encoding="utf-8") as f:
                f.write("update_schemes_stats")
            for ctx in os.listdir(os.path.join(base, "contexts")):
                schemes = os.path.join(base, "contexts", ctx, "schemes")
                if not os.path.isdir(schemes):
                    continue
                for sc in os.listdir(schemes):
                    d = os.path.join(schemes, sc)
                    if not os.path.isdir(d):
                        continue
                    with open(os.path.join(d, "action"), encoding="utf-8") as f:
                        if f.read().strip() != "pageout":
                            continue
                    with open(os.path.join(d, "stats", "sz_applied"), encoding="utf-8") as f:
                        total += int(f.read()) // PS
        except (OSError, ValueError):
            continue
    return total


_damon_seen = None  # damon_paged_out_pages() at its last refresh


def reclaimed_pages(refresh_damon=False):
    """Pages the kernel has reclaimed so far: the machine's and this
    process's memory cgroup's pgsteal counters added (cgroup reclaim is
    not counted in the machine's on every kernel), and what DAMON paged
    out (damon_paged_out_pages()) as of its last refresh: a refresh waits
    for the kdamond (0.4-0.5 s here), so it is asked on the first call and
    then only when refresh_damon is set (after a failure): a case that
    failed sees what DAMON did since the refresh before it, or since the
    first call, which may count a little more than the case's own time."""
    global _damon_seen
    if refresh_damon or _damon_seen is None:
        _damon_seen = damon_paged_out_pages()
    total = _damon_seen
    for path, prefix in (("/proc/vmstat", "pgsteal_"), (_memcg_stat(), "pgsteal")):
        if not path:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    # the per-kind counters only: pgsteal_anon + pgsteal_file
                    # equals the sum of the per-reclaimer ones
                    if name.startswith(prefix) and name.endswith(("_anon", "_file")):
                        total += int(value)
                    elif name == "pgsteal":  # cgroup v2 has one counter
                        total += int(value)
        except (OSError, ValueError):
            continue
    return total


def shard():
    """(K, N) from PC_CASES_SHARD=K/N (1 <= K <= N): this run takes every
    Nth case from the Kth on, so that N runs side by side run each case
    once (tests/vm/vmtests.py splits the guest's longest tests so). (1, 1)
    without it; a malformed value is an error, not a silent full run."""
    value = os.environ.get("PC_CASES_SHARD")
    if not value:
        return 1, 1
    try:
        k, n = (int(x) for x in value.split("/"))
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        raise SystemExit(f"PC_CASES_SHARD={value!r}: not K/N with 1 <= K <= N")
    return k, n


def run_cases(cases, make_env, only=None):
    """Run each case(env) with env = make_env(); env.cleanup() after.
    only: case names to run (None: all); PC_CASES_SHARD (shard()) takes a
    share of them. Returns the number of failed cases."""
    failed = 0
    k, n = shard()
    if n > 1:
        print(f"shard {k}/{n}: {len(cases[k - 1::n])} of {len(cases)} cases")
    for case in cases[k - 1::n]:
        name = case.__name__[len("case_"):]
        if only and name not in only:
            continue
        for attempt in range(1 + RECLAIM_RETRIES):
            before = reclaimed_pages()
            start = time.monotonic()
            env = make_env()
            verdict = None
            try:
                case(env)
                print(f"ok: {name} ({time.monotonic() - start:.1f} s"
                      + (f", attempt {attempt + 1})" if attempt else ")"))
            except Skip as e:
                print(f"SKIP: {name}: {e}")
            except (Failure, subprocess.TimeoutExpired) as e:
                verdict = f"FAIL: {name}: {e}"
            except Exception:
                verdict = f"FAIL: {name}: unexpected exception\n" + traceback.format_exc()
            finally:
                env.cleanup()
            sys.stdout.flush()
            if verdict is None:
                break
            reclaimed = reclaimed_pages(refresh_damon=True) - before
            if reclaimed > 0 and attempt < RECLAIM_RETRIES:
                print(f"note: {name}: attempt {attempt + 1} failed while the kernel "
                      f"reclaimed {reclaimed} pages; running it again. It said: "
                      + verdict.replace("\n", "\n    "))
                continue
            if reclaimed > 0:
                verdict += f"\n(every attempt saw reclaim: {reclaimed} pages in the last)"
            print(verdict)
            failed += 1
            break
    sys.stdout.flush()
    return failed


def only_cases(var="PC_TEST_CASES"):
    """The case names of the comma-separated environment variable var."""
    value = os.environ.get(var)
    return set(value.split(",")) if value else None


def nowait_clean(exe, path, timeout=60):
    """True when RWF_NOWAIT misses are clean on path's filesystem (exe's
    audit, as root): there uid 65534 gets exact answers for files the
    kernel's mincore hides from it, by a probe without side effects."""
    r = subprocess.run([exe, "audit", "--json", os.path.dirname(path) or "."],
                       capture_output=True, timeout=timeout)
    return json.loads(r.stdout)["filesystems"][0]["nowait"] == "clean"
