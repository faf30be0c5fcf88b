package lineage_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"testing"

	"fpsafe.dev/misc/lineage"
)

// A Watcher's first Changes adds every goroutine GoroutineStacks reads,
// with the same stacks; later calls leave out the goroutines that stayed
// parked, report those that ended as gone (the pointers returned before)
// and add the new ones.
func TestWatcher(t *testing.T) {
	ctx := context.Background()
	p, s := openParked(t, 60)
	w, err := p.Watch()
	if err != nil {
		t.Fatal(err)
	}
	gone, added, err := w.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 0 {
		t.Errorf("first Changes: %d gone, want 0", len(gone))
	}
	snap, err := p.GoroutineStacks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	set := map[uint64]*lineage.Goroutine{}
	for _, g := range added {
		if set[g.ID] != nil {
			t.Errorf("goroutine %d added twice", g.ID)
		}
		set[g.ID] = g
	}
	for i := 1; i < len(added); i++ {
		if added[i-1].ID >= added[i].ID {
			t.Errorf("added not in ID order: %d before %d", added[i-1].ID, added[i].ID)
		}
	}
	parked := map[uint64]bool{}
	for _, g := range snap.Goroutines {
		if g.State != lineage.StateWaiting || g.Start.Function != "fpsafe.dev/misc/lineage_test.deep" {
			continue
		}
		parked[g.ID] = true
		wg := set[g.ID]
		if wg == nil {
			t.Errorf("goroutine %d (parked in deep) not added", g.ID)
			continue
		}
		if !reflect.DeepEqual(wg.Stack, g.Stack) || wg.Start != g.Start || wg.CreatedBy != g.CreatedBy || !reflect.DeepEqual(wg.Labels, g.Labels) {
			t.Errorf("goroutine %d: the Watcher's reading differs from GoroutineStacks':\n%+v\n%+v", g.ID, wg, g)
		}
	}
	if len(parked) < 10 {
		t.Fatalf("%d goroutines parked in deep, want 10", len(parked))
	}

	// Nothing parked changed: none of them is read again.
	gone, added, err = w.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range append(gone, added...) {
		if parked[g.ID] {
			t.Errorf("goroutine %d stayed parked, but the second Changes returned it", g.ID)
		}
	}

	// The parked goroutines end, and new ones start.
	s.stop()
	more := startParked(12)
	defer more.stop()
	waitParked(t)
	gone, added, err = w.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, g := range gone {
		if parked[g.ID] {
			ended++
			if set[g.ID] != g {
				t.Errorf("goroutine %d gone, but not as the first Changes returned it", g.ID)
			}
		}
	}
	if ended != len(parked) {
		t.Errorf("%d of the %d ended goroutines gone", ended, len(parked))
	}
	fresh := 0
	for _, g := range added {
		if set[g.ID] == nil && g.Start.Function == "fpsafe.dev/misc/lineage_test.deep" && g.State == lineage.StateWaiting {
			fresh++
			if len(lineage.DumpFrames(g.Stack)) < 20 || g.StackErr != nil {
				t.Errorf("new goroutine %d: stack %v (%v)", g.ID, g.Stack, g.StackErr)
			}
		}
	}
	if fresh != 2 {
		t.Errorf("%d new goroutines parked in deep added, want 2", fresh)
	}
}

// Watch of a closed Process fails with ErrClosed (TestCore: of a core,
// with an error).
func TestWatchClosed(t *testing.T) {
	p, err := lineage.OpenPID(context.Background(), os.Getpid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := p.Watch(); !errors.Is(err, lineage.ErrClosed) {
		t.Errorf("Watch after Close: %v, want ErrClosed", err)
	}
}
