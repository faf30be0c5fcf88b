package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fpsafe/benchmarks/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestEdits checks that every mechanism's edits apply to the fork's
// runtime as this repository holds it: if the code moves on, the edit
// must follow it.
func TestEdits(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range mechanisms {
		if seen[m.name] {
			t.Errorf("mechanism %s listed twice", m.name)
		}
		seen[m.name] = true
		if (m.godebug == "") == (len(m.edits) == 0) {
			t.Errorf("%s: want either edits or a GODEBUG setting", m.name)
		}
		byFile := map[string][]edit{}
		for _, e := range m.edits {
			byFile[e.file] = append(byFile[e.file], e)
		}
		for file, es := range byFile {
			b, err := os.ReadFile(filepath.Join("..", "..", "..", "src", "runtime", file))
			if err != nil {
				t.Fatal(err)
			}
			s, err := applyEdits(string(b), es)
			if err != nil {
				t.Errorf("%s: %s: %v", m.name, file, err)
				continue
			}
			if s == string(b) {
				t.Errorf("%s: %s: the edits change nothing", m.name, file)
			}
		}
	}
}

func TestApplyEdits(t *testing.T) {
	if _, err := applyEdits("a b a", []edit{{"f", "a", "c"}}); err == nil {
		t.Error("an old text found twice was replaced")
	}
	if _, err := applyEdits("a b", []edit{{"f", "x", "c"}}); err == nil {
		t.Error("a missing old text was accepted")
	}
	if s, err := applyEdits("a b", []edit{{"f", "a", "c"}, {"f", "b", "d"}}); err != nil || s != "c d" {
		t.Errorf(`applyEdits("a b") = %q, %v; want "c d"`, s, err)
	}
}

// TestCopyGOROOT checks that a copy shares the unedited files and leaves
// the original of an edited one alone.
func TestCopyGOROOT(t *testing.T) {
	src := t.TempDir()
	for _, f := range []string{"src/runtime/a.go", "src/runtime/b.go", "src/os/c.go", "VERSION"} {
		p := filepath.Join(src, f)
		os.MkdirAll(filepath.Dir(p), 0o777)
		os.WriteFile(p, []byte("x := 1\n"), 0o666)
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if err := copyGOROOT(src, dst, []edit{{"a.go", "1", "2"}}); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(filepath.Join(dst, "src/runtime/a.go")); got != "x := 2\n" {
		t.Errorf("edited copy holds %q", got)
	}
	if got := read(filepath.Join(src, "src/runtime/a.go")); got != "x := 1\n" {
		t.Errorf("the original changed: %q", got)
	}
	for _, f := range []string{"src/runtime/b.go", "src/os/c.go", "VERSION"} {
		a, _ := os.Stat(filepath.Join(src, f))
		b, err := os.Stat(filepath.Join(dst, f))
		if err != nil || !os.SameFile(a, b) {
			t.Errorf("%s is not shared with the original: %v", f, err)
		}
	}
	if err := copyGOROOT(src, dst, []edit{{"a.go", "nothing", "2"}}); err == nil {
		t.Error("an edit that does not apply was accepted")
	}
}

func TestList(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-list"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	golden(t, "list.golden", out.Bytes())
}

func TestUnknownMechanism(t *testing.T) {
	err := run(context.Background(), []string{"nosuch"}, new(bytes.Buffer), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), `no mechanism "nosuch"`) {
		t.Errorf("got %v, want an error naming the mechanism", err)
	}
}

// TestTable checks the table from fixed results.
func TestTable(t *testing.T) {
	ms := mechanisms[:2]
	names := []string{"upstream", "fork", "fork-" + ms[0].name, "fork-" + ms[1].name}
	alloc := map[string]int{names[0]: 1400, names[1]: 200, names[2]: 300, names[3]: 202}
	perStack := map[string]int{names[0]: 400, names[1]: 480, names[2]: 480, names[3]: 480}
	// The tree's profiling cost is a difference of two timings: the last
	// variant's is below zero, and gets no share.
	tree := map[string]int{names[0]: 52000, names[1]: 11000, names[2]: 15000, names[3]: -500}
	s := report.NewSuite("ablate", "fork", names)
	for _, v := range names {
		for i := range 6 {
			x := alloc[v] + i
			out := fmt.Sprintf("BenchmarkAlloc64/depth=32/rate=1-2 100 %d ns/op\n"+
				"BenchmarkTreeCost/depth=10-2 100 1 ns/op %d profile-cpu-ns/op %d profile-ns/op\n"+
				"BenchmarkTreeCold/depth=12-2 2 1 ns/op %d bucket-B/stack %d profile-cpu-ns/op %d profile-ns/op\n",
				x, tree[v]+i, tree[v]+i, perStack[v], x*1000, x*900)
			meas, err := report.Parse(strings.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			s.Add(v, meas)
		}
	}
	var out bytes.Buffer
	if err := writeTable(&out, s, ms); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.golden", out.Bytes())
}

// TestResults pools two runs' raw results and checks that the table
// counts both.
func TestResults(t *testing.T) {
	ms := mechanisms[:1]
	names := []string{"upstream", "fork", "fork-" + ms[0].name}
	var dirs []string
	for run := range 2 {
		dir := t.TempDir()
		for k, v := range names {
			var b strings.Builder
			for i := range 4 {
				fmt.Fprintf(&b, "BenchmarkAlloc64/depth=32/rate=1-2 100 %d ns/op\n", []int{1400, 200, 300}[k]+10*run+i)
			}
			if err := os.WriteFile(filepath.Join(dir, v+".txt"), []byte(b.String()), 0o666); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, dir)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-results", strings.Join(dirs, ","), ms[0].name}, &out, &out); err != nil {
		t.Fatal(err)
	}
	golden(t, "results.golden", out.Bytes())
	if err := run(context.Background(), []string{"-results", t.TempDir()}, &out, &out); err == nil {
		t.Error("a directory without results was accepted")
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o666); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs; got:\n%s\nwant:\n%s", name, got, want)
	}
}
