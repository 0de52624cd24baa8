#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/run.sh [ARGS...]
#
# Sets up (Debian packages, meson, ninja; see setup.sh), then runs the
# project's command-line tool: build/tools/pagecache/pagecache ARGS...
# With no ARGS it runs `pagecache stat` on the library's own build output,
# a path that exists on every machine after the build.

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
	set -- stat "$PC_ROOT/build/lib"
fi
exec "$tool" "$@"
