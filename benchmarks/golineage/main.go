// Command golineage measures what golineage's reads of every goroutine cost
// (doc/benchmarks.md, "golineage: reading every goroutine"):
//
//   - snapshot: `golineage ps -json -stacks -stats` (every goroutine, its stack
//     walked) of a stripped target with 1k, 10k and 100k goroutines parked
//     20 frames deep in a channel receive, read live (the default) and with
//     -stop (every thread stopped for the whole read): reader time, time
//     per goroutine, reader CPU time, and how long threads were stopped;
//     and the reader SDK's example program, `ps -stacks` (misc/lineage/
//     example/ps: OpenPID, GoroutineStacks, every goroutine printed with
//     the frames its dump shows), as a program written from the SDK's
//     documentation reads the same target: its whole CPU time, start-up
//     and printing included, and its read calls;
//   - overhead: the throughput a busy target (2 workers counting work
//     units, 10k parked goroutines) loses to `golineage profile -wall -hz
//     10` (the ptrace collector live and -consistent, the ebpf collector),
//     to the ebpf collector's on-CPU profile at 99 Hz, and to in-process fgprof (99 Hz, and its
//     sampling loop at 10 Hz), the target built with upstream (the release
//     the fork is built from) and with the fork.
//
// Run from benchmarks/: go run ./golineage [-snapshot] [-overhead] ...
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"fpsafe/benchmarks/internal/upstream"
)

var (
	forkGo     = flag.String("fork", "../goroot/bin/go", "the fork's go command")
	upstreamGo = flag.String("upstream", "", "upstream's go command (default: the release the fork is built from, GOTOOLCHAIN=goX.Y.Z go env GOROOT)")
	snapshot   = flag.Bool("snapshot", true, "measure golineage ps")
	overhead   = flag.Bool("overhead", true, "measure profile -wall's cost to the target")
	counts     = flag.String("counts", "1000,10000,100000", "parked goroutines for -snapshot")
	n          = flag.Int("n", 5, "reads per count and mode (-snapshot)")
	rounds     = flag.Int("rounds", 5, "rounds of every variant (-overhead)")
	period     = flag.Duration("d", 3*time.Second, "measured period of each overhead run")
	workers    = flag.Int("workers", 2, "busy goroutines of the overhead target")
	consistent = flag.Bool("consistent", true, "also run profile -wall -consistent (-overhead)")
	only       = flag.String("only", "", "run only the profilers whose \"toolchain profiler\" matches this `regexp`, and no profiler (-overhead)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "golineage bench:", err)
		os.Exit(1)
	}
}

type tools struct {
	golineage, sdkPs, forkTarget, upTarget string
}

func run() error {
	dir, err := os.MkdirTemp("", "golineage-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	t, err := build(dir)
	if err != nil {
		return err
	}
	fmt.Printf("load before: %s", loadavg())
	if *snapshot {
		if err := snapshots(t); err != nil {
			return err
		}
	}
	if *overhead {
		if err := overheads(t); err != nil {
			return err
		}
	}
	fmt.Printf("load after: %s", loadavg())
	return nil
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

func build(dir string) (tools, error) {
	fork, err := filepath.Abs(*forkGo)
	if err != nil {
		return tools{}, err
	}
	up := *upstreamGo
	if up == "" {
		_, goroot, err := upstream.GOROOT(fork, os.Environ())
		if err != nil {
			return tools{}, fmt.Errorf("%v (-upstream names it)", err)
		}
		up = filepath.Join(goroot, "bin", "go")
	}
	t := tools{
		golineage:  filepath.Join(dir, "golineage"),
		sdkPs:      filepath.Join(dir, "sdk-ps"),
		forkTarget: filepath.Join(dir, "target-fork"),
		upTarget:   filepath.Join(dir, "target-upstream"),
	}
	steps := []struct {
		goCmd, dir string
		args       []string
	}{
		{fork, "../misc/golineage", []string{"build", "-o", t.golineage, "."}},
		{fork, "../misc", []string{"build", "-o", t.sdkPs, "./lineage/example/ps"}},
		{fork, ".", []string{"build", "-ldflags=-s -w", "-o", t.forkTarget, "./golineage/target"}},
		{up, ".", []string{"build", "-ldflags=-s -w", "-o", t.upTarget, "./golineage/target"}},
	}
	for _, s := range steps {
		cmd := exec.Command(s.goCmd, s.args...)
		cmd.Dir = s.dir
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			return t, fmt.Errorf("%s %s: %v\n%s", s.goCmd, strings.Join(s.args, " "), err, out)
		}
	}
	v, _ := exec.Command(up, "version").Output()
	fmt.Printf("upstream: %s", v)
	v, _ = exec.Command(fork, "version").Output()
	fmt.Printf("fork: %s", v)
	return t, nil
}

// target is a running benchmark target.
type target struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startTarget(exe string, args ...string) (*target, error) {
	t := &target{cmd: exec.Command(exe, args...), lines: make(chan string, 16)}
	t.cmd.Stderr = os.Stderr
	var err error
	if t.in, err = t.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			t.lines <- sc.Text()
		}
		close(t.lines)
	}()
	if l, err := t.line(5 * time.Minute); err != nil || l != "ready" {
		t.stop()
		return nil, fmt.Errorf("%s: no ready line (%q, %v)", exe, l, err)
	}
	return t, nil
}

