package main

// Golden-file tests of every output format. The input is a gcore core of the
// blocked fixture, made by the test: its three goroutines sit in read(2) at
// fixed depths, so their stacks and lineage are the same in every run. What
// varies between runs (thread and goroutine ids, addresses, the machine's
// paths) is normalized away, and only the fixture's own threads are kept (the
// runtime's idle threads differ in number from run to run). Regenerate with
// go test -run TestGolden -update.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"fpsafe.dev/misc/golineage/internal/pprofout"
	"fpsafe.dev/misc/internal/golden"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// gcore dumps a live process with gdb's gcore and returns the core's path.
func gcore(t *testing.T, pid int) string {
	t.Helper()
	if _, err := exec.LookPath("gcore"); err != nil {
		t.Skip("skipping: gcore (gdb) not installed")
	}
	prefix := filepath.Join(t.TempDir(), "core")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if o, err := exec.CommandContext(ctx, "gcore", "-o", prefix, fmt.Sprint(pid)).CombinedOutput(); err != nil {
		t.Fatalf("gcore: %v\n%s", err, o)
	}
	return fmt.Sprintf("%s.%d", prefix, pid)
}

// sharedCore is a core of a fixture that several golden tests read, made
// once: the tests run in sequence, and the first one's t makes the core; it
// lives in tmpDir so that later tests can read it.
type sharedCore struct {
	once      sync.Once
	exe, core string
	err       string
}

func (c *sharedCore) get(t *testing.T, fixtureName string, env ...string) (exe, core string) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("skipping: the golden files are recorded on linux/amd64")
	}
	c.once.Do(func() {
		exe := fixture(t, fixtureName)
		requireABI(t, exe)
		p := start(t, exe, env...)
		dump := gcore(t, p.pid())
		dst := filepath.Join(tmpDir, fixtureName+".core")
		if err := os.Rename(dump, dst); err != nil {
			c.err = err.Error()
			return
		}
		c.exe, c.core = exe, dst
	})
	if c.err != "" {
		t.Fatal(c.err)
	}
	if c.core == "" {
		t.Skipf("skipping: no core of %s (see the first golden test's log)", fixtureName)
	}
	return c.exe, c.core
}

// goldenInput is the core of the blocked fixture.
var goldenInput sharedCore

func goldenCore(t *testing.T) (exe, core string) {
	t.Helper()
	return goldenInput.get(t, "blocked", "GODEBUG=lineagestack=8")
}

// coreOutput runs golineage on a core and returns its standard output.
func coreOutput(t *testing.T, exe, core string, args ...string) string {
	t.Helper()
	out, stderr, code := tool(t, append(append(args, "--core", core), exe)...)
	if code != 0 {
		t.Fatalf("golineage %v: exit %d: %s", args, code, stderr)
	}
	return out
}

// readProfile parses a pprof file the profile command wrote.
func readProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prof, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return prof
}

var goroot = sync.OnceValue(func() string {
	out, err := exec.Command(fixtureGo(), "env", "GOROOT").Output()
	if err != nil {
		return "\x00" // matches nothing
	}
	return strings.TrimSpace(string(out))
})

var (
	reOffset = regexp.MustCompile(`\+0x[0-9a-f]+\b`)
	reAddr   = regexp.MustCompile(`\b0x[0-9a-f]{4,}\b`)
	reThread = regexp.MustCompile(`\bthread \d+`)
	reGoid   = regexp.MustCompile(`\bgoroutine (\d+)`)
	reGoLine = regexp.MustCompile(`(\$GOROOT/src/[^\s:]+\.go):\d+`)
)

// normalize replaces what varies between runs and machines: paths (the
// fork's GOROOT and this directory), code offsets and addresses, thread ids
// and goroutine ids other than 1, and the line numbers of the toolchain's own
// files (any patch of the series may move them; the fixture's lines stay).
func normalize(s string) string {
	wd, _ := os.Getwd()
	s = strings.ReplaceAll(s, goroot(), "$GOROOT")
	s = reGoLine.ReplaceAllString(s, "$1:LINE")
	s = strings.ReplaceAll(s, wd+string(filepath.Separator), "")
	s = reOffset.ReplaceAllString(s, "+OFF")
	s = reAddr.ReplaceAllString(s, "ADDR")
	s = reThread.ReplaceAllString(s, "thread TID")
	return reGoid.ReplaceAllStringFunc(s, func(m string) string {
		if m == "goroutine 1" {
			return m
		}
		return "goroutine G"
	})
}

// fixtureBlocks keeps the thread sections of stacks output that run the
// fixture's code, normalized and sorted.
func fixtureBlocks(out string) string {
	var keep []string
	for _, b := range strings.SplitAfter(out, "\n\n") {
		if strings.Contains(b, "main.S.run") {
			keep = append(keep, normalize(b))
		}
	}
	sort.Strings(keep)
	return strings.Join(keep, "")
}

