#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/package.sh [--check]
#
# Builds the Debian packages (debian/) with `dpkg-buildpackage -us -uc -b`
# from a copy of the tree, so that the tree itself stays clean, and leaves
# the .deb files in build-deb/; then `apt install ./build-deb/*.deb`
# installs them. DEB_BUILD_OPTIONS is passed on (nocheck: no test suite).
#
# --check (scripts/test.sh's package stage) goes on, as root, and prints a
# line "package: STEP: PASS (Ns)" or "package: STEP: FAIL: why (Ns)" per step:
#   build     the packages build
#   lintian   lintian on the .changes: no error, no warning that
#             debian/*.lintian-overrides does not explain
#   install   apt-get install ./*.deb (none of them may be installed before)
#   examples  examples/*.c, copied to an empty directory, compile against
#             the installed headers and libraries through pkg-config
#             (pagecache, and pagecache-model for those including
#             <pagecache/model.h>), load them from /usr/lib and run
#   command   /usr/bin/pagecache --version, audit and stat; the systemd
#             units are installed and not enabled
#   remove    apt-get purge of the packages leaves none of their `dpkg -L`
#             paths behind, but for directories that another package owns
#             or that existed before the install
# Whatever happens, the packages --check installed are purged at its end.
# Exit status: 0 when every step passed.

set -euo pipefail

# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

check=0
for arg in "$@"; do
	case $arg in
	--check) check=1 ;;
	-h | --help)
		sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
		exit 0
		;;
	*)
		pc_log "package: unknown argument: $arg (try --help)"
		exit 2
		;;
	esac
done

pc_setup_packages
cd "$PC_ROOT"