func (t *target) line(timeout time.Duration) (string, error) {
	select {
	case l, ok := <-t.lines:
		if !ok {
			return "", fmt.Errorf("target exited")
		}
		return l, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("timeout")
	}
}

func (t *target) stop() {
	t.in.Close()
	t.cmd.Wait()
}

var reStats = regexp.MustCompile(`read of (\d+) goroutines in (\S+) \(\d+ ns per goroutine\), cpu (\S+); (\d+) stops, longest (\S+) \(held ([^,)\s]+)[^)]*\), thread stop time (\S+) summed over threads(?:; (\d+) goroutines re-read after changing, (\d+) torn)?`)

type psResult struct {
	gs                             int
	read, cpu, longest, held, sum  time.Duration
	wall                           time.Duration
	procCPU                        time.Duration // the command's whole CPU time (user and system)
	retried, torn, stops, outBytes int
	calls                          int // read calls (the SDK's ps)
}

// runStats runs exe with args and returns what its stats line on standard
// error matches of re, with the run's wall and CPU time and output size.
func runStats(re *regexp.Regexp, exe string, args ...string) (m []string, r psResult, err error) {
	cmd := exec.Command(exe, args...)
	var stdout countWriter
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err = cmd.Run()
	r.wall = time.Since(t0)
	name := filepath.Base(exe) + " " + strings.Join(args, " ")
	if err != nil {
		return nil, r, fmt.Errorf("%s: %v: %s", name, err, stderr.String())
	}
	if m = re.FindStringSubmatch(stderr.String()); m == nil {
		return nil, r, fmt.Errorf("%s: no stats line in %q", name, stderr.String())
	}
	r.outBytes = int(stdout)
	r.procCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return m, r, nil
}

func ps(golineage string, pid int, extra ...string) (psResult, error) {
	args := append([]string{"ps", "-json", "-stacks", "-stats"}, extra...)
	m, r, err := runStats(reStats, golineage, append(args, strconv.Itoa(pid))...)
	if err != nil {
		return r, err
	}
	d := func(s string) time.Duration { v, _ := time.ParseDuration(s); return v }
	r.gs, _ = strconv.Atoi(m[1])
	r.read, r.cpu, r.longest, r.held, r.sum = d(m[2]), d(m[3]), d(m[5]), d(m[6]), d(m[7])
	r.stops, _ = strconv.Atoi(m[4])
	r.retried, _ = strconv.Atoi(m[8])
	r.torn, _ = strconv.Atoi(m[9])
	return r, nil
}

var reSDKStats = regexp.MustCompile(`ps: (\d+) goroutines, (\d+) read calls, (\d+) left out`)

