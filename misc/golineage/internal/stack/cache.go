package stack

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/sframe"
)

// A walk asks the same few questions of every PC it meets: the SFrame rule
// there, and whether the function is a root or a signal trampoline. Each
// answer is a pclntab or table search; the walks of thousands of goroutines
// parked at the same places ask them of the same PCs, so the answers are
// kept per binary (binary-relative PC), for as long as the binary is.

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
}

var pcCaches sync.Map // weak.Pointer[gobin.Binary] -> *pcCache

// lastCache is the cache last asked for (a weak pointer costs more to make
// than the question it would answer).
var lastCache atomic.Pointer[binCache]

type binCache struct {
	bin *gobin.Binary
	c   *pcCache
}

func cacheOf(bin *gobin.Binary) *pcCache {
	if l := lastCache.Load(); l != nil && l.bin == bin {
		return l.c
	}
	c := cacheOfSlow(bin)
	lastCache.Store(&binCache{bin, c})
	return c
}

func cacheOfSlow(bin *gobin.Binary) *pcCache {
	key := weak.Make(bin)
	if v, ok := pcCaches.Load(key); ok {
		return v.(*pcCache)
	}
	c := &pcCache{facts: map[uint64]pcFacts{}, rules: map[uint64]ruleResult{}}
	if v, loaded := pcCaches.LoadOrStore(key, c); loaded {
		return v.(*pcCache)
	}
	runtime.AddCleanup(bin, func(k weak.Pointer[gobin.Binary]) { pcCaches.Delete(k) }, key)
	return c
}

// factsOf answers, for the binary-relative pc, whether it is in a root
// (isRootUncached), a signal trampoline (isSignalPCUncached), or the
// runtime's signal restorer.
func factsOf(bin *gobin.Binary, pc uint64) pcFacts {
	c := cacheOf(bin)
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
	c.mu.Lock()
	r, ok := c.rules[pc]
	c.mu.Unlock()
	if !ok {
		r.rule, r.err = tab.RuleAt(pc)
		c.mu.Lock()
		c.rules[pc] = r
		c.mu.Unlock()
	}
	return r.rule, r.err
}
