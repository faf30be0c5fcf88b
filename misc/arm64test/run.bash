#!/usr/bin/env bash
# Copyright 2026 The Go Authors. All rights reserved.
# Use of this source code is governed by a BSD-style
# license that can be found in the LICENSE file.

# run.bash [GOROOT]: cross-compile the runtime test binary for linux/arm64
# and run the frame-pointer boundary tests (doc/fp-boundaries.md) under
# qemu-user. Prints go-test-style "ok" or "FAIL" and exits non-zero on
# failure. The cgo test (TestFPBoundaryCgoCallback) builds testprogcgo from
# within the test binary, which cannot work under emulation; instead, if an
# aarch64 cross compiler (aarch64-linux-gnu-gcc, apt-get install
# gcc-aarch64-linux-gnu) is present, testprogcgo is cross-built here and its
# FPChainCallback entry is run as that test does: it must print OK, and the
# same with GODEBUG=tracefpunwindoff=1.
set -u

goroot=${1:-/work/main/goroot}
gobin=$goroot/bin/go
if [ ! -x "$gobin" ]; then
	echo "run.bash: no go command at $gobin" >&2
	exit 2
fi
if ! command -v qemu-aarch64 >/dev/null 2>&1; then
	echo "run.bash: skipping: qemu-aarch64 not installed (apt-get install qemu-user)"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! (cd "$goroot/src" && GOTOOLCHAIN=local GOOS=linux GOARCH=arm64 CGO_ENABLED=0 \
	"$gobin" test -c -o "$tmp/runtime.test" runtime) >"$tmp/build.log" 2>&1; then
	cat "$tmp/build.log"
	echo "FAIL	runtime [build failed, linux/arm64]"
	exit 1
fi

start=$(date +%s%N)
if timeout 300 qemu-aarch64 "$tmp/runtime.test" -test.short -test.count=1 \
	-test.run '^TestFPBoundary' -test.v >"$tmp/out.log" 2>&1; then
	status=ok
else
	status=FAIL
fi
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
grep -E '^(=== RUN|--- (PASS|FAIL|SKIP)|\s+fpboundary)' "$tmp/out.log"
if [ $status = ok ] && ! grep -q -- '--- PASS' "$tmp/out.log"; then
	status=FAIL # no test ran
fi
if [ $status = FAIL ]; then
	tail -50 "$tmp/out.log"
	printf 'FAIL\truntime (linux/arm64, qemu-aarch64)\t%d.%03ds\n' $((elapsed / 1000)) $((elapsed % 1000))
	exit 1
fi
printf 'ok  \truntime (linux/arm64, qemu-aarch64)\t%d.%03ds\n' $((elapsed / 1000)) $((elapsed % 1000))

cc=aarch64-linux-gnu-gcc
if ! command -v $cc >/dev/null 2>&1; then
	echo "run.bash: skipping FPChainCallback: $cc not installed (apt-get install gcc-aarch64-linux-gnu)"
	exit 0
fi
sysroot=/usr/aarch64-linux-gnu
if ! (cd "$goroot/src/runtime/testdata/testprogcgo" && GOTOOLCHAIN=local GOOS=linux GOARCH=arm64 CGO_ENABLED=1 CC=$cc \
	"$gobin" build -o "$tmp/testprogcgo" .) >"$tmp/build.log" 2>&1; then
	cat "$tmp/build.log"
	echo "FAIL	runtime/testdata/testprogcgo [build failed, linux/arm64]"
	exit 1
fi
start=$(date +%s%N)
timeout 120 qemu-aarch64 -L $sysroot "$tmp/testprogcgo" FPChainCallback >"$tmp/fast.log" 2>&1
GODEBUG=tracefpunwindoff=1 timeout 120 qemu-aarch64 -L $sysroot "$tmp/testprogcgo" FPChainCallback >"$tmp/slow.log" 2>&1
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$(tail -1 "$tmp/fast.log")" = OK ] && [ "$(tail -1 "$tmp/slow.log")" = OK ] && cmp -s "$tmp/fast.log" "$tmp/slow.log"; then
	printf 'ok  \truntime/testdata/testprogcgo FPChainCallback (linux/arm64, qemu-aarch64)\t%d.%03ds\n' $((elapsed / 1000)) $((elapsed % 1000))
	exit 0
fi
echo "--- frame-pointer path:"; tail -40 "$tmp/fast.log"
echo "--- GODEBUG=tracefpunwindoff=1:"; tail -40 "$tmp/slow.log"
printf 'FAIL\truntime/testdata/testprogcgo FPChainCallback (linux/arm64, qemu-aarch64)\t%d.%03ds\n' $((elapsed / 1000)) $((elapsed % 1000))
exit 1
