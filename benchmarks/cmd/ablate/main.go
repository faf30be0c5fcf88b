// Ablate measures what each mechanism of the fork's frame-pointer heap and
// goroutine profilers earns, as issue #40 asks: the cost of each shape
// with the whole series against the series without that mechanism, in
// interleaved rounds, beside the upstream release named in VERSION.
//
// For each mechanism it makes a copy of the fork's GOROOT (hard links,
// except for the edited files) in which small source edits turn the
// mechanism off and restore what the code did before it (mechanisms.go);
// a mechanism that has a GODEBUG off-switch runs the fork's binaries with
// it instead. It builds the heap and goroutine profile benchmarks of this
// module with every toolchain and runs them in rounds, each round every
// variant in turn, starting one further along each time. It prints a
// Markdown table: for each mechanism and shape, the share of the cost
// the mechanism saves (1 - fork/without), marked "~" where the difference
// is not significant (Mann-Whitney U, p > 0.05), or n/a where that cost
// is near zero or below; and writes each
// variant's raw benchmark output to DIR/VARIANT.txt. The record is in
// doc/benchmarks.md ("Each mechanism against the series without it").
//
// Usage:
//
//	go run ./cmd/ablate [-fork GOROOT] [-upstream GOROOT] [-count N] [-o DIR] [mechanism...]
//	go run ./cmd/ablate -list
//	go run ./cmd/ablate -results DIR[,DIR...] [mechanism...]
//
// -results prints the table of earlier runs' raw results, pooling the
// rounds of several runs.
//
// With no mechanism named it measures all. It takes about three minutes a
// round for all of them on a 2-CPU machine.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"fpsafe/benchmarks/internal/report"
	"fpsafe/benchmarks/internal/upstream"
	"fpsafe/benchmarks/internal/workload"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "ablate: %v\n", err)
		}
		os.Exit(2)
	}
}

