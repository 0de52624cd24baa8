#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/run.sh [ARGS...]
#
# Sets up (Debian packages, meson, ninja; see setup.sh), then runs the
# project's command-line tool: build/tools/pagecache/pagecache ARGS...
# With no ARGS it runs `pagecache audit` (what this kernel reveals, and to
# whom) and then `pagecache stat` of the build directory, a path that exists
# on every machine after the build.

set -euo pipefail

# shellcheck source=scripts/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

pc_setup_packages
pc_setup_build build >&2

tool=$PC_ROOT/build/tools/pagecache/pagecache
if [[ ! -x $tool ]]; then
	pc_log "run: $tool was not built (the CLI comes with issue 5)"
	exit 1
fi
if (($# == 0)); then
	status=0
	"$tool" audit "$PC_ROOT/build" || status=$?
	echo
	"$tool" stat -q "$PC_ROOT/build" || status=$?
	exit "$status"
fi
exec "$tool" "$@"
