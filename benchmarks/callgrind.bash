#!/usr/bin/env bash
# Instructions per op of benchmarks/ benchmarks, upstream (the release
# VERSION names) against the fork, counted by valgrind's callgrind: wall clock on a small
# shared VM cannot resolve a few percent, instruction counts can. See
# doc/benchmarks.md. Examples:
#   benchmarks/callgrind.bash                         # both creation shapes, 15 runs each
#   benchmarks/callgrind.bash -n 9 -bench CreateGoroutineChain
#   benchmarks/callgrind.bash fork:lineage=0 fork:lineagestack=32 upstream:tracebackancestors=8
#   benchmarks/callgrind.bash -pkg cgocb -bench 'CgoCallback/cfp=keep'
# Each variant is TOOLCHAIN[:GODEBUG]; the default is "upstream fork".
# -pkg names the benchmarks/ package (default sched); $FORK_GOROOT, if set,
# is the fork's GOROOT instead of the repository's goroot/. -bench names a
# benchmark (repeat it for more); the default is the two shapes of go
# statement: CreateGoroutine/depth=20 (g structs reused) and
# CreateGoroutineFanOut (a fresh g struct per go statement).
# Per op = (Ir at 51000 ops - Ir at 1000 ops) / 50000, GOGC=off,
# GODEBUG=asyncpreemptoff=1 (callgrind mishandles preemption signals),
# cpu.rdtscp=off (valgrind 3.19 advertises RDTSCP, then faults on it in
# cputicks; a run that crashed still prints a count), a run without PASS fails,
# -test.cpu=1. Prints each variant's per-op counts, sorted, with their
# median and spread ((max-min)/median), twice: all instructions, and all
# but runtime.findfunc's. findfunc scans its bucket of the function table
# linearly, so its cost per call (about 50 to 80 instructions, through
# isSystemGoroutine: twice per go statement upstream, once in the fork,
# which keeps the answer in the g) depends on where the linker put the
# goroutine's function, which any change to the runtime's code moves:
# a layout effect, not a cost of the change under test.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=15
benches=()
pkg=sched
while [ $# -gt 0 ]; do
	case $1 in
	-n) runs=$2; shift 2 ;;
	-bench) benches+=("$2"); shift 2 ;;
	-pkg) pkg=$2; shift 2 ;;
	-h|-help|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "callgrind.bash: unknown flag $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ ${#benches[@]} -gt 0 ] || benches=('CreateGoroutine/depth=20' 'CreateGoroutineFanOut')
bench="${benches[*]}" # for the records written before the loop
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(upstream fork)
for v in "${variants[@]}"; do
	case ${v%%:*} in upstream|fork) ;; *) echo "callgrind.bash: variant $v: toolchain must be upstream or fork" >&2; exit 2 ;; esac
done

# record RESULT NOTE: under all.bash, report the result in $ALLBASH_RECORDS
# (misc/allbash's format).
record() {
	[ -z "${ALLBASH_RECORDS:-}" ] || printf '%s\t%s\t0\t%s\n' "$1" "callgrind $bench" "$2" >>"$ALLBASH_RECORDS"
}

command -v valgrind >/dev/null || {
	echo "callgrind.bash: valgrind is not installed (apt-get install valgrind)" >&2
	record skip "valgrind is not installed (apt-get install valgrind)"
	exit 2
}
fork=${FORK_GOROOT:-$top/goroot}/bin/go
[ -x "$fork" ] || { echo "callgrind.bash: no fork toolchain at $fork (run ./make.bash)" >&2; exit 2; }
upstream=$("$top/fork" upstream)/bin/go

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$top/benchmarks" && GOTOOLCHAIN=local "$upstream" test -c -o "$tmp/upstream.test" "./$pkg" &&
	GOTOOLCHAIN=local "$fork" test -c -o "$tmp/fork.test" "./$pkg")

# ir BIN GODEBUG N prints the instructions callgrind counted for N ops, and
# those of them in runtime.findfunc.
ir() {
	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off${2:+,$2} valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
		"$1" -test.run '^$' -test.bench "$bench" -test.benchtime="$3x" -test.cpu=1 >"$tmp/log" 2>&1 || true
	awk '/^PASS$/ {pass=1} /Collected/ {n=$4} END {if (pass && n != "") print n; exit !(pass && n != "")}' "$tmp/log" || return 1
	callgrind_annotate --auto=no --threshold=100 "$tmp/cg.out" |
		awk '/runtime\.findfunc( |$)/ && $1 ~ /^[0-9,]+$/ {gsub(",", "", $1); n += $1} END {print n + 0}'
}

# stats N... prints the counts sorted, their median and spread.
stats() {
	printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1; printf "%s ", $1}
		END {m = v[int((NR + 1) / 2)]; printf " median %d, spread %.2f%%", m, 100 * (v[NR] - v[1]) / m}'
}

for bench in "${benches[@]}"; do
	echo "$bench, instructions per op, $runs runs each"
	summary=()
	for v in "${variants[@]}"; do
		tc=${v%%:*} setting=
		[ "$tc" != "$v" ] && setting=${v#*:}
		counts=() nofind=()
		for _ in $(seq "$runs"); do
			a=($(ir "$tmp/$tc.test" "$setting" 51000)) && b=($(ir "$tmp/$tc.test" "$setting" 1000)) ||
				{ echo "callgrind.bash: $v: the benchmark failed under valgrind" >&2; record fail "$v: the benchmark failed under valgrind"; exit 1; }
			counts+=($(( (a[0] - b[0]) / 50000 )))
			nofind+=($(( (a[0] - a[1] - b[0] + b[1]) / 50000 )))
		done
		all=$(stats "${counts[@]}") nf=$(stats "${nofind[@]}")
		printf '%-36s %s\n' "$v" "$all"
		printf '%-36s %s\n' "  without findfunc" "$nf"
		summary+=("$v: $all; without findfunc: $nf")
	done
	record pass "instructions per op: $(IFS=';'; echo "${summary[*]}")"
done
