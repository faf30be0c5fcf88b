package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runBusy runs the busy fixture for d and returns its work units per second
// of wall time and per second of its own CPU time. If sample is set,
// golineage profiles it at 99 Hz meanwhile and the mean time its threads
// stayed stopped per sample is returned too.
func runBusy(tb testing.TB, d time.Duration, sample bool, collector string) (float64, float64, time.Duration) {
	exe := fixture(tb, "busy")
	cmd := exec.Command(exe, "-d", d.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil { // "ready\n": the workers are running
		tb.Fatal(err)
	}
	var stop time.Duration
	var prof *exec.Cmd
	var stderr strings.Builder
	if sample {
		prof = exec.Command(toolPath, "profile", "-native", "-stats", "-collector", collector, "-hz", "99",
			"-duration", (d + time.Second).String(), "-o", tb.TempDir()+"/p.pb.gz", fmt.Sprint(cmd.Process.Pid))
		prof.Stderr = &stderr
		if err := prof.Start(); err != nil {
			tb.Fatal(err)
		}
	}
	rest := make([]byte, 256)
	n, _ := out.Read(rest)
	cmd.Wait()
	if prof != nil {
		prof.Process.Signal(syscall.SIGINT)
		prof.Wait()
		if m := regexp.MustCompile(`mean ([^,]+),`).FindStringSubmatch(stderr.String()); m != nil {
			stop, _ = time.ParseDuration(m[1])
		}
	}
	f := strings.Fields(string(rest[:n]))
	if len(f) != 2 || f[0] != "units/s" {
		tb.Fatalf("busy printed %q", rest[:n])
	}
	u, _ := strconv.ParseFloat(f[1], 64)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return u, u * d.Seconds() / cpu.Seconds(), stop
}

// BenchmarkSamplingOverhead measures what sampling at 99 Hz costs a busy
// 8-goroutine program, runs with and without golineage profile alternated
// to spread machine noise:
//
//   - overhead-%: loss of throughput per second of wall time (what a user
//     sees; on a machine with other load this is dominated by the scheduler);
//   - cpu-overhead-%: loss of throughput per second of the target's own CPU
//     time (the work sampling disturbs inside the target: cache, signals);
//   - stop-µs/sample: thread time the target loses per sample (each
//     thread's stop summed over threads; golineage -stats).
//
// Run with -benchtime=1x (each run takes seconds):
//
//	go test -run XXX -bench SamplingOverhead -benchtime 1x
func BenchmarkSamplingOverhead(b *testing.B) {
	for _, collector := range []string{"ptrace", "bpf"} {
		b.Run(collector, func(b *testing.B) {
			if collector == "bpf" {
				if err := bpfAvailable(); err != nil {
					b.Skipf("skipping: %v", err)
				}
			}
			var base, sampled, baseCPU, sampledCPU float64
			var stop time.Duration
			for i := 0; i < b.N; i++ {
				for r := 0; r < 3; r++ {
					u, c, _ := runBusy(b, 2*time.Second, false, collector)
					base, baseCPU = base+u, baseCPU+c
					u, c, s := runBusy(b, 2*time.Second, true, collector)
					sampled, sampledCPU = sampled+u, sampledCPU+c
					stop += s
				}
			}
			b.ReportMetric(100*(base-sampled)/base, "overhead-%")
			b.ReportMetric(100*(baseCPU-sampledCPU)/baseCPU, "cpu-overhead-%")
			if collector == "ptrace" {
				b.ReportMetric(float64(stop.Microseconds())/float64(3*b.N), "stop-µs/sample")
			}
		})
	}
}
