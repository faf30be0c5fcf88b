package main

// Regression tests for bad input and edge cases found by an independent
// check of the tools (issue 16, items 5, 6 and 9).

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUnwritableOutput: profile -o with a path that cannot be written fails
// before sampling, not after the whole run (issue 16 item 9).
func TestUnwritableOutput(t *testing.T) {
	p := start(t, fixture(t, "blocked"))
	dir := t.TempDir()
	for _, out := range []string{
		filepath.Join(dir, "no-such-dir", "p.pb.gz"),
		dir, // a directory
	} {
		begin := time.Now()
		_, stderr, code := tool(t, "profile", "-native", "-duration", "30s", "-o", out, fmt.Sprint(p.pid()))
		if d := time.Since(begin); d > 10*time.Second {
			t.Errorf("-o %s: failed after %v, want before sampling", out, d)
		}
		if code != 1 || !strings.Contains(stderr, "cannot write the profile") {
			t.Errorf("-o %s: exit %d, stderr %q; want 1 and a line about the output", out, code, stderr)
		}
	}
	p.checkRunning(t)
	// A run that fails after the output was opened leaves no file behind.
	out := filepath.Join(dir, "p.pb.gz")
	if _, _, code := tool(t, "profile", "-native", "-duration", "1s", "-o", out, "999999999"); code == 0 {
		t.Fatal("profile of a process that does not exist: exit 0")
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("failed run left %s behind", out)
	}
	// ... nor overwrites a profile already there (issue 24), nor leaves
	// its temporary file.
	os.WriteFile(out, []byte("old"), 0o644)
	if _, _, code := tool(t, "profile", "-native", "-duration", "1s", "-o", out, "999999999"); code == 0 {
		t.Fatal("profile of a process that does not exist: exit 0")
	}
	if b, err := os.ReadFile(out); string(b) != "old" {
		t.Errorf("failed run changed %s: %q, %v", out, b, err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("failed run left files in %s: %v", dir, es)
	}
	// A device is written in place (no temporary file next to it).
	if _, stderr, code := tool(t, "profile", "-native", "-duration", "200ms", "-o", os.DevNull, fmt.Sprint(p.pid())); code != 0 {
		t.Errorf("-o %s: exit %d, stderr %q", os.DevNull, code, stderr)
	}
}

// TestEBPFNoticesExit: the ebpf collector ends when the target exits and
// says so, as the ptrace collector does, instead of running the full
// duration and exiting 0 with nothing (issue 16 item 5).
func TestEBPFNoticesExit(t *testing.T) {
	requireEBPF(t)
	cmd := exec.Command(fixture(t, "busy"))
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	out := filepath.Join(t.TempDir(), "p.folded")
	stderr := &watchWriter{want: "sampling started", seen: make(chan bool)}
	code := make(chan int, 1)
	go func() {
		code <- cli([]string{"profile", "-native", "-stats", "-collector", "ebpf", "-format", "folded", "-duration", "120s", "-o", out, fmt.Sprint(cmd.Process.Pid)}, io.Discard, stderr)
	}()
	select {
	case <-stderr.seen:
	case c := <-code:
		t.Fatalf("profile ended before sampling started: exit %d, stderr %q", c, stderr.String())
	case <-time.After(100 * time.Second):
		t.Fatal("ebpf sampling did not start within 100s")
	}
	time.Sleep(time.Second)
	cmd.Process.Kill() // left a zombie: exited all the same
	var c int
	select {
	case c = <-code:
	case <-time.After(30 * time.Second):
		t.Fatal("sampling went on for 30s after the target exited")
	}
	want := fmt.Sprintf("sampling ended early: process %d exited", cmd.Process.Pid)
	if c != 0 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want 0 and %q", c, stderr.String(), want)
	}
	if data, err := os.ReadFile(out); err != nil || !strings.Contains(string(data), "main.work") {
		t.Errorf("profile: %v, %d bytes without main.work", err, len(data))
	}
}

