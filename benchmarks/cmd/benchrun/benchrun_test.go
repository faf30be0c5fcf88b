package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseVariant(t *testing.T) {
	v, err := parseVariant("upstream+tracebackancestors=8+GOGC=off+lineage=4")
	if err != nil {
		t.Fatal(err)
	}
	if v.toolchain != "upstream" || !slices.Equal(v.godebug, []string{"tracebackancestors=8", "lineage=4"}) || !slices.Equal(v.env, []string{"GOGC=off"}) {
		t.Errorf("parsed %+v", v)
	}
	for _, bad := range []string{"gotip", "fork+", "fork+novalue", "upstream+=1"} {
		if _, err := parseVariant(bad); err == nil {
			t.Errorf("parseVariant(%q) succeeded", bad)
		}
	}
}

func TestEnviron(t *testing.T) {
	v, _ := parseVariant("fork+lineagestack=32+GOGC=200")
	env := v.environ([]string{"HOME=/h"}, []string{"BENCH_MEMPROFILERATE=1", "GODEBUG=gctrace=0"})
	want := []string{"HOME=/h", "BENCH_MEMPROFILERATE=1", "GOGC=200", "GODEBUG=gctrace=0,lineagestack=32"}
	if !slices.Equal(env, want) {
		t.Errorf("environ = %q, want %q", env, want)
	}
}

func TestLineageSetting(t *testing.T) {
	root := t.TempDir()
	rt := filepath.Join(root, "src", "runtime")
	if err := os.MkdirAll(rt, 0o777); err != nil {
		t.Fatal(err)
	}
	if got := lineageSetting("auto", root); got != "" {
		t.Errorf("auto without the setting = %q", got)
	}
	if err := os.WriteFile(filepath.Join(rt, "runtime1.go"), []byte(`{name: "lineagestack", value: &debug.lineagestack},`), 0o666); err != nil {
		t.Fatal(err)
	}
	if got := lineageSetting("auto", root); got != defaultLineage {
		t.Errorf("auto with the setting = %q", got)
	}
	if got := lineageSetting("off", root); got != "" {
		t.Errorf("off = %q", got)
	}
	if got := lineageSetting("lineagestack=8", root); got != "lineagestack=8" {
		t.Errorf("explicit = %q", got)
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-suite", "heap,sched", "-suite", "heap", "-quick", "-lineage", "lineagestack=16", "-variant", "heap:fork+GOGC=off"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range cfg.suites {
		names = append(names, s.name)
	}
	if !slices.Equal(names, []string{"heap", "sched"}) {
		t.Errorf("suites = %v", names)
	}
	if cfg.count != 1 || cfg.benchtime != "20ms" {
		t.Errorf("quick: count %d benchtime %s", cfg.count, cfg.benchtime)
	}
	var sched []string
	for _, v := range cfg.variants["sched"] {
		sched = append(sched, v.spec)
	}
	if !slices.Equal(sched, []string{"upstream", "fork", "upstream+tracebackancestors=8", "fork+lineagestack=16"}) {
		t.Errorf("sched variants = %v", sched)
	}
	if n := len(cfg.variants["heap"]); n != 3 {
		t.Errorf("heap has %d variants, want 3", n)
	}
	for _, bad := range [][]string{
		{"-suite", "nosuch"},
		{"-count", "0"},
		{"-variant", "heap"},
		{"-variant", "nosuch:fork"},
		{"-variant", "heap:gotip"},
		{"extra-arg"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

// TestSuitesWellFormed checks that every suite's runs name packages that
// exist in this module (or runtime) and that a benchmark pattern is set.
func TestSuitesWellFormed(t *testing.T) {
	for _, s := range allSuites("") {
		if s.build != (len(s.runs) == 0) {
			t.Errorf("suite %s: build=%v with %d runs", s.name, s.build, len(s.runs))
		}
		for _, r := range s.runs {
			if r.bench == "" {
				t.Errorf("suite %s: run of %s has no pattern", s.name, r.pkg)
			}
			if r.pkg == "runtime" {
				continue
			}
			if _, err := os.Stat(filepath.Join("..", "..", r.pkg)); err != nil {
				t.Errorf("suite %s: %v", s.name, err)
			}
		}
	}
}
