package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"fpsafe.dev/misc/internal/golden"
	"fpsafe.dev/misc/internal/stack"
)

// dumpGoroutine is one goroutine of the runtime's own traceback of all
// goroutines (runtime.Stack(buf, true), as pprof's debug=2 goroutine
// profile prints it).
type dumpGoroutine struct {
	reason    string
	parent    uint64
	frames    []frameJSON // innermost first
	createdBy frameJSON
}

var (
	reDumpHead    = regexp.MustCompile(`^goroutine (\d+) (?:gp=\S+ m=\S+ (?:mp=\S+ )?)?\[([^,\]]+)`)
	reDumpCreated = regexp.MustCompile(`^created by (\S+)(?: in goroutine (\d+))?`)
	reDumpPos     = regexp.MustCompile(`^\t(.*):(\d+)(?: \+0x[0-9a-f]+)?$`)
)

func parseDump(lines []string) map[uint64]dumpGoroutine {
	gs := map[uint64]dumpGoroutine{}
	var id uint64
	var cur *dumpGoroutine
	var pos *frameJSON // the frame or creator the next position line belongs to
	for _, l := range lines {
		if m := reDumpHead.FindStringSubmatch(l); m != nil {
			id, _ = strconv.ParseUint(m[1], 10, 64)
			cur, pos = &dumpGoroutine{reason: m[2]}, nil
			continue
		}
		if cur == nil {
			continue
		}
		if l == "" {
			gs[id] = *cur
			cur, pos = nil, nil
			continue
		}
		if m := reDumpPos.FindStringSubmatch(l); m != nil {
			if pos != nil {
				pos.File = m[1]
				pos.Line, _ = strconv.Atoi(m[2])
			}
			pos = nil
			continue
		}
		if m := reDumpCreated.FindStringSubmatch(l); m != nil {
			cur.parent, _ = strconv.ParseUint(m[2], 10, 64)
			cur.createdBy = frameJSON{Func: m[1]}
			pos = &cur.createdBy
			continue
		}
		if i := strings.LastIndex(l, "("); i > 0 {
			cur.frames = append(cur.frames, frameJSON{Func: l[:i]})
			pos = &cur.frames[len(cur.frames)-1]
		}
	}
	if cur != nil {
		gs[id] = *cur
	}
	return gs
}

// hasMain reports whether a dumped goroutine runs the fixture's code.
func (d dumpGoroutine) hasMain() bool {
	return slices.ContainsFunc(d.frames, func(f frameJSON) bool { return strings.HasPrefix(f.Func, "main.") })
}

// parsePsJSON parses ps -json's output: one object per line.
func parsePsJSON(t *testing.T, out string) []goroutineJSON {
	t.Helper()
	var gs []goroutineJSON
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var g goroutineJSON
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatalf("ps -json: %v in line %q", err, l)
		}
		gs = append(gs, g)
	}
	return gs
}

func startParked(t *testing.T) (*proc, string, map[uint64]dumpGoroutine) {
	t.Helper()
	exe := fixture(t, "parked")
	requireABI(t, exe)
	p := start(t, exe, "GOGC=off")
	return p, exe, parseDump(p.report)
}

