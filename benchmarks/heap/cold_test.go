package heap

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"fpsafe/benchmarks/internal/workload"
)

// A fresh process is where the heap profiler meets most of its stacks for
// the first time: short-lived programs, tests run with -memprofile, and
// every program's first minutes. BenchmarkTreeCold measures that state in
// processes of its own, because one benchmark process only stays fresh
// for one round: the stacks, buckets and tables it keeps make every later
// round measure an older process. Upstream's collections, for one, flush
// every bucket the process ever created, so a baseline round at the
// default rate run after a profiled one would pay for the profiled one's
// buckets.

// coldEnv names the environment variable that makes the test binary a
// BenchmarkTreeCold child: "DEPTH TREES RATE" (RATE 0 keeps the default).
const coldEnv = "BENCH_TREECOLD_CHILD"

// coldPrefixBits is the depth of the call prefix under which a child
// builds each tree: 2^coldPrefixBits distinct prefixes.
const coldPrefixBits = 16

// underPrefix calls f under bits frames, each from one of two call sites
// chosen by one bit of prefix, so that every prefix makes every stack
// below it one the process has not seen.
//
//go:noinline
func underPrefix(bits int, prefix uint32, f func()) {
	switch {
	case bits == 0:
		f()
	case prefix&1 == 0:
		underPrefix(bits-1, prefix>>1, f)
	default:
		underPrefix(bits-1, prefix>>1, f)
		runtime.KeepAlive(prefix)
	}
}

// coldResult is what a child reports: the wall and CPU time of building
// its trees, and the profiling buckets' bytes and count after them.
type coldResult struct {
	wall, cpu     time.Duration
	bucketBytes   uint64
	profileStacks int
}

// runColdChild builds trees trees of the given depth at the given rate,
// each under its own prefix, in this process, which must be fresh.
func runColdChild(depth, trees, rate int) (coldResult, error) {
	if trees > 1<<coldPrefixBits {
		return coldResult{}, fmt.Errorf("%d trees: at most %d distinct prefixes", trees, 1<<coldPrefixBits)
	}
	if rate != 0 {
		runtime.MemProfileRate = rate
	}
	buckets := []metrics.Sample{{Name: "/memory/classes/profiling/buckets:bytes"}}
	metrics.Read(buckets)
	b0 := buckets[0].Value.Uint64()
	t0, c0 := time.Now(), workload.CPUTime()
	for p := range trees {
		underPrefix(coldPrefixBits, uint32(p), func() { workload.Sink = buildTree(depth) })
	}
	r := coldResult{wall: time.Since(t0), cpu: workload.CPUTime() - c0}
	metrics.Read(buckets)
	r.bucketBytes = buckets[0].Value.Uint64() - b0
	r.profileStacks, _ = runtime.MemProfile(nil, true)
	return r, nil
}

// coldChildMain runs the child that spec (coldEnv's value) describes and
// prints its result on one line.
func coldChildMain(spec string) error {
	var depth, trees, rate int
	if _, err := fmt.Sscan(spec, &depth, &trees, &rate); err != nil {
		return fmt.Errorf("%s=%q: want DEPTH TREES RATE", coldEnv, spec)
	}
	r, err := runColdChild(depth, trees, rate)
	if err != nil {
		return err
	}
	fmt.Println(int64(r.wall), int64(r.cpu), r.bucketBytes, r.profileStacks)
	return nil
}

// coldChild runs a child process of this test binary and returns its result.
func coldChild(depth, trees, rate int) (coldResult, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %d", coldEnv, depth, trees, rate))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return coldResult{}, fmt.Errorf("child %d %d %d: %v: %s", depth, trees, rate, err, strings.TrimSpace(stderr.String()))
	}
	f := strings.Fields(string(out))
	var v [4]int64
	if len(f) != len(v) {
		return coldResult{}, fmt.Errorf("child %d %d %d printed %q", depth, trees, rate, out)
	}
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return coldResult{}, fmt.Errorf("child %d %d %d printed %q", depth, trees, rate, out)
		}
	}
	return coldResult{time.Duration(v[0]), time.Duration(v[1]), uint64(v[2]), int(v[3])}, nil
}

// BenchmarkTreeCold measures the heap profiler's cost on stacks it meets
// for the first time, in a fresh process: BenchmarkTreeCost's tree, each
// under a prefix of calls no earlier tree had, so that every sampled stack
// is new. An op starts two processes of this test binary, one at the
// default rate and one at rate 4096 (in alternating order), each building
// the same trees (at depth 12 and rate 4096, about 63,000 distinct
// stacks). It reports the median difference per tree in wall time
// (profile-ns/op) and in the child's CPU time on all threads
// (profile-cpu-ns/op), and the bytes of profiling buckets and tables the
// rate-4096 child added per stack in its profile (bucket-B/stack).
func BenchmarkTreeCold(b *testing.B) {
	for _, c := range []struct{ depth, trees int }{{9, 4000}, {12, 500}} {
		b.Run(fmt.Sprintf("depth=%d", c.depth), func(b *testing.B) {
			var wallDiff, cpuDiff, perStack []float64
			for i := range b.N {
				var res [2]coldResult
				for k := range 2 {
					k ^= i & 1
					r, err := coldChild(c.depth, c.trees, []int{0, 4096}[k])
					if err != nil {
						b.Fatal(err)
					}
					res[k] = r
				}
				wallDiff = append(wallDiff, float64(res[1].wall-res[0].wall)/float64(c.trees))
				cpuDiff = append(cpuDiff, float64(res[1].cpu-res[0].cpu)/float64(c.trees))
				perStack = append(perStack, float64(res[1].bucketBytes)/float64(max(res[1].profileStacks, 1)))
			}
			b.ReportMetric(median(wallDiff), "profile-ns/op")
			b.ReportMetric(median(cpuDiff), "profile-cpu-ns/op")
			b.ReportMetric(median(perStack), "bucket-B/stack")
		})
	}
}
