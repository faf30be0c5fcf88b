#!/usr/bin/env bash
# Copyright 2026 The Go Authors. All rights reserved.
# Use of this source code is governed by a BSD-style
# license that can be found in the LICENSE file.

# run.bash [-count N] [GOROOT]: cross-compile the runtime test binary for
# linux/arm64 and run the frame-pointer boundary tests (doc/fp-boundaries.md)
# under qemu-user, N times each (default 200; doc/benchmarks.md, "all.bash
# steps", has the time it takes). GOROOT defaults to the repository's goroot/.
# Every failed run is a failure.
#
# The cgo test (TestFPBoundaryCgoCallback) builds testprogcgo from within the
# test binary, which cannot work under emulation; instead testprogcgo is
# cross-built here with aarch64-linux-gnu-gcc and its FPChainCallback entry is
# run as that test does: it must print OK, and the same with
# GODEBUG=tracefpunwindoff=1. Its FPChainCLink entry is run as
# TestFPBoundaryCgoCLink does.
#
# Results: under all.bash ($ALLBASH_JSON and $ALLBASH_RECORDS set) the test
# binary's output goes through `go tool test2json` into $ALLBASH_JSON and the
# other results are records in $ALLBASH_RECORDS (misc/allbash). A missing
# qemu-aarch64 or cross compiler is a "skip" record, which all.bash counts as
# a failure. Standalone, the output is go test -v's and the exit status is
# non-zero on a failure or a skip.
set -u

here=$(cd "$(dirname "$0")" && pwd)
count=200
if [ "${1:-}" = -count ]; then
	count=$2
	shift 2
fi
goroot=${1:-$here/../../goroot}
gobin=$goroot/bin/go
status=0

# record RESULT NAME SECONDS NOTE: report one result (misc/allbash's format).
record() {
	[ -z "${ALLBASH_RECORDS:-}" ] || printf '%s\t%s\t%s\t%s\n' "$@" >>"$ALLBASH_RECORDS"
	echo "run.bash: $1: $2${4:+: $4}"
	[ "$1" = pass ] || status=1
}

if [ ! -x "$gobin" ]; then
	record fail "arm64 boundary tests" 0 "no go command at $gobin (run ./make.bash)"
	exit 1
fi
if ! command -v qemu-aarch64 >/dev/null 2>&1; then
	record skip "runtime TestFPBoundary (linux/arm64, qemu-aarch64)" 0 "qemu-aarch64 not installed (apt-get install qemu-user)"
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! (cd "$goroot/src" && GOTOOLCHAIN=local GOOS=linux GOARCH=arm64 CGO_ENABLED=0 \
	"$gobin" test -c -o "$tmp/runtime.test" runtime) >"$tmp/build.log" 2>&1; then
	cat "$tmp/build.log"
	record fail "runtime test binary (linux/arm64)" 0 "build failed"
	exit 1
fi

# A hung test is a failure with every goroutine's stack: -test.timeout, or,
# when the test binary cannot run its timer (every P stuck), SIGQUIT from
# timeout(1) after 5 minutes.
args=(-test.short -test.count="$count" -test.timeout=4m -test.run '^TestFPBoundary')
if [ -n "${ALLBASH_JSON:-}" ]; then
	"$gobin" tool test2json -t -p "runtime (linux/arm64, qemu-aarch64)" \
		timeout -s QUIT -k 10 300 qemu-aarch64 "$tmp/runtime.test" -test.v=test2json "${args[@]}" >>"$ALLBASH_JSON" || status=1
else
	timeout -s QUIT -k 10 300 qemu-aarch64 "$tmp/runtime.test" -test.v "${args[@]}" || status=1
fi

cc=aarch64-linux-gnu-gcc
name="runtime/testdata/testprogcgo FPChainCallback (linux/arm64, qemu-aarch64)"
if ! command -v $cc >/dev/null 2>&1; then
	record skip "$name" 0 "$cc not installed (apt-get install gcc-aarch64-linux-gnu)"
	exit 1
fi
if ! (cd "$goroot/src/runtime/testdata/testprogcgo" && GOTOOLCHAIN=local GOOS=linux GOARCH=arm64 CGO_ENABLED=1 CC=$cc \
	"$gobin" build -o "$tmp/testprogcgo" .) >"$tmp/build.log" 2>&1; then
	cat "$tmp/build.log"
	record fail "$name" 0 "build failed"
	exit 1
fi
sysroot=/usr/aarch64-linux-gnu # where Debian's gcc-aarch64-linux-gnu puts the target's libc
start=$SECONDS
timeout 120 qemu-aarch64 -L $sysroot "$tmp/testprogcgo" FPChainCallback >"$tmp/fast.log" 2>&1
GODEBUG=tracefpunwindoff=1 timeout 120 qemu-aarch64 -L $sysroot "$tmp/testprogcgo" FPChainCallback >"$tmp/slow.log" 2>&1
if [ "$(tail -1 "$tmp/fast.log")" = OK ] && [ "$(tail -1 "$tmp/slow.log")" = OK ] && cmp -s "$tmp/fast.log" "$tmp/slow.log"; then
	record pass "$name" $((SECONDS - start)) ""
else
	echo "--- frame-pointer path:"; tail -40 "$tmp/fast.log"
	echo "--- GODEBUG=tracefpunwindoff=1:"; tail -40 "$tmp/slow.log"
	record fail "$name" $((SECONDS - start)) "the output differs from OK, or between the two unwinders"
fi

# FPChainCLink: C frames between a cgo call and its callback stay in the
# chain when they keep frame pointers; the runtime's unwinders still match
# gentraceback (TestFPBoundaryCgoCLink's checks).
name="runtime/testdata/testprogcgo FPChainCLink (linux/arm64, qemu-aarch64)"
start=$SECONDS
GODEBUG=fpunwindcheck=2 timeout 120 qemu-aarch64 -L $sysroot "$tmp/testprogcgo" FPChainCLink >"$tmp/clink.log" 2>&1
if grep -qx OK "$tmp/clink.log" && grep -q '^linked O2: ' "$tmp/clink.log" && grep -q '^linked O0: ' "$tmp/clink.log" &&
	! grep -q '^linked corrupt' "$tmp/clink.log" && grep -qx 'fpunwindcheck: checked=[0-9]* mismatches=0' "$tmp/clink.log"; then
	record pass "$name" $((SECONDS - start)) ""
else
	tail -40 "$tmp/clink.log"
	record fail "$name" $((SECONDS - start)) "C frames not linked, a corrupt chain linked, or an unwinder mismatch"
fi
exit $status
