#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/update-symbols.sh
#
# Rewrites debian/libpagecache0.symbols and debian/libpagecache-model0.symbols
# from what the libraries export now. The package build fails on any
# difference (DPKG_GENSYMBOLS_CHECK_LEVEL=4 in debian/rules), so run this
# after adding an export to lib/libpagecache.sym or
# lib/model/libpagecache-model.sym, look at the diff it prints, and commit
# the symbols files with the export.
#
# New symbols get the upstream version of debian/changelog's newest entry
# (which tests/version checks against meson.build's). That is right only if
# no package of that version was ever published without them: otherwise
# bump the version first (meson.build, the header's PAGECACHE_VERSION_*,
# `dch -v NEW-1`), then run this. A symbol that disappears fails too: an
# export is never removed from soname .so.0.
#
# Needs: meson, ninja, dpkg-dev (dpkg-gensymbols), and what the library
# builds with (liburing-dev).

set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
upstream=$(dpkg-parsechangelog -SVersion)
upstream=${upstream#*:}
upstream=${upstream%-*}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the libraries as the package installs them (symbols do not depend on flags)
meson setup "$tmp/build" --prefix=/usr --libdir="lib/$multiarch" \
	-Dtests=disabled -Dexamples=false -Ddocs=disabled >/dev/null
ninja -C "$tmp/build" >/dev/null
DESTDIR="$tmp/dest" meson install -C "$tmp/build" --quiet

status=0
# package, library file, -dev package (the symbols file's Build-Depends-Package)
for entry in libpagecache0:libpagecache.so.0:libpagecache-dev \
	libpagecache-model0:libpagecache-model.so.0:libpagecache-model-dev; do
	IFS=: read -r package soname devpackage <<<"$entry"
	file=debian/$package.symbols
	lib=$(readlink -f "$tmp/dest/usr/lib/$multiarch/$soname")
	if [[ ! -f $file ]]; then
		printf '%s %s #MINVER#\n* Build-Depends-Package: %s\n' \
			"$soname" "$package" "$devpackage" >"$file"
	fi
	# -c0: report, never fail; the new file keeps the old one's versions
	rc=0
	dpkg-gensymbols -p"$package" -v"$upstream" -P"$tmp/dest" -e"$lib" \
		-I"$file" -O"$tmp/$package.symbols" -c0 || rc=$?
	if ((rc != 0)); then
		status=1
		continue
	fi
	if cmp -s "$tmp/$package.symbols" "$file"; then
		printf 'update-symbols: %s: unchanged\n' "$file"
	else
		diff -u "$file" "$tmp/$package.symbols" || true
		cp "$tmp/$package.symbols" "$file"
		printf 'update-symbols: %s: rewritten; new symbols got version %s\n' "$file" "$upstream"
	fi
done
exit "$status"