// A variant is a column: a toolchain's test binaries and a GODEBUG.
type variant struct {
	name    string
	goroot  string // the toolchain the binaries are built with
	gocmd   string
	bins    string // directory of the test binaries
	godebug string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("ablate", flag.ContinueOnError)
	fset.SetOutput(stderr)
	forkRoot := fset.String("fork", "", "the fork's GOROOT (default: ../goroot next to benchmarks/)")
	upRoot := fset.String("upstream", "", "upstream's GOROOT (default: found from the fork's VERSION)")
	count := fset.Int("count", 8, "rounds")
	dir := fset.String("o", "", "directory for the GOROOT copies, binaries and results (default: a new temporary one)")
	list := fset.Bool("list", false, "list the mechanisms and exit")
	results := fset.String("results", "", "print the table of earlier runs' raw results (comma-separated directories, pooled) and exit")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if *list {
		for _, m := range mechanisms {
			fmt.Fprintf(stdout, "%-10s %-11s %s\n", m.name, m.patch, m.what)
		}
		return nil
	}
	ms, err := selectMechanisms(fset.Args())
	if err != nil {
		return err
	}
	if *results != "" {
		suite, err := readResults(strings.Split(*results, ","), ms)
		if err != nil {
			return err
		}
		return writeTable(stdout, suite, ms)
	}
	if *count < 1 {
		return fmt.Errorf("-count %d: need at least one round", *count)
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(wd, "heap")); err != nil {
		return fmt.Errorf("run in the benchmarks module (no ./heap in %s)", wd)
	}
	if *forkRoot == "" {
		*forkRoot = filepath.Join(wd, "..", "goroot")
	}
	fr, err := filepath.Abs(*forkRoot)
	if err != nil {
		return err
	}
	forkGo := filepath.Join(fr, "bin", "go")
	if _, err := os.Stat(forkGo); err != nil {
		return fmt.Errorf("fork toolchain: %v (build it with ./make.bash)", err)
	}
	if *upRoot == "" {
		if _, *upRoot, err = upstream.GOROOT(forkGo, workload.CleanEnv()); err != nil {
			return err
		}
	}
	if *dir == "" {
		if *dir, err = os.MkdirTemp("", "ablate-"); err != nil {
			return err
		}
	}
	out, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}

	vs := []variant{
		{name: "upstream", goroot: *upRoot, gocmd: filepath.Join(*upRoot, "bin", "go")},
		{name: "fork", goroot: fr, gocmd: forkGo},
	}
	for _, m := range ms {
		v := variant{name: "fork-" + m.name, goroot: fr, gocmd: forkGo, godebug: m.godebug}
		if len(m.edits) > 0 {
			v.goroot = filepath.Join(out, "goroot-"+m.name)
			fmt.Fprintf(stderr, "ablate: %s without %s\n", v.goroot, m.name)
			if err := copyGOROOT(fr, v.goroot, m.edits); err != nil {
				return err
			}
		}
		vs = append(vs, v)
	}
	built := map[string]string{} // GOROOT -> binaries
	for i := range vs {
		v := &vs[i]
		if b, ok := built[v.goroot]; ok {
			v.bins = b
			continue
		}
		v.bins = filepath.Join(out, "bin", v.name)
		for _, pkg := range []string{"heap", "goprof"} {
			cmd := exec.CommandContext(ctx, v.gocmd, "test", "-c", "-o", filepath.Join(v.bins, pkg+".test"), "./"+pkg)
			cmd.Dir = wd
			cmd.Env = append(workload.CleanEnv(), "GOROOT="+v.goroot, "GOFLAGS=-mod=readonly")
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s: go test -c ./%s: %v\n%s", v.name, pkg, err, b)
			}
		}
		built[v.goroot] = v.bins
		fmt.Fprintf(stderr, "ablate: built %s\n", v.name)
	}

	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.name
	}
	suite := report.NewSuite("ablate", "fork", names)
	for r := range *count {
		for k := range vs {
			v := vs[(k+r)%len(vs)]
			res, err := runVariant(ctx, v)
			f, ferr := os.OpenFile(filepath.Join(out, v.name+".txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o666)
			if ferr != nil {
				return ferr
			}
			_, werr := f.Write(res)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if err != nil {
				return err
			}
			if werr != nil {
				return werr
			}
			meas, err := report.Parse(bytes.NewReader(res))
			if err != nil {
				return fmt.Errorf("%s: %v", v.name, err)
			}
			suite.Add(v.name, meas)
		}
		fmt.Fprintf(stderr, "ablate: round %d of %d done\n", r+1, *count)
	}
	fmt.Fprintf(stderr, "ablate: raw results in %s\n", out)
	return writeTable(stdout, suite, ms)
}

// readResults pools the raw results that runs wrote to dirs
// (DIR/VARIANT.txt) for upstream, the fork and the mechanisms ms.
func readResults(dirs []string, ms []mechanism) (*report.Suite, error) {
	names := []string{"upstream", "fork"}
	for _, m := range ms {
		names = append(names, "fork-"+m.name)
	}
	suite := report.NewSuite("ablate", "fork", names)
	for _, dir := range dirs {
		for _, v := range names {
			f, err := os.Open(filepath.Join(dir, v+".txt"))
			if err != nil {
				return nil, err
			}
			meas, err := report.Parse(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: %v", f.Name(), err)
			}
			suite.Add(v, meas)
		}
	}
	return suite, nil
}

// selectMechanisms returns the named mechanisms, or all.
func selectMechanisms(names []string) ([]mechanism, error) {
	if len(names) == 0 {
		return mechanisms, nil
	}
	var ms []mechanism
	for _, n := range names {
		i := slices.IndexFunc(mechanisms, func(m mechanism) bool { return m.name == n })
		if i < 0 {
			return nil, fmt.Errorf("no mechanism %q (ablate -list lists them)", n)
		}
		ms = append(ms, mechanisms[i])
	}
	return ms, nil
}

// runVariant runs every benchRun with v's binaries and returns their
// result lines.
func runVariant(ctx context.Context, v variant) ([]byte, error) {
	var all bytes.Buffer
	for _, r := range benchRuns {
		cmd := exec.CommandContext(ctx, filepath.Join(v.bins, r.pkg+".test"),
			"-test.run=^$", "-test.bench="+r.bench, "-test.count=1", "-test.benchtime="+r.benchtime)
		cmd.Env = workload.CleanEnv()
		if v.godebug != "" {
			cmd.Env = append(cmd.Env, "GODEBUG="+v.godebug)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if strings.HasPrefix(line, "Benchmark") {
				all.WriteString(line)
			}
		}
		if err != nil {
			return all.Bytes(), fmt.Errorf("%s: %s -test.bench %s: %v\n%s%s", v.name, r.pkg, r.bench, err, b, stderr.Bytes())
		}
	}
	return all.Bytes(), nil
}

// copyGOROOT makes dst a copy of the GOROOT src: src/ as hard links but
// for the edited files, which are written anew, and every other top-level
// entry as a symbolic link (the toolchain binaries, pkg/tool, VERSION).
func copyGOROOT(src, dst string, edits []edit) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o777); err != nil {
		return err
	}
	top, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range top {
		if e.Name() == "src" {
			continue
		}
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	err = filepath.WalkDir(filepath.Join(src, "src"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(target, 0o777)
		case d.Type().IsRegular():
			return os.Link(path, target)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		}
		return nil
	})
	if err != nil {
		return err
	}
	byFile := map[string][]edit{}
	for _, e := range edits {
		byFile[e.file] = append(byFile[e.file], e)
	}
	for file, es := range byFile {
		p := filepath.Join(dst, "src", "runtime", file)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s, err := applyEdits(string(b), es)
		if err != nil {
			return fmt.Errorf("src/runtime/%s: %v", file, err)
		}
		// Replace the link, not the file it shares with the fork.
		if err := os.Remove(p); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(s), 0o666); err != nil {
			return err
		}
	}
	return nil
}

