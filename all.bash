#!/usr/bin/env bash
# all.bash builds the fork and tests it: make.bash, the patch series round trip, the tools
# that CI installs, upstream's tests of the packages the fork changes (the runtime's, and the
# go command's and cmd/internal/objabi's for the version and toolchain patches), the project's
# own Go modules (each go.mod under misc/ and benchmarks/, with the SFrame dynamic check), the
# linker's and the cgo build modes' tests (linkmodes), the fork's runtime tests with lock
# ranking checked (lockrank) and built with -race (race), the stress corpus under fpcheck
# run, the arm64 runtime tests under qemu-user, one quick benchmark round and one callgrind
# count.
#
# Each step's results go to $ALLBASH_LOGS (default goroot-logs/): go test -json streams and
# result records. misc/allbash reads them and prints the summary, whose last line is
# "N passed, N failed": go test steps count packages, other steps their result records or
# their exit status (misc/allbash's doc says exactly how). Before the first step, all.bash
# installs the Debian packages of the commands .ci/tools lists that are missing (as root or
# with password-less sudo), or stops with the command that would; ALLBASH_ALLOW_SKIP=1 goes
# on without them and lists the steps' skips instead of failing them, except under CI=true.
#
# Usage: ./all.bash [STEP...]
#   steps (default all): make check tools upstream lockrank race cmdgo linkmodes own stress arm64 bench callgrind release
#   (release: ./release.bash builds dist/ from scratch, about 13 minutes on two cores, then
#   the switch step has a stock go switch to the fork through dist/proxy and build a module,
#   and a module outside the repository get the reader SDK from dist/proxy and build with it)
#   ARM64_COUNT=N: runs of each arm64 boundary test (default 200)
set -uo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$TOP"
LOGS=${ALLBASH_LOGS:-goroot-logs}
rm -rf "$LOGS"
mkdir -p "$LOGS"
LOGS=$(cd "$LOGS" && pwd)
STOCK_GO=${FPSAFE_STOCK_GO:-$(command -v go || echo /usr/local/go/bin/go)}
export PATH=$TOP/goroot/bin:$PATH GOTOOLCHAIN=local
unset GOROOT GOEXPERIMENT GOOS GOARCH GOFLAGS

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(make check tools upstream lockrank race cmdgo linkmodes own stress arm64 bench callgrind release)
want() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

# step NAME KIND CMD...: run CMD with its output in $LOGS/NAME.log, its go test -json
# streams in $ALLBASH_JSON and its result records in $ALLBASH_RECORDS, then list it in
# $LOGS/steps for misc/allbash. KIND is "results" or "exit" (the exit status is the result).
step() {
	local name=$1 kind=$2 start=$SECONDS rc
	shift 2
	echo "##### $name"
	ALLBASH_JSON=$LOGS/$name.json ALLBASH_RECORDS=$LOGS/$name.records "$@" >"$LOGS/$name.log" 2>&1
	rc=$?
	printf '%s\t%s\t%d\t%d\n' "$name" "$kind" "$rc" $((SECONDS - start)) >>"$LOGS/steps"
	echo "##### $name: exit status $rc after $((SECONDS - start))s"
	return $rc
}

# gotest ARGS...: go test -json into the step's stream.
gotest() { go test -json "$@" >>"$ALLBASH_JSON"; }

# The go command's tests of what patches 0001 (go.env: GOTOOLCHAIN=local) and 0002 (cache keyed by
# the tools' build IDs for suffixed versions) change: every -short test of cmd/internal/objabi and
# cmd/go/internal/work, and the cmd/go tests of toolchain selection, versions, staleness and the build cache. Those
# skip themselves under -short, so they run without it (the step's time: doc/benchmarks.md,
# "all.bash steps").
cmdgo_tests='TestNeedVersion|TestNewReleaseRebuildsStalePackagesInGOPATH'
cmdgo_scripts='gotoolchain_.*|go_version|version|env_changed|env_cache|mod_toolchain|mod_get_toolchain|install_rebuild_removed|install_move_not_stale|build_cache_compile|build_cache_link|build_cache_output|build_cache_disabled|build_cache_trimpath|build_nocache|cache_unix|cache_vet'
cmdgo() {
	local rc=0
	gotest -short -count=1 cmd/internal/objabi cmd/go/internal/work || rc=1
	gotest -count=1 -timeout=30m -run "^(TestScript|$cmdgo_tests)\$/^($cmdgo_scripts)\$" cmd/go || rc=1
	return $rc
}

# The linker's tests (cmd/link) and upstream's tests of the build modes the SFrame table goes
# through (-linkshared and -buildmode=shared, c-shared, c-archive, plugin). Those skip every test
# under -short, so they run without it (the step's time: doc/benchmarks.md, "all.bash steps").
linkmodes_pkgs='cmd/link cmd/cgo/internal/testshared cmd/cgo/internal/testcshared cmd/cgo/internal/testcarchive cmd/cgo/internal/testplugin'

