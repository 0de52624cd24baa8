#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench-snapshot.sh PAGECACHE HELPER: pagecache restore and dump against
# the other ways of doing it, side by side in one run (issue 6). Every
# restore timing runs with --fast and stops when every wanted page is
# resident (readahead(2) and WILLNEED return before the I/O lands): the
# time is when the disk's last read ended (its stat file, watched every
# millisecond from before the command), once the helper's poll of mincore
# has found every wanted page resident; the same for every method, whether
# it waits for its pages (pagecache restore, vmtouch -t) or not. Where the
# disk's stat file cannot be read, the command's end or the poll's pass
# that saw the last page land, as before. One line per comparison:
#   case=<name> ratio=<x> ratio_is=<throughput|time> target=<...> ours_s=... theirs_s=...
#        [device_s=...] ours_command_s=... resident_ours=<%> resident_theirs=<%>
# ours_command_s: the median time until pagecache restore itself ended (it
# waits for its pages, and ends later than its last read by its final
# look: a wait gone wrong shows here, not in ours_s).
# ratio_is=throughput: ours/theirs bytes per second (higher is better);
# ratio_is=time: our time/their time (lower is better). Times are medians.
# Each restore case adds device_s: the disk's time for exactly the wanted
# bytes, read with O_DIRECT through io_uring in the order they lie on the
# disk (bench-snapshot-helper direct, in the same rounds; the opening and
# sorting untimed), the page cache left out: what the disk gives for those
# bytes at that moment, next to which a ratio the disk cannot allow shows
# as such. Not a strict bound: the kernel's readahead has been faster than
# it here for a whole file.
#
# Environment: PC_BENCH_MB (the big file, default 4096), PC_BENCH_FILES (the
# tree, default 20000 files of 4-64 KiB), PC_BENCH_ROUNDS (default 5: a
# run on this disk swings by +-30%, and one case's ratio read 0.85 and 1.15
# in two runs of the same day), PC_BENCH_DIR (default /var/tmp; a real
# disk, not tmpfs). Needs root (to see residency of every file) and
# vmtouch (else those cases are left out).
set -euo pipefail

