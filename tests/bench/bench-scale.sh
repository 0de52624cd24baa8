#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench-scale.sh PAGECACHE BENCH-MKTREE BENCH-SPARSE: issue 7's scale figures.
#
#   case=stat_text_<n>    pagecache stat -q TREE > /dev/null      (streaming,
#   case=stat_ndjson_<n>  pagecache stat -q --ndjson TREE > /dev/null  no --sort)
#   case=dump_<n>         pagecache dump -q -o SNAPSHOT TREE  (only when the
#                         command has `dump`; the snapshot goes to the bench
#                         directory and its size is printed)
# over trees of n = 100,000 and 1,000,000 tiny files (0, 1 or 2 bytes,
# 1000 per directory; the small tree is the first tenth of the big one, each
# walked as one root), then bench-sparse: pc_residency on a sparse 1 TiB file.
# Output: one line per case and size,
#   case=<name> files=<n> seconds=<s> files_per_s=<r> peak_rss_mib=<m>
# (the median time of the rounds, the largest peak RSS, from GNU time's %M),
# and '#' lines: the load average, each round, the linearity
# time(big) / time(small) against the ideal ratio of the file counts (flagged
# when over 1.3 times the ideal: 13 for 100k and 1M).
#
# Exit status 1 when a command fails, counts another number of files than the
# tree holds, or peaks at 64 MiB RSS or more (PC_BENCH_RSS_MIB), or when
# bench-sparse fails; a linearity flag alone does not fail (the machine may be
# shared). 77 when GNU time (/usr/bin/time) is missing.
#
# Environment:
#   PC_BENCH_DIR         where the tree goes (default /var/tmp); a fresh
#                        directory is made in it and removed at exit
#   PC_BENCH_FILES       the two tree sizes, small,big (default 100000,1000000;
#                        multiples of 1000, big a multiple of small, at most
#                        100 times it)
#   PC_BENCH_ROUNDS      rounds per case and size (default 3)
#   PC_BENCH_RSS_MIB     the peak RSS limit in MiB (default 64)
#   PC_BENCH_CASES       comma-separated subset of stat_text, stat_ndjson,
#                        dump, sparse (default: all)
#   PC_BENCH_TREE        an existing tree to walk instead of a new one: made
#                        by `bench-mktree TREE small big/small` with the same
#                        PC_BENCH_FILES (kept; the counts are checked)
#   PC_BENCH_SPARSE_*    passed on to bench-sparse

set -euo pipefail

ours=${1:?usage: bench-scale.sh PAGECACHE BENCH-MKTREE BENCH-SPARSE}
mktree=${2:?usage: bench-scale.sh PAGECACHE BENCH-MKTREE BENCH-SPARSE}
sparse=${3:?usage: bench-scale.sh PAGECACHE BENCH-MKTREE BENCH-SPARSE}
sizes=${PC_BENCH_FILES:-100000,1000000}
rounds=${PC_BENCH_ROUNDS:-3}
rss_limit=${PC_BENCH_RSS_MIB:-64}
cases=${PC_BENCH_CASES:-stat_text,stat_ndjson,dump,sparse}
gnu_time=/usr/bin/time

if [[ ! -x $gnu_time ]] || ! "$gnu_time" -f %M true >/dev/null 2>&1; then
	echo "SKIP: bench-scale: GNU time ($gnu_time) is missing (scripts/setup.sh installs it)"
	exit 77
fi
if [[ -z ${EPOCHREALTIME:-} ]]; then
	echo "SKIP: bench-scale: needs bash 5 (EPOCHREALTIME)"
	exit 77
fi
if [[ ! $sizes =~ ^([0-9]+),([0-9]+)$ ]]; then
	echo "bench-scale: PC_BENCH_FILES wants small,big, not '$sizes'" >&2
	exit 2
fi
small=${BASH_REMATCH[1]}
big=${BASH_REMATCH[2]}
if ((small < 1000 || small % 1000 || big % small || big / small > 100)); then
	echo "bench-scale: PC_BENCH_FILES: sizes must be multiples of 1000, big a multiple of small (at most 100x)" >&2
	exit 2
fi
if [[ ! $rounds =~ ^[1-9][0-9]*$ ]]; then
	echo "bench-scale: PC_BENCH_ROUNDS wants a positive number, not '$rounds'" >&2
	exit 2
fi

want() {
	[[ ,$cases, == *,$1,* ]]
}

# 100000 -> 100k, 1000000 -> 1M
label() {
	if (($1 % 1000000 == 0)); then
		echo "$(($1 / 1000000))M"
	elif (($1 % 1000 == 0)); then
		echo "$(($1 / 1000))k"
	else
		echo "$1"
	fi
}

base=${PC_BENCH_DIR:-/var/tmp}
dir=$(mktemp -d "$base/pc-bench-scale.XXXXXX")
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM HUP

status=0
echo "# bench-scale: $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
	"$(stat -f -c %T "$dir"), dir $dir"

has_dump=0
if want dump; then
	if "$ours" dump --help >/dev/null 2>&1; then
		has_dump=1
	else
		echo "# dump: the command has no 'dump' (pagecache dump --help fails): not measured"
	fi
fi

tree=${PC_BENCH_TREE:-}
if [[ -n $tree ]]; then
	if [[ ! -d $tree/s00 || ! -d $tree/s$(printf %02d $((big / small - 1))) ||
	      -e $tree/s$(printf %02d $((big / small))) ]]; then
		echo "bench-scale: PC_BENCH_TREE=$tree is not a tree of $((big / small)) units (bench-mktree)" >&2
		exit 2
	fi
	echo "# tree: $tree (given)"
