package lineage_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"fpsafe.dev/misc/lineage"
)

var exampleDone = make(chan struct{})

// exampleWorker waits until the example ends.
func exampleWorker() { <-exampleDone }

// This example reads the goroutines of the running program itself (a test
// built by the fork's toolchain) and finds one it started.
func Example() {
	go exampleWorker()
	defer close(exampleDone)
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, os.Getpid(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	for try := 0; try < 100; try++ { // until the worker has blocked
		snap, err := p.Goroutines(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, g := range snap.Goroutines {
			if g.Start.Function != "fpsafe.dev/misc/lineage_test.exampleWorker" || g.State != "waiting" {
				continue
			}
			fmt.Println("start:", g.Start.Function)
			fmt.Println("created by:", g.CreatedBy.Function)
			fmt.Println("state:", g.State, g.WaitReason, g.Wait.Kind)
			frames, err := p.Stack(ctx, g)
			if err != nil {
				fmt.Println(err)
				return
			}
			for _, f := range frames {
				if f.Function == g.Start.Function {
					fmt.Println("its stack has", f.Function)
				}
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("worker not found")
	// Output:
	// start: fpsafe.dev/misc/lineage_test.exampleWorker
	// created by: fpsafe.dev/misc/lineage_test.Example
	// state: waiting chan receive chan
	// its stack has fpsafe.dev/misc/lineage_test.exampleWorker
}
