// Package ebpf is the kernel side of golineage's ebpf collector: a BPF
// program (lineage.bpf.c, compiled to the committed lineage_bpfel.o) run by
// a cpu-clock perf event on every CPU, which, for each sample of a thread
// of a target process, copies the user stack walked by frame pointers, the
// user registers, the words above SP and the thread's goroutine lineage
// record, and sends them to user space through a ring buffer. The targets
// are never stopped: a sample is taken on the sampled thread's own CPU, in
// the timer interrupt, as perf's own samples are. The program looks the
// sampled thread's tgid up in a map of targets (AddTarget), so one set of
// perf events serves every target, and threads created while a process is
// a target are covered.
//
// With Config.Procs, two tracepoints report processes as they exec and as
// targets exit (Event.Flags FlagExec and FlagExit), for a reader that
// follows a whole node.
//
// Everything the collector opens (the programs, the maps, one perf event
// per CPU, the tracepoint links) belongs to the Collector and is released
// by Close, also on every error path of Open: nothing stays attached once
// the collector's user is done.
//
// bpf2go (github.com/cilium/ebpf/cmd/bpf2go, a tool of this module: see the
// go:generate line) compiles the program and generates lineage_bpfel.go:
// the loader of the embedded object (loadLineage), its programs, maps and
// variables as the fields of lineageObjects, and the Go types of the
// structs user space shares with the program (lineageEvent,
// lineageProcEvent and lineageTarget), laid out from the object's BTF.
// No program, map or variable is looked up by name here, and no field is
// read or written at an offset written by hand (the flags of struct target,
// #defines, are the exception): a change of the C source fails to build
// here once go generate has followed it, and TestObjectFresh fails until
// it has.
package ebpf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// go generate compiles lineage.bpf.c to lineage_bpfel.o, little-endian
// BPF (for amd64, and the other little-endian GOARCHes lineage_bpfel.go's
// build constraint lists), and writes lineage_bpfel.go. clang is
// the one lineage_bpfel.clang records, so that the committed object is
// what the source compiles to (TestObjectFresh); bpf2go's flags make the
// bytes independent of where the tree is (-fdebug-prefix-map,
// -fdebug-compilation-dir, -fno-ident) and keep the BTF (-g). -no-strip
// keeps the object as clang writes it: llvm-strip, bpf2go's default, is a
// package of its own beside clang (Debian's llvm), whose version would
// also shape the bytes.
//
//go:generate go tool bpf2go -target bpfel -no-strip -type event -type proc_event -type target lineage lineage.bpf.c -- -I../../../lineage/include -Wall -Werror

// DefaultBTF is where the kernel publishes its BTF.
const DefaultBTF = "/sys/kernel/btf/vmlinux"

// ErrUnavailable is wrapped by the errors that say the kernel (or this
// process's privileges) cannot run the collector, as opposed to a failure
// of the target or of a read.
var ErrUnavailable = errors.New("ebpf collector unavailable")

// Config says how the collector samples.
type Config struct {
	Hz int // samples per second of each CPU

	BTF string // the kernel's BTF; "" means DefaultBTF

	// Stats turns on the kernel's run-time statistics of BPF programs
	// (system-wide, while the collector is open) for RunTime.
	Stats bool

	// Procs attaches the tracepoints that report every exec, and the
	// exit of every target, as events.
	Procs bool
}

// Target is what the program needs to know of a process: the lineage ABI's
// offsets, all read from the process's header by the caller.
type Target struct {
	Lineage                                  bool // read lineage records
	TLSG                                     bool // g is at FSBase+TLSGOffset (else in R14)
	TLSGOffset                               int64
	OffGM, OffMRegion                        uint32
	OffRegionSeq, OffRegionTid, OffRegionCur uint32
	OffRecSeq, RecordSize                    uint32
	// Labels reads, with each record, the pprof label set pointer
	// (Event.Labels) of the record's goroutine: OffRecG and OffGLabels are
	// the header's off_rec_g and off_g_labels.
	Labels              bool
	OffRecG, OffGLabels uint32
}

