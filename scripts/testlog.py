# SPDX-License-Identifier: MIT
"""Skip accounting for scripts/test.sh.

    python3 scripts/testlog.py --stage NAME --log TESTLOG.json
                               --expected tests/expected-skips
                               --counts FILE [--failures FILE] [--ci]

Reads meson's JSON test log (one object per line), prints every skip of
the stage: tests meson reports as SKIP (the binary exited 77) and the
"SKIP: <case>: <why>" lines that test binaries print (pc_test_skip()).
Each skip gets an id, STAGE:TEST for a whole test, STAGE:TEST:CASE for a
case, which tests/expected-skips matches (see the header of that file).

Writes "PASSED FAILED SKIPPED UNEXPECTED" (meson tests; unexpected skips)
to --counts. With --failures, appends a digest of every failed test to FILE
(its Check failure lines, sanitizer reports and the end of its output), so
that test.sh can repeat it after the summary, where a log cut to its last
lines still shows why the run failed. Exit status: 1 when --ci and a skip is not expected, when the
log cannot be read or when expected-skips has a malformed line; else 0.
"""

import argparse
import fnmatch
import json
import re
import sys

PASSED = {"OK", "EXPECTEDFAIL"}
FAILED = {"FAIL", "ERROR", "TIMEOUT", "UNEXPECTEDPASS", "INTERRUPT"}
SKIP_LINE = re.compile(r"^SKIP: (.+?): (.*)$")
# Check's "file:line:F:case:test:iteration: message" (E for an error) and
# the first lines of sanitizer and valgrind reports
KEY_LINE = re.compile(r":[0-9]+:[FE]:|^(==[0-9]+== )?(ERROR|SUMMARY|WARNING): |"
                      r"runtime error:|Assertion|Traceback|^FAIL|^ERROR|"
                      r"==[0-9]+== (Invalid|Conditional|Use of|Syscall param|[0-9,]+ bytes in)")
DIGEST_TAIL = 25
DIGEST_KEYS = 40


def digest(stage, test, r):
    """The lines that say why test r failed."""
    out = []
    for stream in ("stdout", "stderr"):
        text = r.get(stream) or ""
        out.extend(text.splitlines())
    keys = [line for line in out if KEY_LINE.search(line)][:DIGEST_KEYS]
    tail = out[-DIGEST_TAIL:]
    lines = [f"---- {stage}:{test}: {r.get('result')} after "
             f"{r.get('duration', 0):.1f}s, exit status {r.get('returncode')}"]
    if keys:
        lines.append("  key lines:")
        lines.extend("    " + line for line in keys)
    lines.append(f"  last {len(tail)} lines of its output:")
    lines.extend("    " + line for line in tail)
    return "\n".join(lines) + "\n"


def load_expected(path):
    """([(pattern, reason, line number)], [format errors])."""
    entries, errors = [], []
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except FileNotFoundError:
        return entries, errors
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(None, 1)
        if len(fields) < 2 or not fields[1].strip():
            errors.append(f"{path}:{n}: a pattern needs a reason: {line!r}")
            continue
        entries.append((fields[0], fields[1].strip(), n))
    return entries, errors


def short_name(name):
    # meson logs "project:suite / name"
    return name.split(" / ")[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--expected", required=True)
    ap.add_argument("--counts", required=True)
    ap.add_argument("--failures")
    ap.add_argument("--ci", action="store_true")
    args = ap.parse_args()

    expected, format_errors = load_expected(args.expected)
    try:
        records = [json.loads(line) for line in open(args.log, encoding="utf-8",
                                                      errors="replace") if line.strip()]
    except (OSError, ValueError) as e:
        print(f"cannot read the test log {args.log}: {e}")
        return 1

    counts = {"passed": 0, "failed": 0, "skipped": 0}
    skips = []  # (id, why)
    failures = []
    for r in records:
        res = r.get("result")
        if res in PASSED:
            counts["passed"] += 1
        elif res == "SKIP":
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
        test = short_name(r.get("name", "?"))
        if res not in PASSED and res != "SKIP":
            failures.append(digest(args.stage, test, r))
        output = (r.get("stdout") or "") + "\n" + (r.get("stderr") or "")
        cases = [m.groups() for m in map(SKIP_LINE.match, output.splitlines()) if m]
        if res == "SKIP":
            why = "; ".join(f"{c}: {w}" for c, w in cases) or "exited 77"
            skips.append((f"{args.stage}:{test}", why))
        else:
            for case, why in cases:
                skips.append((f"{args.stage}:{test}:{case}", why))

    unexpected = 0
    if skips:
        print(f"skipped in stage {args.stage}:")
    for sid, why in skips:
        match = next((e for e in expected if fnmatch.fnmatchcase(sid, e[0])), None)
        if match:
            print(f"  SKIP {sid}: {why}  [expected: {match[1]}]")
        else:
            unexpected += 1
            print(f"  SKIP {sid}: {why}  [NOT in tests/expected-skips]")
    if unexpected:
        verdict = "fails the stage (CI=true)" if args.ci else "would fail CI"
        print(f"{unexpected} skip(s) not listed in tests/expected-skips: {verdict}")

    if args.failures and failures:
        with open(args.failures, "a", encoding="utf-8") as f:
            f.writelines(failures)
    with open(args.counts, "w") as f:
        f.write(f"{counts['passed']} {counts['failed']} {counts['skipped']} {unexpected}\n")
    for e in format_errors:
        print(e)
    return 1 if format_errors or (args.ci and unexpected) else 0


if __name__ == "__main__":
    sys.exit(main())