out=$PC_ROOT/build-deb
packages=(libpagecache0 libpagecache-dev libpagecache-model0 libpagecache-model-dev pagecache)
failed=0
installed=0
work=$(mktemp -d)
cleanup() {
	if ((installed)); then
		apt-get purge -y -q "${packages[@]}" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# each step's time: from the end of the one before
step_start=$SECONDS
pass() {
	printf 'package: %s: PASS (%ss)\n' "$1" $((SECONDS - step_start))
	step_start=$SECONDS
}
fail() {
	printf 'package: %s: FAIL: %s (%ss)\n' "$1" "$2" $((SECONDS - step_start))
	step_start=$SECONDS
	failed=$((failed + 1))
}
# the steps after a failed one cannot run: the rest fail with it
give_up() {
	local step
	for step in "$@"; do
		fail "$step" "not run: an earlier step failed"
	done
	exit 1
}

# ---- build -------------------------------------------------------------------
version=$(dpkg-parsechangelog -SVersion)
upstream=${version#*:}
upstream=${upstream%-*}
src=$work/libpagecache-$upstream
mkdir -p "$src"
# the tree's files, not its build directories
if git -C "$PC_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -C "$PC_ROOT" ls-files -z --cached --others --exclude-standard |
		(cd "$PC_ROOT" && xargs -0 cp -a --parents -t "$src" 2>/dev/null) || true
	# files deleted but not yet committed are listed and missing: no matter
else
	tar -C "$PC_ROOT" --exclude='./build*' --exclude='./obj-*' --exclude=./.git -cf - . |
		tar -C "$src" -xf -
fi
rm -rf "$out"
mkdir -p "$out"
printf 'package: dpkg-buildpackage -us -uc -b (DEB_BUILD_OPTIONS=%s) in %s\n' \
	"${DEB_BUILD_OPTIONS:-}" "$src"
profiles=()
if [[ " ${DEB_BUILD_OPTIONS:-} " == *" nocheck "* ]]; then
	profiles=(-Pnocheck)
fi
if (cd "$src" && dpkg-buildpackage -us -uc -b "${profiles[@]}") >"$out/build.log" 2>&1; then
	cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out/"
	pass build
else
	tail -n 40 "$out/build.log"
	fail build "dpkg-buildpackage failed; see $out/build.log"
	if ((check)); then
		give_up lintian install examples command remove
	fi
	exit 1
fi
ls "$out"/*.deb
if ((!check)); then
	exit 0
fi

# ---- lintian -----------------------------------------------------------------
changes=$(ls "$out"/*.changes)
if lintian --fail-on error,warning --display-info --info "$changes" >"$out/lintian.log" 2>&1; then
	pass lintian
else
	fail lintian "see $out/lintian.log"
fi
grep -v '^N:' "$out/lintian.log" || true

# ---- install -----------------------------------------------------------------
debs=()
for pkg in "${packages[@]}"; do
	debs+=("$(ls "$out/${pkg}_"*.deb)")
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
	if [[ -n $status && $status != un* ]]; then
		fail install "$pkg is on this machine already ($status): apt-get purge it first"
		give_up examples command remove
	fi
done
# every path the packages will hold, and which of them exist now
for deb in "${debs[@]}"; do
	dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -e 's|^\./|/|' -e 's|/$||' -e '/^$/d'
done | sort -u >"$work/paths"
while read -r path; do
	if [[ -e $path || -L $path ]]; then
		printf '%s\n' "$path"
	fi
done <"$work/paths" >"$work/before"
installed=1
# unsafe-io: dpkg without its fsyncs (half the time here); the packages
# are purged again minutes later
apt_opts=(-y -q -o Dpkg::Options::=--force-unsafe-io)
if DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" --no-install-recommends \
	"${debs[@]}" >"$out/install.log" 2>&1; then
	pass install
else
	cat "$out/install.log"
	fail install "apt-get install failed"
	give_up examples command remove
fi

# ---- examples ----------------------------------------------------------------
# No build tree and no environment pointing at one: what a user has.
ex=$work/examples
mkdir -p "$ex"
cp "$PC_ROOT"/examples/*.c "$ex/"
ok=1
(
	cd "$ex"
	unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR LD_LIBRARY_PATH CPATH LIBRARY_PATH
	set -e
	for modversion in pagecache pagecache-model; do
		v=$(pkg-config --modversion "$modversion")
		if [[ $v != "$upstream" ]]; then
			echo "pkg-config: $modversion is version $v, expected $upstream"
			exit 1
		fi
	done
	for c in *.c; do
		name=${c%.c}
		modules=pagecache
		if grep -q '<pagecache/model.h>' "$c"; then
			modules="pagecache-model pagecache"
		fi
		# shellcheck disable=SC2046,SC2086 # pkg-config prints words
		echo "+ cc -Wall -Wextra -Werror -o $name $c \$(pkg-config --cflags --libs $modules)"
		# shellcheck disable=SC2046,SC2086
		cc -Wall -Wextra -Werror -o "$name" "$c" $(pkg-config --cflags --libs $modules)
		# loaded from the system's library directory, nowhere else
		if ldd "$name" | grep -E 'libpagecache' | grep -vE "=> (/usr)?/lib/[^/]+/libpagecache(-model)?\.so\.0 "; then
			echo "$name: does not load the installed libraries"
			exit 1
		fi
	done
	mkdir data
	head -c 1000000 /dev/urandom >data/file
	cat data/file >/dev/null
	echo "+ ./cachestat data/file"
	./cachestat data/file | tee cachestat.out
	grep -q '^data/file: [0-9]* pages; cachestat: ' cachestat.out
	echo "+ ./happycache dump data snapshot; ./happycache load snapshot data"
	./happycache dump data snapshot
	./happycache load snapshot data
	echo "+ ./sidechannel >/dev/null"
	./sidechannel >/dev/null
) >"$out/examples.log" 2>&1 || ok=0
cat "$out/examples.log"
if ((ok)); then
	pass examples
else
	fail examples "see above"
fi

# ---- command -----------------------------------------------------------------
ok=1
(
	set -e
	cd "$work"
	echo "+ /usr/bin/pagecache --version"
	v=$(/usr/bin/pagecache --version)
	echo "$v"
	if [[ $v != "pagecache $upstream (libpagecache $upstream)" ]]; then
		echo "expected: pagecache $upstream (libpagecache $upstream)"
		exit 1
	fi
	echo "+ /usr/bin/pagecache audit"
	/usr/bin/pagecache audit
	echo "+ /usr/bin/pagecache stat /usr/bin/pagecache /usr/share/doc/pagecache"
	/usr/bin/pagecache stat /usr/bin/pagecache /usr/share/doc/pagecache
	for unit in pagecache-dump.service pagecache-restore.service; do
		test -f "/usr/lib/systemd/system/$unit"
		if find /etc/systemd -name "$unit" 2>/dev/null | grep .; then
			echo "$unit is enabled: it must not be after an install"
			exit 1
		fi
	done
	test -f /etc/default/pagecache
) >"$out/command.log" 2>&1 || ok=0
cat "$out/command.log"
if ((ok)); then
	pass command
else
	fail command "see above"
fi

# ---- remove ------------------------------------------------------------------
if DEBIAN_FRONTEND=noninteractive apt-get purge "${apt_opts[@]}" "${packages[@]}" >"$out/remove.log" 2>&1; then
	installed=0
	left=()
	while read -r path; do
		if [[ ! -e $path && ! -L $path ]]; then
			continue
		fi
		if [[ -d $path && ! -L $path ]] &&
			{ grep -qxF -- "$path" "$work/before" || dpkg-query -S "$path" >/dev/null 2>&1; }; then
			continue # a directory that is not only ours
		fi
		left+=("$path")
	done <"$work/paths"
	for pkg in "${packages[@]}"; do
		status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
		if [[ -n $status && $status != un* ]]; then
			left+=("dpkg still has $pkg ($status)")
		fi
	done
	if ((${#left[@]} == 0)); then
		pass remove
	else
		printf 'left behind: %s\n' "${left[@]}"
		fail remove "${#left[@]} paths left behind"
	fi
else
	cat "$out/remove.log"
	fail remove "apt-get purge failed"
fi

exit $((failed > 0))
