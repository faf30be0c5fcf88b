package ebpf

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// TestObjectFresh recompiles lineage.bpf.c with the go:generate line of
// collector.go and fails if the committed lineage_bpfel.o differs: run
// `go generate` in this directory after changing the C source. The object
// records the clang that built it (lineage_bpfel.clang); another clang
// version produces other bytes, so the comparison needs the same one.
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
	var args []string
	for _, l := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(l, "//go:generate clang "); ok {
			args = strings.Fields(rest)
		}
	}
	if len(args) < 2 || args[len(args)-2] != "-o" {
		t.Fatalf("no //go:generate clang ... -o FILE line in collector.go")
	}
	// Compile here (the source's directory, as go generate does) to a
	// temporary file.
	out := filepath.Join(t.TempDir(), "lineage_bpfel.o")
	args[len(args)-1] = out
	if b, err := exec.Command("clang", args...).CombinedOutput(); err != nil {
		t.Fatalf("clang %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, object) {
		t.Errorf("lineage_bpfel.o is stale: run go generate in misc/golineage/internal/ebpf and commit the result")
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

// TestEventLayout checks event.go's offsets against struct event and
// struct proc_event as the compiler laid them out (the object's BTF), and
// struct target against the Go type AddTarget writes.
func TestEventLayout(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(object))
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, spec, "event", eventSize, map[string]uint32{"tid": 0, "flags": 4, "ip": 8, "sp": 16, "bp": 24, "fsbase": 32, "words": 40,
		"region_tid": 104, "cur": 112, "seq1": 120, "seq2": 128, "stack_bytes": 136, "record_bytes": 144, "tgid": 148, "labels": 152, "stack": offStack, "record": offRecord})
	checkLayout(t, spec, "proc_event", procEventSize, map[string]uint32{"tid": 0, "flags": 4, "tgid": 8})
	if n := spec.Maps["events"].MaxEntries; n != ringBytes {
		t.Errorf("the ring buffer is %d bytes, event.go says %d", n, ringBytes)
	}
	// AddTarget writes targetValue as the map's value: the same size and
	// offsets as struct target.
	var tg *btf.Struct
	if err := spec.Types.TypeByName("target", &tg); err != nil {
		t.Fatal(err)
	}
	gt := reflect.TypeFor[targetValue]()
	if tg.Size != uint32(gt.Size()) || len(tg.Members) != gt.NumField() {
		t.Fatalf("struct target: %d bytes, %d members; targetValue: %d bytes, %d fields", tg.Size, len(tg.Members), gt.Size(), gt.NumField())
	}
	for i, m := range tg.Members {
		if f := gt.Field(i); uintptr(m.Offset.Bytes()) != f.Offset {
			t.Errorf("struct target's %s at %d, targetValue.%s at %d", m.Name, m.Offset.Bytes(), f.Name, f.Offset)
		}
	}
}

// checkLayout checks the size of the struct name and the offsets of the
// members in want.
func checkLayout(t *testing.T, spec *ebpf.CollectionSpec, name string, size uint32, want map[string]uint32) {
	t.Helper()
	var st *btf.Struct
	if err := spec.Types.TypeByName(name, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size {
		t.Errorf("struct %s is %d bytes, event.go says %d", name, st.Size, size)
	}
	for _, m := range st.Members {
		if off, ok := want[m.Name]; ok {
			if m.Offset.Bytes() != off {
				t.Errorf("%s.%s at %d, event.go reads it at %d", name, m.Name, m.Offset.Bytes(), off)
			}
			delete(want, m.Name)
		}
	}
	for m := range want {
		t.Errorf("struct %s has no member %s", name, m)
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
