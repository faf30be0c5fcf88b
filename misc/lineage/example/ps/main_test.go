package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"fpsafe.dev/misc/lineage/internal/fixture"
)

// TestPs runs ps against testdata/fixture (fixture.Start) and checks the goroutines it lists: the
// spawner created by main, its three workers waiting on a channel and its
// locker waiting on a mutex, each with the spawner as parent.
func TestPs(t *testing.T) {
	ps := filepath.Join(t.TempDir(), "ps")
	if out, err := exec.Command("go", "build", "-o", ps, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	_, pid := fixture.Start(t)
	var listing string
	for try := 0; try < 50; try++ { // until every worker has blocked
		b, err := exec.Command(ps, strconv.Itoa(pid)).CombinedOutput()
		if err != nil {
			t.Fatalf("ps: %v\n%s", err, b)
		}
		listing = string(b)
		if strings.Count(listing, "chan receive") == 3 && strings.Contains(listing, "sync.Mutex.Lock") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("ps output:\n%s", listing)
	lines := strings.Split(strings.TrimSpace(listing), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "GOID PARENT STATE WAIT FUNCTION CREATED BY" {
		t.Fatalf("header %q", lines[0])
	}
	row := regexp.MustCompile(`^(\d+)\s+(\d+)\s+(\S+)\s+(.*?)\s+(\S+)\s+(\S+) \((\S+):(\d+)\)$`)
	spawner := ""
	var kids []string // "parent state wait function" of spawner's goroutines
	for _, l := range lines[1:] {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue // no creator: the runtime's own, or goroutine 1
		}
		switch {
		case m[5] == "main.spawner" && m[6] == "main.main" && strings.HasSuffix(m[7], "fixture/main.go"):
			spawner = m[1]
		case m[6] == "main.spawner":
			kids = append(kids, m[2]+" "+m[3]+" "+strings.Fields(m[4])[0]+" "+m[5])
		}
	}
	if spawner == "" {
		t.Fatal("no main.spawner created by main.main in fixture/main.go")
	}
	want := map[string]int{
		spawner + " waiting chan main.worker":            3,
		spawner + " waiting sync.Mutex.Lock main.locker": 1,
	}
	got := map[string]int{}
	for _, k := range kids {
		got[k]++
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%d goroutines %q, want %d (all: %q)", got[k], k, n, kids)
		}
	}
	if len(kids) != 4 {
		t.Errorf("spawner created %d goroutines, want 4: %q", len(kids), kids)
	}
}

// TestPsStacks runs ps -stacks against the fixture: each worker's stack is
// the frames its own dump prints, with its creator.
func TestPsStacks(t *testing.T) {
	ps := filepath.Join(t.TempDir(), "ps")
	if out, err := exec.Command("go", "build", "-o", ps, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	_, pid := fixture.Start(t)
	worker := regexp.MustCompile(`goroutine \d+ \[chan receive\]:\nmain\.worker\n\t\S+/fixture/main\.go:\d+\ncreated by main\.spawner in goroutine \d+\n`)
	var out string
	for try := 0; try < 50; try++ { // until every worker has blocked
		b, err := exec.Command(ps, "-stacks", strconv.Itoa(pid)).CombinedOutput()
		if err != nil {
			t.Fatalf("ps -stacks: %v\n%s", err, b)
		}
		if out = string(b); len(worker.FindAllString(out, -1)) == 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(worker.FindAllString(out, -1)); n != 3 {
		t.Errorf("ps -stacks shows %d workers blocked in main.worker, want 3:\n%s", n, out)
	}
	if strings.Contains(out, "runtime.gopark") || strings.Contains(out, "gowrap") {
		t.Errorf("ps -stacks shows frames the dump hides:\n%s", out)
	}
	// A process that is gone: one line, exit status 1.
	cmd := exec.Command(ps, "999999999")
	b, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), "no such process") {
		t.Errorf("ps of no process: %v, %q; want exit status 1 and one line", err, b)
	}
}
