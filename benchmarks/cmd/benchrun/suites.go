package main

// A run is one invocation of a test binary: a package, a -test.bench
// pattern, and settings that hold for that invocation only.
type run struct {
	pkg   string   // module package ("./heap") or "runtime" (from each toolchain's GOROOT)
	bench string   // -test.bench pattern
	env   []string // extra environment, e.g. BENCH_MEMPROFILERATE=1
	// benchtime and quickBenchtime override -benchtime and the quick
	// mode's benchtime for this run ("" keeps them).
	benchtime, quickBenchtime string
}

type suite struct {
	name string
	runs []run
	// extraVariants are added after upstream and fork.
	extraVariants []string
	build         bool // the build suite: no test binaries, see build.go
}

// runtimeBenchmarks are the upstream runtime package's benchmarks most
// sensitive to what the fork changes: allocation (the malloc fast path and
// the heap profiler's sampling check), goroutine switches and creation
// (lineage bookkeeping in the scheduler), stack growth and copying
// (frame-pointer adjustment in copystack), and system calls (the syscall
// frame that profilers start from).
const runtimeBenchmarks = `^Benchmark(Malloc8|Malloc16|MallocTypeInfo16|PingPongHog|CreateGoroutines|ChanSync|StackGrowth|StackCopy|Syscall)$`

func allSuites(lineage string) []*suite {
	sched := &suite{
		name:          "sched",
		runs:          []run{{pkg: "./sched", bench: "."}},
		extraVariants: []string{"upstream+tracebackancestors=8"},
	}
	if lineage != "" {
		sched.extraVariants = append(sched.extraVariants, "fork+"+lineage)
	}
	return []*suite{
		{
			name: "heap",
			runs: []run{
				{pkg: "./heap", bench: "^Benchmark(Alloc64|StackCapture|Callers|Tree|TreeCost|TreeCold)$"},
				// 30 sub-benchmarks (Ps x rates x goroutines).
				{pkg: "./heap", bench: "^BenchmarkScaling$", benchtime: "0.5s"},
				{pkg: "./heap", bench: "^Benchmark(Garbage|JSON)$", env: []string{"BENCH_MEMPROFILERATE=1"}},
				{pkg: "./heap", bench: "^Benchmark(Garbage|JSON)$", env: []string{"BENCH_MEMPROFILERATE=4096"}},
				{pkg: "./heap", bench: "^Benchmark(Garbage|JSON)$"},
			},
		},
		{name: "trace", runs: []run{{pkg: "./trace", bench: "."}}},
		{
			name: "goprof",
			runs: []run{
				{pkg: "./goprof", bench: "^BenchmarkGoroutineProfile(Moved)?$"},
				// Each op is a 250 ms fgprof session.
				{pkg: "./goprof", bench: "^BenchmarkFgprof$", benchtime: "4x", quickBenchtime: "1x"},
			},
		},
		sched,
		{
			name: "baseline",
			runs: []run{
				{pkg: "./baseline", bench: "."},
				{pkg: "runtime", bench: runtimeBenchmarks},
			},
		},
		{name: "build", build: true},
	}
}
