# SPDX-License-Identifier: MIT
"""The guest's test plan and the host's test log, for tests/vm/run.sh.

    python3 tests/vm/vmtests.py plan BUILDDIR PLAN [--suite S]... [TEST]...
    python3 tests/vm/vmtests.py log PLAN OUTDIR TESTLOG

plan reads `meson introspect --tests BUILDDIR` and writes PLAN: one line
per test that the guest runs (a benchmark is named bench:NAME),
"NAME<TAB>TIMEOUT<TAB>ARGV" where ARGV is a shell-quoted command line
("env K=V ... cmd args") that the guest's runner starts from BUILDDIR.
The tests named, or those of the suites named (by default kernel and
root), in meson's priority order. A python3 that meson found on the
host (a pyenv shim, say) becomes the guest's /usr/bin/python3.

log reads the guest's results (OUTDIR/results: "NAME RC SECONDS" lines,
OUTDIR/NAME.log: the test's output) and writes TESTLOG in the shape of
meson's testlog.json, which scripts/testlog.py reads: exit status 0 is OK,
77 SKIP, 124 (timeout(1)) TIMEOUT, anything else FAIL, and a planned test
with no result (the guest stopped first) is an ERROR that says so.
Prints one line per test and exits 1 when any failed.

A test of SHARDS runs as that many parts side by side, NAME#K, each with
PC_CASES_SHARD=K/N (tests/pc_cases.py: every Nth case); log puts them back
together as one test NAME: OK when every part passed (or skipped), SKIP
when all skipped, otherwise the first failure's exit status; its time is
the longest part's.
"""

import json
import os
import shlex
import subprocess
import sys

DEFAULT_SUITES = ("kernel", "root")
# the guest's longest tests, 3 to 4 minutes each in one part
SHARDS = {"snapshot-cli": 2, "faults": 2}


def plan(argv):
    builddir, out = argv[0], argv[1]
    suites, names = [], []
    it = iter(argv[2:])
    for a in it:
        if a == "--suite":
            suites.append(next(it))
        else:
            names.append(a)
    if not suites and not names:
        suites = list(DEFAULT_SUITES)
    tests = json.loads(subprocess.run(["meson", "introspect", "--tests", builddir],
                                      check=True, capture_output=True, text=True).stdout)
    # benchmarks as bench:NAME (meson runs them only with --benchmark)
    for b in json.loads(subprocess.run(["meson", "introspect", "--benchmarks", builddir],
                                       check=True, capture_output=True, text=True).stdout):
        b["name"] = "bench:" + b["name"]
        b["suite"] = []
        tests.append(b)
    known = {t["name"] for t in tests}
    missing = [n for n in names if n not in known]
    if missing:
        print("vm: no such test: " + ", ".join(missing), file=sys.stderr)
        return 2
    chosen = [t for t in tests
              if t["name"] in names or
              any(s.split(":")[-1] in suites for s in t["suite"])]
    chosen.sort(key=lambda t: -t.get("priority", 0))
    with open(out, "w", encoding="utf-8") as f:
        for t in chosen:
            cmd = list(t["cmd"])
            if os.path.basename(cmd[0]).startswith("python3"):
                cmd[0] = "/usr/bin/python3"
            env = ["%s=%s" % kv for kv in sorted(t["env"].items())]
            parts = SHARDS.get(t["name"], 1)
            for k in range(1, parts + 1):
                name, shard = t["name"], []
                if parts > 1:
                    name, shard = "%s#%d" % (name, k), ["PC_CASES_SHARD=%d/%d" % (k, parts)]
                argv_ = ["env"] + env + shard + cmd
                f.write("%s\t%d\t%s\n" % (name, int(t["timeout"] or 300),
                                          " ".join(shlex.quote(a) for a in argv_)))
    return 0


def merge(parts):
    """One test's (rc, secs, result, output) from those of its parts."""
    if len(parts) == 1:
        return parts[0]
    bad = [p for p in parts if p[2] not in ("OK", "SKIP")]
    if bad:
        rc, result = bad[0][0], bad[0][2]
    elif all(p[2] == "SKIP" for p in parts):
        rc, result = 77, "SKIP"
    else:
        rc, result = 0, "OK"
    output = "".join("---- part %d of %d: %s, exit status %d, %.1fs\n%s\n"
                     % (i + 1, len(parts), p[2], p[0], p[1], p[3])
                     for i, p in enumerate(parts))
    return rc, max(p[1] for p in parts), result, output


def log(argv):
    planfile, outdir, testlog = argv
    planned = [line.split("\t", 1)[0] for line in open(planfile, encoding="utf-8")
               if line.strip()]
    results = {}
    try:
        for line in open(os.path.join(outdir, "results"), encoding="utf-8"):
            parts = line.split()
            if len(parts) == 3:
                results[parts[0]] = (int(parts[1]), float(parts[2]))
    except OSError:
        pass
    tests = {}  # NAME: the (rc, secs, result, output) of each part, in plan order
    for part in planned:
        try:
            with open(os.path.join(outdir, part + ".log"), encoding="utf-8",
                      errors="replace") as lf:
                output = lf.read()
        except OSError:
            output = ""
        if part in results:
            rc, secs = results[part]
            result = {0: "OK", 77: "SKIP", 124: "TIMEOUT"}.get(rc, "FAIL")
        else:
            rc, secs, result = -1, 0.0, "ERROR"
            output += "\nvm: the guest stopped before this test finished\n"
        tests.setdefault(part.split("#")[0], []).append((rc, secs, result, output))
    failed = 0
    with open(testlog, "w", encoding="utf-8") as f:
        for name, parts in tests.items():
            rc, secs, result, output = merge(parts)
            if result not in ("OK", "SKIP"):
                failed += 1
            print("vm: %-16s %-7s %7.1fs (exit status %d)%s"
                  % (name, result, secs, rc, " in %d parts" % len(parts) if len(parts) > 1 else ""))
            f.write(json.dumps({"name": "vm / " + name, "result": result,
                                "duration": secs, "returncode": rc,
                                "stdout": output}) + "\n")
    return 1 if failed else 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("plan", "log"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "plan":
        return plan(sys.argv[2:])
    return log(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
