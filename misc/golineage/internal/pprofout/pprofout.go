// Package pprofout turns stitched thread samples into a pprof profile or
// folded stacks. A goroutine's lineage goes below (callerward of) its root
// frame: first a "created by F" frame at the go statement, then the creation
// stack when the runtime recorded one, then the parent's own lineage, so a
// flame graph's base shows who started the work.
package pprofout

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/stack"
	"fpsafe.dev/misc/internal/target"
)

// Sample is one thread at one sampling instant.
type Sample struct {
	TID     int
	Goid    uint64
	PCs     []uint64 // PCs[0] exact, the rest return addresses
	Lineage []stack.Ancestor
	State   string // what a goroutine not on a thread was doing (wall profiles)
	// Labels are the goroutine's pprof labels (runtime/pprof.Do), in its
	// label set's order; they become the profile sample's string labels.
	Labels []lineageabi.Label

	// The builder that AddShared gave this sample to, and its index there.
	owner *Builder
	index int
}

// Builder accumulates samples. Identical samples (the same thread or
// goroutine, state, stack and lineage: a parked goroutine tick after tick)
// are kept once with a count, so that a wall-clock profile of thousands of
// goroutines grows with what changes, not with every tick.
type Builder struct {
	bin      *gobin.Binary
	bias     uint64
	period   time.Duration
	start    time.Time
	samples  []Sample
	counts   []int64        // how many times samples[i] was added
	nanos    []int64        // the time samples[i] stands for, summed
	weight   time.Duration  // what a sample added now stands for (SetTickWeight); 0: period
	index    map[string]int // sampleKey -> index in samples
	n        int            // samples added
	frames   map[frameKey][]stack.Loc
	Comments []string
	Title    string
	// Wall makes a wall-clock profile (samples/count, wall/nanoseconds:
	// every goroutine, running or not); otherwise the profile is an
	// on-CPU one, typed as Go's CPU profiles are (samples/count,
	// cpu/nanoseconds), so that pprof shows "Type: cpu".
	Wall bool
	// OffCPU makes an off-CPU profile (samples/count,
	// off_cpu/nanoseconds, the latter the default sample type): parked
	// goroutines, each sample standing for the time it was seen parked.
	OffCPU bool
	// VDSO, if set, names the frames in the target's vDSO (time.Now's
	// clock_gettime), which are in no file, and gives them a mapping.
	VDSO *target.VDSO
}

type frameKey struct {
	pc  uint64
	ret bool
}

// New returns a builder for samples taken every period.
func New(bin *gobin.Binary, bias uint64, period time.Duration) *Builder {
	return &Builder{bin: bin, bias: bias, period: period, start: time.Now(), frames: map[frameKey][]stack.Loc{}, index: map[string]int{}}
}

// SetTickWeight says what each sample added from now on stands for: the
// time the tick that took it covers, which is longer than the period when
// ticks come late (a loaded machine, a slow stop). 0 makes it the period
// again.
func (b *Builder) SetTickWeight(d time.Duration) { b.weight = d }

// TickWeight is what a sample added now stands for.
func (b *Builder) TickWeight() time.Duration {
	if b.weight > 0 {
		return b.weight
	}
	return b.period
}

// Add records one sample.
func (b *Builder) Add(s Sample) { b.add(s, 1, b.TickWeight()) }

// add records n samples equal to s that stand for d in all, and returns
// their index in b.samples.
func (b *Builder) add(s Sample, n int64, d time.Duration) int {
	b.n += int(n)
	k := sampleKey(s)
	i, ok := b.index[k]
	if !ok {
		i = len(b.samples)
		b.index[k] = i
		s.owner = nil // the copy kept is no caller's shared sample: it must not hold another builder
		b.samples = append(b.samples, s)
		b.counts = append(b.counts, 0)
		b.nanos = append(b.nanos, 0)
	}
	b.counts[i] += n
	b.nanos[i] += d.Nanoseconds()
	return i
}

// AddShared records the sample *s, which its caller adds again, unchanged,
// whenever the same thing is sampled again (a parked goroutine's sample,
// kept from tick to tick): it is counted by its address, and compared
// with the other samples only the first time.
func (b *Builder) AddShared(s *Sample) { b.AddSharedN(s, 1, b.TickWeight()) }

// AddSharedN is n calls of AddShared(s) (n > 0) in ticks that covered d
// in all: a caller that keeps a parked goroutine's sample for many ticks
// adds them when it changes.
func (b *Builder) AddSharedN(s *Sample, n int64, d time.Duration) {
	if s.owner != b {
		s.owner, s.index = b, b.add(*s, n, d)
		return
	}
	b.n += int(n)
	b.counts[s.index] += n
	b.nanos[s.index] += d.Nanoseconds()
}

