package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// A stack switch without a frame-pointer write, in a function that is not
// TOPFRAME: the fork's assembler checks only TOPFRAME functions, so this one
// reaches the analyzer under go vet with either toolchain.
const switchGo = `package planted

func f()
func switchbad()
func good()
`

const switchAMD64 = `#include "textflag.h"

TEXT ·switchbad(SB),NOSPLIT,$0
	MOVQ	0(DI), SP
	CALL	·f(SB)
	RET

TEXT ·good(SB),NOSPLIT|TOPFRAME|NOFRAME,$0
	MOVQ	$0, BP
	CALL	·f(SB)
	RET

TEXT ·f(SB),NOSPLIT,$0
	RET
`

const switchARM64 = `#include "textflag.h"

TEXT ·switchbad(SB),NOSPLIT,$0
	MOVD	(R0), R1
	MOVD	R1, RSP
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

// goVet runs goBin vet -vettool=fpcheck ./... in dir.
func goVet(t *testing.T, goBin, dir string, env []string) ([]byte, error) {
	vet := exec.Command(goBin, "vet", "-vettool="+fpcheckBinary(t), "./...")
	vet.Dir, vet.Env = dir, append(os.Environ(), env...)
	return vet.CombinedOutput()
}

// TestVetTool: go vet -vettool and the standalone driver find a planted
// TOPFRAME violation, on both architectures, and pass the fixed version.
//
// The fork's assembler also rejects the TOPFRAME plant (see
// cmd/internal/obj/fpcheck.go). go vet does not assemble the vetted package,
// so go vet -vettool still reaches the analyzer with either toolchain; the
// standalone driver loads packages through go list -compiled, which does
// assemble, so with the fork's go command it reports the assembler's
// rejection (exit 3) and it finds the plant itself only with a go command
// whose assembler has no such check (upstream, skipped when
// unavailable). A stack-switch plant, outside the assembler's check, is
// found by every route with either toolchain.
func TestVetTool(t *testing.T) {
	planted := writeModule(t, map[string]string{
		"go.mod": "module planted\n\ngo 1.27\n", "p.go": plantedGo,
		"p_amd64.s": plantedAMD64, "p_arm64.s": plantedARM64,
	})
	switched := writeModule(t, map[string]string{
		"go.mod": "module planted\n\ngo 1.27\n", "p.go": switchGo,
		"p_amd64.s": switchAMD64, "p_arm64.s": switchARM64,
	})
	clean := writeModule(t, map[string]string{
		"go.mod": "module planted\n\ngo 1.27\n", "p.go": strings.Replace(plantedGo, "func bad()\n", "", 1),
		"p_amd64.s": plantedAMD64[:strings.Index(plantedAMD64, "TEXT ·bad")] + plantedAMD64[strings.Index(plantedAMD64, "TEXT ·good"):],
		"p_arm64.s": plantedARM64[:strings.Index(plantedARM64, "TEXT ·bad")] + plantedARM64[strings.Index(plantedARM64, "TEXT ·good"):],
	})
	type toolchain struct {
		name, goBin string
		asmCheck    bool // its assembler rejects the TOPFRAME plant
	}
	tcs := []toolchain{{"fork", goTool(), true}}
	if up, why := upstreamGoBin(); up != "" {
		tcs = append(tcs, toolchain{"upstream", up, false})
	} else {
		t.Logf("upstream parts skipped: %s", why)
	}
	for _, tc := range tcs {
		for _, arch := range []string{"amd64", "arm64"} {
			// PATH: the go command the standalone driver's go list runs.
			env := []string{"GOARCH=" + arch, "GOTOOLCHAIN=local", "GOFLAGS=",
				"PATH=" + filepath.Dir(tc.goBin) + string(os.PathListSeparator) + os.Getenv("PATH")}
			pre := tc.name + "/" + arch
			want := "p_" + arch + ".s:4:1: TOPFRAME function planted.bad calls ·f(SB) with the caller's frame pointer live"
			wantAsm := "p_" + arch + ".s:4: TOPFRAME function planted.bad calls with the caller's frame pointer live"
			switchLine := map[string]string{"amd64": "5", "arm64": "6"}[arch]
			wantSwitch := "p_" + arch + ".s:" + switchLine + ":1: planted.switchbad switches stacks and then calls ·f(SB) with the frame pointer still pointing into the old stack"

			out, err := goVet(t, tc.goBin, planted, env)
			if err == nil || !strings.Contains(string(out), want) {
				t.Errorf("%s: go vet -vettool: err=%v, want failure with %q\n%s", pre, err, want, out)
			}
			out, err = goVet(t, tc.goBin, switched, env)
			if err == nil || !strings.Contains(string(out), wantSwitch) {
				t.Errorf("%s: go vet -vettool on the stack-switch plant: err=%v, want failure with %q\n%s", pre, err, wantSwitch, out)
			}
			if out, err := goVet(t, tc.goBin, clean, env); err != nil {
				t.Errorf("%s: go vet -vettool on the fixed package: %v\n%s", pre, err, out)
			}

			// go build: the fork's assembler rejects the plant at its
			// file:line; upstream's builds it.
			b := exec.Command(tc.goBin, "build", "./...")
			b.Dir, b.Env = planted, append(os.Environ(), env...)
			out, err = b.CombinedOutput()
			if tc.asmCheck && (err == nil || !strings.Contains(string(out), wantAsm)) {
				t.Errorf("%s: go build of the TOPFRAME plant: err=%v, want the assembler's rejection %q\n%s", pre, err, wantAsm, out)
			}
			if !tc.asmCheck && err != nil {
				t.Errorf("%s: go build of the TOPFRAME plant: %v (an assembler without the check should accept it)\n%s", pre, err, out)
			}

			// The standalone driver.
			code, stdout, stderr := fpcheckIn(t, planted, env, "./...")
			if tc.asmCheck {
				if code != exitFailure || !strings.Contains(stderr, wantAsm) {
					t.Errorf("%s: fpcheck ./...: exit %d, want 3 with the assembler's rejection %q\n%s%s", pre, code, wantAsm, stdout, stderr)
				}
			} else if code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("%s: fpcheck ./...: exit %d, want 1 with %q\n%s%s", pre, code, want, stdout, stderr)
			}
			code, stdout, stderr = fpcheckIn(t, switched, env, "./...")
			if code != 1 || !strings.Contains(stderr, wantSwitch) {
				t.Errorf("%s: fpcheck ./... on the stack-switch plant: exit %d, want 1 with %q\n%s%s", pre, code, wantSwitch, stdout, stderr)
			}
			code, stdout, stderr = fpcheckIn(t, clean, env, "./...")
			if code != 0 {
				t.Errorf("%s: fpcheck ./... on the fixed package: exit %d\n%s%s", pre, code, stdout, stderr)
			}
		}
	}
	code, _, stderr := fpcheckIn(t, planted, nil, "./nonexistent/...")
	if code != exitFailure {
		t.Errorf("fpcheck on a bad pattern: exit %d, want 3\n%s", code, stderr)
	}
}

// TestSourceRuntime runs the analyzers over the runtime of the toolchain
// under test. The fork's runtime must pass, but for the one shape only the
// machine-code checker can clear: arm64's cgoSigtramp calls load_g, a leaf
// that never stores the frame pointer, before clearing it (fpcheck binary
// reads load_g's code and accepts the call; the source checker sees one
// function at a time).
func TestSourceRuntime(t *testing.T) {
	if !isFork() {
		t.Skipf("%s is not the fork: its runtime lacks the boundary fixes", runtime.Version())
	}
	for _, arch := range []string{"amd64", "arm64"} {
		env := []string{"GOARCH=" + arch, "GOTOOLCHAIN=local", "GOFLAGS=",
			"PATH=" + filepath.Dir(goTool()) + string(os.PathListSeparator) + os.Getenv("PATH")}
		code, stdout, stderr := fpcheckIn(t, t.TempDir(), env, "runtime", "runtime/cgo")
		var other []string
		for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
			if l != "" && !(arch == "arm64" && strings.Contains(l, "C-ABI entry runtime.cgoSigtramp calls runtime·load_g(SB)")) {
				other = append(other, l)
			}
		}
		if code != exitClean && code != exitFindings || len(other) > 0 {
			t.Errorf("%s: fpcheck runtime runtime/cgo: exit %d\n%s%s", arch, code, stdout, strings.Join(other, "\n"))
		}
	}
}
