package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

//go:noinline
func exampleWorker(done <-chan struct{}) { <-done }

// Example_stacks runs ps -stacks on this test's own process and prints
// what it lists for two goroutines blocked in exampleWorker: each as the
// program's own dump would print it. Goroutine IDs and directories, which
// differ from run to run and machine to machine, are left out.
func Example_stacks() {
	done := make(chan struct{})
	defer close(done)
	for range 2 {
		go exampleWorker(done)
	}
	// In a test binary, package main is named by its import path.
	const worker = "fpsafe.dev/misc/lineage/example/ps.exampleWorker"
	var out bytes.Buffer
	for try := 0; try < 100; try++ { // until both have blocked
		out.Reset()
		if err := ps(&out, io.Discard, os.Getpid(), true, false, false); err != nil {
			fmt.Println(err)
			return
		}
		if strings.Count(out.String(), "[chan receive]:\n"+worker+"\n") == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ids := regexp.MustCompile(`goroutine \d+`)
	paths := regexp.MustCompile(`\t(\S+):`)
	for _, g := range strings.Split(out.String(), "\n\n") {
		if !strings.Contains(g, "\n"+worker+"\n") {
			continue
		}
		g = ids.ReplaceAllString(g, "goroutine N")
		g = paths.ReplaceAllStringFunc(g, func(s string) string { return "\t" + filepath.Base(s[1:]) })
		fmt.Println(g)
	}
	// Output:
	// goroutine N [chan receive]:
	// fpsafe.dev/misc/lineage/example/ps.exampleWorker
	// 	example_test.go:15
	// created by fpsafe.dev/misc/lineage/example/ps.Example_stacks in goroutine N
	// 	example_test.go:25
	// goroutine N [chan receive]:
	// fpsafe.dev/misc/lineage/example/ps.exampleWorker
	// 	example_test.go:15
	// created by fpsafe.dev/misc/lineage/example/ps.Example_stacks in goroutine N
	// 	example_test.go:25
}
