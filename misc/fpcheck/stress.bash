#!/usr/bin/env bash
# stress.bash [GOROOT] [DURATION]: build the stress corpus (testdata/stress) with the fork and
# run it under `fpcheck run`, which cross-checks every frame-pointer unwind the runtime does
# against gentraceback and prints the counts. Exits non-zero on a mismatch. all.bash runs it;
# under all.bash the result is a record in $ALLBASH_RECORDS (misc/allbash's format).
# (`fpcheck perf` over the corpus runs in the module's TestPerfStress.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
goroot=${1:-$here/../../goroot}
dur=${2:-10s}
name="fpcheck run -- stress -d $dur"

# record RESULT SECONDS NOTE: report the result (misc/allbash's format).
record() {
	[ -z "${ALLBASH_RECORDS:-}" ] || printf '%s\t%s\t%s\t%s\n' "$1" "$name" "$2" "$3" >>"$ALLBASH_RECORDS"
	echo "stress.bash: $1: $name${3:+: $3}"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$here/testdata/stress" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$goroot/bin/go" build -o "$tmp/stress" . &&
	cd "$here" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$goroot/bin/go" build -o "$tmp/fpcheck" .); then
	record fail 0 "building the stress corpus or fpcheck failed"
	exit 1
fi
start=$SECONDS
"$tmp/fpcheck" run -- "$tmp/stress" -d "$dur" >"$tmp/out" 2>&1
rc=$?
grep -E '^fpcheck run:' "$tmp/out" # the counts, for the log
note=$(grep -E '^fpcheck run:' "$tmp/out" | tail -1)
if [ $rc -eq 0 ]; then
	record pass $((SECONDS - start)) "${note#fpcheck run: }"
	exit 0
fi
tail -40 "$tmp/out"
record fail $((SECONDS - start)) "exit status $rc; ${note#fpcheck run: }"
exit 1
