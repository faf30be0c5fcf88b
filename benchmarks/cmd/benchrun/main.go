// Command benchrun compares the fork's toolchain against the upstream
// release it is built from in one run: it builds each suite's test binaries once with each
// toolchain, runs them interleaved (upstream, fork, ..., upstream, fork,
// ...) for -count rounds, and writes raw output, benchstat tables, a CSV,
// Markdown tables, an SVG chart per suite and a machine description into a
// results directory. run.bash is its front end; doc/benchmarks.md
// describes the suites.
//
// Exit status: 0 when the report was produced, even if some benchmark
// processes failed (they are listed in failures.txt and on stderr; -strict
// makes them fatal); 1 when the harness itself could not do its work; 2 for
// bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"fpsafe/benchmarks/internal/workload"
)

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

type config struct {
	moduleDir     string
	out           string
	suites        []*suite
	count         int
	benchtime     string
	quick         bool
	strict        bool
	fork, upstrm  string
	variants      map[string][]variant // per suite, baseline first
	args          []string
	benchstatPath string
	reportOnly    bool // -report: regenerate the reports of cfg.out
}

func main() {
	log := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "benchrun: "+format+"\n", a...) }
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		log("%v", err)
		os.Exit(2)
	}
	if cfg.reportOnly {
		if err := regenerate(context.Background(), cfg); err != nil {
			log("%v", err)
			os.Exit(1)
		}
		return
	}
	failed, err := execute(context.Background(), cfg)
	if err != nil {
		log("%v", err)
		os.Exit(1)
	}
	if failed > 0 {
		log("%d benchmark process(es) failed; see %s", failed, filepath.Join(cfg.out, "failures.txt"))
		if cfg.strict {
			os.Exit(1)
		}
	}
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	var suiteNames, extra listFlag
	fs.Var(&suiteNames, "suite", "suite to run (repeatable, or a comma list): heap, trace, goprof, sched, baseline, build; default all")
	count := fs.Int("count", 10, "rounds: each benchmark runs this many times per variant, interleaved")
	benchtime := fs.String("benchtime", "1s", "-test.benchtime for each benchmark run")
	quick := fs.Bool("quick", false, "one short round of every selected suite (count 1, benchtime 20ms); for all.bash")
	strict := fs.Bool("strict", false, "exit non-zero if any benchmark process fails")
	fork := fs.String("fork", "", "GOROOT of the fork (default: ../goroot next to the benchmarks module)")
	upstream := fs.String("upstream", "", "GOROOT of upstream (default: the fork's release, GOTOOLCHAIN=goX.Y.Z go env GOROOT)")
	out := fs.String("out", "", "results directory (default: results/<UTC timestamp> in the module)")
	lineage := fs.String("lineage", "auto", "GODEBUG settings (joined by +) for the sched suite's fork+SETTINGS column with lineage creation stacks on; \"auto\": "+defaultLineage+" if the fork's runtime knows lineagestack (doc/lineage-abi.md), else none; \"off\": none")
	fs.Var(&extra, "variant", "extra variant SUITE:SPEC, e.g. sched:fork+GOGC=off (repeatable); SPEC is TOOLCHAIN[+name=value]..., lower-case names are GODEBUG settings")
	benchstat := fs.String("benchstat", "", "benchstat binary to use (default: build golang.org/x/perf/cmd/benchstat into the cache directory)")
	reportDir := fs.String("report", "", "regenerate the tables, charts, CSV and benchstat output of an existing results directory, running nothing")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	wd, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	cfg := &config{moduleDir: wd, count: *count, benchtime: *benchtime, quick: *quick, strict: *strict,
		fork: *fork, upstrm: *upstream, out: *out, args: args, benchstatPath: *benchstat,
		variants: map[string][]variant{}}
	if cfg.quick {
		cfg.count = 1
		if !flagSet(fs, "benchtime") {
			cfg.benchtime = "20ms"
		}
	}
	if cfg.count < 1 {
		return nil, fmt.Errorf("-count %d: must be at least 1", cfg.count)
	}
	if cfg.fork == "" {
		cfg.fork = filepath.Join(wd, "..", "goroot")
	}
	all := allSuites(lineageSetting(*lineage, cfg.fork))
	if len(suiteNames) == 0 {
		cfg.suites = all
	}
	for _, n := range suiteNames {
		i := slices.IndexFunc(all, func(s *suite) bool { return s.name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown suite %q", n)
		}
		if !slices.Contains(cfg.suites, all[i]) {
			cfg.suites = append(cfg.suites, all[i])
		}
	}
	for _, e := range extra {
		sn, spec, ok := strings.Cut(e, ":")
		i := slices.IndexFunc(all, func(s *suite) bool { return s.name == sn })
		if !ok || i < 0 {
			return nil, fmt.Errorf("-variant %q: want SUITE:SPEC with a known suite", e)
		}
		all[i].extraVariants = append(all[i].extraVariants, spec)
	}
	for _, s := range cfg.suites {
		specs := []string{"upstream", "fork"}
		if !s.build {
			specs = append(specs, s.extraVariants...)
		}
		for _, spec := range specs {
			v, err := parseVariant(spec)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(cfg.variants[s.name], func(o variant) bool { return o.spec == v.spec }) {
				cfg.variants[s.name] = append(cfg.variants[s.name], v)
			}
		}
	}
	if *reportDir != "" {
		cfg.out, cfg.reportOnly = *reportDir, true
	}
	if cfg.out == "" {
		cfg.out = filepath.Join(wd, "results", time.Now().UTC().Format("20060102T150405Z"))
	}
	return cfg, nil
}