// watchWriter collects a command's output and closes seen when want appears.
type watchWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestTruncatedGcore: a gcore core cut short gives the stacks it still
// holds, a note on standard error and a non-zero exit, as a truncated
// kernel core does (issue 16 item 6). gcore writes the memory, then the
// notes (thread registers), then the section headers: cut by 1 byte, only
// the section headers are damaged and every stack is whole; cut into the
// notes, the threads whose notes survive are shown; cut into the memory,
// no registers are left. Each says in one line what was skipped. Cores of
// testdata/parked (plain and PIE, whose load bias without NT_AUXV comes
// from the lineage header) list their goroutines without the notes, and
// every goroutine whose data lies before a cut (cutCore).
func TestTruncatedGcore(t *testing.T) {
	for _, flags := range [][]string{nil, {"-buildmode=pie"}} {
		t.Run(strings.Join(append([]string{"parked"}, flags...), " "), func(t *testing.T) {
			exe := fixture(t, "parked", flags...)
			requireABI(t, exe)
			p := start(t, exe)
			core := gcore(t, p.pid())
			ef, err := elf.Open(core)
			if err != nil {
				t.Fatal(err)
			}
			var notes uint64
			for _, p := range ef.Progs {
				if p.Type == elf.PT_NOTE {
					notes = p.Off
				}
			}
			ef.Close()
			if notes == 0 {
				t.Fatal("gcore core without notes")
			}
			cutCore(t, core, exe, int64(notes)) // the notes lost, every goroutine listed
		})
	}
	exe := fixture(t, "blocked")
	p := start(t, exe)
	core := gcore(t, p.pid())
	full, stderr, code := tool(t, "stacks", "-native", "--core", core, exe)
	if code != 0 {
		t.Fatalf("whole core: exit %d: %s", code, stderr)
	}
	ef, err := elf.Open(core)
	if err != nil {
		t.Fatal(err)
	}
	var notes *elf.Prog
	for _, p := range ef.Progs {
		if p.Type == elf.PT_NOTE {
			notes = p
		}
	}
	st, err := os.Stat(core)
	if err != nil {
		t.Fatal(err)
	}
	size := int(st.Size())
	if notes == nil || notes.Off+notes.Filesz >= uint64(size) || notes.Filesz < 1024 {
		t.Fatalf("unexpected gcore layout: notes %+v in a %d-byte file", notes, size)
	}
	seg := make([]byte, notes.Filesz)
	if _, err := notes.ReadAt(seg, 0); err != nil {
		t.Fatal(err)
	}
	ef.Close()
	// Cut inside the last thread's NT_PRSTATUS note.
	lastThread := 0
	for off := 0; off+12 <= len(seg); {
		le := binary.LittleEndian
		namesz, descsz, typ := int(le.Uint32(seg[off:])), int(le.Uint32(seg[off+4:])), le.Uint32(seg[off+8:])
		if typ == 1 { // NT_PRSTATUS
			lastThread = int(notes.Off) + off + 12 + 4
		}
		off += 12 + (namesz+3)&^3 + (descsz+3)&^3
	}
	// Cut the core itself, shorter and shorter (no copies of a large file).
	short := core
	cases := []struct {
		size int
		want string // on standard error
	}{
		{size - 1, fmt.Sprintf("core truncated at %d of %d bytes: skipped 0 goroutines, 0 regions, 0 notes, 0 segments", size-1, size)},
		{lastThread, fmt.Sprintf("core truncated at %d of %d bytes: skipped 0 goroutines, 0 regions, 1 note, 0 segments (first: core file: ", lastThread, size)},
		{int(notes.Off) - 100, "1 note, 1 segment (first: core file: its notes (thread registers, auxiliary vector) at offset"},
	}
	for _, c := range cases {
		if err := os.Truncate(short, int64(c.size)); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := tool(t, "stacks", "-native", "--core", short, exe)
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("core cut to %d of %d bytes: exit %d, stderr %q; want 1 and one line with %q", c.size, size, code, stderr, c.want)
		}
		switch {
		case c.size == size-1:
			if out != full {
				t.Errorf("core short by 1 byte: stacks differ from the whole core's\n--- short\n%s\n--- whole\n%s", out, full)
			}
		case c.size > int(notes.Off):
			// The threads shown are shown whole.
			n := 0
			for _, b := range strings.SplitAfter(out, "\n\n") {
				if b == "" {
					continue
				}
				n++
				if !strings.Contains(full, b) {
					t.Errorf("core cut into its notes: thread differs from the whole core's:\n%s", b)
				}
			}
			if n != len(parseThreads(full))-1 {
				t.Errorf("core cut inside the last thread's notes: %d threads shown, want %d", n, len(parseThreads(full))-1)
			}
		}
	}
}
