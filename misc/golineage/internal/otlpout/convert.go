// Package otlpout turns the node agent's profiles into OpenTelemetry
// profiles (OTLP, pdata's pprofile) and sends them to a Collector.
//
// A batch of the agent's profiles becomes one pprofile.Profiles: a
// ResourceProfiles per process, whose resource attributes follow the
// OpenTelemetry semantic conventions (service.name, process.pid,
// process.executable.name and .path, process.runtime.name and .version,
// host.name, container.id), with one Profile per interval. Every table of
// the shared dictionary starts with its zero value, as the OTLP profiles
// format asks, and holds each string, function, location, stack and
// attribute once for the whole batch. A goroutine's lineage is already in
// its stack, as frames named "created by F" below its root frame (see
// pprofout), so a flame graph of the OTLP profile continues across
// goroutines as golineage's pprof output does. The sampled thread and
// goroutine are sample attributes (thread.id, go.goroutine.id).
package otlpout

import (
	"crypto/rand"
	"encoding/binary"
	"maps"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"fpsafe.dev/misc/golineage/internal/agent"
)

// ScopeName names the instrumentation scope of the profiles.
const ScopeName = "fpsafe.dev/misc/golineage/agent"

// Attribute keys of the samples.
const (
	AttrThreadID    = "thread.id"       // semantic conventions
	AttrGoroutineID = "go.goroutine.id" // the sampled goroutine's id
)

// Convert returns ps as OTLP profiles; host is the host.name attribute of
// every resource ("" for none).
func Convert(ps []agent.Profile, host string) pprofile.Profiles {
	out := pprofile.NewProfiles()
	d := newDict(out.Dictionary())
	byPID := map[int]pprofile.ScopeProfiles{}
	for _, p := range ps {
		sp, ok := byPID[p.Process.PID]
		if !ok {
			rp := out.ResourceProfiles().AppendEmpty()
			resource(rp.Resource().Attributes(), p.Process, host)
			sp = rp.ScopeProfiles().AppendEmpty()
			sp.Scope().SetName(ScopeName)
			byPID[p.Process.PID] = sp
		}
		d.profile(sp.Profiles().AppendEmpty(), p.Profile)
	}
	return out
}

// resource sets a process's resource attributes.
func resource(m pcommon.Map, p *agent.Process, host string) {
	m.PutStr("service.name", p.ServiceName)
	m.PutInt("process.pid", int64(p.PID))
	m.PutStr("process.executable.name", p.ExeName)
	m.PutStr("process.executable.path", p.ExePath)
	m.PutStr("process.runtime.name", "go")
	if p.GoVersion != "" {
		m.PutStr("process.runtime.version", p.GoVersion)
	}
	if host != "" {
		m.PutStr("host.name", host)
	}
	if p.ContainerID != "" {
		m.PutStr("container.id", p.ContainerID)
	}
	if p.GNUBuildID != "" {
		m.PutStr("process.executable.build_id.gnu", p.GNUBuildID)
	}
	if p.GoBuildID != "" {
		m.PutStr("process.executable.build_id.go", p.GoBuildID)
	}
}

// dict fills a dictionary, each entry once.
type dict struct {
	d         pprofile.ProfilesDictionary
	strings   map[string]int32
	functions map[[3]int32]int32 // name, system name, file
	mappings  map[mappingKey]int32
	locations map[string]int32 // locationKey
	stacks    map[string]int32 // the location indices' bytes
	attrs     map[attrKey]int32
	key       []byte // scratch
}

type mappingKey struct {
	start, limit, offset uint64
	file                 int32
}

type attrKey struct {
	key int32
	val int64
	str string
}

func newDict(d pprofile.ProfilesDictionary) *dict {
	t := &dict{d: d, strings: map[string]int32{}, functions: map[[3]int32]int32{}, mappings: map[mappingKey]int32{},
		locations: map[string]int32{}, stacks: map[string]int32{}, attrs: map[attrKey]int32{}}
	// Index 0 of every table is its zero value.
	t.str("")
	d.MappingTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.LinkTable().AppendEmpty()
	d.AttributeTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	return t
}

func (t *dict) str(s string) int32 {
	if i, ok := t.strings[s]; ok {
		return i
	}
	i := int32(t.d.StringTable().Len())
	t.d.StringTable().Append(s)
	t.strings[s] = i
	return i
}

func (t *dict) function(f *profile.Function) int32 {
	k := [3]int32{t.str(f.Name), t.str(f.SystemName), t.str(f.Filename)}
	if i, ok := t.functions[k]; ok {
		return i
	}
	i := int32(t.d.FunctionTable().Len())
	nf := t.d.FunctionTable().AppendEmpty()
	nf.SetNameStrindex(k[0])
	nf.SetSystemNameStrindex(k[1])
	nf.SetFilenameStrindex(k[2])
	nf.SetStartLine(f.StartLine)
	t.functions[k] = i
	return i
}

