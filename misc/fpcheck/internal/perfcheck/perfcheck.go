// Package perfcheck records a command with perf's frame-pointer call graphs
// and checks every user-space chain: each frame symbolizable (Go code through
// the binary's pclntab, other code through perf's ELF symbols), each Go return
// address just after a call instruction, no loops, and the outermost frame a
// documented root (package fpchain). Where a cgo callback links through
// C frames (fpchain.CgoCallbackLink), they must end at asmcgocall; the
// report counts the callback chains that do.
//
// Chains whose leaf (the sampled PC) is outside Go code, is a Go function
// without a frame record called from outside Go code, or is a C entry point
// (crosscall2, sigtramp, ...) still on C's frame pointer, are counted but not
// judged: code built without frame pointers (cgo's C at -O2, libc) leaves the
// frame-pointer register to whatever it holds, so no frame-pointer unwinder
// can start correctly there, and nothing Go does can change that.
package perfcheck

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"fpsafe.dev/misc/internal/fpchain"
)

// Frame is one entry of a perf call chain, as perf script prints it.
type Frame struct {
	Addr uint64 // offset in DSO for mapped code, else the raw address
	Sym  string // perf's symbol, "[unknown]" if none
	DSO  string
}

// Sample is one perf sample with its call chain, leaf first.
type Sample struct {
	Comm   string
	TID    int
	Frames []Frame
}

// ErrNoPerf and ErrRefused explain why perf cannot be used.
var (
	ErrNoPerf  = errors.New("perf not found in PATH (Debian: apt-get install linux-perf)")
	ErrRefused = errors.New("perf_event_open refused")
)

// Probe checks that perf exists and may sample. dir receives a scratch file.
func Probe(dir string) (string, error) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return "", ErrNoPerf
	}
	out, err := exec.Command(perf, "record", "-q", "-e", "cpu-clock", "--call-graph", "fp", "-o", filepath.Join(dir, "probe.data"), "--", "true").CombinedOutput()
	os.Remove(filepath.Join(dir, "probe.data"))
	if err != nil {
		msg := strings.TrimSpace(string(out))
		low := strings.ToLower(msg)
		if strings.Contains(low, "permission") || strings.Contains(low, "paranoid") || strings.Contains(low, "access to performance monitoring") || strings.Contains(low, "not permitted") {
			para, _ := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
			return "", fmt.Errorf("%w (kernel.perf_event_paranoid=%s; run as root or lower it): %s", ErrRefused, strings.TrimSpace(string(para)), firstLine(msg))
		}
		return "", fmt.Errorf("perf record does not work here: %s", firstLine(msg))
	}
	return perf, nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return s
}

// ParseScript reads `perf script -F comm,tid,ip,sym,dso` output.
func ParseScript(r io.Reader) ([]Sample, error) {
	var out []Sample
	var cur *Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			cur = nil
			continue
		}
		if line[0] != '\t' && line[0] != ' ' {
			if strings.Contains(line, "PERF_RECORD_") {
				cur = nil
				continue
			}
			f := strings.Fields(line)
			s := Sample{}
			if len(f) >= 2 {
				s.Comm = strings.Join(f[:len(f)-1], " ")
				tid := f[len(f)-1]
				if i := strings.IndexByte(tid, '/'); i >= 0 {
					tid = tid[i+1:]
				}
				s.TID, _ = strconv.Atoi(tid)
			}
			out = append(out, s)
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		t := strings.TrimSpace(line)
		addrS, rest, _ := strings.Cut(t, " ")
		addr, err := strconv.ParseUint(addrS, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("bad perf script line %q", line)
		}
		fr := Frame{Addr: addr, Sym: "[unknown]"}
		rest = strings.TrimSpace(rest)
		if i := strings.LastIndex(rest, " ("); i >= 0 && strings.HasSuffix(rest, ")") {
			fr.DSO = rest[i+2 : len(rest)-1]
			rest = rest[:i]
		} else if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
			fr.DSO = rest[1 : len(rest)-1]
			rest = ""
		}
		if rest != "" {
			fr.Sym = rest
		}
		cur.Frames = append(cur.Frames, fr)
	}
	return out, sc.Err()
}

// Kind classifies a checked chain.
type Kind string

