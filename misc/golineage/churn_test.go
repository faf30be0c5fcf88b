package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChurnLineage reads every goroutine of a process that creates and ends
// goroutines at a high rate (testdata/churn), many times over. Every child
// and leaf must sit under the spawner whose function created it, with its
// own creator's function as its first ancestor: a torn or mixed-up record
// would put it under another. Goroutines left out because they kept
// changing are counted.
func TestChurnLineage(t *testing.T) {
	exe := fixture(t, "churn")
	requireABI(t, exe)
	p := start(t, exe)
	spawner := map[uint64]string{} // goid -> "A".."D"
	for _, l := range p.report {
		var fn string
		var id uint64
		if f := strings.Fields(l); len(f) == 3 && f[0] == "spawner" {
			fn = f[1]
			id, _ = strconv.ParseUint(f[2], 10, 64)
			spawner[id] = strings.TrimPrefix(fn, "main.spawn")
		}
	}
	if len(spawner) != 4 {
		t.Fatalf("want 4 spawners, report:\n%s", strings.Join(p.report, "\n"))
	}
	reads, children, leaves, left := 0, 0, 0, 0
	reLeft := regexp.MustCompile(`\((\d+) goroutines changed while read`)
	for deadline := time.Now().Add(3 * time.Second); reads < 5 || time.Now().Before(deadline); reads++ {
		out, stderr, code := tool(t, "ps", "-json", strconv.Itoa(p.pid()))
		if code != 0 {
			t.Fatalf("ps: exit %d: %s", code, stderr)
		}
		if m := reLeft.FindStringSubmatch(stderr); m != nil {
			n, _ := strconv.Atoi(m[1])
			left += n
		}
		for _, g := range parsePsJSON(t, out) {
			if g.Start == nil {
				continue
			}
			fn := g.Start.Func
			switch {
			case strings.HasPrefix(fn, "main.child"):
				k := strings.TrimPrefix(fn, "main.child")
				children++
				// Version 2 keeps no goid beyond the parent's: the
				// spawner's creator, goroutine 1, is the root.
				if spawner[g.Parent] != k || len(g.Ancestors) < 2 || !ancGoid(g.Ancestors[0], g.Parent) ||
					g.CreatedBy == nil || g.CreatedBy.Func != "main.spawn" || !ancGoid(g.Ancestors[1], 0) || g.Ancestors[1].CreatedBy != nil {
					t.Errorf("child %d (%s): parent %d (spawner %q), ancestors %s", g.Goid, fn, g.Parent, spawner[g.Parent], ancestry(g))
				}
			case strings.HasPrefix(fn, "main.leaf"):
				k := strings.TrimPrefix(fn, "main.leaf")
				leaves++
				if len(g.Ancestors) < 3 || !ancGoid(g.Ancestors[0], g.Parent) || g.Ancestors[0].Start == nil ||
					g.Ancestors[0].Start.Func != "main.child"+k || g.CreatedBy == nil || g.CreatedBy.Func != "main.child"+k ||
					!ancGoid(g.Ancestors[1], 0) || g.Ancestors[1].Start == nil || g.Ancestors[1].Start.Func != "main.spawn"+k ||
					!ancGoid(g.Ancestors[2], 0) || g.Ancestors[2].CreatedBy != nil {
					t.Errorf("leaf %d (%s): parent %d, ancestors %s", g.Goid, fn, g.Parent, ancestry(g))
				}
			}
		}
	}
	p.checkRunning(t)
	p.stop()
	var n int64
	var d time.Duration
	if f := strings.Fields(p.stderr.String()); len(f) == 4 && f[0] == "created" {
		n, _ = strconv.ParseInt(f[1], 10, 64)
		d, _ = time.ParseDuration(f[3])
	}
	if d <= 0 {
		t.Fatalf("no creation count from the fixture: %q", p.stderr.String())
	}
	rate := float64(n) / d.Seconds()
	t.Logf("%d reads of a process creating %.0f goroutines/s: %d children and %d leaves checked, %d left out as changing", reads, rate, children, leaves, left)
	if children == 0 || leaves == 0 {
		t.Errorf("no children (%d) or leaves (%d) seen", children, leaves)
	}
	if rate < 100e3 {
		t.Errorf("the fixture created %.0f goroutines/s, below the 100,000/s the stress asks for", rate)
	}
}

func ancestry(g goroutineJSON) string {
	var s []string
	for _, a := range g.Ancestors {
		fn := "?"
		if a.Start != nil {
			fn = a.Start.Func
		}
		id := "-"
		if a.Goid != nil {
			id = strconv.FormatUint(*a.Goid, 10)
		}
		s = append(s, id+" "+fn)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// ancGoid reports whether a's goid is goid (0: it has none).
func ancGoid(a ancestorJSON, goid uint64) bool {
	if a.Goid == nil {
		return goid == 0
	}
	return *a.Goid == goid
}
