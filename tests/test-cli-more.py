#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of pagecache audit, evict, touch, lock and stat --pid / --threads,
run against the built binary, with the helpers of test-cli.py.

Usage: test-cli-more.py PATH-TO-pagecache PATH-TO-libpagecache.so
audit --json is compared field by field with what the library's own
pc_detect_* functions answer (through ctypes, in a child python), and with
uname, findmnt and /proc. Residency is compared with mincore as root, once
the reads have settled. Prints one line per case ("SKIP: case: why" for a
case that cannot run here); exits 0, 1 on a failure, 77 when nothing can run.
Under PC_UNDER_VALGRIND=1 every pagecache run goes through valgrind."""

import pc_unvalgrind  # noqa: F401 (first: leaves valgrind, see the module)
from pc_cases import cached_pages, only_cases, run_cases
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("test_cli", os.path.join(_here, "test-cli.py"))
tc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tc)

check, Failure, Skip, run = tc.check, tc.Failure, tc.Skip, tc.run
PS, NOBODY, IS_ROOT = tc.PS, tc.NOBODY, tc.IS_ROOT
mincore, make_file, set_pattern, stable_mincore = (tc.mincore, tc.make_file, tc.set_pattern,
                                                    tc.stable_mincore)
need_root = tc.need_root


def run_json(args, **kw):
    """A pagecache command with --json; (rc, document, stderr)."""
    rc, out, err = run([args[0], "--json"] + args[1:], **kw)
    try:
        doc = json.loads(out)
    except ValueError as e:
        raise Failure(f"{args[0]}: output is not JSON ({e}): {out[:500]!r} {err[:300]!r}")
    return rc, doc, err


def command(args):
    """The argv that run() would use, for a process started in the background."""
    cmd = [tc.EXE] + args
    if tc.UNDER_VALGRIND:
        cmd = tc.VALGRIND + cmd
    return cmd


DETECT = r"""
import ctypes, json, os, sys
L = ctypes.CDLL(sys.argv[1])
for name in ("pc_mincore_mode_name", "pc_nowait_mode_name", "pc_cachestat_mode_name"):
    getattr(L, name).restype = ctypes.c_char_p