// Key is what makes two samples the same in every output: samples with
// equal keys are one in a profile, with their counts summed.
func (s *Sample) Key() string { return sampleKey(*s) }

// sampleKey is what makes two samples the same in every output.
func sampleKey(s Sample) string {
	k := make([]byte, 0, 8*(4+len(s.PCs)+3*len(s.Lineage))+len(s.State))
	u := func(v uint64) { k = binary.LittleEndian.AppendUint64(k, v) }
	u(uint64(s.TID))
	u(s.Goid)
	u(uint64(len(s.PCs)))
	for _, pc := range s.PCs {
		u(pc)
	}
	for _, a := range s.Lineage {
		u(a.Goid)
		u(a.GoPC)
		u(uint64(len(a.Stack)))
		for _, pc := range a.Stack {
			u(pc)
		}
	}
	for _, l := range s.Labels {
		u(uint64(len(l.Key)))
		k = append(k, l.Key...)
		u(uint64(len(l.Value)))
		k = append(k, l.Value...)
	}
	u(uint64(len(s.Labels)))
	return string(append(k, s.State...))
}

// Len is the number of samples so far.
func (b *Builder) Len() int { return b.n }

func (b *Builder) locs(pc uint64, ret bool) []stack.Loc {
	k := frameKey{pc, ret}
	if l, ok := b.frames[k]; ok {
		return l
	}
	var l []stack.Loc
	if b.VDSO.Contains(pc) {
		l = []stack.Loc{{PC: pc, File: vdsoFile}} // named by vdsoName
	} else {
		l = stack.Symbolize(b.bin, b.bias, []uint64{pc}, ret)
	}
	b.frames[k] = l
	return l
}

// logical is one frame of a stitched stack, leaf first.
type logical struct {
	key  string // identity of the pprof location
	pc   uint64
	locs []stack.Loc // inline-expanded lines, innermost first
	name string      // synthetic frame name ("" for real code)
}

// stitched returns the sample's frames, leaf first, lineage last.
func (b *Builder) stitched(s Sample) []logical {
	var out []logical
	for i, pc := range s.PCs {
		ret := i > 0
		lg := logical{key: fmt.Sprintf("%x/%v", pc, ret), pc: pc, locs: b.locs(pc, ret)}
		if b.VDSO.Contains(pc) {
			lg.name = b.vdsoName(pc, ret)
		}
		out = append(out, lg)
	}
	for _, a := range s.Lineage {
		c := stack.CreatedBy(b.bin, b.bias, a)
		out = append(out, logical{key: "created/" + fmt.Sprintf("%x", a.GoPC), pc: a.GoPC,
			locs: []stack.Loc{c}, name: "created by " + stack.FuncName(c)})
		for _, pc := range a.Stack {
			out = append(out, logical{key: fmt.Sprintf("%x/true", pc), pc: pc, locs: b.locs(pc, true)})
		}
	}
	return out
}

// Profile builds the pprof profile.
func (b *Builder) Profile() *profile.Profile {
	kind, def := "cpu", ""
	switch {
	case b.OffCPU:
		kind, def = "off_cpu", "off_cpu"
	case b.Wall:
		kind = "wall"
	}
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: kind, Unit: "nanoseconds"}},
		PeriodType:        &profile.ValueType{Type: kind, Unit: "nanoseconds"},
		Period:            b.period.Nanoseconds(),
		TimeNanos:         b.start.UnixNano(),
		DurationNanos:     time.Since(b.start).Nanoseconds(),
		Comments:          b.Comments,
		DefaultSampleType: def,
	}
	// The executable's text is the main mapping: pprof names the binary
	// by it (else "Main binary filename not available") and finds its
	// symbols again by its build ID.
	m := b.mainMapping()
	if m != nil {
		p.Mapping = []*profile.Mapping{m}
	}
	var vm *profile.Mapping
	if b.VDSO != nil {
		vm = &profile.Mapping{ID: uint64(len(p.Mapping) + 1), Start: b.VDSO.Start, Limit: b.VDSO.Limit, File: vdsoFile, HasFunctions: true}
		p.Mapping = append(p.Mapping, vm)
	}
	funcs := map[string]*profile.Function{}
	fn := func(name, file string) *profile.Function {
		k := name + "\x00" + file
		if f, ok := funcs[k]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file}
		funcs[k] = f
		p.Function = append(p.Function, f)
		return f
	}
	locs := map[string]*profile.Location{}
	for i, s := range b.samples {
		var sl []*profile.Location
		for _, lg := range b.stitched(s) {
			loc, ok := locs[lg.key]
			if !ok {
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Address: lg.pc}
				if m != nil && lg.pc >= m.Start && lg.pc < m.Limit {
					loc.Mapping = m
				} else if vm != nil && b.VDSO.Contains(lg.pc) {
					loc.Mapping = vm
				}
				for _, l := range lg.locs {
					name := lg.name
					if name == "" {
						name = stack.FuncName(l)
					}
					loc.Line = append(loc.Line, profile.Line{Function: fn(name, l.File), Line: int64(l.Line)})
				}
				locs[lg.key] = loc
				p.Location = append(p.Location, loc)
			}
			sl = append(sl, loc)
		}
		ps := &profile.Sample{Location: sl, Value: []int64{b.counts[i], b.nanos[i]}, NumLabel: map[string][]int64{}}
		if s.TID != 0 {
			ps.NumLabel["thread"] = []int64{int64(s.TID)}
		}
		if s.Goid != 0 {
			ps.NumLabel["goroutine"] = []int64{int64(s.Goid)}
		}
		if s.State != "" || len(s.Labels) > 0 {
			ps.Label = map[string][]string{}
		}
		if s.State != "" {
			ps.Label["state"] = []string{s.State}
		}
		for _, l := range s.Labels {
			ps.Label[l.Key] = append(ps.Label[l.Key], l.Value)
		}
		p.Sample = append(p.Sample, ps)
	}
	return p
}