const (
	OK            Kind = "ok"
	Unsymbolized  Kind = "unsymbolizable frame"
	NotReturnSite Kind = "return address not after a call"
	Loop          Kind = "loop"
	BadRoot       Kind = "ends at a non-root"
	Truncated     Kind = "truncated at perf's depth limit"
	BadCLink      Kind = "callback C link not at asmcgocall"
	CLeaf         Kind = "leaf in C or C-to-Go entry (not judged)"
	KernelOnly    Kind = "kernel only"
)

// Violation reports whether k counts against the program.
func (k Kind) Violation() bool {
	return k == Unsymbolized || k == NotReturnSite || k == Loop || k == BadRoot || k == BadCLink
}

func isKernel(f Frame) bool {
	return f.Addr >= 0xffff800000000000 || strings.HasPrefix(f.DSO, "[kernel") || f.DSO == "[vdso]" && false
}

// Result is the outcome over all samples.
type Result struct {
	Samples  int               `json:"samples"`
	Kinds    map[Kind]int      `json:"chains"`
	Roots    map[string]int    `json:"roots"`
	Examples map[Kind][]string `json:"examples,omitempty"`
	// Samples with an unsymbolizable frame or a loop anywhere, C leaves
	// included, split by whose frame pointer the walk started from: Go's
	// (GoBadLike, also counted as violations), C code of the program (its
	// cgo C, or a frameless Go leaf called from it, such as
	// _cgo_topofstack), or a non-Go shared library (libc, ld.so).
	AnyBadLike int      `json:"badAnywhere"`
	GoBadLike  int      `json:"badFromGoFP"`
	CBadLike   int      `json:"badFromProgramCFP"`
	LibBadLike int      `json:"badFromLibraryFP"`
	BadLike    []string `json:"badExamples,omitempty"` // examples of the first two
	// Judged chains through a cgo callback (fpchain.CgoCallbackLink), and
	// how many of them link through C frames.
	Callbacks        int `json:"cgoCallbacks"`
	CallbacksCLinked int `json:"cgoCallbacksThroughC"`
}

// Checker symbolizes frames.
type Checker struct {
	MaxStack int
	sym      *symbolizer
}

// NewChecker returns a checker; maxStack is perf's chain depth limit.
func NewChecker(maxStack int) *Checker {
	return &Checker{MaxStack: maxStack, sym: newSymbolizer()}
}

// Check classifies every sample.
func (c *Checker) Check(samples []Sample) *Result {
	r := &Result{Kinds: map[Kind]int{}, Roots: map[string]int{}, Examples: map[Kind][]string{}}
	for i := range samples {
		k, root, detail, badLike, cb := c.check(&samples[i])
		r.Samples++
		r.Kinds[k]++
		if cb != noCallback {
			r.Callbacks++
			if cb == callbackThroughC {
				r.CallbacksCLinked++
			}
		}
		if badLike {
			r.AnyBadLike++
			lib := k == CLeaf && c.leafInLibrary(&samples[i])
			switch {
			case lib:
				r.LibBadLike++
			case k == CLeaf:
				r.CBadLike++
			default:
				r.GoBadLike++
			}
			if !lib && len(r.BadLike) < 5 {
				r.BadLike = append(r.BadLike, c.describe(&samples[i]))
			}
		}
		if k == OK {
			r.Roots[root]++
		}
		if k != OK && k != KernelOnly && len(r.Examples[k]) < 5 {
			r.Examples[k] = append(r.Examples[k], detail)
		}
	}
	return r
}

type resolved struct {
	name    string // "" if unsymbolizable
	goCode  bool
	retOK   bool   // for Go frames: the address follows a call instruction
	noFrame bool   // for a Go leaf: no frame record of its own at this PC
	off     uint64 // for Go frames: offset of the address in the function
}

// How a judged chain passes a cgo callback.
type callbackLink int

const (
	noCallback        callbackLink = iota
	callbackToCgocall              // straight to the cgocall site
	callbackThroughC               // through C frames to asmcgocall
)