// sdkPs runs the SDK's example ps -stacks -stats on pid.
func sdkPs(exe string, pid int) (psResult, error) {
	m, r, err := runStats(reSDKStats, exe, "-stacks", "-stats", strconv.Itoa(pid))
	if err != nil {
		return r, err
	}
	r.gs, _ = strconv.Atoi(m[1])
	r.calls, _ = strconv.Atoi(m[2])
	r.torn, _ = strconv.Atoi(m[3])
	r.read, r.cpu = r.wall, r.procCPU
	return r, nil
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

func snapshots(t tools) error {
	fmt.Printf("\n## snapshot: golineage ps -json -stacks -stats (live, stop) and the SDK's ps -stacks -stats (sdk), %d reads per row, interleaved (median [min, max])\n\n", *n)
	fmt.Println("Reader time and CPU are golineage's own measure of its read (the SDK's ps: its whole run); command CPU is the process's whole CPU time.")
	fmt.Println()
	fmt.Println("| goroutines | mode | reader time | per goroutine | reader CPU | command CPU | read calls | longest stop | summed stop | stops | command wall | re-read | torn |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range strings.Split(*counts, ",") {
		tg, err := startTarget(t.forkTarget, "-parked", c, "-depth", "20")
		if err != nil {
			return err
		}
		byMode := map[string][]psResult{}
		modes := []string{"live", "stop", "sdk"}
		for range *n {
			for _, mode := range modes {
				var r psResult
				var err error
				switch mode {
				case "sdk":
					r, err = sdkPs(t.sdkPs, tg.cmd.Process.Pid)
				case "stop":
					r, err = ps(t.golineage, tg.cmd.Process.Pid, "-stop")
				default:
					r, err = ps(t.golineage, tg.cmd.Process.Pid)
				}
				if err != nil {
					tg.stop()
					return err
				}
				byMode[mode] = append(byMode[mode], r)
			}
		}
		tg.stop()
		for _, mode := range modes {
			rs := byMode[mode]
			col := func(f func(psResult) time.Duration) string {
				var ds []time.Duration
				for _, r := range rs {
					ds = append(ds, f(r))
				}
				return durStat(ds)
			}
			perG := col(func(r psResult) time.Duration { return r.read / time.Duration(max(r.gs, 1)) })
			var re, torn []int
			for _, r := range rs {
				re, torn = append(re, r.retried), append(torn, r.torn)
			}
			calls := "-"
			if mode == "sdk" {
				calls = fmt.Sprint(rs[0].calls)
			}
			fmt.Printf("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %v | %v |\n", rs[0].gs, mode,
				col(func(r psResult) time.Duration { return r.read }), perG,
				col(func(r psResult) time.Duration { return r.cpu }),
				col(func(r psResult) time.Duration { return r.procCPU }), calls,
				col(func(r psResult) time.Duration { return r.longest }),
				col(func(r psResult) time.Duration { return r.sum }), rs[0].stops,
				col(func(r psResult) time.Duration { return r.wall }), re, torn)
		}
	}
	return nil
}

func durStat(ds []time.Duration) string {
	slices.Sort(ds)
	r := func(d time.Duration) string {
		switch {
		case d >= 100*time.Millisecond:
			return d.Round(time.Millisecond).String()
		case d >= time.Millisecond:
			return d.Round(10 * time.Microsecond).String()
		}
		return d.Round(100 * time.Nanosecond).String()
	}
	return fmt.Sprintf("%s [%s, %s]", r(ds[len(ds)/2]), r(ds[0]), r(ds[len(ds)-1]))
}

// variant is one configuration of the overhead runs.
type variant struct {
	name, toolchain string
	targetArgs      []string
	profile         []string // golineage profile flags, nil for none
}

func overheads(t tools) error {
	base := []string{"-parked", "10000", "-depth", "20", "-workers", strconv.Itoa(*workers), "-d", period.String()}
	vs := []variant{
		{"none", "fork", nil, nil},
		{"golineage profile -wall -hz 10 -collector ptrace", "fork", nil, []string{"-wall", "-hz", "10", "-collector", "ptrace"}},
		{"golineage profile -wall -hz 10 -consistent", "fork", nil, []string{"-wall", "-hz", "10", "-consistent"}},
		{"golineage profile -wall -hz 10 -collector ebpf", "fork", nil, []string{"-wall", "-hz", "10", "-collector", "ebpf"}},
		{"golineage profile -hz 99 -collector ebpf", "fork", nil, []string{"-hz", "99", "-collector", "ebpf"}},
		{"fgprof 99 Hz", "fork", []string{"-fgprof", "99"}, nil},
		{"fgprof loop 10 Hz", "fork", []string{"-fgprof", "10"}, nil},
		{"none", "upstream", nil, nil},
		{"fgprof 99 Hz", "upstream", []string{"-fgprof", "99"}, nil},
		{"fgprof loop 10 Hz", "upstream", []string{"-fgprof", "10"}, nil},
	}
	if !*consistent {
		vs = slices.DeleteFunc(vs, func(v variant) bool { return slices.Contains(v.profile, "-consistent") })
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fmt.Errorf("-only: %v", err)
		}
		vs = slices.DeleteFunc(vs, func(v variant) bool { return v.name != "none" && !re.MatchString(v.toolchain+" "+v.name) })
	}
	ops := make([][]float64, len(vs))
	perCPU := make([][]float64, len(vs)) // work units per second of the target's CPU time
	stopsOut := make([][]string, len(vs))
	for round := range *rounds {
		order := rand.Perm(len(vs))
		for _, i := range order {
			v := vs[i]
			exe := t.forkTarget
			if v.toolchain == "upstream" {
				exe = t.upTarget
			}
			o, pc, st, err := overheadRun(t, exe, append(slices.Clone(base), v.targetArgs...), v.profile)
			if err != nil {
				return fmt.Errorf("round %d, %s %s: %v", round, v.toolchain, v.name, err)
			}
			ops[i] = append(ops[i], o)
			perCPU[i] = append(perCPU[i], pc)
			if st != "" {
				stopsOut[i] = append(stopsOut[i], st)
			}
		}
		fmt.Fprintf(os.Stderr, "round %d done, load %s", round, loadavg())
	}
	fmt.Printf("\n## overhead: %d workers, 10k parked goroutines, %v per run, %d rounds (variants in random order per round)\n\n", *workers, *period, *rounds)
	fmt.Println("| toolchain | profiler | ops/s median [min, max] | loss vs no profiler: median [min, max] of per-round losses | ops per target CPU second: loss, same |")
	fmt.Println("|---|---|---|---|---|")
	baseline := map[string]int{}
	for i, v := range vs {
		if v.name == "none" {
			baseline[v.toolchain] = i
		}
	}
	for i, v := range vs {
		os := slices.Clone(ops[i])
		slices.Sort(os)
		loss := func(ops [][]float64) string {
			b := baseline[v.toolchain]
			if b == i {
				return "-"
			}
			var ls []float64
			for r := range ops[i] {
				ls = append(ls, 100*(1-ops[i][r]/ops[b][r]))
			}
			slices.Sort(ls)
			return fmt.Sprintf("%.1f%% [%.1f%%, %.1f%%]", ls[len(ls)/2], ls[0], ls[len(ls)-1])
		}
		fmt.Printf("| %s | %s | %.0f [%.0f, %.0f] | %s | %s |\n", v.toolchain, v.name, os[len(os)/2], os[0], os[len(os)-1], loss(ops), loss(perCPU))
	}
	for i, v := range vs {
		for _, s := range stopsOut[i] {
			fmt.Printf("%s %s: %s\n", v.toolchain, v.name, s)
		}
	}
	return nil
}

