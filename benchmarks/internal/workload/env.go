package workload

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// CleanEnv is the environment a harness's children (go commands and test
// binaries) start from: the harness's own, minus the settings that would
// change what is measured unless a variant or run sets them on purpose,
// plus GOTOOLCHAIN=local.
func CleanEnv() []string {
	drop := []string{"GODEBUG", "GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GOTRACEBACK", "GOROOT", "GOTOOLCHAIN", "GOFLAGS", "GOEXPERIMENT", MemProfileRateEnv}
	var env []string
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		if !slices.Contains(drop, name) {
			env = append(env, e)
		}
	}
	return append(env, "GOTOOLCHAIN=local")
}

// MemProfileRateEnv is the environment variable through which the harness
// sets runtime.MemProfileRate for a whole test binary, as
// golang.org/x/benchmarks does: the rate is then in force from the start,
// before any benchmark allocates.
const MemProfileRateEnv = "BENCH_MEMPROFILERATE"

// ApplyMemProfileRateEnv sets runtime.MemProfileRate from the environment
// and returns a label for benchmark names: "default" when unset.
func ApplyMemProfileRateEnv() (string, error) {
	v := os.Getenv(MemProfileRateEnv)
	if v == "" || v == "default" {
		return "default", nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return "", fmt.Errorf("%s=%q: want a non-negative integer or \"default\"", MemProfileRateEnv, v)
	}
	runtime.MemProfileRate = n
	return v, nil
}

// Sink keeps allocations reachable so the compiler cannot remove them.
var Sink any
