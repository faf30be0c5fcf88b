// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package main

// LineageProfile is the acceptance program of GODEBUG lineageprofile (see
// runtime/lineage_profile.go): an acceptor starts connections, each
// connection starts crunchers (which burn CPU, allocate, contend a mutex)
// and exits, and a janitor does the same work beside them. It writes the
// cpu, allocs, block, mutex, goroutine and goroutinecreate profiles into
// the directory $LINEAGEPROF_DIR; the test reads them.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register("LineageProfile", LineageProfile)
}

const (
	lpConns     = 4
	lpCrunchers = 2 // per connection
)

var (
	lpSink    [][]byte
	lpSinkMu  sync.Mutex
	lpRelease = make(chan struct{})
	lpDone    sync.WaitGroup // crunchers and janitor finished their work
	lpBarrier sync.WaitGroup // they wait for each other: block profile events
	lpStop    time.Time
)

func LineageProfile() {
	runtime.MemProfileRate = 4 << 10
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	dir := os.Getenv("LINEAGEPROF_DIR")
	cpu, err := os.Create(filepath.Join(dir, "cpu.pb.gz"))
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	lpStop = time.Now().Add(1500 * time.Millisecond)
	lpDone.Add(lpConns*lpCrunchers + 1)
	lpBarrier.Add(lpConns*lpCrunchers + 1)
	go lpAcceptor()
	go lpJanitor()
	lpDone.Wait()
	pprof.StopCPUProfile()
	cpu.Close()

	// The crunchers and the janitor are parked on lpRelease now.
	for _, name := range []string{"allocs", "block", "mutex", "goroutine", "goroutinecreate"} {
		f, err := os.Create(filepath.Join(dir, name+".pb.gz"))
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		f.Close()
	}
	close(lpRelease)
	fmt.Println("OK")
}

// lpAcceptor starts the connections without arguments: a go statement
// with arguments allocates a closure for them in the acceptor, whose
// sample would charge the acceptor without lineageprofile too.
//
//go:noinline
func lpAcceptor() {
	for range lpConns {
		go lpConn()
	}
}

// lpConnNext numbers the connections.
var lpConnNext atomic.Int32

//go:noinline
func lpConn() {
	i := int(lpConnNext.Add(1) - 1)
	for j := 0; j < lpCrunchers; j++ {
		go lpCruncher(i*lpCrunchers + j)
	}
}

//go:noinline
func lpCruncher(seed int) {
	lpWork(seed)
	lpDone.Done()
	<-lpRelease
}

//go:noinline
func lpJanitor() {
	lpWork(-1)
	lpDone.Done()
	<-lpRelease
}

// lpWork burns CPU, allocates and contends lpSinkMu until lpStop.
//
//go:noinline
func lpWork(seed int) {
	x := uint64(seed)
	for time.Now().Before(lpStop) {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		b := make([]byte, 1024+x%1024)
		lpSinkMu.Lock()
		lpSink = append(lpSink, b)
		if len(lpSink) > 64 {
			lpSink = lpSink[:0]
		}
		lpSinkMu.Unlock()
	}
	// Hold the mutex while the others want it (mutex profile events),
	// then wait for them all (block profile events).
	lpSinkMu.Lock()
	time.Sleep(2 * time.Millisecond)
	lpSinkMu.Unlock()
	lpBarrier.Done()
	lpBarrier.Wait()
}
