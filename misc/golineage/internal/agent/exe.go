package agent

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"fpsafe.dev/misc/golineage/internal/pprofout"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
)

// exe is an executable file, opened once for all the processes that run
// it (bin, abi and the build IDs are set while it is open), or a verdict on one
// that is not profiled.
type exe struct {
	key                   exeKey
	kind                  exeKind
	bin                   *gobin.Binary
	abi                   *lineageabi.ABI // nil for a Go program built without the ABI
	gnuBuildID, goBuildID string
	refs                  int  // 0 for a verdict
	verdict               bool // not profiled: only key and kind are set
}

type exeKind int

const (
	notGo    exeKind = iota // not a Go program
	upstream                // a Go program without the lineage ABI
	withABI                 // a Go program with the lineage ABI
)

// exeKey names a file: its device and inode, and its change time, so that
// a file replaced by another with a reused inode is not mistaken for it.
type exeKey struct {
	dev, ino  uint64
	ctimeSec  int64
	ctimeNsec int64
}

// exeCache holds the executables of the targets, and the verdicts on the
// files that are not to be profiled (not Go, or without the ABI), so that
// processes that exec them over and over cost a stat each.
//
// The sampling loop opens and releases executables; the off-CPU reader
// (parkedReader) holds references of its own and releases them from its
// goroutine: mu guards the maps and the counts.
type exeCache struct {
	mu       sync.Mutex
	open_    map[exeKey]*exe
	verdicts map[exeKey]*exe // bin closed: a file not to profile
	upstream bool            // Go programs without the ABI are profiled
}

// maxVerdicts bounds the verdicts kept: past it they are forgotten.
const maxVerdicts = 1 << 14

func newExeCache(upstream bool) *exeCache {
	return &exeCache{open_: map[exeKey]*exe{}, verdicts: map[exeKey]*exe{}, upstream: upstream}
}

// errKernelThread is open's error for a process without an executable.
var errKernelThread = errors.New("a kernel thread")

// open returns the executable of process pid, with a reference that
// release drops. The file is read through /proc/PID/exe, which reaches it
// in the process's own mount namespace.
func (c *exeCache) open(pid int) (*exe, error) {
	path := fmt.Sprintf("/proc/%d/exe", pid)
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				return nil, errKernelThread
			}
		}
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%s: no file identity", path)
	}
	key := exeKey{dev: st.Dev, ino: st.Ino, ctimeSec: st.Ctim.Sec, ctimeNsec: st.Ctim.Nsec}
	c.mu.Lock()
	defer c.mu.Unlock()
	if x := c.verdicts[key]; x != nil {
		return x, nil
	}
	if x := c.open_[key]; x != nil {
		x.refs++
		return x, nil
	}
	x := &exe{key: key, refs: 1, kind: withABI}
	bin, err := gobin.OpenMapped(path)
	if errors.Is(err, gobin.ErrNotGo) {
		x.kind = notGo
		c.verdict(x)
		return x, nil
	}
	if err != nil {
		return nil, err
	}
	abi, err := lineageabi.Find(bin.ELF)
	if err != nil && !errors.Is(err, lineageabi.ErrNoABI) {
		bin.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if abi == nil {
		x.kind = upstream
		if !c.upstream {
			bin.Close()
			c.verdict(x)
			return x, nil
		}
	}
	if name, err := os.Readlink(path); err == nil {
		bin.Path = name
	}
	// The agent walks stacks only from the BPF program's samples (the
	// kernel's frame-pointer walk, repaired at the innermost frame) and
	// from parked goroutines' saved registers, by frame pointers: it
	// needs no SFrame table.
	stack.WithoutTable(bin)
	x.bin, x.abi = bin, abi
	x.gnuBuildID, x.goBuildID = pprofout.BuildIDs(bin.ELF)
	c.open_[key] = x
	return x, nil
}

func (c *exeCache) verdict(x *exe) {
	if len(c.verdicts) >= maxVerdicts {
		clear(c.verdicts)
	}
	x.refs, x.verdict = 0, true
	c.verdicts[x.key] = x
}

// retain adds a reference to x, an open executable.
func (c *exeCache) retain(x *exe) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x.refs++
}

// release drops a reference to x, and closes its file after the last.
func (c *exeCache) release(x *exe) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if x.verdict {
		return
	}
	if x.refs--; x.refs == 0 {
		x.bin.Close()
		delete(c.open_, x.key)
	}
}

// len returns how many executables are open.
func (c *exeCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open_)
}

// releasePages lets the pages of the open executables' mappings go from
// the agent's resident set (gobin.Binary.ReleaseMapped).
func (c *exeCache) releasePages() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.open_ {
		x.bin.ReleaseMapped()
	}
}