PC=$(realpath "$1")
H=$(realpath "$2")
MB=${PC_BENCH_MB:-4096}
NFILES=${PC_BENCH_FILES:-20000}
ROUNDS=${PC_BENCH_ROUNDS:-5}
DIR=$(mktemp -d "${PC_BENCH_DIR:-/var/tmp}/pc-bench-snap.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
HAVE_VMTOUCH=$(command -v vmtouch >/dev/null && echo 1 || echo 0)
# the block device under DIR (a partition or device-mapper device has a
# stat file of its own)
IOSTAT=/sys/dev/block/$(stat -c '%Hd:%Ld' "$DIR")/stat
[[ -r $IOSTAT ]] || IOSTAT=

if [[ $(stat -f -c %T "$DIR") == tmpfs ]]; then
	echo "SKIP: bench-snapshot: $DIR is on tmpfs"
	exit 77
fi
if ((EUID != 0)); then
	echo "SKIP: bench-snapshot: needs root"
	exit 77
fi

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

evict() {
	# vmtouch -e is POSIX_FADV_DONTNEED on every file; without it, python
	if ((HAVE_VMTOUCH)); then
		vmtouch -q -e "$1"
	else
		python3 - "$1" <<'PY'
import os, sys
for r, _, ns in os.walk(sys.argv[1]) if os.path.isdir(sys.argv[1]) else [("", [], [sys.argv[1]])]:
    for n in ns:
        fd = os.open(os.path.join(r, n), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
PY
	fi
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# timed TARGET SNAP ROOT CMD...: evict TARGET, run CMD, poll until the
# snapshot's pages are resident; prints "seconds resident% command_seconds"
timed() {
	local target=$1 snap=$2 root=$3 t0 t1 tc res last pct first wpid= io=
	shift 3
	evict "$target"
	if [[ -n $IOSTAT ]]; then
		"$H" iowatch "$IOSTAT" >"$DIR/iowatch" &
		wpid=$!
	fi
	sleep 0.2 # (the watch is up by then)
	t0=$(now)
	"$@" >/dev/null
	t1=$(now)
	tc=$t1
	res=$("$H" poll "$snap" "$root" 120)
	if [[ -n $wpid ]]; then
		kill -TERM "$wpid"
		wait "$wpid" || true
		io=$(<"$DIR/iowatch")
	fi
	first=${res##*first=}
	last=${res#*last=}
	last=${last%% *}
	pct=${res%% *}
	io=${io##*last=}
	if [[ -n $io && $pct == resident=100.000 ]] && awk "BEGIN { exit !($io > $t0) }"; then
		# every page resident: the last read's end is when the last
		# page landed, whether that was before the command ended (one
		# that waits and checks) or after (one that returns at once,
		# whose pages the poll's first pass, 0.2 s for 20,000 files,
		# may find landed without telling when)
		t1=$io
	# without the disk's count: the time the last page landed, or the
	# command's end if they all had landed by then (the poll's first pass
	# found them: a command that waits for its pages is not charged the
	# poll's own start-up). (A bare > in awk's printf would redirect.)
	elif ((first == 0)) && awk "BEGIN { exit !($last > $t1) }"; then
		t1=$last
	fi
	echo "$(calc "$t1 - $t0") ${pct#resident=} $(calc "$tc - $t0")"
}

# compare NAME RATIO_IS TARGET TARGETPATH SNAP ROOT -- OURS... -- THEIRS...
compare() {
	local name=$1 kind=$2 target=$3 path=$4 snap=$5 root=$6
	shift 6
	local ours=() theirs=() side=0
	for a in "$@"; do
		if [[ $a == -- ]]; then side=$((side + 1)); continue; fi
		if ((side == 1)); then ours+=("$a"); else theirs+=("$a"); fi
	done
	local o_t=() o_c=() t_t=() d_t=() o_r t_r dev=
	# the order alternates: on this disk the time of a run swings by +-30%
	# within minutes, and neither side should always go first
	for ((r = 0; r < ROUNDS; r++)); do
		if ((r % 2)); then
			read -r t res _ < <(timed "$path" "$snap" "$root" "${theirs[@]}")
			t_t+=("$t"); t_r=$res
		fi
		read -r t res tc < <(timed "$path" "$snap" "$root" "${ours[@]}")
		o_t+=("$t"); o_c+=("$tc"); o_r=$res
		if ((r % 2 == 0)); then
			read -r t res _ < <(timed "$path" "$snap" "$root" "${theirs[@]}")
			t_t+=("$t"); t_r=$res
		fi
		if ((${#DIRECT[@]})); then
			evict "$path"
			# no io_uring (its sysctl, a seccomp filter) or no
			# O_DIRECT here: the case goes on without device_s
			if t=$("$H" direct "$snap" "$root" "${DIRECT[@]}"); then
				d_t+=("${t##*seconds=}")
			else
				echo "# $name: bench-snapshot-helper direct failed: no device_s" >&2
				DIRECT=()
			fi
		fi
	done
	local om tm ratio
	# every round on stderr: the medians hide how much the disk swings
	echo "# $name: ours ${o_t[*]} (command ${o_c[*]}); theirs ${t_t[*]}${d_t[*]:+; device ${d_t[*]}}" >&2
	om=$(printf '%s\n' "${o_t[@]}" | median)
	tm=$(printf '%s\n' "${t_t[@]}" | median)
	if ((${#d_t[@]})); then
		dev=$(printf ' device_s=%.3f' "$(printf '%s\n' "${d_t[@]}" | median)")
	fi
	if [[ $kind == throughput ]]; then
		ratio=$(calc "$tm / $om")
	else
		ratio=$(calc "$om / $tm")
	fi
	printf 'case=%s ratio=%.2f ratio_is=%s target=%s ours_s=%.3f theirs_s=%.3f%s ours_command_s=%.3f resident_ours=%s resident_theirs=%s\n' \
		"$name" "$ratio" "$kind" "$target" "$om" "$tm" "$dev" \
		"$(printf '%s\n' "${o_c[@]}" | median)" "$o_r" "$t_r"
}

# device_s's reads: CHUNK bytes at most, DEPTH in flight (what ran fastest
# here: 4 MiB at 8 for the whole file, 64 KiB at 32 for 64 KiB runs, at
# 128 for the tree's files); empty: no device_s
DIRECT=()

RESTORE=("$PC" restore --fast -q)

# ---- one big file ----
BIG=$DIR/big/file
mkdir -p "$DIR/big"
echo "# creating a ${MB} MiB file in $DIR" >&2
dd if=/dev/urandom of="$BIG" bs=1M count="$MB" status=none conv=fsync
cat "$BIG" >/dev/null
"$PC" dump -q -o "$DIR/full.snap" "$DIR/big" >/dev/null
DIRECT=($((4 << 20)) 8)
compare full-file-vs-readahead-2m throughput '>=0.9' "$BIG" "$DIR/full.snap" "$DIR/big" \
	-- "${RESTORE[@]}" "$DIR/full.snap" -- "$H" readahead "$BIG" $((2 << 20))
if ((HAVE_VMTOUCH)); then
	compare full-file-vs-vmtouch throughput '>=2' "$BIG" "$DIR/full.snap" "$DIR/big" \
		-- "${RESTORE[@]}" "$DIR/full.snap" -- vmtouch -q -t "$BIG"
fi

# ---- every other 64 KiB run ----
"$H" pattern "$BIG" $((64 << 10))
"$PC" dump -q -o "$DIR/half.snap" "$DIR/big" >/dev/null
DIRECT=($((64 << 10)) 32)
compare half-runs-vs-happycache throughput '>=2' "$BIG" "$DIR/half.snap" "$DIR/big" \
	-- "${RESTORE[@]}" "$DIR/half.snap" -- "$H" willneed8 "$DIR/half.snap" "$DIR/big"
rm -f "$BIG"

# ---- the tree ----
TREE=$DIR/tree
mkdir -p "$TREE"
echo "# creating $NFILES files of 4-64 KiB" >&2
"$H" tree "$TREE" "$NFILES" 6
cat "$TREE"/*/* >/dev/null
"$PC" dump -q -o "$DIR/tree.snap" "$TREE" >/dev/null
DIRECT=($((64 << 10)) 128)
compare tree-restore-vs-happycache time '<=1.0' "$TREE" "$DIR/tree.snap" "$TREE" \
	-- "${RESTORE[@]}" "$DIR/tree.snap" -- "$H" willneed8 "$DIR/tree.snap" "$TREE"
if ((HAVE_VMTOUCH)); then
	compare tree-restore-vs-vmtouch time '<=0.2' "$TREE" "$DIR/tree.snap" "$TREE" \
		-- "${RESTORE[@]}" "$DIR/tree.snap" -- vmtouch -q -t "$TREE"
	# dump (cached tree) against vmtouch's scan of it
	cat "$TREE"/*/* >/dev/null
	d_t=() v_t=()
	for ((r = 0; r < ROUNDS; r++)); do
		t0=$(now); "$PC" dump -q -o "$DIR/tree2.snap" "$TREE" >/dev/null; t1=$(now)
		d_t+=("$(calc "$t1 - $t0")")
		t0=$(now); vmtouch "$TREE" >/dev/null; t1=$(now)
		v_t+=("$(calc "$t1 - $t0")")
	done
	dm=$(printf '%s\n' "${d_t[@]}" | median)
	vm=$(printf '%s\n' "${v_t[@]}" | median)
	printf 'case=tree-dump-vs-vmtouch-scan ratio=%.2f ratio_is=time target=<=0.5 ours_s=%.3f theirs_s=%.3f snapshot_bytes=%s\n' \
		"$(calc "$dm / $vm")" "$dm" "$vm" "$(stat -c %s "$DIR/tree2.snap")"
fi
