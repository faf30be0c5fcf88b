package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/golden"
)

// dumpGoroutine is one goroutine of the runtime's own traceback of all
// goroutines (runtime.Stack(buf, true)).
type dumpGoroutine struct {
	reason string
	parent uint64
	funcs  []string // function names, innermost first
}

var (
	reDumpHead    = regexp.MustCompile(`^goroutine (\d+) (?:gp=\S+ m=\S+ (?:mp=\S+ )?)?\[([^,\]]+)`)
	reDumpCreated = regexp.MustCompile(`^created by .* in goroutine (\d+)`)
)

func parseDump(lines []string) map[uint64]dumpGoroutine {
	gs := map[uint64]dumpGoroutine{}
	var id uint64
	var cur *dumpGoroutine
	for _, l := range lines {
		if m := reDumpHead.FindStringSubmatch(l); m != nil {
			id, _ = strconv.ParseUint(m[1], 10, 64)
			gs[id] = dumpGoroutine{reason: m[2]}
			g := gs[id]
			cur = &g
			continue
		}
		if cur == nil || l == "" || strings.HasPrefix(l, "\t") {
			if l == "" && cur != nil {
				gs[id] = *cur
				cur = nil
			}
			continue
		}
		if m := reDumpCreated.FindStringSubmatch(l); m != nil {
			cur.parent, _ = strconv.ParseUint(m[1], 10, 64)
			continue
		}
		if i := strings.LastIndex(l, "("); i > 0 && !strings.HasPrefix(l, "created by") {
			cur.funcs = append(cur.funcs, l[:i])
		}
	}
	if cur != nil {
		gs[id] = *cur
	}
	return gs
}

// userFuncs drops the runtime's frames, which the runtime's traceback of
// other goroutines does not show either.
func userFuncs(fs []string) []string {
	var out []string
	for _, f := range fs {
		if !strings.HasPrefix(f, "runtime.") {
			out = append(out, f)
		}
	}
	return out
}

func startParked(t *testing.T) (*proc, string, map[uint64]dumpGoroutine) {
	t.Helper()
	exe := fixture(t, "parked")
	requireABI(t, exe)
	p := start(t, exe, "GOGC=off")
	return p, exe, parseDump(p.report)
}

// checkAgainstDump compares ps -json's goroutines with the program's own
// dump: every goroutine the program created, with its status, wait reason,
// creator and stack (walked from sched.bp), frame for frame.
func checkAgainstDump(t *testing.T, who string, psJSON string, dump map[uint64]dumpGoroutine) {
	t.Helper()
	var gs []goroutineJSON
	if err := json.Unmarshal([]byte(psJSON), &gs); err != nil {
		t.Fatalf("%s: ps -json: %v\n%s", who, err, psJSON)
	}
	byID := map[uint64]goroutineJSON{}
	for _, g := range gs {
		byID[g.Goid] = g
	}
	compared := 0
	for id, d := range dump {
		if d.parent == 0 || id == 1 {
			continue
		}
		if !slices.ContainsFunc(d.funcs, func(f string) bool { return strings.HasPrefix(f, "main.") }) {
			continue // a runtime goroutine: may change state after the dump
		}
		g, ok := byID[id]
		if !ok {
			t.Errorf("%s: goroutine %d [%s] of the dump is missing", who, id, d.reason)
			continue
		}
		if g.Status != "waiting" || g.Reason != d.reason {
			t.Errorf("%s: goroutine %d: status %s reason %q, dump says %q", who, id, g.Status, g.Reason, d.reason)
		}
		if g.Parent != d.parent {
			t.Errorf("%s: goroutine %d: parent %d, dump says %d", who, id, g.Parent, d.parent)
		}
		if got := userFuncs(g.Frames); !slices.Equal(got, d.funcs) {
			t.Errorf("%s: goroutine %d [%s]: stack from sched.bp\n\t%q\ndump:\n\t%q", who, id, d.reason, got, d.funcs)
		}
		if g.Reason != "sleep" && g.WaitsOn == "" {
			t.Errorf("%s: goroutine %d [%s]: no wait object", who, id, d.reason)
		}
		compared++
	}
	if compared != 13 {
		t.Errorf("%s: compared %d goroutines of the fixture, want 13", who, compared)
	}
}

func TestGoroutinesMatchDump(t *testing.T) {
	p, exe, dump := startParked(t)
	out, stderr, code := tool(t, "ps", "-json", strconv.Itoa(p.pid()))
	if code != 0 {
		t.Fatalf("ps: exit %d: %s", code, stderr)
	}
	checkAgainstDump(t, "live", out, dump)
	p.checkRunning(t)

	core := gcore(t, p.pid())
	out, stderr, code = tool(t, "ps", "-json", "--core", core, exe)
	if code != 0 {
		t.Fatalf("ps --core: exit %d: %s", code, stderr)
	}
	checkAgainstDump(t, "core", out, dump)
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
		if !slices.ContainsFunc(d.funcs, func(f string) bool { return strings.HasPrefix(f, "main.") }) || id == 1 {
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

// TestGoldenTree keeps the tree's shape: siblings are ordered by function,
// and the fixture creates its goroutines from one goroutine.
func TestGoldenTree(t *testing.T) {
	out := parkedOutput(t, "tree")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if mainLine(l) {
			lines = append(lines, normalize(l))
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
			groups = append(groups, normalize(g))
		} else if g != "" {
			groups[len(groups)-1] += "\n" + normalize(g)
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
	out := parkedOutput(t, "ps", "-json")
	var gs []goroutineJSON
	if err := json.Unmarshal([]byte(out), &gs); err != nil {
		t.Fatal(err)
	}
	// Keep the fixture's goroutines, with the ids and addresses that vary
	// from run to run blanked, in an order that does not depend on ids.
	var keep []goroutineJSON
	for _, g := range gs {
		if strings.HasPrefix(g.Function, "main.") {
			g.Goid, g.Parent, g.Ancestors, g.TID = 0, 0, nil, 0
			g.WaitsOn = reAddr.ReplaceAllString(g.WaitsOn, "ADDR")
			keep = append(keep, g)
		}
	}
	key := func(g goroutineJSON) string {
		return g.Function + " " + g.CreatedAt + " " + strings.Join(g.Frames, " ")
	}
	sort.Slice(keep, func(i, j int) bool { return key(keep[i]) < key(keep[j]) })
	b, err := json.MarshalIndent(keep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "ps.json", normalize(string(b))+"\n")
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
	if !regexp.MustCompile(`\n  goroutine \d+ \[chan receive\] main.main.gowrap1\n    goroutine \d+ \[chan receive\] main.chain.gowrap1\n      goroutine \d+ \[chan receive\] main.chain.gowrap1\n`).MatchString(tree) {
		t.Errorf("gdb golineage-tree lacks the chain:\n%s", tree)
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
