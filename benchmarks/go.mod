module fpsafe/benchmarks

go 1.27

require (
	github.com/felixge/fgprof v0.9.5
	github.com/google/pprof v0.0.0-20240227163752-401108e1b7e7
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
)

require github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect

tool golang.org/x/perf/cmd/benchstat
