#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench-cli.sh PAGECACHE: `pagecache` against vmtouch, wall time, as issue 5
# sets the targets (ratio = ours / vmtouch, medians; lower is better):
#   case=stat_tree      stat of 20,000 files of 4-64 KiB in 200 folders  <= 0.4
#   case=stat_big       stat of one cached 4 GiB file (counts)            <= 0.1
#   case=stat_big_map   stat --map of it (the exact bitmap; vmtouch -v)   <= 1.0
#   case=touch_big      (only when PC_BENCH_CASES names it) touch of the evicted
#                       4 GiB file against vmtouch -t
# Output: one line per case,
#   case=<name> ratio=<median> ours_ms=<m> vmtouch_ms=<m>
# and '#' lines with the rounds and the targets. As root it also checks that
# both tools count the same resident pages (exit status 1 when they do not).
#
# Environment:
#   PC_BENCH_DIR     where the tree and the file go (default /var/tmp); a
#                    fresh directory is made in it and removed at exit
#   PC_BENCH_ROUNDS  rounds per case, alternating which tool goes first (7)
#   PC_BENCH_MB      size of the big file in MiB (4096)
#   PC_BENCH_CASES   comma-separated subset of the cases
# Exit status 77 when vmtouch or python3 is missing, or the directory is on
# tmpfs (nothing to evict there).

set -euo pipefail

ours=${1:?usage: bench-cli.sh PATH-TO-pagecache}
rounds=${PC_BENCH_ROUNDS:-7}
big_mb=${PC_BENCH_MB:-4096}
cases=${PC_BENCH_CASES:-stat_tree,stat_big,stat_big_map}

if ! command -v vmtouch >/dev/null; then
	echo "SKIP: bench-cli: vmtouch is not installed (scripts/setup.sh installs it)"
	exit 77
fi
if [[ -z ${EPOCHREALTIME:-} ]]; then
	echo "SKIP: bench-cli: needs bash 5 (EPOCHREALTIME)"
	exit 77
fi
if ! command -v python3 >/dev/null; then
	echo "SKIP: bench-cli: python3 is not installed"
	exit 77
fi

base=${PC_BENCH_DIR:-/var/tmp}
dir=$(mktemp -d "$base/pc-bench-cli.XXXXXX")
trap 'rm -rf "$dir"' EXIT
if [[ $(stat -f -c %T "$dir") == tmpfs ]]; then
	echo "SKIP: bench-cli: $base is on tmpfs"
	exit 77
fi

want() {
	[[ ,$cases, == *,$1,* ]]
}

# time_us CMD...: run it with output discarded; prints microseconds
# (bash 5's EPOCHREALTIME: no fork of date(1) inside the timed span)
time_us() {
	local t0 t1
	t0=${EPOCHREALTIME/[.,]/}
	"$@" >/dev/null 2>&1 || { echo "bench-cli: failed: $*" >&2; return 1; }
	t1=${EPOCHREALTIME/[.,]/}
	echo $((t1 - t0))
}

median() {
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# run_case NAME SETUP OURS... -- THEIRS...: alternate the tools, medians.
# SETUP (a function name or :) runs untimed before each timed command.
run_case() {
	local name=$1 setup=$2
	shift 2
	local -a a=() b=()
	while [[ $1 != -- ]]; do a+=("$1"); shift; done
	shift
	b=("$@")
	local -a ours_us=() theirs_us=()
	local i
	for ((i = 0; i < rounds; i++)); do
		if ((i % 2 == 0)); then
			$setup; ours_us+=("$(time_us "${a[@]}")")
			$setup; theirs_us+=("$(time_us "${b[@]}")")
		else
			$setup; theirs_us+=("$(time_us "${b[@]}")")
			$setup; ours_us+=("$(time_us "${a[@]}")")
		fi
	done
	local mo mt
	mo=$(median "${ours_us[@]}")
	mt=$(median "${theirs_us[@]}")
	echo "# $name: ours_us ${ours_us[*]}; vmtouch_us ${theirs_us[*]}"
	awk -v n="$name" -v o="$mo" -v t="$mt" 'BEGIN {
		printf "case=%s ratio=%.3f ours_ms=%.1f vmtouch_ms=%.1f\n", n, o / t, o / 1000, t / 1000 }'
}

