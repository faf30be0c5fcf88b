// Command agent measures what golineage's node agent costs a machine
// (doc/benchmarks.md, "The node agent"): with -targets fork-built copies
// of misc/golineage's tree fixture running (goroutines that spin and sleep
// in turn, with lineage four levels deep), it runs `golineage agent -o DIR`
// for -d at each rate of -hz, in -rounds interleaved rounds, quiet or with
// a spinning load on every CPU (-load), and reports the agent's CPU time
// (user and system, as a percentage of one CPU), its largest resident set,
// and the samples it took. The BPF program's own time runs in the sampled
// threads' timer interrupts and is charged to them, not to the agent.
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
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		os.Exit(1)
	}
}

type result struct {
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
	agent, tree := filepath.Join(tmp, "golineage"), filepath.Join(tmp, "tree")
	for _, b := range [][2]string{{agent, "../misc/golineage"}, {tree, "../misc/golineage/testdata/tree"}} {
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
	rates := strings.Split(*hzs, ",")
	res := map[string][]result{}
	for r := range *rounds {
		for i := range rates {
			hz := rates[(i+r)%len(rates)] // interleaved, the order rotated
			out := filepath.Join(tmp, "out")
			os.RemoveAll(out)
			os.Mkdir(out, 0o755)
			got, err := measure(agent, hz, out)
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
	fmt.Printf("golineage agent -o DIR -interval 10s for %v, %d tree targets, %s, %d rounds:\n\n", *period, *targets, mode, *rounds)
	fmt.Printf("| -hz | agent CPU, %% of one CPU (median, range) | max RSS, MB (median, range) | samples/s |\n|---|---|---|---|\n")
	for _, hz := range rates {
		rs := res[hz]
		c, m, s := make([]float64, len(rs)), make([]float64, len(rs)), 0
		for i, r := range rs {
			c[i], m[i], s = r.cpuPct, r.rssMB, s+r.samples
		}
		fmt.Printf("| %s | %s | %s | %.0f |\n", hz, summary(c, 2), summary(m, 1), float64(s)/float64(len(rs))/period.Seconds())
	}
	return nil
}

func summary(v []float64, prec int) string {
	sort.Float64s(v)
	return fmt.Sprintf("%.*f (%.*f-%.*f)", prec, v[len(v)/2], prec, v[0], prec, v[len(v)-1])
}

var samplesRE = regexp.MustCompile(`targets, (\d+) samples`)

// measure runs the agent for -d and returns its CPU time and peak RSS (as
// wait4 reports them) and the samples it took.
func measure(agent, hz, out string) (result, error) {
	cmd := exec.Command(agent, "agent", "-o", out, "-hz", hz, "-interval", "10s", "-duration", period.String())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
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
	st := cmd.ProcessState
	cpu := (st.UserTime() + st.SystemTime()).Seconds()
	r := result{cpuPct: 100 * cpu / time.Since(start).Seconds(), rssMB: float64(st.SysUsage().(*syscall.Rusage).Maxrss) / 1024}
	if m := samplesRE.FindStringSubmatch(last); m != nil {
		r.samples, _ = strconv.Atoi(m[1])
	}
	return r, nil
}
