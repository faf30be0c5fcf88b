// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package pprof

import (
	"context"
	"internal/runtime/pprof/label"
	"runtime"
	"runtime/testdata/lineageabi"
	"testing"
	"unsafe"
)

// The lineage ABI publishes where a goroutine keeps its labels
// (doc/lineage-abi.md, "Labels"): g.labels points at this package's
// labelMap. The published offsets must be those of the real types, and a
// reader must find a labeled goroutine's labels through them.
func TestLineageLabelsABI(t *testing.T) {
	// Reading the executable leaves megabytes of garbage. Collect it
	// here: upstream's TestMemoryProfiler, which runs next, counts 32
	// allocations as one stack, and a GC cycle started by our garbage
	// while they run sends some through the size-specialized malloc's
	// slow path, whose stack has one more frame.
	t.Cleanup(runtime.GC)
	hdr, err := lineageabi.FindInExecutable()
	if err != nil {
		t.Fatal(err)
	}
	h := uintptr(hdr)
	u := func(off uintptr) uintptr { return uintptr(lineageabi.P32(h + off)) }
	if lineageabi.P32(h+lineageabi.OffFlags)&(1<<4) == 0 {
		t.Skip("lineage registry off (GODEBUG lineage=0)")
	}
	var m labelMap
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"labelMap's label.Set", unsafe.Offsetof(m.Set), 0},
		{"off_labels_list", u(lineageabi.OffLabelsList), unsafe.Offsetof(m.Set.List)},
		{"label_size", u(lineageabi.OffLabelSize), unsafe.Sizeof(label.Label{})},
		{"off_label_key", u(lineageabi.OffLabelKey), unsafe.Offsetof(label.Label{}.Key)},
		{"off_label_value", u(lineageabi.OffLabelValue), unsafe.Offsetof(label.Label{}.Value)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if u(lineageabi.OffGLabels) == 0 {
		t.Errorf("off_g_labels is 0")
	}

	started, release := make(chan bool), make(chan bool)
	Do(context.Background(), Labels("lineage-abi-test", "parked", "second", "label"), func(context.Context) {
		go func() {
			started <- true
			<-release
		}()
	})
	<-started
	defer close(release)

	str := func(a uintptr) string {
		p, n := uintptr(lineageabi.P64(a)), int(lineageabi.P64(a+8))
		return string(lineageabi.Bytes(p, n))
	}
	var found []map[string]string
	for b := uintptr(lineageabi.P64(h + lineageabi.OffBlocks)); b != 0; b = uintptr(lineageabi.P64(b + u(lineageabi.OffBlockNext))) {
		used := uintptr(lineageabi.P32(b + u(lineageabi.OffBlockUsed)))
		for i := uintptr(0); i < used; i++ {
			rec := b + u(lineageabi.OffBlockHdrSize) + i*u(lineageabi.OffRecordSize)
			gp := uintptr(lineageabi.P64(rec + u(lineageabi.OffRecG)))
			lm := uintptr(lineageabi.P64(gp + u(lineageabi.OffGLabels)))
			if lm == 0 {
				continue
			}
			list := lm + u(lineageabi.OffLabelsList)
			p, n := uintptr(lineageabi.P64(list)), int(lineageabi.P64(list+8))
			labels := map[string]string{}
			for j := 0; j < n; j++ {
				l := p + uintptr(j)*u(lineageabi.OffLabelSize)
				labels[str(l+u(lineageabi.OffLabelKey))] = str(l + u(lineageabi.OffLabelValue))
			}
			if _, ok := labels["lineage-abi-test"]; ok {
				found = append(found, labels)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("found %d goroutines labeled by the test, want 1: %v", len(found), found)
	}
	if l := found[0]; len(l) != 2 || l["lineage-abi-test"] != "parked" || l["second"] != "label" {
		t.Errorf("labels %v, want lineage-abi-test:parked second:label", l)
	}
}
