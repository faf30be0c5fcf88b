package lineage_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"fpsafe.dev/misc/lineage"
)

// TestSamplerSelf reads the region of the test's own thread: the goroutine
// it runs is this test's, started by the testing package.
func TestSamplerSelf(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := lineage.OpenPID(context.Background(), os.Getpid(), &lineage.Options{NoLabels: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := p.NewSampler()
	if err != nil {
		t.Fatal(err)
	}
	tid := unix.Gettid()
	for range 3 {
		g, err := s.Current(tid)
		if err != nil {
			t.Fatal(err)
		}
		if g == nil {
			t.Fatalf("thread %d runs no goroutine", tid)
		}
		if g.Start.Function != "testing.tRunner" || g.CreatedBy.Function != "testing.(*T).Run" {
			t.Errorf("thread %d runs goroutine %d started at %v, created by %v; want testing.tRunner created by testing.(*T).Run", tid, g.ID, g.Start, g.CreatedBy)
		}
		if len(g.Ancestors) == 0 || g.Ancestors[0].ID != g.Parent {
			t.Errorf("ancestors %+v, parent %d", g.Ancestors, g.Parent)
		}
	}
	regions, err := p.Regions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range regions {
		if r.TID == tid {
			found = r.Goroutine != nil && r.Goroutine.Start.Function == "testing.tRunner"
		}
	}
	if !found {
		t.Errorf("Regions has no region for thread %d running testing.tRunner: %+v", tid, regions)
	}
}

// TestStackRunning: a running goroutine of a live process has no stack to
// read without a stop.
func TestStackRunning(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs a second P for a goroutine that keeps running")
	}
	stop := make(chan struct{})
	defer close(stop)
	go spin(stop)
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, os.Getpid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := 0
	for try := 0; try < 100 && n == 0; try++ {
		snap, err := p.Goroutines(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range snap.Goroutines {
			if g.State != "running" || g.Start.Function != "fpsafe.dev/misc/lineage_test.spin" {
				continue
			}
			n++
			if _, err := p.Stack(ctx, g); !errors.Is(err, lineage.ErrRunning) {
				t.Errorf("Stack of running goroutine %d: %v, want ErrRunning", g.ID, err)
			}
		}
	}
	if n == 0 {
		t.Skip("the spinning goroutine was not running when read")
	}
}

// spin keeps running until stop is closed.
func spin(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
	}
}

// TestNotGo: a process that is not a Go program is refused by name.
func TestOpenNotGo(t *testing.T) {
	_, err := lineage.OpenPID(context.Background(), 1, nil)
	if err == nil {
		t.Skip("process 1 is readable and a fork-built Go program")
	}
	if !strings.Contains(err.Error(), "process 1") {
		t.Errorf("error %q does not name process 1", err)
	}
}

// TestLabels: a goroutine started under pprof.Do has its creator's labels.
func TestLabels(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	pprof.Do(context.Background(), pprof.Labels("tenant", "t1", "route", "/x"), func(context.Context) {
		go labeled(stop)
	})
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, os.Getpid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for try := 0; try < 100; try++ {
		snap, err := p.Goroutines(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range snap.Goroutines {
			if g.Start.Function != "fpsafe.dev/misc/lineage_test.labeled" {
				continue
			}
			got := map[string]string{}
			for _, l := range g.Labels {
				got[l.Key] = l.Value
			}
			if len(got) != 2 || got["tenant"] != "t1" || got["route"] != "/x" {
				t.Errorf("labels %v, want tenant=t1 route=/x", g.Labels)
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("goroutine labeled not found")
}

func labeled(stop chan struct{}) { <-stop }
