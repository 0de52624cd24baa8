# SPDX-License-Identifier: MIT
"""The abi suite: checks of the library as users see it from outside.

  symbols    the shared library exports exactly the symbols that the version
             script lists, each with the version of its node
  header     each public header (include/pagecache/*.h) compiles alone
             (C99 pedantic, C++11)
  installed  `meson install --destdir` into the build directory, then build
             the examples through the installed pagecache.pc and run them

Exit status: 0 pass, 1 fail, 77 skip (meson's convention). Lines
"SKIP: <case>: <why>" are collected by scripts/test.sh.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILURES = []


def fail(msg):
    print(f"FAIL: {msg}")
    FAILURES.append(msg)


def skip(case, why):
    print(f"SKIP: {case}: {why}", flush=True)


def run(cmd, check=True, **kw):
    print("+ " + " ".join(cmd), flush=True)
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, **kw)
    if res.stdout:
        print(res.stdout, end="" if res.stdout.endswith("\n") else "\n")
    if res.stderr:
        print(res.stderr, end="" if res.stderr.endswith("\n") else "\n")
    if check and res.returncode != 0:
        raise SystemExit(f"FAIL: {cmd[0]} exited {res.returncode}")
    return res


# ---- symbols -----------------------------------------------------------------

def parse_version_script(path):
    """{symbol: node} for the global symbols of a GNU ld version script."""
    text = re.sub(r"/\*.*?\*/", " ", open(path).read(), flags=re.S)
    text = re.sub(r"#[^\n]*", " ", text)
    symbols = {}
    for node, body in re.findall(r"([A-Za-z_][\w.]*)\s*\{(.*?)\}", text, flags=re.S):
        scope = "global"
        for tok in re.findall(r"[^\s;]+:|[^\s;]+", body):
            if tok.endswith(":"):
                scope = tok[:-1]
            elif scope == "global":
                symbols[tok] = node
    return symbols


def cmd_symbols(args):
    expected = parse_version_script(args.map)
    nodes = set(expected.values())
    if not expected:
        fail(f"{args.map}: no global symbols found")
    out = run(["nm", "-D", "--defined-only", args.lib]).stdout
    exported = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        kind, name = fields[1], fields[2]
        base, _, version = name.partition("@")
        version = version.lstrip("@")
        if kind == "A" and base in nodes:
            continue  # the version node itself
        if not kind.isupper():
            continue  # local to the library
        if base in exported:
            fail(f"{base} exported twice")
        exported[base] = (version, name)
    for sym in sorted(set(exported) - set(expected)):
        fail(f"{sym} is exported but not listed in {os.path.basename(args.map)}")
    for sym in sorted(set(expected) - set(exported)):
        fail(f"{sym} is listed in {os.path.basename(args.map)} but not defined in the library")
    for sym in sorted(set(exported) & set(expected)):
        version, name = exported[sym]
        if f"{sym}@@{expected[sym]}" != name:
            fail(f"{name}: expected the default version @@{expected[sym]}")
    print(f"{len(exported)} exported, {len(expected)} listed")


# ---- header ------------------------------------------------------------------

def cmd_header(args):
    """Each public header alone, as C99 and as C++11."""
    headers = sorted(f for f in os.listdir(os.path.join(args.include, "pagecache"))
                     if f.endswith(".h"))
    if "pagecache.h" not in headers:
        fail(f"no pagecache/pagecache.h under {args.include}")
    for h in headers:
        probe = f"#include <pagecache/{h}>\n"
        print(f"# pagecache/{h} alone")
        run(args.cc + ["-std=c99", "-pedantic", "-Werror", "-Wall", "-Wextra",
                       "-Wstrict-prototypes", "-I", args.include,
                       "-x", "c", "-c", "-o", os.devnull, "-"], input=probe)
        if args.cxx:
            run([args.cxx, "-std=c++11", "-pedantic", "-Werror", "-Wall", "-Wextra",
                 "-I", args.include, "-x", "c++", "-c", "-o", os.devnull, "-"], input=probe)
    if not args.cxx:
        skip("header-c++", "no C++ compiler found (install g++)")
        raise SystemExit(77)


# ---- installed ---------------------------------------------------------------

EXAMPLE_LINE = re.compile(
    r"^(?P<path>.*): (?P<pages>\d+) pages; cachestat: (?:"
    r"cache (?P<cache>\d+) dirty (?P<dirty>\d+) writeback (?P<writeback>\d+) "
    r"evicted (?P<evicted>\d+) recently_evicted (?P<recent>\d+)|(?P<cs_error>[^;]+)); "
    r"mincore: (?P<mincore>.+)$")


def read_whole(path):
    with open(path, "rb") as f:
        while f.read(1 << 16):
            pass


def parse_cachestat(out, paths):
    """{path: match} from the cachestat example's stdout; one line per path."""
    lines = {}
    for line in out.splitlines():
        m = EXAMPLE_LINE.match(line)
        if not m:
            fail(f"cachestat printed an unexpected line: {line!r}")
            continue
        lines[m["path"]] = m
    for p in paths:
        if p not in lines:
            fail(f"cachestat printed nothing for {p}")
    return lines