var reProfStops = regexp.MustCompile(`golineage: (\d+ samples; .*|threads stopped per sample: .*|sampling used .*|CPU time per tick: .*|ebpf: .*)`)

// overheadRun runs the target once, with golineage profile attached if
// profile is not nil, and returns its work units per second over the
// measured period, per second of its own CPU time over the same period
// (what the work costs the target, whatever share of the CPUs a loaded
// machine gives it: a BPF program that runs in the target's timer
// interrupts is charged to it), and golineage's stop report.
func overheadRun(t tools, exe string, args, profile []string) (float64, float64, string, error) {
	tg, err := startTarget(exe, args...)
	if err != nil {
		return 0, 0, "", err
	}
	defer tg.stop()
	var prof *exec.Cmd
	var stderr bytes.Buffer
	var done chan bool
	if profile != nil {
		out, err := os.CreateTemp("", "golineage-profile")
		if err != nil {
			return 0, 0, "", err
		}
		out.Close()
		defer os.Remove(out.Name())
		pargs := append([]string{"profile", "-stats", "-duration", "10m", "-format", "folded", "-o", out.Name()}, profile...)
		prof = exec.Command(t.golineage, append(pargs, strconv.Itoa(tg.cmd.Process.Pid))...)
		pr, pw, err := os.Pipe()
		if err != nil {
			return 0, 0, "", err
		}
		prof.Stderr = pw
		if err := prof.Start(); err != nil {
			return 0, 0, "", err
		}
		pw.Close()
		started := make(chan bool, 1)
		done = make(chan bool)
		go func() {
			defer close(done)
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				stderr.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "sampling started") {
					started <- true
				}
			}
		}()
		select {
		case <-started:
		case <-time.After(time.Minute):
			prof.Process.Kill()
			return 0, 0, "", fmt.Errorf("golineage profile did not start: %s", stderr.String())
		}
		defer func() {
			if prof != nil {
				prof.Process.Kill()
				prof.Wait()
				<-done
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // past start-up
	cpu0 := cpuTime(tg.cmd.Process.Pid)
	if _, err := io.WriteString(tg.in, "start\n"); err != nil {
		return 0, 0, "", err
	}
	l, err := tg.line(*period + time.Minute)
	if err != nil {
		return 0, 0, "", err
	}
	cpu := cpuTime(tg.cmd.Process.Pid) - cpu0
	f := strings.Fields(l)
	if len(f) != 2 || f[0] != "ops/s" {
		return 0, 0, "", fmt.Errorf("target printed %q", l)
	}
	ops, err := strconv.ParseFloat(f[1], 64)
	if prof != nil {
		prof.Process.Signal(syscall.SIGINT)
		prof.Wait()
		<-done
		prof = nil
	}
	return ops, ops * period.Seconds() / cpu.Seconds(), strings.Join(reProfStops.FindAllString(stderr.String(), -1), "; "), err
}

// cpuTime is process pid's CPU time (user and system, all threads).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}
