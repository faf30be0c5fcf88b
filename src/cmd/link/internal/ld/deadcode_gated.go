// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Gated runtime hooks: runtime code linked only into programs that can
// read what it records.
//
// The runtime records heap profile samples in every program, but only a
// program that calls runtime.memProfileInternal (through runtime.MemProfile
// or runtime/pprof) can read them; without it the linker already sets
// runtime.disableMemoryProfiling, and the recording code, reached from
// mallocgc, is linked but never runs. Likewise the goroutine profile's
// frame-pointer path is useful only if runtime.goroutineProfileWithLabels
// is linked.
//
// The runtime reaches such code through a gated hook: a variable of
// function values, initialized statically, that it calls through and
// checks for nil. Deadcode does not follow the hook's relocations until
// its gate function is reachable. If the gate stays unreachable, the
// hook's relocations are dropped, so that its functions are nil and
// everything only they reach is left out. Dynamically linked programs,
// which may gain a reader at run time, keep every hook.

package ld

import "cmd/link/internal/loader"

// gatedHooks pairs each runtime hook variable with the functions whose
// reachability opens it: any one of them.
var gatedHooks = []struct {
	hook  string
	gates []string
}{
	{"runtime.memProfHooks", []string{"runtime.memProfileInternal"}},
	{"runtime.goroutineProfHooks", []string{"runtime.goroutineProfileWithLabels"}},
	// The frame-pointer profilers' scratch space, and GODEBUG=fpunwindcheck,
	// which checks the unwinds of records the program can read: heap,
	// goroutine, block and mutex profiles, and traces.
	{"runtime.fpProfHooks", []string{
		"runtime.memProfileInternal",
		"runtime.goroutineProfileWithLabels",
		"runtime.blockProfileInternal",
		"runtime.mutexProfileInternal",
		"runtime.StartTrace",
	}},
}

type gatedHook struct {
	hook  loader.Sym
	gates []loader.Sym
	open  bool
}

// initGates looks the hooks and their gates up. A hook one of whose gates
// does not exist stays open: nothing could tell whether it is needed.
func (d *deadcodePass) initGates() {
	if d.ctxt.DynlinkingGo() {
		return
	}
	for _, g := range gatedHooks {
		hook := d.ldr.Lookup(g.hook, 0)
		if hook == 0 {
			continue
		}
		h := gatedHook{hook: hook}
		for _, name := range g.gates {
			gate := d.ldr.Lookup(name, abiInternalVer)
			if gate == 0 {
				h.gates = nil // open
				break
			}
			h.gates = append(h.gates, gate)
		}
		if h.gates != nil {
			d.gated = append(d.gated, h)
		}
	}
}

// gateClosed reports whether s is a hook whose gate is not reachable yet,
// whose relocations flood must not follow.
func (d *deadcodePass) gateClosed(s loader.Sym) bool {
	for _, g := range d.gated {
		if g.hook == s && !g.open {
			return true
		}
	}
	return false
}

// openGates opens the hooks whose gates have become reachable and queues
// again those flood already visited. It reports whether it queued any.
func (d *deadcodePass) openGates() bool {
	queued := false
	for i := range d.gated {
		g := &d.gated[i]
		if g.open || !d.anyReachable(g.gates) {
			continue
		}
		g.open = true
		if d.ldr.AttrReachable(g.hook) {
			d.wq.push(g.hook)
			queued = true
		}
	}
	return queued
}

func (d *deadcodePass) anyReachable(syms []loader.Sym) bool {
	for _, s := range syms {
		if d.ldr.AttrReachable(s) {
			return true
		}
	}
	return false
}

// closeGates drops the relocations of the reachable hooks whose gates
// stayed unreachable: their function values are nil.
func (d *deadcodePass) closeGates() {
	for _, g := range d.gated {
		if g.open || !d.ldr.AttrReachable(g.hook) {
			continue
		}
		if d.ctxt.Debugvlog > 1 {
			d.ctxt.Logf("deadcode: %s closed\n", d.ldr.SymName(g.hook))
		}
		su := d.ldr.MakeSymbolUpdater(g.hook)
		su.ResetRelocs()
	}
}