def nowait(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    mode = L.pc_detect_nowait_flags(fd, 0)  # as audit asks: no page read in
    os.close(fd)
    return L.pc_nowait_mode_name(mode).decode() if mode >= 0 else "unknown"
print(json.dumps({
    "mincore": L.pc_mincore_mode_name(L.pc_detect_mincore()).decode(),
    "cachestat": L.pc_cachestat_mode_name(L.pc_detect_cachestat()).decode(),
    "io_uring": L.pc_detect_io_uring(),
    "nowait": {p: nowait(p) for p in sys.argv[2:]}}))
"""


def library_detect(paths):
    """What the library's pc_detect_* answer, asked through ctypes in a
    child python (a sanitizer build's library needs its runtime preloaded)."""
    env = dict(os.environ)
    for attempt in range(2):
        p = subprocess.run([sys.executable, "-c", DETECT, sys.argv[2]] + paths,
                           capture_output=True, text=True, env=env)
        if p.returncode == 0:
            return json.loads(p.stdout)
        ldd = subprocess.run(["ldd", sys.argv[2]], capture_output=True, text=True).stdout
        runtime = [w for w in ldd.split()
                   if ("libasan" in w or "libtsan" in w) and w.startswith("/")]
        if not runtime:
            break
        env["LD_PRELOAD"] = runtime[0]
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    raise Failure(f"cannot ask the library: {p.stderr[-500:]}")


def settle(path):
    """mincore once the reads in flight have finished: mincore counts a page
    only when it is up to date, cachestat as soon as it is in the cache, so
    none is in flight when the two agree (for 5 s at most). Where cachestat
    does not answer: once mincore stops changing."""
    last = mincore(path)
    for _ in range(250):
        cached = cached_pages(path)
        if cached is not None and cached == sum(last):
            return last
        time.sleep(0.02)
        now = mincore(path)
        if cached is None and now == last:
            return now
        last = now
    return last


def cap_eff(bit):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool((int(line.split()[1], 16) >> bit) & 1)
    return False


# ---- help and usage --------------------------------------------------------

def case_help_every_command(env):
    rc, out, _ = run(["--help"])
    for cmd in (b"stat", b"audit", b"evict", b"touch", b"lock"):
        check(cmd in out, f"pagecache --help does not list {cmd!r}")
    wants = {"audit": [b"--json"],
             "evict": [b"--json", b"--verbose", b"--include", b"--pid", b"--max-size"],
             "touch": [b"--range", b"--method", b"--json", b"--exclude", b"--files-from"],
             "lock": [b"--pidfile", b"RLIMIT_MEMLOCK", b"--one-file-system", b"--dereference"],
             "stat": [b"--pid", b"--threads"]}
    for cmd, words in wants.items():
        rc, out, err = run([cmd, "--help"])
        check(rc == 0, f"{cmd} --help: rc {rc}")
        for w in words:
            check(w in out, f"{cmd} --help does not mention {w!r}")


def case_new_usage_errors_exit_2(env):
    d = env.dir
    for args in (["audit", "--bogus"], ["evict"], ["touch"], ["lock"],
                 ["touch", "--range", "5-3", d], ["touch", "--range", "x", d],
                 ["touch", "--range", "4K", d], ["touch", "--method", "magic", d],
                 ["stat", "--pid", "abc"], ["stat", "--pid", "0"], ["stat", "--threads", "3", d],
                 ["stat", "--threads", "0", d], ["evict", "-0", d], ["lock", "--pidfile"],
                 ["evict", "--max-size", "1Q", d]):
        rc, out, err = run(args)
        check(rc == 2, f"{args}: exit {rc}, want 2")
        check(b"Try 'pagecache" in err, f"{args}: no hint on stderr: {err!r}")


# ---- audit -----------------------------------------------------------------

def check_channels(doc):
    """The verdict follows from the modes, by doc/kernels.md's rules."""
    mc, cs = doc["mincore"]["mode"], doc["cachestat"]["mode"]
    want_mc = {"full": "open", "gated-faked": "closed", "gated-mapped": "closed",
               "mapped-only": "closed", "useless": "closed", "unknown": "unknown"}[mc]
    want_cs = {"open": "open", "gated": "closed", "blocked": "closed", "absent": "closed",
               "unknown": "unknown"}[cs]
    nowait = {"clean": ("open", "clean"), "destructive": ("open", "destructive"),
              "unsupported": ("closed", None), "unknown": ("unknown", None)}
    chans = doc["side_channels"]
    byname = {}
    for c in chans:
        check(set(c) == {"channel", "path", "status", "probe", "why"}, f"channel fields {c}")
        check(isinstance(c["why"], str) and c["why"], "why")
        byname.setdefault(c["channel"], []).append(c)
    check(byname["mincore"][0]["status"] == want_mc, f"mincore {mc} -> {byname['mincore']}")
    check(byname["cachestat"][0]["status"] == want_cs, f"cachestat {cs} -> {byname['cachestat']}")
    fss = [f for f in doc["filesystems"] if "error" not in f]
    check(len(byname.get("rwf_nowait", [])) == len(fss) == len(byname.get("io_uring", [])),
          "one rwf_nowait and one io_uring channel per filesystem")
    for f, nw, io in zip(fss, byname.get("rwf_nowait", []), byname.get("io_uring", [])):
        check(nw["path"] == f["path"] == io["path"], "channel paths")
        check((nw["status"], nw["probe"]) == nowait[f["nowait"]], f"rwf_nowait for {f} -> {nw}")
        if doc["io_uring"]["available"]:
            check((io["status"], io["probe"]) == nowait[f["nowait"]], f"io_uring {io}")
        else:
            check(io["status"] == "closed", "io_uring unavailable but not closed")
    v = doc["verdict"]
    for s in ("open", "closed", "unknown"):
        check(v[s] == sum(c["status"] == s for c in chans), f"verdict.{s}")


def case_audit_json_field_by_field(env):
    shm = "/dev/shm"
    paths = [env.dir] + ([shm] if os.path.isdir(shm) else [])
    rc, doc, err = run_json(["audit"] + paths)
    check(rc == 0, f"exit {rc}: {err!r}")
    check(set(doc) == {"format_version", "kernel", "mincore", "cachestat", "io_uring",
                       "filesystems", "caller", "side_channels", "verdict"}, f"keys {set(doc)}")
    check(doc["format_version"] == 1, "format_version")
    u = os.uname()
    k = doc["kernel"]
    check(k["sysname"] == u.sysname and k["release"] == u.release and
          k["version"] == u.version and k["machine"] == u.machine, f"kernel {k}")
    check(k["page_size"] == PS, "page_size")
    check(isinstance(k["library_version"], str) and k["library_version"].count(".") == 2,
          "library_version")
    lib = library_detect(paths)
    if not tc.UNDER_VALGRIND:  # valgrind knows no cachestat: its answers differ
        check(doc["mincore"]["mode"] == lib["mincore"],
              f"mincore {doc['mincore']} != library {lib['mincore']}")
        check(doc["cachestat"]["mode"] == lib["cachestat"],
              f"cachestat {doc['cachestat']} != library {lib['cachestat']}")
        check(doc["io_uring"]["available"] == (lib["io_uring"] == 1), "io_uring")
    for part in ("mincore", "cachestat"):
        check(isinstance(doc[part]["meaning"], str) and doc[part]["meaning"], f"{part}.meaning")
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            disabled = int(f.read())
    except FileNotFoundError:  # the sysctl came with 6.6
        disabled = None
    check(doc["io_uring"]["io_uring_disabled"] == disabled, "io_uring_disabled")
    fss = doc["filesystems"]
    check([f["path"] for f in fss] == paths, f"filesystems {fss}")
    for f in fss:
        check(set(f) == {"path", "fstype", "mount_point", "device", "nowait", "meaning",
                         "nowait_learned_in"},
              f"filesystem keys {set(f)}")
        st = os.stat(f["path"])
        check(f["device"] == {"major": os.major(st.st_dev), "minor": os.minor(st.st_dev)},
              f"device {f['device']}")
        fm = subprocess.run(["findmnt", "-no", "FSTYPE,TARGET", "-T", f["path"]],
                            capture_output=True, text=True)
        if fm.returncode == 0:
            # stacked mounts list several lines: the last one is on top
            fstype, target = fm.stdout.splitlines()[-1].split(None, 1)
            check(f["fstype"] == fstype and f["mount_point"] == target.strip(),
                  f"{f['path']}: {f['fstype']} on {f['mount_point']}, findmnt {fm.stdout!r}")
        check(f["nowait"] == lib["nowait"][f["path"]],
              f"{f['path']}: nowait {f['nowait']} != library {lib['nowait'][f['path']]}")
    if len(fss) > 1 and fss[1]["fstype"] == "tmpfs":
        check(fss[1]["nowait"] == "unsupported", f"tmpfs: {fss[1]['nowait']}")
    c = doc["caller"]
    check(c["uid"] == os.getuid() and c["euid"] == os.geteuid(), "caller ids")
    check(c["fsuid"] == os.geteuid(), "fsuid")
    caps = c["capabilities"]
    for name, bit in (("fowner", 3), ("dac_override", 1), ("sys_admin", 21), ("ipc_lock", 14)):
        check(caps[name] == cap_eff(bit), f"capabilities.{name}")
    check(c["view"] == ("root" if IS_ROOT and caps["fowner"] else
                        "cap_fowner" if caps["fowner"] else "unprivileged"), f"view {c}")
    check_channels(doc)


def case_audit_io_uring_wherever_libc_lives(env):
    """io_uring's availability is the ring's, not a fact of the filesystem
    libc was loaded from: the same answer with libc copied to /dev/shm
    (tmpfs refused RWF_NOWAIT before 6.6, and the probe once read libc)."""
    rc, doc, err = run_json(["audit", env.dir])
    check(rc == 0, f"exit {rc}: {err!r}")
    lib = library_detect([env.dir])
    check(doc["io_uring"]["available"] == (lib["io_uring"] == 1), "io_uring")
    ldd = subprocess.run(["ldd", tc.EXE], capture_output=True, text=True).stdout
    libc = [w for line in ldd.splitlines() if "libc.so" in line
            for w in line.split() if w.startswith("/")]
    if not libc or not os.path.isdir("/dev/shm"):
        raise Skip("no libc.so in ldd's answer, or no /dev/shm")
    shm = tempfile.mkdtemp(dir="/dev/shm", prefix="pc-libc.")
    old = os.environ.get("LD_LIBRARY_PATH")
    try:
        shutil.copy(libc[0], os.path.join(shm, os.path.basename(libc[0])))
        os.environ["LD_LIBRARY_PATH"] = shm + (":" + old if old else "")
        rc2, doc2, err2 = run_json(["audit", env.dir])
    finally:
        if old is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = old
        shutil.rmtree(shm)
    check(rc2 == 0, f"exit {rc2}: {err2!r}")
    check(doc2["io_uring"] == doc["io_uring"],
          f"libc on /dev/shm: io_uring {doc2['io_uring']}, else {doc['io_uring']}")


def case_audit_as_nobody_and_text(env):
    rc, doc, err = run_json(["audit", env.dir], as_nobody=True)
    check(rc == 0, f"exit {rc}: {err!r}")
    c = doc["caller"]
    check(c["uid"] == NOBODY and c["euid"] == NOBODY and c["view"] == "unprivileged", f"{c}")
    check(not any(c["capabilities"].values()), f"capabilities {c['capabilities']}")
    check(c["sees"] == "files it owns or may write", "sees")
    check_channels(doc)
    # the text report says the same things
    rc, out, err = run(["audit", env.dir])
    check(rc == 0, f"text: exit {rc}")
    text = out.decode()
    for word in ("kernel:", "page size:", "mincore:", "cachestat:", "io_uring:",
                 "RWF_NOWAIT on", "Verdict", doc["mincore"]["mode"], doc["cachestat"]["mode"],
                 doc["filesystems"][0]["nowait"], os.uname().release):
        check(word in text, f"text report lacks {word!r}")
    # default PATH: the current directory
    p = subprocess.run(command(["audit", "--json"]), cwd=env.dir, capture_output=True)
    doc = json.loads(p.stdout)
    check(p.returncode == 0 and doc["filesystems"][0]["path"] == ".", "default path")
    # a PATH that cannot be examined: an error line, exit 1, the rest reported
    rc, doc, err = run_json(["audit", env.path("missing"), env.dir])
    check(rc == 1, f"missing path: exit {rc}")
    check(doc["filesystems"][0]["errno"] == 2 and "nowait" in doc["filesystems"][1],
          f"{doc['filesystems']}")
    check(err.decode().strip() == f"pagecache: {env.path('missing')}: No such file or directory",
          f"{err!r}")


# ---- evict -----------------------------------------------------------------

def case_audit_changes_no_page(env):
    """audit as uid 65534 of a directory it cannot write, holding a cold
    file it may write (so sees truthfully): the RWF_NOWAIT mode is not
    found with that file (it would read a page in) but with a scratch file
    where uid 65534 may write, and audit says where; or it is unknown."""
    need_root()
    d = env.path("ro")
    os.mkdir(d, 0o755)
    f = os.path.join(d, "open")
    make_file(f, 16)
    os.chmod(f, 0o666)
    set_pattern(f, [])
    check(sum(mincore(f)) == 0, "the file is not cold")
    rc, doc, err = run_json(["audit", d], as_nobody=True)
    check(rc == 0, f"{rc} {doc} {err!r}")
    fs = doc["filesystems"][0]
    if fs["nowait_learned_in"] is None:
        check(fs["nowait"] == "unknown", f"{fs}")
    else:
        check(fs["nowait"] == library_detect([d])["nowait"][d] and
              fs["nowait_learned_in"] in (os.environ.get("TMPDIR"), "/var/tmp", "/tmp",
                                          os.environ.get("HOME")), f"{fs}")
    check(sum(mincore(f)) == 0, f"audit cached {sum(mincore(f))} pages of {f}")


def case_evict_then_stat_shows_zero(env):
    need_root()
    p = env.path("evict-me")
    make_file(p, 64)
    with open(p, "rb") as f:
        f.read()
    before = settle(p)
    check(sum(before) == 64, f"file not cached before the test: {sum(before)}")
    rc, doc, err = run_json(["evict", p])
    check(rc == 0, f"exit {rc}: {err!r}")
    f = doc["files"][0]
    check(doc["format_version"] == 1 and doc["command"] == "evict", "document header")
    check(f["path"] == p and f["size"] == 64 * PS and f["pages"] == 64, f"{f}")
    check(f["quality"] == "exact", "quality")
    check(f["resident_before"] == 64 or tc.UNDER_VALGRIND, f"before {f['resident_before']}")
    # valgrind reads the first pages of every file the program maps (the
    # mincore path, as valgrind has no cachestat): a bound there
    check(f["resident_after"] == 0 or (tc.UNDER_VALGRIND and f["resident_after"] <= 16),
          f"after {f['resident_after']}")
    vec, (rc, sdoc, err) = stable_mincore(p, lambda: tc.run_json(["stat", p]))
    check(sum(vec) == 0 or tc.UNDER_VALGRIND, f"mincore after evict: {sum(vec)}")
    check(sdoc["files"][0]["resident_pages"] == sum(vec), "stat after evict")
    t = doc["totals"]
    check(t["files"] == 1 and t["known_files"] == 1 and t["unknown_files"] == 0 and
          t["resident_after"] == f["resident_after"] and t["pages"] == 64, f"totals {t}")
    # text: one row per file with -v, then the totals line
    with open(p, "rb") as fh:
        fh.read()
    rc, out, err = run(["evict", "-v", p])
    lines = out.decode().splitlines()
    check(lines[0].split() == ["SIZE", "BEFORE", "AFTER", "QUALITY", "PATH"], f"{lines[0]}")
    check((lines[1].split()[2] == "0" or tc.UNDER_VALGRIND) and lines[1].endswith(p),
          f"row {lines[1]}")
    check(lines[2].startswith("evicted: 1 file,"), f"totals {lines[2]}")


def case_evict_as_nobody_tells_the_truth(env):
    need_root()
    p = env.path("root-evict")
    make_file(p, 32, 0o644, uid=0)
    with open(p, "rb") as f:
        f.read()
    settle(p)
    rc, doc, err = run_json(["evict", p], as_nobody=True)
    check(rc == 0, f"exit {rc}: {err!r}")
    f = doc["files"][0]
    if tc.nowait_clean(p):
        # a clean RWF_NOWAIT probe answers for it, before and after
        check(f["quality"] == "exact" and f["resident_before"] == 32 and
              f["resident_after"] == 0 == sum(settle(p)), f"clean NOWAIT: {f}")
        return
    check(f["resident_before"] is None and f["resident_after"] is None, f"numbers shown: {f}")
    check(f["quality"] == "unknown", f"quality {f}")
    check(doc["totals"]["unknown_files"] == 1 and doc["totals"]["known_files"] == 0, "totals")
    # the eviction itself happened: the truth, as root
    check(sum(settle(p)) == 0 or tc.UNDER_VALGRIND, "not evicted")
    with open(p, "rb") as fh:
        fh.read()
    rc, out, err = run(["evict", "-v", p], as_nobody=True)
    text = out.decode()
    row = text.splitlines()[1].split()
    check(row[1] == "?" and row[2] == "?" and row[3] == "unknown", f"row {row}")
    check("100" not in text.splitlines()[1] and "1 unknown" in text, f"{text}")
    check("before and after are unknown" in text, "no note for the hidden file")


def case_evict_walks_like_stat(env):
    d = env.path("evtree")
    os.makedirs(os.path.join(d, "skip"))
    for n in ("a.log", "b.txt", "skip/c.log"):
        make_file(os.path.join(d, n), 2)
    make_file(os.path.join(d, "big.log"), 40)
    os.mkfifo(os.path.join(d, "fifo"))
    rc, doc, err = run_json(["evict", "--include", "*.log", "--exclude", "skip",
                             "--max-size", str(8 * PS), d])
    check(rc == 0, f"exit {rc}: {err!r}")
    names = sorted(os.path.relpath(f["path"], d) for f in doc["files"])
    check(names == ["a.log"], f"files {names}")
    check(doc["totals"]["filtered"] == 1 and doc["totals"]["skipped"] == 1, f"{doc['totals']}")
    check(any("FIFO" in s["reason"] for s in doc["skipped"]), "fifo note")
    rc, out, err = run(["evict", env.path("nope"), d])
    check(rc == 1 and b"nope: No such file or directory" in err, f"missing: {rc} {err!r}")


# ---- touch -----------------------------------------------------------------

def case_touch_then_stat_shows_full(env):
    need_root()
    p = env.path("touch-me")
    make_file(p, 300)
    for method in ("populate", "readahead", "willneed", "io_uring"):
        set_pattern(p, [])
        check(sum(mincore(p)) == 0 or tc.UNDER_VALGRIND, "eviction did not hold")
        rc, doc, err = run_json(["touch", "--method", method, p])
        check(rc == 0, f"{method}: exit {rc}: {err!r}")
        f = doc["files"][0]
        check(f["bytes_read"] == 300 * PS and f["offset"] == 0 and f["pages"] == 300,
              f"{method}: {f}")
        check(f["resident_after"] == 300 and f["quality"] == "exact", f"{method}: {f}")
        t = doc["totals"]
        check(t["method"] == method and t["bytes_read"] == 300 * PS and t["seconds"] >= 0,
              f"{method}: totals {t}")
        vec = settle(p)
        check(sum(vec) == 300, f"{method}: mincore {sum(vec)}/300 after touch")
        rc, sdoc, err = tc.run_json(["stat", p])
        check(sdoc["files"][0]["percent"] == 100.0, f"{method}: stat {sdoc['files'][0]}")
    rc, out, err = run(["touch", p])
    check(rc == 0 and out.startswith(b"touched: 1 file,") and b"/s, populate)" in out,
          f"text: {out!r}")


def case_touch_range(env):
    need_root()
    p = env.path("touch-range")
    npages = (64 << 20) // PS
    with open(p, "wb") as f:
        f.truncate(64 << 20)
    with open(p, "r+b") as f:  # real blocks, not a hole
        for off in range(0, 64 << 20, 1 << 20):
            f.seek(off)
            f.write(b"r" * (1 << 20))
        f.flush()
        os.fsync(f.fileno())
    set_pattern(p, [])
    rc, doc, err = run_json(["touch", "--range", "8K-1M", p])
    check(rc == 0, f"exit {rc}: {err!r}")
    f = doc["files"][0]
    check(f["offset"] == 8192 and f["bytes_read"] == (1 << 20) - 8192, f"{f}")
    check(f["pages"] == f["resident_after"] == (1 << 20) // PS - 2, f"{f}")
    vec = settle(p)
    check(all(vec[2:(1 << 20) // PS]), "a page of the range is not resident")
    # readahead may pull neighbours in, but not half the file away
    check(sum(vec[npages // 2:]) == 0 or tc.UNDER_VALGRIND, "pages far beyond the range")
    rc, doc, err = run_json(["touch", "--range", "63M-", p])
    check(doc["files"][0]["offset"] == 63 << 20 and
          doc["files"][0]["bytes_read"] == 1 << 20, f"open end: {doc['files'][0]}")
    rc, doc, err = run_json(["touch", "--range", "100M-200M", p])
    check(rc == 0 and doc["files"][0]["bytes_read"] == 0, "range beyond EOF")


def case_touch_as_nobody(env):
    need_root()
    p = env.path("root-touch")
    make_file(p, 16, 0o644, uid=0)
    set_pattern(p, [])
    rc, doc, err = run_json(["touch", p], as_nobody=True)
    check(rc == 0, f"exit {rc}: {err!r}")
    f = doc["files"][0]
    if tc.nowait_clean(p):
        check(f["resident_after"] == 16 and f["quality"] == "exact", f"clean NOWAIT: {f}")
    else:
        check(f["resident_after"] is None and f["quality"] == "unknown", f"{f}")
    check(f["bytes_read"] == 16 * PS, "bytes_read")
    check(sum(settle(p)) == 16, "the hidden file was not read in")


def case_touch_files_from_null(env):
    d = env.path("tlist")
    os.mkdir(d)
    paths = []
    for n in (b"one", b"two words", b"three\nlines"):
        q = os.path.join(os.fsencode(d), n)
        with open(q, "wb") as f:
            f.write(b"t" * 3 * PS)
        paths.append(q)
    rc, out, err = run(["touch", "--json", "--files-from", "-", "-0"],
                       input_bytes=b"\0".join(paths) + b"\0")
    doc = json.loads(out)
    check(rc == 0 and doc["totals"]["files"] == 3, f"{rc} {doc['totals']}")
    check(doc["totals"]["bytes_read"] == 9 * PS, "bytes_read")


# ---- lock ------------------------------------------------------------------

def wait_for_file(path, proc, timeout=30 * (10 if tc.UNDER_VALGRIND else 1)):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return
        if proc.poll() is not None:
            raise Failure(f"exited early ({proc.returncode}): {proc.communicate()}")
        time.sleep(0.05)
    raise Failure(f"{path} did not appear")


def vm_locked_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmLck:"):
                return int(line.split()[1])
    return 0


def case_lock_holds_pages(env):
    need_root()
    p = env.path("lock-me")
    make_file(p, 256)
    q = env.path("lock-me-too")
    make_file(q, 3)
    set_pattern(p, [])
    set_pattern(q, [])
    pidfile = env.path("lock.pid")
    proc = subprocess.Popen(command(["lock", "-v", "--pidfile", pidfile, p, q]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_file(pidfile, proc)
        with open(pidfile) as f:
            check(int(f.read()) == proc.pid or tc.UNDER_VALGRIND, "pidfile content")
        check(sum(mincore(p)) == 256 and sum(mincore(q)) == 3, "not all pages resident")
        check(vm_locked_kb(proc.pid) * 1024 >= 259 * PS, f"VmLck {vm_locked_kb(proc.pid)} kB")
        # locked pages survive an eviction
        rc, doc, err = run_json(["evict", p])
        check(doc["files"][0]["resident_after"] == 256, f"evicted a locked file: {doc['files']}")
        check(sum(mincore(p)) == 256, "locked pages went away")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check(proc.returncode == 0, f"exit {proc.returncode}: {err!r}")
    check(not os.path.exists(pidfile), "pidfile left behind")
    text = out.decode()
    check("locked: 2 files" in text and "SIGTERM: released" in text, f"{text}")
    check(text.count("\nlocked ") + text.startswith("locked ") == 2, f"-v rows: {text}")
    check("no limit on locked memory" in text, "the limit is not stated")


def case_lock_sigint_and_nothing(env):
    p = env.path("lock-int")
    make_file(p, 2)
    pidfile = env.path("int.pid")
    proc = subprocess.Popen(command(["lock", "--pidfile", pidfile, p]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_file(pidfile, proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check(proc.returncode == 0 and b"SIGINT: released" in out, f"{proc.returncode} {out!r}")
    check(not os.path.exists(pidfile), "pidfile left behind")
    # nothing to hold: exits at once
    d = env.path("empty-dir")
    os.mkdir(d)
    rc, out, err = run(["lock", d])
    check(rc == 0 and b"nothing to hold" in out, f"empty: {rc} {out!r}")


def case_lock_rlimit_memlock(env):
    need_root()
    p = env.path("too-big")
    make_file(p, 64, 0o644)
    small = env.path("fits")
    make_file(small, 2, 0o644)
    limit = 32 * PS
    cmd = ["prlimit", f"--memlock={limit}:{limit}", "setpriv", f"--reuid={NOBODY}",
           f"--regid={NOBODY}", "--clear-groups"] + command(["lock", "--pidfile",
                                                              env.path("rl.pid"), p, small])
    os.chmod(env.dir, 0o777)  # the pidfile, written as uid 65534
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_file(env.path("rl.pid"), proc)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = out.decode()
    check(proc.returncode == 1, f"exit {proc.returncode} (one file failed): {text} {err!r}")
    check(f"RLIMIT_MEMLOCK is {limit // 1024}K" in text, f"limit not stated: {text}")
    check("at most" in text and "locked: 1 file" in text, f"{text}")
    check(b"too-big: not locked: needs 256K" in err and b"RLIMIT_MEMLOCK" in err, f"{err!r}")


# ---- stat --pid and --threads ---------------------------------------------

HELPER = r"""
import mmap, os, sys, time
a = open(sys.argv[1], "rb")
a2 = open(sys.argv[1], "rb")            # the same file twice
with open(sys.argv[2], "rb") as b:      # mapped, its fd closed
    m = mmap.mmap(b.fileno(), 0, prot=mmap.PROT_READ)
c = open(sys.argv[3], "rb")
os.unlink(sys.argv[3])                  # open but deleted
print("ready", flush=True)
time.sleep(120)
"""


def case_stat_pid(env):
    a, b, c = env.path("held-open"), env.path("held-mapped"), env.path("held-deleted")
    make_file(a, 3)
    make_file(b, 5)
    make_file(c, 7)
    proc = subprocess.Popen([sys.executable, "-c", HELPER, a, b, c], stdout=subprocess.PIPE)
    try:
        check(proc.stdout.readline().strip() == b"ready", "helper did not start")
        rc, doc, err = tc.run_json(["stat", "--pid", str(proc.pid)])
        check(rc == 0, f"exit {rc}: {err!r}")
        paths = [f["path"] for f in doc["files"]]
        check(len(paths) == len(set(paths)), f"a file listed twice: {paths}")
        byp = {f["path"]: f for f in doc["files"]}
        check(a in byp and byp[a]["pages"] == 3, f"open file missing: {paths}")
        check(b in byp and byp[b]["pages"] == 5, f"mapped file missing: {paths}")
        dele = [f for f in doc["files"] if f["path"] == c + " (deleted)"]
        check(len(dele) == 1 and dele[0]["pages"] == 7, f"deleted file: {paths}")
        check(os.path.realpath(sys.executable) in byp, "the interpreter is mapped")
        check(doc["totals"]["skipped"] == 0, f"notes for duplicates: {doc['skipped']}")
        # the selection filters apply
        rc, doc, err = tc.run_json(["stat", "--pid", str(proc.pid), "--include", "held-*"])
        got = sorted(os.path.basename(f["path"]) for f in doc["files"])
        check(got == ["held-deleted (deleted)", "held-mapped", "held-open"], f"--include {got}")
        rc, out, err = run(["stat", "--pid", str(proc.pid), a])
        check(rc == 0 and out.count(b"held-open") == 1, "a path and --pid together")
    finally:
        proc.kill()
        proc.wait()
    rc, out, err = run(["stat", "--pid", str(proc.pid)])
    check(rc == 1 and b"no such process" in err, f"gone: {rc} {err!r}")


def case_stat_threads_same_output(env):
    t = tc.make_tree(env)
    for i in range(300):
        with open(os.path.join(t, f"n{i:03d}"), "wb") as f:
            f.write(b"n" * (i * 37 % 9000))
        if IS_ROOT:  # uid 65534's own files: known to it, with numbers
            os.chown(os.path.join(t, f"n{i:03d}"), NOBODY, NOBODY)
    os.chmod(os.path.join(t, "sub"), 0o700)
    # with two threads, either may check and measure a file: whichever has
    # time, or (PC_PIPELINE_TEST) always the walker, always the consumer
    modes = (None, "walker", "consumer")
    try:
        for fmt in ([], ["--ndjson"], ["--json", "--stats"], ["--map", "--bytes"]):
            for attempt in range(3):  # residency may move between runs
                outs = []
                for threads, mode in [("1", None)] + [("2", m) for m in modes]:
                    if mode:
                        os.environ["PC_PIPELINE_TEST"] = mode
                    else:
                        os.environ.pop("PC_PIPELINE_TEST", None)
                    rc, out, err = run(["stat", "--threads", threads] + fmt + [t],
                                       as_nobody=IS_ROOT)
                    outs.append((rc, out, err))
                if all(o == outs[0] for o in outs[1:]):
                    break
            for o, mode in zip(outs[1:], modes):
                check(outs[0] == o, f"{fmt}: --threads 1 and 2 ({mode}) differ:\n"
                      f"{outs[0][2]!r}\n{o[2]!r}")
            check(outs[0][0] == (1 if IS_ROOT else 0), f"{fmt}: exit {outs[0][0]}")
    finally:
        os.environ.pop("PC_PIPELINE_TEST", None)


def ndjson_paths(args):
    """The paths of the file objects of `stat --ndjson ARGS`, and stderr."""
    rc, out, err = run(["stat", "--ndjson"] + args)
    check(rc == 0, f"stat {args}: exit {rc}: {err!r}")
    objs = [json.loads(l) for l in out.decode().splitlines()]
    return [o["path"] for o in objs if o["type"] == "file"], err


def case_stat_counts_each_file_once(env):
    # the walk remembers files with one link only when they can come again
    # (several roots, -L); directories always: each way in is checked here
    t = env.path("t")
    os.makedirs(os.path.join(t, "sub"))
    make_file(os.path.join(t, "a"), 1)
    make_file(os.path.join(t, "sub", "b"), 1)
    os.link(os.path.join(t, "a"), os.path.join(t, "sub", "h"))
    inodes = {os.stat(os.path.join(t, n)).st_ino for n in ("a", "sub/b")}

    def once(args, why):
        paths, err = ndjson_paths(args)
        got = [os.stat(p).st_ino for p in paths]
        check(sorted(got) == sorted(inodes), f"{why}: {paths}")
        return err

    once([t], "one root with a hard link")
    err = once([t, os.path.join(t, "sub")], "a root inside another")
    check(b"a directory already walked" in err, f"no note for the second root: {err!r}")
    once([os.path.join(t, "sub"), t], "a root around another")
    once([os.path.join(t, "sub", "b"), t], "a file root, then its directory")
    once([t, os.path.join(t, "sub", "b")], "a directory, then a file root in it")
    once([t, t], "the same root twice")
    lst = env.path("list")
    with open(lst, "w") as f:
        f.write(f"{t}\n{os.path.join(t, 'sub', 'b')}\n")
    once(["--files-from", lst], "--files-from")
    os.symlink(os.path.join(t, "sub", "b"), os.path.join(t, "lnk"))
    os.symlink(os.path.join(t, "sub"), os.path.join(t, "dirlnk"))
    once(["-L", t], "-L with symlinks to a file and a directory")
    os.unlink(os.path.join(t, "lnk"))
    os.unlink(os.path.join(t, "dirlnk"))
    if not IS_ROOT:
        return
    mnt = os.path.join(t, "mnt")
    os.mkdir(mnt)
    if subprocess.run(["mount", "--bind", os.path.join(t, "sub"), mnt],
                      capture_output=True).returncode != 0:
        raise Skip("mount --bind failed")
    try:
        err = once([t], "a bind mount inside the one root")
        check(b"a directory already walked" in err, f"no note for the bind mount: {err!r}")
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


CASES = [case_help_every_command, case_new_usage_errors_exit_2, case_audit_json_field_by_field,
         case_audit_io_uring_wherever_libc_lives,
         case_audit_as_nobody_and_text, case_audit_changes_no_page,
         case_evict_then_stat_shows_zero,
         case_evict_as_nobody_tells_the_truth, case_evict_walks_like_stat,
         case_touch_then_stat_shows_full, case_touch_range, case_touch_as_nobody,
         case_touch_files_from_null, case_lock_holds_pages, case_lock_sigint_and_nothing,
         case_lock_rlimit_memlock, case_stat_pid, case_stat_threads_same_output,
         case_stat_counts_each_file_once]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tc.EXE = os.path.abspath(sys.argv[1])
    probe = tc.Env()
    if tc.tmpfs(probe.dir):
        probe.cleanup()
        print("SKIP: test-cli-more: the test directory is on tmpfs")
        return 77
    probe.cleanup()
    failed = run_cases(CASES, tc.Env, only_cases("PC_TEST_CASES"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