// checkAgainstDump compares ps -json -stacks' goroutines with the program's
// own dump: every goroutine the program created, with its state, wait
// reason, creator and stack (walked from sched.bp), frame for frame with
// file and line.
func checkAgainstDump(t *testing.T, who string, psJSON string, dump map[uint64]dumpGoroutine, want int) {
	t.Helper()
	byID := map[uint64]goroutineJSON{}
	for _, g := range parsePsJSON(t, psJSON) {
		byID[g.Goid] = g
	}
	compared := 0
	for id, d := range dump {
		if d.parent == 0 || id == 1 || !d.hasMain() {
			continue // a runtime goroutine: may change state after the dump
		}
		g, ok := byID[id]
		if !ok {
			t.Errorf("%s: goroutine %d [%s] of the dump is missing", who, id, d.reason)
			continue
		}
		if d.reason == "syscall" || d.reason == "runnable" {
			if g.State != d.reason || g.WaitReason != "" {
				t.Errorf("%s: goroutine %d: state %s reason %q, dump says %s", who, id, g.State, g.WaitReason, d.reason)
			}
		} else if g.State != "waiting" || g.WaitReason != d.reason {
			t.Errorf("%s: goroutine %d: state %s reason %q, dump says %q", who, id, g.State, g.WaitReason, d.reason)
		}
		if g.Parent != d.parent || len(g.Ancestors) == 0 || !ancGoid(g.Ancestors[0], d.parent) {
			t.Errorf("%s: goroutine %d: parent %d, ancestors %+v, dump says %d", who, id, g.Parent, g.Ancestors, d.parent)
		}
		if g.CreatedBy == nil || *g.CreatedBy != d.createdBy {
			t.Errorf("%s: goroutine %d: created by %+v, dump says %+v", who, id, g.CreatedBy, d.createdBy)
		}
		var stk []frameJSON
		if len(g.Stack) > 0 {
			if err := json.Unmarshal(g.Stack, &stk); err != nil {
				t.Fatalf("%s: goroutine %d: stack %s: %v", who, id, g.Stack, err)
			}
		}
		if !slices.Equal(stk, d.frames) {
			t.Errorf("%s: goroutine %d [%s]: stack from sched.bp\n\t%+v\ndump:\n\t%+v", who, id, d.reason, stk, d.frames)
		}
		onObject := strings.HasPrefix(d.reason, "chan ") || d.reason == "select" || strings.HasPrefix(d.reason, "sync.")
		if onObject != (g.WaitObject != "") {
			t.Errorf("%s: goroutine %d [%s]: wait object %q", who, id, d.reason, g.WaitObject)
		}
		compared++
	}
	if compared != want {
		t.Errorf("%s: compared %d goroutines of the fixture, want %d", who, compared, want)
	}
}

func TestGoroutinesMatchDump(t *testing.T) {
	p, exe, dump := startParked(t)
	out, stderr, code := tool(t, "ps", "-json", "-stacks", strconv.Itoa(p.pid()))
	if code != 0 {
		t.Fatalf("ps: exit %d: %s", code, stderr)
	}
	checkAgainstDump(t, "live", out, dump, 13)
	p.checkRunning(t)

	core := gcore(t, p.pid())
	out, stderr, code = tool(t, "ps", "-json", "-stacks", "--core", core, exe)
	if code != 0 {
		t.Fatalf("ps --core: exit %d: %s", code, stderr)
	}
	checkAgainstDump(t, "core", out, dump, 13)
}

// TestGoroutinesMatchDumpUnstarted compares ps -json -stacks with the
// program's own dump for goroutines created but not run yet: each resumes
// at its start function's entry, with goexit's return address at its SP
// and no frame pointer; the dump shows the start function (a go
// statement's wrapper too) and, after a wrapper, runtime.goexit.
func TestGoroutinesMatchDumpUnstarted(t *testing.T) {
	exe := fixture(t, "unstarted")
	requireABI(t, exe)
	p := start(t, exe, "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1", "GOGC=off")
	t.Cleanup(func() { p.cmd.Process.Kill() }) // it never reads its input
	dump := parseDump(p.report)
	for _, args := range [][]string{nil, {"-stop"}} {
		out, stderr, code := tool(t, append(append([]string{"ps", "-json", "-stacks"}, args...), strconv.Itoa(p.pid()))...)
		if code != 0 {
			t.Fatalf("ps %v: exit %d: %s", args, code, stderr)
		}
		checkAgainstDump(t, fmt.Sprint("live ", args), out, dump, 5)
	}
	core := gcore(t, p.pid())
	out, stderr, code := tool(t, "ps", "-json", "-stacks", "--core", core, exe)
	if code != 0 {
		t.Fatalf("ps --core: exit %d: %s", code, stderr)
	}
	checkAgainstDump(t, "core", out, dump, 5)
}

