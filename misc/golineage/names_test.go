package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/stack"
)

// TestStartNames: ps names every goroutine of the names fixture, live or an
// exited ancestor, by the function its go statement names, as the
// program's own stack shows it: through go statement wrappers whose call
// was inlined and whose call was not, method calls and method values; a
// closure is its own name; a wrapper that calls a function value is named
// from the goroutine's stack, with the wrapper as start_wrapper.
func TestStartNames(t *testing.T) {
	exe := fixture(t, "names")
	requireABI(t, exe)
	p := start(t, exe)
	want := map[uint64]string{} // goid -> the runtime's name
	keep := map[uint64]bool{}
	for _, l := range p.report {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		id, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("bad report line %q", l)
		}
		switch {
		case f[0] == "name" && len(f) == 3:
			want[id] = f[2]
		case f[0] == "keep" && len(f) == 3:
			keep[id] = true
			want[id] = f[2]
		}
	}
	if len(want) != 15 || len(keep) != 1 {
		t.Fatalf("report has %d names and %d wrappers calling a function value, want 15 and 1:\n%s", len(want), len(keep), strings.Join(p.report, "\n"))
	}
	out, stderr, code := tool(t, "ps", "-json", strconv.Itoa(p.pid()))
	if code != 0 {
		t.Fatalf("ps -json: exit %d: %s", code, stderr)
	}
	// Each goroutine's start, and each ancestor's, with its wrapper.
	type named struct {
		fn, wrapper string
		line        int // of fn's func keyword
	}
	got := map[uint64]named{}
	add := func(id uint64, fn, wrapper *frameJSON) {
		n := named{fn: "?"}
		if fn != nil {
			n.fn, n.line = fn.Func, fn.Line
		}
		if wrapper != nil {
			n.wrapper = wrapper.Func
		}
		if old, ok := got[id]; ok && old != n {
			t.Errorf("goroutine %d named %+v and %+v", id, old, n)
		}
		got[id] = n
	}
	for _, g := range parsePsJSON(t, out) {
		add(g.Goid, g.Start, g.StartWrapper)
		for _, a := range g.Ancestors {
			if a.Goid != nil { // the parent; older ancestors have no goid
				add(*a.Goid, a.Start, a.StartWrapper)
			}
		}
	}
	for id, fn := range want {
		if got[id].fn != fn {
			t.Errorf("goroutine %d: ps -json names it %+v, the program %s", id, got[id], fn)
		}
	}
	for id := range keep {
		if g := got[id]; !strings.Contains(g.wrapper, ".gowrap") {
			t.Errorf("goroutine %d (go f(1), f a function value): named %+v, want its gowrap wrapper as start_wrapper", id, g)
		}
	}

	// A function's start line is its func keyword's, inlined or not.
	src, err := os.ReadFile(filepath.Join("testdata", "names", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	for _, fn := range []string{"plain", "small", "parent", "smallParent"} {
		line := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "func "+fn+"(") }) + 1
		for id, g := range got {
			if g.fn == "main."+fn && g.line != line {
				t.Errorf("goroutine %d: %s starts at line %d, the source at %d", id, g.fn, g.line, line)
			}
		}
	}

	// The fixture exercises both ways into a wrapper: main.small's call was
	// inlined into its wrapper, main.plain's was not.
	bin, err := gobin.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	inlined := map[string]bool{}
	for _, g := range got {
		f := bin.LookupFunc(g.wrapper)
		if g.wrapper == "" || f == nil {
			continue
		}
		for _, fr := range bin.OuterInlined(f) {
			if fr.Func == g.fn {
				inlined[g.fn] = true
			}
		}
	}
	if !inlined["main.small"] || inlined["main.plain"] {
		t.Errorf("calls inlined into wrappers: %v; want main.small and not main.plain", inlined)
	}

	// The text commands use the same names.
	ps, _, _ := tool(t, "ps", strconv.Itoa(p.pid()))
	for _, fn := range []string{"main.small", "main.(*T).ptr", "main.T.val", "main.(*T).noargs", "main.startGo.func1"} {
		if !strings.Contains(ps, " "+fn+" (") {
			t.Errorf("ps does not name a goroutine %s:\n%s", fn, ps)
		}
	}
	tree, _, _ := tool(t, "tree", strconv.Itoa(p.pid()))
	for _, fn := range []string{"main.parent", "main.smallParent"} {
		if !strings.Contains(tree, "[exited] "+fn+"\n") {
			t.Errorf("tree does not name the exited %s:\n%s", fn, tree)
		}
	}
}

// TestWrapperNamesArm64 names the wrappers of the names fixture built for
// arm64 as those of the amd64 build: the same source, the same calls.
func TestWrapperNamesArm64(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds the fixture for arm64")
	}
	names := func(goarch string) map[string]string {
		exe := filepath.Join(t.TempDir(), "names-"+goarch)
		cmd := exec.Command(fixtureGo(), "build", "-o", exe, "./testdata/names")
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the fixture for %s: %v\n%s", goarch, err, out)
		}
		bin, err := gobin.Open(exe)
		if err != nil {
			t.Fatal(err)
		}
		defer bin.Close()
		n := stack.NewStartNamer(bin, 0)
		out := map[string]string{}
		for _, f := range bin.Funcs {
			if strings.HasPrefix(f.Name, "main.") && stack.IsWrapper(&f) {
				out[f.Name] = n.Name(f.Entry).Fn.Func
			}
		}
		return out
	}
	amd64, arm64 := names("amd64"), names("arm64")
	if !maps.Equal(amd64, arm64) {
		t.Errorf("wrappers named differently\namd64: %v\narm64: %v", amd64, arm64)
	}
	if amd64["main.main.gowrap1"] != "main.plain" {
		t.Errorf("main.main.gowrap1 (go plain(1)) named %q on amd64", amd64["main.main.gowrap1"])
	}
}
