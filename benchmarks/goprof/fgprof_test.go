package goprof

import (
	"bytes"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/felixge/fgprof"
	"github.com/google/pprof/profile"
)

// fgSpawn starts the workload fgprof samples: one goroutine that burns
// CPU and n that wait, until stop is closed.
//
//go:noinline
func fgSpawn(n int, stop chan struct{}, done *sync.WaitGroup) {
	done.Add(n + 1)
	go func() {
		defer done.Done()
		fgBurn(stop)
	}()
	for range n {
		go func() {
			defer done.Done()
			fgWait(stop)
		}()
	}
}

//go:noinline
func fgBurn(stop chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			return
		default:
		}
		for range 10000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
}

//go:noinline
func fgWait(stop chan struct{}) { <-stop }

func funcName(f any) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }

// TestFgprof checks that github.com/felixge/fgprof, which samples every
// goroutine through runtime.GoroutineProfile, works on the fork with and
// without GODEBUG lineageprofile=1: its pprof output parses and holds the
// workload's stacks, which end at runtime.goexit without the setting and
// continue with the go statement that started the goroutine (fgSpawn) and
// its creators' with it, as runtime.GoroutineProfile's records do.
func TestFgprof(t *testing.T) {
	spawn, wait, burn := funcName(fgSpawn), funcName(fgWait), funcName(fgBurn)
	for _, on := range []bool{false, true} {
		godebug := "lineageprofile=0"
		if on {
			godebug = "lineageprofile=1"
		}
		t.Run(godebug, func(t *testing.T) {
			t.Setenv("GODEBUG", godebug)
			stop := make(chan struct{})
			var done sync.WaitGroup
			fgSpawn(3, stop, &done)
			var buf bytes.Buffer
			end := fgprof.Start(&buf, fgprof.FormatPprof)
			// fgprof samples at 99 Hz: some 40 samples.
			time.Sleep(400 * time.Millisecond)
			if err := end(); err != nil {
				t.Fatal(err)
			}
			close(stop)
			done.Wait()

			p, err := profile.Parse(&buf)
			if err != nil {
				t.Fatalf("parsing fgprof's profile: %v", err)
			}
			if err := p.CheckValid(); err != nil {
				t.Fatalf("fgprof's profile: %v", err)
			}
			seen := map[string]int64{}
			for _, s := range p.Sample {
				var fns []string
				for _, loc := range s.Location {
					for _, l := range loc.Line {
						fns = append(fns, l.Function.Name)
					}
				}
				i := slices.IndexFunc(fns, func(f string) bool { return f == wait || f == burn })
				if i < 0 {
					continue
				}
				seen[fns[i]] += s.Value[0]
				g := slices.Index(fns, "runtime.goexit")
				if g < i {
					t.Errorf("%s: no runtime.goexit after %s: %q", godebug, fns[i], fns)
					continue
				}
				after := fns[g+1:]
				if !on && len(after) > 0 {
					t.Errorf("%s: frames after runtime.goexit: %q", godebug, fns)
				}
				// After goexit: fgSpawn's go statement, then the go
				// statement that started this test (testing.(*T).Run).
				if on && (len(after) < 2 || after[0] != spawn || after[len(after)-1] != "testing.(*T).Run") {
					t.Errorf("%s: want %s ... testing.(*T).Run after runtime.goexit: %q", godebug, spawn, fns)
				}
			}
			if seen[wait] == 0 || seen[burn] == 0 {
				t.Errorf("%s: samples of %s %d, of %s %d; want some of each", godebug, wait, seen[wait], burn, seen[burn])
			}
			t.Logf("%s: %d samples of %s, %d of %s", godebug, seen[wait], wait, seen[burn], burn)
		})
	}
}