// The flags of struct target (lineageTarget, a value of the targets map):
// lineage.bpf.c's TARGET_* (#defines, which BTF does not record).
const (
	targetLineage = 1
	targetTLSG    = 2
	targetLabels  = 4
)

// MaxTargets is how many processes the program can sample at once.
const MaxTargets = 8192

// Collector is the loaded program, attached to one perf event per CPU.
type Collector struct {
	objs  *lineageObjects // nil once closed
	perf  []int
	links []link.Link // the tracepoints, with Config.Procs
	rd    *ringbuf.Reader
	rec   ringbuf.Record
	stats io.Closer // holds the kernel's BPF statistics on, with Config.Stats
}

// CheckPrivileges reports why this process cannot load and attach the
// program, or nil: it needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) and
// the kernel's BTF at btfPath.
func CheckPrivileges(btfPath string) error {
	if btfPath == "" {
		btfPath = DefaultBTF
	}
	if _, err := os.Stat(btfPath); err != nil {
		return fmt.Errorf("%w: no kernel BTF (%v)", ErrUnavailable, err)
	}
	caps, err := effectiveCaps()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	const capSysAdmin, capPerfmon, capBPF = 21, 38, 39
	has := func(c uint) bool { return caps&(1<<c) != 0 }
	if !has(capSysAdmin) && !(has(capBPF) && has(capPerfmon)) {
		return fmt.Errorf("%w: needs root, or CAP_BPF and CAP_PERFMON", ErrUnavailable)
	}
	return nil
}

// effectiveCaps returns this process's effective capability set.
func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff in /proc/self/status")
}

// Open loads the program for cfg and attaches it to a cpu-clock perf event
// sampling at cfg.Hz on every online CPU.
func Open(cfg Config) (_ *Collector, err error) {
	if err := CheckPrivileges(cfg.BTF); err != nil {
		return nil, err
	}
	btfPath := cfg.BTF
	if btfPath == "" {
		btfPath = DefaultBTF
	}
	kernel, err := btf.LoadSpec(btfPath)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the kernel BTF: %v", ErrUnavailable, err)
	}
	spec, err := loadLineage()
	if err != nil {
		return nil, fmt.Errorf("ebpf collector: the embedded program: %w", err)
	}
	if cfg.Hz <= 0 {
		return nil, fmt.Errorf("ebpf collector: sampling rate %d Hz", cfg.Hz)
	}
	c := &Collector{}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if cfg.Stats {
		if c.stats, err = ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err != nil {
			return nil, fmt.Errorf("ebpf collector: enabling BPF statistics: %w", err)
		}
	}
	// LoadAndAssign loads all or nothing: on an error it has closed what
	// it loaded, and c.objs stays nil.
	var objs lineageObjects
	if err := spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{KernelTypes: kernel}}); err != nil {
		return nil, fmt.Errorf("%w: loading the BPF program: %v", ErrUnavailable, err)
	}
	c.objs = &objs
	if c.rd, err = ringbuf.NewReader(objs.Events); err != nil {
		return nil, fmt.Errorf("ebpf collector: the ring buffer: %w", err)
	}
	if cfg.Procs {
		for _, tp := range []struct {
			name string
			prog *ebpf.Program
		}{{"sched_process_exec", objs.ProcExec}, {"sched_process_exit", objs.ProcExit}} {
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp.name, Program: tp.prog})
			if err != nil {
				return nil, fmt.Errorf("%w: attaching to the tracepoint %s: %v", ErrUnavailable, tp.name, err)
			}
			c.links = append(c.links, l)
		}
	}
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, fmt.Errorf("ebpf collector: %w", err)
	}
	prog := objs.Sample.FD()
	for _, cpu := range cpus {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Sample: uint64(cfg.Hz),
			Bits:   unix.PerfBitFreq | unix.PerfBitDisabled,
		}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("%w: perf_event_open on CPU %d: %v", ErrUnavailable, cpu, err)
		}
		c.perf = append(c.perf, fd)
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog); err != nil {
			return nil, fmt.Errorf("%w: attaching the BPF program on CPU %d: %v", ErrUnavailable, cpu, err)
		}
	}
	for _, fd := range c.perf {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return nil, fmt.Errorf("ebpf collector: enabling the perf event: %w", err)
		}
	}
	return c, nil
}