elif want stat_text || want stat_ndjson || ((has_dump)); then
	tree=$dir/tree
	mkdir "$tree"
	t0=${EPOCHREALTIME/[.,]/}
	"$mktree" "$tree" "$small" $((big / small))
	t1=${EPOCHREALTIME/[.,]/}
	awk -v n="$big" -v us=$((t1 - t0)) 'BEGIN {
		printf "# tree: %d files made in %.1f s (%.0f files/s)\n", n, us / 1e6, n / (us / 1e6) }'
fi

# measure NAME NFILES OUTFILE CMD...: rounds of CMD under GNU time, stdout to
# OUTFILE; prints the case line, sets $seconds (the median).
declare -A median_of
measure() {
	local name=$1 n=$2 out=$3
	shift 3
	local -a secs=()
	local i peak=0 rss t0 t1 rc
	for ((i = 0; i < rounds; i++)); do
		t0=${EPOCHREALTIME/[.,]/}
		rc=0
		"$gnu_time" -f %M -o "$dir/time.out" "$@" >"$out" 2>"$dir/stderr" || rc=$?
		t1=${EPOCHREALTIME/[.,]/}
		if ((rc != 0)); then
			echo "# $name: FAILED: exit $rc: $*" >&2
			head -5 "$dir/stderr" >&2
			status=1
			return 0
		fi
		rss=$(tail -1 "$dir/time.out")
		((rss > peak)) && peak=$rss
		secs+=($((t1 - t0)))
		echo "# $name round $((i + 1)): $(awk -v us=$((t1 - t0)) 'BEGIN { printf "%.3f", us / 1e6 }') s," \
			"peak RSS $(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }') MiB," \
			"load $(cut -d' ' -f1 /proc/loadavg)"
	done
	local med
	med=$(printf '%s\n' "${secs[@]}" | sort -n | awk '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	median_of[$name]=$med
	awk -v c="$name" -v n="$n" -v us="$med" -v k="$peak" 'BEGIN {
		printf "case=%s files=%d seconds=%.3f files_per_s=%.0f peak_rss_mib=%.1f\n",
			c, n, us / 1e6, n / (us / 1e6), k / 1024 }'
	if ((peak >= rss_limit * 1024)); then
		echo "# $name: FAILED: peak RSS $((peak / 1024)) MiB, wanted < $rss_limit MiB"
		status=1
	fi
}

# check_count NAME WANT GOT: the command saw every file of the tree
check_count() {
	if [[ $3 != "$2" ]]; then
		echo "# $1: FAILED: counted ${3:-nothing} files, the tree has $2"
		status=1
	fi
}

linearity() {
	local name=$1 ts=${median_of[${1}_$(label "$small")]:-} tb=${median_of[${1}_$(label "$big")]:-}
	[[ -n $ts && -n $tb ]] || return 0
	awk -v c="$name" -v s="$ts" -v b="$tb" -v ideal=$((big / small)) \
		-v sl="$(label "$small")" -v bl="$(label "$big")" 'BEGIN {
		r = b / s
		printf "# linearity %s: time(%s)/time(%s) = %.2f (ideal %d): %s\n", c, bl, sl, r,
			ideal, (r > 1.3 * ideal ? "FLAGGED (over " 1.3 * ideal ")" : "ok") }'
}

for n in "$small" "$big"; do
	l=$(label "$n")
	# the small tree is the big one's first unit
	if ((n == small)); then root=$tree/s00; else root=$tree; fi
	if want stat_text; then
		measure "stat_text_$l" "$n" /dev/null "$ours" stat -q "$root"
	fi
	if want stat_ndjson; then
		measure "stat_ndjson_$l" "$n" /dev/null "$ours" stat -q --ndjson "$root"
		# once more to a file, untimed: one object per file
		"$ours" stat -q --ndjson "$root" >"$dir/ndjson" || true
		check_count "stat_ndjson_$l" "$n" "$(grep -c '^{"type":"file"' "$dir/ndjson" || true)"
		rm -f "$dir/ndjson"
	fi
	if ((has_dump)); then
		snap=$dir/snapshot-$l
		measure "dump_$l" "$n" "$dir/dump.out" "$ours" dump -q -o "$snap" "$root"
		if [[ -f $snap ]]; then
			sz=$(stat -c %s "$snap")
			awk -v c="dump_$l" -v s="$sz" -v n="$n" 'BEGIN {
				printf "# %s: snapshot %d bytes (%.1f MiB, %.1f bytes per file)\n",
					c, s, s / 1048576, s / n }'
			rm -f "$snap"
			# the summary's "files: N" line, when it has one
			got=$(sed -n 's/^files: *\([0-9][0-9]*\).*/\1/p' "$dir/dump.out")
			[[ -z $got ]] || check_count "dump_$l" "$n" "$got"
		else
			echo "# dump_$l: FAILED: no snapshot at $snap"
			status=1
		fi
	fi
done
want stat_text && linearity stat_text
want stat_ndjson && linearity stat_ndjson
((has_dump)) && linearity dump
[[ -n ${PC_BENCH_TREE:-} ]] || rm -rf "$dir/tree"

if want sparse; then
	PC_BENCH_DIR=$dir "$sparse" || status=1
fi
echo "# bench-scale: load $(cut -d' ' -f1-3 /proc/loadavg) at the end; exit $status"
exit "$status"