def check_line(m, who, npages, mincore, cache_must_be_full, cachestat_may_refuse):
    where = f"{who}: {m['path']}"
    if int(m["pages"]) != npages:
        fail(f"{where}: {m['pages']} pages, expected {npages}")
    if m["mincore"] != mincore:
        fail(f"{where}: pc_can_do_mincore said {m['mincore']!r}, expected {mincore!r}")
    if m["cs_error"] is not None:
        allowed = {os.strerror(38)}  # ENOSYS: no cachestat(2) on this kernel
        if cachestat_may_refuse:
            allowed.add(os.strerror(1))  # EPERM: the 6.14+ gate
        if m["cs_error"] not in allowed:
            fail(f"{where}: pc_cachestat failed: {m['cs_error']}")
        return
    cache, dirty, wb = int(m["cache"]), int(m["dirty"]), int(m["writeback"])
    if cache > npages or dirty > cache or wb > cache:
        fail(f"{where}: impossible counts cache {cache} dirty {dirty} writeback {wb}")
    if cache_must_be_full and cache != npages:
        fail(f"{where}: {cache} of {npages} pages cached right after reading it all")


def cmd_installed(args):
    destdir = os.path.join(args.builddir, "abi-install")
    shutil.rmtree(destdir, ignore_errors=True)
    run(args.meson + ["install", "-C", args.builddir, "--quiet",
                      "--destdir", destdir])

    def staged(path):
        return os.path.join(destdir, path.lstrip("/"))

    libdir = os.path.join(args.prefix, args.libdir)
    includedir = os.path.join(args.prefix, args.includedir)
    pcdir = staged(os.path.join(libdir, "pkgconfig"))
    for path in (os.path.join(pcdir, "pagecache.pc"),
                 os.path.join(pcdir, "pagecache-model.pc"),
                 staged(os.path.join(includedir, "pagecache", "pagecache.h")),
                 staged(os.path.join(includedir, "pagecache", "model.h")),
                 staged(os.path.join(libdir, "libpagecache.so")),
                 staged(os.path.join(libdir, "libpagecache.so.0")),
                 staged(os.path.join(libdir, "libpagecache-model.so")),
                 staged(os.path.join(libdir, "libpagecache-model.so.0"))):
        if not os.path.exists(path):
            fail(f"not installed: {path}")
    if FAILURES:
        raise SystemExit(1)

    # pkg-config finds the .pc where the prefix says; the staging tree is
    # the sysroot, as a package builder would use it.
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir, PKG_CONFIG_SYSROOT_DIR=destdir)
    env.pop("PKG_CONFIG_LIBDIR", None)
    pc_path = run([args.pkg_config, "--variable=pc_path", "pkg-config"], env=env).stdout.split(":")
    if args.prefix in ("/usr", "/usr/local") and os.path.join(libdir, "pkgconfig") not in [p.strip() for p in pc_path]:
        fail(f"pagecache.pc goes to {libdir}/pkgconfig, which pkg-config does not search")
    plain = {k: v for k, v in env.items() if k != "PKG_CONFIG_SYSROOT_DIR"}
    for var, want in (("prefix", args.prefix), ("libdir", libdir), ("includedir", includedir)):
        got = run([args.pkg_config, f"--variable={var}", "pagecache"], env=plain).stdout.strip()
        if os.path.normpath(got) != os.path.normpath(want):
            fail(f"pagecache.pc: {var}={got}, expected {want}")
    version = run([args.pkg_config, "--modversion", "pagecache"], env=env).stdout.strip()
    if version != args.version:
        fail(f"pagecache.pc: version {version}, expected {args.version}")
    flags = run([args.pkg_config, "--cflags", "--libs", "pagecache"], env=env).stdout.split()
    if f"-I{staged(includedir)}" not in flags and staged(includedir) != staged("/usr/include"):
        fail(f"pkg-config --cflags does not point at {staged(includedir)}: {flags}")
    if f"-L{staged(libdir)}" not in flags:
        fail(f"pkg-config --libs does not point at {staged(libdir)}: {flags}")

    for lib in ("libpagecache", "libpagecache-model"):
        soname = run(["readelf", "-d", staged(os.path.join(libdir, lib + ".so"))]).stdout
        if f"Library soname: [{lib}.so.0]" not in soname:
            fail(f"the installed {lib}'s soname is not {lib}.so.0")
    model_version = run([args.pkg_config, "--modversion", "pagecache-model"], env=env).stdout.strip()
    if model_version != args.version:
        fail(f"pagecache-model.pc: version {model_version}, expected {args.version}")
    model_flags = run([args.pkg_config, "--cflags", "--libs", "pagecache-model"],
                      env=env).stdout.split()
    if "-lpagecache-model" not in model_flags or "-lpagecache" not in model_flags:
        fail(f"pkg-config --libs pagecache-model lacks the model or the library: {model_flags}")

    cflags = ["-Wall", "-Wextra", "-Werror"]
    if args.sanitize and args.sanitize != "none":
        cflags.append(f"-fsanitize={args.sanitize}")
    bindir = os.path.join(destdir, "examples")
    os.makedirs(bindir, exist_ok=True)
    exes = {}
    for src in args.examples:
        name = os.path.splitext(os.path.basename(src))[0]
        exe = os.path.join(bindir, name)
        # the model's example links the model; the others, the library alone
        run(args.cc + cflags + [src, "-o", exe] + (model_flags if name == "sidechannel" else flags))
        exes[name] = exe
    run_env = dict(os.environ, LD_LIBRARY_PATH=staged(libdir))
    for name, exe in exes.items():
        ldd = run(["ldd", exe], env=run_env).stdout
        m = re.search(r"libpagecache\.so\.0 => (\S+)", ldd)
        if not m or not m.group(1).startswith(staged(libdir) + "/"):
            fail(f"{name} does not load the installed library: {ldd}")
        loads_model = "libpagecache-model.so.0" in ldd
        if loads_model != (name == "sidechannel"):
            fail(f"{name} {'loads' if loads_model else 'does not load'} the model library: {ldd}")

    if "cachestat" not in exes:
        fail("examples/cachestat.c was not given")
    else:
        check_cachestat_example(exes["cachestat"], staged(libdir), run_env)
    if "sidechannel" in exes:
        check_sidechannel_example(exes["sidechannel"], run_env)
    if FAILURES:
        raise SystemExit(1)