// AddTarget makes the program sample the process tgid (a pid of the
// initial PID namespace, as /proc of the host lists it), or updates what
// it knows of it. Samples of a process that was a target, taken before
// RemoveTarget, may still be read after it.
func (c *Collector) AddTarget(tgid int, t Target) error {
	v := lineageTarget{
		OffG_m: t.OffGM, OffM_region: t.OffMRegion,
		OffRegionSeq: t.OffRegionSeq, OffRegionTid: t.OffRegionTid, OffRegionCur: t.OffRegionCur,
		OffRecSeq: t.OffRecSeq, RecordSize: t.RecordSize, TlsG_offset: t.TLSGOffset,
		OffRecG: t.OffRecG, OffG_labels: t.OffGLabels,
	}
	if t.Labels {
		v.Flags |= targetLabels
	}
	if t.Lineage {
		v.Flags |= targetLineage
	}
	if t.TLSG {
		v.Flags |= targetTLSG
	}
	if tgid <= 0 || tgid > 1<<22 {
		return fmt.Errorf("ebpf collector: process id %d", tgid)
	}
	if err := c.objs.Targets.Put(uint32(tgid), &v); err != nil {
		if errors.Is(err, unix.E2BIG) {
			return fmt.Errorf("ebpf collector: already %d targets", MaxTargets)
		}
		return fmt.Errorf("ebpf collector: adding target %d: %w", tgid, err)
	}
	return nil
}

// RemoveTarget stops sampling the process tgid. A process that is not a
// target is not an error: it may have been removed already.
func (c *Collector) RemoveTarget(tgid int) error {
	err := c.objs.Targets.Delete(uint32(tgid))
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("ebpf collector: removing target %d: %w", tgid, err)
	}
	return nil
}

// Read returns the next event, waiting at most until deadline; it returns
// an error wrapping os.ErrDeadlineExceeded when none came. The event is
// valid until the next call.
func (c *Collector) Read(deadline time.Time) (*Event, error) {
	c.rd.SetDeadline(deadline)
	if err := c.rd.ReadInto(&c.rec); err != nil {
		return nil, err
	}
	return Decode(c.rec.RawSample)
}

// Lost returns how many samples the program dropped because the ring
// buffer was full.
func (c *Collector) Lost() uint64 {
	if c.objs == nil {
		return 0 // closed
	}
	return counter(c.objs.Lost)
}

// LostProcs returns how many exec and exit events the tracepoints dropped
// because the ring buffer was full.
func (c *Collector) LostProcs() uint64 {
	if c.objs == nil {
		return 0 // closed
	}
	return counter(c.objs.LostProc)
}

// counter reads one of the program's __u64 counters.
func counter(v *ebpf.Variable) uint64 {
	var n uint64
	if v != nil {
		v.Get(&n)
	}
	return n
}

// RunTime returns how many times the program ran and for how long in all,
// as the kernel counts it with Config.Stats (both 0 without).
func (c *Collector) RunTime() (runs uint64, total time.Duration) {
	if c.stats == nil || c.objs == nil {
		return 0, 0
	}
	st, err := c.objs.Sample.Stats()
	if err != nil {
		return 0, 0
	}
	return st.RunCount, st.Runtime
}

// Close detaches and releases everything Open created.
func (c *Collector) Close() error {
	for _, l := range c.links {
		l.Close()
	}
	c.links = nil
	for _, fd := range c.perf {
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
		unix.Close(fd)
	}
	c.perf = nil
	if c.rd != nil {
		c.rd.Close()
		c.rd = nil
	}
	if c.objs != nil {
		c.objs.Close()
		c.objs = nil
	}
	if c.stats != nil {
		c.stats.Close()
		c.stats = nil
	}
	return nil
}

// onlineCPUs parses /sys/devices/system/cpu/online ("0-3,5").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return parseCPUList(string(b))
}

func parseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}