// TestGoroutinesMatchDumpShapes compares ps -json -stacks with the
// program's own dump for the shapes fixture: deep recursion, inlining,
// closures, generics, a method, timers, a locked thread, a blocking system
// call, a cgo call blocked in C and a cgo callback parked under C frames.
// It reads the fixture live and from a core, built plain (gcore), stripped
// (the kernel's core) and as a stripped PIE (gcore).
func TestGoroutinesMatchDumpShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  []string
		kernel bool
	}{
		{"plain", nil, false},
		{"stripped", []string{"-ldflags=-s -w"}, true},
		{"pie-stripped", []string{"-buildmode=pie", "-ldflags=-s -w"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe := fixture(t, "shapes", tc.flags...)
			requireABI(t, exe)
			p := start(t, exe, "GOGC=off")
			dump := parseDump(p.report)
			out, stderr, code := tool(t, "ps", "-json", "-stacks", strconv.Itoa(p.pid()))
			if code != 0 {
				t.Fatalf("ps: exit %d: %s", code, stderr)
			}
			checkAgainstDump(t, "live", out, dump, 12)
			p.checkRunning(t)
			checkWaitSince(t, out, p.started)

			var core string
			if tc.kernel {
				var kp *proc
				core, kp = kernelCore(t, exe, "GOGC=off")
				dump = parseDump(kp.report)
			} else {
				core = gcore(t, p.pid())
			}
			out, stderr, code = tool(t, "ps", "-json", "-stacks", "--core", core, exe)
			if code != 0 {
				t.Fatalf("ps --core: exit %d: %s", code, stderr)
			}
			checkAgainstDump(t, "core", out, dump, 12)
		})
	}
}

// checkWaitSince: the shapes fixture collected garbage after its
// goroutines parked, so each waiting one has a wait start, between the
// fixture's start and now.
func checkWaitSince(t *testing.T, psJSON string, started time.Time) {
	t.Helper()
	for _, g := range parsePsJSON(t, psJSON) {
		if g.State != "waiting" || g.Start == nil || !strings.HasPrefix(g.Start.Func, "main.") {
			continue
		}
		since, err := time.Parse(time.RFC3339Nano, g.WaitSince)
		if err != nil || since.Before(started) || since.After(time.Now()) {
			t.Errorf("goroutine %d [%s]: wait_since %q (%v), want between %v and now", g.Goid, g.WaitReason, g.WaitSince, err, started)
		}
	}
}

// TestStacksAll checks that stacks -all prints every parked goroutine of
// the fixture once, with the lineage of the chain.
func TestStacksAll(t *testing.T) {
	p, _, dump := startParked(t)
	out, stderr, code := tool(t, "stacks", "-all", strconv.Itoa(p.pid()))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for id, d := range dump {
		if !d.hasMain() || id == 1 {
			continue
		}
		head := "goroutine " + strconv.FormatUint(id, 10) + " [" + d.reason + "]:\n"
		if n := strings.Count(out, head); n != 1 {
			t.Errorf("%q appears %d times, want once", head, n)
		}
	}
	if !strings.Contains(out, "created by main.chain") {
		t.Errorf("no lineage of the chain in:\n%s", out)
	}
}

// parkedCore is the core of the parked fixture.
var parkedCore sharedCore

func goldenParked(t *testing.T) (exe, core string) {
	t.Helper()
	return parkedCore.get(t, "parked", "GOGC=off")
}

var (
	reTableGoid = regexp.MustCompile(`(?m)^(\d+)(\s+)(\d+)(\s+)(\d+|-)`)
	reSpaces    = regexp.MustCompile(` {2,}`)
)

// fixtureLines keeps the lines about the fixture's own goroutines (those
// naming main.), normalized and sorted: goroutine ids depend on which P
// handed them out.
func fixtureLines(out string, keep func(string) bool) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if keep(l) {
			l = reTableGoid.ReplaceAllString(l, "G${2}G${4}TID")
			lines = append(lines, reSpaces.ReplaceAllString(normalize(l), " "))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// parkedOutput runs golineage on the parked fixture's core.
func parkedOutput(t *testing.T, args ...string) string {
	t.Helper()
	exe, core := goldenParked(t)
	return coreOutput(t, exe, core, args...)
}

func goldenGoroutineCommand(t *testing.T, name string, keep func(string) bool, args ...string) {
	golden.Check(t, name, fixtureLines(parkedOutput(t, args...), keep))
}

func mainLine(l string) bool { return strings.Contains(l, "main.") }

func TestGoldenPs(t *testing.T) {
	goldenGoroutineCommand(t, "ps", func(l string) bool { return mainLine(l) || strings.HasPrefix(l, "GOID") }, "ps")
}

// reGoidList is the goids a collapsed line of tree or waits lists.
var reGoidList = regexp.MustCompile(`\(goroutines [0-9, .]+\)`)

// normalizeGoids is normalize, with lists of goids replaced too.
func normalizeGoids(s string) string {
	return reGoidList.ReplaceAllString(normalize(s), "(goroutines G...)")
}

// TestGoldenTree keeps the tree's shape: siblings are ordered by function,
// and the fixture creates its goroutines from one goroutine.
func TestGoldenTree(t *testing.T) {
	out := parkedOutput(t, "tree")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if mainLine(l) {
			lines = append(lines, normalizeGoids(l))
		}
	}
	golden.Check(t, "tree", strings.Join(lines, "\n")+"\n")
}

