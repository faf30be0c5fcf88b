#!/usr/bin/env bash
# Compare the fork's toolchain against upstream (the release VERSION names),
# side by side in one run. See doc/benchmarks.md. Examples:
#   benchmarks/run.bash                       # every suite, 10 rounds
#   benchmarks/run.bash -quick                # one short round (all.bash)
#   benchmarks/run.bash -suite heap,goprof -count 20
#   benchmarks/run.bash -lineage SETTING      # adds fork+SETTING to sched
# Flags are those of cmd/benchrun (run.bash -h lists them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# The harness itself is built with the fork's go (or $GO), into a cache
# directory outside both GOROOTs.
GO="${GO:-$here/../goroot/bin/go}"
if [[ ! -x "$GO" ]]; then
	GO="$(command -v go || true)"
fi
if [[ -z "$GO" ]]; then
	echo "run.bash: no go command: build the fork (./make.bash) or set GO" >&2
	exit 1
fi
cache="${BENCH_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/fpsafe-benchmarks}"
mkdir -p "$cache"
export BENCH_CACHE="$cache" # the harness keeps benchstat there too
GOTOOLCHAIN=local GOFLAGS=-mod=readonly "$GO" build -o "$cache/benchrun" ./cmd/benchrun
exec "$cache/benchrun" "$@"
