#!/usr/bin/env bash
# all.bash builds the fork and tests it: make.bash, the patch series round trip, upstream's
# tests of the packages the fork changes, the project's own Go modules (misc/, benchmarks/),
# the arm64 runtime tests under qemu-user, one quick benchmark round and one callgrind count of
# goroutine creation. It ends with a one-screen summary whose last line is "N passed, N failed"
# (counted per test package, and per step for steps that are not go test runs).
#
# Usage: ./all.bash [STEP...]   (default: every step; steps: make check upstream own stress arm64 bench callgrind)
set -uo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$TOP"
LOGS=${ALLBASH_LOGS:-$TOP/goroot-logs}
rm -rf "$LOGS"
mkdir -p "$LOGS"
GO=$TOP/goroot/bin/go
export PATH=$TOP/goroot/bin:$PATH GOTOOLCHAIN=local
unset GOROOT GOEXPERIMENT GOOS GOARCH

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(make check upstream own stress arm64 bench callgrind)
want() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

passed=0 failed=0
summary=()

# run NAME CMD...: run a step, log it, count its go test packages (or the step itself).
run() {
	local name=$1
	shift
	local log=$LOGS/$name.log start rc
	start=$(date +%s)
	echo "##### $name: $*"
	"$@" >"$log" 2>&1
	rc=$?
	local secs=$(($(date +%s) - start))
	local ok fail
	ok=$(grep -c '^ok  ' "$log")
	fail=$(grep -Ec '^FAIL	' "$log")
	if [ "$ok" -eq 0 ] && [ "$fail" -eq 0 ]; then
		# Not a go test run: the step counts once.
		if [ $rc -eq 0 ]; then ok=1; else fail=1; fi
	elif [ $rc -ne 0 ] && [ "$fail" -eq 0 ]; then
		fail=1 # go test failed outside any package (build error, bad flag)
	fi
	passed=$((passed + ok))
	failed=$((failed + fail))
	if [ $rc -eq 0 ]; then
		grep -E '^(ok  |SKIP|--- SKIP|fpcheck run: |.*: skipping|    .*skip)' "$log" | head -n 40
		summary+=("$(printf '%-10s %-6s %5ss  %s passed, %s failed' "$name" ok "$secs" "$ok" "$fail")")
	else
		grep -E -B2 -A30 '^(--- FAIL|FAIL|panic:|fatal error:)' "$log" | head -n 150
		tail -n 40 "$log"
		summary+=("$(printf '%-10s %-6s %5ss  %s passed, %s failed  (log: %s)' "$name" FAIL "$secs" "$ok" "$fail" "${log#$TOP/}")")
	fi
	return $rc
}

own_modules() {
	local rc=0 mod
	for mod in $(find misc benchmarks -name go.mod -not -path '*/testdata/*' 2>/dev/null | LC_ALL=C sort); do
		mod=$(dirname "$mod")
		echo "=== $mod"
		(cd "$mod" && GOFLAGS=-mod=mod "$GO" test -count=1 ./...) || rc=1
	done
	return $rc
}

if want make; then
	run make ./make.bash || { echo "all.bash: make.bash failed; nothing else can run"; steps=(); }
fi
want check && run check ./fork check
want upstream && run upstream "$GO" test -short -count=1 runtime runtime/pprof runtime/trace internal/trace cmd/internal/obj/... cmd/asm/...
want own && run own own_modules
want stress && run stress bash misc/fpcheck/stress.bash "$TOP/goroot" 10s
if want arm64 && [ -f misc/arm64test/run.bash ]; then run arm64 bash misc/arm64test/run.bash "$TOP/goroot"; fi
if want bench && [ -f benchmarks/run.bash ]; then run bench bash benchmarks/run.bash -quick; fi
if want callgrind; then
	if command -v valgrind >/dev/null; then
		run callgrind bash benchmarks/callgrind.bash -n 1 upstream fork
	else
		echo "##### callgrind: skipped: valgrind is not installed"
	fi
fi

echo
echo "##### all.bash summary ($("$GO" version 2>/dev/null || echo "no toolchain"))"
printf '%s\n' "${summary[@]}"
echo "logs: ${LOGS#$TOP/}/"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