// fixtureThreads returns the core's snapshot and the threads that run the
// fixture's code.
func fixtureThreads(t *testing.T) (*snapshot, []target.Thread, func()) {
	exe, core := goldenCore(t)
	snap, closer, err := openCore(core, exe, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []target.Thread
	for i, th := range collect(snap) {
		for _, f := range th.Frames {
			if f.Func == "main.S.run" {
				out = append(out, snap.threads[i])
				break
			}
		}
	}
	if len(out) != 3 {
		closer()
		t.Fatalf("%d threads run main.S.run in the core, want 3", len(out))
	}
	return snap, out, closer
}

func TestGoldenStacks(t *testing.T) {
	exe, core := goldenCore(t)
	out, stderr, code := tool(t, "stacks", "--core", core, exe)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden.Check(t, "stacks", fixtureBlocks(out))
}

// goldenProfile builds a profile of the fixture's threads in the core, one
// sample per thread, as the profile command builds it from samples.
func goldenProfile(t *testing.T) *pprofout.Builder {
	snap, threads, closer := fixtureThreads(t)
	t.Cleanup(closer)
	b := pprofout.New(snap.bin, snap.bias, 10*time.Millisecond)
	b.Title = "golineage golden profile"
	fix := *snap
	fix.threads = threads
	for _, s := range sampleThreads(&fix, loadViewOrNil(&fix), false) {
		b.Add(s)
	}
	return b
}

func TestGoldenFolded(t *testing.T) {
	var buf bytes.Buffer
	if err := goldenProfile(t).WriteFolded(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(normalize(buf.String()), "\n")
	sort.Strings(lines)
	golden.Check(t, "folded", strings.Join(lines, ""))
}

func TestGoldenSVG(t *testing.T) {
	var buf bytes.Buffer
	b := goldenProfile(t)
	if err := b.WriteSVG(&buf, b.Title); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "svg", normalize(buf.String()))
}

// TestGoldenPprof writes the profile as the profile command does, decodes it
// and compares a dump of its samples (sorted; ids normalized), not its bytes.
func TestGoldenPprof(t *testing.T) {
	var buf bytes.Buffer
	if err := goldenProfile(t).Profile().Write(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "sample types:")
	for _, st := range p.SampleType {
		fmt.Fprintf(&sb, " %s/%s", st.Type, st.Unit)
	}
	fmt.Fprintf(&sb, "\nperiod: %d %s/%s\n", p.Period, p.PeriodType.Type, p.PeriodType.Unit)
	var samples []string
	for _, s := range p.Sample {
		var ss strings.Builder
		fmt.Fprintf(&ss, "sample %v", s.Value)
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range s.NumLabel {
				if !yield(k) {
					return
				}
			}
		}) {
			v := "ID"
			if k == "goroutine" && s.NumLabel[k][0] == 1 {
				v = "1"
			}
			fmt.Fprintf(&ss, " %s=%s", k, v)
		}
		ss.WriteString("\n")
		for _, loc := range s.Location {
			fmt.Fprintf(&ss, "\tlocation %s\n", map[bool]string{true: "ADDR", false: "0"}[loc.Address != 0])
			for _, ln := range loc.Line {
				fmt.Fprintf(&ss, "\t\t%s %s:%d\n", ln.Function.Name, ln.Function.Filename, ln.Line)
			}
		}
		samples = append(samples, normalize(ss.String()))
	}
	sort.Strings(samples)
	golden.Check(t, "pprof", sb.String()+strings.Join(samples, ""))
}

// TestGoldenSymbolize asks the symbolize command, as the gdb extension does,
// for the fixture threads' PCs ("pc" then "ret"), and for the go statements
// of their lineage ("created").
func TestGoldenSymbolize(t *testing.T) {
	snap, threads, closer := fixtureThreads(t)
	defer closer()
	var in strings.Builder
	view := loadViewOrNil(snap)
	for _, th := range threads {
		w := stack.Unwind(snap.mem, snap.bin, snap.bias, th.Regs)
		for i, pc := range w.PCs {
			fmt.Fprintf(&in, "%#x %s\n", pc, map[bool]string{true: "pc", false: "ret"}[i == 0])
		}
		if rec, err := view.Thread(uint64(th.TID)); err == nil && rec != nil {
			fmt.Fprintf(&in, "%#x created\n", rec.GoPC)
		}
	}
	var out bytes.Buffer
	if err := cmdSymbolize(snap.bin, snap.bias, strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	// Threads in a stable order: by their answers.
	var blocks []string
	lines := strings.SplitAfter(normalize(out.String()), "\n")
	for _, th := range threads {
		w := stack.Unwind(snap.mem, snap.bin, snap.bias, th.Regs)
		n := len(w.PCs) + 1
		blocks = append(blocks, strings.Join(lines[:n], ""))
		lines = lines[n:]
	}
	sort.Strings(blocks)
	golden.Check(t, "symbolize", strings.Join(blocks, "\n"))
}

// TestGoldenUnwind drives the unwind command as the gdb extension does:
// registers in, memory served on request (here from the core), frames out.
func TestGoldenUnwind(t *testing.T) {
	snap, threads, closer := fixtureThreads(t)
	defer closer()
	var blocks []string
	for _, th := range threads {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		errc := make(chan error, 1)
		go func() {
			errc <- cmdUnwind(snap.bin, snap.bias, inR, outW)
			outW.Close()
		}()
		fmt.Fprintf(inW, "%#x %#x %#x %#x\n", th.Regs.PC, th.Regs.SP, th.Regs.FP, th.Regs.LR)
		var text strings.Builder
		reads := 0
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			l := sc.Text()
			if f := strings.Fields(l); len(f) == 3 && f[0] == "read" {
				reads++
				addr, _ := strconv.ParseUint(f[1], 0, 64)
				n, _ := strconv.Atoi(f[2])
				p := make([]byte, n)
				if err := snap.mem.ReadAt(p, addr); err != nil {
					fmt.Fprintln(inW, "fault")
				} else {
					fmt.Fprintf(inW, "%x\n", p)
				}
				continue
			}
			text.WriteString(l + "\n")
		}
		inW.Close()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if reads == 0 {
			t.Errorf("thread %d: unwind read no memory", th.TID)
		}
		blocks = append(blocks, normalize(text.String()))
	}
	sort.Strings(blocks)
	golden.Check(t, "unwind", strings.Join(blocks, "\n"))
}
