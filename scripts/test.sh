#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/test.sh [--quick]
#
# Sets up (Debian packages, meson, ninja; see setup.sh), then runs every
# stage CI checks and exits non-zero if any of them failed:
#   plain     meson test in build/
#   valgrind  meson test --setup=valgrind in build/
#   asan      a separate build-asan/ with -Db_sanitize=address,undefined
#   tsan      a separate build-tsan/ with -Db_sanitize=thread (gcc's libtsan):
#             the unit, kernel and root suites; any report fails the stage
#   helgrind  valgrind --tool=helgrind on the threads test (in build/)
#   kernel-6.1  tests/vm/run.sh: Debian 12's own kernel under QEMU, running
#             build/'s kernel and root suites inside (PC_VM_TESTS lists the
#             tests; the default leaves out those README.md says still
#             fail there); PC_VM_KERNEL names another kernel package
#   fuzz      a clang build-fuzz/ with -Dfuzzing=true, then each libFuzzer
#             target fuzz/fuzz-* for PC_FUZZ_SECONDS (default 20), one per
#             core side by side, over a copy of its seeds
#             fuzz/corpus/<target> (the tree's corpus
#             never grows here); a crash, leak or timeout fails the stage
#             and its input is printed (path and hexdump)
#   release   build-release-gcc/ and build-release-clang/ with
#             -Dbuildtype=release -Dtests=disabled (the optimizer's
#             warnings, as errors): built, not tested; a "test" per compiler
#   package   scripts/package.sh --check: the Debian packages built (with
#             DEB_BUILD_OPTIONS="nocheck noautodbgsym": the other stages
#             run the suite),
#             lintian, installed, the examples built against them and run,
#             /usr/bin/pagecache run, the packages purged with nothing left;
#             one "test" per step
# --quick runs the plain stage only. All stages run even when one fails.
#
# After each stage every skip is listed: tests meson reports as SKIP and the
# "SKIP: <case>: <why>" lines of test binaries. With CI=true a skip that
# tests/expected-skips does not list fails the stage.
#
# The last line reads "N passed, N failed, N skipped", counting meson tests
# over all stages; a stage whose build, test run or skip accounting fails
# without a failed test to show for it counts as one failure.

set -euo pipefail

# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

# Every build here treats warnings as errors; meson's default (a user's
# build, scripts/run.sh, a distribution's) does not, as packagers expect.
werror=-Dwerror=true

quick=0
for arg in "$@"; do
	case $arg in
	--quick) quick=1 ;;
	-h | --help)
		sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
		exit 0
		;;
	*)
		pc_log "test: unknown argument: $arg (try --help)"
		exit 2
		;;
	esac
done

ci=()
if [[ ${CI:-} == true ]]; then
	ci=(--ci)
fi

pc_setup_packages
cd "$PC_ROOT"

stage_names=()
stage_results=()
stage_times=()
stage_counts=()
total_passed=0
total_failed=0
total_skipped=0
# the digest of every failed test, repeated after the summary
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT

# What the machine gives the tests, printed first and last: cores, memory,
# the memory cgroup's limit and the page reclaim so far. A test that finds
# gone the pages it has just brought in may have lost them to reclaim (the
# cgroup's, under a limit, or the machine's); these lines say if there was any.
memcg_dir() {
	local line path
	line=$(grep -E '^[0-9]+:(memory)?:' /proc/self/cgroup | grep -E ':memory:|^0::' | head -n 1)
	path=${line#*:*:}
	if [[ $line == *:memory:* && -d /sys/fs/cgroup/memory$path ]]; then
		printf '%s\n' "/sys/fs/cgroup/memory$path"
	elif [[ -d /sys/fs/cgroup$path ]]; then
		printf '%s\n' "/sys/fs/cgroup$path"
	fi
}
machine_report() {
	local cg limit="" events="" steal
	cg=$(memcg_dir || true)
	if [[ -n $cg ]]; then
		limit=$(cat "$cg/memory.max" "$cg/memory.limit_in_bytes" 2>/dev/null | head -n 1 || true)
		if [[ -r $cg/memory.events ]]; then
			events=$(tr '\n' ' ' <"$cg/memory.events")
		else
			events="failcnt $(cat "$cg/memory.failcnt" 2>/dev/null || echo '?')"
		fi
		steal=$(awk '/^(total_)?pgsteal/ { s += $2 } END { print s + 0 }' "$cg/memory.stat" \
			2>/dev/null || echo '?')
	fi
	printf '%s: %s cores, %s; memory cgroup %s: limit %s, %s, pages reclaimed %s; machine pages reclaimed %s\n' \
		"$1" "$(nproc)" "$(awk '/^MemTotal|^MemAvailable/ { printf "%s%s %d MiB", n++ ? ", " : "", $1, $2 / 1024 }' /proc/meminfo)" \
		"${cg:-?}" "${limit:-?}" "${events:-?}" "${steal:-?}" \
		"$(awk '/^pgsteal_(anon|file) / { s += $2 } END { print s + 0 }' /proc/vmstat)"
}
# (only a report: whatever it cannot read, it says '?', and it never fails the run)
machine_report "machine at the start" || true

now() {
	printf '%s\n' "${EPOCHREALTIME/,/.}"
}

# run_stage NAME BUILDDIR "MESON_OPTIONS" [MESON_TEST_ARGS...]
run_stage() {
	local name=$1 dir=$2 options=$3
	shift 3
	local start result=PASS passed=0 failed=0 skipped=0 unexpected=0
	# meson names the log LOGBASE.json, or LOGBASE-SETUP.json with --setup
	local logbase=stage-$name log logs
	local counts
	counts=$(mktemp)
	start=$(now)
	printf '\n==== stage %s ====\n' "$name"

	# shellcheck disable=SC2086 # options are words
	if ! pc_setup_build "$dir" "$werror" $options; then
		result="FAIL (build)"
		failed=1
	else
		rm -f "$dir/meson-logs/$logbase"*
		local test_rc=0 log_rc=0
		meson test -C "$dir" --print-errorlogs --logbase "$logbase" "$@" || test_rc=$?
		logs=("$dir/meson-logs/$logbase"*.json)
		log=${logs[0]}
		python3 "$PC_ROOT/scripts/testlog.py" --stage "$name" --log "$log" \
			--expected "$PC_ROOT/tests/expected-skips" --counts "$counts" \
			--failures "$failures" "${ci[@]}" || log_rc=$?
		if [[ -s $counts ]]; then
			read -r passed failed skipped unexpected <"$counts"
		fi
		if ((test_rc != 0)); then
			result=FAIL
			# meson could not even run the tests (e.g. a failed rebuild)
			if ((failed == 0)); then
				failed=1
			fi
		elif ((log_rc != 0)); then
			if ((unexpected > 0)); then
				result="FAIL (unexpected skip)"
			else
				result="FAIL (skip accounting)"
				failed=$((failed + 1))
			fi
		fi
	fi
	rm -f "$counts"

	local secs
	secs=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
	printf '==== stage %s: %s in %ss (%d passed, %d failed, %d skipped)\n' \
		"$name" "$result" "$secs" "$passed" "$failed" "$skipped"
	stage_names+=("$name")
	stage_results+=("$result")
	stage_times+=("$secs")
	stage_counts+=("$passed passed, $failed failed, $skipped skipped")
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
	total_skipped=$((total_skipped + skipped))
}

run_stage plain build ""
if ((!quick)); then
	run_stage valgrind build "" --setup=valgrind
	export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:print_summary=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
	run_stage asan build-asan "-Db_sanitize=address,undefined -Db_lundef=false"

	# A ThreadSanitizer report ends the test process with exit code 66,
	# which fails its test and the stage (in a forked Check case too: the
	# case reports an early exit). tests/tsan.supp (added by meson) says
	# why io_uring ring memory is excluded. The abi suite is left out: it
	# runs python and the compilers against the headers and the installed
	# library, so no code of ours runs threads there.
	export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1}
	tsan_args=(--suite unit --suite kernel --suite root)
	# gcc 12's ThreadSanitizer lays out its shadow memory for at most 28
	# bits of mmap randomization; kernels set to more (vm.mmap_rnd_bits=32 on
	# recent Ubuntu) make it die with "unexpected memory mapping". There the
	# tests run with address randomization off for them alone (setarch -R).
	rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)
	if ((rnd_bits > 28)); then
		pc_log "test: vm.mmap_rnd_bits is $rnd_bits: tsan tests run under setarch -R"
		tsan_args+=(--wrapper "setarch $(uname -m) -R")
	fi
	run_stage tsan build-tsan "-Db_sanitize=thread -Db_lundef=false" "${tsan_args[@]}"

	# helgrind, once per run, on the test written for it: a few seconds.
	# tests/helgrind.supp says why pc_detect_*()'s reads are suppressed.
	run_stage helgrind build "" --setup=helgrind threads