// applyEdits applies es to s; each old text must occur exactly once.
func applyEdits(s string, es []edit) (string, error) {
	for _, e := range es {
		if n := strings.Count(s, e.old); n != 1 {
			return "", fmt.Errorf("%d occurrences of %q, want 1", n, e.old)
		}
		s = strings.Replace(s, e.old, e.new, 1)
	}
	return s, nil
}

// tableKeys are the table's columns: the benchmark, its unit, and a
// heading.
var tableKeys = []struct {
	key  report.Key
	head string
}{
	{report.Key{Name: "BenchmarkAlloc64/depth=32/rate=1", Unit: "ns/op"}, "Alloc64 32 deep, rate 1"},
	{report.Key{Name: "BenchmarkAlloc64/depth=32/rate=default", Unit: "ns/op"}, "Alloc64 32 deep, default rate"},
	{report.Key{Name: "BenchmarkTreeCost/depth=10", Unit: "profile-ns/op"}, "tree depth 10, known stacks (wall)"},
	{report.Key{Name: "BenchmarkTreeCost/depth=12", Unit: "profile-ns/op"}, "tree depth 12, known stacks (wall)"},
	{report.Key{Name: "BenchmarkGoroutineProfileMoved/goroutines=10000", Unit: "ns/op"}, "GoroutineProfile 10k moved"},
	{report.Key{Name: "BenchmarkTreeCold/depth=9", Unit: "profile-ns/op"}, "tree depth 9, fresh process (wall)"},
	{report.Key{Name: "BenchmarkTreeCold/depth=9", Unit: "profile-cpu-ns/op"}, "tree depth 9, fresh process (CPU)"},
	{report.Key{Name: "BenchmarkTreeCold/depth=12", Unit: "profile-ns/op"}, "tree depth 12, fresh process (wall)"},
	{report.Key{Name: "BenchmarkTreeCold/depth=12", Unit: "profile-cpu-ns/op"}, "tree depth 12, fresh process (CPU)"},
	{report.Key{Name: "BenchmarkTreeCold/depth=12", Unit: "bucket-B/stack"}, "bytes a stack, fresh process"},
}

// writeTable writes the fork's medians, upstream's ratio to them, and
// what each mechanism saves: 1 - fork/without.
func writeTable(w io.Writer, s *report.Suite, ms []mechanism) error {
	var b strings.Builder
	b.WriteString("| | patch |")
	for _, k := range tableKeys {
		fmt.Fprintf(&b, " %s |", k.head)
	}
	b.WriteString("\n|---|---|")
	for range tableKeys {
		b.WriteString("---:|")
	}
	b.WriteString("\n| fork (median) | |")
	for _, k := range tableKeys {
		cell := "-"
		if st, ok := s.Stat(k.key, "fork"); ok {
			cell = report.FormatValue(st.Median, k.key.Unit)
		}
		fmt.Fprintf(&b, " %s |", cell)
	}
	b.WriteString("\n| upstream / fork | |")
	for _, k := range tableKeys {
		cell := "-"
		if st, ok := s.Stat(k.key, "upstream"); ok {
			cell = report.FormatRatio(st)
		}
		fmt.Fprintf(&b, " %s |", cell)
	}
	b.WriteString("\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "| %s | %s |", m.name, m.patch)
		for _, k := range tableKeys {
			fmt.Fprintf(&b, " %s |", savedCell(s, k.key, "fork-"+m.name))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// savedCell formats what the fork saves against variant v: the share of
// v's median that the fork does not spend.
func savedCell(s *report.Suite, k report.Key, v string) string {
	st, ok := s.Stat(k, v)
	if !ok {
		return "-"
	}
	base, _ := s.Stat(k, "fork")
	if st.Median <= 0 || base.Median/st.Median > 10 {
		// A difference of two timings (TreeCost's profile-ns/op)
		// near zero or below: no share to speak of.
		return "n/a"
	}
	c := fmt.Sprintf("%+.0f%%", (1-base.Median/st.Median)*100)
	if !report.Significant(st.P) {
		c += " ~"
	}
	return c
}
