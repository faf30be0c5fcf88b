package pprofout

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"fpsafe.dev/misc/internal/gobin/gobintest"
	"fpsafe.dev/misc/internal/lineageabi"
)

// TestAggregate: identical samples are kept once with their count, and
// every output weighs them by it.
func TestAggregate(t *testing.T) {
	bin := gobintest.OpenSelf(t)
	pcs := make([]uintptr, 16)
	pcs = pcs[:runtime.Callers(1, pcs)]
	var stk []uint64
	for _, pc := range pcs {
		stk = append(stk, uint64(pc))
	}
	b := New(bin, 0, 10*time.Millisecond)
	parked := Sample{Goid: 7, PCs: stk, State: "chan receive"}
	for range 3 {
		b.Add(parked)
	}
	b.Add(Sample{Goid: 7, PCs: stk, State: "select"}) // another state
	b.Add(Sample{Goid: 8, PCs: stk[1:]})              // another goroutine and stack
	// A sample kept from tick to tick, equal to the first: counted with it.
	kept := parked
	b.AddShared(&kept)
	b.AddShared(&kept)
	if b.Len() != 7 {
		t.Errorf("Len = %d, want 7", b.Len())
	}
	p := b.Profile()
	if len(p.Sample) != 3 {
		t.Fatalf("%d pprof samples, want 3", len(p.Sample))
	}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
		if s.Value[1] != s.Value[0]*int64(10*time.Millisecond) {
			t.Errorf("sample %v: wall %d for %d samples", s.Label, s.Value[1], s.Value[0])
		}
		if st := s.Label["state"]; len(st) == 1 && st[0] == "chan receive" && s.Value[0] != 5 {
			t.Errorf("the parked goroutine's sample counts %d, want 5", s.Value[0])
		}
	}
	if len(p.Mapping) != 1 || p.Mapping[0].File != bin.Path || p.Mapping[0].BuildID == "" {
		t.Errorf("mappings %v, want the executable's, with its path and build ID (pprof names the main binary by it)", p.Mapping)
	}
	if err := p.CheckValid(); err != nil {
		t.Errorf("profile not valid: %v", err)
	}
	if total != 7 {
		t.Errorf("pprof samples add up to %d, want 7", total)
	}
	var folded bytes.Buffer
	if err := b.WriteFolded(&folded); err != nil {
		t.Fatal(err)
	}
	var sum int
	for _, l := range strings.Split(strings.TrimSpace(folded.String()), "\n") {
		var n int
		f := strings.Fields(l)
		for _, c := range f[len(f)-1] {
			n = n*10 + int(c-'0')
		}
		sum += n
	}
	if sum != 7 || !strings.Contains(folded.String(), "TestAggregate 6\n") {
		t.Errorf("folded counts add up to %d, want 7, with 6 on the full stack:\n%s", sum, folded.String())
	}
}

// TestSampleTypes: an on-CPU profile is typed as Go's CPU profiles are,
// a wall-clock one as wall time.
func TestSampleTypes(t *testing.T) {
	bin := gobintest.OpenSelf(t)
	for _, wall := range []bool{false, true} {
		b := New(bin, 0, 10*time.Millisecond)
		b.Wall = wall
		b.Add(Sample{Goid: 1, PCs: []uint64{0x1000}})
		p := b.Profile()
		want := "cpu"
		if wall {
			want = "wall"
		}
		if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" || p.SampleType[0].Unit != "count" ||
			p.SampleType[1].Type != want || p.SampleType[1].Unit != "nanoseconds" || p.PeriodType.Type != want {
			t.Errorf("Wall=%v: sample types %v, period type %v; want samples/count, %s/nanoseconds", wall, p.SampleType, p.PeriodType, want)
		}
	}
}

// TestOffCPULabels: an off-CPU profile is typed off_cpu/nanoseconds, its
// default; samples that differ only in their pprof labels stay apart, and
// the labels become the pprof sample's string labels beside its state.
func TestOffCPULabels(t *testing.T) {
	b := New(gobintest.OpenSelf(t), 0, time.Second)
	b.OffCPU = true
	lab := func(v string) []lineageabi.Label { return []lineageabi.Label{{Key: "pool", Value: v}} }
	b.AddSharedN(&Sample{PCs: []uint64{0x1000}, State: "chan receive", Labels: lab("a")}, 2, 3*time.Second)
	b.AddSharedN(&Sample{PCs: []uint64{0x1000}, State: "chan receive", Labels: lab("b")}, 1, time.Second)
	b.AddSharedN(&Sample{PCs: []uint64{0x1000}, State: "chan receive", Labels: lab("a")}, 1, time.Second)
	p := b.Profile()
	if p.DefaultSampleType != "off_cpu" || p.SampleType[1].Type != "off_cpu" || p.PeriodType.Type != "off_cpu" {
		t.Errorf("types %v %v, default %q", p.SampleType, p.PeriodType, p.DefaultSampleType)
	}
	got := map[string][]int64{}
	for _, s := range p.Sample {
		if len(s.Label["state"]) != 1 || s.Label["state"][0] != "chan receive" || len(s.Label["pool"]) != 1 {
			t.Fatalf("sample labels %v", s.Label)
		}
		got[s.Label["pool"][0]] = s.Value
	}
	if len(got) != 2 || got["a"][0] != 3 || got["a"][1] != int64(4*time.Second) || got["b"][0] != 1 {
		t.Errorf("samples by pool label %v; want a: 3 for 4s, b: 1", got)
	}
}

// TestSharedAcrossBuilders: a shared sample added to one builder, then to
// the next (a parked goroutine's, from interval to interval), is counted in
// each, and the next does not keep the previous alive through it.
func TestSharedAcrossBuilders(t *testing.T) {
	bin := gobintest.OpenSelf(t)
	s := &Sample{Goid: 1, PCs: []uint64{0x1000}}
	b1 := New(bin, 0, time.Millisecond)
	b1.AddShared(s)
	b2 := New(bin, 0, time.Millisecond)
	b2.AddShared(s)
	b2.AddShared(s)
	if b1.Len() != 1 || b2.Len() != 2 {
		t.Errorf("counts %d and %d, want 1 and 2", b1.Len(), b2.Len())
	}
	for i, kept := range b2.samples {
		if kept.owner != nil {
			t.Errorf("the second builder's sample %d holds a builder (%p; the first is %p)", i, kept.owner, b1)
		}
	}
}

// TestTickWeight: a sample stands for the time its tick covered.
func TestTickWeight(t *testing.T) {
	b := New(gobintest.OpenSelf(t), 0, 10*time.Millisecond)
	s := Sample{Goid: 1, PCs: []uint64{0x1000}}
	b.Add(s) // on time: the period
	b.SetTickWeight(35 * time.Millisecond)
	b.Add(s) // a late tick
	kept := Sample{Goid: 2, PCs: []uint64{0x2000}}
	b.AddShared(&kept)
	b.AddSharedN(&kept, 2, 20*time.Millisecond)
	vals := map[uint64][]int64{}
	for _, ps := range b.Profile().Sample {
		vals[uint64(ps.NumLabel["goroutine"][0])] = ps.Value
	}
	if v := vals[1]; len(v) != 2 || v[0] != 2 || v[1] != int64(45*time.Millisecond) {
		t.Errorf("goroutine 1: %v, want 2 samples for 45ms", v)
	}
	if v := vals[2]; len(v) != 2 || v[0] != 3 || v[1] != int64(55*time.Millisecond) {
		t.Errorf("goroutine 2: %v, want 3 samples for 55ms", v)
	}
}
