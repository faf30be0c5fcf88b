package ebpf

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// TestEventLayout checks event.go's offsets against struct event as the
// compiler laid it out (the object's BTF).
func TestEventLayout(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(object))
	if err != nil {
		t.Fatal(err)
	}
	var ev *btf.Struct
	if err := spec.Types.TypeByName("event", &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Size != eventSize {
		t.Errorf("struct event is %d bytes, event.go says %d", ev.Size, eventSize)
	}
	want := map[string]uint32{"tid": 0, "flags": 4, "ip": 8, "sp": 16, "bp": 24, "fsbase": 32, "words": 40,
		"region_tid": 104, "cur": 112, "seq1": 120, "seq2": 128, "stack_bytes": 136, "record_bytes": 144, "stack": offStack, "record": offRecord}
	for _, m := range ev.Members {
		if off, ok := want[m.Name]; ok {
			if m.Offset.Bytes() != off {
				t.Errorf("event.%s at %d, event.go reads it at %d", m.Name, m.Offset.Bytes(), off)
			}
			delete(want, m.Name)
		}
	}
	for name := range want {
		t.Errorf("struct event has no member %s", name)
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
