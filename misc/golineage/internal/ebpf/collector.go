// Package ebpf is the kernel side of golineage's ebpf collector: a BPF
// program (lineage.bpf.c, compiled to the committed lineage_bpfel.o) run by
// a cpu-clock perf event on every CPU, which, for each sample of a thread
// of the target process, copies the user stack walked by frame pointers,
// the user registers, the words above SP and the thread's goroutine lineage
// record, and sends them to user space through a ring buffer. The target
// is never stopped: a sample is taken on the sampled thread's own CPU, in
// the timer interrupt, as perf's own samples are. The program filters on
// the target's tgid, so threads created during the profile are covered.
//
// Everything the collector opens (the program, the maps, one perf event
// per CPU) belongs to the Collector and is released by Close, also on
// every error path of Open: nothing stays attached once the collector's
// user is done.
package ebpf

import (
	"bufio"
	"bytes"
	_ "embed"
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
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

//go:generate clang -O2 -g -target bpf -fdebug-compilation-dir=. -I../../../lineage/include -Wall -Werror -c lineage.bpf.c -o lineage_bpfel.o

//go:embed lineage_bpfel.o
var object []byte

// DefaultBTF is where the kernel publishes its BTF.
const DefaultBTF = "/sys/kernel/btf/vmlinux"

// ErrUnavailable is wrapped by the errors that say the kernel (or this
// process's privileges) cannot run the collector, as opposed to a failure
// of the target or of a read.
var ErrUnavailable = errors.New("ebpf collector unavailable")

// Config is what the program needs to know: the target and the lineage
// ABI's offsets, all read from the target's header by the caller.
type Config struct {
	TGID int
	Hz   int

	Lineage                                  bool // read lineage records
	TLSG                                     bool // g is at FSBase+TLSGOffset (else in R14)
	TLSGOffset                               int64
	OffGM, OffMRegion                        uint32
	OffRegionSeq, OffRegionTid, OffRegionCur uint32
	OffRecSeq, RecordSize                    uint32

	BTF string // the kernel's BTF; "" means DefaultBTF

	// Stats turns on the kernel's run-time statistics of BPF programs
	// (system-wide, while the collector is open) for RunTime.
	Stats bool
}

// Collector is the loaded program, attached to one perf event per CPU.
type Collector struct {
	coll  *ebpf.Collection
	perf  []int
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
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(object))
	if err != nil {
		return nil, fmt.Errorf("ebpf collector: the embedded program: %w", err)
	}
	b2u := func(b bool) uint32 {
		if b {
			return 1
		}
		return 0
	}
	for name, v := range map[string]any{
		"target_tgid": uint32(cfg.TGID), "lineage": b2u(cfg.Lineage), "tls_g": b2u(cfg.TLSG), "tls_g_offset": cfg.TLSGOffset,
		"off_g_m": cfg.OffGM, "off_m_region": cfg.OffMRegion,
		"off_region_seq": cfg.OffRegionSeq, "off_region_tid": cfg.OffRegionTid, "off_region_cur": cfg.OffRegionCur,
		"off_rec_seq": cfg.OffRecSeq, "record_size": cfg.RecordSize,
	} {
		vs, ok := spec.Variables[name]
		if !ok {
			return nil, fmt.Errorf("ebpf collector: the embedded program has no variable %s", name)
		}
		if err := vs.Set(v); err != nil {
			return nil, fmt.Errorf("ebpf collector: setting %s: %w", name, err)
		}
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
	c.coll, err = ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{KernelTypes: kernel}})
	if err != nil {
		return nil, fmt.Errorf("%w: loading the BPF program: %v", ErrUnavailable, err)
	}
	if c.rd, err = ringbuf.NewReader(c.coll.Maps["events"]); err != nil {
		return nil, fmt.Errorf("ebpf collector: the ring buffer: %w", err)
	}
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, fmt.Errorf("ebpf collector: %w", err)
	}
	prog := c.coll.Programs["sample"].FD()
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
	var n uint64
	if v := c.coll.Variables["lost"]; v != nil {
		v.Get(&n)
	}
	return n
}

// RunTime returns how many times the program ran and for how long in all,
// as the kernel counts it with Config.Stats (both 0 without).
func (c *Collector) RunTime() (runs uint64, total time.Duration) {
	if c.stats == nil {
		return 0, 0
	}
	st, err := c.coll.Programs["sample"].Stats()
	if err != nil {
		return 0, 0
	}
	return st.RunCount, st.Runtime
}

// Close detaches and releases everything Open created.
func (c *Collector) Close() error {
	for _, fd := range c.perf {
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
		unix.Close(fd)
	}
	c.perf = nil
	if c.rd != nil {
		c.rd.Close()
		c.rd = nil
	}
	if c.coll != nil {
		c.coll.Close()
		c.coll = nil
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
