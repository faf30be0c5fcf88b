package main

import (
	"bufio"
	"fmt"
	"os"
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
	cmd := exec.Command(exe, "-wait", "-d", d.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil { // "ready\n": the workers are running
		tb.Fatal(err)
	}
	var stop time.Duration
	var prof *exec.Cmd
	var stderr strings.Builder
	if sample {
		// Generous duration: sampling must cover the whole measured period,
		// which starts only once the sampler is attached (the ebpf
		// collector loads its program first; that start-up is not what -hz
		// costs).
		prof = exec.Command(toolBinary(tb), "profile", "-native", "-stats", "-collector", collector, "-hz", "99",
			"-duration", (d + 30*time.Second).String(), "-o", tb.TempDir()+"/p.pb.gz", fmt.Sprint(cmd.Process.Pid))
		pe, err := prof.StderrPipe()
		if err != nil {
			tb.Fatal(err)
		}
		if err := prof.Start(); err != nil {
			tb.Fatal(err)
		}
		started := make(chan bool, 1)
		done := make(chan bool)
		go func() {
			defer close(done)
			sc := bufio.NewScanner(pe)
			for sc.Scan() {
				stderr.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "sampling started") {
					started <- true
				}
			}
		}()
		defer func() { <-done }()
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			tb.Fatalf("golineage profile did not start sampling:\n%s", stderr.String())
		}
	}
	t0 := procCPU(tb, cmd.Process.Pid)
	in.Write([]byte("start\n"))
	rest := make([]byte, 256)
	n, _ := out.Read(rest)
	t1 := procCPU(tb, cmd.Process.Pid)
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
	cpu := t1 - t0
	if cpu <= 0 {
		cpu = time.Duration(float64(time.Second) * d.Seconds())
	}
	return u, u * d.Seconds() / cpu.Seconds(), stop
}

// procCPU is the CPU time (user+system) pid has used so far.
func procCPU(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
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
	for _, collector := range []string{"ptrace", "ebpf"} {
		b.Run(collector, func(b *testing.B) {
			if collector == "ebpf" {
				requireEBPF(b)
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
