package main

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/fpchain"
	"fpsafe.dev/misc/internal/gobin"
)

// TestRootsMatchRuntime checks fpchain's lists against the runtime of the
// toolchain under test: every Go root the list names for an architecture
// exists in a binary of it, a root marked TopFrame is TOPFRAME in the
// pclntab, every TOPFRAME function, in the pclntab or in the runtime's
// linux .s files, is a listed root, and every other function fpchain names
// exists.
func TestRootsMatchRuntime(t *testing.T) {
	type target struct {
		arch string
		cgo  bool
		path string
	}
	targets := []target{
		{"amd64", false, build(t, goTool(), "./testdata/progs/hello", "hello", []string{"CGO_ENABLED=0"})},
		{"arm64", false, build(t, goTool(), "./testdata/progs/hello", "hello-arm64", []string{"GOARCH=arm64"})},
	}
	if _, err := os.Stat("/usr/bin/gcc"); err == nil {
		targets = append(targets, target{"amd64", true, build(t, goTool(), "./testdata/progs/cgocb", "cgocb", nil)})
	}
	seen := map[string]bool{} // functions in any of the targets
	for _, tg := range targets {
		b, err := gobin.Open(tg.path)
		if err != nil {
			t.Fatal(err)
		}
		top := map[string]bool{}
		for i := range b.Funcs {
			f := &b.Funcs[i]
			top[f.Name] = f.TopFrame()
			seen[f.Name] = true
			if r, ok := fpchain.Roots[f.Name]; f.TopFrame() && (!ok || !r.TopFrame) {
				t.Errorf("%s/%s: TOPFRAME function %s is not a TopFrame root in fpchain.Roots", tg.arch, filepath.Base(tg.path), f.Name)
			}
		}
		b.Close()
		for name, r := range fpchain.Roots {
			if r.C || r.Arch != "" && r.Arch != tg.arch || r.Cgo == "yes" && !tg.cgo || r.Cgo == "no" && tg.cgo {
				continue
			}
			isTop, ok := top[name]
			switch {
			case !ok:
				t.Errorf("%s/%s: root %s is not in the pclntab", tg.arch, filepath.Base(tg.path), name)
			case r.TopFrame && !isTop:
				t.Errorf("%s/%s: root %s is listed as TOPFRAME but the pclntab does not say so", tg.arch, filepath.Base(tg.path), name)
			}
		}
	}

	// The other lists name functions of these programs too, but for the
	// race runtime's, which only -race builds link, and _rt0_*_lib, which
	// only c-archive and c-shared builds link.
	raceOnly := map[string]bool{"racecall": true, "runtime.racecallatomic": true}
	for list, m := range map[string]map[string]string{"CEntries": fpchain.CEntries, "Links": fpchain.Links, "Switches": fpchain.Switches} {
		for name := range m {
			if !seen[name] && !raceOnly[name] && !strings.HasSuffix(name, "_lib") {
				t.Errorf("fpchain.%s names %s, which none of the test programs has", list, name)
			}
		}
	}
	for _, l := range []map[string]bool{fpchain.RootCallees, fpchain.NoReturn} {
		for name := range l {
			if !seen[name] {
				t.Errorf("fpchain lists %s, which none of the test programs has", name)
			}
		}
	}
	for _, name := range slices.Concat(fpchain.SignalFrames, fpchain.InjectedCalls) {
		if !seen[name] {
			t.Errorf("fpchain lists %s, which none of the test programs has", name)
		}
	}

	// The runtime's assembly for the two architectures on linux.
	textRE := regexp.MustCompile(`(?m)^TEXT\s+([^(]+)\(SB\),\s*([A-Z|]+)`)
	var files []string
	for _, arch := range []string{"amd64", "arm64"} {
		for _, pat := range []string{"runtime/asm_%s.s", "runtime/sys_linux_%s.s", "runtime/rt0_linux_%s.s", "runtime/cgo/*_%s.s", "runtime/cgo/*_linux_%s.s"} {
			m, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", strings.ReplaceAll(pat, "%s", arch)))
			files = append(files, m...)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no runtime assembly under %s", runtime.GOROOT())
	}
	ntop := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		pkg := "runtime"
		if filepath.Base(filepath.Dir(file)) == "cgo" {
			pkg = "runtime/cgo"
		}
		for _, m := range textRE.FindAllStringSubmatch(string(data), -1) {
			if !strings.Contains(m[2], "TOPFRAME") {
				continue
			}
			ntop++
			name := strings.TrimSuffix(m[1], "<>")
			if strings.HasPrefix(name, "·") {
				name = pkg + name
			}
			name = strings.ReplaceAll(name, "·", ".")
			if r, ok := fpchain.Roots[name]; !ok || !r.TopFrame {
				t.Errorf("%s: TOPFRAME function %s is not a TopFrame root in fpchain.Roots", filepath.Base(file), name)
			}
		}
	}
	if ntop < 6 {
		t.Errorf("found %d TOPFRAME functions in %d runtime .s files; want at least rt0_go, mstart, goexit on both architectures", ntop, len(files))
	}
}

// TestReturnMarkersMatchRuntime: the PC gosave_systemstack_switch plants
// in g.sched is systemstack_switch plus an offset the runtime's assembly
// spells out; fpchain must accept exactly that return address.
func TestReturnMarkersMatchRuntime(t *testing.T) {
	for arch, re := range map[string]*regexp.Regexp{
		"amd64": regexp.MustCompile(`\$runtime·systemstack_switch\+(\d+)\(SB\)`),
		"arm64": regexp.MustCompile(`\$runtime·systemstack_switch\(SB\), (R\d+)\n\s*ADD\s+\$(\d+), R\d+`),
	} {
		file := filepath.Join(runtime.GOROOT(), "src", "runtime", "asm_"+arch+".s")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindStringSubmatch(string(data))
		if m == nil {
			t.Errorf("%s: no PC computed from systemstack_switch (pattern %s); has gosave_systemstack_switch changed?", filepath.Base(file), re)
			continue
		}
		off, _ := strconv.ParseUint(m[len(m)-1], 10, 64)
		if !fpchain.IsReturnMarker(arch, "runtime.systemstack_switch", off) {
			t.Errorf("%s: the runtime plants systemstack_switch+%d, which fpchain.IsReturnMarker does not accept", arch, off)
		}
		if fpchain.IsReturnMarker(arch, "runtime.systemstack_switch", off+1) {
			t.Errorf("%s: fpchain.IsReturnMarker accepts systemstack_switch+%d too", arch, off+1)
		}
	}
}
