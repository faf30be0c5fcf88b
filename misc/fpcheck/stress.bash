#!/usr/bin/env bash
# stress.bash [GOROOT] [DURATION]: build the stress corpus (testdata/stress) with the fork and
# run it under `fpcheck run`, which cross-checks every frame-pointer unwind the runtime does
# against gentraceback and prints the counts; then under `fpcheck perf`, which checks every
# user-space chain perf records. Exits non-zero on a mismatch or a violation. all.bash runs it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
goroot=${1:-$here/../../goroot}
dur=${2:-10s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$here/testdata/stress" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$goroot/bin/go" build -o "$tmp/stress" .); then
	echo "FAIL	fpcheck stress [build failed]"
	exit 1
fi
rc=0
echo "=== fpcheck run -- stress -d $dur"
if "$goroot/bin/fpcheck" run -- "$tmp/stress" -d "$dur" 2>&1 | grep -E '^fpcheck run:'; then :; fi
if [ "${PIPESTATUS[0]}" -eq 0 ]; then echo "ok  	fpcheck run (stress, $dur)"; else echo "FAIL	fpcheck run (stress, $dur)"; rc=1; fi
echo "=== fpcheck perf -- stress -d 4s -only cgo,cthread"
"$goroot/bin/fpcheck" perf -- "$tmp/stress" -d 4s -only cgo,cthread >"$tmp/perf.log" 2>&1
prc=$?
grep -E '^fpcheck perf:|samples|violations|ROOT|root' "$tmp/perf.log" | head -30
case $prc in
0) echo "ok  	fpcheck perf (stress cgo callbacks)" ;;
*) if grep -q 'perf_event_open\|perf_event_paranoid\|not installed' "$tmp/perf.log"; then
	echo "fpcheck perf: skipped: $(grep -m1 'perf_event\|not installed' "$tmp/perf.log")"
else
	tail -20 "$tmp/perf.log"; echo "FAIL	fpcheck perf (stress cgo callbacks)"; rc=1
fi ;;
esac
exit $rc
