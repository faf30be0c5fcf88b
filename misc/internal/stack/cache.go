package stack

import (
	"sync"
	"sync/atomic"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/sframe"
)

// A walk asks the same few questions of every PC it meets: the SFrame rule
// there, and whether the function is a root or a signal trampoline. Each
// answer is a pclntab or table search; the walks of thousands of goroutines
// parked at the same places ask them of the same PCs, so the answers are
// kept per binary (binary-relative PC), for as long as the binary is. A
// small direct-mapped table in front of the maps answers a repeated
// question with one atomic load, without the lock: a snapshot of 10,000
// goroutines asks about 800,000 of them.

// pcFacts is what a walk asks of one PC.
type pcFacts struct {
	root, signal, sigreturn bool
}

type ruleResult struct {
	rule sframe.Rule
	err  error
}

type pcCache struct {
	mu    sync.Mutex
	facts map[uint64]pcFacts
	rules map[uint64]ruleResult

	factFront [frontSize]atomic.Pointer[factEntry]
	ruleFront [frontSize]atomic.Pointer[ruleEntry]
}

// frontSize is the number of slots of each front table (a power of 2).
const frontSize = 1 << 12

// Entries of the front tables, immutable once published.
type factEntry struct {
	pc uint64
	f  pcFacts
}

type ruleEntry struct {
	pc uint64
	r  ruleResult
}

// frontSlot is pc's slot in a front table.
func frontSlot(pc uint64) uint64 { return (pc * 0x9E3779B97F4A7C15) >> (64 - 12) }

// cacheKey is the key of a binary's pcCache (gobin.Binary.Attach).
type cacheKey struct{}

func cacheOf(bin *gobin.Binary) *pcCache {
	if l := lastCache.Load(); l != nil && l.bin == bin {
		return l.c
	}
	c := bin.Attach(cacheKey{}, func() any {
		return &pcCache{facts: map[uint64]pcFacts{}, rules: map[uint64]ruleResult{}}
	}).(*pcCache)
	lastCache.Store(&binCache{bin, c})
	return c
}

// lastCache is the last binary's cache: a walk asks for it at every frame,
// and Attach's map lookup cost a tenth of a walk.
var lastCache atomic.Pointer[binCache]

type binCache struct {
	bin *gobin.Binary
	c   *pcCache
}

// factsOf answers, for the binary-relative pc, whether it is in a root
// (isRootUncached), a signal trampoline (isSignalPCUncached), or the
// runtime's signal restorer.
func factsOf(bin *gobin.Binary, pc uint64) pcFacts {
	c := cacheOf(bin)
	slot := &c.factFront[frontSlot(pc)]
	if e := slot.Load(); e != nil && e.pc == pc {
		return e.f
	}
	f := c.factsSlow(bin, pc)
	slot.Store(&factEntry{pc, f})
	return f
}

func (c *pcCache) factsSlow(bin *gobin.Binary, pc uint64) pcFacts {
	c.mu.Lock()
	f, ok := c.facts[pc]
	c.mu.Unlock()
	if ok {
		return f
	}
	f = pcFacts{
		root:      isRootUncached(bin, pc),
		signal:    isSignalPCUncached(bin, pc),
		sigreturn: bin.Arch != "arm64" && bin.FuncNameIs(pc, sigreturn),
	}
	c.mu.Lock()
	c.facts[pc] = f
	c.mu.Unlock()
	return f
}

// ruleAt is tab.RuleAt(pc), cached.
func ruleAt(bin *gobin.Binary, tab *sframe.Section, pc uint64) (sframe.Rule, error) {
	c := cacheOf(bin)
	slot := &c.ruleFront[frontSlot(pc)]
	if e := slot.Load(); e != nil && e.pc == pc {
		return e.r.rule, e.r.err
	}
	c.mu.Lock()
	r, ok := c.rules[pc]
	c.mu.Unlock()
	if !ok {
		r.rule, r.err = tab.RuleAt(pc)
		c.mu.Lock()
		c.rules[pc] = r
		c.mu.Unlock()
	}
	slot.Store(&ruleEntry{pc, r})
	return r.rule, r.err
}