target() {
	awk -v n="$1" -v r="$2" -v t="$3" 'BEGIN {
		printf "# target %s: ratio %.3f, wanted <= %s: %s\n", n, r, t, (r <= t ? "met" : "MISSED") }'
}

ratio_of() {
	sed -n 's/^case=[^ ]* ratio=\([^ ]*\) .*/\1/p' <<<"$1"
}

# --- the data ------------------------------------------------------------
echo "# bench-cli: $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), dir $dir"
tree=$dir/tree
big=$dir/big
python3 - "$tree" <<'EOF'
import os, random, sys
random.seed(20000)
top = sys.argv[1]
buf = os.urandom(64 * 1024)
for d in range(200):
    sub = os.path.join(top, "d%03d" % d)
    os.makedirs(sub)
    for f in range(100):
        with open(os.path.join(sub, "f%03d" % f), "wb") as fh:
            fh.write(buf[: random.randint(1, 16) * 4096])
EOF
if want stat_big || want stat_big_map || want touch_big; then
	dd if=/dev/zero of="$big" bs=8M count=$((big_mb / 8)) conv=fsync status=none
fi
sync

# the data cached before each stat round (reclaim fades idle pages)
cache_tree() { "$ours" touch -q "$tree" >/dev/null; }
cache_big() { "$ours" touch -q "$big" >/dev/null; }
evict_big() { "$ours" evict -q "$big" >/dev/null; }

status=0

# As root both tools see the truth: the counts must agree. Residency can
# change under us (reclaim), so ours is asked before and after vmtouch and
# only a stable pair counts; three tries.
agree() {
	local path=$1 name=$2 try o1 o2 v
	[[ $EUID -eq 0 ]] || { echo "# $name: not root, counts not compared"; return 0; }
	for try in 1 2 3; do
		o1=$("$ours" stat --json -q "$path" | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["resident_pages"])')
		v=$(vmtouch "$path" | sed -n 's/^ *Resident Pages: \([0-9]*\)\/.*/\1/p')
		o2=$("$ours" stat --json -q "$path" | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["resident_pages"])')
		if [[ $o1 == "$o2" ]]; then
			if [[ $o1 == "$v" ]]; then
				echo "# $name: both count $v resident pages"
				return 0
			fi
			echo "# $name: DISAGREE: ours $o1, vmtouch $v resident pages" >&2
			status=1
			return 0
		fi
	done
	echo "# $name: residency kept changing; counts not compared"
}

if want stat_tree; then
	cache_tree
	agree "$tree" stat_tree
	line=$(run_case stat_tree cache_tree "$ours" stat -q "$tree" -- vmtouch "$tree")
	echo "$line"
	target stat_tree "$(ratio_of "$(grep ^case= <<<"$line")")" 0.4
fi
if want stat_big; then
	cache_big
	agree "$big" stat_big
	line=$(run_case stat_big cache_big "$ours" stat -q "$big" -- vmtouch "$big")
	echo "$line"
	target stat_big "$(ratio_of "$(grep ^case= <<<"$line")")" 0.1
fi
if want stat_big_map; then
	line=$(run_case stat_big_map cache_big "$ours" stat -q --map "$big" -- vmtouch -v "$big")
	echo "$line"
	target stat_big_map "$(ratio_of "$(grep ^case= <<<"$line")")" 1.0
fi
if want touch_big; then
	line=$(run_case touch_big evict_big "$ours" touch -q "$big" -- vmtouch -t "$big")
	echo "$line"
fi
exit "$status"
