package gobin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// buildVariant builds testdata/symprog with extra go build flags.
func buildVariant(t *testing.T, name string, env []string, flags ...string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), name)
	args := append([]string{"build", "-o", exe}, flags...)
	args = append(args, "../../testdata/symprog")
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", flags, err, out)
	}
	return exe
}

type stackRec struct {
	pcs     []uint64
	entries map[uint64]string // pc -> "entry name"
	frames  []string
}

func parseSymprog(t *testing.T, out []byte) []stackRec {
	var recs []stackRec
	sc := bufio.NewScanner(bytes.NewReader(out))
	var last uint64
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch f[0] {
		case "stack":
			recs = append(recs, stackRec{entries: map[uint64]string{}})
		case "pc":
			last, _ = strconv.ParseUint(f[1], 16, 64)
			r := &recs[len(recs)-1]
			r.pcs = append(r.pcs, last)
		case "entry":
			recs[len(recs)-1].entries[last] = f[1] + " " + f[2]
		case "frame":
			recs[len(recs)-1].frames = append(recs[len(recs)-1].frames, strings.Join(f[1:], " "))
		}
	}
	if len(recs) < 4 {
		t.Fatalf("symprog printed %d stacks, want at least 4:\n%s", len(recs), out)
	}
	return recs
}

func TestSymbolizeMatchesRuntime(t *testing.T) {
	variants := []struct {
		name  string
		env   []string
		flags []string
	}{
		{"plain", nil, nil},
		{"stripped", nil, []string{"-ldflags=-s -w"}},
		{"pie-stripped", nil, []string{"-buildmode=pie", "-ldflags=-s -w"}},
		{"external-stripped", []string{"CGO_ENABLED=1"}, []string{"-ldflags=-s -w -linkmode=external"}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if strings.Contains(v.name, "external") {
				if _, err := exec.LookPath("gcc"); err != nil {
					t.Skip("external linking needs gcc, which is not installed")
				}
			}
			exe := buildVariant(t, v.name, v.env, v.flags...)
			out, err := exec.Command(exe).Output()
			if err != nil {
				t.Fatal(err)
			}
			b, err := Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if !b.InlineExpansion() {
				t.Fatal("inline expansion unavailable")
			}
			bias := uint64(0)
			if b.PIE {
				// A PIE's runtime PCs are biased; recover the bias from one
				// known entry (runtime.FuncForPC(...).Entry()).
				bias = pieBias(t, b, out)
			}
			inlined := 0
			for si, r := range parseSymprog(t, out) {
				var got []string
				for i := 0; i < len(r.pcs); {
					pc := r.pcs[i] - bias
					fr := b.Frames(pc, true)
					if len(fr) == 0 {
						t.Fatalf("stack %d: no frames for pc %#x", si, pc)
					}
					phys := fr[len(fr)-1]
					if want, ok := r.entries[r.pcs[i]]; ok && !strings.HasPrefix(want, fmt.Sprintf("%x ", phys.Entry+bias)) {
						t.Errorf("stack %d pc %#x: entry %#x, runtime says %s", si, pc, phys.Entry+bias, want)
					}
					for _, f := range fr {
						got = append(got, fmt.Sprintf("%s %s %d", PrintName(f.Func), f.File, f.Line))
						if f.Inlined {
							inlined++
						}
					}
					i += len(fr) // runtime.Callers emitted one PC per logical frame
				}
				if strings.Join(got, "\n") != strings.Join(r.frames, "\n") {
					t.Errorf("stack %d differs\ngot:\n%s\nruntime.CallersFrames:\n%s", si, strings.Join(got, "\n"), strings.Join(r.frames, "\n"))
				}
			}
			if inlined < 4 {
				t.Errorf("only %d inlined frames seen; the fixture should exercise inlining", inlined)
			}
		})
	}
}

func pieBias(t *testing.T, b *Binary, out []byte) uint64 {
	i := bytes.Index(out, []byte("mainpc "))
	if i < 0 {
		t.Fatal("symprog did not print mainpc")
	}
	pc, _ := strconv.ParseUint(strings.Fields(string(out[i+7:]))[0], 16, 64)
	f := b.LookupFunc("main.main")
	if f == nil {
		t.Fatal("main.main not in function table")
	}
	return pc - f.Entry
}

func TestNotGo(t *testing.T) {
	_, err := Open("/bin/sh")
	if !errors.Is(err, ErrNotGo) {
		t.Fatalf("Open(/bin/sh) = %v, want ErrNotGo", err)
	}
	f := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(f, []byte("this is not an ELF file at all"), 0o644)
	if _, err := Open(f); !errors.Is(err, ErrNotGo) {
		t.Fatalf("Open(junk) = %v, want ErrNotGo", err)
	}
}

func TestPrintName(t *testing.T) {
	for in, want := range map[string]string{
		"main.f":                                  "main.f",
		"main.generic[go.shape.int]":              "main.generic[...]",
		"main.G[go.shape.string].gm":              "main.G[...].gm",
		"main.G[go.shape.int].m[go.shape.string]": "main.G[...].m[...]",
		"main.f[[]int]":                           "main.f[...]",
	} {
		if got := PrintName(in); got != want {
			t.Errorf("PrintName(%q) = %q, want %q", in, got, want)
		}
	}
}