// cgoCallbackLink finds the fake cgocallback record in res, a judged chain,
// and checks what follows it (fpchain.CgoCallbackLink): Go frames (the
// cgocall site), or C frames that end at asmcgocall. It returns -1 and
// how the chain passes the callbacks, or the index of a C segment that
// does not end at asmcgocall.
func cgoCallbackLink(res []resolved) (int, callbackLink) {
	l := fpchain.CgoCallbackLink
	how := noCallback
	for i := 1; i+1 < len(res); i++ {
		if res[i].name != l.Marker || res[i-1].name != l.Entry {
			continue
		}
		if res[i+1].goCode {
			how = max(how, callbackToCgocall)
			continue
		}
		j := i + 1
		for j < len(res) && !res[j].goCode {
			j++
		}
		if j == len(res) || res[j].name != l.End {
			return i + 1, how
		}
		how = callbackThroughC
	}
	return -1, how
}

func (c *Checker) check(s *Sample) (kind Kind, root, detail string, badLike bool, cb callbackLink) {
	var user []Frame
	for _, f := range s.Frames {
		if !isKernel(f) {
			user = append(user, f)
		}
	}
	if len(user) == 0 {
		return KernelOnly, "", "", false, noCallback
	}
	res := make([]resolved, len(user))
	for i, f := range user {
		injected := i > 0 && (res[i-1].name == "runtime.asyncPreempt" || res[i-1].name == "runtime.sigpanic")
		res[i] = c.sym.resolve(f, i > 0, injected)
	}
	chain := func(upto int) string {
		var parts []string
		for i := 0; i < len(user) && i < upto; i++ {
			n := res[i].name
			if n == "" {
				n = fmt.Sprintf("%#x(%s)", user[i].Addr, filepath.Base(user[i].DSO))
			}
			parts = append(parts, n)
		}
		if len(user) > upto {
			parts = append(parts, fmt.Sprintf("... (%d frames)", len(user)))
		}
		return fmt.Sprintf("%s/%d: %s", s.Comm, s.TID, strings.Join(parts, " <- "))
	}
	truncated := len(s.Frames) >= c.MaxStack-2
	loop := false
	if truncated && len(user) >= 16 {
		distinct := map[uint64]bool{}
		valid := true
		for i := len(user) - 16; i < len(user); i++ {
			distinct[user[i].Addr] = true
			if res[i].name == "" || res[i].goCode && !res[i].retOK {
				valid = false
			}
		}
		loop = len(distinct) <= 4 && !valid
	}
	for i := range res {
		if res[i].name == "" {
			badLike = true
		}
	}
	badLike = badLike || loop
	// A Go leaf without a frame record leaves the chain to its caller: when
	// that is not Go (assembly called from C, such as _cgo_topofstack), the
	// chain is C's.
	// So does a sample inside a C entry point (crosscall2, sigtramp, ...),
	// which runs with C's frame pointer until it ends the chain.
	_, cEntry := fpchain.CEntries[res[0].name]
	if !res[0].goCode || cEntry || res[0].noFrame && len(res) > 1 && !res[1].goCode {
		return CLeaf, "", chain(8), badLike, noCallback
	}
	if loop {
		return Loop, "", chain(12), badLike, noCallback
	}
	for i := range res {
		if res[i].name == "" {
			return Unsymbolized, "", fmt.Sprintf("frame %d: %s", i, chain(i+3)), badLike, noCallback
		}
		// Under a leaf without a frame record the unwinder skips the leaf's
		// caller, which may be an injected frame (sigpanic, asyncPreempt).
		skipped := i == 1 && res[0].noFrame
		if i > 0 && res[i].goCode && !res[i].retOK && !skipped {
			return NotReturnSite, "", fmt.Sprintf("frame %d (%s+%#x): %s", i, res[i].name, res[i].off, chain(i+3)), badLike, noCallback
		}
	}
	i, cb := cgoCallbackLink(res)
	if i >= 0 {
		return BadCLink, "", fmt.Sprintf("frame %d: %s", i, chain(len(user))), badLike, cb
	}
	last := res[len(res)-1].name
	if fpchain.IsRoot(last) {
		return OK, last, "", badLike, cb
	}
	if len(res) == 1 && res[0].noFrame {
		return OK, "(goroutine entry without a frame yet)", "", badLike, cb
	}
	if truncated {
		return Truncated, "", chain(6), badLike, cb
	}
	return BadRoot, "", fmt.Sprintf("ends at %s: %s", last, chain(len(user))), badLike, cb
}