def check_cachestat_example(exe, libdir, run_env):
    base = os.environ.get("PC_TEST_DIR") or "/var/tmp"
    scratch = tempfile.mkdtemp(prefix="pc-abi-", dir=base)
    try:
        os.chmod(scratch, 0o755)
        page = os.sysconf("SC_PAGESIZE")
        npages = 6
        files = {}
        for mode in (0o644, 0o666):
            path = os.path.join(scratch, f"file-{mode:o}")
            with open(path, "wb") as f:
                f.write(b"x" * (page * (npages - 1) + 100))
            os.chmod(path, mode)
            files[mode] = path

        # As the owner: visible, and everything just read is cached.
        for p in files.values():
            read_whole(p)
        res = run([exe] + list(files.values()), check=False, env=run_env)
        if res.returncode != 0:
            fail(f"cachestat exited {res.returncode}")
        for m in parse_cachestat(res.stdout, files.values()).values():
            check_line(m, "owner", npages, "visible", True, False)

        # Errors: one line each on stderr, the other files still done, exit 1.
        missing = os.path.join(scratch, "missing")
        res = run([exe, missing, scratch, files[0o644]], check=False, env=run_env)
        if res.returncode != 1:
            fail(f"cachestat with a missing file and a directory exited {res.returncode}, expected 1")
        if f"cachestat: {missing}: {os.strerror(2)}" not in res.stderr.splitlines():
            fail("cachestat did not report the missing file")
        if f"cachestat: {scratch}: not a regular file" not in res.stderr.splitlines():
            fail("cachestat did not report the directory")
        parse_cachestat(res.stdout, [files[0o644]])

        if os.geteuid() != 0:
            skip("installed-as-nobody", "not root: cannot run the example as uid 65534")
            return
        if not shutil.which("setpriv"):
            skip("installed-as-nobody", "setpriv (util-linux) not found")
            return
        # uid 65534 may not traverse the build directory: give it copies.
        for f in os.listdir(libdir):
            if f.startswith("libpagecache.so"):
                shutil.copy(os.path.join(libdir, f), scratch, follow_symlinks=True)
        shutil.copy(exe, scratch)
        mine = os.path.join(scratch, os.path.basename(exe))
        for p in files.values():
            read_whole(p)
        res = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                   mine] + list(files.values()), check=False,
                  env=dict(run_env, LD_LIBRARY_PATH=scratch))
        if res.returncode != 0:
            fail(f"cachestat as uid 65534 exited {res.returncode}")
        lines = parse_cachestat(res.stdout, files.values())
        if files[0o644] in lines:
            # another user's 0644 file: hidden; cachestat may refuse (6.14+)
            check_line(lines[files[0o644]], "uid 65534", npages, "hidden", False, True)
        if files[0o666] in lines:
            # write permission passes both gates
            check_line(lines[files[0o666]], "uid 65534", npages, "visible", True, False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check_sidechannel_example(exe, run_env):
    """The model through the installed model.h: every cell as claimed."""
    res = run([exe, "--json"], check=False, env=run_env)
    if res.returncode != 0:
        fail(f"sidechannel exited {res.returncode}")
        return
    try:
        table = json.loads(res.stdout)
    except ValueError as e:
        fail(f"sidechannel --json printed no JSON: {e}")
        return
    cells = [c for row in table.get("rows", []) for c in row["cells"]]
    if table.get("ok") is not True or not cells or any(c["got"] != c["expected"] for c in cells):
        fail("sidechannel: a cell differs from its claim")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("symbols")
    s.add_argument("--lib", required=True)
    s.add_argument("--map", required=True)
    h = sub.add_parser("header")
    h.add_argument("--include", required=True)
    h.add_argument("--cc", nargs="+", required=True)
    h.add_argument("--cxx", default="")
    i = sub.add_parser("installed")
    i.add_argument("--meson", nargs="+", required=True)
    i.add_argument("--builddir", required=True)
    i.add_argument("--prefix", required=True)
    i.add_argument("--libdir", required=True)
    i.add_argument("--includedir", required=True)
    i.add_argument("--version", required=True)
    i.add_argument("--sanitize", default="none")
    i.add_argument("--pkg-config", dest="pkg_config", default="pkg-config")
    i.add_argument("--cc", nargs="+", required=True)
    i.add_argument("--examples", nargs="+", required=True)
    args = ap.parse_args()
    {"symbols": cmd_symbols, "header": cmd_header, "installed": cmd_installed}[args.cmd](args)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
