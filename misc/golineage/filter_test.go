package main

import (
	"fmt"
	"strings"
	"testing"

	"fpsafe.dev/misc/internal/golden"
)

// TestFilter: -goid, -state and -func choose the same goroutines in every
// command, from the parked fixture's core (its goroutines are known: two
// lockers on a mutex, three workers on a channel, a sleeper, a chain of
// three).
func TestFilter(t *testing.T) {
	rows := func(out string) []string {
		var rs []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" && !strings.HasPrefix(l, "GOID") && !strings.HasPrefix(l, "(") {
				rs = append(rs, l)
			}
		}
		return rs
	}
	cases := []struct {
		args []string
		n    int    // lines (ps), objects (ps -json), sections (stacks -all), goroutines (waits)
		each string // in every one of them
	}{
		{[]string{"ps", "-func", `main\.locker$`}, 2, "main.locker"},
		{[]string{"ps", "-state", "sync.Mutex.Lock"}, 2, "main.locker"},
		{[]string{"ps", "-state", "waiting", "-func", `main\.(worker|sleeper)$`}, 4, "main."},
		{[]string{"ps", "-func", `time\.Sleep`}, 1, "main.sleeper"}, // a frame, not the start function
		{[]string{"ps", "-goid", "1"}, 1, "runtime.main"},
		{[]string{"ps", "-state", "running"}, 0, ""},
		{[]string{"ps", "-json", "-state", "chan send"}, 1, `"main.producer"`},
		{[]string{"stacks", "-all", "-state", "sleep"}, 1, "main.sleeper"},
		{[]string{"waits", "-func", `main\.worker$`}, 3, "main.worker"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out := parkedOutput(t, c.args...)
			var got []string
			switch c.args[0] {
			case "stacks":
				for _, b := range strings.Split(out, "\n\n") {
					if strings.HasPrefix(b, "goroutine ") || strings.HasPrefix(b, "thread ") {
						got = append(got, b)
					}
				}
			case "waits":
				// A line is one goroutine, or "xN ..." for N of them.
				for _, l := range rows(out) {
					if !strings.HasPrefix(l, "\t") {
						continue
					}
					n := 1
					if f := strings.Fields(l); strings.HasPrefix(f[0], "x") {
						if _, err := fmt.Sscanf(f[0], "x%d", &n); err != nil {
							t.Fatalf("waits line %q: %v", l, err)
						}
					}
					for range n {
						got = append(got, l)
					}
				}
			default:
				got = rows(out)
			}
			if len(got) != c.n {
				t.Fatalf("%d goroutines, want %d:\n%s", len(got), c.n, out)
			}
			for _, g := range got {
				if !strings.Contains(g, c.each) {
					t.Errorf("%q lacks %q", g, c.each)
				}
			}
		})
	}
	// Two -goid flags and a list add up.
	ids := map[string]bool{}
	for _, l := range rows(parkedOutput(t, "ps", "-func", `main\.(locker|producer)$`)) {
		ids[strings.Fields(l)[0]] = true
	}
	var list []string
	for id := range ids {
		list = append(list, id)
	}
	out := parkedOutput(t, "ps", "-goid", list[0], "-goid", strings.Join(list[1:], ","))
	if got := rows(out); len(got) != 3 {
		t.Errorf("-goid %v: %d goroutines, want 3:\n%s", list, len(got), out)
	}
}

// TestGoldenTreeFiltered: tree keeps a chosen goroutine's ancestors, and
// only them, as context: the chain's last goroutine under its creators,
// up to goroutine 1.
func TestGoldenTreeFiltered(t *testing.T) {
	out := parkedOutput(t, "tree", "-goid", lastChainGoroutine(t))
	golden.Check(t, "tree.filtered", normalize(out))
}

// lastChainGoroutine is the goid of the deepest goroutine of the parked
// fixture's chain (the one that waits and has no child).
func lastChainGoroutine(t *testing.T) string {
	out := parkedOutput(t, "tree")
	var last string
	depth := -1
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasSuffix(l, "] main.chain") || !strings.Contains(l, "goroutine ") {
			continue
		}
		if d := len(l) - len(strings.TrimLeft(l, " ")); d > depth {
			depth, last = d, strings.Fields(l)[1]
		}
	}
	if last == "" {
		t.Fatalf("no chain in the tree:\n%s", out)
	}
	return last
}

// TestFlagsAfterOperands: "ps --core CORE EXE -json -state sleep" reads
// the flags after the operands (issue 24 item 8).
func TestFlagsAfterOperands(t *testing.T) {
	exe, core := goldenParked(t)
	out, stderr, code := tool(t, "ps", "--core", core, exe, "-json", "-state", "sleep")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"wait_reason":"sleep"`) {
		t.Errorf("exit %d, stdout %q, stderr %q; want the sleeper's JSON line", code, out, stderr)
	}
}