// defaultLineage turns on the fork's lineage records at their default depth
// and creation stacks deep enough for the sched suite's 20-deep stacks, the
// fork's counterpart of upstream's tracebackancestors=8.
const defaultLineage = "lineage=8+lineagestack=32"

// lineageSetting resolves -lineage: "auto" enables defaultLineage only when
// the fork's runtime has the lineagestack setting (an unknown GODEBUG
// setting is ignored, and the column would silently repeat "fork").
func lineageSetting(flagValue, forkRoot string) string {
	switch flagValue {
	case "off", "":
		return ""
	case "auto":
		files, _ := filepath.Glob(filepath.Join(forkRoot, "src", "runtime", "*.go"))
		for _, f := range files {
			if data, err := os.ReadFile(f); err == nil && strings.Contains(string(data), `"lineagestack"`) {
				return defaultLineage
			}
		}
		return ""
	}
	return flagValue
}

// moduleRoot finds the benchmarks module from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(data), "module fpsafe/benchmarks\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not inside the benchmarks module (run.bash runs from it)", dir)
		}
	}
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// failure is a benchmark process that did not exit cleanly.
type failure struct {
	what string
	err  error
	tail string
}

func execute(ctx context.Context, cfg *config) (failed int, err error) {
	start := time.Now()
	tcs, err := resolveToolchains(ctx, cfg)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(cfg.out, 0o777); err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "benchrun: results in %s\n", cfg.out)
	machine := describeMachine(ctx, tcs)
	if err := os.WriteFile(filepath.Join(cfg.out, "machine.txt"), []byte(machine), 0o666); err != nil {
		return 0, err
	}
	command := "benchmarks/run.bash " + strings.Join(cfg.args, " ")
	if err := os.WriteFile(filepath.Join(cfg.out, "command.txt"), []byte(strings.TrimSpace(command)+"\n"), 0o666); err != nil {
		return 0, err
	}
	benchstat, bsErr := ensureBenchstat(ctx, cfg, tcs["fork"])
	if bsErr != nil {
		fmt.Fprintf(os.Stderr, "benchrun: %v\n", bsErr)
	}

	binDir, err := os.MkdirTemp("", "benchrun-bin-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(binDir)
	bins, err := buildBinaries(ctx, cfg, tcs, binDir)
	if err != nil {
		return 0, err
	}
	var failures []failure
	for round := 1; round <= cfg.count; round++ {
		for _, s := range cfg.suites {
			dir := filepath.Join(cfg.out, s.name)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return 0, err
			}
			if s.build {
				fs, err := runBuildRound(ctx, cfg, tcs, round, dir)
				if err != nil {
					return 0, err
				}
				failures = append(failures, fs...)
				continue
			}
			for _, r := range s.runs {
				for _, v := range cfg.variants[s.name] {
					f, err := runOnce(ctx, cfg, tcs[v.toolchain], bins[binKey{v.toolchain, r.pkg}], s, r, v, round, dir)
					if err != nil {
						return 0, err
					}
					if f != nil {
						failures = append(failures, *f)
					}
				}
			}
		}
	}
	if err := writeFailures(cfg.out, failures); err != nil {
		return 0, err
	}
	header := reportHeader(cfg, machine, command, time.Since(start))
	if err := os.WriteFile(filepath.Join(cfg.out, "header.md"), []byte(header), 0o666); err != nil {
		return 0, err
	}
	if err := writeReports(ctx, cfg, benchstat, header); err != nil {
		return 0, err
	}
	if bsErr != nil {
		return len(failures), bsErr
	}
	return len(failures), nil
}

func writeFailures(out string, failures []failure) error {
	if len(failures) == 0 {
		return nil
	}
	var b strings.Builder
	for _, f := range failures {
		fmt.Fprintf(&b, "== %s: %v\n%s\n\n", f.what, f.err, f.tail)
		fmt.Fprintf(os.Stderr, "benchrun: FAILED %s: %v\n%s\n", f.what, f.err, f.tail)
	}
	return os.WriteFile(filepath.Join(out, "failures.txt"), []byte(b.String()), 0o666)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// goCmd runs a toolchain's go command.
func goCmd(ctx context.Context, tc *toolchain, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(tc.goroot, "bin", "go"), args...)
	cmd.Dir = dir
	cmd.Env = workload.CleanEnv()
	return cmd
}
