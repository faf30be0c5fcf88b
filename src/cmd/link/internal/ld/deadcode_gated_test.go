// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ld

import (
	"internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGatedHooks checks that the runtime code behind a gated hook
// (deadcode_gated.go) is linked exactly when one of the hook's gates is,
// and that a program without it runs, with profiling asked for by
// GODEBUG, as one with it runs without a reader.
func TestGatedHooks(t *testing.T) {
	testenv.MustHaveGoBuild(t)
	t.Parallel()

	heap := []string{"runtime.mProf_Malloc", "runtime.memProfPFoldAll", "runtime.memProfBucketAlloc"}
	goroutine := []string{"runtime.savegFP"}
	check := []string{"runtime.fpunwindcheckRecord"}
	tests := []struct {
		name       string
		body       string
		want, not  [][]string
		wantReport bool
	}{
		{"none", `println("ok")`, nil, [][]string{heap, goroutine, check}, false},
		{"memprofile", `runtime.MemProfile(nil, false); println("ok")`, [][]string{heap, check}, [][]string{goroutine}, true},
		{"goroutineprofile", `runtime.GoroutineProfile(nil); println("ok")`, [][]string{goroutine, check}, [][]string{heap}, true},
		{"blockprofile", `runtime.BlockProfile(nil); println("ok")`, [][]string{check}, [][]string{heap, goroutine}, true},
		{"trace", `traceStart = runtime.StartTrace; println("ok", traceStart != nil)`, [][]string{check}, [][]string{heap, goroutine}, true},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(dir, tt.name+".go")
			prog := "package main\n\nimport \"runtime\"\n\nvar traceStart func() error\n\nfunc main() {\n\tx := make([][]byte, 0)\n\tfor i := range 1000 {\n\t\tx = append(x, make([]byte, 64+i))\n\t}\n\truntime.KeepAlive(x)\n\t" + tt.body + "\n}\n"
			if err := os.WriteFile(src, []byte(prog), 0666); err != nil {
				t.Fatal(err)
			}
			exe := filepath.Join(dir, tt.name+".exe")
			cmd := testenv.Command(t, testenv.GoToolPath(t), "build", "-o", exe, src)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("build: %v\n%s", err, out)
			}
			out, err := testenv.Command(t, testenv.GoToolPath(t), "tool", "nm", exe).CombinedOutput()
			if err != nil {
				t.Fatalf("nm: %v\n%s", err, out)
			}
			syms := map[string]bool{}
			for _, line := range strings.Split(string(out), "\n") {
				if f := strings.Fields(line); len(f) >= 3 {
					syms[f[2]] = true
				}
			}
			for _, group := range tt.want {
				for _, s := range group {
					if !syms[s] {
						t.Errorf("%s is not linked", s)
					}
				}
			}
			for _, group := range tt.not {
				for _, s := range group {
					if syms[s] {
						t.Errorf("%s is linked", s)
					}
				}
			}
			// Profiling asked for at run time must not reach a nil hook.
			run := exec.Command(exe)
			run.Env = append(os.Environ(), "GODEBUG=memprofilerate=1,fpunwindcheck=2")
			got, err := run.CombinedOutput()
			if err != nil || !strings.HasPrefix(string(got), "ok") {
				t.Fatalf("run: %v\n%s", err, got)
			}
			if report := strings.Contains(string(got), "fpunwindcheck: checked="); report != tt.wantReport {
				t.Errorf("fpunwindcheck exit report printed: %v, want %v\n%s", report, tt.wantReport, got)
			}
		})
	}
}