// TestGoldenWaits keeps each group whole: groups and the goroutines in a
// group are sorted, since their order follows addresses and ids.
func TestGoldenWaits(t *testing.T) {
	out := parkedOutput(t, "waits")
	var groups []string
	for _, g := range strings.Split(out, "\n") {
		if g != "" && !strings.HasPrefix(g, "\t") {
			groups = append(groups, normalizeGoids(g))
		} else if g != "" {
			groups[len(groups)-1] += "\n" + normalizeGoids(g)
		}
	}
	var keep []string
	for _, g := range groups {
		if lines := strings.Split(g, "\n"); strings.Contains(g, "main.") {
			sort.Strings(lines[1:])
			keep = append(keep, strings.Join(lines, "\n"))
		}
	}
	sort.Strings(keep)
	golden.Check(t, "waits", strings.Join(keep, "\n")+"\n")
}

func TestGoldenPsJSON(t *testing.T) {
	out := parkedOutput(t, "ps", "-json", "-stacks")
	// Keep the fixture's goroutines, with the ids and addresses that vary
	// from run to run blanked, in an order that does not depend on ids.
	var keep []string
	for _, g := range parsePsJSON(t, out) {
		if g.Start == nil || !strings.HasPrefix(g.Start.Func, "main.") {
			continue
		}
		g.Goid, g.Parent, g.Thread = 0, 0, 0
		for i := range g.Ancestors {
			if g.Ancestors[i].Goid != nil { // the parent's: kept present
				g.Ancestors[i].Goid = new(uint64)
			}
		}
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, normalize(string(b)))
	}
	sort.Strings(keep)
	golden.Check(t, "ps.json", strings.Join(keep, "\n")+"\n")
}

// TestGoldenStacksAll keeps the goroutine sections of stacks -all that run
// the fixture's code, normalized and sorted.
func TestGoldenStacksAll(t *testing.T) {
	out := parkedOutput(t, "stacks", "-all")
	var keep []string
	for _, b := range strings.SplitAfter(out, "\n\n") {
		if strings.HasPrefix(b, "goroutine ") && strings.Contains(b, "main.") {
			keep = append(keep, normalize(b))
		}
	}
	sort.Strings(keep)
	golden.Check(t, "stacksall", strings.Join(keep, ""))
}

