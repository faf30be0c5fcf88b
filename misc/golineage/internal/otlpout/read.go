package otlpout

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// ReadProcess is one resource of OTLP profiles, read back: what a
// receiver of the agent's profiles sees of one process.
type ReadProcess struct {
	Resource map[string]any // the resource attributes
	Samples  []ReadSample   // of every profile of the resource
	Profiles int
}

// ReadSample is one sample: its frames' function names, innermost first
// (the lines of an inlined call each), its value, its profile's sample
// type ("samples" on CPU, "off_cpu" for parked goroutines) and its
// attributes.
type ReadSample struct {
	Funcs []string
	Value int64
	Type  string
	Attrs map[string]any
}

// Read resolves the dictionary references of pd, for tests and for tools
// that check what a Collector received. It fails on an index out of its
// table.
func Read(pd pprofile.Profiles) ([]ReadProcess, error) {
	d := pd.Dictionary()
	strs := d.StringTable()
	str := func(i int32) (string, error) {
		if i < 0 || int(i) >= strs.Len() {
			return "", fmt.Errorf("string index %d of %d", i, strs.Len())
		}
		return strs.At(int(i)), nil
	}
	attrs := func(idx pcommon.Int32Slice) (map[string]any, error) {
		m := map[string]any{}
		for _, i := range idx.All() {
			if i < 0 || int(i) >= d.AttributeTable().Len() {
				return nil, fmt.Errorf("attribute index %d of %d", i, d.AttributeTable().Len())
			}
			a := d.AttributeTable().At(int(i))
			k, err := str(a.KeyStrindex())
			if err != nil {
				return nil, err
			}
			m[k] = a.Value().AsRaw()
		}
		return m, nil
	}
	var out []ReadProcess
	for _, rp := range pd.ResourceProfiles().All() {
		p := ReadProcess{Resource: rp.Resource().Attributes().AsRaw()}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				p.Profiles++
				typ, err := str(prof.SampleType().TypeStrindex())
				if err != nil {
					return nil, err
				}
				for _, s := range prof.Samples().All() {
					si := s.StackIndex()
					if si < 0 || int(si) >= d.StackTable().Len() {
						return nil, fmt.Errorf("stack index %d of %d", si, d.StackTable().Len())
					}
					rs := ReadSample{Type: typ}
					for _, li := range d.StackTable().At(int(si)).LocationIndices().All() {
						if li < 0 || int(li) >= d.LocationTable().Len() {
							return nil, fmt.Errorf("location index %d of %d", li, d.LocationTable().Len())
						}
						for _, ln := range d.LocationTable().At(int(li)).Lines().All() {
							fi := ln.FunctionIndex()
							if fi < 0 || int(fi) >= d.FunctionTable().Len() {
								return nil, fmt.Errorf("function index %d of %d", fi, d.FunctionTable().Len())
							}
							name, err := str(d.FunctionTable().At(int(fi)).NameStrindex())
							if err != nil {
								return nil, err
							}
							rs.Funcs = append(rs.Funcs, name)
						}
					}
					if s.Values().Len() > 0 {
						rs.Value = s.Values().At(0)
					}
					var err error
					if rs.Attrs, err = attrs(s.AttributeIndices()); err != nil {
						return nil, err
					}
					p.Samples = append(p.Samples, rs)
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}