func (t *dict) mapping(m *profile.Mapping) int32 {
	if m == nil {
		return 0
	}
	k := mappingKey{m.Start, m.Limit, m.Offset, t.str(m.File)}
	if i, ok := t.mappings[k]; ok {
		return i
	}
	i := int32(t.d.MappingTable().Len())
	nm := t.d.MappingTable().AppendEmpty()
	nm.SetMemoryStart(m.Start)
	nm.SetMemoryLimit(m.Limit)
	nm.SetFileOffset(m.Offset)
	nm.SetFilenameStrindex(k.file)
	if m.BuildID != "" {
		// pprofout's mappings carry the GNU build ID, else Go's.
		key := "process.executable.build_id.gnu"
		if !isHex(m.BuildID) {
			key = "process.executable.build_id.go"
		}
		nm.AttributeIndices().Append(t.attrStr(key, m.BuildID))
	}
	t.mappings[k] = i
	return i
}

func (t *dict) location(l *profile.Location) int32 {
	mi := t.mapping(l.Mapping)
	k := binary.LittleEndian.AppendUint32(t.key[:0], uint32(mi))
	k = binary.LittleEndian.AppendUint64(k, l.Address)
	fns := make([]int32, len(l.Line))
	for j, ln := range l.Line {
		fns[j] = t.function(ln.Function)
		k = binary.LittleEndian.AppendUint32(k, uint32(fns[j]))
		k = binary.LittleEndian.AppendUint64(k, uint64(ln.Line))
	}
	t.key = k
	if i, ok := t.locations[string(k)]; ok {
		return i
	}
	i := int32(t.d.LocationTable().Len())
	nl := t.d.LocationTable().AppendEmpty()
	nl.SetMappingIndex(mi)
	nl.SetAddress(l.Address)
	for j, ln := range l.Line {
		nln := nl.Lines().AppendEmpty()
		nln.SetFunctionIndex(fns[j])
		nln.SetLine(ln.Line)
	}
	t.locations[string(k)] = i
	return i
}

func (t *dict) stack(locs []*profile.Location) int32 {
	idx := make([]int32, len(locs))
	var k strings.Builder
	for j, l := range locs {
		idx[j] = t.location(l)
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(idx[j]))
		k.Write(b[:])
	}
	if i, ok := t.stacks[k.String()]; ok {
		return i
	}
	i := int32(t.d.StackTable().Len())
	t.d.StackTable().AppendEmpty().LocationIndices().FromRaw(idx)
	t.stacks[k.String()] = i
	return i
}

func (t *dict) attrInt(key string, v int64) int32 {
	return t.attr(attrKey{key: t.str(key), val: v}, func(pv pcommon.Value) { pv.SetInt(v) })
}

func (t *dict) attrStr(key, v string) int32 {
	return t.attr(attrKey{key: t.str(key), str: v, val: -1}, func(pv pcommon.Value) { pv.SetStr(v) })
}

// attr returns the index of the attribute k, adding it (its value set by
// set) if it is not in the table yet.
func (t *dict) attr(k attrKey, set func(pcommon.Value)) int32 {
	if i, ok := t.attrs[k]; ok {
		return i
	}
	i := int32(t.d.AttributeTable().Len())
	a := t.d.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(k.key)
	set(a.Value())
	t.attrs[k] = i
	return i
}

// profile fills np from the pprof profile p: its default sample type, else
// the first (the count of samples), with p's period; labels become
// attributes.
func (t *dict) profile(np pprofile.Profile, p *profile.Profile) {
	var id pprofile.ProfileID
	rand.Read(id[:])
	np.SetProfileID(id)
	np.SetTime(pcommon.Timestamp(p.TimeNanos))
	np.SetDurationNano(uint64(p.DurationNanos))
	vi := 0
	for i, st := range p.SampleType {
		if st.Type == p.DefaultSampleType {
			vi = i
		}
	}
	if len(p.SampleType) > 0 {
		np.SampleType().SetTypeStrindex(t.str(p.SampleType[vi].Type))
		np.SampleType().SetUnitStrindex(t.str(p.SampleType[vi].Unit))
	}
	if p.PeriodType != nil {
		np.PeriodType().SetTypeStrindex(t.str(p.PeriodType.Type))
		np.PeriodType().SetUnitStrindex(t.str(p.PeriodType.Unit))
	}
	np.SetPeriod(p.Period)
	for _, s := range p.Sample {
		if len(s.Value) <= vi {
			continue
		}
		ns := np.Samples().AppendEmpty()
		ns.SetStackIndex(t.stack(s.Location))
		ns.Values().Append(s.Value[vi])
		for _, k := range slices.Sorted(maps.Keys(s.NumLabel)) {
			key := k
			switch k {
			case "thread":
				key = AttrThreadID
			case "goroutine":
				key = AttrGoroutineID
			}
			for _, v := range s.NumLabel[k] {
				ns.AttributeIndices().Append(t.attrInt(key, v))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Label)) {
			for _, v := range s.Label[k] {
				ns.AttributeIndices().Append(t.attrStr(k, v))
			}
		}
	}
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}
