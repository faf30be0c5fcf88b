#!/usr/bin/env bash
# stdsuites.bash [-goroot DIR] [PKG...]: run upstream's own tests of standard packages with
# every frame-pointer unwinder of the runtime busy and cross-checked against gentraceback:
# each package's test binary runs under `fpcheck run` (GODEBUG=fpunwindcheck=2) with the
# execution tracer on, every blocking event and every mutex contention profiled, and the heap
# profiler sampling every 4 KiB. Prints one line per package and the totals; exits non-zero
# if any unwind disagreed or a package's tests failed. The default packages are a spread of
# the standard library (the ones with goroutines, locks, panics, Goexit, cgo and I/O);
# "std" means every package with tests, which takes hours on two cores.
set -u
here=$(cd "$(dirname "$0")" && pwd)
goroot=$here/../../goroot
if [ "${1:-}" = "-goroot" ]; then goroot=$2; shift 2; fi
go=$goroot/bin/go
# Tests that run the go command (math/big, testing, ...) must find the fork's.
export PATH=$goroot/bin:$PATH GOTOOLCHAIN=local
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(sync sync/atomic context time os os/exec os/signal io bufio bytes strings
	errors encoding/json compress/gzip net net/http runtime/pprof runtime/trace internal/trace
	testing text/template regexp math/big crypto/sha256 archive/tar)
if [ "${pkgs[*]}" = "std" ]; then
	mapfile -t pkgs < <(GOTOOLCHAIN=local "$go" list -f '{{if .TestGoFiles}}{{.ImportPath}}{{end}}' std)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$go" build -o "$tmp/fpcheck" .) || {
	echo "stdsuites.bash: cannot build fpcheck"
	exit 1
}
failed=0 unwinds=0 mismatches=0
for p in "${pkgs[@]}"; do
	bin=$tmp/pkg.test
	rm -f "$bin"
	if ! GOTOOLCHAIN=local "$go" test -c -o "$bin" "$p" >"$tmp/build" 2>&1; then
		echo "$p: build failed"; tail -5 "$tmp/build"; failed=1; continue
	fi
	[ -x "$bin" ] || { echo "$p: no tests"; continue; }
	dir=$(GOTOOLCHAIN=local "$go" list -f '{{.Dir}}' "$p")
	profiles=(-test.trace="$tmp/trace.out" -test.blockprofile="$tmp/block.out" -test.blockprofilerate=1
		-test.mutexprofile="$tmp/mutex.out" -test.mutexprofilefraction=1
		-test.memprofile="$tmp/mem.out" -test.memprofilerate=4096)
	# runtime/pprof's tests set the profile rates themselves (and check them), and
	# exercise every profiler: the tracer alone is added.
	[ "$p" = runtime/pprof ] && profiles=(-test.trace="$tmp/trace.out")
	(cd "$dir" && "$tmp/fpcheck" run -timeout 20m -- "$bin" -test.short -test.count=1 -test.timeout=15m \
		"${profiles[@]}") >"$tmp/out" 2>&1
	rc=$?
	line=$(grep -E '^fpcheck run:' "$tmp/out" | tail -1)
	n=$(sed -nE 's/.* ([0-9]+) unwinds.*/\1/p' <<<"$line")
	m=$(sed -nE 's/.* ([0-9]+) mismatch.*/\1/p' <<<"$line")
	unwinds=$((unwinds + ${n:-0}))
	mismatches=$((mismatches + ${m:-0}))
	echo "$p: exit $rc; ${line:-no report}"
	if [ $rc -ne 0 ]; then
		failed=1
		tail -30 "$tmp/out"
	fi
done
echo "stdsuites.bash: ${#pkgs[@]} packages, $unwinds unwinds cross-checked, $mismatches mismatches"
[ $failed -eq 0 ] && [ $mismatches -eq 0 ]
