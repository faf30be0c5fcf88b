#!/usr/bin/env bash
# stress.bash [GOROOT] [DURATION]: build the stress corpus (testdata/stress) with the fork and
# run it under `fpcheck run`, which cross-checks every frame-pointer unwind the runtime does
# against gentraceback and prints the counts. Exits non-zero on a mismatch. all.bash runs it.
# (`fpcheck perf` over the corpus runs in the module's TestPerfStress.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
goroot=${1:-$here/../../goroot}
dur=${2:-10s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$here/testdata/stress" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$goroot/bin/go" build -o "$tmp/stress" . &&
	cd "$here" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$goroot/bin/go" build -o "$tmp/fpcheck" .); then
	echo "FAIL	fpcheck stress [build failed]"
	exit 1
fi
rc=0
echo "=== fpcheck run -- stress -d $dur"
if "$tmp/fpcheck" run -- "$tmp/stress" -d "$dur" 2>&1 | grep -E '^fpcheck run:'; then :; fi
if [ "${PIPESTATUS[0]}" -eq 0 ]; then echo "ok  	fpcheck run (stress, $dur)"; else echo "FAIL	fpcheck run (stress, $dur)"; rc=1; fi
exit $rc
