package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const plantedGo = `package planted

func f()
func bad()
func good()
`

const plantedAMD64 = `#include "textflag.h"

TEXT ·bad(SB),NOSPLIT|TOPFRAME|NOFRAME,$0
	CALL	·f(SB)
	RET

TEXT ·good(SB),NOSPLIT|TOPFRAME|NOFRAME,$0
	MOVQ	$0, BP
	CALL	·f(SB)
	RET

TEXT ·f(SB),NOSPLIT,$0
	RET
`

const plantedARM64 = `#include "textflag.h"

TEXT ·bad(SB),NOSPLIT|TOPFRAME,$0
	BL	·f(SB)
	RET

TEXT ·good(SB),NOSPLIT|TOPFRAME,$0
	MOVD	$0, R29
	BL	·f(SB)
	RET

TEXT ·f(SB),NOSPLIT,$0
	RET
`

func writeModule(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestVetTool: go vet -vettool and the standalone driver find a planted
// TOPFRAME violation, on both architectures, and pass the fixed version.
func TestVetTool(t *testing.T) {
	planted := writeModule(t, map[string]string{
		"go.mod": "module planted\n\ngo 1.27\n", "p.go": plantedGo,
		"p_amd64.s": plantedAMD64, "p_arm64.s": plantedARM64,
	})
	clean := writeModule(t, map[string]string{
		"go.mod": "module planted\n\ngo 1.27\n", "p.go": strings.Replace(plantedGo, "func bad()\n", "", 1),
		"p_amd64.s": plantedAMD64[:strings.Index(plantedAMD64, "TEXT ·bad")] + plantedAMD64[strings.Index(plantedAMD64, "TEXT ·good"):],
		"p_arm64.s": plantedARM64[:strings.Index(plantedARM64, "TEXT ·bad")] + plantedARM64[strings.Index(plantedARM64, "TEXT ·good"):],
	})
	for _, arch := range []string{"amd64", "arm64"} {
		env := []string{"GOARCH=" + arch, "GOTOOLCHAIN=local", "GOFLAGS="}
		want := "p_" + arch + ".s:4:1: TOPFRAME function planted.bad calls ·f(SB) with the caller's frame pointer live"
		vet := exec.Command(goTool(), "vet", "-vettool="+fpcheckBin, "./...")
		vet.Dir, vet.Env = planted, append(os.Environ(), env...)
		out, err := vet.CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("%s: go vet -vettool: err=%v, want failure with %q\n%s", arch, err, want, out)
		}
		vet = exec.Command(goTool(), "vet", "-vettool="+fpcheckBin, "./...")
		vet.Dir, vet.Env = clean, append(os.Environ(), env...)
		if out, err := vet.CombinedOutput(); err != nil {
			t.Errorf("%s: go vet -vettool on the fixed package: %v\n%s", arch, err, out)
		}
		code, stdout, stderr := fpcheck(t, planted, env, "./...")
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%s: fpcheck ./...: exit %d, want 1 with %q\n%s%s", arch, code, want, stdout, stderr)
		}
		code, stdout, stderr = fpcheck(t, clean, env, "./...")
		if code != 0 {
			t.Errorf("%s: fpcheck ./... on the fixed package: exit %d\n%s%s", arch, code, stdout, stderr)
		}
	}
	code, _, stderr := fpcheck(t, planted, nil, "./nonexistent/...")
	if code != 2 {
		t.Errorf("fpcheck on a bad pattern: exit %d, want 2\n%s", code, stderr)
	}
}