fi

# The kernel-6.1 stage: build/'s tests inside Debian 12's own kernel,
# booted under QEMU (tests/vm/run.sh). It reads the guest's test log back
# and accounts for it as the other stages do. Exit status 77 (no qemu on
# this machine) is a skip of the whole stage, which expected-skips lists.
run_vm_stage() {
	local name=kernel-6.1 dir=build start result=PASS passed=0 failed=0 skipped=0
	local unexpected=0 counts rc=0 log_rc=0
	counts=$(mktemp)
	start=$(now)
	printf '\n==== stage %s ====\n' "$name"
	if ! pc_setup_build "$dir" "$werror"; then
		result="FAIL (build)"
		failed=1
	else
		rm -f "$dir/vm/testlog.json"
		# shellcheck disable=SC2086 # PC_VM_TESTS is a list of words
		bash "$PC_ROOT/tests/vm/run.sh" "$dir" ${PC_VM_TESTS:-$vm_tests} || rc=$?
		if ((rc == 77)); then
			printf '{"name": "vm / %s", "result": "SKIP", "duration": 0, "returncode": 77, "stdout": ""}\n' \
				"$name" >"$dir/vm/testlog.json"
		fi
		if [[ -f $dir/vm/testlog.json ]]; then
			python3 "$PC_ROOT/scripts/testlog.py" --stage "$name" --log "$dir/vm/testlog.json" \
				--expected "$PC_ROOT/tests/expected-skips" --counts "$counts" \
				--failures "$failures" "${ci[@]}" || log_rc=$?
			if [[ -s $counts ]]; then
				read -r passed failed skipped unexpected <"$counts"
			fi
		fi
		if ((rc != 0 && rc != 77)); then
			result=FAIL
			if ((failed == 0)); then
				failed=1 # the guest did not finish: no test to show for it
				printf -- '---- %s: tests/vm/run.sh failed (exit %d); see %s\n' "$name" "$rc" \
					"$dir/vm/console.log" >>"$failures"
			fi
		elif ((log_rc != 0)); then
			if ((unexpected > 0)); then
				result="FAIL (unexpected skip)"
			else
				result="FAIL (skip accounting)"
				failed=$((failed + 1))
			fi
		fi
	fi
	rm -f "$counts"
	local secs
	secs=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
	printf '==== stage %s: %s in %ss (%d passed, %d failed, %d skipped)\n' \
		"$name" "$result" "$secs" "$passed" "$failed" "$skipped"
	stage_names+=("$name")
	stage_results+=("$result")
	stage_times+=("$secs")
	stage_counts+=("$passed passed, $failed failed, $skipped skipped")
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
	total_skipped=$((total_skipped + skipped))
}

# The tests the guest runs: the kernel and root suites and the command's
# tests (README.md, "Kernels").
vm_tests="cli cli-more detect residency prober gate open faults cachestat cli-special cli-open differential warm threads special snapshot-cli restore"
if ((!quick)); then
	run_vm_stage
fi

