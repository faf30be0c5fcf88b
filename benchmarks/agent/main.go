// Command agent measures what golineage's node agent costs a machine
// (doc/benchmarks.md, "The node agent"): with -targets fork-built copies
// of misc/golineage's tree fixture running (goroutines that spin and sleep
// in turn, with lineage four levels deep), it runs `golineage agent -o DIR`
// for -d at each rate of -hz, in -rounds interleaved rounds, quiet or with
// a spinning load on every CPU (-load), and reports the agent's CPU time
// (user and system, as a percentage of one CPU), its largest resident set,
// and the samples it took. The BPF program's own time runs in the sampled
// threads' timer interrupts and is charged to them, not to the agent, so a
// target's cost is measured by its throughput: in each round a fork-built
// copy of the busy fixture (8 goroutines computing, a target like the
// others) counts its work units for -d with the agent at each rate and
// with no agent ("off"), and the table gives each rate's loss against off.
//
// Run from benchmarks/ as root: go run ./agent [-targets 20] [-hz 19,99] ...
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	forkGo  = flag.String("fork", "../goroot/bin/go", "the fork's go command")
	targets = flag.Int("targets", 20, "fork-built target processes")
	hzs     = flag.String("hz", "19,99", "sampling rates to compare")
	rounds  = flag.Int("rounds", 3, "interleaved rounds of every rate")
	period  = flag.Duration("d", 20*time.Second, "how long the agent runs each time")
	load    = flag.Bool("load", false, "keep every CPU busy with a spinning process besides the targets")
	parked  = flag.Duration("parked", 10*time.Second, "the agent's -parked: how often it reads parked goroutines (0: never)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		os.Exit(1)
	}
}

type result struct {
	units         float64 // busy's work units a second
	cpuPct, rssMB float64
	samples       int
}

func run() error {
	tmp, err := os.MkdirTemp("", "agentbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	gocmd, err := filepath.Abs(*forkGo)
	if err != nil {
		return err
	}
	agent, tree, busy := filepath.Join(tmp, "golineage"), filepath.Join(tmp, "tree"), filepath.Join(tmp, "busy")
	for _, b := range [][2]string{{agent, "../misc/golineage"}, {tree, "../misc/golineage/testdata/tree"}, {busy, "../misc/golineage/testdata/busy"}} {
		cmd := exec.Command(gocmd, "build", "-o", b[0], ".")
		cmd.Dir = b[1]
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", b[1], err, out)
		}
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
	}()
	for range *targets {
		p := exec.Command(tree)
		if _, err := p.StdinPipe(); err != nil { // tree runs until its stdin closes
			return err
		}
		if err := p.Start(); err != nil {
			return err
		}
		procs = append(procs, p)
	}
	if *load {
		for range runtime.NumCPU() {
			p := exec.Command("sh", "-c", "while :; do :; done")
			if err := p.Start(); err != nil {
				return err
			}
			procs = append(procs, p)
		}
	}
	time.Sleep(2 * time.Second) // the targets start their goroutines
	rates := append([]string{"off"}, strings.Split(*hzs, ",")...)
	res := map[string][]result{}
	for r := range *rounds {
		for i := range rates {
			hz := rates[(i+r)%len(rates)] // interleaved, the order rotated
			out := filepath.Join(tmp, "out")
			os.RemoveAll(out)
			os.Mkdir(out, 0o755)
			got, err := measure(agent, busy, hz, out)
			if err != nil {
				return err
			}
			res[hz] = append(res[hz], got)
		}
	}
	mode := "quiet"
	if *load {
		mode = fmt.Sprintf("a spinning process on each of the %d CPUs", runtime.NumCPU())
	}
	fmt.Printf("golineage agent -o DIR -interval 10s -parked %v for %v, %d tree targets, %s, %d rounds:\n\n", *parked, *period, *targets, mode, *rounds)
	fmt.Printf("| -hz | agent CPU, %% of one CPU (median, range) | max RSS, MB (median, range) | samples/s | busy's throughput vs off, %% (median, range) |\n|---|---|---|---|---|\n")
	for _, hz := range rates {
		rs := res[hz]
		c, m, t, s := make([]float64, len(rs)), make([]float64, len(rs)), make([]float64, len(rs)), 0
		for i, r := range rs {
			// Against the same round's run with no agent.
			c[i], m[i], t[i], s = r.cpuPct, r.rssMB, 100*(r.units/res["off"][i].units-1), s+r.samples
		}
		if hz == "off" {
			fmt.Printf("| off | | | | %.0f units/s (median) |\n", median(res["off"]))
			continue
		}
		fmt.Printf("| %s | %s | %s | %.0f | %s |\n", hz, summary(c, 2), summary(m, 1), float64(s)/float64(len(rs))/period.Seconds(), summary(t, 1))
	}
	return nil
}

func summary(v []float64, prec int) string {
	sort.Float64s(v)
	return fmt.Sprintf("%.*f (%.*f-%.*f)", prec, v[len(v)/2], prec, v[0], prec, v[len(v)-1])
}

func median(rs []result) float64 {
	u := make([]float64, len(rs))
	for i, r := range rs {
		u[i] = r.units
	}
	sort.Float64s(u)
	return u[len(u)/2]
}

var samplesRE = regexp.MustCompile(`targets, (\d+) samples`)

// measure runs busy for -d, and the agent at rate hz unless hz is "off",
// and returns busy's throughput, the agent's CPU time and peak RSS (as
// wait4 reports them) and the samples it took. The agent starts first and
// runs a second longer than busy's measured period on either side.
func measure(agent, busy, hz, out string) (result, error) {
	b := exec.Command(busy, "-d", period.String(), "-wait")
	bin, err := b.StdinPipe()
	if err != nil {
		return result{}, err
	}
	bout, err := b.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := b.Start(); err != nil {
		return result{}, err
	}
	defer func() { b.Process.Kill(); b.Wait() }()
	bsc := bufio.NewScanner(bout)
	if !bsc.Scan() || bsc.Text() != "ready" {
		return result{}, fmt.Errorf("busy did not start")
	}
	units := func() (float64, error) {
		fmt.Fprintln(bin)
		for bsc.Scan() {
			if v, ok := strings.CutPrefix(bsc.Text(), "units/s "); ok {
				return strconv.ParseFloat(v, 64)
			}
		}
		return 0, fmt.Errorf("busy printed no throughput")
	}
	if hz == "off" {
		time.Sleep(time.Second)
		u, err := units()
		return result{units: u}, err
	}
	cmd := exec.Command(agent, "agent", "-o", out, "-hz", hz, "-interval", "10s", "-parked", parked.String(), "-duration", (*period + 2*time.Second).String())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	time.Sleep(time.Second) // the agent finds the targets
	var u float64
	uerr := make(chan error, 1)
	go func() {
		var err error
		u, err = units()
		uerr <- err
	}()
	var last string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), " samples (") {
			last = sc.Text()
		}
	}
	if err := cmd.Wait(); err != nil {
		return result{}, fmt.Errorf("agent: %v; last line: %s", err, last)
	}
	if err := <-uerr; err != nil {
		return result{}, err
	}
	st := cmd.ProcessState
	cpu := (st.UserTime() + st.SystemTime()).Seconds()
	r := result{units: u, cpuPct: 100 * cpu / time.Since(start).Seconds(), rssMB: float64(st.SysUsage().(*syscall.Rusage).Maxrss) / 1024}
	if m := samplesRE.FindStringSubmatch(last); m != nil {
		r.samples, _ = strconv.Atoi(m[1])
	}
	return r, nil
}
