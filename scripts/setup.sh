#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/setup.sh [BUILDDIR [MESON_OPTION...]]
#
# Installs the Debian packages the build, the tests and the benchmarks need
# (when root; otherwise prints the apt-get line to run and fails), then
# configures BUILDDIR (default: build) with meson and builds it with ninja.
#
# run.sh and test.sh source this file and call pc_setup_packages and
# pc_setup_build themselves; run directly, it does both.

set -euo pipefail

# Every Debian package the project uses, in one place. Later issues add theirs.
PC_PACKAGES=(
	meson ninja-build pkg-config gcc g++ # build
	check liburing-dev                   # libraries
	zlib1g-dev                           # happycache's gzip'ed format (pagecache dump/restore)
	valgrind python3                     # test stages, abi checks
	libtsan2                             # tsan stage: gcc's ThreadSanitizer runtime
	acl e2fsprogs util-linux             # setfacl, chattr, mount, setpriv in tests
	vmtouch                              # cross-checking residency by hand
	groff-base mandoc                    # man page checks: groff -ww, mandoc -Tlint
	clang libclang-rt-14-dev             # fuzz stage: -fsanitize=fuzzer needs libclang_rt.fuzzer
	time                                 # GNU time: peak RSS in bench-scale.sh
	qemu-system-x86 busybox-static cpio # kernel-6.1 stage: tests/vm/run.sh boots Debian's 6.1
	build-essential dpkg-dev debhelper  # package stage: dpkg-buildpackage (scripts/package.sh)
	lintian                             # package stage: lintian on the packages
)

PC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

pc_log() {
	printf '%s\n' "$*" >&2
}

# The packages of PC_PACKAGES that are not installed, one per line.
pc_missing_packages() {
	local pkg status
	for pkg in "${PC_PACKAGES[@]}"; do
		status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
		if [[ $status != "install ok installed" ]]; then
			printf '%s\n' "$pkg"
		fi
	done
}

pc_setup_packages() {
	local missing
	if ! command -v dpkg-query >/dev/null; then
		pc_log "setup: not a Debian system (no dpkg-query); install by hand: ${PC_PACKAGES[*]}"
		return 1
	fi
	mapfile -t missing < <(pc_missing_packages)
	if ((${#missing[@]} == 0)); then
		return 0
	fi
	if ((EUID != 0)); then
		pc_log "setup: missing Debian packages: ${missing[*]}"
		pc_log "setup: run as root, then try again:"
		pc_log "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
		return 1
	fi
	pc_log "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# pc_setup_build BUILDDIR [MESON_OPTION...]: configure (once) and build.
# Options given for an existing build directory are applied with meson
# configure; ninja reruns meson by itself when a meson.build changed.
# Runs in a subshell: the caller's working directory stays where it was.
pc_setup_build() (
	dir=${1:-build}
	shift || true
	# explicit checks: callers may run this inside `if`, where set -e is off
	cd "$PC_ROOT" || exit 1
	if [[ -f $dir/meson-private/coredata.dat ]]; then
		if (($# > 0)); then
			meson configure "$dir" "$@" >/dev/null || exit 1
		fi
	else
		meson setup "$dir" "$@" || exit 1
	fi
	ninja -C "$dir" || exit 1
)

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	pc_setup_packages
	pc_setup_build "$@"
fi