// TestGDBPs checks the gdb extension's golineage-ps against golineage ps
// on the same stopped process: the same goroutines, states and functions.
func TestGDBPs(t *testing.T) {
	p, _, _ := startParked(t)
	// The tool first: gdb stops the process while it runs, and the
	// fixture's goroutines stay parked, so both see the same set.
	out, stderr, code := tool(t, "ps", strconv.Itoa(p.pid()))
	if code != 0 {
		t.Fatalf("ps: exit %d: %s", code, stderr)
	}
	gdbOut := runGDBCommand(t, "golineage-ps", "-p", strconv.Itoa(p.pid()))
	p.checkRunning(t)
	row := regexp.MustCompile(`(?m)^(\d+)\s+(\d+)\s+(?:\S+\s+)?(.*?)\s{2,}.*?(main\.\S+)`)
	key := func(s string) []string {
		var keys []string
		for _, m := range row.FindAllStringSubmatch(s, -1) {
			keys = append(keys, m[1]+" "+m[2]+" "+m[4])
		}
		sort.Strings(keys)
		return keys
	}
	want, got := key(out), key(gdbOut)
	if len(want) < 13 || !slices.Equal(got, want) {
		t.Errorf("gdb golineage-ps:\n%s\ngolineage ps:\n%s", gdbOut, out)
	}
	tree := runGDBCommand(t, "golineage-tree", "-p", strconv.Itoa(p.pid()))
	if !regexp.MustCompile(`\n  goroutine \d+ \[chan receive\] main.chain\n    goroutine \d+ \[chan receive\] main.chain\n      goroutine \d+ \[chan receive\] main.chain\n`).MatchString(tree) {
		t.Errorf("gdb golineage-tree lacks the chain:\n%s", tree)
	}
	for _, want := range []string{`\n  x3 main.worker \[chan receive\] \(goroutines \d+, \d+, \d+\)\n`, `\n  x2 main.locker \[sync.Mutex.Lock\] \(goroutines \d+, \d+\)\n`} {
		if !regexp.MustCompile(want).MatchString(tree) {
			t.Errorf("gdb golineage-tree does not collapse identical siblings into %q:\n%s", want[1:], tree)
		}
	}
}

// TestProfileWall: a wall-clock profile holds every parked goroutine of the
// fixture in every sample, with its lineage below it, and labels each
// sample with what the goroutine waits for.
func TestProfileWall(t *testing.T) {
	p, _, _ := startParked(t)
	path := filepath.Join(t.TempDir(), "wall.pb.gz")
	_, stderr, code := tool(t, "profile", "-wall", "-hz", "20", "-duration", "500ms", "-o", path, strconv.Itoa(p.pid()))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p.checkRunning(t)
	prof := readProfile(t, path)
	perGoroutine := map[int64]int{}
	states := map[string]int{}
	workers := 0
	for _, s := range prof.Sample {
		g := s.NumLabel["goroutine"]
		if len(g) == 1 {
			perGoroutine[g[0]]++
		}
		for _, st := range s.Label["state"] {
			states[st]++
		}
		for _, l := range s.Location {
			if l.Line[0].Function.Name == "main.worker" {
				workers++
			}
		}
	}
	if len(perGoroutine) < 13 {
		t.Errorf("%d goroutines sampled, want at least the fixture's 13", len(perGoroutine))
	}
	ticks := perGoroutine[1]
	for g, n := range perGoroutine {
		if n != ticks {
			t.Errorf("goroutine %d in %d samples, goroutine 1 in %d: every goroutine is in every sample", g, n, ticks)
		}
	}
	if workers != 3*ticks {
		t.Errorf("main.worker in %d samples, want 3 per tick (%d ticks)", workers, ticks)
	}
	for _, st := range []string{"chan receive", "chan send", "select", "sync.Mutex.Lock", "sync.WaitGroup.Wait", "sync.Cond.Wait", "sleep"} {
		if states[st] == 0 {
			t.Errorf("no sample labelled state=%q (labels: %v)", st, states)
		}
	}
}

// TestProfileWallThreads: a wall-clock profile stops only the threads that
// run a goroutine. The parked fixture's idle Ms are left running (fewer
// threads stopped than listed), and the busy fixture's running workers are
// still sampled on their threads: a goroutine on a CPU has no saved state
// to walk, so without its thread's sample it would be missing.
func TestProfileWallThreads(t *testing.T) {
	stats := regexp.MustCompile(`(\d+) samples;(?s:.*)threads stopped per sample: mean ([0-9.]+) of ([0-9.]+)`)
	profileWall := func(pid int) (prof *profile.Profile, ticks int, stopped, listed float64) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "wall.pb.gz")
		_, stderr, code := tool(t, "profile", "-wall", "-collector", "ptrace", "-stats", "-hz", "20", "-duration", "1s", "-o", path, strconv.Itoa(pid))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		m := stats.FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("no thread counts in -stats output:\n%s", stderr)
		}
		ticks, _ = strconv.Atoi(m[1])
		stopped, _ = strconv.ParseFloat(m[2], 64)
		listed, _ = strconv.ParseFloat(m[3], 64)
		return readProfile(t, path), ticks, stopped, listed
	}

	p, _, _ := startParked(t)
	_, _, stopped, listed := profileWall(p.pid())
	p.checkRunning(t)
	// Goroutine 1 reads standard input: its M runs it (in a system call).
	if stopped < 1 || stopped >= listed {
		t.Errorf("parked fixture: %.1f threads stopped per sample of %.1f listed; want at least the main thread, and not the idle Ms", stopped, listed)
	}

	busy := start(t, fixture(t, "busy"))
	prof, ticks, stopped, listed := profileWall(busy.pid())
	busy.checkRunning(t)
	onThread := 0
	for _, s := range prof.Sample {
		if len(s.NumLabel["thread"]) == 1 && len(s.NumLabel["goroutine"]) == 1 {
			onThread += int(s.Value[0])
		}
	}
	// Two Ps run workers; a tick may find a P between goroutines.
	if ticks == 0 || onThread < ticks {
		t.Errorf("busy fixture: %d goroutine samples taken on threads in %d ticks (%.1f threads stopped per sample of %.1f); want the 2 running workers in most ticks", onThread, ticks, stopped, listed)
	}
}

