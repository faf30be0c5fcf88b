package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// startPileup starts the pileup fixture with n goroutines on each lock and
// chans on a channel, and returns it with its own dump.
func startPileup(t *testing.T, n, chans int) (*proc, string, map[uint64]dumpGoroutine) {
	t.Helper()
	exe := fixture(t, "pileup")
	requireABI(t, exe)
	p := start(t, exe, "GOGC=off", fmt.Sprintf("PILEUP_N=%d", n), fmt.Sprintf("PILEUP_CHANS=%d", chans))
	return p, exe, parseDump(p.report)
}

// checkPileup checks ps -json's view of the pileup fixture against its own
// dump: every goroutine of the dump is listed, those of the fixture in
// their wait, and all the goroutines in one kind of wait share one wait
// object (one lock, one channel), n of them on each lock.
func checkPileup(t *testing.T, who, out, stderr string, dump map[uint64]dumpGoroutine, n, chans int) {
	t.Helper()
	if strings.Contains(stderr, "left out") {
		t.Errorf("%s: %s", who, strings.TrimSpace(stderr))
	}
	byID := map[uint64]goroutineJSON{}
	for _, g := range parsePsJSON(t, out) {
		byID[g.Goid] = g
	}
	objects := map[string][]string{} // wait reason -> wait objects, one per goroutine
	for id, d := range dump {
		g, ok := byID[id]
		if !ok {
			t.Errorf("%s: goroutine %d [%s] of the dump is missing", who, id, d.reason)
			continue
		}
		if d.parent == 0 || !d.hasMain() {
			continue
		}
		if g.State != "waiting" || g.WaitReason != d.reason {
			t.Errorf("%s: goroutine %d: state %s reason %q, dump says %q", who, id, g.State, g.WaitReason, d.reason)
		}
		objects[d.reason] = append(objects[d.reason], g.WaitObject)
	}
	for reason, want := range map[string]int{
		"sync.Mutex.Lock": n, "sync.WaitGroup.Wait": n, "sync.RWMutex.RLock": n, "sync.RWMutex.Lock": min(n, 1), "chan receive": chans,
	} {
		objs := objects[reason]
		if len(objs) != want {
			t.Errorf("%s: %d goroutines in %s, want %d", who, len(objs), reason, want)
		}
		slices.Sort(objs)
		if objs = slices.Compact(objs); len(objs) > 1 || len(objs) == 1 && objs[0] == "" {
			t.Errorf("%s: goroutines in %s wait on %q, want one object", who, reason, objs)
		}
	}
	if len(objects) != 5 {
		t.Errorf("%s: the fixture's goroutines wait in %d ways, want 5", who, len(objects))
	}
	// The RWMutex's readers and its writer wait on different semaphores
	// of one lock, and name the lock: one object.
	if r, w := objects["sync.RWMutex.RLock"], objects["sync.RWMutex.Lock"]; len(r) > 0 && len(w) > 0 && r[0] != w[0] {
		t.Errorf("%s: the RWMutex's readers wait on %s, its writer on %s; want the lock, one object", who, r[0], w[0])
	}
	// Each lock is named by its kind.
	kinds := map[string]string{}
	for _, g := range byID {
		if g.WaitKind != "" {
			kinds[g.WaitReason] = g.WaitKind
		}
	}
	for reason, want := range map[string]string{"sync.Mutex.Lock": "mutex", "sync.WaitGroup.Wait": "waitgroup", "sync.RWMutex.RLock": "rwmutex", "chan receive": "chan"} {
		if kinds[reason] != want {
			t.Errorf("%s: goroutines in %s wait on a %q, want %q", who, reason, kinds[reason], want)
		}
	}
}

// TestPileup reads thousands of goroutines waiting on each of a few locks,
// live, live with -stop and from a core: every goroutine is listed, and the
// goroutines waiting on one lock share one wait object (a semaphore's sudog
// chains the other waiters at its address: it is not the goroutine's own
// list).
func TestPileup(t *testing.T) {
	const n, chans = 3000, 300
	p, exe, dump := startPileup(t, n, chans)
	if len(dump) < 3*n+chans {
		t.Fatalf("the fixture's dump has %d goroutines, want at least %d", len(dump), 3*n+chans)
	}
	pid := strconv.Itoa(p.pid())
	for _, args := range [][]string{{pid}, {"-stop", pid}} {
		out, stderr, code := tool(t, append([]string{"ps", "-json"}, args...)...)
		if code != 0 {
			t.Fatalf("ps %v: exit %d: %s", args, code, stderr)
		}
		checkPileup(t, "ps "+strings.Join(args, " "), out, stderr, dump, n, chans)
	}
	p.checkRunning(t)
	core := gcore(t, p.pid())
	out, stderr, code := tool(t, "ps", "-json", "--core", core, exe)
	if code != 0 {
		t.Fatalf("ps --core: exit %d: %s", code, stderr)
	}
	checkPileup(t, "core", out, stderr, dump, n, chans)
}

// TestPileupScaling: the live read of 10k goroutines, 2500 on each of a
// Mutex, a WaitGroup and an RWMutex, costs no more than twice the read of
// 10k goroutines on channels, counted in sudogs read and read calls (a
// wait list followed through a semaphore's other waiters is quadratic).
func TestPileupScaling(t *testing.T) {
	read := func(n, chans int) readStats {
		p, _, _ := startPileup(t, n, chans)
		defer p.stop()
		r, err, _ := readTarget(context.Background(), targetArgs{pid: p.pid()}, true, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if r.stats.reg.Torn != 0 || r.stats.gs < 3*n+chans {
			t.Fatalf("read %d goroutines, %d torn; want at least %d, none torn", r.stats.gs, r.stats.reg.Torn, 3*n+chans)
		}
		return *r.stats
	}
	pile, chans := read(2500, 2500), read(0, 10000)
	t.Logf("pile-up: %d sudogs, %d calls; channels: %d sudogs, %d calls", pile.reg.Sudogs, pile.reg.Calls, chans.reg.Sudogs, chans.reg.Calls)
	if pile.reg.Sudogs > 2*chans.reg.Sudogs || pile.reg.Calls > 2*chans.reg.Calls {
		t.Errorf("pile-up read %d sudogs in %d calls, channels %d in %d: want at most twice as many", pile.reg.Sudogs, pile.reg.Calls, chans.reg.Sudogs, chans.reg.Calls)
	}
}