# The fork's runtime tests (frame-pointer profiles, lineage, the specials cache and per-P counts)
# built with GOEXPERIMENT=staticlockranking, under which the runtime throws at any lock taken
# out of rank order, including an allocation under a goroutine's scan bit.
lockrank_tests='Lineage|FP|MemProf|SpecialProfile|PCounts|GoroutineProfile|SystemGoroutine'
lockrank() { GOEXPERIMENT=staticlockranking gotest -short -count=1 -run "$lockrank_tests" runtime; }

# The same runtime tests and runtime/pprof's built with -race, which also checks every
# conversion of an integer to a pointer (checkptr): the profiles' and the lineage readers'.
race() {
	local rc=0
	gotest -race -short -count=1 -run "$lockrank_tests" runtime || rc=1
	gotest -race -short -count=1 runtime/pprof || rc=1
	return $rc
}

own() {
	local rc=0 mod
	for mod in $(find misc benchmarks -name go.mod -not -path '*/testdata/*' | LC_ALL=C sort); do
		(cd "$(dirname "$mod")" && GOFLAGS=-mod=mod gotest -count=1 ./...) || rc=1
	done
	return $rc
}

tools() { "$LOGS/allbash" tools -o "$ALLBASH_RECORDS" -installed "$LOGS/installed" .ci/tools; }

# The summarizer and installer, built with the fork's go if there is one, else with the go
# on PATH asking for the upstream toolchain (as ./fork does).
if [ -x goroot/bin/go ]; then
	buildgo=(go)
else
	buildgo=(env GOTOOLCHAIN="$(sed -n '1s/-.*//p' VERSION)" "$STOCK_GO")
fi
(cd misc/allbash && GOFLAGS=-mod=mod "${buildgo[@]}" build -o "$LOGS/allbash" .) ||
	{ echo "all.bash: cannot build misc/allbash"; echo "0 passed, 1 failed"; exit 1; }

# The packages of the commands .ci/tools lists, before the first step: installed with apt-get
# as root or through password-less sudo; otherwise all.bash stops here with the command that
# installs them (ALLBASH_ALLOW_SKIP=1 goes on, outside CI, and the steps list what they skip).
"$LOGS/allbash" install -allow-skip="${ALLBASH_ALLOW_SKIP:-false}" -ci="${CI:-false}" \
	-state "$LOGS/installed" -log "$LOGS/install.log" .ci/tools || { echo "0 passed, 1 failed"; exit 1; }

makefork() { ./make.bash && ./fork tools; }
if want make && ! step make exit makefork; then
	echo "all.bash: make.bash failed; nothing else can run"
	steps=()
fi
want check && step check exit ./fork check
want tools && step tools results tools
want upstream && step upstream results gotest -short -count=1 runtime runtime/pprof runtime/trace internal/trace cmd/internal/obj/... cmd/asm/... cmd/link/internal/ld
want lockrank && step lockrank results lockrank
want race && step race results race
want cmdgo && step cmdgo results cmdgo
want linkmodes && step linkmodes results gotest -count=1 -timeout=60m $linkmodes_pkgs
want own && step own results own
# The SFrame dynamic check (misc/golineage's TestSFrameDynamic) runs in the own step; show its counts.
want own && { grep -ho 'SFrame dynamic check[^"\\]*' "$LOGS/own.json" || echo "all.bash: the own step printed no SFrame dynamic check counts"; }
want stress && step stress results bash misc/fpcheck/stress.bash "$TOP/goroot" 10s
want arm64 && step arm64 results bash misc/arm64test/run.bash -count "${ARM64_COUNT:-200}" "$TOP/goroot"
want bench && step bench exit bash benchmarks/run.bash -quick -strict
want callgrind && step callgrind results bash benchmarks/callgrind.bash -n 1 upstream fork
switchcheck() {
	(cd misc/release && FPSAFE_DIST="$TOP/dist" FPSAFE_STOCK_GO="$STOCK_GO" FPSAFE_NEWER_GO="$(cd ../.. && ./fork upstream)/bin/go" \
		GOFLAGS=-mod=mod gotest -count=1 -run '^(TestSwitchThroughProxy|TestSDKThroughProxy)$' .)
}
want release && step release exit ./release.bash && step switch results switchcheck

echo
echo "##### all.bash summary ($(go version 2>/dev/null || echo "no toolchain"))"
"$LOGS/allbash" -allow-skip="${ALLBASH_ALLOW_SKIP:-false}" -ci="${CI:-false}" "${LOGS#$TOP/}"
