#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lib/'s layers, checked on the objects the libraries are linked from.

Usage: check-layers.py NM ARCHIVE

ARCHIVE is libpagecache-internal.a: every object of libpagecache.so and
libpagecache-model.so. An object's layer is the folder of its source
(meson names lib/kernel/backend.c's object kernel_backend.c.o); an
undefined symbol that another object defines is an edge. Fails when an
edge goes where the layer may not call, when objects call each other in
a circle, or when the strategy (which runs on the model too) calls libc
for anything but memory and strings: no syscall below the backend ops.
"""
import subprocess
import sys

# layer: the layers it may call (and itself, without circles)
MAY_CALL = {
    "base": set(),
    "kernel": {"base"},
    "strategy": {"base"},
    "model": {"base"},
    "model-top": {"model", "strategy", "base"},
    "top": {"kernel", "strategy", "base"},
}
# lib/snapshot/ (the file format, and capturing one), lib/restore/: on top,
# beside lib/process.c, lib/warm.c
TOP_FOLDERS = {"snapshot", "restore"}
# what a compiler's instrumentation adds (sanitizers, coverage, PIC)
INSTRUMENTATION = ("__asan_", "__ubsan_", "__tsan_", "__msan_", "__sanitizer_",
                   "__sancov_", "__gcov_", "__llvm_", "_GLOBAL_OFFSET_TABLE_")
STRATEGY_LIBC = {"calloc", "malloc", "realloc", "free", "memset", "memcpy",
                 "memmove", "memcmp", "qsort", "__stack_chk_fail",
                 "__assert_fail", "__errno_location"}


def layer_of(member):
    name = member[:-len(".c.o")] if member.endswith(".c.o") else member
    folder, sep, _ = name.partition("_")
    if not sep:
        return "top"                  # lib/process.c, lib/warm.c ...
    if folder == "model":
        return "model-top" if name == "model_api" else "model"
    if folder in TOP_FOLDERS:
        return "top"
    if folder in MAY_CALL:
        return folder
    return None


def symbols(nm, archive):
    out = subprocess.run([nm, "-A", archive], check=True, capture_output=True,
                         text=True).stdout
    defs, uses = {}, {}
    for line in out.splitlines():
        # "ARCHIVE:MEMBER:VALUE TYPE NAME" or "ARCHIVE:MEMBER:  U NAME"
        head, _, rest = line.rpartition(":")
        member = head.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
        parts = rest.split()
        if not member or not parts:
            continue
        uses.setdefault(member, set())
        if len(parts) == 2 and parts[0] == "U":
            uses[member].add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRCV":
            defs[parts[2]] = member
    return defs, uses


def circles(graph):
    """Strongly connected components of more than one object (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    nm, archive = sys.argv[1], sys.argv[2]
    defs, uses = symbols(nm, archive)
    errors = []
    graph = {}
    for member in sorted(uses):
        layer = layer_of(member)
        if layer is None:
            errors.append(f"{member}: not in a known layer (add its folder to check-layers.py)")
            continue
        for sym in sorted(uses[member]):
            to = defs.get(sym)
            if to is None:
                if (layer == "strategy" and sym not in STRATEGY_LIBC and
                        not sym.startswith(INSTRUMENTATION)):
                    errors.append(f"{member}: the strategy calls {sym} (libc or a syscall)")
                continue
            if to == member:
                continue
            graph.setdefault(member, set()).add(to)
            to_layer = layer_of(to)
            if to_layer != layer and to_layer not in MAY_CALL[layer]:
                errors.append(f"{member} ({layer}) calls {sym} of {to} ({to_layer})")
    for comp in circles(graph):
        errors.append("objects call each other in a circle: " + " ".join(comp))
    if not graph:
        errors.append(f"no edges found in {archive}: is it the library's archive?")
    for e in errors:
        print("check-layers: " + e)
    if errors:
        return 1
    print(f"check-layers: {len(uses)} objects, {sum(len(v) for v in graph.values())} edges, "
          "no layer called out of order, no circles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
