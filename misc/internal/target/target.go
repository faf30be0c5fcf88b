// Package target gives uniform access to the threads and memory of a stopped
// live process (through ptrace) or of a core file.
package target

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Regs are the registers an unwinder needs. TLS is the thread pointer (FS
// base on amd64, TPIDR_EL0 on arm64).
type Regs struct {
	PC, SP, FP, LR, TLS uint64
}

// Thread is one thread of the target at the moment it was stopped.
type Thread struct {
	TID   int
	Regs  Regs
	State string // kernel scheduling state ("R", "S", "D", ...) if known
}

// Mem reads the target's memory.
type Mem interface {
	ReadAt(p []byte, addr uint64) error
}

// ErrGone reports that the process or thread exited while being read.
var ErrGone = errors.New("process or thread exited")

// FaultError is returned for unreadable target memory.
type FaultError struct {
	Addr uint64
	Len  int
	Err  error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("cannot read %d bytes at %#x: %v", e.Len, e.Addr, e.Err)
}

func (e *FaultError) Unwrap() error { return e.Err }

// VecMem is a Mem that reads several ranges in one call (process_vm_readv
// with one iovec per range). The ranges are read in order, but no order
// is promised between the bytes of one range; a reader that needs an
// order puts the reads in separate calls.
type VecMem interface {
	Mem
	// ReadV reads bufs[i] at addrs[i] for every i and sets errs[i] (nil if
	// bufs[i] was filled).
	ReadV(bufs [][]byte, addrs []uint64, errs []error)
}

// ReadV reads the ranges with m.ReadV, or one by one.
func ReadV(m Mem, bufs [][]byte, addrs []uint64, errs []error) {
	if vm, ok := m.(VecMem); ok {
		vm.ReadV(bufs, addrs, errs)
		return
	}
	for i := range bufs {
		errs[i] = m.ReadAt(bufs[i], addrs[i])
	}
}

// A WordMem is a Mem that reads a word without a buffer: a walk reads a
// stack word by word, and a buffer passed through the Mem interface is a
// heap allocation per word.
type WordMem interface {
	Mem
	Word(addr uint64) (uint64, error)
}

// Word reads a little-endian 64-bit word.
func Word(m Mem, addr uint64) (uint64, error) {
	if wm, ok := m.(WordMem); ok {
		return wm.Word(addr)
	}
	var b [8]byte
	if err := m.ReadAt(b[:], addr); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// CachedMem wraps a Mem with a page cache. It is valid only while the target
// stays stopped (or for a core file).
type CachedMem struct {
	M     Mem
	pages map[uint64][]byte
}

const pageSize = 4096

func NewCachedMem(m Mem) *CachedMem { return &CachedMem{M: m, pages: map[uint64][]byte{}} }

func (c *CachedMem) ReadAt(p []byte, addr uint64) error {
	for len(p) > 0 {
		base := addr &^ (pageSize - 1)
		pg, ok := c.pages[base]
		if !ok {
			buf := make([]byte, pageSize)
			if err := c.M.ReadAt(buf, base); err != nil {
				// The page may be partly unmapped: fall back to a direct read.
				c.pages[base] = nil
				return c.M.ReadAt(p, addr)
			}
			c.pages[base], pg = buf, buf
		}
		if pg == nil {
			return c.M.ReadAt(p, addr)
		}
		n := copy(p, pg[addr-base:])
		p, addr = p[n:], addr+uint64(n)
	}
	return nil
}
