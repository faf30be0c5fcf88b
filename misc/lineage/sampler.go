package lineage

import (
	"context"
	"sort"

	"fpsafe.dev/misc/internal/lineageabi"
)

// Region is a thread of the target and the goroutine it runs.
type Region struct {
	TID int
	// Goroutine is the thread's current goroutine, with its lineage (ID,
	// Parent, Start, CreatedBy, Ancestors; no state or stack); nil if
	// the thread runs none, or its record kept changing while read.
	Goroutine *Goroutine
}

// Regions reads every thread's current goroutine, by thread id.
func (p *Process) Regions(ctx context.Context) ([]Region, error) {
	v, err := p.view(ctx)
	if err != nil {
		return nil, p.publicError(err)
	}
	tids := v.Threads()
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	out := make([]Region, 0, len(tids))
	for _, tid := range tids {
		r := Region{TID: int(tid)}
		if rec, err := v.Thread(tid); err == nil && rec != nil {
			r.Goroutine = p.fromRecord(rec)
		}
		out = append(out, r)
	}
	return out, nil
}

// Sampler is the cheap re-read for a sampling profiler: Current reads one
// thread's region and the record it points to (two or three reads of a
// few hundred bytes), nothing else. Refresh re-reads the region registry
// to see threads started since.
type Sampler struct {
	p *Process
	v *lineageabi.View
}

// NewSampler reads the region registry once.
func (p *Process) NewSampler() (*Sampler, error) {
	s := &Sampler{p: p}
	return s, s.Refresh()
}

// Refresh re-reads the region registry.
func (s *Sampler) Refresh() error {
	v, err := s.p.view(context.Background())
	if err != nil {
		return s.p.publicError(err)
	}
	s.v = v
	return nil
}

// Current returns the lineage of the goroutine thread tid runs now (ID,
// Parent, Start, CreatedBy, Ancestors), nil if it runs none or has no
// region (started since the last Refresh).
func (s *Sampler) Current(tid int) (*Goroutine, error) {
	if s.p.closed.Load() {
		return nil, ErrClosed
	}
	rec, err := s.v.Thread(uint64(tid))
	if err != nil || rec == nil {
		return nil, s.p.publicError(err)
	}
	return s.p.fromRecord(rec), nil
}
