package ebpf

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf/btf"
)

// TestObjectFresh runs the go:generate line of collector.go (bpf2go, which
// compiles lineage.bpf.c and generates lineage_bpfel.go) into a temporary
// directory and fails if the committed lineage_bpfel.o or lineage_bpfel.go
// differs: run `go generate` in this directory after changing the C
// source. The object does not record the clang that built it
// (lineage_bpfel.clang does); another clang version produces other bytes,
// so the comparison needs the same one.
func TestObjectFresh(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	if _, err := exec.LookPath("clang"); err != nil {
		if ci {
			t.Fatal("clang is not installed (.ci/tools lists it)")
		}
		t.Skip("skipping: clang is not installed (Debian: apt-get install clang)")
	}
	want, err := os.ReadFile("lineage_bpfel.clang")
	if err != nil {
		t.Fatal(err)
	}
	v, err := exec.Command("clang", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := firstLine(string(v)); got != strings.TrimSpace(string(want)) {
		if ci {
			t.Fatalf("clang is %q, the object was built by %q", got, strings.TrimSpace(string(want)))
		}
		t.Skipf("skipping: clang is %q, the object was built by %q", got, strings.TrimSpace(string(want)))
	}
	src, err := os.ReadFile("collector.go")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "//go:generate go tool bpf2go "
	var args []string
	for _, l := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			if args != nil {
				t.Fatalf("two %s... lines in collector.go", prefix)
			}
			args = strings.Fields(rest)
		}
	}
	if args == nil {
		t.Fatalf("no %s... line in collector.go", prefix)
	}
	// Run it here (the source's directory, as go generate does) with the
	// environment go generate gives it, writing to a temporary directory
	// (bpf2go's flags precede its arguments), and without the BPF2GO_*
	// variables, which change its defaults. The module cache has what
	// bpf2go needs (it is a package of github.com/cilium/ebpf, which this
	// package imports): GOPROXY=off.
	dir := t.TempDir()
	args = append([]string{"tool", "bpf2go", "-output-dir", dir}, args...)
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BPF2GO_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GOPACKAGE=ebpf", "GOFILE=collector.go", "GOPROXY=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	for _, f := range []string{"lineage_bpfel.o", "lineage_bpfel.go"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("%s is stale: run go generate in misc/golineage/internal/ebpf and commit the result", f)
		}
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 2 {
		t.Errorf("bpf2go wrote %q, want lineage_bpfel.o and lineage_bpfel.go", names)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

// TestEventLayout checks what bpf2go's types do not say of the object:
// that struct proc_event has its tid and flags where struct event has
// them (Decode tells the two apart by the flags), that the maps are as
// large as event.go and MaxTargets say, and that the targets map's value
// is struct target, the type AddTarget writes.
func TestEventLayout(t *testing.T) {
	if offProcTID != offTID || offProcFlags != offFlags || procEventSize < offFlags+4 {
		t.Errorf("struct proc_event's tid and flags at %d and %d, struct event's at %d and %d", offProcTID, offProcFlags, offTID, offFlags)
	}
	spec, err := loadLineage()
	if err != nil {
		t.Fatal(err)
	}
	var specs lineageSpecs
	if err := spec.Assign(&specs); err != nil {
		t.Fatal(err)
	}
	if n := specs.Events.MaxEntries; n != ringBytes {
		t.Errorf("the ring buffer is %d bytes, event.go says %d", n, ringBytes)
	}
	if n := specs.Targets.MaxEntries; n != MaxTargets {
		t.Errorf("the targets map holds %d, MaxTargets says %d", n, MaxTargets)
	}
	n := uint32(unsafe.Sizeof(lineageTarget{}))
	if tg, ok := btf.As[*btf.Struct](specs.Targets.Value); !ok || tg.Name != "target" || tg.Size != n {
		t.Errorf("the targets map's value is %v, want struct target of %d bytes (lineageTarget)", specs.Targets.Value, n)
	}
	if specs.Targets.ValueSize != n {
		t.Errorf("the targets map's value is %d bytes, lineageTarget %d", specs.Targets.ValueSize, n)
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string]string{"0\n": "[0]", "0-3,5": "[0 1 2 3 5]", "0-1,4-5": "[0 1 4 5]"} {
		got, err := parseCPUList(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("parseCPUList(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a", "3-1", "0-"} {
		if _, err := parseCPUList(in); err == nil {
			t.Errorf("parseCPUList(%q) succeeded", in)
		}
	}
}
