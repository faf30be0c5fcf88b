package lineageabi

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// procMem reads a child process's memory through /proc/PID/mem.
type procMem struct{ f *os.File }

func (m procMem) ReadAt(p []byte, addr uint64) error {
	_, err := m.f.ReadAt(p, int64(addr))
	return err
}

// startTarget builds testdata/target with the go command on PATH (the
// fork's toolchain) with flags, runs it until it prints "ready", and
// returns its header as found in the file, its memory and its load bias.
func startTarget(t *testing.T, flags ...string) (*ABI, Mem, uint64) {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "target")
	if out, err := exec.Command("go", append(append([]string{"build", "-o", exe}, flags...), "./testdata/target")...).CombinedOutput(); err != nil {
		t.Fatalf("building the target: %v\n%s", err, out)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := Find(f)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	if l, err := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
		t.Fatalf("target said %q (%v)", l, err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	mf, err := os.Open("/proc/" + pid + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.Close() })
	mem := procMem{mf}
	// The bias: 0, or for a PIE the one that puts the header where its
	// self field says (each mapping of the file at offset 0 against the
	// first segment).
	maps, err := os.ReadFile("/proc/" + pid + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	biases := []uint64{0}
	for _, l := range strings.Split(string(maps), "\n") {
		if fs := strings.Fields(l); len(fs) == 6 && fs[2] == "00000000" && fs[5] == exe {
			start, _ := strconv.ParseUint(strings.Split(fs[0], "-")[0], 16, 64)
			for _, p := range f.Progs {
				if p.Type == elf.PT_LOAD {
					biases = append(biases, start-p.Vaddr&^0xfff)
					break
				}
			}
		}
	}
	for _, b := range biases {
		if a.At(mem, b) {
			return a, mem, b
		}
	}
	t.Fatalf("no load bias in %v puts the header at its self address", biases)
	return nil, nil, 0
}

// TestFileMatchesMemory: the header in the executable file is the one in
// memory, field by field, but for the fields doc/lineage-abi.md marks
// *[rt]* (run-time): every offset a reader needs is in the file, as an
// eBPF loader that compiles them in from the ELF needs. The marks are
// parsed from the doc, so the doc and the runtime cannot drift.
func TestFileMatchesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds and runs a program")
	}
	doc := docHeader(t)
	for _, flags := range [][]string{nil, {"-buildmode=pie"}} {
		t.Run(strings.Join(append([]string{"default"}, flags...), " "), func(t *testing.T) {
			a, mem, bias := startTarget(t, flags...)
			file := a.Static.raw
			m := make([]byte, HeaderSize)
			if err := mem.ReadAt(m, a.Addr+bias); err != nil {
				t.Fatal(err)
			}
			rt, same := 0, 0
			for _, d := range doc {
				if d.off+d.size > HeaderSize {
					t.Fatalf("doc field %s at %d+%d beyond the header", d.name, d.off, d.size)
				}
				fv, mv := file[d.off:d.off+d.size], m[d.off:d.off+d.size]
				switch {
				case d.rt:
					if !bytes.Equal(fv, mv) {
						rt++ // filled in at run time, as marked
					}
				case !bytes.Equal(fv, mv):
					t.Errorf("%s (offset %d, not *[rt]*): file % x, memory % x", d.name, d.off, fv, mv)
				default:
					same++
				}
			}
			// The check can fail: the run-time fields did change, and the
			// static ones hold offsets (not all zero, as version 1's file
			// had them).
			if rt < 5 || same < 50 {
				t.Errorf("%d run-time fields differ, %d static fields equal: want the runtime to have filled the first and the file to hold the second", rt, same)
			}
			static, _ := ParseHeader(file)
			static.Flags |= FlagRegistry
			r, err := parseRegistry(static, file)
			if err != nil || r.OffGStatus == 0 || r.OffGLabels == 0 || r.LabelSize == 0 || r.StatusMap == [16]uint8{} {
				t.Errorf("the file's registry offsets: %+v, %v", r, err)
			}

			// And the labels the target set are read through them.
			v, err := a.Load(mem, bias)
			if err != nil {
				t.Fatal(err)
			}
			v.ReadLabels = true
			gs, _, err := v.Goroutines()
			if err != nil {
				t.Fatal(err)
			}
			var found []Label
			for _, g := range gs {
				found = append(found, g.Labels...)
			}
			if !slices.Equal(found, []Label{{"check", "file-vs-memory"}}) {
				t.Errorf("labels %q, want the one set by pprof.Do", found)
			}
		})
	}
}