// Write prints the tables.
func (r *Result) Write(w io.Writer) {
	fmt.Fprintf(w, "fpcheck perf: %d samples\n", r.Samples)
	kinds := []Kind{OK, Unsymbolized, NotReturnSite, Loop, BadRoot, BadCLink, Truncated, CLeaf, KernelOnly}
	fmt.Fprintf(w, "  %-40s %8s\n", "CHAIN", "SAMPLES")
	for _, k := range kinds {
		mark := ""
		if k.Violation() && r.Kinds[k] > 0 {
			mark = "  VIOLATION"
		}
		fmt.Fprintf(w, "  %-40s %8d%s\n", k, r.Kinds[k], mark)
	}
	fmt.Fprintf(w, "  user-space samples with an unsymbolizable or looping frame anywhere (C leaves included): %d of %d\n", r.AnyBadLike, r.Samples-r.Kinds[KernelOnly])
	fmt.Fprintf(w, "    walk from Go's frame pointer: %d\n", r.GoBadLike)
	fmt.Fprintf(w, "    walk from C's frame pointer in the program (cgo C built without frame pointers, or a frameless Go leaf it called): %d\n", r.CBadLike)
	fmt.Fprintf(w, "    walk from C's frame pointer in a non-Go shared library (libc, ld.so): %d\n", r.LibBadLike)
	fmt.Fprintf(w, "  judged chains through a cgo callback: %d, through its C frames: %d\n", r.Callbacks, r.CallbacksCLinked)
	var roots []string
	for k := range r.Roots {
		roots = append(roots, k)
	}
	sort.Slice(roots, func(i, j int) bool { return r.Roots[roots[i]] > r.Roots[roots[j]] })
	fmt.Fprintf(w, "  %-40s %8s\n", "ROOT (good chains)", "SAMPLES")
	for _, k := range roots {
		fmt.Fprintf(w, "  %-40s %8d\n", k, r.Roots[k])
	}
	for _, k := range kinds {
		for _, e := range r.Examples[k] {
			if k.Violation() || k == Truncated {
				fmt.Fprintf(w, "%s: %s\n", k, e)
			}
		}
	}
	for _, e := range r.BadLike {
		fmt.Fprintf(w, "unsymbolizable or looping frame (leaf in the program): %s\n", e)
	}
	fmt.Fprintf(w, "fpcheck perf: %d violations\n", r.Violations())
}

// leafInLibrary reports whether s's first user-space frame is in a shared
// library that is not a Go binary: built without frame pointers (Debian's
// libc is), it hands perf whatever its frame-pointer register holds.
func (c *Checker) leafInLibrary(s *Sample) bool {
	for _, f := range s.Frames {
		if isKernel(f) {
			continue
		}
		return c.sym.binary(f.DSO) == nil && strings.Contains(f.DSO, ".so")
	}
	return false
}

// describe prints s's user-space chain with raw addresses for frames that
// do not resolve.
func (c *Checker) describe(s *Sample) string {
	var parts []string
	for i, n := range c.Names(s) {
		if n == "?" {
			var user []Frame
			for _, f := range s.Frames {
				if !isKernel(f) {
					user = append(user, f)
				}
			}
			n = fmt.Sprintf("?%#x(%s)", user[i].Addr, filepath.Base(user[i].DSO))
		}
		parts = append(parts, n)
		if len(parts) == 12 {
			parts = append(parts, "...")
			break
		}
	}
	return fmt.Sprintf("%s/%d: %s", s.Comm, s.TID, strings.Join(parts, " <- "))
}

// Violations counts samples whose chain violates a rule.
func (r *Result) Violations() int {
	n := 0
	for k, v := range r.Kinds {
		if k.Violation() {
			n += v
		}
	}
	return n
}

// Names returns the resolved names of s's user-space frames, leaf first
// ("?" for frames that do not resolve).
func (c *Checker) Names(s *Sample) []string {
	var out []string
	prev := ""
	for _, f := range s.Frames {
		if isKernel(f) {
			continue
		}
		injected := prev == "runtime.asyncPreempt" || prev == "runtime.sigpanic"
		r := c.sym.resolve(f, len(out) > 0, injected)
		n := r.name
		if n == "" {
			n = "?"
		}
		out = append(out, n)
		prev = r.name
	}
	return out
}