// vdsoFile is the vDSO's name, as /proc/PID/maps and perf call it.
const vdsoFile = "[vdso]"

// vdsoName names the vDSO frame at pc (a return address if ret): its
// function, or [vdso].
func (b *Builder) vdsoName(pc uint64, ret bool) string {
	if ret {
		pc-- // the call is before the return address
	}
	if name := b.VDSO.Func(pc); name != "" {
		return name
	}
	return vdsoFile
}

// mainMapping is the mapping of the executable's text segment, nil if it
// has none.
func (b *Builder) mainMapping() *profile.Mapping {
	for _, pr := range b.bin.ELF.Progs {
		if pr.Type == elf.PT_LOAD && pr.Flags&elf.PF_X != 0 {
			return &profile.Mapping{
				ID:              1,
				Start:           pr.Vaddr + b.bias,
				Limit:           pr.Vaddr + pr.Memsz + b.bias,
				Offset:          pr.Off,
				File:            b.bin.Path,
				BuildID:         BuildID(b.bin.ELF),
				HasFunctions:    true,
				HasFilenames:    true,
				HasLineNumbers:  true,
				HasInlineFrames: true,
			}
		}
	}
	return nil
}

// BuildID is f's GNU build ID in hex, else its Go build ID, else "" (a
// binary whose section headers were removed).
func BuildID(f *elf.File) string {
	gnu, goID := BuildIDs(f)
	if gnu != "" {
		return gnu
	}
	return goID
}

// BuildIDs returns f's GNU build ID in hex and its Go build ID, each ""
// if f has none.
func BuildIDs(f *elf.File) (gnu, goID string) {
	return hex.EncodeToString(note(f, ".note.gnu.build-id")), string(note(f, ".note.go.buildid"))
}

// note returns the descriptor of the ELF note in section name, or nil.
func note(f *elf.File, name string) []byte {
	s := f.Section(name)
	if s == nil {
		return nil
	}
	b, err := s.Data()
	if err != nil || len(b) < 12 {
		return nil
	}
	namesz, descsz := uint64(f.ByteOrder.Uint32(b)), uint64(f.ByteOrder.Uint32(b[4:]))
	off := 12 + (namesz+3)&^3
	if off+descsz > uint64(len(b)) {
		return nil
	}
	return b[off : off+descsz]
}

// WriteFolded writes one line per distinct stack, root first, frames joined
// by ';', then a space and the number of samples (Brendan Gregg's format).
func (b *Builder) WriteFolded(w io.Writer) error {
	counts := map[string]int64{}
	for i, s := range b.samples {
		var names []string
		for _, lg := range b.stitched(s) {
			if lg.name != "" {
				names = append(names, lg.name)
				continue
			}
			for _, l := range lg.locs {
				names = append(names, stack.FuncName(l))
			}
		}
		for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
			names[i], names[j] = names[j], names[i]
		}
		counts[strings.Join(names, ";")] += b.counts[i]
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := fmt.Fprintf(w, "%s %d\n", k, counts[k]); err != nil {
			return err
		}
	}
	return nil
}