// TestElideWrappers: wrappers leave a goroutine's stack, as in the runtime's
// dump, unless the function they called panicked.
func TestElideWrappers(t *testing.T) {
	locs := []stack.Loc{
		{Func: "runtime.gopanic"},
		{Func: "main.(*T).M", Wrapper: true}, // panicwrap's caller: kept
		{Func: "main.f"},
		{Func: "main.main.gowrap1", Wrapper: true}, // dropped
		{Func: "runtime.goexit"},
	}
	var got []string
	for _, l := range elideWrappers(locs) {
		got = append(got, l.Func)
	}
	if want := []string{"runtime.gopanic", "main.(*T).M", "main.f", "runtime.goexit"}; !slices.Equal(got, want) {
		t.Errorf("elideWrappers = %q, want %q", got, want)
	}
}

// TestPsLabels: ps shows each goroutine's pprof labels, read through the
// ABI's label offsets, of a live process and of its core: a "labels"
// object in -json, the label set after the function in text; goroutines
// without labels have none.
func TestPsLabels(t *testing.T) {
	exe := fixture(t, "labels")
	requireABI(t, exe)
	p := start(t, exe)
	pid := strconv.Itoa(p.pid())
	checkLabels(t, "live", pid)
	p.checkRunning(t)
	checkLabels(t, "core", "--core", gcore(t, p.pid()), exe)
}

func checkLabels(t *testing.T, who string, target ...string) {
	t.Helper()
	out, stderr, code := tool(t, append([]string{"ps", "-json"}, target...)...)
	if code != 0 {
		t.Fatalf("%s: ps -json: exit %d: %s", who, code, stderr)
	}
	workers := map[string]bool{}
	plain := 0
	for _, g := range parsePsJSON(t, out) {
		if g.Start == nil {
			continue
		}
		switch {
		case strings.HasPrefix(g.Start.Func, "main.main."): // pprof.Do's goroutines
			if len(g.Labels) != 2 || g.Labels["role"] != `test "q"` {
				t.Errorf("%s: goroutine %d (%s): labels %q", who, g.Goid, g.Start.Func, g.Labels)
			}
			workers[g.Labels["worker"]] = true
		case g.Start.Func == "main.plain":
			plain++
			if g.Labels != nil {
				t.Errorf("%s: goroutine %d (main.plain): labels %q, want none", who, g.Goid, g.Labels)
			}
		}
	}
	if !maps.Equal(workers, map[string]bool{"0": true, "1": true}) || plain != 1 {
		t.Errorf("%s: labeled workers %v, %d main.plain; want workers 0 and 1, one main.plain\n%s", who, workers, plain, out)
	}
	out, stderr, code = tool(t, append([]string{"ps"}, target...)...)
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"worker":`) {
			n++
			if !strings.Contains(l, `{"role":"test \"q\"", "worker":"`) {
				t.Errorf("%s: ps line %q: want the label set after the function", who, l)
			}
		}
	}
	if code != 0 || n != 2 {
		t.Errorf("%s: ps: exit %d, %d lines with labels, want 2:\n%s%s", who, code, n, out, stderr)
	}
}
