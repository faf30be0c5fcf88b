// Package workload holds the programs the benchmark suites time: two
// self-contained allocation-heavy workloads standing in for
// golang.org/x/benchmarks' garbage and json (that module is not available
// from the module proxy this project can reach), and helpers that run code
// at an exact stack depth.
//
// The workloads are deterministic (fixed seeds, generated inputs), so the
// fork and upstream run exactly the same work.
package workload