# The fuzz stage: one "test" per target. Each runs over a copy of its seeds
# in build-fuzz/fuzz-run/<target>/corpus; libFuzzer writes a failing input
# to build-fuzz/fuzz-run/<target>/artifacts/ (crash-*, leak-*, timeout-*,
# oom-*). fuzz/<target>.dict is passed as -dict, and the [libfuzzer]
# "key = value" lines of fuzz/<target>.options as -key=value.
run_fuzz_stage() {
	local name=fuzz dir=build-fuzz start result=PASS passed=0 failed=0
	local seconds=${PC_FUZZ_SECONDS:-20}
	start=$(now)
	printf '\n==== stage %s ====\n' "$name"

	if ! (export CC=clang && pc_setup_build "$dir" "$werror" -Dfuzzing=true -Db_lundef=false \
		-Dtests=disabled -Dexamples=false -Ddocs=disabled); then
		result="FAIL (build)"
		failed=1
	else
		local corpus target exe work rc key value stats a par
		local -a args artifacts targets=()
		# the targets run side by side, one per core
		par=$(nproc 2>/dev/null || echo 1)
		for corpus in "$PC_ROOT"/fuzz/corpus/*/; do
			target=$(basename "$corpus")
			exe=$PC_ROOT/$dir/fuzz/$target
			work=$PC_ROOT/$dir/fuzz-run/$target
			if [[ ! -x $exe ]]; then
				printf 'fuzz %s: FAIL: fuzz/corpus/%s has no target %s\n' "$target" "$target" "$exe"
				printf -- '---- fuzz:%s: no target %s\n' "$target" "$exe" >>"$failures"
				failed=$((failed + 1))
				continue
			fi
			targets+=("$target")
			rm -rf "$work"
			mkdir -p "$work/corpus" "$work/artifacts"
			cp -a -- "$corpus." "$work/corpus/"
			args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
				-artifact_prefix="$work/artifacts/" -print_final_stats=1)
			if [[ -f $PC_ROOT/fuzz/$target.dict ]]; then
				args+=(-dict="$PC_ROOT/fuzz/$target.dict")
			fi
			if [[ -f $PC_ROOT/fuzz/$target.options ]]; then
				while IFS='=' read -r key value; do
					key=${key//[[:space:]]/}
					value=${value//[[:space:]]/}
					if [[ -n $key && $key != \#* && $key != \[* ]]; then
						args+=("-$key=$value")
					fi
				done <"$PC_ROOT/fuzz/$target.options"
			fi
			while (($(jobs -rp | wc -l) >= par)); do
				wait -n || true
			done
			(
				rc=0
				"$exe" "${args[@]}" "$work/corpus" >"$work/log" 2>&1 || rc=$?
				echo "$rc" >"$work/rc"
			) &
		done
		wait
		for target in "${targets[@]}"; do
			exe=$PC_ROOT/$dir/fuzz/$target
			work=$PC_ROOT/$dir/fuzz-run/$target
			rc=$(cat "$work/rc" 2>/dev/null || echo 255)
			stats=$(awk '/^stat::number_of_executed_units:/ { n = $2 }
				/^stat::average_exec_per_sec:/ { r = $2 }
				/^stat::new_units_added:/ { u = $2 }
				/^stat::peak_rss_mb:/ { m = $2 }
				END { printf "%s execs, %s/s, %s new units, peak RSS %s MB", n, r, u, m }' "$work/log")
			mapfile -t artifacts < <(find "$work/artifacts" -type f | sort)
			if ((rc == 0 && ${#artifacts[@]} == 0)); then
				printf 'fuzz %s: PASS in %ss: %s\n' "$target" "$seconds" "$stats"
				passed=$((passed + 1))
				continue
			fi
			printf 'fuzz %s: FAIL (exit %d): %s\n' "$target" "$rc" "$stats"
			printf -- '---- fuzz:%s: FAIL (exit %d); its log: %s\n' "$target" "$rc" "$work/log" >>"$failures"
			failed=$((failed + 1))
			printf -- '---- %s: the end of %s\n' "$target" "$work/log"
			tail -n 40 "$work/log"
			for a in "${artifacts[@]}"; do
				printf -- '---- %s: failing input %s (%s bytes); replay: %s %s\n' \
					"$target" "$a" "$(stat -c %s "$a")" "$exe" "$a"
				# head may close the pipe early: that is not a failure
				od -A x -t x1z -v "$a" | head -n 16 || true
			done
		done
		if ((passed + failed == 0)); then
			printf 'fuzz: no corpus directories in fuzz/corpus\n'
			failed=1
		fi
	fi
	if ((failed > 0)) && [[ $result == PASS ]]; then
		result=FAIL
	fi

	local secs
	secs=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
	printf '==== stage %s: %s in %ss (%d passed, %d failed, %d skipped)\n' \
		"$name" "$result" "$secs" "$passed" "$failed" 0
	stage_names+=("$name")
	stage_results+=("$result")
	stage_times+=("$secs")
	stage_counts+=("$passed passed, $failed failed, 0 skipped")
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
}

if ((!quick)); then
	run_fuzz_stage
fi

# record_stage NAME RESULT START PASSED FAILED: the summary's line of a
# stage whose "tests" are not meson's (release, package)
record_stage() {
	local name=$1 result=$2 start=$3 passed=$4 failed=$5 secs
	if ((failed > 0)) && [[ $result == PASS ]]; then
		result=FAIL
	fi
	secs=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
	printf '==== stage %s: %s in %ss (%d passed, %d failed, %d skipped)\n' \
		"$name" "$result" "$secs" "$passed" "$failed" 0
	stage_names+=("$name")
	stage_results+=("$result")
	stage_times+=("$secs")
	stage_counts+=("$passed passed, $failed failed, 0 skipped")
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
}

# The release stage: the optimizer warns where -O2 -g does not (gcc's
# -Wmaybe-uninitialized, -Wstringop-*); both compilers, warnings as errors.
# What is shipped (the libraries, the command, the examples) is built, the
# tests are not (they build with warnings as errors in the other stages):
# CI's time budget.
run_release_stage() {
	local name=release start passed=0 failed=0 compiler
	start=$(now)
	printf '\n==== stage %s ====\n' "$name"
	for compiler in gcc clang; do
		if (export CC=$compiler && pc_setup_build "build-release-$compiler" "$werror" \
			-Dbuildtype=release -Dtests=disabled); then
			printf 'release %s: PASS\n' "$compiler"
			passed=$((passed + 1))
		else
			printf 'release %s: FAIL (build)\n' "$compiler"
			printf -- '---- release:%s: the -Dbuildtype=release build failed (build-release-%s)\n' \
				"$compiler" "$compiler" >>"$failures"
			failed=$((failed + 1))
		fi
	done
	record_stage "$name" PASS "$start" "$passed" "$failed"
}

# The package stage: scripts/package.sh --check, one "test" per step.
run_package_stage() {
	local name=package start passed=0 failed=0 log rc=0 steps=6
	start=$(now)
	printf '\n==== stage %s ====\n' "$name"
	log=$(mktemp)
	# nocheck: the other stages run the suite; noautodbgsym: nobody here
	# reads the -dbgsym packages
	DEB_BUILD_OPTIONS="nocheck noautodbgsym ${DEB_BUILD_OPTIONS:-}" bash "$PC_ROOT/scripts/package.sh" --check \
		2>&1 | tee "$log" || rc=$?
	passed=$(grep -c '^package: [a-z]*: PASS' "$log" || true)
	failed=$(grep -c '^package: [a-z]*: FAIL' "$log" || true)
	grep '^package: [a-z]*: FAIL' "$log" | sed 's/^/---- /' >>"$failures" || true
	if ((rc != 0 && failed == 0)) || ((passed + failed != steps)); then
		printf -- '---- package: scripts/package.sh exited %d after %d of %d steps\n' \
			"$rc" $((passed + failed)) "$steps" >>"$failures"
		failed=$((failed + 1))
	fi
	rm -f "$log"
	record_stage "$name" PASS "$start" "$passed" "$failed"
}

if ((!quick)); then
	run_release_stage
	run_package_stage
fi

status=0
printf '\n==== summary\n'
for i in "${!stage_names[@]}"; do
	printf '%-9s %-24s %7ss  %s\n' "${stage_names[$i]}" "${stage_results[$i]}" \
		"${stage_times[$i]}" "${stage_counts[$i]}"
	if [[ ${stage_results[$i]} != PASS ]]; then
		status=1
	fi
done
if [[ -s $failures ]]; then
	printf '\n==== why: every failed test, again\n'
	cat "$failures"
fi
machine_report "machine at the end" || true
printf '%d passed, %d failed, %d skipped\n' "$total_passed" "$total_failed" "$total_skipped"
exit "$status"
