package target

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The vDSO: the kernel maps a small ELF image into every process, and
// time.Now and friends run its code (clock_gettime) without a system
// call. A sample taken there has a PC that is in no file a profile names,
// so the vDSO's range and functions are read from the process itself:
// the range from /proc/PID/maps ("[vdso]"), the functions from the
// image's dynamic symbols, read from the process's memory.

// VDSO is a process's vDSO.
type VDSO struct {
	Start, Limit uint64   // where it is mapped
	Funcs        []Symbol // its functions, by address
}

// Symbol is one function of the vDSO, at runtime address Addr.
type Symbol struct {
	Name       string
	Addr, Size uint64
}

// maxVDSO bounds the image a reader copies (the kernel's is a few pages).
const maxVDSO = 1 << 20

// ReadVDSO reads process pid's vDSO, its image through mem. A process
// without one (a core, a kernel built without it) gives an error.
func ReadVDSO(pid int, mem Mem) (*VDSO, error) {
	start, limit, err := vdsoRange(pid)
	if err != nil {
		return nil, err
	}
	img := make([]byte, limit-start)
	if err := mem.ReadAt(img, start); err != nil {
		return nil, fmt.Errorf("reading the vDSO of process %d: %w", pid, err)
	}
	return ParseVDSO(img, start)
}

// vdsoRange finds the "[vdso]" mapping of process pid.
func vdsoRange(pid int) (start, limit uint64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, "[vdso]") {
			continue
		}
		lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-")
		if !ok {
			break
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		limit, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || limit <= start || limit-start > maxVDSO {
			break
		}
		return start, limit, nil
	}
	return 0, 0, fmt.Errorf("process %d maps no vDSO", pid)
}

// ParseVDSO reads the functions of a vDSO image mapped at start.
func ParseVDSO(img []byte, start uint64) (*VDSO, error) {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, fmt.Errorf("the vDSO image: %w", err)
	}
	base, found := uint64(0), false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			base, found = p.Vaddr, true
			break
		}
	}
	if !found {
		return nil, errors.New("the vDSO image has no loadable segment")
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("the vDSO image's symbols: %w", err)
	}
	v := &VDSO{Start: start, Limit: start + uint64(len(img))}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value < base || s.Value-base >= uint64(len(img)) {
			continue
		}
		v.Funcs = append(v.Funcs, Symbol{Name: s.Name, Addr: start + s.Value - base, Size: s.Size})
	}
	// Aliases (clock_gettime, __vdso_clock_gettime) share an address:
	// the first name in address order is kept, the __vdso_ one if any.
	slices.SortFunc(v.Funcs, func(a, b Symbol) int {
		if a.Addr != b.Addr {
			return cmpU(a.Addr, b.Addr)
		}
		return strings.Compare(b.Name, a.Name) // "__vdso_x" before "x"
	})
	v.Funcs = slices.CompactFunc(v.Funcs, func(a, b Symbol) bool { return a.Addr == b.Addr })
	return v, nil
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Contains reports whether runtime address pc is in the vDSO.
func (v *VDSO) Contains(pc uint64) bool { return v != nil && pc >= v.Start && pc < v.Limit }

// Func is the vDSO function at runtime address pc, "" if none covers it.
func (v *VDSO) Func(pc uint64) string {
	if !v.Contains(pc) {
		return ""
	}
	i, found := slices.BinarySearchFunc(v.Funcs, pc, func(s Symbol, pc uint64) int { return cmpU(s.Addr, pc) })
	if !found {
		i--
	}
	if i < 0 {
		return ""
	}
	s := v.Funcs[i]
	if s.Size != 0 && pc-s.Addr >= s.Size {
		return ""
	}
	return s.Name
}
